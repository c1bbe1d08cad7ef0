/*
 * slicefit replay: offline replay of a workload trace through the packing
 * core, the tool behind bin/slicefit-replay (bench/).
 *
 * A trace is a cluster (nodes with GPUs of one model) and a list of pods.
 * It comes from the Alibaba GPU-sharing trace (two CSV files) or from
 * slicefit's native JSON-lines format (docs/replay-format.md), which adds
 * GPU memory, NVLink islands, DRA-shaped claims and departures in time.
 *
 * A run maps the trace onto a fresh index (one pool per node, one shared
 * device per GPU), orders the pods as FGD's experiment does (sorted by name,
 * shuffled by the seed, grown by resampling to --tune x capacity) or by time
 * for a native trace, schedules each pod with a core strategy or one of the
 * paper's baselines, and measures allocation against arrived load.
 *
 * This module is a shell: it reads files and the clock. sf_replay_run may
 * run on several threads at once, each call with its own options and result
 * (the trace is only read; the comparators' contexts are thread-local).
 * Every string and array in the structs below belongs to its container (its _dispose frees it).
 */
#ifndef SLICEFIT_REPLAY_H
#define SLICEFIT_REPLAY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <jansson.h>
#include "slicefit/common.h"
#include "slicefit/policy.h"

/* The driver, attribute and capacity names under which GPUs are published. */
#define SF_REPLAY_DRIVER "gpu.slicefit.io"
#define SF_REPLAY_ATTR_MODEL "gpu.slicefit.io/model"
#define SF_REPLAY_ATTR_ISLAND "gpu.slicefit.io/island"
#define SF_REPLAY_CAP_MEMORY "gpu.slicefit.io/memory"

#define SF_REPLAY_ERR_MAX 512 /* an err buffer for any message: "FILE:LINE:COL: problem" */
#define SF_REPLAY_NTHRESH 9   /* 50,80,90,95,100,105,110,120,130 */
#define SF_REPLAY_MAX_GPUS 64 /* per node */

/** The arrived-load thresholds (percent of GPU capacity) at which allocation is reported. */
extern const int sf_replay_thresholds[SF_REPLAY_NTHRESH];


typedef struct {
  char *name;
  int64_t cpu_milli;
  int64_t mem_bytes;
  uint32_t ngpu;
  char *model;         /* "" when the node has no GPU */
  sf_milli_t gpu_mem;  /* per GPU, milli-units; 0 = "1" (Alibaba: shares of one GPU) */
  uint32_t *island_of; /* ngpu entries: island index within the node, or NULL = none */
} sf_replay_node_t;

/* A set of allowed GPU models (gpu_spec, a selector). Id 0 = any model. */
typedef struct {
  char **models;
  size_t n;
  char *key; /* sorted, deduplicated, '|'-joined: the set's identity */
} sf_replay_spec_t;

typedef struct {
  uint32_t count;    /* devices */
  sf_milli_t amount; /* per device, of the memory capacity; 0 = the whole device */
  uint32_t spec;     /* model set id; 0 = any */
} sf_replay_req_t;

typedef struct {
  sf_replay_req_t *reqs;
  size_t nreqs;
  bool island; /* all devices in one NVLink island */
} sf_replay_claim_t;

typedef struct {
  char *name;
  int64_t cpu_milli;
  int64_t mem_bytes;
  /* The Alibaba view: num_gpu GPUs, gpu_milli of each (1000 = whole). */
  uint32_t num_gpu;
  int32_t gpu_milli;
  uint32_t spec;
  /* The claims the core sees (Alibaba pods: at most one claim, one request). */
  sf_replay_claim_t *claims;
  size_t nclaims;
  /*
   * Native traces: arrival and departure in seconds; until < 0 = never leaves.
   * Alibaba pods: `at` is the creation_time column (0 when absent), which
   * only --search's split reads: their replay order is FGD's; `until` is
   * deletion_time (-1 when absent), which only the churn replay reads.
   */
  int64_t at, until;
  /* Arrived GPU load in milli-GPUs (FGD's x-axis): num_gpu x gpu_milli. */
  int64_t load_milli;
} sf_replay_pod_t;

