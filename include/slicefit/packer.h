/*
 * slicefit packer: feasibility (filter) and scoring (prioritize) of nodes
 * for one pod's demand, against the index, under a policy.
 *
 * A node is FIT when every request of every claim can be satisfied at once
 * on it (selectors, counts, capacities with DRA's rounding, counters,
 * taints, constraints, islands, existing allocations, and the policy's
 * platform rules); NO with a readable reason when it provably cannot; and
 * UNSURE when the core cannot decide (a selector answered "unknown", or the
 * bounded search ran out of budget): the extender passes UNSURE nodes,
 * because kube-scheduler's own DRA plugin stays the judge.
 *
 * The packer holds scratch memory reused across calls; one per thread.
 * Pure: no I/O, no clock; `seed` arguments are the only randomness.
 */
#ifndef SLICEFIT_PACKER_H
#define SLICEFIT_PACKER_H

#include "slicefit/demand.h"
#include "slicefit/policy.h"

typedef enum { SF_FIT_NO = 0, SF_FIT_YES = 1, SF_FIT_UNSURE = 2 } sf_fit_t;

#define SF_REASON_MAX 160
#define SF_SCORE_MAX 10  /* kube-scheduler's MaxExtenderPriority */
#define SF_DRIFT_TERMS 3 /* sf_mix_drift_t (slicefit/mix.h) */

/*
 * Why a node does not fit (NO) or was left to the DRA plugin (UNSURE): the
 * kind of sentence its reason is made from. Metrics count verdicts by it
 * (sf_reason_code_name), so a sentence's wording can change freely.
 */
typedef enum {
  SF_REASON_NONE = 0,       /* FIT */
  SF_REASON_NO_DEVICES,     /* the node has no DRA devices */
  SF_REASON_NO_MATCH,       /* no device matches the request's class and selectors */
  SF_REASON_TAINT,          /* the matching devices carry a taint not tolerated */
  SF_REASON_NO_CAPACITY,    /* no matching device offers the capacity asked for */
  SF_REASON_CAPACITY_SHORT, /* memory (or another capacity) short on every matching device */
  SF_REASON_SHARERS,        /* policy max_sharers reached */
  SF_REASON_COUNTERS,       /* partitionable devices' shared counters used up */
  SF_REASON_DEVICE_COUNT,   /* fewer free matching devices than the request's count */
  SF_REASON_ISLAND,         /* no NVLink island with enough free GPUs */
  SF_REASON_CLAIM_LIMIT,    /* a claim past DRA's limit of results per claim */
  SF_REASON_SELECTOR,       /* UNSURE: a selector or attribute slicefit cannot evaluate */
  SF_REASON_CONSTRAINT,     /* a matchAttribute or distinctAttribute constraint */
  SF_REASON_TOGETHER,       /* the requests fit alone but not all together */
  SF_REASON_SEARCH_BUDGET,  /* UNSURE: the placement search passed its budget */
  SF_REASON_NODE_CPU,       /* the node's free CPU */
  SF_REASON_NODE_MEMORY,    /* the node's free memory */
  SF_REASON_COUNT
} sf_reason_code_t;

/** The code's stable snake_case name (a metric label); "unknown" out of range. O(1). */
const char *sf_reason_code_name(sf_reason_code_t code);

typedef struct {
  sf_fit_t fit;
  sf_reason_code_t code; /* NO and UNSURE: the kind of reason; FIT: SF_REASON_NONE */
  double raw;            /* strategy's score of the placement, higher is better (FIT only) */
  int score; /* 0..SF_SCORE_MAX over the evaluated FIT nodes: the best raw score (and only it) gets
                 SF_SCORE_MAX, the others min-max over 0..SF_SCORE_MAX-1 */
  /*
   * fgd and fragmentation, FIT: the least cost of the placements scored on
   * the node, in milli-GPUs (raw's integer part is FGD's step of it),
   * and how far it can move while the node does not change but the mix it
   * is scored with does: by at most the sum over k of sens[k] times how far
   * term k of sf_mix_drift moved since, plus sens[SF_DRIFT_TERMS] times
   * sf_mix_joined of the epoch it was scored in; or, measured directly
   * with sf_mix_since(moves then), sens[0] x out[0] + sens[1] x out[1] +
   * sens[SF_DRIFT_TERMS] x out[2] plus sens[2] times the scarcity term's
   * move. Only with sf_packer_set_bounds on; 0 otherwise. (Next to fit,
   * raw and score: one cache line for what a caller reads per node.)
   */
  double cost;
  double sens[SF_DRIFT_TERMS + 1];
  char reason[SF_REASON_MAX]; /* NO and UNSURE: one sentence */
} sf_verdict_t;

/* One device chosen for one request. */
typedef struct {
  uint32_t claim, req;
  int32_t alt;    /* firstAvailable alternative, or -1 */
  sf_pick_t pick; /* consumed points into the packer's scratch */
} sf_result_t;

typedef struct {
  sf_node_id node;
  size_t n;
  const sf_result_t *results; /* borrowed from the packer until its next call */
} sf_assignment_t;

