/*
 * One replay run: the trace on a fresh index, FGD's experiment method, the
 * scheduling loop and its measurements.
 *
 * Mapping (so that the very code the extender runs is what is measured):
 * every trace node is an index node (CPU, memory) with one pool (driver
 * gpu.slicefit.io, pool = node name) holding one shared device per GPU,
 * gpu-0..gpu-N, with a string attribute "model" and one capacity "memory".
 * For the Alibaba trace that capacity is 1000 milli-units (the quantity "1",
 * one whole GPU) so that gpu_milli maps exactly; native traces give real GPU
 * memory. A pod is a demand with its CPU and memory and one claim per
 * claim of the trace; each request asks `count` devices and `amount` of the
 * memory capacity per device, under a model selector when its model set is
 * not "any".
 *
 * Scheduling a pod: sf_packer_evaluate over all nodes decides feasibility.
 * A core strategy picks the FIT node with the best raw score (fgd: the FGD
 * plugin's integer score), then sf_packer_place and sf_packer_commit. The
 * paper's baselines score the FIT nodes here with the simulator's integer
 * formulas; the device inside the node is chosen by the core's binpack (best
 * fit) or, for random, at random. Equal scores are broken by --ties
 * (rank_nodes). CPU and memory filter as the simulator's NodeResourcesFit
 * does; CPU-only pods go through the same scoring. Failed pods are dropped.
 *
 * Measurements: allocated GPU share after every pod against the cumulative
 * arrived GPU request (failures included), sampled at FGD's thresholds and
 * every SF_REPLAY_CURVE_STEP percent; fragmentation against the typical
 * pods at 100%; core time per decision with CLOCK_MONOTONIC.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "replay_run_int.h"

static long choose_node(run_t *r, const sf_replay_pod_t *p, const vcache_t *row)
{
  long best = -1;
  size_t ties = 0;
  bool random = r->kind == SF_REPLAY_RANDOM;
  for (size_t i = 0; i < r->nnodes; i++) {
    if (!row[i].fit || p->mem_bytes > r->mem_free[i])
      continue;
    bool above = best >= 0 && !random &&
                 (row[i].key > row[best].key ||
                  (row[i].key == row[best].key && r->rank[i] < r->rank[best]));
    bool equal = best >= 0 &&
                 (random || (row[i].key == row[best].key && r->rank[i] == r->rank[best]));
    if (best < 0 || above) {
      best = (long)i;
      ties = 1;
    } else if (equal && sf_rng_below(&r->rng, ++ties) == 0) {
      best = (long)i;
    }
  }
  return best;
}

/* The random baseline's device choice: random devices among those that fit. */
static int place_random(run_t *r, const sf_replay_pod_t *p, sf_node_id node, const char *holder,
                        sf_alloc_id *aid)
{
  const sf_replay_req_t *q = &p->claims[0].reqs[0];
  size_t nd, nok = 0;
  const sf_dev_id *devs = sf_index_node_devices(r->idx, node, &nd);
  sf_dev_id ok[SF_REPLAY_MAX_GPUS];
  sf_pick_t picks[SF_REPLAY_MAX_GPUS];
  sf_milli_t consumed[SF_REPLAY_MAX_GPUS];
  for (size_t i = 0; i < nd && nok < SF_REPLAY_MAX_GPUS; i++) {
    sf_milli_t value, fr;
    if (sf_index_dev_ncaps(r->idx, devs[i]) == 0 || !sf_index_dev_live(r->idx, devs[i]))
      continue;
    sf_index_dev_cap(r->idx, devs[i], 0, &value, &fr);
    sf_milli_t need = q->amount > 0 ? q->amount : value;
    if (fr >= need && (q->spec == 0 || sf__replay_match_model(&r->specsel[q->spec], r->idx, devs[i])))
      ok[nok++] = devs[i];
  }
  if (nok < q->count)
    return SF_ENOSPC;
  for (uint32_t k = 0; k < q->count; k++) {
    size_t j = k + (size_t)sf_rng_below(&r->rng, nok - k);
    sf_dev_id x = ok[k];
    ok[k] = ok[j];
    ok[j] = x;
    sf_milli_t value, fr;
    sf_index_dev_cap(r->idx, ok[k], 0, &value, &fr);
    consumed[k] = q->amount > 0 ? q->amount : value;
    picks[k] = (sf_pick_t){ok[k], &consumed[k], false};
  }
  return sf_index_alloc_add(r->idx, holder, node, p->cpu_milli, p->mem_bytes, picks, q->count, 0,
                            aid);
}

