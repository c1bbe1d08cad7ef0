/*
 * The packer: filter and score nodes for one pod's demand (packer.h).
 *
 * Per call, the demand is prepared once (demand.c: requests flattened into
 * slots, constraints, the models it can use), then the mix it is scored
 * against (mix.c). Per node:
 *   1. CPU and memory, when the node tracks them.
 *   2. The node's summary (view.c), rebuilt only when the node changed.
 *   3. A placement (search.c): candidates per slot, their availability
 *      against a tentative overlay, then one device, N devices of one
 *      island, or the general bounded search. The fast path (fast.c) serves
 *      one-request calls on plain nodes and remembers their verdicts.
 *   4. The placement's raw score from the one kernel (score.c); reasons
 *      for the rest (reason.c).
 * Scores are normalised to 0..10 over the FIT nodes: the best raw score gets
 * 10, the others min-max over 0..9 (kube-scheduler picks at random among
 * equal totals, so only the best may have the top). This is independent of
 * the order of the nodes in the call.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "packer_int.h"

sf_packer_t *sf_packer_create(void)
{
  sf_packer_t *p = sf_xcalloc(1, sizeof(*p));
  p->last_node = -1;
  p->fast.on = true;
  p->fast.alike = true;
  sf__score_init(&p->score);
  return p;
}

void sf_packer_destroy(sf_packer_t *p)
{
  if (p == NULL)
    return;
  sf__demand_dispose(&p->dem);
  sf__view_dispose(&p->view);
  sf__search_dispose(&p->search);
  sf__score_dispose(&p->score);
  sf__mix_history(&p->mix, false);
  sf__plan_dispose(&p->mix.plan);
  free(p->fast.memo);
  free(p->fast.lk);
  free(p);
}

/* The demand's side of a call: requests, constraints, and the models it can use. */
static void prepare_demand(sf_packer_t *p, sf_index_t *idx, const sf_policy_t *pol,
                           const sf_demand_t *d)
{
  p->pol = pol;
  sf__score_policy(p);
  sf__demand_prepare(p, idx, d);
}

static void prepare(sf_packer_t *p, sf_index_t *idx, const sf_policy_t *pol, const sf_demand_t *d,
                    unsigned flags)
{
  prepare_demand(p, idx, pol, d);
  if (flags & SF_EVAL_LEARN)
    sf__mix_learn(p, +1);
  sf__mix_load(p);
  sf__mix_scarcity(p);
  p->stamp++;
  sf__demand_resolve(p);
  sf__fast_prepare(p);
}

/* A single request for one device with no constraint. */
static bool simple(const sf_packer_t *p)
{
  const pk_demand_t *d = &p->dem;
  return d->nfr == 1 && d->ncs == 0 && d->fr[0].top->nalts == 0 && !d->fr[0].top->all &&
         !d->fr[0].top->admin && d->fr[0].top->count == 1;
}

/* The node's CPU and memory; false with the reason when the pod's do not fit. */
static bool host_fits(sf_packer_t *p, sf_node_id node, sf_verdict_t *v)
{
  const sf__node_t *n = &p->idx->nodes[node];
  const sf_demand_t *d = p->dem.dem;
  if (n->cpu_alloc > 0 && d->cpu_milli > n->cpu_alloc - n->cpu_used) {
    sf__reason_mark(p, R_CPU);
    if (!p->reason.off)
      snprintf(v->reason, sizeof(v->reason), "needs %lldm CPU; %lldm is free",
               (long long)d->cpu_milli, (long long)(n->cpu_alloc - n->cpu_used));
    return false;
  }
  if (n->mem_alloc > 0 && d->mem_bytes > n->mem_alloc - n->mem_used) {
    sf__reason_mark(p, R_MEMORY);
    if (!p->reason.off)
      snprintf(v->reason, sizeof(v->reason), "needs %lld MiB of memory; %lld MiB is free",
               (long long)(d->mem_bytes >> 20), (long long)((n->mem_alloc - n->mem_used) >> 20));
    return false;
  }
  return true;
}

/* Filters and scores the node's devices (p->node); leaves the placement in p->search.res on FIT. */
SF_HOT void node_devices(sf_packer_t *p, sf_verdict_t *v)
{
  if (p->fast.kind != FAST_NONE && sf__fast_eval(p, p->node, v))
    return;
  sf__search_begin(p, sf__view_node(p, p->node, p->idx, &p->view));
  int rc;
  double raw = 0.0;
  if (simple(p)) {
    sf__search_gather(p, 0, p->pol->device_choice != SF_CHOICE_PACKER);
    rc = sf__search_one(p, &raw);
  } else {
    sf__search_gather_all(p);
    rc = sf__search_all(p);
    if (rc == SEARCH_OK)
      raw = sf__search_score(p);
  }
  sf__search_end(p);
  if (rc != SEARCH_OK) {
    sf__reason_fail(p, rc, v);
    return;
  }
  v->fit = SF_FIT_YES;
  v->raw = raw;
  if (p->score.bounds)
    sf__score_sens(p, &v->cost, v->sens);
}

