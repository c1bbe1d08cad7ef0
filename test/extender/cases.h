/* The example cluster's nodes, and pods made from the fixtures for it. */
#ifndef SLICEFIT_TEST_EXTENDER_CASES_H
#define SLICEFIT_TEST_EXTENDER_CASES_H

#include <stdbool.h>
#include <jansson.h>
#include "harness.h"

#define SFX_NNODES 16
extern const char *const sfx_nodes[SFX_NNODES + 1]; /* NULL-terminated */

/**
 * Loads test/extender/data/FILE as pod NS/NAME; when the example cluster
 * holds a claim owned by that pod, points status.resourceClaimStatuses at it.
 */
json_t *sfx_pod(const char *file, const char *ns, const char *name);

/** POST /filter of pod-gpu-test1.json as NS/NAME over the example's nodes; expects 200. */
json_t *sfx_filter_pod(sfx_t *s, const char *ns, const char *name);

/** True when `node` is in the NULL-terminated list. */
bool sfx_in(const char *node, const char *const *list);

#endif
