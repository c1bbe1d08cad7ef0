/*
 * slicefit defrag: the fewest evictions that let a waiting demand fit.
 *
 * DRA allocations do not move in place: a pod is evicted, and its
 * replacement is scheduled again. Given the index, the pods that hold
 * allocations (the caller knows pods; the index knows only holders) and one
 * waiting demand, the planner chooses a node for the demand, the pods to
 * evict there, and for each evicted pod a node where its claims fit again
 * once the demand holds its place: a plan never strands anyone. It
 * minimises, in order, the pods evicted, the GPU-seconds of work lost (age
 * x GPUs asked) and the packing cost of the re-placements under the policy
 * (the negated sum of their raw scores).
 *
 * A pod is never chosen when it is bare (no controller recreates it), in a
 * namespace of the policy's defrag_protect_namespaces, asks more GPUs than
 * the demand, or holds allocations on more than one node. An evicted pod
 * asks again, on another node, for what it holds now: per device one of the
 * same model, exclusive or shared as it is, with the same consumed
 * capacities, the devices of one island again in one island, and its CPU
 * and memory.
 *
 * Limits come from the policy: defrag_max_evictions pods per plan and
 * defrag_budget node evaluations per plan (the planner's time, counted in
 * work, since the core reads no clock).
 *
 * Pure: no I/O, no clock. The index is changed during the call (allocations
 * set aside and restored, trial placements added and removed) and is left
 * exactly as it was; alloc ids are kept.
 */
#ifndef SLICEFIT_DEFRAG_H
#define SLICEFIT_DEFRAG_H

#include "slicefit/packer.h"

#define SF_DEFRAG_WHY_MAX 320

/* A pod that holds allocations; everything borrowed for the call. */
typedef struct {
  const char *ns, *name;
  bool controller;            /* owned by a controller that recreates it (not a bare pod) */
  int64_t age_s;              /* how long it has run */
  int64_t gpu_milli;          /* GPUs it asks, in milli-GPUs */
  const char *const *holders; /* its allocations' holders in the index (its claims) */
  size_t nholders;
} sf_defrag_pod_t;

typedef struct {
  const sf_demand_t *demand; /* the waiting claims (borrowed) */
  int64_t gpu_milli;         /* GPUs the demand asks, in milli-GPUs */
  const sf_defrag_pod_t *pods;
  size_t npods;
} sf_defrag_input_t;

typedef enum {
  SF_DEFRAG_FOUND = 0, /* a plan: node, moves */
  SF_DEFRAG_FITS,      /* the demand fits now, on node, without evictions */
  SF_DEFRAG_NEVER,     /* fits on no node even with every allocation there gone */
  SF_DEFRAG_NONE       /* no plan within the limits (why says which) */
} sf_defrag_outcome_t;

typedef struct {
  size_t pod;    /* index into the input's pods */
  sf_node_id to; /* where its claims fit again */
} sf_defrag_move_t;

typedef struct {
  sf_defrag_outcome_t outcome;
  sf_node_id node; /* FOUND, FITS; else -1 */
  sf_defrag_move_t moves[SF_DEFRAG_EVICT_MAX];
  size_t nmoves;
  int64_t gpu_s_lost;          /* sum over the evicted pods of age x GPUs */
  double cost;                 /* packing cost of the re-placements (lower is better) */
  uint64_t work;               /* node evaluations spent */
  bool budget_hit;             /* the budget ran out: the plan may not be the least */
  char why[SF_DEFRAG_WHY_MAX]; /* one sentence, every outcome */
} sf_defrag_plan_t;

/**
 * Plans for in->demand. Returns 0 with *out filled (every outcome is an
 * answer), SF_EINVAL for a NULL demand. Cost: one evaluation of every node;
 * when one eviction suffices, a few hundred pod lookups and one-node
 * evaluations in ascending GPU-seconds, and the re-placement's evaluation
 * of the nodes with a device of its kind; else a lookup of every pod, one
 * evaluation of each node with its pods that may go set aside, then
 * subsets of those pods by size, each a one-node evaluation: at most
 * defrag_budget node evaluations past the passes that answer whether any
 * plan can exist. The plan does not depend on which pass finds it.
 */
int sf_defrag_plan(sf_packer_t *p, sf_index_t *idx, const sf_policy_t *pol,
                   const sf_defrag_input_t *in, sf_defrag_plan_t *out);

/** Is `ns` among the comma-separated namespaces of defrag_protect_namespaces? */
bool sf_defrag_protected(const sf_policy_t *pol, const char *ns);

/** "found", "fits", "never" or "none". */
const char *sf_defrag_outcome_name(sf_defrag_outcome_t o);

#endif