#define HOST_LAGS "kube-scheduler judges CPU and memory (its view counts the pods it has just placed)"

/* Filters and scores one node; leaves the placement in p->search.res on FIT. */
static void node_eval(sf_packer_t *p, sf_node_id node, sf_verdict_t *v)
{
  /*
   * Field by field: a compound literal would zero all of reason[] too, a
   * write of three cache lines per node (0.9 MB over 5,000 nodes) where
   * one is needed.
   */
  v->fit = SF_FIT_NO;
  v->raw = 0.0;
  v->score = 0;
  v->reason[0] = '\0';
  v->cost = 0.0;
  for (int k = 0; k <= SF_DRIFT_TERMS; k++)
    v->sens[k] = 0.0;
  p->node = node;
  if (p->score.bounds)
    sf__score_begin(&p->score);
  if (host_fits(p, node, v)) {
    node_devices(p, v);
    return;
  }
  if (!p->host_lags)
    return;
  /* Short of CPU or memory by the index's count, which lags the judge's: the devices decide. */
  node_devices(p, v);
  if (v->fit == SF_FIT_NO)
    return;
  v->fit = SF_FIT_UNSURE;
  v->raw = 0.0;
  v->cost = 0.0;
  for (int k = 0; k <= SF_DRIFT_TERMS; k++)
    v->sens[k] = 0.0;
  if (!p->reason.off)
    snprintf(v->reason, sizeof(v->reason), "%s", HOST_LAGS);
}

/* ---- public entry points ---- */

/*
 * lround of v in [0, SF_SCORE_MAX - 1], without the libm call (about 20
 * instructions a node): v - (int)v is exact for such v, so this rounds
 * half away from zero exactly as lround does.
 */
static int round_half_up(double v)
{
  int s = (int)v;
  return s + (v - (double)s >= 0.5);
}

/* node_eval with the verdict's reason code: the kind of the last reason said about the node. */
static void node_verdict(sf_packer_t *p, sf_node_id node, sf_verdict_t *v)
{
  p->reason.last = SF_REASON_NONE;
  node_eval(p, node, v);
  v->code = v->fit == SF_FIT_YES ? SF_REASON_NONE : (sf_reason_code_t)p->reason.last;
}

/*
 * A pod without claims can only add fragmentation (FGD's increase is 0 at
 * best, the score of a node without GPUs). Every node where it adds none
 * (a node without GPUs, or one that leaves each typical pod its CPU) is as
 * good as any other and gets SF_SCORE_MAX; a GPU node whose increase is
 * above 0 keeps at most SF_SCORE_MAX - 1 even when it is the best GPU node.
 * Both strategies score on FGD's integer steps (score.c fgd_step): an
 * increase of 0 is step 50, any increase above 0 a step below it. binpack
 * and spread do not measure fragmentation and are left alone.
 */
static void cap_cpu_only(const sf_packer_t *p, size_t n, sf_verdict_t *out)
{
  sf_strategy_t st = p->pol->strategy;
  if (st != SF_STRATEGY_FRAGMENTATION && st != SF_STRATEGY_FGD)
    return;
  for (size_t i = 0; i < n; i++) {
    if (out[i].fit != SF_FIT_YES)
      continue;
    if (floor(out[i].raw) >= 50.0)
      out[i].score = SF_SCORE_MAX;
    else if (out[i].score == SF_SCORE_MAX)
      out[i].score = SF_SCORE_MAX - 1;
  }
}