typedef struct {
  sf_replay_node_t *nodes;
  size_t nnodes;
  sf_replay_pod_t *pods;
  size_t npods;
  sf_replay_spec_t *specs;
  size_t nspecs; /* specs[0] is "any" */
  bool native;   /* timed events, departures (no FGD tuning) */
  bool has_islands;
  char *source; /* readable origin, for reports */
} sf_replay_trace_t;

void sf_replay_trace_init(sf_replay_trace_t *t);
void sf_replay_trace_dispose(sf_replay_trace_t *t);

/**
 * Loads the Alibaba node and pod CSV files (columns checked by header name).
 * Returns 0, or SF_EINVAL/SF_ENOENT with err naming file, line, column and
 * the problem; the trace is then empty. An empty file, a header-only file
 * or a missing column is an error.
 */
int sf_replay_load_csv(sf_replay_trace_t *t, const char *nodes_path, const char *pods_path, char *err,
                       size_t errlen);
/** Same, from streams already open (`name` for messages). */
int sf_replay_parse_nodes_csv(sf_replay_trace_t *t, FILE *f, const char *name, char *err,
                              size_t errlen);
int sf_replay_parse_pods_csv(sf_replay_trace_t *t, FILE *f, const char *name, char *err,
                             size_t errlen);

/** Loads a native JSON-lines trace (docs/replay-format.md). Errors as above. */
int sf_replay_load_native(sf_replay_trace_t *t, const char *path, char *err, size_t errlen);
int sf_replay_parse_native(sf_replay_trace_t *t, FILE *f, const char *name, char *err, size_t errlen);

/** Id of a model set given as "A|B|A" (deduplicated; "" = 0, any), interned in the trace. */
uint32_t sf_replay_spec_intern(sf_replay_trace_t *t, const char *spec);

/** Total GPU capacity of the trace, in milli-GPUs (1000 per GPU). */
int64_t sf_replay_gpu_milli(const sf_replay_trace_t *t);

/* ---- FGD's experiment method ---- */

/** A seeded generator (xoshiro256**, seeded by splitmix64). Never rand(). */
typedef struct {
  uint64_t s[4];
} sf_rng_t;
void sf_rng_seed(sf_rng_t *r, uint64_t seed);
uint64_t sf_rng_next(sf_rng_t *r);
/** Uniform in [0, n), unbiased; n > 0. */
uint64_t sf_rng_below(sf_rng_t *r, uint64_t n);
double sf_rng_unit(sf_rng_t *r);

/*
 * The order in which pods arrive: indices into trace->pods (resampled pods
 * repeat an index). `norig` of them are the shuffled originals; the rest
 * were appended by resampling.
 */
typedef struct {
  uint32_t *idx;
  size_t n, norig;
  int64_t load_milli; /* total arrived GPU request */
} sf_replay_order_t;

/**
 * FGD's order: sort by name, shuffle with `seed`, then grow by resampling
 * with replacement (appended, stopping at the first pod that would overshoot
 * tune x capacity) or shrink by removing random pods. tune <= 0 keeps the
 * shuffled originals. Native traces are ordered by arrival time instead.
 */
void sf_replay_order_fgd(const sf_replay_trace_t *t, uint64_t seed, double tune,
                         sf_replay_order_t *out);
void sf_replay_order_dispose(sf_replay_order_t *o);

/**
 * FGD's typical pods: groups of (cpu_milli, gpu_milli, num_gpu, gpu_spec)
 * over the original pods, most frequent first until >= 95% of pods, weights
 * renormalised. *mix is new (sf_xmalloc); returns the count.
 */
size_t sf_replay_typical_mix(const sf_replay_trace_t *t, sf_shape_t **mix);

/* ---- runs ---- */

