/*
 * One churn run: arrivals, departures and the pending queue over simulated
 * time, on the very scheduling code of the static replay (replay_run.c).
 *
 * Events run in time order: departures first (their capacity is free at
 * that instant; they wake every waiting pod), then a pass over the queue in
 * arrival order (each woken pod whose backoff has passed is tried again;
 * one still in backoff sets a retry event at its end), then the arrivals.
 * Capacity only grows at a departure, so a pod shape (CPU, claims) that
 * failed with some memory fails again, with as much memory or more, until
 * the next departure: such attempts are counted without asking the core.
 *
 * Measurements are integrated exactly between events into SF_CHURN_BUCKETS
 * time buckets. The warm-up ends at the first bucket whose mean allocation
 * reaches the median of the second half's buckets (the steady occupancy),
 * and not before the pods present at the start have all been placed; it is
 * capped at half the run. Every figure counts from there, and the waits of
 * the pods that arrived from there.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "replay_churn_int.h"
#include "replay_run_int.h"

typedef struct {
  double time;
  uint32_t slot;
} hent_t;

typedef struct {
  hent_t *v;
  size_t n, cap;
} heap_t;

static void heap_push(heap_t *h, double time, uint32_t slot)
{
  sf_xgrow(&h->v, &h->cap, h->n + 1, sizeof(*h->v));
  size_t i = h->n++;
  while (i > 0 && h->v[(i - 1) / 2].time > time) {
    h->v[i] = h->v[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h->v[i] = (hent_t){time, slot};
}

static hent_t heap_pop(heap_t *h)
{
  hent_t top = h->v[0], last = h->v[--h->n];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= h->n)
      break;
    if (c + 1 < h->n && h->v[c + 1].time < h->v[c].time)
      c++;
    if (h->v[c].time >= last.time)
      break;
    h->v[i] = h->v[c];
    i = c;
  }
  if (h->n > 0)
    h->v[i] = last;
  return top;
}

static double heap_top(const heap_t *h)
{
  return h->n > 0 ? h->v[0].time : INFINITY;
}

typedef struct {
  sf_alloc_id aid; /* -1 while not placed */
  int64_t share;
  double wait;     /* placement - arrival; < 0 while not placed */
  double last_try; /* of the latest failed attempt */
  double leave_at; /* of the current placement (an evicted pod's old departure is stale) */
  uint32_t attempts;
  bool queued, woken, pushed, late_over;
} slot_t;

typedef struct sf_churn_view {
  run_t *r;
  const sf_replay_trace_t *t;
  const sf_churn_opts_t *o;
  sf_churn_result_t *res;
  churn_arrival_t *arr;
  size_t narr;
  slot_t *s;
  uint32_t *q; /* the waiting slots, in arrival order */
  size_t nq, qcap;
  heap_t dep, retry;
  uint32_t *failgen; /* per shape: the departure generation it failed in */
  int64_t *failmem;  /* and the least memory it failed with */
  uint32_t gen;
  int64_t qmin_load; /* least GPU load among waiting GPU pods */
  double now, tlast;
  size_t fill_left; /* pods of the start's steady state not placed yet */
  double fill_done;
  /* stop_at_slo: late arrivals (after half the run) per class, and those past the SLO */
  size_t total[SF_CHURN_NCLASS], over[SF_CHURN_NCLASS];
  /* per bucket integrals */
  double *alloc_int, *q_int, (*idle_int)[2];
  char holder[300];
  void *evict_state; /* the eviction hook's (sf__churn_view_state) */
} churn_t;

static const sf_replay_pod_t *pod_of(const churn_t *c, uint32_t slot)
{
  return &c->t->pods[c->arr[slot].pod];
}

/* Integrates the state from c->tlast to t1 into the buckets (split at bucket and half-day edges). */
static void advance(churn_t *c, double t1)
{
  double bs = c->res->bucket_s, cap = (double)c->r->cap_milli;
  double freem = cap - (double)c->r->alloc_milli;
  double idle = c->qmin_load <= (int64_t)freem ? freem : 0.0;
  while (c->tlast < t1) {
    size_t b = (size_t)(c->tlast / bs);
    if (b >= SF_CHURN_BUCKETS)
      break;
    double half = floor(c->tlast / 43200.0);
    double end = fmin(fmin(t1, (double)(b + 1) * bs), (half + 1.0) * 43200.0);
    if (end <= c->tlast) /* rounding at an edge */
      end = fmin(t1, c->tlast + 1e-9);
    double dt = end - c->tlast;
    c->alloc_int[b] += (double)c->r->alloc_milli * dt;
    c->q_int[b] += (double)c->nq * dt;
    c->idle_int[b][(int64_t)half % 2] += idle * dt;
    c->tlast = end;
  }
  c->tlast = t1;
}

