/*
 * The defragmentation planner (slicefit/defrag.h).
 *
 * Passes, each cheaper than the search it saves:
 *   1. every node evaluated once for the demand: a FIT node means no plan
 *      is needed (outcome FITS);
 *   1b. nodes with their own allocations set aside, 128 at a time, up to
 *      the first that fits (fits_empty): when none does, NEVER;
 *   P. the probe: every single eviction on every node, least GPU-seconds
 *      first, pods looked up as they come off a heap, carried out as found
 *      (pass 4), until the next loses more than the best plan. One eviction
 *      is the least plan there can be, so when the probe finds one (the
 *      usual case) that is the answer, after a few hundred lookups and
 *      evaluations; with nothing after a short span it stops;
 *   2. every pod that may go set aside at once (sf__index_alloc_suspend:
 *      consumption leaves, the record stays) and their nodes evaluated in one
 *      call: only nodes that then fit are candidates. With no candidate the
 *      pods in the way may not go (NONE);
 *   3. subsets of each candidate's pods, by size 1 (unless the probe tried
 *      them all), 2, ... up to defrag_max_evictions (iterative deepening:
 *      the first size with a subset that can be carried out is the least
 *      number of evictions). Each round sets one subset of every candidate
 *      node aside (lexicographic over its pods sorted by GPU-seconds) and
 *      evaluates them in one call;
 *   4. the subsets a round found are carried out, least GPU-seconds first,
 *      while they lose no more than the best plan so far; a node whose
 *      remaining subsets all lose more leaves the search. Carrying out is
 *      checked for real: the demand placed and committed on its node, then
 *      each evicted pod (largest first) placed on the best nodes for it
 *      elsewhere (evaluating only nodes with a device of its kind),
 *      backtracking over the best SF_DEFRAG_BRANCH nodes when a later pod
 *      finds no room. The plan kept is the least by GPU-seconds, then cost,
 *      then the subset's rank on its node, then node (beats), whichever pass
 *      found it.
 *
 * Monotonicity underlies passes 2 and P: setting more allocations aside
 * never makes a node fit less, so a subset that frees room is on a
 * candidate node, and a node that fits with nothing on it is needed for any.
 *
 * Every node evaluation counts against defrag_budget; passes 1, 1b and 2
 * always run when reached (they answer whether any plan can exist), the
 * probe and passes 3 and 4 stop when the budget is spent, keeping what they
 * found.
 *
 * Trial state is undone before returning: set-aside allocations come back,
 * trial allocations (holders starting with "\x01", which no Kubernetes name
 * does) are removed.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "slicefit/defrag.h"
#include "index_priv.h"

#define SF_DEFRAG_BRANCH 4 /* nodes tried per evicted pod when placing them back */
#define PROBE_CHUNK 128    /* nodes per evaluation of the single-eviction probe */
#define PROBE_LOOKS 4      /* pods the probe looks at per evaluation it may spend */
#define PROBE_TIER 4096    /* pods the probe heaps first */
#define TRIAL_PREFIX \
  "\x01"             \
  "defrag "

typedef struct {
  sf_node_id node;
  uint32_t first, n; /* its allocations in plan_t.pallocs */
  bool known;        /* its allocations looked up (node, n, ok and why are set) */
  bool ok;           /* may be evicted */
  uint8_t why;       /* why not (a reason code of blocked()), or OK */
  int64_t gpu_ms;    /* age x milli-GPUs */
} dpod_t;

typedef struct {
  sf_node_id node;
  uint32_t pods[SF_DEFRAG_EVICT_MAX];
  uint32_t n;
  uint32_t rank; /* its place among the node's subsets of its size, in lexicographic order */
  int64_t gpu_ms;
} cand_t;

/* What one evicted pod asks again (derived from what it holds). */
typedef struct {
  const char *driver;
  sf_str_id model;
  bool shared;
} like_t;

typedef struct {
  sf_demand_t dem;
  sf_claim_t *claims;
  sf_request_t *reqs;
  sf_selector_t *sels;
  like_t *likes;
  size_t nlikes;
  sf_cap_request_t *caps;
  sf_constraint_t *cons;
} redo_t;

/* A candidate node's current subset in pass 3: ix into its pods order[lo..lo+k). */
typedef struct {
  uint32_t lo, k, rank;
  uint32_t ix[SF_DEFRAG_EVICT_MAX];
} combo_t;

#define NSMEMO 8

typedef struct {
  const char *ns;
  bool prot;
} nsmemo_t;

typedef struct {
  sf_packer_t *p;
  sf_index_t *idx;
  const sf_policy_t *pol;
  const sf_defrag_input_t *in;
  dpod_t *pods;
  sf_alloc_id *pallocs;
  size_t npallocs, palloccap;
  uint32_t *order; /* ok pods by node, then gpu_ms ascending */
  size_t nok;
  size_t *first;  /* per node, where its pods start in order (end + 1 entries) */
  uint32_t *mark; /* per node, the probe round it is in */
  bool mirrored;  /* a node offers devices of another (sf_index_mirror_set) */
  nsmemo_t nsmemo[NSMEMO];
  sf_node_id *nodes;
  size_t nnodes;
  sf_verdict_t *v;
  bool *cand_node;
  sf_node_id *batch; /* nodes of one evaluation */
  combo_t *combos;
  cand_t *cands;
  size_t ncands, candcap;
  size_t tried;           /* subsets that freed room but could not be carried out */
  sf_defrag_plan_t *best; /* the caller's answer, filled as plans are carried out */
  bool found;
  int64_t best_ms;
  uint32_t best_rank;
  uint64_t work, budget;
  bool budget_hit;
} plan_t;

const char *sf_defrag_outcome_name(sf_defrag_outcome_t o)
{
  static const char *const names[] = {"found", "fits", "never", "none"};
  return (unsigned)o < 4 ? names[o] : "unknown";
}

