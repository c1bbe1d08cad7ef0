/*
 * slicefit mix: the workload mix the fragmentation strategies weigh a node's
 * fragmentation by, learned from the demands present.
 *
 * The learned mix lives in the index: the multiset of the present demands'
 * shapes (one per request: amount of the policy's capacity per device, 0 for
 * whole devices; device count; one island or not; the models it can use,
 * none when all; CPU on the first). It depends on which demands are present,
 * not on their order or history, so replicas and a restarted daemon learn
 * the same mix from the same cluster. A packer scores with its weights in
 * steps of 1/256, and drops what it read of it when the index's mix moves
 * or the index is another one.
 *
 * Pure, in the core (packer/mix.c); the index and packer are borrowed.
 */
#ifndef SLICEFIT_MIX_H
#define SLICEFIT_MIX_H

#include "slicefit/packer.h"

/**
 * Adds (sign +1) or takes back (-1) the demand's shapes in the index's
 * learned mix (a pod without claims counts its CPU). The packer prepares
 * the demand as an evaluate would. SF_EINVAL for a bad argument. Cost: as
 * evaluating no node.
 */
int sf_mix_learn(sf_packer_t *p, sf_index_t *idx, const sf_policy_t *pol, const sf_demand_t *demand,
                 int sign);

/**
 * Tells the index that a pod was bound (departed false) or that a bound
 * pod left (true). Of the last 256 such events, the fleet fills when fewer
 * than 32 were departures, and churns otherwise, or while fewer than 256
 * were told (a live cluster churns); weight_fill weighs only while it
 * churns (a fleet that only fills is FGD's, where the fragmentation measure
 * alone decides). Bindings and departures, not the mix's learning: a pod
 * that never bound is no departure. The answer depends on the last 256
 * events alone, and a change moves the mix's hash.
 */
void sf_mix_churn(sf_index_t *idx, bool departed);
/** Does the fleet churn now (sf_mix_churn)? */
bool sf_mix_churning(const sf_index_t *idx);

/**
 * The hash of the mix an evaluate of `demand` would score with now (the
 * policy's, the learned one, or the demand's own); a caller that caches
 * verdicts drops them when it moves.
 */
uint64_t sf_mix_hash(sf_packer_t *p, sf_index_t *idx, const sf_policy_t *pol,
                     const sf_demand_t *demand);

/**
 * Holds (on) the learned mix that scoring reads at its present state while
 * observations go on, until sf_mix_publish moves it to the observed
 * state; off (the default) scores every observation at once. Every node's
 * cached fragmentation, and a caller's verdicts keyed on the mix hash, stay
 * valid while the mix is held: a caller that publishes every K arrivals
 * evaluates nodes again K times less often for a mix that lags by at most
 * K arrivals (--mix-every in docs/replay.md, "Policies").
 */
void sf_mix_hold(sf_index_t *idx, bool on);
/** Makes the observed learned mix the one scoring reads. O(shapes). */
void sf_mix_publish(sf_index_t *idx);

/*
 * How far the mix a packer scores with has moved since the packer was
 * created, summed over every move (so that the distance between two
 * readings bounds how far the mix moved between them): term 0, the
 * weights (the sum of each shape's weight change, 1 = the whole mix);
 * term 1, the weights' total (their rounding: sums of |change of the sum|);
 * term 2, the models' scarcity (sums of the largest change). The epoch
 * moves whenever the set of shapes changes: sf_mix_joined weighs the
 * shapes that joined since an epoch. A caller that keeps verdicts
 * (sf_verdict_t.cost and .sens) knows which of them a move of the mix
 * cannot change: an interface for such a caller (the replay's verdict
 * cache, bench/replay/replay_cache.c; slicefit/packer.h), which the daemon
 * does not use.
 */
typedef struct {
  uint64_t epoch;
  uint64_t moves; /* how many times the mix moved: names the mix now (sf_mix_since) */
  double d[SF_DRIFT_TERMS];
} sf_mix_drift_t;

/** The packer's mix drift as of its last call (sf_mix_hash included); followed with bounds on. */
void sf_mix_drift(const sf_packer_t *p, sf_mix_drift_t *out);

/**
 * The weight of the shapes in the packer's mix now that were not in it at
 * `epoch` (1 = the whole mix), or infinity when that epoch is too old to
 * tell (the last 1,024 are kept) or bounds are off. O(shapes).
 */
double sf_mix_joined(const sf_packer_t *p, uint64_t epoch);

/**
 * With bounds on (sf_packer_set_bounds), how far the mix now is from the
 * mix as it was after `moves` moves, measured directly rather than summed
 * over the moves between (a weight that went up and back down has not
 * moved): out[0], the sum of the weight changes of the shapes it had then
 * (a shape since gone counts its whole weight); out[1], the change of
 * those shapes' total weight; out[2], the weight of the shapes it did not
 * have. 1 = the whole mix. False when that mix is no longer kept (the
 * last 4,096 are). O(shapes).
 */
bool sf_mix_since(const sf_packer_t *p, uint64_t moves, double out[3]);

/** Forgets the learned mix (a relist learns it again). */
void sf_mix_clear(sf_index_t *idx);

/** Number of shapes in the learned mix (for metrics and tests). */
size_t sf_mix_size(const sf_index_t *idx);

/** Learned shape i with its weight normalised, as a policy shape with model names; SF_ENOENT past the end. */
int sf_mix_shape(const sf_index_t *idx, size_t i, sf_shape_t *out);

#endif