typedef struct sf_packer sf_packer_t;

/*
 * Adds the demand to the index's learned workload mix as present, before
 * scoring (take it back with sf_mix_learn(..., -1) when it leaves or is
 * dropped; slicefit/mix.h).
 */
#define SF_EVAL_LEARN 1u
/*
 * The index's node CPU and memory lag the caller's judge of them (the
 * daemon: kube-scheduler's NodeResourcesFit has passed every node it sends,
 * counting the pods it has just placed and not yet bound). A node short of
 * the pod's CPU or memory is then judged on its devices alone: NO with the
 * devices' reason when they do not fit, else UNSURE (passed, unscored). The
 * replay, whose index is the truth, leaves it off.
 */
#define SF_EVAL_HOST_LAGS 2u

sf_packer_t *sf_packer_create(void);
void sf_packer_destroy(sf_packer_t *p);

/**
 * Filters and scores `nodes` (borrowed, n entries) for `demand`, writing
 * out[i] for nodes[i]. The index is not changed except for its selector
 * cache and, with SF_EVAL_LEARN, its learned mix. A demand with no claims
 * and no CPU/memory fits every node with score 0, at O(n) cost. A demand
 * with no claims but CPU or memory (a CPU-only pod) under fgd or
 * fragmentation can only add fragmentation: every node where it adds none
 * (FGD's step 50 or above) gets SF_SCORE_MAX, and the others at most
 * SF_SCORE_MAX - 1.
 * Cost: O(n × devices per node) plus the bounded search on nodes where the
 * demand has several requests or constraints.
 */
int sf_packer_evaluate(sf_packer_t *p, sf_index_t *idx, const sf_policy_t *pol,
                       const sf_demand_t *demand, const sf_node_id *nodes, size_t n, unsigned flags,
                       sf_verdict_t *out);

/**
 * Finds the placement the policy chooses on one node (the device DRA would
 * take under device_choice first-fit, the packer's choice otherwise).
 * Returns SF_FIT_* and fills *out (FIT only) and *verdict (may be NULL).
 */
sf_fit_t sf_packer_place(sf_packer_t *p, sf_index_t *idx, const sf_policy_t *pol,
                         const sf_demand_t *demand, sf_node_id node, sf_assignment_t *out,
                         sf_verdict_t *verdict);

/**
 * Records the last FIT assignment of sf_packer_place (and the demand's CPU
 * and memory) as one allocation of `holder`. Errors as sf_index_alloc_add.
 */
int sf_packer_commit(sf_packer_t *p, sf_index_t *idx, const sf_demand_t *demand, const char *holder,
                     sf_alloc_id *out);

/**
 * FGD's fragmentation of one node against a target mix (policy's fgd_mix
 * when nmix > 0, else the index's learned mix), in milli-GPUs. Cost:
 * O(shapes × devices of the node).
 */
double sf_packer_node_frag(sf_packer_t *p, sf_index_t *idx, const sf_policy_t *pol, sf_node_id node);

/**
 * The node's starved free share, in milli-devices: the free share of each
 * device that a one-device shape of the same mix fits, while the node's
 * free CPU feeds none of the shapes that fit it (0 when the node's CPU is
 * not tracked). Cost: O(shapes × devices of the node).
 */
double sf_packer_node_starved(sf_packer_t *p, sf_index_t *idx, const sf_policy_t *pol,
                              sf_node_id node);

/*
 * The interface of a caller that keeps verdicts across calls and must know
 * which of them a move of the learned mix cannot have changed: the bounds
 * (sf_packer_set_bounds, sf_verdict_t.cost and .sens), FGD's steps
 * (sf_packer_step_cost, sf_packer_step_margin) and the mix's drift
 * (slicefit/mix.h: sf_mix_drift, sf_mix_since, sf_mix_joined). The replay's
 * verdict cache (bench/replay/replay_cache.c) is that caller; the daemon
 * asks every node again and uses none of it.
 */

/**
 * Turns on (off by default) the verdicts' cost and sens, the bound a
 * caller that keeps verdicts across calls uses to know which of them a
 * move of the learned mix cannot have changed (the replay does; the
 * extender asks every node again), and the last 4,096 mixes for
 * sf_mix_since (about 3 MiB). On, about 6% more instructions per evaluate
 * call; fit, raw and score are the same either way.
 */
void sf_packer_set_bounds(sf_packer_t *p, bool on);

/**
 * The largest cost whose step is k or more: +inf for k <= 0, -inf past 99
 * (FGD's formula decides within 1e-6 of it). O(1).
 */
double sf_packer_step_cost(const sf_packer_t *p, int k);

/**
 * How far a cost can move either way and keep its step (0 on or next to a
 * boundary). O(1).
 */
double sf_packer_step_margin(const sf_packer_t *p, double cost);

/**
 * Turns the verdicts' reasons on (the default) or off (left empty, for
 * callers that read only fit and score, such as the replay: formatting a
 * sentence per failing node was a tenth of a replay's time). Fit, scores
 * and placements are the same either way.
 */
void sf_packer_set_reasons(sf_packer_t *p, bool on);

#endif
