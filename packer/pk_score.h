/*
 * The packer's scoring: the one kernel that scores a placement on a node
 * view under each strategy, against the call's mix (pk_mix.h). Private to
 * packer/.
 *
 * Fragmentation (FGD, ATC'23) of a node against a mix M of shapes:
 * F(m) = Σ free share of every GPU if the node cannot host m (or m asks for
 * no device), else Σ free share of the GPUs too small for m; F(M) = Σ w_m
 * F(m). Strategy fragmentation adds, when the node can host m, the idle GPUs
 * its free CPU cannot feed: of the idle GPUs that hold one pod of m and no
 * more (whole-GPU shapes, shares over half a GPU), those beyond what
 * free CPU / m's CPU pods of m take (a fraction counts), times
 * weight_unfed. FGD counts
 * them only once not one pod fits; that is how a node strands its GPUs.
 * The per-shape sums count them in F; the cost takes their part apart, as
 * a row of its own (score.c, TERMS).
 * Shares are per-mille of the device's primary capacity. Weights are
 * integers in steps of 1/WEIGHT_ONE and F is summed in int64, so F and its
 * differences are exact: the same cluster gives bit-identical scores
 * whatever computed them.
 */
#ifndef SF_PACKER_PK_SCORE_H
#define SF_PACKER_PK_SCORE_H

#include "pk_mix.h"
#include "pk_view.h"

/* One device of a placement and what it takes of the device's primary capacity. */
typedef struct {
  uint32_t k;
  sf_milli_t use;
} pick_t;

/* The devices of a placement, distinct, with their state after it (pk_plan.h names it). */
typedef struct pk_after {
  const uint32_t *k;
  const sf_milli_t *fa;
  const int32_t *fp;
  size_t n;
} after_t;

/* FGD's steps are between -4595 and 4595 milli-GPUs and at least 40 wide: buckets of 8 find them. */
#define STEP_SPAN 4600.0
#define STEP_BUCKET 8.0
#define STEP_BUCKETS 1150

typedef struct { /* scratch */
  int32_t *icnt;
  size_t icntcap; /* per island */
  uint32_t *dk;
  size_t dkcap; /* distinct devices of a placement */
  sf_milli_t *afa;
  int32_t *afp;
  size_t acap;
  double step[101]; /* FGD's score is >= j exactly when cost <= step[j] (sf__score_init) */
  uint8_t bucket[STEP_BUCKETS]; /* the step at the low end of each bucket of costs */
  /* the node being scored (sf__score_begin): least cost, range of F's changes, scarce share */
  double vcost, vlo, vhi, vtaken, vtotal;
  bool bounds; /* sf_packer_set_bounds: keep them, for the verdicts' cost and sens */
  /* the call's weight_unfed in 1/UNFED_ONE: 0 but under fragmentation (sf__score_policy) */
  int64_t unfed;
} pk_score_t;

#define UNFED_ONE 1024

/* A term of strategy fragmentation's cost (score.c, TERMS): its policy key and its weight's field. */
typedef struct {
  const char *key;
  size_t weight; /* offsetof the weight (a double) in sf_policy_t */
} sf__term_t;

/* The terms, in the order the cost sums them (static data; *n gets the count). */
const sf__term_t *sf__score_terms(size_t *n);

/* The call's policy is p->pol: what the kernel keeps of it. */
void sf__score_policy(sf_packer_t *p);

/* F(before) of the node against the call's mix; caches its per-shape statistics. */
double sf__score_frag(sf_packer_t *p, hnode_t *h);
/* sf_packer_node_starved of node h, under the mix prepared. */
int64_t sf__score_starved(const sf_packer_t *p, const hnode_t *h);
/*
 * The strategy's raw score (higher is better) of placing picks[0..n) on the
 * node: devices may repeat (several requests on one shared device).
 */
double sf__score(sf_packer_t *p, hnode_t *h, const pick_t *picks, size_t n);
/*
 * A raw score sf__score gave another node in the same state, as it gives it
 * to the node being scored (p->node): the same step, this node's order.
 */
double sf__score_renode(const sf_packer_t *p, double raw);
void sf__score_init(pk_score_t *s);
/*
 * FGD's integer node score of a cost in milli-GPUs, 100 x sigmoid(-cost /
 * 1000) truncated: the integer part of the raw score of fgd and
 * fragmentation. Non-increasing in cost. O(1).
 */
int sf__score_step(const pk_score_t *s, double cost);
/* A node's scoring begins: forget the last node's costs. */
void sf__score_begin(pk_score_t *s);
/* The node's least cost and how far its placements' costs can move with the mix (sf_verdict_t);
 * with bounds on. */
void sf__score_sens(const sf_packer_t *p, double *cost, double sens[SF_DRIFT_TERMS + 1]);
void sf__score_dispose(pk_score_t *s);

#endif
