/*
 * bench_defrag: how long the defragmentation planner takes for one waiting
 * demand on a large fragmented cluster. A benchmark, never a test: it
 * prints figures and exits 0 whatever they are.
 *
 * The cluster: NODES nodes (10,000) of 8 shared GPUs (40% H100 80GB in one
 * island of 8, 40% A100 40GB in islands of 2, 20% RTX 4000 Ada 20GB), every
 * device holding one to three pods of 1-10Gi, so no card is free and every
 * whole-card demand needs evictions. Each pod is one claim, of a random age,
 * 3% of them bare and 2% in kube-system. Drawn from a fixed-seed
 * splitmix64, so runs are comparable.
 *
 * Cases, each planned REPS times on the same cluster (the planner leaves
 * the index as it found it), the median and the range printed:
 *   whole   one whole H100 (80Gi of one card)              target < 50 ms
 *   island4 four whole GPUs in one NVLink island           target < 50 ms
 *   fits    a 1Gi share, which fits at once (pass 1 only)
 *   never   nine GPUs on one node, which no node has
 *   island8 eight whole GPUs in one island: a whole H100 node, which no
 *           plan of at most defrag_max_evictions frees
 *   kept    one whole H100 with every namespace protected: no pod may go
 *
 * usage: bench_defrag [NODES [REPS [CASE]]]
 * For callgrind: valgrind --tool=callgrind build/release/bench/bench_defrag 2000 1
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "slicefit/defrag.h"

#define DRIVER "gpu.nvidia.com"
#define GI ((sf_milli_t)1073741824 * 1000)
#define NDEV 8
#define SEED 0xdef4a9ull

static const struct {
  const char *product;
  sf_milli_t mem;
} models[] = {{"NVIDIA H100 80GB HBM3", 80 * GI},
              {"NVIDIA A100-SXM4-40GB", 40 * GI},
              {"NVIDIA RTX 4000 Ada", 20 * GI}};

static uint64_t rng = SEED;

static uint64_t next64(void)
{
  uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static uint32_t below(uint32_t n)
{
  return (uint32_t)(next64() % n);
}

typedef struct {
  sf_index_t *idx;
  sf_policy_t pol;
  char (*holders)[40];
  const char **hptr;
  sf_defrag_pod_t *pods;
  size_t npods, cap;
} world_t;

static void add_node(world_t *w, size_t i)
{
  char name[32], dname[NDEV][8];
  size_t m = i % 5 < 2 ? 0 : i % 5 < 4 ? 1 : 2;
  sf_attr_t attrs[NDEV][1];
  sf_capacity_t cap[NDEV];
  sf_device_spec_t devs[NDEV];
  sf_node_id node;
  snprintf(name, sizeof name, "gpu-node-%05zu", i);
  sf_node_spec_t spec = {name, 0, 0};
  if (sf_index_node_upsert(w->idx, &spec, &node) != 0)
    abort();
  for (size_t k = 0; k < NDEV; k++) {
    snprintf(dname[k], sizeof dname[k], "gpu-%zu", k);
    attrs[k][0] = (sf_attr_t){DRIVER "/productName", SF_ATTR_STRING, 0, models[m].product};
    cap[k] = (sf_capacity_t){DRIVER "/memory", models[m].mem, false, {0}};
    devs[k] = (sf_device_spec_t){dname[k], attrs[k], 1, &cap[k], 1, NULL, 0, NULL, 0, true};
  }
  if (sf_index_pool_set(w->idx, node, DRIVER, name, devs, NDEV, NULL, 0) != 0)
    abort();
}

static void add_pod(world_t *w, sf_node_id node, sf_dev_id dev, sf_milli_t mem, sf_milli_t total)
{
  static const char *const ns[] = {"team-a", "team-b", "team-c", "kube-system"};
  if (w->npods == w->cap) {
    w->cap = w->cap ? 2 * w->cap : 1024;
    w->holders = realloc(w->holders, w->cap * sizeof(*w->holders));
    w->pods = realloc(w->pods, w->cap * sizeof(*w->pods));
    if (w->holders == NULL || w->pods == NULL)
      abort();
  }
  size_t i = w->npods;
  uint32_t r = below(100);
  snprintf(w->holders[i], sizeof w->holders[i], "%s/claim-%07zu", ns[r < 2 ? 3 : r % 3], i);
  sf_pick_t pick = {dev, &mem, false};
  if (sf_index_alloc_add(w->idx, w->holders[i], node, 0, 0, &pick, 1, 0, NULL) != 0)
    return;
  w->pods[i] = (sf_defrag_pod_t){ns[r < 2 ? 3 : r % 3],
                                 w->holders[i],
                                 r < 2 || r >= 5,
                                 1 + (int64_t)below(86400),
                                 (int64_t)(mem * 1000 / total),
                                 NULL,
                                 1};
  w->npods++;
}

static void world_init(world_t *w, size_t nnodes)
{
  static const sf_milli_t sizes[] = {1 * GI, 2 * GI, 4 * GI, 5 * GI, 8 * GI, 10 * GI};
  memset(w, 0, sizeof(*w));
  w->idx = sf_index_create();
  sf_policy_init(&w->pol);
  if (sf_policy_set(&w->pol, "island_map", "H100=8,A100=2", NULL, 0) != 0)
    abort();
  for (size_t i = 0; i < nnodes; i++)
    add_node(w, i);
  sf_index_apply_policy(w->idx, &w->pol);
  for (sf_node_id n = 0; n < (sf_node_id)nnodes; n++) {
    size_t nd;
    const sf_dev_id *d = sf_index_node_devices(w->idx, n, &nd);
    for (size_t k = 0; k < nd; k++) {
      sf_milli_t total, free_amount;
      sf_index_dev_cap(w->idx, d[k], 0, &total, &free_amount);
      for (uint32_t j = 0, np = 1 + below(3); j < np; j++)
        add_pod(w, n, d[k], sizes[below(6)], total);
    }
  }
  w->hptr = malloc(w->npods * sizeof(*w->hptr));
  for (size_t i = 0; i < w->npods; i++) {
    w->hptr[i] = w->holders[i];
    w->pods[i].holders = &w->hptr[i];
  }
}

static sf_match_t is_gpu(void *ctx, const sf_index_t *idx, sf_dev_id dev)
{
  (void)ctx;
  return strcmp(sf_index_dev_driver(idx, dev), DRIVER) == 0 ? SF_MATCH_YES : SF_MATCH_NO;
}

static const sf_selector_t gpu_class = {is_gpu, NULL, 0xc1a55u};

typedef struct {
  sf_cap_request_t cap;
  sf_request_t req;
  sf_constraint_t con;
  sf_claim_t claim;
  sf_demand_t dem;
} demand_t;

static const sf_demand_t *demand(demand_t *d, sf_milli_t amount, uint32_t count, bool island)
{
  memset(d, 0, sizeof(*d));
  d->cap = (sf_cap_request_t){DRIVER "/memory", amount};
  d->req = (sf_request_t){"gpu",          &gpu_class, 1, false, count, &d->cap,
                          amount ? 1 : 0, NULL,       0, NULL,  0,     false};
  d->con = (sf_constraint_t){SF_CONSTRAINT_ISLAND, NULL, NULL, 0};
  d->claim = (sf_claim_t){"bench/claim", &d->req, 1, &d->con, island ? 1 : 0};
  d->dem = (sf_demand_t){&d->claim, 1, 0, 0};
  return &d->dem;
}

static double now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static const char *only; /* run this case only (NULL: all) */

