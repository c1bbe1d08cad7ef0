/*
 * A slow, obviously correct reference for the packer, kept in test/ only:
 * feasibility by trying every set of devices, fragmentation and scores by
 * their definitions, all through the index's public API. The property tests
 * compare the packer's one kernel (and its fast path and memo) with it.
 */
#ifndef SF_TEST_REFERENCE_H
#define SF_TEST_REFERENCE_H

#include "cluster.h"
#include "slicefit/policy.h"

/* One claim of one request as the reference reads it. */
typedef struct {
  uint32_t count; /* devices */
  sf_milli_t mem; /* memory per device; 0: whole devices */
  bool island;    /* all in one island */
  int64_t cpu_milli;
  sf_milli_t min, step; /* the nodes' validRange rounding of mem (0: none) */
} ref_claim_t;

/* Does the claim fit the node: is there a set of devices that serves it? */
bool ref_fits(const sf_index_t *idx, const sf_policy_t *pol, const ref_claim_t *c, sf_node_id node);

/*
 * FGD's F(node) against the policy's fgd_mix (its weights in steps of
 * 1/65536), after the picks (devices, memory taken of each, 0: whole) and
 * the pod's CPU; npicks 0 for the node as it is. Under strategy
 * fragmentation, with its weight_unfed term (slicefit/policy.h).
 */
double ref_frag(const sf_index_t *idx, const sf_policy_t *pol, sf_node_id node,
                const sf_dev_id *picks, const sf_milli_t *use, size_t npicks, int64_t cpu_milli);

/* binpack's raw score of the picks: GPU utilisation after, plus a tenth of how used the picked end up. */
double ref_binpack(const sf_index_t *idx, sf_node_id node, const sf_dev_id *picks,
                   const sf_milli_t *use, size_t npicks);

/* FGD's integer node score of the picks: 100 x sigmoid(-dF/1000), truncated. */
double ref_fgd(const sf_index_t *idx, const sf_policy_t *pol, sf_node_id node, const sf_dev_id *picks,
               const sf_milli_t *use, size_t npicks, int64_t cpu_milli);

/* The plan of the shares for devices of one memory capacity, as the packer priced them (pk_plan.h). */
typedef struct {
  sf_milli_t cap;
  size_t n;
  int32_t size[16]; /* per-mille of cap */
  double r[16];     /* each size's worth, per-mille */
} ref_plan_t;

/*
 * The plan's loss of the picks, by its definition: the worth of the node's
 * part-used GPUs before less after, less what the shares taken are worth.
 * K(f), the most worth a set of the plan's sizes within f holds (found by
 * enumerating them), is a GPU's worth while its node's free CPU feeds a
 * share of pol's mix that fits f (every shape of one or more devices that
 * takes part of a device, its share rounded up in per-mille), else 0; a
 * GPU a pick takes part of (fb free before, fa after) is fed before, by
 * the pod, and its share taken is worth K(fb - fa). Idle GPUs not picked
 * count nothing. *strand (may be NULL): the part of the loss that is worth
 * stranded, K(fa) of a pick or K(f) of another GPU fed before and no
 * longer (policy weight_strand); the rest is the plan's loss proper
 * (weight_plan).
 */
double ref_plan_loss(const sf_index_t *idx, const sf_policy_t *pol, sf_node_id node,
                     const sf_dev_id *picks, const sf_milli_t *use, size_t npicks, int64_t cpu_milli,
                     const ref_plan_t *plans, size_t nplans, double *strand);

/* FGD's integer step of a cost in milli-GPUs: 100 x sigmoid(-cost/1000), truncated. */
double ref_step(double cost);

#endif