static void update_qmin(churn_t *c)
{
  c->qmin_load = INT64_MAX;
  for (size_t i = 0; i < c->nq; i++) {
    const sf_replay_pod_t *p = pod_of(c, c->q[i]);
    if (p->load_milli > 0 && p->load_milli < c->qmin_load)
      c->qmin_load = p->load_milli;
  }
}

static bool late(const churn_t *c, uint32_t slot)
{
  return !c->arr[slot].fill && c->arr[slot].at >= c->o->duration_s / 2;
}

/* A late pod's wait passed the SLO: count it once; true when some class's p99 must exceed it. */
static void note_over(churn_t *c, uint32_t slot)
{
  int cls = sf_churn_class(c->t, pod_of(c, slot));
  if (cls < 0 || c->s[slot].late_over || !late(c, slot))
    return;
  c->s[slot].late_over = true;
  /* The pooled count: as many pods of the class in each of the other seeds' runs. */
  size_t n = c->total[cls] * (c->o->pool_seeds > 1 ? c->o->pool_seeds : 1);
  if (++c->over[cls] >= n - (size_t)ceil(0.99 * (double)n) + 1 && c->o->stop_at_slo)
    c->res->stopped = true;
}

/* Tries the pod in `slot` now; true when placed. */
static bool attempt(churn_t *c, uint32_t slot)
{
  const sf_replay_pod_t *p = pod_of(c, slot);
  slot_t *s = &c->s[slot];
  uint32_t shape = c->r->cached ? c->r->shape_of[c->arr[slot].pod] : 0;
  c->res->attempts++;
  bool known = c->r->cached && c->failgen[shape] == c->gen && p->mem_bytes >= c->failmem[shape];
  sf_alloc_id a = -1;
  if (!known) {
    sf__churn_holder(c, slot, c->holder, sizeof(c->holder));
    a = sf__replay_schedule(c->r, p, c->holder);
  }
  if (a < 0) {
    if (c->r->cached && (c->failgen[shape] != c->gen || p->mem_bytes < c->failmem[shape])) {
      c->failgen[shape] = c->gen;
      c->failmem[shape] = p->mem_bytes;
    }
    s->attempts++;
    s->last_try = c->now;
    s->woken = s->pushed = false;
    return false;
  }
  s->aid = a;
  s->share = sf__replay_alloc_share(c->r, a);
  s->wait = c->now - c->arr[slot].at;
  c->r->alloc_milli += s->share;
  c->res->placed++;
  s->leave_at = c->now + c->arr[slot].life;
  heap_push(&c->dep, s->leave_at, slot);
  if (c->arr[slot].fill && --c->fill_left == 0)
    c->fill_done = c->now;
  /*
   * The run starts from the steady state of a fleet that has churned for
   * long: beside each pod of that state it places, the core hears of a
   * departure, as a daemon that had scheduled through that history would
   * have (sf_mix_churn), not of a fleet that only fills.
   */
  if (c->arr[slot].fill)
    sf__replay_churn(c->r, true);
  if (s->wait > c->o->slo_s)
    note_over(c, slot);
  return true;
}

static void enqueue(churn_t *c, uint32_t slot)
{
  sf_xgrow(&c->q, &c->qcap, c->nq + 1, sizeof(*c->q));
  size_t i = c->nq++;
  while (i > 0 && c->q[i - 1] > slot) { /* evicted pods go back to their arrival's place */
    c->q[i] = c->q[i - 1];
    i--;
  }
  c->q[i] = slot;
  c->s[slot].queued = true;
  int64_t load = pod_of(c, slot)->load_milli;
  if (load > 0 && load < c->qmin_load)
    c->qmin_load = load;
}

static void depart(churn_t *c, uint32_t slot)
{
  slot_t *s = &c->s[slot];
  sf__replay_unschedule(c->r, pod_of(c, slot), s->aid);
  c->r->alloc_milli -= s->share;
  s->aid = -1;
  c->gen++; /* capacity grew: earlier failures say nothing any more */
}