bool sf_defrag_protected(const sf_policy_t *pol, const char *ns)
{
  size_t len = strlen(ns);
  for (const char *s = pol->defrag_protect_namespaces; *s != '\0';) {
    const char *e = strchr(s, ',');
    size_t n = e ? (size_t)(e - s) : strlen(s);
    if (n == len && memcmp(s, ns, len) == 0)
      return true;
    s += n + (e ? 1 : 0);
  }
  return false;
}

static void set_aside(plan_t *pl, uint32_t pod, bool on)
{
  const dpod_t *d = &pl->pods[pod];
  for (uint32_t k = 0; k < d->n; k++)
    sf__index_alloc_suspend(pl->idx, pl->pallocs[d->first + k], on);
}

/* ---- the pods ---- */

typedef struct {
  sf_node_id node;
  int64_t gpu_ms;
  uint32_t pod;
} okey_t;

/* -1, 0 or 1 as a is below, equal to or above b. */
static int cmp_i64(int64_t a, int64_t b)
{
  return (a > b) - (a < b);
}

static int cmp_ms(const void *a, const void *b)
{
  return cmp_i64(*(const int64_t *)a, *(const int64_t *)b);
}

static int by_node_age(const void *a, const void *b)
{
  const okey_t *x = a, *y = b;
  int c = cmp_i64(x->node, y->node);
  if (c == 0)
    c = cmp_i64(x->gpu_ms, y->gpu_ms);
  return c ? c : cmp_i64(x->pod, y->pod);
}

enum { OK = 0, NO_ALLOC, BARE, PROTECTED, LARGER, NBLOCK };

/* Why a pod may not go (a reason code), or OK. */
static bool is_protected(plan_t *pl, const char *ns);

static int blocked(plan_t *pl, const sf_defrag_pod_t *pod, const dpod_t *d)
{
  if (d->n == 0 || d->node < 0)
    return NO_ALLOC;
  if (!pod->controller)
    return BARE;
  if (pod->ns != NULL && is_protected(pl, pod->ns))
    return PROTECTED;
  if (pod->gpu_milli > pl->in->gpu_milli)
    return LARGER;
  return OK;
}

static void pod_allocs(plan_t *pl, const sf_defrag_pod_t *pod, dpod_t *d, uint32_t at)
{
  d->first = at;
  d->node = -1;
  d->n = 0;
  for (size_t h = 0; h < pod->nholders; h++) {
    sf_alloc_id a = sf_index_alloc_find(pl->idx, pod->holders[h]);
    if (a < 0)
      continue;
    sf_node_id n = sf_index_alloc_node(pl->idx, a);
    if (d->n > 0 && n != d->node)
      d->node = -2; /* on two nodes: never moved */
    else if (d->node != -2)
      d->node = n;
    pl->pallocs[at + d->n++] = a;
  }
}

/*
 * Sorts keys[0..n) (one node's pods) by GPU-seconds, then pod: insertion
 * for the usual handful, qsort past it.
 */
static void sort_node(okey_t *keys, size_t n)
{
  if (n > 32) {
    qsort(keys, n, sizeof(*keys), by_node_age);
    return;
  }
  for (size_t i = 1; i < n; i++) {
    okey_t k = keys[i];
    size_t j = i;
    while (j > 0 && by_node_age(&keys[j - 1], &k) > 0) {
      keys[j] = keys[j - 1];
      j--;
    }
    keys[j] = k;
  }
}

/*
 * pl->order: the pods that may go, by node, then GPU-seconds, then index;
 * pl->first[node] where a node's run starts. A counting sort by node (node
 * ids are dense) and a sort of each node's few pods: linear in the pods,
 * where one sort of them all was most of a plan's cost.
 */
static void order_pods(plan_t *pl, size_t end)
{
  okey_t *keys = sf_xmalloc((pl->nok + 1) * sizeof(*keys));
  pl->first = sf_xcalloc(end + 2, sizeof(*pl->first));
  for (size_t i = 0; i < pl->in->npods; i++)
    if (pl->pods[i].ok)
      pl->first[pl->pods[i].node + 1]++;
  for (size_t n = 0; n < end; n++)
    pl->first[n + 1] += pl->first[n];
  for (size_t i = 0; i < pl->in->npods; i++) {
    const dpod_t *d = &pl->pods[i];
    if (d->ok) /* first[node] counts up to the node's end, and back below */
      keys[pl->first[d->node]++] = (okey_t){d->node, d->gpu_ms, (uint32_t)i};
  }
  for (size_t n = end; n > 0; n--)
    pl->first[n] = pl->first[n - 1];
  pl->first[0] = 0;
  for (size_t n = 0; n < end; n++)
    sort_node(&keys[pl->first[n]], pl->first[n + 1] - pl->first[n]);
  for (size_t i = 0; i < pl->nok; i++)
    pl->order[i] = keys[i].pod;
  free(keys);
}

/* sf_defrag_protected, remembered per namespace pointer: pods share a handful of namespaces. */
static bool is_protected(plan_t *pl, const char *ns)
{
  nsmemo_t *m = &pl->nsmemo[((uintptr_t)ns >> 3) % NSMEMO];
  if (m->ns != ns) {
    m->ns = ns;
    m->prot = sf_defrag_protected(pl->pol, ns);
  }
  return m->prot;
}

/* A pod's GPU-seconds lost (x 1000), as the input tells: no lookup. */
static int64_t gpu_ms_of(const plan_t *pl, size_t i)
{
  const sf_defrag_pod_t *pod = &pl->in->pods[i];
  return (pod->age_s > 0 ? pod->age_s : 0) * (pod->gpu_milli > 0 ? pod->gpu_milli : 0);
}