/* GPU milli-units an allocation holds (its share of whole GPUs). */
int64_t sf__replay_alloc_share(const run_t *r, sf_alloc_id a)
{
  size_t n;
  const sf_pick_t *picks = sf_index_alloc_picks(r->idx, a, &n);
  int64_t sum = 0;
  for (size_t i = 0; i < n; i++) {
    sf_milli_t value, fr;
    if (sf_index_dev_ncaps(r->idx, picks[i].dev) == 0) {
      sum += 1000;
      continue;
    }
    sf_index_dev_cap(r->idx, picks[i].dev, 0, &value, &fr);
    sf_milli_t c = picks[i].consumed != NULL ? picks[i].consumed[0] : 0;
    if (!sf_index_dev_shared(r->idx, picks[i].dev))
      c = value;
    sum += value == 1000 ? c : (int64_t)((double)c * 1000.0 / (double)value + 0.5);
  }
  return sum;
}

sf_alloc_id sf__replay_schedule(run_t *r, const sf_replay_pod_t *p, const char *holder)
{
  sf_demand_t d;
  sf_assignment_t asg;
  sf_alloc_id aid = -1;
  if (r->learn)
    sf__replay_learn_arrival(r, p); /* before the demand: it builds other pods' demands */
  sf__replay_build_demand(r, p, &d);
  const vcache_t *row = sf__replay_evaluate(r, p, &d);
  long pos = row != NULL ? choose_node(r, p, row) : -1;
  if (pos < 0)
    goto fail;
  sf_node_id node = r->nodes[pos];
  bool simple = p->nclaims == 1 && p->claims[0].nreqs == 1 && !p->claims[0].island;
  if (r->kind == SF_REPLAY_RANDOM && simple) {
    if (place_random(r, p, node, holder, &aid) != 0)
      return -1;
  } else if (sf_packer_place(r->pk, r->idx, &r->pol, &d, node, &asg, NULL) != SF_FIT_YES ||
             sf_packer_commit(r->pk, r->idx, &d, holder, &aid) != 0) {
    goto fail;
  }
  if (p->num_gpu > 0) {
    uint32_t tag = sf__replay_affinity_tag(p);
    if (r->aff[pos][tag]++ == 0)
      r->naff[pos]++;
  }
  sf__replay_touch(r, (size_t)pos);
  sf__replay_churn(r, false);
  return aid;
fail:
  sf__replay_learn_leave(r, p); /* a dropped pod is no longer present */
  return -1;
}

void sf__replay_unschedule(run_t *r, const sf_replay_pod_t *p, sf_alloc_id a)
{
  size_t pos = (size_t)r->pos_of[sf_index_alloc_node(r->idx, a)];
  if (p->num_gpu > 0) {
    uint32_t tag = sf__replay_affinity_tag(p);
    if (--r->aff[pos][tag] == 0)
      r->naff[pos]--;
  }
  sf_index_alloc_remove(r->idx, a);
  sf__replay_touch(r, pos);
  sf__replay_learn_leave(r, p);
  sf__replay_churn(r, true);
}

/* ---- measurements ---- */

static double frag_pct(run_t *r)
{
  double f = 0;
  for (size_t i = 0; i < r->nnodes; i++)
    f += sf_packer_node_frag(r->pk, r->idx, &r->fragpol, r->nodes[i]);
  return r->cap_milli > 0 ? 100.0 * f / (double)r->cap_milli : NAN;
}

static double pct(int64_t part, int64_t whole)
{
  return whole > 0 ? 100.0 * (double)part / (double)whole : NAN;
}

typedef struct {
  size_t next_thresh, next_curve, curve_cap;
} marks_t;

/* sf_replay_result_t.sliver_floor_pct_at_100, from the sums kept by note_slivers. */
static double sliver_floor(const run_t *r)
{
  int64_t left = 0, small = 0, best = 0;
  for (int t = 1; t <= 500; t++) {
    left += r->left_at[t - 1];   /* leftovers L < t */
    small += r->small_at[t - 1]; /* pods s < t */
    best = left - small > best ? left - small : best;
  }
  return pct(best, r->cap_milli);
}

/* A one-GPU share pod arrived (placed or not): what the sliver floor counts of it. */
static void note_slivers(run_t *r, const sf_replay_pod_t *p, bool placed)
{
  if (p->num_gpu != 1 || p->gpu_milli <= 0 || p->gpu_milli >= 1000)
    return;
  r->small_at[p->gpu_milli] += p->gpu_milli;
  if (placed)
    r->left_at[1000 - p->gpu_milli] += 1000 - p->gpu_milli;
}

