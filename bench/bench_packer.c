/*
 * bench_packer: how fast and how big the packing core is on a synthetic
 * cluster shaped like a real one. A benchmark, never a test: it prints
 * figures and exits 0 whatever they are (libuv's test/benchmark-*.c).
 *
 * Cases (and their targets):
 *   frac    filter+score of one single-GPU fractional claim (4Gi of memory)
 *           over 5,000 nodes of 8 GPUs                       target < 500 us
 *   island  one claim for 4 whole GPUs in one NVLink island
 *           over the same 5,000 nodes                        target < 2 ms
 *   mem     10,000 nodes of 8 GPUs holding 50,000 allocations target < 100 MiB
 *
 * The cluster: nodes gpu-node-00000.., one pool per node (driver
 * gpu.nvidia.com, pool = node name), devices gpu-0..gpu-7 of one model per
 * node (H100 80GB, A100 40GB or RTX 4000 Ada 20GB), shared
 * (allowMultipleAllocations) with a memory capacity rounded by a validRange
 * of 1Gi steps. Islands come from the policy's island_map: the H100s of a
 * node form one island of 8, the A100s islands of 2, the RTX cards none.
 * Every node draws a fill level (36% idle, 12% full, the rest between 5%
 * and 80%) and is filled to it with fractional and whole allocations, first
 * fit as the in-tree allocator does, so the cluster is ~40% used and its
 * nodes are in varied states. Everything is drawn from a fixed-seed
 * splitmix64, so runs are comparable.
 *
 * Each timed configuration gets a new packer, learns a workload mix from a
 * few evaluate calls with SF_EVAL_LEARN (several fractional and whole
 * shapes), warms up once, then times `reps` evaluate calls without the flag;
 * its per-node summaries and fragmentation caches are therefore warm, as in
 * a daemon whose cluster changes a few nodes between calls. The "warm" rows
 * alternate the demand with a twin that differs only in its CPU request, so
 * no node's verdict is remembered from the call before (under first fit
 * its placement is, and only the score is worked out again: a workload's
 * next pod after the learned mix moved); the "unlike" row alternates it
 * with another request (1Gi more, or one device fewer), so nothing of the
 * call before serves: the whole filter and score of every node; the "again" rows
 * send the same demand every time, so every node's verdict is (kube-scheduler
 * sending a workload's pods one after another on an unchanged cluster). The
 * "cold" rows use a new packer per call (empty caches), the "learn" row keeps
 * SF_EVAL_LEARN on.
 *
 * usage: bench_packer [frac|island|mem|all [REPS [POLICY [NODES]]]]
 *   POLICY: default fragpack fgd binpack spread all (a named case runs
 *   only the default policy unless told otherwise); NODES resizes the timed
 *   cases' cluster (5000) to see how the cost scales. For callgrind:
 *   valgrind --tool=callgrind build/release/bench/bench_packer frac 20
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "slicefit/packer.h"

#define DRIVER "gpu.nvidia.com"
#define GI ((sf_milli_t)1073741824 * 1000) /* 1Gi in milli-units */
#define NDEV 8
#define SEED 0x5eedf17ull

typedef struct {
  const char *product;
  sf_milli_t mem;
} model_t;

static const model_t models[] = {
    {"NVIDIA H100 80GB HBM3", 80 * GI},
    {"NVIDIA A100-SXM4-40GB", 40 * GI},
    {"NVIDIA RTX 4000 Ada", 20 * GI},
};

/* ---- a deterministic PRNG (splitmix64) ---- */

static uint64_t rng;