/* Looks pod i's allocations up (once): its node and whether it may go. */
static const dpod_t *resolve(plan_t *pl, size_t i)
{
  dpod_t *d = &pl->pods[i];
  const sf_defrag_pod_t *pod = &pl->in->pods[i];
  if (!d->known) {
    sf_xgrow(&pl->pallocs, &pl->palloccap, pl->npallocs + pod->nholders + 1, sizeof(*pl->pallocs));
    pod_allocs(pl, pod, d, (uint32_t)pl->npallocs);
    pl->npallocs += d->n;
    d->gpu_ms = gpu_ms_of(pl, i);
    d->why = (uint8_t)blocked(pl, pod, d);
    d->ok = d->why == OK;
    d->known = true;
  }
  return d;
}

/* Every pod resolved, counted by why it may not go, and ordered (order_pods). */
static void pods_init(plan_t *pl, size_t nblocked[NBLOCK])
{
  pl->nok = 0;
  for (size_t i = 0; i < pl->in->npods; i++) {
    const dpod_t *d = resolve(pl, i);
    nblocked[d->why]++;
    pl->nok += d->ok;
  }
  pl->order = sf_xmalloc((pl->in->npods + 1) * sizeof(*pl->order));
  order_pods(pl, (size_t)sf_index_node_end(pl->idx));
}

/* ---- passes 1 and 2 ---- */

static sf_node_id fits_now(plan_t *pl)
{
  sf_node_id best = -1;
  double raw = 0;
  pl->work += pl->nnodes;
  if (sf_packer_evaluate(pl->p, pl->idx, pl->pol, pl->in->demand, pl->nodes, pl->nnodes, 0, pl->v) !=
      0)
    return -1;
  for (size_t i = 0; i < pl->nnodes; i++)
    if (pl->v[i].fit == SF_FIT_YES && (best < 0 || pl->v[i].raw > raw)) {
      best = pl->nodes[i];
      raw = pl->v[i].raw;
    }
  return best;
}

/* One evaluation of nodes[0..n) into pl->v, counted as n. */
static void eval_nodes(plan_t *pl, const sf_node_id *nodes, size_t n)
{
  pl->work += n;
  if (sf_packer_evaluate(pl->p, pl->idx, pl->pol, pl->in->demand, nodes, n, 0, pl->v) != 0)
    for (size_t i = 0; i < n; i++)
      pl->v[i].fit = SF_FIT_NO;
}

/*
 * Marks the nodes that fit the demand with every pod that may go set aside;
 * how many. All nodes at once: an allocation holds devices of its own node
 * only (a device mirrored to other nodes can make this pass see room twice,
 * which only lets a node through to the exact passes).
 */
static size_t candidates(plan_t *pl)
{
  size_t found = 0, n = 0;
  for (size_t i = 0; i < pl->nok; i++) {
    set_aside(pl, pl->order[i], true);
    sf_node_id node = pl->pods[pl->order[i]].node;
    if (n == 0 || pl->batch[n - 1] != node)
      pl->batch[n++] = node;
  }
  eval_nodes(pl, pl->batch, n);
  for (size_t i = 0; i < n; i++)
    if (pl->v[i].fit == SF_FIT_YES) {
      pl->cand_node[pl->batch[i]] = true;
      found++;
    }
  for (size_t i = pl->nok; i-- > 0;)
    set_aside(pl, pl->order[i], false);
  return found;
}

/* Sets every allocation of the index aside, or brings them back. */
static void all_aside(plan_t *pl, bool on)
{
  size_t nallocs = pl->idx->nallocs;
  for (size_t i = 0; i < nallocs; i++) {
    size_t a = on ? i : nallocs - 1 - i;
    if (pl->idx->allocs[a].used)
      sf__index_alloc_suspend(pl->idx, (sf_alloc_id)a, on);
  }
}

/*
 * The used allocations by node (*at: per node, where its run starts in the
 * result; end + 1 entries), or NULL when a node offers mirrored devices:
 * then setting a node's own allocations aside is not all that frees it.
 * Without mirrors an allocation holds devices of its own node only
 * (sf_index_alloc_add takes no other).
 */
static sf_alloc_id *allocs_by_node(const plan_t *pl, size_t end, size_t **at)
{
  const sf_index_t *idx = pl->idx;
  if (pl->mirrored)
    return NULL;
  size_t *first = sf_xcalloc(end + 2, sizeof(*first));
  sf_alloc_id *by = sf_xmalloc((idx->nallocs + 1) * sizeof(*by));
  for (size_t a = 0; a < idx->nallocs; a++)
    if (idx->allocs[a].used)
      first[idx->allocs[a].node + 1]++;
  for (size_t n = 0; n < end; n++)
    first[n + 1] += first[n];
  for (size_t a = 0; a < idx->nallocs; a++)
    if (idx->allocs[a].used)
      by[first[idx->allocs[a].node]++] = (sf_alloc_id)a;
  for (size_t n = end; n > 0; n--)
    first[n] = first[n - 1];
  first[0] = 0;
  *at = first;
  return by;
}

/*
 * Does the demand fit some node with every allocation there set aside?
 * PROBE_CHUNK nodes at a time, their own allocations set aside, up to the
 * first that fits: usually the first chunk, where setting every allocation
 * of the index aside and evaluating every node cost as much as pass 2. All
 * at once when a node offers mirrored devices (allocs_by_node).
 */
static bool fits_empty(plan_t *pl)
{
  size_t end = (size_t)sf_index_node_end(pl->idx), *at = NULL;
  sf_alloc_id *by = allocs_by_node(pl, end, &at);
  bool any = false;
  if (by == NULL) {
    all_aside(pl, true);
    eval_nodes(pl, pl->nodes, pl->nnodes);
    for (size_t i = 0; i < pl->nnodes; i++)
      any = any || pl->v[i].fit == SF_FIT_YES;
    all_aside(pl, false);
    return any;
  }
  for (size_t lo = 0; lo < pl->nnodes && !any; lo += PROBE_CHUNK) {
    const sf_node_id *nodes = &pl->nodes[lo];
    size_t n = pl->nnodes - lo < PROBE_CHUNK ? pl->nnodes - lo : PROBE_CHUNK;
    for (size_t i = 0; i < n; i++)
      for (size_t k = at[nodes[i]]; k < at[nodes[i] + 1]; k++)
        sf__index_alloc_suspend(pl->idx, by[k], true);
    eval_nodes(pl, nodes, n);
    for (size_t i = 0; i < n; i++)
      any = any || pl->v[i].fit == SF_FIT_YES;
    for (size_t i = n; i-- > 0;)
      for (size_t k = at[nodes[i] + 1]; k-- > at[nodes[i]];)
        sf__index_alloc_suspend(pl->idx, by[k], false);
  }
  free(by);
  free(at);
  return any;
}