/* A one-GPU pod of the trace as free_split reads it. */
typedef struct {
  int32_t milli; /* 1000: a whole GPU, which only an idle one holds */
  uint32_t spec;
  int64_t cpu, mem;
} gshape_t;

static int cmp_gshape(const void *a, const void *b)
{
  const gshape_t *x = a, *y = b;
  if (x->milli != y->milli)
    return x->milli < y->milli ? -1 : 1;
  if (x->spec != y->spec)
    return x->spec < y->spec ? -1 : 1;
  if (x->cpu != y->cpu)
    return x->cpu < y->cpu ? -1 : 1;
  return (x->mem > y->mem) - (x->mem < y->mem);
}

/* The trace's one-GPU pod shapes, distinct, by ascending share. */
static gshape_t *gpu_shapes(const sf_replay_trace_t *t, size_t *n)
{
  gshape_t *v = sf_xcalloc(t->npods + 1, sizeof(*v));
  size_t m = 0;
  for (size_t i = 0; i < t->npods; i++) {
    const sf_replay_pod_t *p = &t->pods[i];
    if (p->num_gpu == 1 && p->gpu_milli > 0)
      v[m++] = (gshape_t){p->gpu_milli, p->spec, p->cpu_milli, p->mem_bytes};
  }
  if (m > 0)
    qsort(v, m, sizeof(*v), cmp_gshape);
  size_t k = 0;
  for (size_t i = 0; i < m; i++)
    if (k == 0 || cmp_gshape(&v[k - 1], &v[i]) != 0)
      v[k++] = v[i];
  *n = k;
  return v;
}

/*
 * sf_replay_result_t.free_*_pct_at_100: each GPU's free share, by what the
 * trace's one-GPU pods could still do with it (too small, starved by its
 * node's CPU and memory, or usable).
 */
static void free_split(run_t *r, sf_replay_result_t *res)
{
  size_t ns;
  gshape_t *sh = gpu_shapes(r->t, &ns);
  int64_t part[3] = {0, 0, 0}; /* too small, starved, usable */
  for (size_t i = 0; i < r->nnodes; i++) {
    int64_t ca, cu, ma, mu;
    sf_index_node_cpu_mem(r->idx, r->nodes[i], &ca, &cu, &ma, &mu);
    int64_t cpu = ca > 0 ? ca - cu : INT64_MAX, mem = r->mem_free[i];
    size_t nd;
    const sf_dev_id *devs = sf_index_node_devices(r->idx, r->nodes[i], &nd);
    for (size_t k = 0; k < nd; k++) {
      int64_t f = sf_index_dev_live(r->idx, devs[k]) ? sf_index_dev_free_permille(r->idx, devs[k])
                                                     : 0;
      if (f <= 0)
        continue;
      int kind = 0;
      for (size_t j = 0; j < ns && kind < 2; j++) {
        if (sh[j].milli < 1000 ? sh[j].milli > f : f < 1000)
          break; /* by ascending share: the rest ask more */
        if (sh[j].spec != 0 && !sf__replay_match_model(&r->specsel[sh[j].spec], r->idx, devs[k]))
          continue;
        kind = sh[j].cpu <= cpu && sh[j].mem <= mem ? 2 : 1;
      }
      part[kind] += f;
    }
  }
  free(sh);
  res->free_too_small_pct_at_100 = pct(part[0], r->cap_milli);
  res->free_starved_pct_at_100 = pct(part[1], r->cap_milli);
  res->free_usable_pct_at_100 = pct(part[2], r->cap_milli);
}

