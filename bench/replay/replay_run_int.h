/*
 * The replay run's state, shared by its files: replay_build.c (the trace on
 * an index, demands), replay_baseline.c (policies and the paper's baselines),
 * replay_cache.c (pod shapes, the verdict cache, ties, the learned mix),
 * replay_run.c (scheduling, measurements, the loop). Private to bench/replay/.
 */
#ifndef SF_REPLAY_RUN_INT_H
#define SF_REPLAY_RUN_INT_H

#include "slicefit/mix.h"
#include "slicefit/cluster.h"
#include "slicefit/packer.h"
#include "slicefit/replay.h"

#define MAX_CLAIMS 16
#define JOINED_SLOTS 256 /* drift epochs whose sf_mix_joined a pod remembers */
#define SINCE_SLOTS 4096 /* past mixes whose sf_mix_since a pod remembers */
#define MAX_REQS 16
#define SPEC_CACHE_BASE 0x5f5e0000u /* selector cache keys: distinct from the CEL layer's ids */

/*
 * One node's verdict for one pod shape, valid while the node's stamp is
 * unchanged. A verdict depends only on the node's state and on the pod's CPU
 * and claims (the policy and the typical pods are fixed for a run); memory
 * is left out of the shape and checked against mem_free instead. A learned
 * mix moves the scores, not whether the pod fits: a FIT verdict also needs
 * the mix it was scored with, or a bound on how far its cost moved since
 * (sf_verdict_t.cost and .sens against sf_mix_drift); a NO verdict stays.
 */
typedef struct {
  uint32_t stamp;  /* the node's stamp + 1 when filled; 0 = empty */
  uint32_t mixver; /* the learned mix it was scored with (FIT) */
  uint32_t epoch;  /* FIT, under a learned mix: the drift's epoch then (low bits) */
  bool fit;
  double key;   /* what the choice compares, higher wins */
  double until; /* the drift's total up to which the key holds in that epoch, for sure */
} vcache_t;

/* The rest of a FIT verdict under a learned mix, for the finer bound (sf__replay_evaluate). */
typedef struct {
  double cost, sens[SF_DRIFT_TERMS + 1], base; /* base: Σ sens x drift when scored */
  double margin;                               /* how far the cost can move and keep its step */
  double scarcity;                             /* the drift's scarcity term when scored */
  uint64_t epoch, moves;                       /* the drift's epoch and moves when scored */
} vbound_t;

typedef struct {
  sf_str_id ids[SF_POLICY_MODELS_MAX * 4];
  size_t n;
} specsel_t;

typedef struct {
  const sf_replay_trace_t *t;
  const sf_replay_opts_t *o;
  sf_replay_kind_t kind;
  sf_cluster_t *cluster; /* --snapshot: owns idx */
  sf_index_t *idx;
  sf_packer_t *pk;
  sf_policy_t pol;     /* what the core runs (binpack + packer for baselines) */
  sf_policy_t fragpol; /* the typical pods, for the fragmentation metric */
  sf_node_id *nodes;   /* sorted by name */
  size_t nnodes;
  int32_t *pos_of; /* node id -> position in nodes[] */
  specsel_t *specsel;
  sf_selector_t *sels;                     /* one per model set */
  sf_rng_t rng;                            /* baselines' own randomness */
  uint32_t (*aff)[SF_REPLAY_MAX_GPUS + 1]; /* clustering: GPU pods on a node by affinity tag */
  uint32_t *naff;
  /* The verdict cache (see sf__replay_evaluate()): per node position, per pod shape. */
  uint32_t *stamp;    /* bumped whenever an allocation lands on or leaves the node */
  int64_t *mem_free;  /* bytes; INT64_MAX when the node does not track memory */
  uint32_t *shape_of; /* trace pod -> shape id */
  size_t nshapes;
  bool cached;  /* false: one row, re-evaluated for every pod */
  vcache_t *vc; /* nshapes (or 1) rows of nnodes */
  vbound_t *vb; /* the same rows, under a learned mix that moves and the bound */
  sf_node_id *stale_ids;
  uint32_t *stale_pos;
  sf_verdict_t *stale_v;
  bool bounded;     /* verdicts stay while a bound shows the mix's drift left their key (lazy) */
  uint32_t *unsure; /* per node position: the pod serial whose key the drift may have moved */
  double *low;      /* and the least cost it may have now */
  uint32_t serial;  /* of the pod being evaluated */
  size_t kept;      /* FIT verdicts the bound kept, for --json */
  double *joined;   /* per drift epoch (mod JOINED_SLOTS): sf_mix_joined, as of the pod joined_at */
  uint64_t *joined_epoch;
  uint32_t *joined_at;
  double (*since)[3]; /* per mix (drift moves, mod SINCE_SLOTS): sf_mix_since, as of since_at */
  uint64_t *since_moves;
  uint32_t *since_at;
  bool *since_ok;
  uint32_t *rank;              /* per node position: the tie order (rank_nodes) */
  bool learn;                  /* fragmentation: the index learns the mix from every pod */
  uint64_t mixhash;            /* the learned mix the cached verdicts were scored with */
  uint32_t mixver;             /* bumped when it moves */
  const sf_replay_pod_t **win; /* --mix-window: the last mix_window arrivals, a ring */
  size_t narrived;
  int64_t eval_ns; /* core time in sf_packer_evaluate, and nodes it evaluated */
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

/* replay_run.c */
int sf__replay_open(run_t *r, const sf_replay_trace_t *t, const sf_replay_opts_t *opts,
                    sf_replay_result_t *res, char *err, size_t errlen);
void sf__replay_close(run_t *r);
/* Schedules one pod (holder names its allocation); returns the allocation or -1. */
sf_alloc_id sf__replay_schedule(run_t *r, const sf_replay_pod_t *p, const char *holder);
void sf__replay_unschedule(run_t *r, const sf_replay_pod_t *p, sf_alloc_id a);
/* GPU milli-units an allocation holds (its share of whole GPUs). */
int64_t sf__replay_alloc_share(const run_t *r, sf_alloc_id a);

/* replay_build.c */
sf_match_t sf__replay_match_model(void *ctx, const sf_index_t *idx, sf_dev_id dev);
int64_t sf__replay_now_ns(void);
int sf__replay_open_index(run_t *r, char *err, size_t errlen);
void sf__replay_count_gpus(run_t *r);
int sf__replay_build_index(run_t *r, char *err, size_t errlen);
void sf__replay_build_demand(run_t *r, const sf_replay_pod_t *p, sf_demand_t *d);

/* replay_baseline.c */
uint32_t sf__replay_affinity_tag(const sf_replay_pod_t *p);
double sf__replay_node_key(const run_t *r, size_t pos, const sf_replay_pod_t *p, double raw);
double sf__replay_kube_score(const run_t *r, size_t pos, const sf_replay_pod_t *p);

/* replay_cache.c */
void sf__replay_touch(run_t *r, size_t pos);
void sf__replay_churn(run_t *r, bool departed);
void sf__replay_cache_init(run_t *r);
void sf__replay_learn_arrival(run_t *r, const sf_replay_pod_t *p);
void sf__replay_learn_leave(run_t *r, const sf_replay_pod_t *p);
const vcache_t *sf__replay_evaluate(run_t *r, const sf_replay_pod_t *p, sf_demand_t *d);

#endif