/* Takes a waiting slot out of the queue once it is placed. */
static void dequeue(churn_t *c, uint32_t slot)
{
  size_t k = 0;
  for (size_t i = 0; i < c->nq; i++)
    if (c->q[i] != slot)
      c->q[k++] = c->q[i];
  c->nq = k;
  c->s[slot].queued = false;
  update_qmin(c);
}

/*
 * The eviction hook: evicted pods leave their node and wait again, to run
 * their remaining lifetime plus the restart cost, their wait going on from
 * the one they had; the pod they make room for is tried first, then they.
 */
static void evictions(churn_t *c)
{
  uint32_t ev[64], serve = UINT32_MAX;
  size_t n = c->o->evict(c->o->evict_ctx, c, c->q, c->nq, ev, 64, &serve);
  for (size_t i = 0; i < n && i < 64; i++) {
    slot_t *s = &c->s[ev[i]];
    if (ev[i] >= c->narr || s->aid < 0)
      continue;
    c->arr[ev[i]].life = fmax(s->leave_at - c->now, 0.0) + c->o->restart_s;
    c->arr[ev[i]].at = c->now - s->wait;
    depart(c, ev[i]); /* its departure event finds it unplaced and passes */
    s->wait = -1;
    s->attempts = 0;
    s->woken = true;
    s->pushed = false;
    s->last_try = c->now;
    c->res->evicted++;
    enqueue(c, ev[i]);
  }
  if (n == 0)
    return;
  if (serve < c->narr && c->s[serve].queued && attempt(c, serve))
    dequeue(c, serve);
  for (size_t i = 0; i < n && i < 64; i++)
    if (ev[i] < c->narr && c->s[ev[i]].queued && attempt(c, ev[i]))
      dequeue(c, ev[i]);
}

/* One pass over the queue in arrival order: woken pods past their backoff are tried. */
static void pass(churn_t *c)
{
  size_t k = 0;
  for (size_t i = 0; i < c->nq; i++) {
    uint32_t slot = c->q[i];
    slot_t *s = &c->s[slot];
    double waited = c->now - c->arr[slot].at;
    if (c->o->give_up_s > 0 && waited > c->o->give_up_s) {
      s->queued = false;
      continue;
    }
    if (waited > c->o->slo_s)
      note_over(c, slot);
    if (s->woken) {
      double due = s->attempts > 0 ? s->last_try + sf_churn_backoff(s->attempts) : c->now;
      if (due > c->now) {
        if (!s->pushed)
          heap_push(&c->retry, due, slot);
        s->pushed = true;
      } else if (attempt(c, slot)) {
        s->queued = false;
        continue;
      }
    }
    c->q[k++] = slot;
  }
  c->nq = k;
  update_qmin(c);
  if (c->o->evict != NULL && c->nq > 0)
    evictions(c);
}

static void wake_all(churn_t *c)
{
  for (size_t i = 0; i < c->nq; i++) {
    c->s[c->q[i]].woken = true;
    c->s[c->q[i]].pushed = false;
  }
}

