/* The live run against slicefit-replay on the same trace (replay_cmp.c). */
#ifndef SLICEFIT_TEST_E2E_REPLAY_CMP_H
#define SLICEFIT_TEST_E2E_REPLAY_CMP_H

#include "driver.h"

/** Writes the policy keys (key, value, ..., NULL) as the JSON object --policy-file reads. */
int rc_policy_file(const char *path, const char *const *kv);
/** Which pods the replay fails (failed[i] for pod i), by replaying every prefix; the total. */
size_t rc_replay_failures(const drv_t *d, bool *failed);
/**
 * Replays every prefix of the driver's pods in-process and counts the pods
 * whose fate (placed or failed) differs from the live run; `first` names
 * the first such pod.
 */
size_t rc_compare_per_pod(const drv_t *d, char *first, size_t len);
/** Runs bin/slicefit-replay --json on the trace; its run object (new). */
json_t *rc_run_binary(const drv_t *d, const char *trace, const char *policy_file);

#endif
