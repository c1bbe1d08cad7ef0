/*
 * Pod shapes and the verdict cache, the order that breaks ties, and the
 * learned mix of the fragmentation policy (replay_run.c has the run).
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "replay_run_int.h"

/* ---- pod shapes: pods that the core cannot tell apart, memory aside ---- */

static bool same_shape(const sf_replay_pod_t *a, const sf_replay_pod_t *b)
{
  if (a->cpu_milli != b->cpu_milli || a->num_gpu != b->num_gpu || a->gpu_milli != b->gpu_milli ||
      a->nclaims != b->nclaims)
    return false;
  for (size_t c = 0; c < a->nclaims; c++) {
    const sf_replay_claim_t *x = &a->claims[c], *y = &b->claims[c];
    if (x->island != y->island || x->nreqs != y->nreqs)
      return false;
    for (size_t q = 0; q < x->nreqs; q++)
      if (x->reqs[q].count != y->reqs[q].count || x->reqs[q].amount != y->reqs[q].amount ||
          x->reqs[q].spec != y->reqs[q].spec)
        return false;
  }
  return true;
}

static uint64_t mix64(uint64_t h, int64_t v)
{
  return (h ^ (uint64_t)v) * 0x100000001b3ull;
}

static uint64_t shape_hash(const sf_replay_pod_t *p)
{
  uint64_t h = mix64(mix64(mix64(0xcbf29ce484222325ull, p->cpu_milli), p->num_gpu), p->gpu_milli);
  for (size_t c = 0; c < p->nclaims; c++)
    for (size_t q = 0; q < p->claims[c].nreqs; q++) {
      const sf_replay_req_t *rq = &p->claims[c].reqs[q];
      h = mix64(mix64(mix64(h, rq->count), rq->amount), rq->spec);
    }
  return h;
}

/* shapes x nodes; beyond, no cache (32 bytes an entry, 112 with the drift bound: 64 / 224 MiB) */
#define CACHE_MAX_ENTRIES (2u << 20)

static bool extender(const run_t *r)
{
  return r->o->extender_scores && r->kind == SF_REPLAY_CORE;
}

/* Gives every trace pod a shape id (open addressing on the shape hash). */
static void assign_shapes(run_t *r)
{
  const sf_replay_trace_t *t = r->t;
  size_t cap = 64;
  while (cap < 2 * t->npods)
    cap *= 2;
  uint32_t *slot = sf_xcalloc(cap, sizeof(*slot)); /* 1 + representative pod, 0 = empty */
  uint32_t *id_of = sf_xcalloc(cap, sizeof(*id_of));
  r->shape_of = sf_xcalloc(t->npods + 1, sizeof(*r->shape_of));
  r->nshapes = 0;
  for (uint32_t i = 0; i < t->npods; i++) {
    size_t h = (size_t)shape_hash(&t->pods[i]) & (cap - 1);
    while (slot[h] != 0 && !same_shape(&t->pods[slot[h] - 1], &t->pods[i]))
      h = (h + 1) & (cap - 1);
    if (slot[h] == 0) {
      slot[h] = i + 1;
      id_of[h] = (uint32_t)r->nshapes++;
    }
    r->shape_of[i] = id_of[h];
  }
  free(slot);
  free(id_of);
  r->cached = !r->o->no_cache && !extender(r) && r->nshapes > 0 &&
              r->nshapes * (r->nnodes + 1) <= CACHE_MAX_ENTRIES;
  r->vc = sf_xcalloc((r->cached ? r->nshapes : 1) * (r->nnodes + 1), sizeof(*r->vc));
  /*
   * The bound decides which verdicts can still win without scoring them
   * again, so the choice must not depend on the others: keys compare by
   * FGD's integer step and a rank of its own per node (perm, first), and
   * no random draw among equals.
   */
  r->bounded = r->cached && r->kind == SF_REPLAY_CORE &&
               (r->pol.strategy == SF_STRATEGY_FGD || r->pol.strategy == SF_STRATEGY_FRAGMENTATION) &&
               (r->o->ties == SF_REPLAY_TIES_PERM || r->o->ties == SF_REPLAY_TIES_FIRST) &&
               !r->o->no_bound;
  r->joined = sf_xcalloc(JOINED_SLOTS, sizeof(*r->joined));
  r->joined_epoch = sf_xcalloc(JOINED_SLOTS, sizeof(*r->joined_epoch));
  r->joined_at = sf_xcalloc(JOINED_SLOTS, sizeof(*r->joined_at));
  r->since = sf_xcalloc(SINCE_SLOTS, sizeof(*r->since));
  r->since_moves = sf_xcalloc(SINCE_SLOTS, sizeof(*r->since_moves));
  r->since_at = sf_xcalloc(SINCE_SLOTS, sizeof(*r->since_at));
  r->since_ok = sf_xcalloc(SINCE_SLOTS, sizeof(*r->since_ok));
  sf_packer_set_bounds(r->pk, r->bounded);
  r->unsure = sf_xcalloc(r->nnodes + 1, sizeof(*r->unsure));
  if (r->bounded)
    r->vb = sf_xcalloc(r->nshapes * (r->nnodes + 1), sizeof(*r->vb));
  r->low = sf_xcalloc(r->nnodes + 1, sizeof(*r->low));
}