/* Records what the thresholds and the curve need once the arrived load has grown. */
static void mark(run_t *r, marks_t *m, sf_replay_result_t *res)
{
  double alloc = pct(r->alloc_milli, r->cap_milli);
  while ((int64_t)m->next_curve * SF_REPLAY_CURVE_STEP * r->cap_milli <= r->arrived_milli * 100) {
    sf_xgrow(&res->curve, &m->curve_cap, res->ncurve + 1, sizeof(*res->curve));
    res->curve[res->ncurve++] = alloc;
    m->next_curve++;
  }
  while (m->next_thresh < SF_REPLAY_NTHRESH &&
         (int64_t)sf_replay_thresholds[m->next_thresh] * r->cap_milli <= r->arrived_milli * 100) {
    res->alloc_pct_at[m->next_thresh] = alloc;
    if (sf_replay_thresholds[m->next_thresh] == 100) {
      res->unallocated_pct_at_100 = 100.0 - alloc;
      res->sliver_floor_pct_at_100 = r->t->native ? NAN : sliver_floor(r);
      if (!r->t->native)
        free_split(r, res);
      res->frag_pct_at_100 = frag_pct(r);
      res->tenants_at_100 = r->gpu_pods_present;
    }
    m->next_thresh++;
  }
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double quantile(double *v, size_t n, double q)
{
  if (n == 0)
    return NAN;
  qsort(v, n, sizeof(*v), cmp_double);
  size_t k = (size_t)ceil(q * (double)n);
  return v[k > 0 ? k - 1 : 0];
}

double sf_replay_median(double *v, size_t n)
{
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (!isnan(v[i]))
      v[m++] = v[i];
  if (m == 0)
    return NAN;
  qsort(v, m, sizeof(*v), cmp_double);
  return m % 2 ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) / 2.0;
}

/* ---- the loop ---- */

typedef struct {
  int64_t time;
  uint32_t slot; /* position in the arrival order */
  bool leave;
} event_t;

static int cmp_event(const void *a, const void *b)
{
  const event_t *x = a, *y = b;
  if (x->time != y->time)
    return x->time < y->time ? -1 : 1;
  if (x->leave != y->leave)
    return x->leave ? -1 : 1; /* departures first: their capacity is free at that instant */
  return (x->slot > y->slot) - (x->slot < y->slot);
}

static event_t *make_events(const sf_replay_trace_t *t, const sf_replay_order_t *o, size_t *n)
{
  event_t *ev = sf_xcalloc(2 * o->n + 1, sizeof(*ev));
  size_t k = 0;
  for (uint32_t s = 0; s < o->n; s++) {
    const sf_replay_pod_t *p = &t->pods[o->idx[s]];
    ev[k++] = (event_t){t->native ? p->at : (int64_t)s, s, false};
    if (t->native && p->until >= 0)
      ev[k++] = (event_t){p->until, s, true};
  }
  qsort(ev, k, sizeof(*ev), cmp_event);
  *n = k;
  return ev;
}

/*
 * True when the allocation at 100% arrived load can no longer reach
 * opts->stop_below_100. Without departures, allocation grows by at most the
 * load still to arrive before the 100% mark, the pod that crosses it
 * included (at most maxload): an Alibaba pod holds exactly its request.
 */
static bool hopeless(const run_t *r, const marks_t *m, int64_t maxload)
{
  /* Past the 100% mark the figure is known: nothing to stop for. */
  if (r->o->stop_below_100 <= 0 || r->t->native || r->cap_milli <= 0 ||
      m->next_thresh >= SF_REPLAY_NTHRESH || sf_replay_thresholds[m->next_thresh] > 100)
    return false;
  int64_t best = r->alloc_milli + (r->cap_milli - r->arrived_milli) + maxload;
  return pct(best, r->cap_milli) < r->o->stop_below_100;
}