int sf_packer_evaluate(sf_packer_t *p, sf_index_t *idx, const sf_policy_t *pol,
                       const sf_demand_t *demand, const sf_node_id *nodes, size_t n, unsigned flags,
                       sf_verdict_t *out)
{
  if (p == NULL || idx == NULL || pol == NULL || demand == NULL ||
      (n > 0 && (nodes == NULL || out == NULL)))
    return SF_EINVAL;
  for (size_t i = 0; i < n; i++)
    if (!sf_index_node_live(idx, nodes[i]))
      return SF_ENOENT;
  if (demand->nclaims == 0 && demand->cpu_milli == 0 && demand->mem_bytes == 0) {
    for (size_t i = 0; i < n; i++)
      out[i] = (sf_verdict_t){SF_FIT_YES, SF_REASON_NONE, 0.0, 0, 0.0, {0.0}, ""};
    return 0;
  }
  prepare(p, idx, pol, demand, flags);
  p->host_lags = (flags & SF_EVAL_HOST_LAGS) != 0;
  double lo = INFINITY, hi = -INFINITY;
  p->fast.evaluating = true;
  p->fast.shared = 0;
  p->fast.replayed = false;
  for (size_t i = 0; i < n; i++) {
    if (i + 2 < n && p->fast.kind != FAST_NONE && !p->fast.replayed)
      sf__fast_prefetch(p, nodes[i + 2]);
    node_verdict(p, nodes[i], &out[i]);
    if (out[i].fit == SF_FIT_YES) {
      lo = out[i].raw < lo ? out[i].raw : lo;
      hi = out[i].raw > hi ? out[i].raw : hi;
    }
  }
  for (size_t i = 0; i < n; i++) {
    if (out[i].fit != SF_FIT_YES)
      continue;
    double x = hi > lo ? (out[i].raw - lo) / (hi - lo) : 1.0;
    /* Only the best placement gets the top score: kube-scheduler breaks equal
     * totals at random, and min-max over a wide range of raw scores would hand
     * the top score to many nodes. */
    out[i].score = out[i].raw == hi ? SF_SCORE_MAX : round_half_up(x * (SF_SCORE_MAX - 1));
  }
  if (demand->nclaims == 0)
    cap_cpu_only(p, n, out);
  p->fast.evaluating = false;
  p->host_lags = false;
  p->last_node = -1;
  return 0;
}

sf_fit_t sf_packer_place(sf_packer_t *p, sf_index_t *idx, const sf_policy_t *pol,
                         const sf_demand_t *demand, sf_node_id node, sf_assignment_t *out,
                         sf_verdict_t *verdict)
{
  sf_verdict_t v;
  pk_search_t *s = &p->search;
  p->last_node = -1;
  if (!sf_index_node_live(idx, node)) {
    v = (sf_verdict_t){SF_FIT_NO, SF_REASON_NO_DEVICES, 0.0, 0, 0.0, {0.0}, "no such node"};
  } else {
    prepare(p, idx, pol, demand, 0);
    node_verdict(p, node, &v);
  }
  if (v.fit == SF_FIT_YES) {
    v.score = SF_SCORE_MAX;
    for (size_t i = 0; i < s->nres; i++)
      s->res[i].pick.consumed = &s->rcons[i * MAXCAPS];
    p->last_node = node;
    if (out)
      *out = (sf_assignment_t){node, s->nres, s->res};
  }
  if (verdict)
    *verdict = v;
  return v.fit;
}

int sf_packer_commit(sf_packer_t *p, sf_index_t *idx, const sf_demand_t *demand, const char *holder,
                     sf_alloc_id *out)
{
  const pk_search_t *s = &p->search;
  if (p->last_node < 0)
    return SF_EINVAL;
  sf_pick_t *picks = sf_xcalloc(s->nres + 1, sizeof(*picks));
  for (size_t i = 0; i < s->nres; i++)
    picks[i] = (sf_pick_t){s->res[i].pick.dev, &s->rcons[i * MAXCAPS], false};
  int err = sf_index_alloc_add(idx, holder, p->last_node, demand->cpu_milli, demand->mem_bytes, picks,
                               s->nres, 0, out);
  free(picks);
  if (err == 0)
    p->last_node = -1;
  return err;
}

/* The node's summary under pol's mix, with FGD's published measure (sf_packer_node_frag). */
static hnode_t *node_measured(sf_packer_t *p, sf_index_t *idx, const sf_policy_t *pol,
                              sf_policy_t *fgd, sf_node_id node)
{
  static const sf_demand_t none = {NULL, 0, 0, 0};
  *fgd = *pol;
  fgd->strategy = SF_STRATEGY_FGD;
  prepare(p, idx, fgd, &none, 0);
  p->node = node;
  return sf__view_node(p, node, p->idx, &p->view);
}

double sf_packer_node_frag(sf_packer_t *p, sf_index_t *idx, const sf_policy_t *pol, sf_node_id node)
{
  sf_policy_t fgd;
  if (!sf_index_node_live(idx, node))
    return 0.0;
  double f = sf__score_frag(p, node_measured(p, idx, pol, &fgd, node));
  p->pol = pol;
  return f;
}

double sf_packer_node_starved(sf_packer_t *p, sf_index_t *idx, const sf_policy_t *pol,
                              sf_node_id node)
{
  sf_policy_t fgd;
  if (!sf_index_node_live(idx, node))
    return 0.0;
  double f = (double)sf__score_starved(p, node_measured(p, idx, pol, &fgd, node));
  p->pol = pol;
  return f;
}

void sf_packer_set_reasons(sf_packer_t *p, bool on)
{
  p->reason.off = !on;
}
