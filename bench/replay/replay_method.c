/*
 * FGD's experiment method, apart from the run (replay_run.c): the replay's
 * random numbers, the order of arrivals, and the typical pods.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "slicefit/mix.h"
#include "slicefit/cluster.h"
#include "slicefit/packer.h"
#include "slicefit/replay.h"

/* ---- random numbers: xoshiro256**, seeded with splitmix64 ---- */

static uint64_t splitmix64(uint64_t *x)
{
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void sf_rng_seed(sf_rng_t *r, uint64_t seed)
{
  for (int i = 0; i < 4; i++)
    r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
  return (x << k) | (x >> (64 - k));
}

uint64_t sf_rng_next(sf_rng_t *r)
{
  uint64_t *s = r->s;
  uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return out;
}

uint64_t sf_rng_below(sf_rng_t *r, uint64_t n)
{
  /* Rejection keeps every residue equally likely. */
  uint64_t lim = UINT64_MAX - UINT64_MAX % n, x;
  do
    x = sf_rng_next(r);
  while (x >= lim);
  return x % n;
}

double sf_rng_unit(sf_rng_t *r)
{
  return (double)(sf_rng_next(r) >> 11) * 0x1.0p-53;
}

/* ---- FGD's order of arrivals ---- */

static _Thread_local const sf_replay_trace_t *sort_trace; /* qsort has no context argument in C11 */

static int cmp_pod_name(const void *a, const void *b)
{
  const sf_replay_pod_t *p = &sort_trace->pods[*(const uint32_t *)a];
  const sf_replay_pod_t *q = &sort_trace->pods[*(const uint32_t *)b];
  int c = strcmp(p->name, q->name);
  return c != 0 ? c
                : (*(const uint32_t *)a > *(const uint32_t *)b) -
                      (*(const uint32_t *)a < *(const uint32_t *)b);
}

static int cmp_pod_time(const void *a, const void *b)
{
  uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
  int64_t x = sort_trace->pods[i].at, y = sort_trace->pods[j].at;
  if (x != y)
    return x < y ? -1 : 1;
  return (i > j) - (i < j);
}

static void order_push(sf_replay_order_t *o, size_t *cap, uint32_t i)
{
  sf_xgrow(&o->idx, cap, o->n + 1, sizeof(*o->idx));
  o->idx[o->n++] = i;
}

void sf_replay_order_fgd(const sf_replay_trace_t *t, uint64_t seed, double tune,
                         sf_replay_order_t *out)
{
  sf_rng_t rng;
  size_t cap = 0;
  memset(out, 0, sizeof(*out));
  for (uint32_t i = 0; i < t->npods; i++) {
    order_push(out, &cap, i);
    out->load_milli += t->pods[i].load_milli;
  }
  sort_trace = t;
  qsort(out->idx, out->n, sizeof(*out->idx), t->native ? cmp_pod_time : cmp_pod_name);
  out->norig = out->n;
  if (t->native)
    return;
  sf_rng_seed(&rng, seed);
  for (size_t i = out->n; i > 1; i--) {
    size_t j = (size_t)sf_rng_below(&rng, i);
    uint32_t x = out->idx[i - 1];
    out->idx[i - 1] = out->idx[j];
    out->idx[j] = x;
  }
  if (tune <= 0 || out->n == 0 || out->load_milli == 0)
    return;
  int64_t target = (int64_t)llround(tune * (double)sf_replay_gpu_milli(t));
  /* Grow: draw from the original pods with replacement, appended after them. */
  while (out->load_milli < target) {
    uint32_t j = (uint32_t)sf_rng_below(&rng, t->npods);
    if (out->load_milli + t->pods[j].load_milli > target)
      break;
    order_push(out, &cap, j);
    out->load_milli += t->pods[j].load_milli;
  }
  /* Shrink: remove random pods until the request fits the target. */
  while (out->load_milli > target && out->n > 0) {
    size_t k = (size_t)sf_rng_below(&rng, out->n);
    out->load_milli -= t->pods[out->idx[k]].load_milli;
    memmove(&out->idx[k], &out->idx[k + 1], (out->n - k - 1) * sizeof(*out->idx));
    out->n--;
    if (out->norig > k)
      out->norig--;
  }
}

void sf_replay_order_dispose(sf_replay_order_t *o)
{
  free(o->idx);
  memset(o, 0, sizeof(*o));
}

/* ---- FGD's typical pods ---- */

typedef struct {
  int64_t cpu, amount;
  uint32_t count, spec;
  bool island;
  size_t n;
} group_t;

static int cmp_group(const void *a, const void *b)
{
  const group_t *x = a, *y = b;
  if (x->n != y->n)
    return x->n > y->n ? -1 : 1;
  if (x->cpu != y->cpu)
    return x->cpu < y->cpu ? -1 : 1;
  if (x->amount != y->amount)
    return x->amount < y->amount ? -1 : 1;
  if (x->count != y->count)
    return x->count < y->count ? -1 : 1;
  return (x->spec > y->spec) - (x->spec < y->spec);
}

static void pod_shape(const sf_replay_pod_t *p, group_t *g)
{
  memset(g, 0, sizeof(*g));
  g->cpu = p->cpu_milli;
  if (p->nclaims == 0)
    return;
  const sf_replay_req_t *q = &p->claims[0].reqs[0];
  g->count = q->count;
  g->spec = q->spec;
  g->island = p->claims[0].island && q->count > 1;
  /* Whole devices are "0" in a shape; a 1000-milli share of "1" is a whole GPU. */
  g->amount = p->gpu_milli >= 1000 ? 0 : q->amount;
}

size_t sf_replay_typical_mix(const sf_replay_trace_t *t, sf_shape_t **mix)
{
  group_t *groups = NULL;
  size_t ng = 0, cap = 0, kept = 0, covered = 0;
  for (size_t i = 0; i < t->npods; i++) {
    group_t g;
    size_t k;
    pod_shape(&t->pods[i], &g);
    for (k = 0; k < ng; k++)
      if (groups[k].cpu == g.cpu && groups[k].amount == g.amount && groups[k].count == g.count &&
          groups[k].spec == g.spec && groups[k].island == g.island)
        break;
    if (k == ng) {
      sf_xgrow(&groups, &cap, ng + 1, sizeof(*groups));
      groups[ng++] = g;
    }
    groups[k].n++;
  }
  qsort(groups, ng, sizeof(*groups), cmp_group);
  /* Most frequent first until they cover 95% of the pods (FGD's podPopularityThreshold). */
  while (kept < ng && covered * 100 < t->npods * 95)
    covered += groups[kept++].n;
  *mix = sf_xcalloc(kept ? kept : 1, sizeof(**mix));
  for (size_t i = 0; i < kept; i++) {
    sf_shape_t *s = &(*mix)[i];
    const sf_replay_spec_t *sp = &t->specs[groups[i].spec];
    s->cpu_milli = groups[i].cpu;
    s->amount = groups[i].amount;
    s->count = groups[i].count;
    s->island = groups[i].island;
    for (size_t m = 0; m < sp->n && m < SF_POLICY_MODELS_MAX; m++)
      snprintf(s->models[s->nmodels++], SF_POLICY_NAME_MAX, "%s", sp->models[m]);
    s->weight = (double)groups[i].n / (double)covered;
  }
  free(groups);
  return kept;
}