static void loop(churn_t *c)
{
  size_t a = 0;
  while (!c->res->stopped) {
    double ta = a < c->narr ? c->arr[a].at : INFINITY;
    double tn = fmin(ta, fmin(heap_top(&c->dep), heap_top(&c->retry)));
    if (!(tn < c->o->duration_s))
      break;
    advance(c, tn);
    c->now = tn;
    bool freed = false, due = false;
    while (heap_top(&c->dep) <= tn) {
      hent_t e = heap_pop(&c->dep);
      if (c->s[e.slot].aid >= 0 && c->s[e.slot].leave_at == e.time) {
        depart(c, e.slot);
        c->res->departed++;
        freed = true;
      }
    }
    while (heap_top(&c->retry) <= tn) {
      heap_pop(&c->retry);
      due = true;
    }
    if (freed)
      wake_all(c);
    if ((freed || due) && c->nq > 0)
      pass(c);
    for (; a < c->narr && c->arr[a].at <= tn; a++) {
      c->res->arrivals++;
      if (!attempt(c, (uint32_t)a))
        enqueue(c, (uint32_t)a);
    }
  }
  double end = c->res->stopped ? c->now : c->o->duration_s;
  advance(c, end);
  c->now = end;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double quantile(const double *sorted, size_t n, double q)
{
  if (n == 0)
    return NAN;
  size_t k = (size_t)ceil(q * (double)n);
  return sorted[k > 0 ? k - 1 : 0];
}

static size_t warmup_bucket(churn_t *c)
{
  double v[SF_CHURN_BUCKETS / 2];
  size_t half = SF_CHURN_BUCKETS / 2, w = 0;
  memcpy(v, c->res->alloc_pct + half, sizeof(v));
  double steady = sf_replay_median(v, half);
  while (w < half && !(c->res->alloc_pct[w] >= steady))
    w++;
  double drained = c->fill_left > 0 ? INFINITY : c->fill_done;
  size_t d = (size_t)ceil(drained / c->res->bucket_s);
  return d > w ? (d < half ? d : half) : w;
}

/* The waits of the pods that arrived after the warm-up, by class. */
static void waits(churn_t *c, double from)
{
  for (int cls = 0; cls < SF_CHURN_NCLASS; cls++) {
    double *v = sf_xcalloc(c->narr + 1, sizeof(*v)), sum = 0;
    size_t n = 0;
    for (size_t i = 0; i < c->narr; i++) {
      if (c->arr[i].fill || c->arr[i].at < from || i >= c->res->arrivals ||
          sf_churn_class(c->t, pod_of(c, (uint32_t)i)) != cls)
        continue;
      v[n] = c->s[i].wait >= 0 ? c->s[i].wait : c->now - c->arr[i].at;
      sum += v[n++];
    }
    qsort(v, n, sizeof(*v), cmp_double);
    sf_churn_wait_t *w = &c->res->pending_s[cls];
    *w = (sf_churn_wait_t){quantile(v, n, 0.5), quantile(v, n, 0.95), quantile(v, n, 0.99),
                           n ? sum / (double)n : NAN, n};
    c->res->waits[cls] = v;
    c->res->nwaits[cls] = n;
  }
}

static void figures(churn_t *c)
{
  sf_churn_result_t *res = c->res;
  double bs = res->bucket_s, cap = (double)c->r->cap_milli;
  for (size_t b = 0; b < SF_CHURN_BUCKETS; b++) {
    res->alloc_pct[b] = cap > 0 ? 100.0 * c->alloc_int[b] / (cap * bs) : NAN;
    res->queue[b] = c->q_int[b] / bs;
  }
  size_t w = res->stopped ? (size_t)ceil(fmin(c->now / 2, c->o->duration_s / 2) / bs)
                          : warmup_bucket(c);
  res->warmup_s = (double)w * bs;
  double alloc = 0, span = fmax(c->now - res->warmup_s, 1e-9);
  for (size_t b = w; b < SF_CHURN_BUCKETS; b++) {
    alloc += c->alloc_int[b];
    res->idle_half_gpu_h[0] += c->idle_int[b][0] / 1000.0 / 3600.0;
    res->idle_half_gpu_h[1] += c->idle_int[b][1] / 1000.0 / 3600.0;
  }
  res->alloc_time_avg_pct = cap > 0 ? 100.0 * alloc / (cap * span) : NAN;
  res->idle_while_waiting_gpu_h = res->idle_half_gpu_h[0] + res->idle_half_gpu_h[1];
  waits(c, res->warmup_s);
  for (size_t i = 0; i < res->arrivals; i++) {
    if (c->arr[i].fill || c->arr[i].at < res->warmup_s)
      continue;
    res->measured++;
    res->never_placed += c->s[i].wait < 0;
  }
}

static void churn_dispose(churn_t *c)
{
  free(c->evict_state);
  free(c->arr);
  free(c->s);
  free(c->q);
  free(c->dep.v);
  free(c->retry.v);
  free(c->failgen);
  free(c->failmem);
  free(c->alloc_int);
  free(c->q_int);
  free(c->idle_int);
}

static void churn_init(churn_t *c)
{
  c->s = sf_xcalloc(c->narr + 1, sizeof(*c->s));
  for (size_t i = 0; i < c->narr; i++) {
    c->s[i].aid = -1;
    c->s[i].wait = -1;
    int cls = sf_churn_class(c->t, pod_of(c, (uint32_t)i));
    c->fill_left += c->arr[i].fill;
    if (cls >= 0 && late(c, (uint32_t)i))
      c->total[cls]++;
  }
  c->failgen = sf_xcalloc(c->r->nshapes + 1, sizeof(*c->failgen));
  c->failmem = sf_xcalloc(c->r->nshapes + 1, sizeof(*c->failmem));
  c->gen = 1;
  c->qmin_load = INT64_MAX;
  c->alloc_int = sf_xcalloc(SF_CHURN_BUCKETS, sizeof(*c->alloc_int));
  c->q_int = sf_xcalloc(SF_CHURN_BUCKETS, sizeof(*c->q_int));
  c->idle_int = sf_xcalloc(SF_CHURN_BUCKETS, sizeof(*c->idle_int));
}

/* ---- what the eviction hook reads ---- */

double sf__churn_view_now(const sf_churn_view_t *v)
{
  return v->now;
}

const sf_replay_trace_t *sf__churn_view_trace(const sf_churn_view_t *v)
{
  return v->t;
}

size_t sf__churn_view_slots(const sf_churn_view_t *v)
{
  return v->narr;
}

const churn_arrival_t *sf__churn_view_arrival(const sf_churn_view_t *v, uint32_t slot)
{
  return &v->arr[slot];
}

sf_alloc_id sf__churn_view_alloc(const sf_churn_view_t *v, uint32_t slot, double *since)
{
  const slot_t *s = &v->s[slot];
  *since = s->aid >= 0 ? s->leave_at - v->arr[slot].life : -1;
  return s->aid;
}

void sf__churn_holder(const sf_churn_view_t *v, uint32_t slot, char *buf, size_t len)
{
  snprintf(buf, len, "%s#%u", pod_of(v, slot)->name, slot);
}

void *sf__churn_view_run(sf_churn_view_t *v)
{
  return v->r;
}

void **sf__churn_view_state(sf_churn_view_t *v)
{
  return &v->evict_state;
}

int sf_churn_run(const sf_replay_trace_t *t, const sf_churn_opts_t *o, sf_churn_result_t *res,
                 char *err, size_t errlen)
{
  run_t *r = sf_xcalloc(1, sizeof(*r));
  sf_replay_result_t rr;
  sf_churn_load_t l;
  churn_t c = {.r = r, .t = t, .o = o, .res = res};
  int rc;
  memset(res, 0, sizeof(*res));
  memset(&rr, 0, sizeof(rr));
  if (!(o->duration_s > 0) || o->life == NULL || !(o->slo_s > 0)) {
    snprintf(err, errlen, "churn: a positive duration and SLO and the lifetimes are needed");
    rc = SF_EINVAL;
    goto out;
  }
  if (!t->native && !(o->load > 0)) {
    snprintf(err, errlen, "churn: an Alibaba pod list needs a load (--load R, R > 0)");
    rc = SF_EINVAL;
    goto out;
  }
  if ((rc = sf__replay_open(r, t, &o->run, &rr, err, errlen)) != 0)
    goto out;
  snprintf(res->policy, sizeof(res->policy), "%s", o->run.policy);
  res->seed = o->run.seed;
  res->gpus = rr.gpus;
  res->bucket_s = o->duration_s / SF_CHURN_BUCKETS;
  sf_churn_load(t, o->life, &l);
  res->load = t->native && !(o->load > 0) ? l.native_load : o->load;
  c.arr = sf__churn_arrivals(t, o, &l, &res->rate, &c.narr);
  churn_init(&c);
  int64_t t0 = sf__replay_now_ns();
  loop(&c);
  res->wall_s = (double)(sf__replay_now_ns() - t0) / 1e9;
  figures(&c);
out:
  churn_dispose(&c);
  sf__replay_close(r);
  free(r);
  return rc;
}

void sf_churn_result_dispose(sf_churn_result_t *r)
{
  for (int k = 0; k < SF_CHURN_NCLASS; k++) {
    free(r->waits[k]);
    r->waits[k] = NULL;
    r->nwaits[k] = 0;
  }
}

void sf__churn_pooled(const sf_churn_result_t *runs, size_t n, int k, sf_churn_wait_t *w)
{
  size_t total = 0, m = 0;
  double sum = 0;
  for (size_t i = 0; i < n; i++)
    total += runs[i].nwaits[k];
  double *v = sf_xcalloc(total + 1, sizeof(*v));
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < runs[i].nwaits[k]; j++) {
      v[m] = runs[i].waits[k][j];
      sum += v[m++];
    }
  qsort(v, m, sizeof(*v), cmp_double);
  *w = (sf_churn_wait_t){quantile(v, m, 0.5), quantile(v, m, 0.95), quantile(v, m, 0.99),
                         m ? sum / (double)m : NAN, m};
  free(v);
}

