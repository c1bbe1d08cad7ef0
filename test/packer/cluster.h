/* Test helpers: small clusters and claims built through the public API. */
#ifndef SF_TEST_CLUSTER_H
#define SF_TEST_CLUSTER_H

#include "slicefit/index.h"
#include "slicefit/demand.h"
#include "slicefit/packer.h"

#define GiB (1024LL * 1024 * 1024 * 1000) /* one GiB in milli-units */
#define DRV "gpu.nvidia.com"

/* Adds node `name` with n GPUs of `model`, each with memory `mem` (milli-units); shared or exclusive. */
sf_node_id tc_node(sf_index_t *idx, const char *name, int n, const char *model, sf_milli_t mem,
                   bool shared);
/* Same, with a validRange {min, step, max=mem} on memory. */
sf_node_id tc_node_range(sf_index_t *idx, const char *name, int n, const char *model, sf_milli_t mem,
                         sf_milli_t min, sf_milli_t step);

/* Selector: device driver == DRV (cache key 1). */
extern const sf_selector_t tc_sel_driver;
/* Selector: always unknown (no cache). */
extern const sf_selector_t tc_sel_unknown;
/* Selector factory: model attribute equals ctx (a const char *); cache key from the text. */
sf_selector_t tc_sel_model(const char *model);

/* One claim with one request: count devices, optional memory request (0: none). */
typedef struct {
  sf_cap_request_t cap;
  sf_request_t req;
  sf_claim_t claim;
  sf_constraint_t con;
  sf_demand_t dem;
} tc_claim_t;
void tc_claim(tc_claim_t *c, uint32_t count, sf_milli_t mem);
void tc_claim_island(tc_claim_t *c, uint32_t count); /* adds the one-island constraint */

/* Asserts sf_index_validate passes. */
void tc_valid(const sf_index_t *idx);

#endif