/* ---- pass 3 ---- */

static void keep(plan_t *pl, sf_node_id node, const uint32_t *pods, uint32_t n, uint32_t rank)
{
  cand_t c = {node, {0}, n, rank, 0};
  for (uint32_t k = 0; k < n; k++) {
    c.pods[k] = pods[k];
    c.gpu_ms += pl->pods[pods[k]].gpu_ms;
  }
  sf_xgrow(&pl->cands, &pl->candcap, pl->ncands + 1, sizeof(*pl->cands));
  pl->cands[pl->ncands++] = c;
}

/* The next combination of s out of k in lexicographic order; false after the last. */
static bool next_combo(uint32_t *ix, uint32_t s, uint32_t k)
{
  int32_t i = (int32_t)s - 1;
  while (i >= 0 && ix[i] == k - s + (uint32_t)i)
    i--;
  if (i < 0)
    return false;
  ix[i]++;
  for (uint32_t j = (uint32_t)i + 1; j < s; j++)
    ix[j] = ix[j - 1] + 1;
  return true;
}

/*
 * The least GPU-seconds of the node's subsets from cb on: pods are sorted by
 * it, and every later subset in lexicographic order starts at ix[0] or past.
 */
static int64_t least(const plan_t *pl, const combo_t *cb, uint32_t s)
{
  int64_t ms = 0;
  for (uint32_t q = 0; q < s; q++)
    ms += pl->pods[pl->order[cb->lo + cb->ix[0] + q]].gpu_ms;
  return ms;
}

static bool carry(plan_t *pl, const cand_t *c, sf_defrag_plan_t *out);
static int by_gpu_ms(const void *a, const void *b);

/*
 * Does c, carried out at `cost`, come before the best plan so far? Least
 * GPU-seconds, then cost, then the lesser rank among its node's subsets,
 * then node: the order in which the planner has always kept plans (rounds
 * of one subset per node, least GPU-seconds then node within a round, the
 * first of equal cost kept), so its answer does not depend on the order in
 * which the passes happen to find plans.
 */
static bool beats(const plan_t *pl, const cand_t *c, double cost)
{
  if (!pl->found || c->gpu_ms != pl->best_ms)
    return !pl->found || c->gpu_ms < pl->best_ms;
  if (cost < pl->best->cost || cost > pl->best->cost)
    return cost < pl->best->cost;
  return c->rank != pl->best_rank ? c->rank < pl->best_rank : c->node < pl->best->node;
}

/*
 * Carries out, least GPU-seconds first, the subsets a round found that are
 * no worse than the best plan so far, keeping the best (beats); the rest
 * count as tried.
 */
static void settle(plan_t *pl)
{
  if (pl->ncands == 0)
    return;
  qsort(pl->cands, pl->ncands, sizeof(*pl->cands), by_gpu_ms);
  for (size_t k = 0; k < pl->ncands && !pl->budget_hit; k++) {
    const cand_t *c = &pl->cands[k];
    sf_defrag_plan_t t = *pl->best;
    if (pl->found && c->gpu_ms > pl->best_ms)
      break;
    if (!carry(pl, c, &t)) {
      pl->tried++;
      continue;
    }
    if (!beats(pl, c, t.cost))
      continue;
    *pl->best = t;
    pl->best->node = c->node;
    pl->best->gpu_s_lost = c->gpu_ms / 1000;
    pl->best_ms = c->gpu_ms;
    pl->best_rank = c->rank;
    pl->found = true;
  }
  pl->ncands = 0;
}

/*
 * Every subset of s pods of a candidate node that frees room, carried out
 * as found (settle); false when out of budget. Nodes whose remaining subsets
 * all lose more GPU-seconds than the best plan leave the search. Rounds: each candidate node sets its next subset aside and one
 * evaluation answers for all of them, so the call's fixed cost is paid per
 * round, not per subset.
 */
static bool search(plan_t *pl, uint32_t s)
{
  size_t n = 0;
  for (size_t i = 0; i < pl->nok;) {
    size_t j = i;
    sf_node_id node = pl->pods[pl->order[i]].node;
    while (j < pl->nok && pl->pods[pl->order[j]].node == node)
      j++;
    if (pl->cand_node[node] && j - i >= s) {
      combo_t *c = &pl->combos[n++];
      c->lo = (uint32_t)i;
      c->k = (uint32_t)(j - i);
      c->rank = 0;
      for (uint32_t q = 0; q < s; q++)
        c->ix[q] = q;
    }
    i = j;
  }
  while (n > 0) {
    if (pl->work + n > pl->budget) {
      pl->budget_hit = true;
      return false;
    }
    for (size_t c = 0; c < n; c++) {
      for (uint32_t q = 0; q < s; q++)
        set_aside(pl, pl->order[pl->combos[c].lo + pl->combos[c].ix[q]], true);
      pl->batch[c] = pl->pods[pl->order[pl->combos[c].lo]].node;
    }
    eval_nodes(pl, pl->batch, n);
    size_t m = 0;
    for (size_t c = 0; c < n; c++) {
      combo_t *cb = &pl->combos[c];
      uint32_t pods[SF_DEFRAG_EVICT_MAX];
      for (uint32_t q = s; q-- > 0;) {
        pods[q] = pl->order[cb->lo + cb->ix[q]];
        set_aside(pl, pods[q], false);
      }
      if (pl->v[c].fit == SF_FIT_YES)
        keep(pl, pl->batch[c], pods, s, cb->rank);
    }
    settle(pl);
    for (size_t c = 0; c < n; c++) {
      combo_t *cb = &pl->combos[c];
      cb->rank++;
      if (next_combo(cb->ix, s, cb->k) && !(pl->found && least(pl, cb, s) > pl->best_ms))
        pl->combos[m++] = *cb;
    }
    n = m;
  }
  return !pl->budget_hit;
}