/* The node's state changed: its cached verdicts are stale, its free memory is re-read. */
void sf__replay_touch(run_t *r, size_t pos)
{
  int64_t ca, cu, ma, mu;
  r->stamp[pos]++;
  sf_index_node_cpu_mem(r->idx, r->nodes[pos], &ca, &cu, &ma, &mu);
  r->mem_free[pos] = ma > 0 ? ma - mu : INT64_MAX;
}

/*
 * A pod bound (departed false) or a bound pod gone: the core's churn
 * answer (sf_mix_churn). When it changes, every cost may have moved by
 * weight_fill's term, which no drift bound covers: every verdict is stale.
 */
void sf__replay_churn(run_t *r, bool departed)
{
  bool was = sf_mix_churning(r->idx);
  sf_mix_churn(r->idx, departed);
  if (sf_mix_churning(r->idx) != was)
    for (size_t pos = 0; pos < r->nnodes; pos++)
      r->stamp[pos]++;
}

/* rank[0..n) = a permutation of 0..n-1 drawn from its own stream of the seed (Fisher-Yates). */
static void permute_ranks(uint32_t *rank, size_t n, uint64_t seed)
{
  sf_rng_t rng;
  sf_rng_seed(&rng, seed ^ 0x9e3779b97f4a7c15ull);
  for (size_t i = 0; i < n; i++)
    rank[i] = (uint32_t)i;
  for (size_t i = n; i > 1; i--) {
    size_t j = (size_t)sf_rng_below(&rng, i);
    uint32_t x = rank[i - 1];
    rank[i - 1] = rank[j];
    rank[j] = x;
  }
}

/*
 * The order in which equal scores are broken (--ties), as a rank per node
 * position: the lowest rank wins, equal ranks at random.
 *   perm: the FGD simulator. Its syncClusterResourceList sorts the nodes by
 *     name and renames node i "%04d-" + name with rand.Perm(n)[i] (seeded
 *     with the tune seed), and the first highest score by name wins (the
 *     authors' kube-scheduler fork; docs/replay.md), so the rank of node i is
 *     a seeded random permutation, fixed for the whole run.
 *   sched: kube-scheduler 1.20's own order. Its filter runs
 *     16 workers over chunks of min(sqrt(n), n/16 + 1) nodes and appends each
 *     node that passes to the feasible list as it goes, so that list runs in
 *     waves of 16 chunks, interleaved node by node at random; selectHost then
 *     takes the first highest score (the authors' fork; docs/replay.md).
 *   first: the node list order (by name). random: any, as upstream selectHost.
 */
static void rank_nodes(run_t *r)
{
  size_t n = r->nnodes, chunk = (size_t)sqrt((double)n);
  if (chunk > n / 16 + 1)
    chunk = n / 16 + 1;
  if (chunk < 1)
    chunk = 1;
  r->rank = sf_xcalloc(n + 1, sizeof(*r->rank));
  if (r->kind == SF_REPLAY_KUBE_DEFAULT)
    return; /* selectHost: any of the highest, at random (all ranks 0) */
  if (r->o->ties == SF_REPLAY_TIES_PERM) {
    permute_ranks(r->rank, n, r->o->seed);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    if (r->o->ties == SF_REPLAY_TIES_SCHED)
      r->rank[i] = (uint32_t)(i / (chunk * 16) * chunk + i % chunk);
    else
      r->rank[i] = r->o->ties == SF_REPLAY_TIES_FIRST ? (uint32_t)i : 0;
  }
}

