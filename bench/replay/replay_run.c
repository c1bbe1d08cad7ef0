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
#include "slicefit/mix.h"
#include "slicefit/cluster.h"
#include "slicefit/packer.h"
#include "slicefit/replay.h"

#define MAX_CLAIMS 16
#define MAX_REQS 16
#define SPEC_CACHE_BASE 0x5f5e0000u   /* selector cache keys: distinct from the CEL layer's ids */

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

static _Thread_local const sf_replay_trace_t *sort_trace;  /* qsort has no context argument in C11 */

static int cmp_pod_name(const void *a, const void *b)
{
  const sf_replay_pod_t *p = &sort_trace->pods[*(const uint32_t *)a];
  const sf_replay_pod_t *q = &sort_trace->pods[*(const uint32_t *)b];
  int c = strcmp(p->name, q->name);
  return c != 0 ? c : (*(const uint32_t *)a > *(const uint32_t *)b) - (*(const uint32_t *)a < *(const uint32_t *)b);
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

/* ---- policies ---- */

static const struct {
  const char *name;
  sf_replay_kind_t kind;
  sf_strategy_t strategy;
} policies[] = {
    {"fragmentation", SF_REPLAY_CORE, SF_STRATEGY_FRAGMENTATION},
    {"fgd", SF_REPLAY_CORE, SF_STRATEGY_FGD},
    {"binpack", SF_REPLAY_CORE, SF_STRATEGY_BINPACK},
    {"spread", SF_REPLAY_CORE, SF_STRATEGY_SPREAD},
    {"random", SF_REPLAY_RANDOM, SF_STRATEGY_BINPACK},
    {"dotprod", SF_REPLAY_DOTPROD, SF_STRATEGY_BINPACK},
    {"clustering", SF_REPLAY_CLUSTERING, SF_STRATEGY_BINPACK},
    {"packing", SF_REPLAY_PACKING, SF_STRATEGY_BINPACK},
    {"bestfit", SF_REPLAY_BESTFIT, SF_STRATEGY_BINPACK},
};

bool sf_replay_policy_valid(const char *name, sf_replay_kind_t *kind, sf_strategy_t *strategy)
{
  for (size_t i = 0; i < sizeof(policies) / sizeof(policies[0]); i++) {
    if (strcmp(policies[i].name, name) == 0) {
      if (kind != NULL)
        *kind = policies[i].kind;
      if (strategy != NULL)
        *strategy = policies[i].strategy;
      return true;
    }
  }
  return false;
}

const char *sf_replay_policy_names(void)
{
  return "fragmentation,fgd,binpack,spread,random,dotprod,clustering,packing,bestfit";
}

/* ---- the run's state ---- */

/*
 * One node's verdict for one pod shape, valid while the node's stamp is
 * unchanged. A verdict depends only on the node's state and on the pod's CPU
 * and claims (the policy and the typical pods are fixed for a run); memory
 * is left out of the shape and checked against mem_free instead.
 */
typedef struct {
  uint32_t stamp;              /* the node's stamp + 1 when filled; 0 = empty */
  bool fit;
  double key;                  /* what the choice compares, higher wins */
} vcache_t;

typedef struct {
  sf_str_id ids[SF_POLICY_MODELS_MAX * 4];
  size_t n;
} specsel_t;

typedef struct {
  const sf_replay_trace_t *t;
  const sf_replay_opts_t *o;
  sf_replay_kind_t kind;
  sf_cluster_t *cluster;       /* --snapshot: owns idx */
  sf_index_t *idx;
  sf_packer_t *pk;
  sf_policy_t pol;             /* what the core runs (binpack + packer for baselines) */
  sf_policy_t fragpol;         /* the typical pods, for the fragmentation metric */
  sf_node_id *nodes;           /* sorted by name */
  size_t nnodes;
  int32_t *pos_of;             /* node id -> position in nodes[] */
  specsel_t *specsel;
  sf_selector_t *sels;         /* one per model set */
  sf_rng_t rng;                /* baselines' own randomness */
  uint32_t (*aff)[SF_REPLAY_MAX_GPUS + 1];  /* clustering: GPU pods on a node by affinity tag */
  uint32_t *naff;
  /* The verdict cache (see evaluate()): per node position, per pod shape. */
  uint32_t *stamp;             /* bumped whenever an allocation lands on or leaves the node */
  int64_t *mem_free;           /* bytes; INT64_MAX when the node does not track memory */
  uint32_t *shape_of;          /* trace pod -> shape id */
  size_t nshapes;
  bool cached;                 /* false: one row, re-evaluated for every pod */
  vcache_t *vc;                /* nshapes (or 1) rows of nnodes */
  sf_node_id *stale_ids;
  uint32_t *stale_pos;
  sf_verdict_t *stale_v;
  uint32_t *rank;              /* per node position: the tie order (rank_nodes) */
  bool learn;                  /* fragmentation: the index learns the mix from every pod */
  uint64_t mixhash;            /* the learned mix the cached verdicts were scored with */
  const sf_replay_pod_t **win; /* --mix-window: the last mix_window arrivals, a ring */
  size_t narrived;
  int64_t eval_ns;             /* core time in sf_packer_evaluate, and nodes it evaluated */
  size_t eval_nodes;
  /* demand scratch */
  sf_claim_t claims[MAX_CLAIMS];
  sf_request_t reqs[MAX_CLAIMS][MAX_REQS];
  sf_cap_request_t caps[MAX_CLAIMS][MAX_REQS];
  sf_constraint_t cons[MAX_CLAIMS];
  int64_t cap_milli, alloc_milli, arrived_milli;
  size_t gpu_pods_present;
  /* sliver floor: per milli value, the leftover of placed one-GPU pods, and the pods that arrived */
  int64_t left_at[1001], small_at[1001];
} run_t;

static sf_match_t match_model(void *ctx, const sf_index_t *idx, sf_dev_id dev)
{
  const specsel_t *s = ctx;
  sf_str_id m = sf_index_dev_model(idx, dev);
  for (size_t i = 0; i < s->n; i++)
    if (s->ids[i] == m && m != 0)
      return SF_MATCH_YES;
  return SF_MATCH_NO;
}

static int64_t now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int build_node(run_t *r, const sf_replay_node_t *n, char *err, size_t errlen)
{
  sf_node_spec_t spec = {n->name, n->cpu_milli, n->mem_bytes};
  sf_node_id id;
  int rc = sf_index_node_upsert(r->idx, &spec, &id);
  if (rc == 0 && n->ngpu > 0) {
    sf_device_spec_t devs[SF_REPLAY_MAX_GPUS];
    sf_attr_t attrs[SF_REPLAY_MAX_GPUS][2];
    sf_capacity_t caps[SF_REPLAY_MAX_GPUS];
    char names[SF_REPLAY_MAX_GPUS][16];
    memset(devs, 0, sizeof(devs));
    memset(caps, 0, sizeof(caps));
    for (uint32_t g = 0; g < n->ngpu; g++) {
      snprintf(names[g], sizeof(names[g]), "gpu-%u", g);
      attrs[g][0] = (sf_attr_t){SF_REPLAY_ATTR_MODEL, SF_ATTR_STRING, 0, n->model};
      attrs[g][1] = (sf_attr_t){SF_REPLAY_ATTR_ISLAND, SF_ATTR_INT,
                                n->island_of ? n->island_of[g] : 0, NULL};
      caps[g].name = SF_REPLAY_CAP_MEMORY;
      caps[g].value = n->gpu_mem > 0 ? n->gpu_mem : 1000;
      devs[g] = (sf_device_spec_t){.name = names[g], .attrs = attrs[g],
                                   .nattrs = n->island_of ? 2 : 1, .caps = &caps[g], .ncaps = 1,
                                   .allow_multiple = true};
    }
    rc = sf_index_pool_set(r->idx, id, SF_REPLAY_DRIVER, n->name, devs, n->ngpu, NULL, 0);
  }
  if (rc != 0)
    snprintf(err, errlen, "node %s: the index refused it: %s", n->name,
             sf_strerror(rc));
  return rc;
}

static _Thread_local const sf_replay_trace_t *name_trace;
static int cmp_node_name(const void *a, const void *b)
{
  const sf_replay_node_t *x = &name_trace->nodes[*(const uint32_t *)a];
  const sf_replay_node_t *y = &name_trace->nodes[*(const uint32_t *)b];
  return strcmp(x->name, y->name);
}

static _Thread_local const sf_index_t *name_idx;
static int cmp_id_name(const void *a, const void *b)
{
  return strcmp(sf_index_node_name(name_idx, *(const sf_node_id *)a),
                sf_index_node_name(name_idx, *(const sf_node_id *)b));
}

/* With a snapshot: every node of the index (the snapshot's and the trace's), by name. */
static void all_nodes(run_t *r)
{
  sf_node_id end = sf_index_node_end(r->idx);
  free(r->nodes);
  r->nodes = sf_xcalloc((size_t)end + 1, sizeof(*r->nodes));
  r->nnodes = 0;
  for (sf_node_id n = 0; n < end; n++)
    if (sf_index_node_live(r->idx, n))
      r->nodes[r->nnodes++] = n;
  name_idx = r->idx;
  qsort(r->nodes, r->nnodes, sizeof(*r->nodes), cmp_id_name);
}

/*
 * The index a run starts from: empty, or the snapshot's cluster. Its GPUs
 * (devices with a model) and their allocated share count in the capacity.
 */
static int open_index(run_t *r, char *err, size_t errlen)
{
  char msg[SF_ERR_MAX];
  if (r->o->snapshot == NULL) {
    r->idx = sf_index_create();
    return 0;
  }
  r->cluster = sf_cluster_create(&r->pol);
  int rc = sf_cluster_load_list(r->cluster, r->o->snapshot, msg, sizeof(msg));
  if (rc != 0) {
    snprintf(err, errlen, "%s: %s", r->o->snapshot_name ? r->o->snapshot_name : "snapshot",
             msg);
    return rc;
  }
  r->idx = sf_cluster_index(r->cluster);
  return 0;
}

/* Capacity and allocated share over every GPU of the index (with a snapshot). */
static void count_gpus(run_t *r)
{
  r->cap_milli = r->alloc_milli = 0;
  for (size_t i = 0; i < r->nnodes; i++) {
    size_t nd;
    const sf_dev_id *devs = sf_index_node_devices(r->idx, r->nodes[i], &nd);
    for (size_t k = 0; k < nd; k++) {
      if (sf_index_dev_model(r->idx, devs[k]) == 0)
        continue;
      r->cap_milli += 1000;
      r->alloc_milli += 1000 - sf_index_dev_free_permille(r->idx, devs[k]);
    }
  }
}

static int build_index(run_t *r, char *err, size_t errlen)
{
  const sf_replay_trace_t *t = r->t;
  uint32_t *byname = sf_xcalloc(t->nnodes + 1, sizeof(*byname));
  int rc = 0;
  for (uint32_t i = 0; i < t->nnodes; i++)
    byname[i] = i;
  name_trace = t;
  qsort(byname, t->nnodes, sizeof(*byname), cmp_node_name);
  r->nodes = sf_xcalloc(t->nnodes + 1, sizeof(*r->nodes));
  for (size_t i = 0; i < t->nnodes && rc == 0; i++) {
    if ((rc = build_node(r, &t->nodes[byname[i]], err, errlen)) == 0)
      r->nodes[r->nnodes++] = sf_index_node_find(r->idx, t->nodes[byname[i]].name);
  }
  free(byname);
  if (rc != 0)
    return rc;
  if (r->cluster != NULL)
    all_nodes(r);
  sf_index_apply_policy(r->idx, &r->pol);
  sf_node_id end = sf_index_node_end(r->idx);
  r->pos_of = sf_xcalloc((size_t)end + 1, sizeof(*r->pos_of));
  for (size_t i = 0; i < r->nnodes; i++)
    r->pos_of[r->nodes[i]] = (int32_t)i;
  r->aff = sf_xcalloc(r->nnodes + 1, sizeof(*r->aff));
  r->naff = sf_xcalloc(r->nnodes + 1, sizeof(*r->naff));
  r->specsel = sf_xcalloc(t->nspecs, sizeof(*r->specsel));
  r->sels = sf_xcalloc(t->nspecs, sizeof(*r->sels));
  for (size_t s = 1; s < t->nspecs; s++) {
    for (size_t m = 0; m < t->specs[s].n && m < sizeof(r->specsel[s].ids) / sizeof(sf_str_id); m++)
      r->specsel[s].ids[r->specsel[s].n++] = sf_index_intern(r->idx, t->specs[s].models[m]);
    r->sels[s] = (sf_selector_t){match_model, &r->specsel[s], SPEC_CACHE_BASE + s};
  }
  return 0;
}

static void build_demand(run_t *r, const sf_replay_pod_t *p, sf_demand_t *d)
{
  memset(d, 0, sizeof(*d));
  d->cpu_milli = p->cpu_milli;
  d->mem_bytes = p->mem_bytes;
  d->claims = r->claims;
  d->nclaims = p->nclaims;
  for (size_t c = 0; c < p->nclaims; c++) {
    const sf_replay_claim_t *pc = &p->claims[c];
    sf_claim_t *cl = &r->claims[c];
    memset(cl, 0, sizeof(*cl));
    cl->name = p->name;
    cl->reqs = r->reqs[c];
    cl->nreqs = pc->nreqs;
    for (size_t q = 0; q < pc->nreqs; q++) {
      const sf_replay_req_t *rq = &pc->reqs[q];
      sf_request_t *req = &r->reqs[c][q];
      memset(req, 0, sizeof(*req));
      req->name = "gpu";
      req->count = rq->count;
      if (rq->amount > 0) {
        r->caps[c][q] = (sf_cap_request_t){SF_REPLAY_CAP_MEMORY, rq->amount};
        req->caps = &r->caps[c][q];
        req->ncaps = 1;
      }
      if (rq->spec != 0) {
        req->selectors = &r->sels[rq->spec];
        req->nselectors = 1;
      }
    }
    if (pc->island) {
      r->cons[c] = (sf_constraint_t){SF_CONSTRAINT_ISLAND, NULL, NULL, 0};
      cl->cons = &r->cons[c];
      cl->ncons = 1;
    }
  }
}

/* ---- the paper's baselines (packing-fgd.md §2.1), in the simulator's integer scores ---- */

#define MAX_SPEC_CPU 128000.0
#define MAX_SPEC_GPU 8000
#define MAX_NODE_SCORE 100

typedef struct {
  int64_t cpu_free;
  int64_t gpu_free;            /* milli-GPUs over the node's devices */
  int64_t free[SF_REPLAY_MAX_GPUS];
  uint32_t ngpu, fully_free;
} nodeview_t;

static int64_t dev_free_milli(const sf_index_t *idx, sf_dev_id d)
{
  sf_milli_t value, fr;
  if (sf_index_dev_ncaps(idx, d) == 0)
    return 1000;
  sf_index_dev_cap(idx, d, 0, &value, &fr);
  if (fr <= 0 || value <= 0)
    return 0;
  return value == 1000 ? fr : (int64_t)((double)fr * 1000.0 / (double)value);
}

static void view_node(const run_t *r, sf_node_id node, nodeview_t *v)
{
  int64_t ca, cu, ma, mu;
  size_t nd;
  const sf_dev_id *devs = sf_index_node_devices(r->idx, node, &nd);
  sf_index_node_cpu_mem(r->idx, node, &ca, &cu, &ma, &mu);
  memset(v, 0, sizeof(*v));
  v->cpu_free = ca - cu;
  for (size_t i = 0; i < nd && v->ngpu < SF_REPLAY_MAX_GPUS; i++) {
    int64_t f = dev_free_milli(r->idx, devs[i]);
    v->free[v->ngpu++] = f;
    v->gpu_free += f;
    v->fully_free += f == 1000;
  }
}

static int64_t score_bestfit(const nodeview_t *v, const sf_replay_pod_t *p)
{
  double s = 0.5 * (double)(v->cpu_free - p->cpu_milli) / MAX_SPEC_CPU +
             0.5 * (double)(v->gpu_free - p->load_milli) / (double)MAX_SPEC_GPU;
  return (int64_t)((1.0 - s) * MAX_NODE_SCORE);
}

static int64_t score_dotprod(const nodeview_t *v, const sf_replay_pod_t *p)
{
  double dot = ((double)v->cpu_free / MAX_SPEC_CPU) * ((double)p->cpu_milli / MAX_SPEC_CPU) +
               ((double)v->gpu_free / MAX_SPEC_GPU) * ((double)p->load_milli / MAX_SPEC_GPU);
  return (int64_t)(MAX_NODE_SCORE * (1.0 - dot / 2.0));
}

static uint32_t affinity_tag(const sf_replay_pod_t *p)
{
  if (p->num_gpu == 1 && p->gpu_milli < 1000)
    return 0;   /* "share" */
  return p->num_gpu < SF_REPLAY_MAX_GPUS ? p->num_gpu : SF_REPLAY_MAX_GPUS;
}

static int64_t score_clustering(const run_t *r, size_t pos, const nodeview_t *v,
                                const sf_replay_pod_t *p)
{
  if (p->num_gpu == 0)
    return 0;
  uint32_t tag = affinity_tag(p);
  int64_t fill = MAX_NODE_SCORE / 4 * (MAX_SPEC_GPU - v->gpu_free) / MAX_SPEC_GPU;
  if (r->aff[pos][tag] > 0)
    return fill + (r->naff[pos] == 1 ? MAX_NODE_SCORE * 3 / 4 : MAX_NODE_SCORE * 2 / 4);
  return fill + (r->naff[pos] == 0 ? MAX_NODE_SCORE / 4 : 0);
}

static int cmp_i64(const void *a, const void *b)
{
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static int64_t score_packing(const nodeview_t *v, const sf_replay_pod_t *p)
{
  if (p->num_gpu == 0 || p->gpu_milli <= 0)
    return 0;
  if (v->fully_free == v->ngpu) {
    int64_t s = MAX_NODE_SCORE / 3 - (int64_t)v->fully_free;
    return s > (int64_t)v->fully_free ? s : (int64_t)v->fully_free;
  }
  int64_t sorted[SF_REPLAY_MAX_GPUS], used_free = 0;
  uint32_t need = p->num_gpu, whole = 0;
  memcpy(sorted, v->free, v->ngpu * sizeof(*sorted));
  qsort(sorted, v->ngpu, sizeof(*sorted), cmp_i64);
  for (uint32_t i = 0; i < v->ngpu && need > 0; i++) {
    if (p->gpu_milli <= sorted[i]) {
      need--;
      whole += sorted[i] == 1000;
      used_free += sorted[i] * 100 / 1000;
    }
  }
  if (whole > 0) {
    int64_t s = MAX_NODE_SCORE / 2 - (int64_t)whole;
    return s > MAX_NODE_SCORE / 3 ? s : MAX_NODE_SCORE / 3;
  }
  int64_t s = MAX_NODE_SCORE - used_free / 10;
  return s > MAX_NODE_SCORE / 2 ? s : MAX_NODE_SCORE / 2;
}

static int64_t baseline_score(const run_t *r, size_t pos, const sf_replay_pod_t *p)
{
  nodeview_t v;
  view_node(r, r->nodes[pos], &v);
  switch (r->kind) {
  case SF_REPLAY_DOTPROD: return score_dotprod(&v, p);
  case SF_REPLAY_CLUSTERING: return score_clustering(r, pos, &v, p);
  case SF_REPLAY_PACKING: return score_packing(&v, p);
  case SF_REPLAY_BESTFIT: return score_bestfit(&v, p);
  default: return 0;
  }
}

/*
 * What a FIT node is compared by. Baselines: the simulator's integer score.
 * Core strategies: the raw score, except fgd and fragmentation: their raw
 * score is the simulator's FGD plugin score of a cost, int64(100 x
 * sigmoid(-cost / 1000)), plus the core's own node order below one step
 * (score.c fgd_step); the replay keeps the integer and lets --ties break
 * equal scores, as the simulator's scheduler does. That matters most for
 * CPU-only pods: they score 50 on every node where they leave each typical
 * pod the CPU it needs, so the tie rule alone places them.
 */
static double node_key(const run_t *r, size_t pos, const sf_replay_pod_t *p, double raw)
{
  if (r->kind != SF_REPLAY_CORE)
    return (double)baseline_score(r, pos, p);
  if (r->pol.strategy == SF_STRATEGY_FGD || r->pol.strategy == SF_STRATEGY_FRAGMENTATION)
    return floor(raw);
  return raw;
}

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

#define CACHE_MAX_ENTRIES (4u << 20)   /* shapes x nodes; beyond, no cache (about 96 MiB) */

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
  uint32_t *slot = sf_xcalloc(cap, sizeof(*slot));   /* 1 + representative pod, 0 = empty */
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
  r->cached = !r->o->no_cache && !extender(r) && r->nshapes > 0 && r->nshapes * (r->nnodes + 1) <= CACHE_MAX_ENTRIES;
  r->vc = sf_xcalloc((r->cached ? r->nshapes : 1) * (r->nnodes + 1), sizeof(*r->vc));
}

/* The node's state changed: its cached verdicts are stale, its free memory is re-read. */
static void touch(run_t *r, size_t pos)
{
  int64_t ca, cu, ma, mu;
  r->stamp[pos]++;
  sf_index_node_cpu_mem(r->idx, r->nodes[pos], &ca, &cu, &ma, &mu);
  r->mem_free[pos] = ma > 0 ? ma - mu : INT64_MAX;
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

static void cache_init(run_t *r)
{
  r->stamp = sf_xcalloc(r->nnodes + 1, sizeof(*r->stamp));
  r->mem_free = sf_xcalloc(r->nnodes + 1, sizeof(*r->mem_free));
  for (size_t i = 0; i < r->nnodes; i++)
    touch(r, i);
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
  build_demand(r, p, &d);
  sf_demand_t ld = learned(r, &d);
  sf_mix_learn(r->pk, r->idx, &r->pol, &ld, sign);
}

/*
 * An arrival in the learned mix: it joins; under a window, the arrival
 * mix_window ago leaves; every mix_every arrivals the mix is published
 * (each of the first mix_every, so that scoring starts from the first pod).
 */
static void learn_arrival(run_t *r, const sf_replay_pod_t *p)
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
static void learn_leave(run_t *r, const sf_replay_pod_t *p)
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

/*
 * The verdicts of every node for the pod, as a cache row. Only the nodes whose
 * state changed since this shape was last evaluated go through the core
 * (with the pod's memory left out: memory only filters, checked by the
 * caller); between two pods of a shape only a few nodes change, so a replay
 * costs about (shapes x pods) node evaluations instead of (nodes x pods).
 */
static const vcache_t *evaluate(run_t *r, const sf_replay_pod_t *p, sf_demand_t *d)
{
  vcache_t *row = r->vc + (r->cached ? r->shape_of[p - r->t->pods] : 0) * (r->nnodes + 1);
  size_t n = 0;
  if (r->learn) {
    /* The pod is present from now on, as its claim is for the daemon; when the
     * mix it is scored with moves, every cached verdict is stale. */
    sf_demand_t ld = learned(r, d);
    uint64_t h = sf_mix_hash(r->pk, r->idx, &r->pol, &ld);
    if (h != r->mixhash)
      for (uint32_t pos = 0; pos < r->nnodes; pos++)
        r->stamp[pos]++;
    r->mixhash = h;
  }
  for (uint32_t pos = 0; pos < r->nnodes; pos++) {
    if (!r->cached || row[pos].stamp != r->stamp[pos] + 1) {
      r->stale_pos[n] = pos;
      r->stale_ids[n++] = r->nodes[pos];
    }
  }
  int64_t mem = d->mem_bytes;
  if (!extender(r))
    d->mem_bytes = 0;
  int64_t t0 = now_ns();
  int rc = n ? sf_packer_evaluate(r->pk, r->idx, &r->pol, d, r->stale_ids, n, 0, r->stale_v) : 0;
  r->eval_ns += now_ns() - t0;
  r->eval_nodes += n;
  d->mem_bytes = mem;
  if (rc != 0)
    return NULL;
  for (size_t i = 0; i < n; i++) {
    uint32_t pos = r->stale_pos[i];
    bool fit = r->stale_v[i].fit == SF_FIT_YES;
    double key = extender(r) ? r->stale_v[i].score : node_key(r, pos, p, r->stale_v[i].raw);
    row[pos] = (vcache_t){r->stamp[pos] + 1, fit, fit ? key : 0};
  }
  /* Memory is not part of a shape, so these keys are not cached: every pod of the shape sets them. */
  if (r->o->cpu_only_least_allocated && p->nclaims == 0)
    for (uint32_t pos = 0; pos < r->nnodes; pos++)
      if (row[pos].fit)
        row[pos].key = least_allocated(r, pos, p);
  return row;
}

/*
 * The FIT node a policy takes, as a position in r->nodes, or -1: the highest
 * key, ties broken by rank_nodes(). The random baseline takes any FIT node
 * (the simulator's RandomScore plugin gives one random node the top score).
 */
static long choose_node(run_t *r, const sf_replay_pod_t *p, const vcache_t *row)
{
  long best = -1;
  size_t ties = 0;
  bool random = r->kind == SF_REPLAY_RANDOM;
  for (size_t i = 0; i < r->nnodes; i++) {
    if (!row[i].fit || p->mem_bytes > r->mem_free[i])
      continue;
    bool above = best >= 0 && !random && (row[i].key > row[best].key ||
                 (row[i].key == row[best].key && r->rank[i] < r->rank[best]));
    bool equal = best >= 0 && (random || (row[i].key == row[best].key && r->rank[i] == r->rank[best]));
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
    if (fr >= need && (q->spec == 0 || match_model(&r->specsel[q->spec], r->idx, devs[i])))
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
static int64_t alloc_share(const run_t *r, sf_alloc_id a)
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

/* Schedules one pod; returns its allocation or -1 when it failed. */
static sf_alloc_id schedule(run_t *r, const sf_replay_pod_t *p, const char *holder)
{
  sf_demand_t d;
  sf_assignment_t asg;
  sf_alloc_id aid = -1;
  if (r->learn)
    learn_arrival(r, p);  /* before the demand: it builds other pods' demands */
  build_demand(r, p, &d);
  const vcache_t *row = evaluate(r, p, &d);
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
    uint32_t tag = affinity_tag(p);
    if (r->aff[pos][tag]++ == 0)
      r->naff[pos]++;
  }
  touch(r, (size_t)pos);
  return aid;
fail:
  learn_leave(r, p);  /* a dropped pod is no longer present */
  return -1;
}

static void unschedule(run_t *r, const sf_replay_pod_t *p, sf_alloc_id a)
{
  size_t pos = (size_t)r->pos_of[sf_index_alloc_node(r->idx, a)];
  if (p->num_gpu > 0) {
    uint32_t tag = affinity_tag(p);
    if (--r->aff[pos][tag] == 0)
      r->naff[pos]--;
  }
  sf_index_alloc_remove(r->idx, a);
  touch(r, pos);
  learn_leave(r, p);
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
    left += r->left_at[t - 1];    /* leftovers L < t */
    small += r->small_at[t - 1];  /* pods s < t */
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
  uint32_t slot;               /* position in the arrival order */
  bool leave;
} event_t;

static int cmp_event(const void *a, const void *b)
{
  const event_t *x = a, *y = b;
  if (x->time != y->time)
    return x->time < y->time ? -1 : 1;
  if (x->leave != y->leave)
    return x->leave ? -1 : 1;   /* departures first: their capacity is free at that instant */
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

static void run_events(run_t *r, const sf_replay_order_t *o, sf_replay_result_t *res,
                       double *times)
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
        unschedule(r, p, aid[ev[e].slot]);
        r->alloc_milli -= share[ev[e].slot];
        r->gpu_pods_present -= p->num_gpu > 0;
        res->pods_departed++;
      }
      continue;
    }
    snprintf(holder, sizeof(holder), "%s#%u", p->name, ev[e].slot);
    int64_t t0 = now_ns();
    sf_alloc_id a = schedule(r, p, holder);
    times[ntimes++] = (double)(now_ns() - t0) / 1000.0;
    aid[ev[e].slot] = a;
    res->pods_arrived++;
    r->arrived_milli += p->load_milli;
    note_slivers(r, p, a >= 0);
    if (a < 0) {
      res->pods_failed++;
      res->gpu_pods_failed += p->num_gpu > 0;
    } else {
      share[ev[e].slot] = alloc_share(r, a);
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
  if (m.next_thresh <= 4)      /* never reached 100%: report the state at the end */
    res->tenants_at_100 = r->gpu_pods_present;
  res->decision_us_p50 = quantile(times, ntimes, 0.50);
  res->decision_us_p99 = quantile(times, ntimes, 0.99);
  res->node_eval_us = r->eval_nodes ? (double)r->eval_ns / 1000.0 / (double)r->eval_nodes : NAN;
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
  if (r->kind != SF_REPLAY_CORE)
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
  if (r->o->cpu_blind)  /* the scoring mix only: the fragmentation metric stays FGD's */
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
  free(r->stale_ids);
  free(r->stale_pos);
  free(r->stale_v);
  free(r->rank);
  free(r->specsel);
  free(r->sels);
  free(r->aff);
  free(r->naff);
}

int sf_replay_run(const sf_replay_trace_t *t, const sf_replay_opts_t *opts,
                  sf_replay_result_t *res, char *err, size_t errlen)
{
  run_t *r = sf_xcalloc(1, sizeof(*r));
  sf_replay_order_t order = {0};
  sf_strategy_t strategy;
  double *times = NULL;
  int rc = SF_EINVAL;
  memset(res, 0, sizeof(*res));
  for (size_t k = 0; k < SF_REPLAY_NTHRESH; k++)
    res->alloc_pct_at[k] = NAN;
  res->unallocated_pct_at_100 = res->frag_pct_at_100 = res->sliver_floor_pct_at_100 = NAN;
  if (!sf_replay_policy_valid(opts->policy, &r->kind, &strategy)) {
    snprintf(err, errlen, "unknown policy '%s' (known: %s)", opts->policy,
             sf_replay_policy_names());
    goto out;
  }
  r->t = t;
  r->o = opts;

  r->pk = sf_packer_create();
  sf_packer_set_reasons(r->pk, false);  /* the replay reads fit and score only */
  sf_rng_seed(&r->rng, opts->seed ^ 0x243f6a8885a308d3ull);
  run_policies(r, strategy);
  if ((rc = open_index(r, err, errlen)) != 0 || (rc = build_index(r, err, errlen)) != 0)
    goto out;
  cache_init(r);
  if (r->learn && opts->mix_every > 1)
    sf_mix_hold(r->idx, true);
  snprintf(res->policy, sizeof(res->policy), "%s", opts->policy);
  res->seed = opts->seed;
  res->tune = t->native ? 0 : opts->tune;
  res->nodes = (uint32_t)r->nnodes;
  r->cap_milli = sf_replay_gpu_milli(t);
  if (r->cluster != NULL)
    count_gpus(r);
  res->gpu_milli = r->cap_milli;
  res->gpus = (uint32_t)(res->gpu_milli / 1000);
  sf_replay_order_fgd(t, opts->seed, opts->tune, &order);
  times = sf_xcalloc(order.n + 1, sizeof(*times));
  int64_t t0 = now_ns();
  run_events(r, &order, res, times);
  res->wall_s = (double)(now_ns() - t0) / 1e9;
out:
  free(times);
  sf_replay_order_dispose(&order);
  run_dispose(r);
  free(r);
  return rc;
}

void sf_replay_result_dispose(sf_replay_result_t *r)
{
  free(r->curve);
  r->curve = NULL;
  r->ncurve = 0;
}
