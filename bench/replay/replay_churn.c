/*
 * The churn replay's inputs: pod classes, lifetimes, the load arithmetic,
 * and the arrivals a run replays (replay_churn_run.c has the run).
 *
 * Lifetimes: the Alibaba lists give deletion_time - creation_time, heavy
 * tailed (median 9 minutes, 99th percentile 28 hours, a few pods that live
 * for months); the cap at the horizon keeps the tail up to it, and a pod
 * capped leaves at the horizon. The load counts capped lifetimes, so R is
 * what the run really offers.
 *
 * Arrivals (Alibaba): a Poisson process of rate sf_churn_rate(R) over the
 * run's duration, each arrival a pod drawn uniformly from the list (so the
 * mix is the list's). The run starts from that process's steady state: the
 * pods of an M/G/infinity system at a random instant, whose number is rate x
 * mean lifetime, each drawn in proportion to its lifetime with a uniform
 * part of it left. Without it, a run would need a horizon's worth of
 * arrivals before the long-lived pods were there in their number.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "replay_churn_int.h"

const char *const sf_churn_class_names[SF_CHURN_NCLASS] = {"share", "whole", "multi", "pinned"};

int sf_churn_class(const sf_replay_trace_t *t, const sf_replay_pod_t *p)
{
  (void)t;
  if (p->nclaims == 0)
    return -1;
  if (p->load_milli > 1000)
    return SF_CHURN_MULTI; /* a pinned multi-GPU pod waits for a node first: multi */
  for (size_t c = 0; c < p->nclaims; c++)
    for (size_t q = 0; q < p->claims[c].nreqs; q++)
      if (p->claims[c].reqs[q].spec != 0)
        return SF_CHURN_PINNED;
  return p->load_milli < 1000 ? SF_CHURN_SHARE : SF_CHURN_WHOLE;
}

double sf_churn_backoff(uint32_t attempts)
{
  double b = SF_CHURN_BACKOFF_S;
  for (uint32_t i = 1; i < attempts && b < SF_CHURN_BACKOFF_MAX_S; i++)
    b *= 2.0;
  return b < SF_CHURN_BACKOFF_MAX_S ? b : SF_CHURN_BACKOFF_MAX_S;
}

static double cap_life(double life, double horizon_s)
{
  if (life < 1.0)
    life = 1.0; /* the trace has pods deleted the second they were created */
  return life > horizon_s ? horizon_s : life;
}

/* A pod of ref drawn among those like p: same shape, else same GPU count, else any; -1 if none. */
static long draw_like(const sf_replay_trace_t *ref, const sf_replay_pod_t *p, sf_rng_t *rng)
{
  for (int level = 0; level < 3; level++) {
    size_t n = 0;
    long pick = -1;
    for (size_t i = 0; i < ref->npods; i++) {
      const sf_replay_pod_t *q = &ref->pods[i];
      if (q->until < 0 || (level < 2 && q->num_gpu != p->num_gpu) ||
          (level < 1 && q->gpu_milli != p->gpu_milli))
        continue;
      if (sf_rng_below(rng, ++n) == 0) /* reservoir: one pass, uniform */
        pick = (long)i;
    }
    if (pick >= 0)
      return pick;
  }
  return -1;
}

static int cmp_name(const void *a, const void *b)
{
  const sf_replay_pod_t *x = *(const sf_replay_pod_t *const *)a;
  const sf_replay_pod_t *y = *(const sf_replay_pod_t *const *)b;
  return strcmp(x->name, y->name);
}

/* ref's pods with times, sorted by name (for lookups by name). */
static const sf_replay_pod_t **by_name(const sf_replay_trace_t *ref, size_t *n)
{
  const sf_replay_pod_t **v = sf_xcalloc(ref->npods + 1, sizeof(*v));
  size_t m = 0;
  for (size_t i = 0; i < ref->npods; i++)
    if (ref->pods[i].until >= 0)
      v[m++] = &ref->pods[i];
  qsort(v, m, sizeof(*v), cmp_name);
  *n = m;
  return v;
}

int sf_churn_lifetimes(const sf_replay_trace_t *t, const sf_replay_trace_t *ref, double horizon_s,
                       uint64_t seed, double *life, size_t counts[3], char *err, size_t errlen)
{
  sf_rng_t rng;
  size_t nref = 0;
  const sf_replay_pod_t **names = ref != NULL ? by_name(ref, &nref) : NULL;
  int rc = 0;
  sf_rng_seed(&rng, seed ^ 0x6c69666574696d65ull);
  counts[0] = counts[1] = counts[2] = 0;
  for (size_t i = 0; i < t->npods && rc == 0; i++) {
    const sf_replay_pod_t *p = &t->pods[i];
    if (p->until >= 0 || t->native) {
      life[i] = cap_life(p->until >= 0 ? (double)(p->until - p->at) : horizon_s, horizon_s);
      counts[0]++;
      continue;
    }
    const sf_replay_pod_t key = {.name = p->name}, *kp = &key;
    const sf_replay_pod_t **hit = nref ? bsearch(&kp, names, nref, sizeof(*names), cmp_name) : NULL;
    long j = hit != NULL ? -1 : ref != NULL ? draw_like(ref, p, &rng) : -1;
    if (hit == NULL && j < 0) {
      snprintf(err, errlen,
               "pod '%s' has no creation_time and deletion_time, and no pod list with times "
               "lends it a lifetime (--lifetimes FILE)",
               p->name);
      rc = SF_EINVAL;
      break;
    }
    const sf_replay_pod_t *q = hit != NULL ? *hit : &ref->pods[j];
    life[i] = cap_life((double)(q->until - q->at), horizon_s);
    counts[hit != NULL ? 1 : 2]++;
  }
  free(names);
  return rc;
}