/* ---- pass 3 for one eviction: best first ---- */

/* A pod in the probe's heap: least GPU-seconds, then index, first. */
typedef struct {
  int64_t gpu_ms;
  uint32_t pod;
} hent_t;

static bool hless(const hent_t *a, const hent_t *b)
{
  return a->gpu_ms != b->gpu_ms ? a->gpu_ms < b->gpu_ms : a->pod < b->pod;
}

static void sift(hent_t *h, size_t n, size_t i)
{
  hent_t e = h[i];
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n)
      break;
    if (c + 1 < n && hless(&h[c + 1], &h[c]))
      c++;
    if (!hless(&h[c], &e))
      break;
    h[i] = h[c];
    i = c;
  }
  h[i] = e;
}

static void hpop(hent_t *h, size_t *n)
{
  h[0] = h[--*n];
  if (*n > 0)
    sift(h, *n, 0);
}

/* One single eviction of the probe: the pod, its node, its rank among the node's pods. */
typedef struct {
  uint32_t pod, rank;
  sf_node_id node;
} one_t;

enum { PROBE_FOUND, PROBE_EXHAUSTED, PROBE_STOPPED };

/*
 * The GPU-seconds below which about PROBE_TIER pods lie (from an even
 * sample of 1024), INT64_MAX for few pods: the probe heaps those first and
 * the rest only if it gets past them, as a plan is usually among the least.
 */
static int64_t tier_cut(const plan_t *pl)
{
  size_t npods = pl->in->npods;
  int64_t sample[1024];
  if (npods <= 4 * PROBE_TIER)
    return INT64_MAX;
  for (size_t k = 0; k < 1024; k++)
    sample[k] = gpu_ms_of(pl, k * (npods / 1024));
  qsort(sample, 1024, sizeof(*sample), cmp_ms);
  return sample[1024 * PROBE_TIER / npods];
}

/* Heaps the pods whose GPU-seconds are in (lo, hi]; how many. */
static size_t fill(const plan_t *pl, hent_t *heap, int64_t lo, int64_t hi)
{
  size_t nh = 0;
  for (size_t i = 0; i < pl->in->npods; i++) {
    int64_t ms = gpu_ms_of(pl, i);
    if (ms > lo && ms <= hi)
      heap[nh++] = (hent_t){ms, (uint32_t)i};
  }
  for (size_t i = nh / 2; i-- > 0;)
    sift(heap, nh, i);
  return nh;
}

/*
 * The next single evictions, least GPU-seconds first, on distinct nodes (a
 * node is evaluated with one set of pods aside at a time): at most `room`,
 * none losing more than the best plan. Pods are looked up as they come off
 * the heap; a pod's rank on its node is how many of the node's pods that may
 * go came off before it, as the heap yields them in the node's own order.
 */
static size_t next_ones(plan_t *pl, hent_t *heap, size_t *nh, uint32_t *seen, uint32_t stamp,
                        one_t *chunk, size_t room, uint64_t *looked, uint64_t most)
{
  size_t n = 0;
  while (room > n && *nh > 0 && !(pl->found && heap[0].gpu_ms > pl->best_ms) &&
         (pl->found || *looked < most)) {
    ++*looked;
    uint32_t pod = heap[0].pod;
    const dpod_t *d = resolve(pl, pod);
    if (d->ok && pl->mark[d->node] == stamp)
      break; /* its node is in this round already: the next round starts with it */
    hpop(heap, nh);
    if (!d->ok)
      continue;
    pl->mark[d->node] = stamp;
    chunk[n++] = (one_t){pod, seen[d->node]++, d->node};
  }
  return n;
}

/*
 * Every single eviction on every node, least GPU-seconds first (a heap of
 * the pods, looked up as they come off it), PROBE_CHUNK nodes per
 * evaluation, each round's finds carried out at once. It ends when the next
 * eviction loses more GPU-seconds than the best plan, which then no single
 * eviction beats and no larger plan can. A single eviction that frees room
 * makes its node a candidate of pass 2, so when the least loss is a single
 * eviction (the common case) the plan is the one passes 2 and 3 would find,
 * after a few evaluations and lookups where they look every pod up and set
 * aside and evaluate every node. With no plan after span = nodes / 8 +
 * PROBE_CHUNK evaluations, or PROBE_LOOKS x span pods looked at (most of
 * them may not go), it stops (PROBE_STOPPED) and the passes run as before;
 * PROBE_EXHAUSTED when it tried every single eviction.
 */