typedef enum {
  SF_REPLAY_CORE = 0, /* a core strategy: fragmentation, fgd, binpack, spread */
  SF_REPLAY_RANDOM,
  SF_REPLAY_DOTPROD,
  SF_REPLAY_CLUSTERING,
  SF_REPLAY_PACKING,
  SF_REPLAY_BESTFIT,
  /*
   * A cluster without slicefit: kube-scheduler's NodeResourcesFit
   * (LeastAllocated over CPU and memory) plus NodeResourcesBalancedAllocation,
   * ties at random (selectHost), and the in-tree DRA allocator's first
   * device that fits on the chosen node.
   */
  SF_REPLAY_KUBE_DEFAULT
} sf_replay_kind_t;

/*
 * How equal node scores are broken (docs/replay.md has the evidence for each).
 * PERM models the FGD authors' simulator: it sorts the nodes by name and
 * renames each with a prefix from a seeded random permutation, and the
 * first highest score by that name wins, so each seed has its own fixed node
 * order. SCHED is kube-scheduler 1.20's parallel filter order (waves of 16
 * chunks), the first highest score winning; FIRST takes the first node by
 * name; RANDOM is upstream kube-scheduler's selectHost (reservoir sampling).
 */
typedef enum {
  SF_REPLAY_TIES_PERM = 0,
  SF_REPLAY_TIES_SCHED,
  SF_REPLAY_TIES_FIRST,
  SF_REPLAY_TIES_RANDOM
} sf_replay_ties_t;

typedef struct {
  const char *policy;      /* a policy name (sf_replay_policy_valid) */
  const sf_policy_t *base; /* --policy-file keys, or NULL for defaults (borrowed) */
  int device_choice;       /* -1 = the base's, else SF_CHOICE_* */
  uint64_t seed;
  double tune; /* FGD tuning ratio; <= 0: none */
  /* Called every few pods; may be NULL. */
  void (*progress)(void *ctx, size_t done, size_t total);
  void *progress_ctx;
  sf_replay_ties_t ties; /* how equal node scores are broken */
  bool no_cache;         /* re-evaluate every node for every pod (slow; checks the cache) */
  bool no_bound; /* a learned mix that moves re-evaluates every FIT verdict (checks the bound) */
  /*
   * Core strategies: compare nodes by the 0..SF_SCORE_MAX score the extender
   * would send kube-scheduler (sf_packer_evaluate over every node, the pod's
   * memory included) instead of the raw score. Uncached.
   */
  bool extender_scores;
  /*
   * The starting cluster, or NULL: a kubectl List of ResourceSlices,
   * ResourceClaims and DeviceClasses (what bin/slicefit --snapshot reads,
   * loaded with sf_cluster_load_list). Its nodes, devices and allocated
   * claims are there before the first pod; the trace's nodes are added to
   * them. Borrowed; `snapshot_name` names it in errors.
   */
  const json_t *snapshot;
  const char *snapshot_name;
  /*
   * A cluster without the extender's node CPU, instead of the FGD simulator
   * (both false: what the extender does, docs/operators.md):
   * cpu_blind: the strategy's workload mix carries no CPU, so no node counts
   *   as short of CPU for a typical pod (an index without node CPU);
   *   CPU still filters, as kube-scheduler's NodeResourcesFit does.
   * cpu_only_least_allocated: pods without claims are placed by
   *   kube-scheduler 1.20's NodeResourcesLeastAllocated score, ties by
   *   `ties` (an extender that passes such pods through unscored, as with
   *   the policy's cpu_only_pods: pass).
   */
  bool cpu_blind;
  bool cpu_only_least_allocated;
  /*
   * fragmentation's learned mix: mix_window 0 learns the pods present (an
   * arriving pod joins, a failed or departed one leaves); W > 0 learns the
   * last W arrivals, failed ones included. mix_every K > 1 holds the mix
   * scoring reads and publishes it every K arrivals (sf_index_mix_hold).
   */
  size_t mix_window, mix_every;
  /*
   * Stop early (Alibaba traces, where pods never leave and a placed pod holds
   * exactly its request): when > 0, the run ends, with res->stopped set, once
   * its allocation at 100% arrived load can no longer reach this percentage.
   * What it did not reach stays NAN. For a search that needs only the runs
   * that can still rank.
   */
  double stop_below_100;
} sf_replay_opts_t;