void sf__replay_cache_init(run_t *r)
{
  r->stamp = sf_xcalloc(r->nnodes + 1, sizeof(*r->stamp));
  r->mem_free = sf_xcalloc(r->nnodes + 1, sizeof(*r->mem_free));
  for (size_t i = 0; i < r->nnodes; i++)
    sf__replay_touch(r, i);
  r->stale_ids = sf_xcalloc(r->nnodes + 1, sizeof(*r->stale_ids));
  r->stale_pos = sf_xcalloc(r->nnodes + 1, sizeof(*r->stale_pos));
  r->stale_v = sf_xcalloc(r->nnodes + 1, sizeof(*r->stale_v));
  assign_shapes(r);
  rank_nodes(r);
}

/* The demand as the learned mix sees it: without CPU under --cpu-blind. */
static sf_demand_t learned(const run_t *r, const sf_demand_t *d)
{
  sf_demand_t ld = *d;
  if (r->o->cpu_blind)
    ld.cpu_milli = 0;
  return ld;
}

/* Adds (+1) or takes back (-1) pod p in the learned mix. */
static void learn(run_t *r, const sf_replay_pod_t *p, int sign)
{
  sf_demand_t d;
  sf__replay_build_demand(r, p, &d);
  sf_demand_t ld = learned(r, &d);
  sf_mix_learn(r->pk, r->idx, &r->pol, &ld, sign);
}

/*
 * An arrival in the learned mix: it joins; under a window, the arrival
 * mix_window ago leaves; every mix_every arrivals the mix is published
 * (each of the first mix_every, so that scoring starts from the first pod).
 */
void sf__replay_learn_arrival(run_t *r, const sf_replay_pod_t *p)
{
  size_t w = r->o->mix_window, k = r->o->mix_every;
  r->narrived++;
  learn(r, p, +1);
  if (w > 0) {
    if (r->narrived > w)
      learn(r, r->win[r->narrived % w], -1);
    r->win[r->narrived % w] = p;
  }
  if (k > 1 && (r->narrived <= k || r->narrived % k == 0))
    sf_mix_publish(r->idx);
}

/* A failed or departed pod leaves the mix of present pods (not a window of arrivals). */
void sf__replay_learn_leave(run_t *r, const sf_replay_pod_t *p)
{
  if (r->learn && r->o->mix_window == 0)
    learn(r, p, -1);
}

/*
 * kube-scheduler 1.20's NodeResourcesLeastAllocated for the pod on the node:
 * per resource, (capacity - requested with the pod) x 100 / capacity, in
 * integers, then the mean of CPU and memory.
 */
static double least_allocated(const run_t *r, size_t pos, const sf_replay_pod_t *p)
{
  int64_t ca, cu, ma, mu;
  sf_index_node_cpu_mem(r->idx, r->nodes[pos], &ca, &cu, &ma, &mu);
  int64_t c = ca > 0 && cu + p->cpu_milli <= ca ? (ca - cu - p->cpu_milli) * 100 / ca : 0;
  int64_t m = ma > 0 && mu + p->mem_bytes <= ma ? (ma - mu - p->mem_bytes) * 100 / ma : 0;
  return (double)((c + m) / 2);
}

/* Scores stale_ids[0..n) for the pod and writes their verdicts in the row; 0 or an error. */
static int evaluate(run_t *r, const sf_replay_pod_t *p, sf_demand_t *d, size_t row, size_t n)
{
  if (n == 0)
    return 0;
  int64_t mem = d->mem_bytes;
  if (!extender(r))
    d->mem_bytes = 0;
  int64_t t0 = sf__replay_now_ns();
  int rc = sf_packer_evaluate(r->pk, r->idx, &r->pol, d, r->stale_ids, n, 0, r->stale_v);
  r->eval_ns += sf__replay_now_ns() - t0;
  r->eval_nodes += n;
  d->mem_bytes = mem;
  if (rc != 0)
    return rc;
  sf_mix_drift_t dr;
  sf_mix_drift(r->pk, &dr); /* of the mix these verdicts were scored with */
  double total = 0.0;
  for (int k = 0; k < SF_DRIFT_TERMS; k++)
    total += dr.d[k];
  for (size_t i = 0; i < n; i++) {
    uint32_t pos = r->stale_pos[i];
    const sf_verdict_t *v = &r->stale_v[i];
    bool fit = v->fit == SF_FIT_YES;
    double key = extender(r) ? v->score : sf__replay_node_key(r, pos, p, v->raw);
    vcache_t *e = &r->vc[row + pos];
    *e = (vcache_t){r->stamp[pos] + 1, r->mixver, (uint32_t)dr.epoch, fit, fit ? key : 0, 0.0};
    if (!r->bounded || !fit)
      continue;
    vbound_t *b = &r->vb[row + pos];
    *b = (vbound_t){v->cost, {0},      0.0,     sf_packer_step_margin(r->pk, v->cost),
                    dr.d[2], dr.epoch, dr.moves};
    memcpy(b->sens, v->sens, sizeof(b->sens));
    double most = 0.0; /* the coarse bound: every term of the drift at the largest sensitivity */
    for (int k = 0; k < SF_DRIFT_TERMS; k++) {
      b->base += v->sens[k] * dr.d[k];
      most = v->sens[k] > most ? v->sens[k] : most;
    }
    e->until = most > 0.0 ? total + (b->margin - 1e-3) / most : INFINITY;
  }
  return 0;
}