static int probe(plan_t *pl)
{
  size_t npods = pl->in->npods, nh = 0, end = (size_t)sf_index_node_end(pl->idx);
  hent_t *heap = sf_xmalloc((npods + 1) * sizeof(*heap));
  uint32_t *seen = sf_xcalloc(end + 1, sizeof(*seen)), stamp = 0;
  one_t chunk[PROBE_CHUNK];
  uint64_t spent = 0, looked = 0, span = pl->nnodes / 8 + PROBE_CHUNK;
  int rc = PROBE_EXHAUSTED;
  int64_t cut = tier_cut(pl);
  bool rest = cut < INT64_MAX; /* pods above the cut still to heap */
  nh = fill(pl, heap, INT64_MIN, cut);
  for (;;) {
    if (nh == 0 && rest) {
      nh = fill(pl, heap, cut, INT64_MAX);
      rest = false;
    }
    if (nh == 0 || (pl->found && heap[0].gpu_ms > pl->best_ms))
      break;
    uint64_t room = pl->budget > pl->work ? pl->budget - pl->work : 0;
    if ((!pl->found && (spent >= span || looked >= PROBE_LOOKS * span)) || room == 0) {
      pl->budget_hit = room == 0 && pl->found;
      rc = PROBE_STOPPED;
      break;
    }
    size_t n = next_ones(pl, heap, &nh, seen, ++stamp, chunk,
                         room < PROBE_CHUNK ? (size_t)room : PROBE_CHUNK, &looked,
                         PROBE_LOOKS * span);
    for (size_t i = 0; i < n; i++) {
      set_aside(pl, chunk[i].pod, true);
      pl->batch[i] = chunk[i].node;
    }
    eval_nodes(pl, pl->batch, n);
    spent += n;
    for (size_t i = 0; i < n; i++) {
      set_aside(pl, chunk[i].pod, false);
      if (pl->v[i].fit == SF_FIT_YES)
        keep(pl, chunk[i].node, &chunk[i].pod, 1, chunk[i].rank);
    }
    settle(pl);
  }
  free(heap);
  free(seen);
  return pl->found ? PROBE_FOUND : rc;
}

/* ---- pass 4: carrying a plan out ---- */

static bool is_like(const like_t *l, const sf_index_t *idx, sf_dev_id dev)
{
  return sf_index_dev_model(idx, dev) == l->model && sf_index_dev_shared(idx, dev) == l->shared &&
         strcmp(sf_index_dev_driver(idx, dev), l->driver) == 0;
}

static sf_match_t like_match(void *ctx, const sf_index_t *idx, sf_dev_id dev)
{
  return is_like(ctx, idx, dev) ? SF_MATCH_YES : SF_MATCH_NO;
}

/*
 * Has `node` a device of every kind the re-placement r asks? Without one,
 * like_match answers NO for all its devices and the node cannot fit: only
 * nodes that have one are evaluated. Own devices only (no mirrors: see
 * plan_t.mirrored).
 */
static bool offers(const plan_t *pl, const redo_t *r, sf_node_id node)
{
  size_t nd;
  const sf_dev_id *d = sf_index_node_devices(pl->idx, node, &nd);
  for (size_t q = 0; q < r->nlikes; q++) {
    bool any = false;
    for (size_t k = 0; k < nd && !any; k++)
      any = is_like(&r->likes[q], pl->idx, d[k]);
    if (!any)
      return false;
  }
  return true;
}

static size_t pod_picks(const plan_t *pl, const dpod_t *d, size_t *ncaps)
{
  size_t n = 0;
  *ncaps = 0;
  for (uint32_t a = 0; a < d->n; a++) {
    size_t np;
    sf_index_alloc_picks(pl->idx, pl->pallocs[d->first + a], &np);
    n += np;
    for (size_t k = 0; k < np; k++)
      *ncaps +=
          sf_index_dev_ncaps(pl->idx,
                             sf_index_alloc_picks(pl->idx, pl->pallocs[d->first + a], &np)[k].dev);
  }
  return n;
}

/* One claim asking again for the devices of allocation a. */
static void redo_claim(plan_t *pl, redo_t *r, sf_alloc_id a, size_t *nreq, size_t *ncap)
{
  size_t np;
  const sf_pick_t *pk = sf_index_alloc_picks(pl->idx, a, &np);
  const char ***cnames;
  const uint32_t *ncons;
  int64_t cpu, mem;
  sf__index_alloc_usage(pl->idx, a, &cpu, &mem, &cnames, &ncons);
  r->dem.cpu_milli += cpu;
  r->dem.mem_bytes += mem;
  sf_claim_t *cl = &r->claims[r->dem.nclaims++];
  cl->name = "evicted";
  cl->reqs = &r->reqs[*nreq];
  int32_t island = np > 1 ? sf_index_dev_island(pl->idx, pk[0].dev) : -1;
  for (size_t k = 0; k < np; k++) {
    size_t q = (*nreq)++;
    sf_dev_id dev = pk[k].dev;
    r->likes[q] = (like_t){sf_index_dev_driver(pl->idx, dev), sf_index_dev_model(pl->idx, dev),
                           sf_index_dev_shared(pl->idx, dev)};
    r->sels[q] = (sf_selector_t){like_match, &r->likes[q], 0};
    sf_request_t *rq = &r->reqs[q];
    *rq = (sf_request_t){0};
    rq->name = "device";
    rq->selectors = &r->sels[q];
    rq->nselectors = 1;
    rq->count = 1;
    rq->caps = &r->caps[*ncap];
    if (r->likes[q].shared && pk[k].consumed != NULL)
      for (uint32_t c = 0; c < ncons[k]; c++)
        if (pk[k].consumed[c] > 0)
          r->caps[(*ncap)++] = (sf_cap_request_t){cnames[k][c], pk[k].consumed[c]};
    rq->ncaps = (size_t)(&r->caps[*ncap] - rq->caps);
    if (island >= 0 && sf_index_dev_island(pl->idx, dev) != island)
      island = -1;
  }
  cl->nreqs = np;
  if (island >= 0) {
    sf_constraint_t *c = &r->cons[r->dem.nclaims - 1];
    *c = (sf_constraint_t){SF_CONSTRAINT_ISLAND, NULL, NULL, 0};
    cl->cons = c;
    cl->ncons = 1;
  }
}