double sf_churn_worst_p99(const sf_churn_result_t *runs, size_t n)
{
  double worst = 0;
  for (size_t i = 0; i < n; i++)
    if (runs[i].stopped)
      return INFINITY;
  for (int k = 0; k < SF_CHURN_NCLASS; k++) {
    sf_churn_wait_t w;
    sf__churn_pooled(runs, n, k, &w);
    if (w.n > 0 && w.p99 > worst)
      worst = w.p99;
  }
  return worst;
}

/* ---- several seeds at once, and the bisection ---- */

typedef struct {
  const sf_replay_trace_t *t;
  const sf_churn_opts_t *o;
  sf_churn_result_t *res;
  size_t n, next;
  int rc;
  char *err;
  size_t errlen;
  pthread_mutex_t mu;
} pool_t;

static void *worker(void *arg)
{
  pool_t *p = arg;
  char err[SF_REPLAY_ERR_MAX];
  for (;;) {
    pthread_mutex_lock(&p->mu);
    size_t i = p->next++;
    pthread_mutex_unlock(&p->mu);
    if (i >= p->n)
      return NULL;
    sf_churn_opts_t o = *p->o;
    o.run.seed = p->o->run.seed + i;
    int rc = sf_churn_run(p->t, &o, &p->res[i], err, sizeof(err));
    if (rc != 0) {
      pthread_mutex_lock(&p->mu);
      if (p->rc == 0) {
        p->rc = rc;
        snprintf(p->err, p->errlen, "%s", err);
      }
      pthread_mutex_unlock(&p->mu);
    }
  }
}