static void run_events(run_t *r, const sf_replay_order_t *o, sf_replay_result_t *res, double *times)
{
  size_t nev, ntimes = 0;
  event_t *ev = make_events(r->t, o, &nev);
  sf_alloc_id *aid = sf_xcalloc(o->n + 1, sizeof(*aid));
  int64_t *share = sf_xcalloc(o->n + 1, sizeof(*share));
  marks_t m = {0, 0, 0};
  char holder[300];
  int64_t maxload = 0;
  for (size_t i = 0; i < o->n; i++)
    maxload = r->t->pods[o->idx[i]].load_milli > maxload ? r->t->pods[o->idx[i]].load_milli : maxload;
  mark(r, &m, res);
  for (size_t e = 0; e < nev; e++) {
    const sf_replay_pod_t *p = &r->t->pods[o->idx[ev[e].slot]];
    if (ev[e].leave) {
      if (aid[ev[e].slot] >= 0) {
        sf__replay_unschedule(r, p, aid[ev[e].slot]);
        r->alloc_milli -= share[ev[e].slot];
        r->gpu_pods_present -= p->num_gpu > 0;
        res->pods_departed++;
      }
      continue;
    }
    snprintf(holder, sizeof(holder), "%s#%u", p->name, ev[e].slot);
    int64_t t0 = sf__replay_now_ns();
    sf_alloc_id a = sf__replay_schedule(r, p, holder);
    times[ntimes++] = (double)(sf__replay_now_ns() - t0) / 1000.0;
    aid[ev[e].slot] = a;
    res->pods_arrived++;
    r->arrived_milli += p->load_milli;
    note_slivers(r, p, a >= 0);
    if (a < 0) {
      res->pods_failed++;
      res->gpu_pods_failed += p->num_gpu > 0;
    } else {
      share[ev[e].slot] = sf__replay_alloc_share(r, a);
      r->alloc_milli += share[ev[e].slot];
      r->gpu_pods_present += p->num_gpu > 0;
    }
    mark(r, &m, res);
    if (r->o->progress != NULL && (res->pods_arrived % 256 == 0 || res->pods_arrived == o->n))
      r->o->progress(r->o->progress_ctx, res->pods_arrived, o->n);
    if (hopeless(r, &m, maxload)) {
      res->stopped = true;
      break;
    }
  }
  /*
   * Tuning stops just short of tune x capacity (the next pod would overshoot),
   * so the last threshold at or below it is the state at the end, as FGD reports it.
   */
  int64_t arrived = r->arrived_milli;
  while (!res->stopped && m.next_thresh < SF_REPLAY_NTHRESH && r->o->tune > 0 && !r->t->native &&
         sf_replay_thresholds[m.next_thresh] <= r->o->tune * 100.0 + 1e-9) {
    r->arrived_milli = (int64_t)sf_replay_thresholds[m.next_thresh] * r->cap_milli / 100;
    mark(r, &m, res);
  }
  r->arrived_milli = arrived;
  if (m.next_thresh <= 4) /* never reached 100%: report the state at the end */
    res->tenants_at_100 = r->gpu_pods_present;
  res->decision_us_p50 = quantile(times, ntimes, 0.50);
  res->decision_us_p99 = quantile(times, ntimes, 0.99);
  res->node_eval_us = r->eval_nodes ? (double)r->eval_ns / 1000.0 / (double)r->eval_nodes : NAN;
  res->nodes_evaluated = r->eval_nodes;
  res->verdicts_kept = r->kept;
  res->alloc_pct_final = pct(r->alloc_milli, r->cap_milli);
  res->arrived_pct_final = pct(r->arrived_milli, r->cap_milli);
  free(share);
  free(aid);
  free(ev);
}

static void run_policies(run_t *r, sf_strategy_t strategy)
{
  sf_shape_t *mix = NULL;
  size_t nmix;
  if (r->o->base != NULL)
    sf_policy_copy(&r->pol, r->o->base);
  else
    sf_policy_init(&r->pol);
  snprintf(r->pol.capacity, sizeof(r->pol.capacity), "memory");
  snprintf(r->pol.model_attribute, sizeof(r->pol.model_attribute), "model");
  if (r->t->has_islands && r->pol.island_attribute[0] == '\0' && r->pol.nisland_rules == 0)
    snprintf(r->pol.island_attribute, sizeof(r->pol.island_attribute), "%s", SF_REPLAY_ATTR_ISLAND);
  r->pol.strategy = strategy;
  if (r->kind == SF_REPLAY_KUBE_DEFAULT)
    r->pol.device_choice = SF_CHOICE_FIRST_FIT; /* the in-tree DRA allocator */
  else if (r->kind != SF_REPLAY_CORE)
    r->pol.device_choice = SF_CHOICE_PACKER;
  else if (r->o->device_choice >= 0)
    r->pol.device_choice = (sf_choice_t)r->o->device_choice;
  r->learn = r->kind == SF_REPLAY_CORE && strategy == SF_STRATEGY_FRAGMENTATION;
  r->win = sf_xcalloc(r->o->mix_window + 1, sizeof(*r->win));
  nmix = sf_replay_typical_mix(r->t, &mix);
  sf_policy_copy(&r->fragpol, &r->pol);
  free(r->fragpol.mix);
  r->fragpol.strategy = SF_STRATEGY_FGD;
  r->fragpol.mix = mix;
  r->fragpol.nmix = nmix;
  if (strategy == SF_STRATEGY_FGD && r->pol.nmix == 0) {
    r->pol.mix = sf_xcalloc(nmix ? nmix : 1, sizeof(*mix));
    memcpy(r->pol.mix, mix, nmix * sizeof(*mix));
    r->pol.nmix = nmix;
  }
  if (r->o->cpu_blind) /* the scoring mix only: the fragmentation metric stays FGD's */
    for (size_t i = 0; i < r->pol.nmix; i++)
      r->pol.mix[i].cpu_milli = 0;
}