static void redo_init(plan_t *pl, redo_t *r, uint32_t pod)
{
  const dpod_t *d = &pl->pods[pod];
  size_t ncaps, npicks = pod_picks(pl, d, &ncaps), nreq = 0, ncap = 0;
  memset(r, 0, sizeof(*r));
  r->claims = sf_xcalloc(d->n + 1, sizeof(*r->claims));
  r->cons = sf_xcalloc(d->n + 1, sizeof(*r->cons));
  r->reqs = sf_xcalloc(npicks + 1, sizeof(*r->reqs));
  r->sels = sf_xcalloc(npicks + 1, sizeof(*r->sels));
  r->likes = sf_xcalloc(npicks + 1, sizeof(*r->likes));
  r->caps = sf_xcalloc(ncaps + 1, sizeof(*r->caps));
  r->dem.claims = r->claims;
  for (uint32_t a = 0; a < d->n; a++)
    redo_claim(pl, r, pl->pallocs[d->first + a], &nreq, &ncap);
  r->nlikes = nreq;
}

static void redo_dispose(redo_t *r)
{
  SF__FREE_ALL(r->claims, r->cons, r->reqs, r->sels, r->likes, r->caps);
}

typedef struct {
  const cand_t *c;
  uint32_t seq[SF_DEFRAG_EVICT_MAX]; /* the order pods are placed back in */
  redo_t redo[SF_DEFRAG_EVICT_MAX];
  sf_alloc_id trial[SF_DEFRAG_EVICT_MAX];
  sf_node_id to[SF_DEFRAG_EVICT_MAX];
  double raw[SF_DEFRAG_EVICT_MAX];
} carry_t;

static bool place(plan_t *pl, const sf_demand_t *dem, sf_node_id node, uint32_t tag, sf_alloc_id *out)
{
  char holder[64];
  sf_assignment_t asg;
  if (sf_packer_place(pl->p, pl->idx, pl->pol, dem, node, &asg, NULL) != SF_FIT_YES)
    return false;
  snprintf(holder, sizeof holder, TRIAL_PREFIX "%u", tag);
  return sf_packer_commit(pl->p, pl->idx, dem, holder, out) == 0;
}

/* The best of nodes[0..m) (raw descending, at most SF_DEFRAG_BRANCH), their verdicts in pl->v. */
static size_t best_nodes(const plan_t *pl, const sf_node_id *nodes, size_t m, sf_node_id *out,
                         double *raw)
{
  size_t n = 0;
  for (size_t i = 0; i < m; i++) {
    if (pl->v[i].fit != SF_FIT_YES)
      continue;
    size_t j = n < SF_DEFRAG_BRANCH ? n++ : SF_DEFRAG_BRANCH;
    if (j == SF_DEFRAG_BRANCH && pl->v[i].raw <= raw[j - 1])
      continue;
    if (j == SF_DEFRAG_BRANCH)
      j--;
    while (j > 0 && raw[j - 1] < pl->v[i].raw) {
      out[j] = out[j - 1];
      raw[j] = raw[j - 1];
      j--;
    }
    out[j] = nodes[i];
    raw[j] = pl->v[i].raw;
  }
  return n;
}

/* Places pods seq[i..] back, backtracking; false when they cannot all go somewhere. */
static bool back(plan_t *pl, carry_t *cr, uint32_t i)
{
  sf_node_id nodes[SF_DEFRAG_BRANCH];
  double raw[SF_DEFRAG_BRANCH];
  size_t m = 0;
  if (i == cr->c->n)
    return true;
  for (size_t k = 0; k < pl->nnodes; k++)
    if (pl->nodes[k] != cr->c->node && (pl->mirrored || offers(pl, &cr->redo[i], pl->nodes[k])))
      pl->batch[m++] = pl->nodes[k];
  if (pl->work + m > pl->budget) {
    pl->budget_hit = true;
    return false;
  }
  const sf_demand_t *dem = &cr->redo[i].dem;
  pl->work += m;
  if (sf_packer_evaluate(pl->p, pl->idx, pl->pol, dem, pl->batch, m, 0, pl->v) != 0)
    return false;
  size_t n = best_nodes(pl, pl->batch, m, nodes, raw);
  for (size_t k = 0; k < n; k++) {
    if (!place(pl, dem, nodes[k], i + 1, &cr->trial[i]))
      continue;
    cr->to[i] = nodes[k];
    cr->raw[i] = raw[k];
    if (back(pl, cr, i + 1))
      return true;
    sf_index_alloc_remove(pl->idx, cr->trial[i]);
    cr->trial[i] = -1;
  }
  return false;
}

static int64_t pod_gpu(const plan_t *pl, uint32_t pod)
{
  return pl->in->pods[pod].gpu_milli;
}

/* Tries to carry c out: true with the moves and cost in *out. The index is left as it was. */
static bool carry(plan_t *pl, const cand_t *c, sf_defrag_plan_t *out)
{
  carry_t cr;
  sf_alloc_id claim = -1;
  bool ok = false;
  memset(&cr, 0, sizeof(cr));
  cr.c = c;
  for (uint32_t i = 0; i < c->n; i++) {
    uint32_t j = i;
    while (j > 0 && pod_gpu(pl, cr.seq[j - 1]) < pod_gpu(pl, c->pods[i])) {
      cr.seq[j] = cr.seq[j - 1];
      j--;
    }
    cr.seq[j] = c->pods[i];
    cr.trial[i] = -1;
  }
  for (uint32_t i = 0; i < c->n; i++)
    set_aside(pl, cr.seq[i], true);
  for (uint32_t i = 0; i < c->n; i++)
    redo_init(pl, &cr.redo[i], cr.seq[i]);
  if (!place(pl, pl->in->demand, c->node, 0, &claim))
    goto done;
  ok = back(pl, &cr, 0);
  if (ok) {
    out->nmoves = c->n;
    out->cost = 0;
    for (uint32_t i = 0; i < c->n; i++) {
      out->moves[i] = (sf_defrag_move_t){cr.seq[i], cr.to[i]};
      out->cost -= cr.raw[i];
    }
  }
done:
  for (uint32_t i = c->n; i-- > 0;) {
    if (cr.trial[i] >= 0)
      sf_index_alloc_remove(pl->idx, cr.trial[i]);
    redo_dispose(&cr.redo[i]);
  }
  if (claim >= 0)
    sf_index_alloc_remove(pl->idx, claim);
  for (uint32_t i = c->n; i-- > 0;)
    set_aside(pl, cr.seq[i], false);
  return ok;
}

