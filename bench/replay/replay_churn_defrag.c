/*
 * The churn replay's defragmentation (--defrag): the eviction hook that
 * asks the planner (slicefit/defrag.h) to make room for the pod waiting
 * longest, once it has waited longer than --defrag-after.
 *
 * At most one plan is asked for per DEFRAG_RETRY_S of simulated time (a
 * plan is work; the daemon asks as seldom), and at most the policy's
 * defrag_max_per_hour plans are carried out in any hour. Every placed pod
 * may be evicted: a replayed pod stands for one a controller recreates, in
 * a namespace no policy protects. Its age is the time since its current
 * placement, its GPUs the share its allocation holds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "slicefit/defrag.h"
#include "replay_churn_int.h"
#include "replay_run_int.h"

#define DEFRAG_RETRY_S 60.0
#define HOLDER_MAX 300

typedef struct {
  double next_at;  /* no plan asked for before */
  double *done_at; /* when the last plans carried out were, a ring */
  size_t ndone, cap;
} state_t;

typedef struct {
  sf_defrag_pod_t *pods;
  uint32_t *slot_of;
  char (*holders)[HOLDER_MAX];
  const char **hptr;
  size_t n;
} placed_t;

static state_t *state_of(sf_churn_view_t *v, uint32_t per_hour)
{
  void **p = sf__churn_view_state(v);
  if (*p == NULL) {
    size_t cap = per_hour > 0 ? per_hour : 1;
    state_t *s = sf_xcalloc(1, sizeof(*s) + cap * sizeof(double));
    s->done_at = (double *)(s + 1);
    s->cap = cap;
    *p = s;
  }
  return *p;
}

/* May another plan be carried out now, under defrag_max_per_hour? */
static bool under_limit(const state_t *s, uint32_t per_hour, double now)
{
  if (per_hour == 0)
    return false;
  size_t recent = 0;
  for (size_t i = 0; i < s->ndone && i < s->cap; i++)
    recent += s->done_at[i] > now - 3600.0;
  return recent < per_hour;
}

static void placed_init(placed_t *pl, sf_churn_view_t *v, run_t *r, double now)
{
  size_t n = sf__churn_view_slots(v);
  const sf_replay_trace_t *t = sf__churn_view_trace(v);
  memset(pl, 0, sizeof(*pl));
  pl->pods = sf_xcalloc(n + 1, sizeof(*pl->pods));
  pl->slot_of = sf_xcalloc(n + 1, sizeof(*pl->slot_of));
  pl->holders = sf_xcalloc(n + 1, sizeof(*pl->holders));
  pl->hptr = sf_xcalloc(n + 1, sizeof(*pl->hptr));
  for (uint32_t slot = 0; slot < n; slot++) {
    double since;
    sf_alloc_id a = sf__churn_view_alloc(v, slot, &since);
    if (a < 0)
      continue;
    size_t i = pl->n++;
    sf__churn_holder(v, slot, pl->holders[i], HOLDER_MAX);
    pl->hptr[i] = pl->holders[i];
    pl->slot_of[i] = slot;
    pl->pods[i] = (sf_defrag_pod_t){"default",
                                    t->pods[sf__churn_view_arrival(v, slot)->pod].name,
                                    true,
                                    (int64_t)(now - since),
                                    sf__replay_alloc_share(r, a),
                                    &pl->hptr[i],
                                    1};
  }
}

static void placed_dispose(placed_t *pl)
{
  free(pl->pods);
  free(pl->slot_of);
  free(pl->holders);
  free(pl->hptr);
}

/* The GPU pod waiting longest, past after_s; UINT32_MAX when none. */
static uint32_t longest(sf_churn_view_t *v, const uint32_t *waiting, size_t n, double after_s)
{
  const sf_replay_trace_t *t = sf__churn_view_trace(v);
  double now = sf__churn_view_now(v), best = after_s;
  uint32_t slot = UINT32_MAX;
  for (size_t i = 0; i < n; i++) {
    const churn_arrival_t *a = sf__churn_view_arrival(v, waiting[i]);
    if (t->pods[a->pod].load_milli > 0 && now - a->at > best) {
      best = now - a->at;
      slot = waiting[i];
    }
  }
  return slot;
}

size_t sf__churn_defrag(void *ctx, sf_churn_view_t *v, const uint32_t *waiting, size_t nwaiting,
                        uint32_t *evict, size_t max, uint32_t *serve)
{
  const sf_churn_defrag_t *cfg = ctx;
  run_t *r = sf__churn_view_run(v);
  double now = sf__churn_view_now(v);
  state_t *st = state_of(v, r->pol.defrag_max_per_hour);
  uint32_t slot;
  if (now < st->next_at || !under_limit(st, r->pol.defrag_max_per_hour, now) ||
      (slot = longest(v, waiting, nwaiting, cfg->after_s)) == UINT32_MAX)
    return 0;
  st->next_at = now + DEFRAG_RETRY_S;
  const sf_replay_pod_t *p = &sf__churn_view_trace(v)->pods[sf__churn_view_arrival(v, slot)->pod];
  sf_demand_t d;
  placed_t pl;
  sf_defrag_plan_t plan;
  sf__replay_build_demand(r, p, &d);
  placed_init(&pl, v, r, now);
  sf_defrag_input_t in = {&d, p->load_milli, pl.pods, pl.n};
  size_t n = 0;
  if (sf_defrag_plan(r->pk, r->idx, &r->pol, &in, &plan) == 0 && plan.outcome == SF_DEFRAG_FOUND &&
      plan.nmoves <= max) {
    for (size_t m = 0; m < plan.nmoves; m++)
      evict[n++] = pl.slot_of[plan.moves[m].pod];
    *serve = slot;
    st->done_at[st->ndone++ % st->cap] = now;
  }
  placed_dispose(&pl);
  return n;
}