int sf_churn_seeds(const sf_replay_trace_t *t, const sf_churn_opts_t *o, size_t nseeds,
                   unsigned threads, sf_churn_result_t *res, char *err, size_t errlen)
{
  pool_t p = {t, o, res, nseeds, 0, 0, err, errlen, PTHREAD_MUTEX_INITIALIZER};
  pthread_t th[64];
  unsigned n = threads < 1 ? 1 : threads > 64 ? 64 : threads, started = 0;
  for (unsigned i = 1; i < n; i++)
    if (pthread_create(&th[started], NULL, worker, &p) == 0)
      started++;
  worker(&p);
  for (unsigned i = 0; i < started; i++)
    pthread_join(th[i], NULL);
  pthread_mutex_destroy(&p.mu);
  return p.rc;
}

/* True when at load R the median over the seeds of the worst class p99 is under the SLO. */
static int holds(const sf_replay_trace_t *t, const sf_churn_opts_t *base, size_t nseeds,
                 unsigned threads, double load, bool *ok, size_t *runs, char *err, size_t errlen)
{
  sf_churn_opts_t o = *base;
  o.load = load;
  o.stop_at_slo = true;
  o.pool_seeds = nseeds;
  sf_churn_result_t *res = sf_xcalloc(nseeds, sizeof(*res));
  int rc = sf_churn_seeds(t, &o, nseeds, threads, res, err, errlen);
  *ok = rc == 0 && sf_churn_worst_p99(res, nseeds) < base->slo_s;
  *runs += nseeds;
  for (size_t i = 0; i < nseeds; i++)
    sf_churn_result_dispose(&res[i]);
  free(res);
  return rc;
}

int sf_churn_sustainable(const sf_replay_trace_t *t, const sf_churn_opts_t *o, size_t nseeds,
                         double lo, double hi, double step, unsigned threads, double *out,
                         size_t *runs, char *err, size_t errlen)
{
  bool ok = false, lo_seen = false, hi_seen = false;
  int rc;
  *runs = 0;
  /* Taken: lo holds and hi fails; halve until one step apart, then check what was taken. */
  while (hi - lo > step + 1e-9) {
    double mid = round((lo + hi) / 2 / step) * step;
    if (mid <= lo || mid >= hi)
      break;
    if ((rc = holds(t, o, nseeds, threads, mid, &ok, runs, err, errlen)) != 0)
      return rc;
    if (ok) {
      lo = mid;
      lo_seen = true;
    } else {
      hi = mid;
      hi_seen = true;
    }
  }
  if (!hi_seen) {
    if ((rc = holds(t, o, nseeds, threads, hi, &ok, runs, err, errlen)) != 0)
      return rc;
    if (ok) {
      *out = hi;
      return 0;
    }
  }
  if (!lo_seen) {
    if ((rc = holds(t, o, nseeds, threads, lo, &ok, runs, err, errlen)) != 0)
      return rc;
    if (!ok) {
      *out = lo - step;
      return 0;
    }
  }
  *out = lo;
  return 0;
}