static int by_gpu_ms(const void *a, const void *b)
{
  const cand_t *x = a, *y = b;
  int c = cmp_i64(x->gpu_ms, y->gpu_ms);
  if (c == 0)
    c = cmp_i64(x->rank, y->rank);
  return c ? c : cmp_i64(x->node, y->node);
}

/* ---- the answer ---- */

static void say_none(plan_t *pl, sf_defrag_plan_t *out, const size_t nb[NBLOCK])
{
  out->outcome = SF_DEFRAG_NONE;
  if (pl->budget_hit)
    snprintf(out->why, sizeof out->why,
             "no plan found within the work budget (defrag_budget %u node evaluations)",
             pl->pol->defrag_budget);
  else if (pl->tried > 0)
    snprintf(out->why, sizeof out->why,
             "%zu set(s) of evictions would free room, but their evicted pods would find no other "
             "node",
             pl->tried);
  else if (nb[BARE] + nb[PROTECTED] + nb[LARGER] > 0)
    snprintf(out->why, sizeof out->why,
             "the pods in the way may not be evicted (%zu bare, %zu in protected namespaces, %zu "
             "asking more GPUs than the claim)",
             nb[BARE], nb[PROTECTED], nb[LARGER]);
  else
    snprintf(out->why, sizeof out->why, "no node frees enough room with at most %u eviction(s)",
             pl->pol->defrag_max_evictions);
}

static void answer(plan_t *pl, sf_defrag_plan_t *out, size_t nb[NBLOCK])
{
  sf_node_id node;
  if ((node = fits_now(pl)) >= 0) {
    out->outcome = SF_DEFRAG_FITS;
    out->node = node;
    snprintf(out->why, sizeof out->why, "the claim fits on %s without evictions",
             sf_index_node_name(pl->idx, node));
    return;
  }
  if (!fits_empty(pl)) {
    out->outcome = SF_DEFRAG_NEVER;
    snprintf(out->why, sizeof out->why,
             "the claim fits on no node, even with every allocation there gone");
    return;
  }
  pl->pods = sf_xcalloc(pl->in->npods + 1, sizeof(*pl->pods));
  pl->best = out;
  int pr = probe(pl);
  if (pr == PROBE_FOUND)
    goto found;
  pods_init(pl, nb);
  if (pr == PROBE_STOPPED)
    pl->tried = 0; /* pass 3 tries single evictions again and counts them */
  if (candidates(pl) == 0) {
    say_none(pl, out, nb);
    if (nb[BARE] + nb[PROTECTED] + nb[LARGER] == 0)
      snprintf(out->why, sizeof out->why,
               "the claim needs room that only allocations of no known pod hold");
    return;
  }
  uint32_t max = pl->pol->defrag_max_evictions;
  /* The least size with a subset that frees room and can be carried out. */
  for (uint32_t s = 1; s <= max && s <= SF_DEFRAG_EVICT_MAX && !pl->found && !pl->budget_hit; s++)
    if (s > 1 || pr != PROBE_EXHAUSTED)
      search(pl, s);
found:
  if (pl->found) {
    out->outcome = SF_DEFRAG_FOUND;
    out->budget_hit = pl->budget_hit;
    snprintf(out->why, sizeof out->why, "evicting %zu pod(s) on %s lets the claim fit%s", out->nmoves,
             sf_index_node_name(pl->idx, out->node),
             pl->budget_hit ? " (the work budget ran out: a smaller plan may exist)" : "");
    return;
  }
  say_none(pl, out, nb);
}

int sf_defrag_plan(sf_packer_t *p, sf_index_t *idx, const sf_policy_t *pol,
                   const sf_defrag_input_t *in, sf_defrag_plan_t *out)
{
  plan_t pl;
  size_t nb[NBLOCK] = {0};
  if (p == NULL || idx == NULL || pol == NULL || in == NULL || in->demand == NULL || out == NULL ||
      (in->npods > 0 && in->pods == NULL))
    return SF_EINVAL;
  memset(out, 0, sizeof(*out));
  out->node = -1;
  memset(&pl, 0, sizeof(pl));
  pl.p = p;
  pl.idx = idx;
  pl.pol = pol;
  pl.in = in;
  pl.budget = pol->defrag_budget;
  sf_node_id end = sf_index_node_end(idx);
  pl.nodes = sf_xmalloc(((size_t)end + 1) * sizeof(*pl.nodes));
  pl.v = sf_xmalloc(((size_t)end + 1) * sizeof(*pl.v));
  pl.cand_node = sf_xcalloc((size_t)end + 1, sizeof(*pl.cand_node));
  pl.mark = sf_xcalloc((size_t)end + 1, sizeof(*pl.mark));
  pl.batch = sf_xmalloc(((size_t)end + 1) * sizeof(*pl.batch));
  pl.combos = sf_xmalloc(((size_t)end + 1) * sizeof(*pl.combos));
  for (sf_node_id n = 0; n < end; n++) {
    if (sf_index_node_live(idx, n))
      pl.nodes[pl.nnodes++] = n;
    pl.mirrored = pl.mirrored || (idx->nodes[n].used && idx->nodes[n].nmdevs > 0);
  }
  answer(&pl, out, nb);
  if (out->outcome != SF_DEFRAG_FOUND)
    out->nmoves = 0;
  out->work = pl.work;
  free(pl.nodes);
  free(pl.v);
  free(pl.cand_node);
  free(pl.batch);
  free(pl.combos);
  free(pl.cands);
  free(pl.pods);
  free(pl.pallocs);
  free(pl.order);
  free(pl.first);
  free(pl.mark);
  return 0;
}