void sf_churn_load(const sf_replay_trace_t *t, const double *life, sf_churn_load_t *out)
{
  memset(out, 0, sizeof(*out));
  double n = t->npods > 0 ? (double)t->npods : 1.0;
  int64_t first = INT64_MAX, last = 0;
  for (size_t i = 0; i < t->npods; i++) {
    const sf_replay_pod_t *p = &t->pods[i];
    out->gpu_s += (double)p->load_milli / 1000.0 * life[i] / n;
    out->cpu_s += (double)p->cpu_milli / 1000.0 * life[i] / n;
    out->mem_s += (double)p->mem_bytes * life[i] / n;
    out->life_s += life[i] / n;
    first = p->at < first ? p->at : first;
    last = p->at > last ? p->at : last;
  }
  for (size_t i = 0; i < t->nnodes; i++) {
    out->cpus += (double)t->nodes[i].cpu_milli / 1000.0;
    out->mem += (double)t->nodes[i].mem_bytes;
  }
  out->gpus = (double)sf_replay_gpu_milli(t) / 1000.0;
  /* R at which offered CPU-time equals the fleet's: rate x cpu_s = cpus, rate = R x gpus / gpu_s. */
  out->cpu_bound = out->cpu_s > 0 ? out->cpus * out->gpu_s / (out->gpus * out->cpu_s) : INFINITY;
  out->mem_bound = out->mem_s > 0 ? out->mem * out->gpu_s / (out->gpus * out->mem_s) : INFINITY;
  if (t->native && last > first && out->gpus > 0)
    out->native_load = (double)t->npods / (double)(last - first) * out->gpu_s / out->gpus;
}

double sf_churn_rate(const sf_churn_load_t *l, double load)
{
  return l->gpu_s > 0 ? load * l->gpus / l->gpu_s : 0.0;
}

double sf_churn_bound(const sf_churn_load_t *l)
{
  double b = 1.0;
  b = l->cpu_bound < b ? l->cpu_bound : b;
  return l->mem_bound < b ? l->mem_bound : b;
}

/* ---- the arrivals of one run ---- */

static int cmp_arrival(const void *a, const void *b)
{
  const churn_arrival_t *x = a, *y = b;
  if (x->at != y->at)
    return x->at < y->at ? -1 : 1;
  return (x->pod > y->pod) - (x->pod < y->pod);
}

/* The steady state at time 0: pods drawn in proportion to their lifetime, a uniform part left. */
static size_t fill(const sf_replay_trace_t *t, const double *life, double rate, double mean_life,
                   sf_rng_t *rng, churn_arrival_t *out)
{
  size_t k = (size_t)llround(rate * mean_life);
  double *cum = sf_xcalloc(t->npods + 1, sizeof(*cum));
  for (size_t i = 0; i < t->npods; i++)
    cum[i + 1] = cum[i] + life[i];
  for (size_t j = 0; j < k; j++) {
    double u = sf_rng_unit(rng) * cum[t->npods];
    size_t lo = 0, hi = t->npods; /* the first i with cum[i + 1] > u */
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      if (cum[mid + 1] > u)
        hi = mid;
      else
        lo = mid + 1;
    }
    size_t i = lo < t->npods ? lo : t->npods - 1;
    double left = life[i] * sf_rng_unit(rng);
    out[j] = (churn_arrival_t){0.0, (uint32_t)i, left > 1e-3 ? left : 1e-3, true};
  }
  free(cum);
  return k;
}

churn_arrival_t *sf__churn_arrivals(const sf_replay_trace_t *t, const sf_churn_opts_t *o,
                                    const sf_churn_load_t *l, double *rate, size_t *n)
{
  sf_rng_t rng;
  sf_rng_seed(&rng, o->run.seed ^ 0x636875726e617272ull);
  if (t->native) {
    int64_t first = INT64_MAX;
    for (size_t i = 0; i < t->npods; i++)
      first = t->pods[i].at < first ? t->pods[i].at : first;
    double scale = o->load > 0 && l->native_load > 0 ? l->native_load / o->load : 1.0;
    churn_arrival_t *a = sf_xcalloc(t->npods + 1, sizeof(*a));
    size_t k = 0;
    for (size_t i = 0; i < t->npods; i++) {
      double at = (double)(t->pods[i].at - first) * scale;
      if (at < o->duration_s)
        a[k++] = (churn_arrival_t){at, (uint32_t)i, o->life[i], false};
    }
    qsort(a, k, sizeof(*a), cmp_arrival);
    *rate = l->native_load > 0 ? sf_churn_rate(l, o->load > 0 ? o->load : l->native_load) : 0.0;
    *n = k;
    return a;
  }
  *rate = sf_churn_rate(l, o->load);
  size_t cap = (size_t)(*rate * (o->duration_s + l->life_s) * 1.2) + 64, k = 0;
  churn_arrival_t *a = sf_xcalloc(cap, sizeof(*a));
  if (t->npods == 0 || *rate <= 0) {
    *n = 0;
    return a;
  }
  k = fill(t, o->life, *rate, l->life_s, &rng, a);
  for (double at = 0.0;;) {
    at += -log(1.0 - sf_rng_unit(&rng)) / *rate;
    if (at >= o->duration_s)
      break;
    uint32_t i = (uint32_t)sf_rng_below(&rng, t->npods);
    sf_xgrow(&a, &cap, k + 1, sizeof(*a));
    a[k++] = (churn_arrival_t){at, i, o->life[i], false};
  }
  *n = k;
  return a;
}