#define SF_REPLAY_CURVE_STEP 1 /* percent of capacity between curve points */

typedef struct {
  char policy[32];
  uint64_t seed;
  double tune;
  uint32_t gpus;
  uint32_t nodes;
  int64_t gpu_milli; /* capacity */
  size_t pods_arrived, pods_failed, pods_departed;
  size_t gpu_pods_failed;
  double alloc_pct_at[SF_REPLAY_NTHRESH]; /* NAN when the load never got there */
  double alloc_pct_final, arrived_pct_final;
  double unallocated_pct_at_100;
  double frag_pct_at_100; /* FGD's fragmentation amount, % of all GPUs */
  /*
   * A floor under unallocated_pct_at_100 that no device choice on the same
   * nodes could go below: the GPUs holding a one-GPU pod with leftover
   * L < t can only take pods smaller than t, so at least (sum of those L)
   * - (sum of every pod smaller than t that arrived) stays free; the
   * largest over t in 1..500 milli, % of all GPUs. Alibaba traces only (NAN
   * for native ones).
   */
  double sliver_floor_pct_at_100;
  /*
   * Where unallocated_pct_at_100 sits, GPU by GPU (the three add up to it;
   * Alibaba traces only, NAN for native ones). A GPU's free share is
   * too_small when no one-GPU pod of the trace that may use its model asks
   * that little; starved when some such pod fits the GPU but none of them
   * fits its node's free CPU and memory; usable when one fits all three
   * (free GPU that only the arrival order left empty).
   */
  double free_too_small_pct_at_100, free_starved_pct_at_100, free_usable_pct_at_100;
  double decision_us_p50, decision_us_p99; /* per pod, with the replay's verdict cache */
  double node_eval_us; /* mean core time per node evaluated: x nodes = an uncached decision */
  /*
   * Nodes the core evaluated, and FIT verdicts kept without evaluating
   * them again when the learned mix moved because the drift bound showed
   * their key could not have moved (fragmentation, ties perm or first).
   */
  size_t nodes_evaluated, verdicts_kept;
  double wall_s;
  size_t tenants_at_100; /* GPU pods placed and present at 100% load (or at the end) */
  bool stopped;          /* ended early by stop_below_100 */
  /* Allocation % at arrived = 0, STEP, 2 STEP ... % (the curve for --svg). */
  double *curve;
  size_t ncurve;
} sf_replay_result_t;

void sf_replay_result_dispose(sf_replay_result_t *r);

/** True for a policy name the replay knows; *kind and *strategy get its meaning. */
bool sf_replay_policy_valid(const char *name, sf_replay_kind_t *kind, sf_strategy_t *strategy);
/** Every policy name, comma-separated (static). */
const char *sf_replay_policy_names(void);

/**
 * Replays the trace once. Returns 0, or a negative SF_E* with err filled
 * (an unknown policy, a trace the index refuses).
 */
int sf_replay_run(const sf_replay_trace_t *t, const sf_replay_opts_t *opts, sf_replay_result_t *res,
                  char *err, size_t errlen);

/* ---- reports ---- */

/** Median of n values (NANs ignored; NAN when none). `v` is reordered. */
double sf_replay_median(double *v, size_t n);

/** Writes one run as one line of JSON (jansson). */
void sf_replay_json_run(FILE *out, const sf_replay_result_t *r, double node_price);
/** Writes the medians of `n` runs of one policy as one line of JSON. */
void sf_replay_json_medians(FILE *out, const sf_replay_result_t *runs, size_t n, double node_price);
/** Writes the readable table: one row per policy (medians over its runs). */
void sf_replay_table(FILE *out, const sf_replay_result_t *const *runs, const size_t *nruns,
                     size_t npolicies, double node_price);
/** Writes an SVG of allocation vs arrived load (median over seeds) per policy. 0 or SF_EINVAL. */
int sf_replay_svg(FILE *out, const sf_replay_result_t *const *runs, const size_t *nruns,
                  size_t npolicies, const char *title);

#endif
