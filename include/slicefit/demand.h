/*
 * slicefit demand: what a pod asks of a node, in the core's terms.
 *
 * A demand is the pod's unallocated claims (each with requests and
 * constraints, shaped like DRA's ResourceClaimSpec) plus the pod's CPU and
 * memory (the replay checks those; the extender leaves them 0). All of it is
 * borrowed by the core for the duration of one call.
 *
 * Selectors are predicate callbacks, so the CEL evaluator plugs in from
 * outside the core. A selector with a nonzero cache_key is assumed to depend
 * only on the device (not on allocations): the index caches its answer per
 * device until the device changes. Two selectors with the same cache_key must
 * be the same predicate (the CEL layer uses the compiled expression's id).
 */
#ifndef SLICEFIT_DEMAND_H
#define SLICEFIT_DEMAND_H

#include <stdbool.h>
#include "slicefit/index.h"

typedef enum { SF_MATCH_NO = 0, SF_MATCH_YES = 1, SF_MATCH_UNKNOWN = 2 } sf_match_t;

/** Decides whether `dev` satisfies a selector; must not mutate the index. */
typedef sf_match_t (*sf_match_fn)(void *ctx, const sf_index_t *idx, sf_dev_id dev);

typedef struct {
  sf_match_fn fn;
  void *ctx;          /* borrowed */
  uint64_t cache_key; /* 0: never cached */
} sf_selector_t;

typedef struct {
  const char *key; /* NULL or "" with exists: tolerates every key */
  const char *value;
  bool exists;     /* operator Exists (else Equal) */
  bool any_effect; /* effect empty: every effect */
  sf_taint_effect_t effect;
} sf_toleration_t;

typedef struct {
  const char *name; /* fully qualified capacity name */
  sf_milli_t value;
} sf_cap_request_t;

typedef struct sf_request {
  const char *name;
  const sf_selector_t *selectors;
  size_t nselectors; /* class's and request's; all must match */
  bool all;          /* allocationMode All: every matching device of the node */
  uint32_t count;    /* ExactCount (>= 1) */
  const sf_cap_request_t *caps;
  size_t ncaps;
  const sf_toleration_t *tols;
  size_t ntols;
  /* firstAvailable: alternatives tried in order; when nalts > 0 the fields above are unused. */
  const struct sf_request *alts;
  size_t nalts;
  bool admin; /* adminAccess: devices others hold stay available (taints still apply),
                           and the devices it takes are not held by the pod's other claims */
} sf_request_t;

typedef enum {
  SF_CONSTRAINT_MATCH = 1, /* matchAttribute: all devices have the same value */
  SF_CONSTRAINT_DISTINCT,  /* distinctAttribute: pairwise different values */
  SF_CONSTRAINT_ISLAND     /* all devices in one NVLink island (slicefit's own rule) */
} sf_constraint_kind_t;

/* A member of a constraint: request index, and alternative index or -1 for "whichever". */
typedef struct {
  uint32_t req;
  int32_t alt;
} sf_ref_t;

typedef struct {
  sf_constraint_kind_t kind;
  const char *attr; /* fully qualified attribute; unused for ISLAND */
  const sf_ref_t *refs;
  size_t nrefs; /* 0: every request of the claim */
} sf_constraint_t;

/* DRA's resourceapi.AllocationResultsMaxSize: a claim gets at most this many results (devices). */
#define SF_CLAIM_RESULTS_MAX 32

typedef struct {
  const char *name; /* "namespace/name", for reasons and logs */
  const sf_request_t *reqs;
  size_t nreqs;
  const sf_constraint_t *cons;
  size_t ncons;
} sf_claim_t;

typedef struct {
  const sf_claim_t *claims;
  size_t nclaims;
  int64_t cpu_milli; /* pod CPU request; 0: not checked */
  int64_t mem_bytes; /* pod memory request; 0: not checked */
} sf_demand_t;

#endif