/* sf_mix_joined of a drift epoch, once per pod. */
static double joined(run_t *r, uint64_t epoch)
{
  size_t slot = epoch % JOINED_SLOTS;
  if (r->joined_epoch[slot] != epoch || r->joined_at[slot] != r->serial) {
    r->joined_epoch[slot] = epoch;
    r->joined_at[slot] = r->serial;
    r->joined[slot] = sf_mix_joined(r->pk, epoch);
  }
  return r->joined[slot];
}

/* sf_mix_since of a past mix, once per pod; false when it is no longer kept. */
static bool since(run_t *r, uint64_t moves, const double **out)
{
  size_t slot = moves % SINCE_SLOTS;
  if (r->since_moves[slot] != moves || r->since_at[slot] != r->serial) {
    r->since_moves[slot] = moves;
    r->since_at[slot] = r->serial;
    r->since_ok[slot] = sf_mix_since(r->pk, moves, r->since[slot]);
  }
  *out = r->since[slot];
  return r->since_ok[slot];
}

/* Does the node at pos, with key `key`, come before the one at best (-1: none) in the choice? */
static bool before(const run_t *r, const vcache_t *row, size_t pos, double key, long best)
{
  return best < 0 || key > row[best].key || (key == row[best].key && r->rank[pos] < r->rank[best]);
}

/*
 * Scores again the verdicts the mix's drift may have moved that can still
 * win: those whose highest key would come before the best of the others
 * (whose keys are known). The rest keep their old key, which is not above
 * their highest and so cannot win either. (Scoring them highest first and
 * stopping once the best so far comes first saves 2% of them and costs
 * more in sorting.)
 */
static int contend(run_t *r, const sf_replay_pod_t *p, sf_demand_t *d, size_t off)
{
  const vcache_t *row = r->vc + off;
  long best = -1;
  for (uint32_t pos = 0; pos < r->nnodes; pos++)
    if (row[pos].fit && r->unsure[pos] != r->serial && p->mem_bytes <= r->mem_free[pos] &&
        before(r, row, pos, row[pos].key, best))
      best = pos;
  /* The key an unsure verdict needs to come first: the best's, or one more when it ranks after it;
   * its step reaches k exactly when its cost can be at most sf_packer_step_cost(k) (1e-5: FGD's
   * formula decides within 1e-6 of a boundary). */
  double at = best < 0 ? INFINITY : sf_packer_step_cost(r->pk, (int)row[best].key) + 1e-5;
  double above = best < 0 ? INFINITY : sf_packer_step_cost(r->pk, (int)row[best].key + 1) + 1e-5;
  size_t n = 0;
  for (uint32_t pos = 0; pos < r->nnodes; pos++)
    if (r->unsure[pos] == r->serial &&
        r->low[pos] <= (best >= 0 && r->rank[pos] < r->rank[best] ? at : above)) {
      r->stale_pos[n] = pos;
      r->stale_ids[n++] = r->nodes[pos];
    }
  return evaluate(r, p, d, off, n);
}

/*
 * Whether the mix's drift since a FIT verdict may have moved its key (the
 * finer bound: each term of the drift at its own sensitivity, and the
 * shapes that joined since); *low, then, the least cost it may have now
 * (-inf: no bound).
 */