static void run_dispose(run_t *r)
{
  free(r->win);
  sf_packer_destroy(r->pk);
  if (r->cluster != NULL)
    sf_cluster_destroy(r->cluster);
  else
    sf_index_destroy(r->idx);
  sf_policy_dispose(&r->pol);
  sf_policy_dispose(&r->fragpol);
  free(r->nodes);
  free(r->pos_of);
  free(r->stamp);
  free(r->mem_free);
  free(r->shape_of);
  free(r->vc);
  free(r->vb);
  free(r->stale_ids);
  free(r->stale_pos);
  free(r->stale_v);
  free(r->unsure);
  free(r->low);
  free(r->joined);
  free(r->joined_epoch);
  free(r->joined_at);
  free(r->since);
  free(r->since_moves);
  free(r->since_at);
  free(r->since_ok);
  free(r->rank);
  free(r->specsel);
  free(r->sels);
  free(r->aff);
  free(r->naff);
}

/*
 * Sets up run r for trace t: the policy, the index, the verdict cache and
 * the capacity; res gets the policy, the seed, the nodes and the GPUs.
 * 0, or an error with err filled; sf__replay_close(r) either way.
 */
int sf__replay_open(run_t *r, const sf_replay_trace_t *t, const sf_replay_opts_t *opts,
                    sf_replay_result_t *res, char *err, size_t errlen)
{
  sf_strategy_t strategy;
  int rc;
  if (!sf_replay_policy_valid(opts->policy, &r->kind, &strategy)) {
    snprintf(err, errlen, "unknown policy '%s' (known: %s)", opts->policy, sf_replay_policy_names());
    return SF_EINVAL;
  }
  r->t = t;
  r->o = opts;
  r->pk = sf_packer_create();
  sf_packer_set_reasons(r->pk, false); /* the replay reads fit and score only */
  sf_rng_seed(&r->rng, opts->seed ^ 0x243f6a8885a308d3ull);
  run_policies(r, strategy);
  if ((rc = sf__replay_open_index(r, err, errlen)) != 0 ||
      (rc = sf__replay_build_index(r, err, errlen)) != 0)
    return rc;
  sf__replay_cache_init(r);
  if (r->learn && opts->mix_every > 1)
    sf_mix_hold(r->idx, true);
  snprintf(res->policy, sizeof(res->policy), "%s", opts->policy);
  res->seed = opts->seed;
  res->tune = t->native ? 0 : opts->tune;
  res->nodes = (uint32_t)r->nnodes;
  r->cap_milli = sf_replay_gpu_milli(t);
  if (r->cluster != NULL)
    sf__replay_count_gpus(r);
  res->gpu_milli = r->cap_milli;
  res->gpus = (uint32_t)(res->gpu_milli / 1000);
  return 0;
}

void sf__replay_close(run_t *r)
{
  run_dispose(r);
  memset(r, 0, sizeof(*r));
}

int sf_replay_run(const sf_replay_trace_t *t, const sf_replay_opts_t *opts, sf_replay_result_t *res,
                  char *err, size_t errlen)
{
  run_t *r = sf_xcalloc(1, sizeof(*r));
  sf_replay_order_t order = {0};
  double *times = NULL;
  int rc;
  memset(res, 0, sizeof(*res));
  for (size_t k = 0; k < SF_REPLAY_NTHRESH; k++)
    res->alloc_pct_at[k] = NAN;
  res->unallocated_pct_at_100 = res->frag_pct_at_100 = res->sliver_floor_pct_at_100 = NAN;
  res->free_too_small_pct_at_100 = res->free_starved_pct_at_100 = NAN;
  res->free_usable_pct_at_100 = NAN;
  if ((rc = sf__replay_open(r, t, opts, res, err, errlen)) != 0)
    goto out;
  sf_replay_order_fgd(t, opts->seed, opts->tune, &order);
  times = sf_xcalloc(order.n + 1, sizeof(*times));
  int64_t t0 = sf__replay_now_ns();
  run_events(r, &order, res, times);
  res->wall_s = (double)(sf__replay_now_ns() - t0) / 1e9;
out:
  free(times);
  sf_replay_order_dispose(&order);
  sf__replay_close(r);
  free(r);
  return rc;
}

void sf_replay_result_dispose(sf_replay_result_t *r)
{
  free(r->curve);
  r->curve = NULL;
  r->ncurve = 0;
}