static void run(world_t *w, sf_packer_t *p, const char *name, const sf_demand_t *dem,
                int64_t gpu_milli, int reps)
{
  if (only != NULL && strcmp(only, name) != 0)
    return;
  double t[64];
  sf_defrag_plan_t pl;
  sf_defrag_input_t in = {dem, gpu_milli, w->pods, w->npods};
  if (reps > 64)
    reps = 64;
  for (int r = 0; r < reps; r++) {
    double t0 = now_ms();
    if (sf_defrag_plan(p, w->idx, &w->pol, &in, &pl) != 0)
      abort();
    t[r] = now_ms() - t0;
  }
  qsort(t, (size_t)reps, sizeof(*t), cmp);
  printf("%-8s %-6s %2zu evictions %9" PRIu64 " evals  median %8.2f ms  (%.2f..%.2f)  %s\n", name,
         sf_defrag_outcome_name(pl.outcome), pl.nmoves, pl.work, t[reps / 2], t[0], t[reps - 1],
         pl.why);
}

int main(int argc, char **argv)
{
  size_t nnodes = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 10000;
  int reps = argc > 2 ? atoi(argv[2]) : 7;
  only = argc > 3 ? argv[3] : NULL;
  world_t w;
  demand_t d;
  if (nnodes == 0 || reps <= 0) {
    fprintf(stderr, "usage: bench_defrag [NODES [REPS [whole|island4|fits|never|island8|kept]]]\n");
    return 2;
  }
  world_init(&w, nnodes);
  printf("%zu nodes of %d GPUs, %zu pods; defrag_budget %u\n", nnodes, NDEV, w.npods,
         w.pol.defrag_budget);
  sf_packer_t *p = sf_packer_create();
  run(&w, p, "whole", demand(&d, 80 * GI, 1, false), 1000, reps);
  run(&w, p, "island4", demand(&d, 0, 4, true), 4000, reps);
  run(&w, p, "fits", demand(&d, 1 * GI, 1, false), 1000, reps);
  run(&w, p, "never", demand(&d, 0, 9, false), 9000, reps);
  run(&w, p, "island8", demand(&d, 0, 8, true), 8000, reps);
  if (sf_policy_set(&w.pol, "defrag_protect_namespaces", "kube-system,team-a,team-b,team-c", NULL,
                    0) != 0)
    abort();
  run(&w, p, "kept", demand(&d, 80 * GI, 1, false), 1000, reps);
  sf_packer_destroy(p);
  sf_index_destroy(w.idx);
  sf_policy_dispose(&w.pol);
  free(w.holders);
  free(w.hptr);
  free(w.pods);
  return 0;
}