static bool moved(run_t *r, const vbound_t *b, const sf_mix_drift_t *dr, double *low)
{
  /* Summed over the moves since: O(1). */
  double j = b->epoch == dr->epoch ? 0.0 : joined(r, b->epoch), m = INFINITY;
  if (!isinf(j)) {
    m = -b->base + j * b->sens[SF_DRIFT_TERMS];
    for (int k = 0; k < SF_DRIFT_TERMS; k++)
      m += b->sens[k] * dr->d[k];
    if (m <= 0.0 || m + 1e-3 < b->margin) /* 1e-3: rounding, far below a step */
      return false;
  }
  /* The mix then against the mix now, directly: weights that went up and back down cancel. */
  const double *s;
  if (b->moves != dr->moves && since(r, b->moves, &s)) {
    double direct = s[0] * b->sens[0] + s[1] * b->sens[1] + s[2] * b->sens[SF_DRIFT_TERMS] +
                    (dr->d[2] - b->scarcity) * b->sens[2];
    m = direct < m ? direct : m;
    if (m <= 0.0 || m + 1e-3 < b->margin)
      return false;
  }
  *low = isinf(m) ? -INFINITY : b->cost - m - 1e-3;
  return true;
}

/*
 * The verdicts of every node for the pod, as a cache row. Only the nodes whose
 * state changed since this shape was last evaluated go through the core
 * (with the pod's memory left out: memory only filters, checked by the
 * caller); between two pods of a shape only a few nodes change, so a replay
 * costs about (shapes x pods) node evaluations instead of (nodes x pods).
 *
 * When a learned mix moves, a FIT verdict's key may move too. Under the
 * bound (r->bounded) a verdict stays when its cost, moved by as much as the
 * mix's drift since allows either way, stays within one of FGD's steps; a
 * verdict whose step may have moved is scored again only if its highest
 * step could win the choice (contend()). The choice is the one every
 * verdict scored again gives; replay_method::drift_bound_changes_nothing
 * holds the two to each other.
 */
const vcache_t *sf__replay_evaluate(run_t *r, const sf_replay_pod_t *p, sf_demand_t *d)
{
  size_t off = (r->cached ? r->shape_of[p - r->t->pods] : 0) * (r->nnodes + 1);
  vcache_t *row = r->vc + off;
  sf_mix_drift_t dr = {0, 0, {0}};
  double total = 0.0;
  bool bounded = false;
  size_t n = 0, nunsure = 0;
  if (r->learn) {
    /* The pod is present from now on, as its claim is for the daemon; when the
     * mix it is scored with moves, a cached FIT verdict is stale unless the bound keeps it. */
    sf_demand_t ld = learned(r, d);
    uint64_t h = sf_mix_hash(r->pk, r->idx, &r->pol, &ld);
    if (h != r->mixhash)
      r->mixver++;
    r->mixhash = h;
    sf_mix_drift(r->pk, &dr);
    for (int k = 0; k < SF_DRIFT_TERMS; k++)
      total += dr.d[k];
    bounded = r->bounded && !(r->o->cpu_only_least_allocated && p->nclaims == 0);
  }
  r->serial++;
  for (uint32_t pos = 0; pos < r->nnodes; pos++) {
    const vcache_t *e = &row[pos];
    bool stale = !r->cached || e->stamp != r->stamp[pos] + 1;
    if (!stale && e->fit && e->mixver != r->mixver) {
      double low;
      if (!bounded) {
        stale = true;
      } else if ((e->epoch == (uint32_t)dr.epoch && total < e->until) ||
                 !moved(r, &r->vb[off + pos], &dr, &low)) {
        r->kept++;
      } else if (isinf(low)) {
        stale = true;
      } else if (p->mem_bytes <= r->mem_free[pos]) { /* else it cannot be chosen now */
        r->unsure[pos] = r->serial;
        r->low[pos] = low;
        nunsure++;
      }
    }
    if (stale) {
      r->stale_pos[n] = pos;
      r->stale_ids[n++] = r->nodes[pos];
    }
  }
  if (evaluate(r, p, d, off, n) != 0)
    return NULL;
  if (nunsure > 0 && contend(r, p, d, off) != 0)
    return NULL;
  /* Memory is not part of a shape, so these keys are not cached: every pod of the shape sets them. */
  if (r->o->cpu_only_least_allocated && p->nclaims == 0)
    for (uint32_t pos = 0; pos < r->nnodes; pos++)
      if (row[pos].fit)
        row[pos].key = least_allocated(r, pos, p);
  if (r->kind == SF_REPLAY_KUBE_DEFAULT)
    for (uint32_t pos = 0; pos < r->nnodes; pos++)
      if (row[pos].fit)
        row[pos].key = sf__replay_kube_score(r, pos, p);
  return row;
}

/*
 * The FIT node a policy takes, as a position in r->nodes, or -1: the highest
 * key, ties broken by rank_nodes(). The random baseline takes any FIT node
 * (the simulator's RandomScore plugin gives one random node the top score).
 */
