/* Pods of the example cluster and the nodes each must pass (shared by the filter and prioritize tests). */
#ifndef SLICEFIT_TEST_EXTENDER_CASES_H
#define SLICEFIT_TEST_EXTENDER_CASES_H

#include <stdbool.h>
#include <jansson.h>

#define SFX_NNODES 16
extern const char *const sfx_nodes[SFX_NNODES + 1];  /* NULL-terminated */

/**
 * Loads test/extender/data/FILE as pod NS/NAME; when the example cluster
 * holds a claim owned by that pod, points status.resourceClaimStatuses at it.
 */
json_t *sfx_pod(const char *file, const char *ns, const char *name);

/** True when `node` is in the NULL-terminated list. */
bool sfx_in(const char *node, const char *const *list);

#endif