static uint64_t next64(void)
{
  uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Uniform in [0, n). */
static uint32_t below(uint32_t n)
{
  return (uint32_t)(next64() % n);
}

/* ---- the cluster ---- */

typedef struct {
  sf_index_t *idx;
  sf_policy_t pol;   /* island_map; strategies are set per run on copies */
  sf_node_id *nodes; /* new */
  size_t n;
  size_t nallocs;
  sf_milli_t used, total; /* GPU memory, milli-units */
} cluster_t;

static void add_node(cluster_t *c, size_t i)
{
  char name[32], dname[NDEV][8], uuid[NDEV][48];
  const model_t *m = &models[i % 5 < 2 ? 0 : i % 5 < 4 ? 1 : 2]; /* 40% H100, 40% A100, 20% RTX */
  sf_attr_t attrs[NDEV][3];
  sf_capacity_t cap[NDEV];
  sf_device_spec_t devs[NDEV];
  snprintf(name, sizeof(name), "gpu-node-%05zu", i);
  sf_node_spec_t spec = {name, 0, 0}; /* the extender's demands carry no CPU/memory */
  if (sf_index_node_upsert(c->idx, &spec, &c->nodes[c->n]) != 0)
    abort();
  for (size_t k = 0; k < NDEV; k++) {
    uint64_t u = next64();
    snprintf(dname[k], sizeof(dname[k]), "gpu-%zu", k);
    snprintf(uuid[k], sizeof(uuid[k]), "GPU-%08" PRIx32 "-%04" PRIx32 "-%04" PRIx32 "-%012" PRIx64,
             (uint32_t)u, (uint32_t)(u >> 32) & 0xffff, (uint32_t)(u >> 48),
             (uint64_t)(next64() & 0xffffffffffffull));
    attrs[k][0] = (sf_attr_t){DRIVER "/productName", SF_ATTR_STRING, 0, m->product};
    attrs[k][1] = (sf_attr_t){DRIVER "/uuid", SF_ATTR_STRING, 0, uuid[k]};
    attrs[k][2] = (sf_attr_t){DRIVER "/type", SF_ATTR_STRING, 0, "gpu"};
    cap[k] =
        (sf_capacity_t){DRIVER "/memory", m->mem, true, {false, 0, NULL, 0, true, GI, GI, m->mem}};
    devs[k] = (sf_device_spec_t){dname[k], attrs[k], 3, &cap[k], 1, NULL, 0, NULL, 0, true};
  }
  if (sf_index_pool_set(c->idx, c->nodes[c->n], DRIVER, name, devs, NDEV, NULL, 0) != 0)
    abort();
  c->total += NDEV * m->mem;
  c->n++;
}

/* Free memory of device d; *value gets its total. */
static sf_milli_t dev_free(const cluster_t *c, sf_dev_id d, sf_milli_t *value)
{
  sf_milli_t f;
  sf_index_dev_cap(c->idx, d, 0, value, &f);
  return f;
}

/*
 * One allocation on node slot i, first fit: `amount` of memory on one device,
 * or `count` idle devices taken whole (amount 0). Returns the memory taken,
 * or 0 when the node has no room for it.
 */
static sf_milli_t try_alloc(cluster_t *c, size_t i, sf_milli_t amount, uint32_t count)
{
  size_t nd;
  const sf_dev_id *devs = sf_index_node_devices(c->idx, c->nodes[i], &nd);
  sf_milli_t cons[NDEV], taken = 0, v;
  sf_pick_t picks[NDEV];
  size_t np = 0;
  for (size_t k = 0; k < nd && np < (amount ? 1 : count); k++) {
    sf_milli_t f = dev_free(c, devs[k], &v);
    if (amount ? f < amount || amount > v : f < v)
      continue;
    cons[np] = amount ? amount : v;
    picks[np] = (sf_pick_t){devs[k], &cons[np], false};
    taken += cons[np++];
  }
  if (np < (amount ? 1 : count))
    return 0;
  char holder[48];
  snprintf(holder, sizeof(holder), "team-%03" PRIu32 "/claim-%07zu", below(500), c->nallocs);
  if (sf_index_alloc_add(c->idx, holder, c->nodes[i], 0, 0, picks, np, 0, NULL) != 0)
    return 0;
  c->nallocs++;
  return taken;
}

/* A random existing workload: mostly fractional, some whole GPUs, a few whole nodes. */
static sf_milli_t random_alloc(cluster_t *c, size_t i)
{
  static const sf_milli_t frac[] = {1 * GI, 2 * GI, 4 * GI, 5 * GI, 8 * GI, 10 * GI, 20 * GI};
  static const uint32_t whole[] = {1, 1, 1, 2, 2, 4, 8};
  if (below(100) < 70)
    return try_alloc(c, i, frac[below(sizeof(frac) / sizeof(*frac))], 1);
  return try_alloc(c, i, 0, whole[below(sizeof(whole) / sizeof(*whole))]);
}

/*
 * Fills node slot i to a drawn share (times `scale`) of its memory; stops
 * when `max` allocations exist.
 */
static void fill_node(cluster_t *c, size_t i, size_t max, double scale)
{
  uint32_t r = below(100);
  double target = scale * (r < 36 ? 0.0 : r < 48 ? 1.0 : 0.05 + 0.75 * (double)below(1000) / 1000.0);
  sf_milli_t cap = NDEV * models[i % 5 < 2 ? 0 : i % 5 < 4 ? 1 : 2].mem, used = 0;
  for (int misses = 0; misses < 6 && c->nallocs < max && (double)used < target * (double)cap;) {
    sf_milli_t t = random_alloc(c, i);
    misses = t ? 0 : misses + 1;
    used += t;
  }
  c->used += used;
}

/* max_allocs SIZE_MAX: fill every node to its level (~40% overall); else exactly max_allocs. */
static void cluster_init(cluster_t *c, size_t nnodes, size_t max_allocs, double scale)
{
  char err[160];
  memset(c, 0, sizeof(*c));
  rng = SEED;
  c->idx = sf_index_create();
  c->nodes = sf_xcalloc(nnodes, sizeof(*c->nodes));
  sf_policy_init(&c->pol);
  if (sf_policy_set(&c->pol, "island_map", "H100=8,A100=2", err, sizeof(err)) != 0) {
    fprintf(stderr, "island_map: %s\n", err);
    abort();
  }
  for (size_t i = 0; i < nnodes; i++)
    add_node(c, i);
  sf_index_apply_policy(c->idx, &c->pol);
  for (size_t i = 0; i < nnodes; i++)
    fill_node(c, i, max_allocs, scale);
  /* The memory case asks for an exact count: top up with small slices anywhere. */
  for (size_t tries = 0; max_allocs != SIZE_MAX && c->nallocs < max_allocs && tries < 20 * max_allocs;
       tries++)
    c->used += try_alloc(c, below((uint32_t)nnodes), GI, 1);
}

static void cluster_dispose(cluster_t *c)
{
  sf_index_destroy(c->idx);
  sf_policy_dispose(&c->pol);
  free(c->nodes);
}

/* ---- demands ---- */

static sf_match_t is_nvidia(void *ctx, const sf_index_t *idx, sf_dev_id dev)
{
  (void)ctx;
  return strcmp(sf_index_dev_driver(idx, dev), DRIVER) == 0 ? SF_MATCH_YES : SF_MATCH_NO;
}

/* The class's selector, cacheable as the CEL layer's compiled expression is. */
static const sf_selector_t gpu_class = {is_nvidia, NULL, 0xc1a55u};

/* One pod with one claim of one request; the struct owns every part of it. */
typedef struct {
  sf_cap_request_t cap;
  sf_request_t req;
  sf_constraint_t con;
  sf_claim_t claim;
  sf_demand_t dem;
} demand_t;

/* `amount` of memory on each of `count` devices (0: whole devices), optionally in one island. */
static const sf_demand_t *demand_init(demand_t *d, sf_milli_t amount, uint32_t count, bool island)
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

/* ---- measuring ---- */

static size_t eval_calls;

static double clock_us(clockid_t id)
{
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static double now_us(void)
{
  return clock_us(CLOCK_MONOTONIC);
}

static void eval(sf_packer_t *p, cluster_t *c, const sf_policy_t *pol, const sf_demand_t *d,
                 const sf_node_id *nodes, size_t n, unsigned flags, sf_verdict_t *out)
{
  eval_calls++;
  if (sf_packer_evaluate(p, c->idx, pol, d, nodes, n, flags, out) != 0)
    abort();
}

/* Seeds the index's learned mix with a realistic workload (weights by repetition). */
static void learn_mix(sf_packer_t *p, cluster_t *c, const sf_policy_t *pol)
{
  static const struct {
    sf_milli_t amount;
    uint32_t count;
    bool island;
    int times;
  } shapes[] = {
      {1 * GI, 1, false, 4}, {2 * GI, 1, false, 3}, {4 * GI, 1, false, 4}, {8 * GI, 1, false, 2},
      {0, 1, false, 3},      {0, 2, true, 2},       {0, 8, true, 1},
  };
  sf_verdict_t v[4];
  demand_t d;
  for (size_t s = 0; s < sizeof(shapes) / sizeof(*shapes); s++)
    for (int t = 0; t < shapes[s].times; t++)
      eval(p, c, pol, demand_init(&d, shapes[s].amount, shapes[s].count, shapes[s].island), c->nodes,
           4, SF_EVAL_LEARN, v);
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

typedef enum { RUN_WARM, RUN_AGAIN, RUN_LEARN, RUN_COLD, RUN_UNLIKE } run_t;

static void run(const char *label, const char *polname, cluster_t *c, const sf_policy_t *pol,
                const sf_demand_t *d, run_t mode, int reps)
{
  sf_verdict_t *out = sf_xcalloc(c->n, sizeof(*out));
  double *t = sf_xcalloc((size_t)reps, sizeof(*t)), *cpu = sf_xcalloc((size_t)reps, sizeof(*cpu));
  sf_packer_t *p = sf_packer_create();
  learn_mix(p, c, pol);
  eval(p, c, pol, d, c->nodes, c->n, SF_EVAL_LEARN, out);
  sf_demand_t twin = *d; /* the same but for its CPU, which these nodes do not track */
  twin.cpu_milli = d->cpu_milli + 1;
  /* Another request (1Gi more, or one device fewer): no node's verdict or placement is kept. */
  demand_t other;
  const sf_request_t *rq = &d->claims[0].reqs[0];
  const sf_demand_t *unlike = demand_init(&other, rq->ncaps ? rq->caps[0].value + GI : 0,
                                          rq->ncaps || rq->count < 2 ? rq->count : rq->count - 1,
                                          d->claims[0].ncons > 0);
  for (int r = 0; r < reps; r++) {
    if (mode == RUN_COLD) {
      sf_packer_destroy(p);
      p = sf_packer_create();
    }
    const sf_demand_t *dr = (r & 1) == 0         ? d
                            : mode == RUN_WARM   ? &twin
                            : mode == RUN_UNLIKE ? unlike
                                                 : d;
    /* Wall time is what the scheduler waits; thread CPU time stays honest on a busy machine. */
    double t0 = now_us(), c0 = clock_us(CLOCK_THREAD_CPUTIME_ID);
    eval(p, c, pol, dr, c->nodes, c->n, mode == RUN_LEARN ? SF_EVAL_LEARN : 0, out);
    t[r] = now_us() - t0;
    cpu[r] = clock_us(CLOCK_THREAD_CPUTIME_ID) - c0;
  }
  size_t fit[3] = {0, 0, 0};
  for (size_t i = 0; i < c->n; i++)
    fit[out[i].fit]++;
  qsort(t, (size_t)reps, sizeof(*t), cmp_double);
  qsort(cpu, (size_t)reps, sizeof(*cpu), cmp_double);
  double med = t[reps / 2], p10 = t[reps / 10], p90 = t[reps - 1 - reps / 10];
  printf("%-7s %-24s %-6s %10.1f %9.1f %9.1f %8.1f %10.1f   %zu/%zu/%zu\n", label, polname,
         mode == RUN_COLD     ? "cold"
         : mode == RUN_LEARN  ? "learn"
         : mode == RUN_AGAIN  ? "again"
         : mode == RUN_UNLIKE ? "unlike"
                              : "warm",
         med, p10, p90, med * 1000.0 / (double)c->n, cpu[reps / 2], fit[SF_FIT_YES], fit[SF_FIT_NO],
         fit[SF_FIT_UNSURE]);
  sf_packer_destroy(p);
  free(cpu);
  free(t);
  free(out);
}

/* ---- policies compared ---- */

typedef struct {
  const char *name, *label, *strategy, *choice;
} polspec_t;

static const polspec_t policies[] = {
    {"default", "fragmentation/first-fit", "fragmentation", "first-fit"},
    {"fragpack", "fragmentation/packer", "fragmentation", "packer"},
    {"fgd", "fgd/packer", "fgd", "packer"},
    {"binpack", "binpack/first-fit", "binpack", "first-fit"},
    {"spread", "spread/first-fit", "spread", "first-fit"},
};
#define NPOL (sizeof(policies) / sizeof(*policies))

static void policy_of(const cluster_t *c, const polspec_t *ps, sf_policy_t *out)
{
  char err[160];
  sf_policy_copy(out, &c->pol);
  if (sf_policy_set(out, "strategy", ps->strategy, err, sizeof(err)) != 0 ||
      sf_policy_set(out, "device_choice", ps->choice, err, sizeof(err)) != 0) {
    fprintf(stderr, "policy %s: %s\n", ps->name, err);
    abort();
  }
}

static void run_case(const char *label, cluster_t *c, const sf_demand_t *d, const char *which,
                     int reps)
{
  for (size_t i = 0; i < NPOL; i++) {
    if (strcmp(which, "all") != 0 && strcmp(which, policies[i].name) != 0)
      continue;
    sf_policy_t pol;
    policy_of(c, &policies[i], &pol);
    run(label, policies[i].label, c, &pol, d, RUN_WARM, reps);
    if (i == 0) /* the default also with nothing kept from the call before */
      run(label, policies[i].label, c, &pol, d, RUN_UNLIKE, reps);
    /* The default and fgd also with verdicts remembered, cold (caches empty) and learning. */
    if (strcmp(which, "all") == 0 && (i == 0 || strcmp(policies[i].name, "fgd") == 0)) {
      run(label, policies[i].label, c, &pol, d, RUN_AGAIN, reps);
      run(label, policies[i].label, c, &pol, d, RUN_COLD, reps / 4 > 5 ? reps / 4 : 5);
      run(label, policies[i].label, c, &pol, d, RUN_LEARN, reps);
    }
    sf_policy_dispose(&pol);
  }
}

/* ---- memory ---- */

/* A field of /proc/self/status in KiB (VmRSS, VmHWM), or -1. */
static long status_kib(const char *field)
{
  char line[256];
  long v = -1;
  size_t n = strlen(field);
  FILE *f = fopen("/proc/self/status", "r");
  if (f == NULL)
    return -1;
  while (fgets(line, sizeof(line), f))
    if (strncmp(line, field, n) == 0 && line[n] == ':') {
      v = strtol(line + n + 1, NULL, 10);
      break;
    }
  fclose(f);
  return v;
}

static void case_mem(void)
{
  cluster_t c;
  long rss0 = status_kib("VmRSS"), hwm0 = status_kib("VmHWM");
  double t0 = now_us();
  cluster_init(&c, 10000, 50000, 0.8); /* 0.8: the count runs out near the last node */
  double built = now_us() - t0;
  long rss1 = status_kib("VmRSS"), hwm1 = status_kib("VmHWM");
  printf("mem: %zu nodes x %d GPUs, %zu allocations, %.1f%% of GPU memory used, built in %.0f ms\n",
         sf_index_node_count(c.idx), NDEV, sf_index_alloc_count(c.idx),
         100.0 * (double)c.used / (double)c.total, built / 1000.0);
  printf("mem: sf_index_mem_bytes %.1f MiB (%.0f B per node, %.0f B per allocation overall)\n",
         (double)sf_index_mem_bytes(c.idx) / 1048576.0,
         (double)sf_index_mem_bytes(c.idx) / (double)c.n,
         (double)sf_index_mem_bytes(c.idx) / (double)c.nallocs);
  printf("mem: RSS delta %.1f MiB, peak RSS (VmHWM) delta %.1f MiB  [target < 100 MiB]\n",
         (double)(rss1 - rss0) / 1024.0, (double)(hwm1 - (hwm0 > rss0 ? hwm0 : rss0)) / 1024.0);
  /* A daemon also holds a packer's scratch, fragmentation caches and selector caches. */
  demand_t d;
  sf_verdict_t *out = sf_xcalloc(c.n, sizeof(*out));
  sf_packer_t *p = sf_packer_create();
  learn_mix(p, &c, &c.pol);
  eval(p, &c, &c.pol, demand_init(&d, 4 * GI, 1, false), c.nodes, c.n, SF_EVAL_LEARN, out);
  printf("mem: after one evaluate over every node: sf_index_mem_bytes %.1f MiB, RSS delta %.1f MiB, "
         "peak delta %.1f MiB\n",
         (double)sf_index_mem_bytes(c.idx) / 1048576.0, (double)(status_kib("VmRSS") - rss0) / 1024.0,
         (double)(status_kib("VmHWM") - (hwm0 > rss0 ? hwm0 : rss0)) / 1024.0);
  sf_packer_destroy(p);
  free(out);
  cluster_dispose(&c);
}

/* ---- main ---- */

static void timed_cases(bool frac, bool island, int reps, const char *which, size_t nnodes)
{
  cluster_t c;
  demand_t d;
  double t0 = now_us();
  cluster_init(&c, nnodes, SIZE_MAX, 1.0);
  printf("cluster: %zu nodes x %d GPUs (40%% H100 island 8, 40%% A100 islands of 2, 20%% RTX 4000), "
         "%zu allocations, %.1f%% of GPU memory used, built in %.0f ms\n",
         c.n, NDEV, c.nallocs, 100.0 * (double)c.used / (double)c.total, (now_us() - t0) / 1000.0);
  printf("%-7s %-24s %-6s %10s %9s %9s %8s %10s   %s\n", "case", "policy", "cache", "median_us",
         "p10_us", "p90_us", "ns/node", "cpu_med_us", "fit/no/unsure");
  if (frac)
    run_case("frac", &c, demand_init(&d, 4 * GI, 1, false), which, reps);
  if (island)
    run_case("island", &c, demand_init(&d, 0, 4, true), which, reps);
  cluster_dispose(&c);
}

int main(int argc, char **argv)
{
  const char *which = argc > 1 ? argv[1] : "all";
  int reps = argc > 2 ? atoi(argv[2]) : 200;
  const char *pol = argc > 3 ? argv[3] : argc > 1 && strcmp(which, "all") != 0 ? "default" : "all";
  size_t nnodes = argc > 4 ? (size_t)atol(argv[4]) : 5000;
  bool all = strcmp(which, "all") == 0;
  if (reps < 1 || nnodes < 4 ||
      (!all && strcmp(which, "frac") && strcmp(which, "island") && strcmp(which, "mem"))) {
    fprintf(
        stderr,
        "usage: bench_packer [frac|island|mem|all [REPS [default|fragpack|fgd|binpack|spread|all [NODES]]]]\n");
    return 2;
  }
  /* Memory first, so the peak RSS is not the timed cases' high-water mark. */
  if (all || strcmp(which, "mem") == 0)
    case_mem();
  if (all || strcmp(which, "frac") == 0 || strcmp(which, "island") == 0)
    timed_cases(all || strcmp(which, "frac") == 0, all || strcmp(which, "island") == 0, reps, pol,
                nnodes);
  printf("evaluate calls: %zu\n", eval_calls);
  return 0;
}
