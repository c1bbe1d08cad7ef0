/*
 * The replay's policies and the paper's baselines, scored as the simulator
 * scores them, in integers (replay_run.c has the run).
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "replay_run_int.h"

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
    {"kube-default", SF_REPLAY_KUBE_DEFAULT, SF_STRATEGY_BINPACK},
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
  return "fragmentation,fgd,binpack,spread,random,dotprod,clustering,packing,bestfit,kube-default";
}

/* ---- the paper's baselines (packing-fgd.md §2.1), in the simulator's integer scores ---- */

#define MAX_SPEC_CPU 128000.0
#define MAX_SPEC_GPU 8000
#define MAX_NODE_SCORE 100

typedef struct {
  int64_t cpu_free;
  int64_t gpu_free; /* milli-GPUs over the node's devices */
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

uint32_t sf__replay_affinity_tag(const sf_replay_pod_t *p)
{
  if (p->num_gpu == 1 && p->gpu_milli < 1000)
    return 0; /* "share" */
  return p->num_gpu < SF_REPLAY_MAX_GPUS ? p->num_gpu : SF_REPLAY_MAX_GPUS;
}

static int64_t score_clustering(const run_t *r, size_t pos, const nodeview_t *v,
                                const sf_replay_pod_t *p)
{
  if (p->num_gpu == 0)
    return 0;
  uint32_t tag = sf__replay_affinity_tag(p);
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
 * kube-scheduler's default scores for the pod on the node, as its plugins
 * compute them with the pod's requests added (weights 1 and 1):
 * NodeResourcesFit LeastAllocated, the mean over CPU and memory of
 * (allocatable - requested) x 100 / allocatable, in integers; and
 * NodeResourcesBalancedAllocation, (1 - the standard deviation of the two
 * requested fractions) x 100, where the deviation of two values is half
 * their difference. The GPU claim plays no part: DRA only filters.
 */
double sf__replay_kube_score(const run_t *r, size_t pos, const sf_replay_pod_t *p)
{
  int64_t ca, cu, ma, mu;
  sf_index_node_cpu_mem(r->idx, r->nodes[pos], &ca, &cu, &ma, &mu);
  int64_t cr = cu + p->cpu_milli, mr = mu + p->mem_bytes;
  int64_t c = ca > 0 && cr <= ca ? (ca - cr) * MAX_NODE_SCORE / ca : 0;
  int64_t m = ma > 0 && mr <= ma ? (ma - mr) * MAX_NODE_SCORE / ma : 0;
  double fc = ca > 0 ? (double)cr / (double)ca : 0.0, fm = ma > 0 ? (double)mr / (double)ma : 0.0;
  if (fc > 1.0)
    fc = 1.0;
  if (fm > 1.0)
    fm = 1.0;
  int64_t balanced = (int64_t)((1.0 - fabs(fc - fm) / 2.0) * MAX_NODE_SCORE);
  return (double)((c + m) / 2 + balanced);
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
double sf__replay_node_key(const run_t *r, size_t pos, const sf_replay_pod_t *p, double raw)
{
  if (r->kind != SF_REPLAY_CORE)
    return (double)baseline_score(r, pos, p);
  if (r->pol.strategy == SF_STRATEGY_FGD || r->pol.strategy == SF_STRATEGY_FRAGMENTATION)
    return floor(raw);
  return raw;
}
