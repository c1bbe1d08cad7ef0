/*
 * Holding the live run against slicefit-replay on the same trace.
 *
 * The replay reports aggregates only (placed, failed, departed, allocation
 * at FGD's load thresholds). Which pods failed is recovered without
 * touching the replay: a pod's fate depends only on the events before its
 * arrival, so replaying the first k pods of the trace (with their own
 * departures) fails pod k exactly when the count of failures grows from
 * the run of k-1 pods. Each prefix runs in-process through the replay's
 * library (sf_replay_parse_native, sf_replay_run: the code behind
 * bin/slicefit-replay); the whole trace also runs through the binary.
 *
 * The replay is told to choose as the driver does: by the 0..10 score the
 * extender sends (--extender-scores), equal scores to the first node by
 * name (--ties first), the device by first fit.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "replay_cmp.h"
#include "slicefit/replay.h"

static const char *value_of(const char *const *kv, const char *key, const char *def)
{
  for (size_t i = 0; kv && kv[i]; i += 2)
    if (strcmp(kv[i], key) == 0)
      return kv[i + 1];
  return def;
}

int rc_policy_file(const char *path, const char *const *kv)
{
  json_t *o = json_object();
  for (size_t i = 0; kv && kv[i]; i += 2)
    json_object_set_new(o, kv[i], json_string(kv[i + 1]));
  int rc = json_dump_file(o, path, JSON_INDENT(1));
  json_decref(o);
  return rc;
}

/* One in-process replay of the first k pods; the result's counters. */
static void run_prefix(const drv_t *d, size_t k, const sf_policy_t *base, sf_replay_result_t *res)
{
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  e2e_trace_fwrite(f, &d->cl, d->pods, k);
  fclose(f);
  f = fmemopen(text, len, "r");
  sf_replay_trace_t t;
  char err[SF_REPLAY_ERR_MAX] = "";
  sf_replay_trace_init(&t);
  cr_assert_eq(sf_replay_parse_native(&t, f, "e2e-trace", err, sizeof err), 0, "%s", err);
  sf_replay_opts_t o = {.policy = value_of(d->policy, "strategy", "fragmentation"),
                        .base = base,
                        .device_choice = SF_CHOICE_FIRST_FIT,
                        .seed = 42,
                        .ties = SF_REPLAY_TIES_FIRST,
                        .extender_scores = true};
  cr_assert_eq(sf_replay_run(&t, &o, res, err, sizeof err), 0, "%s", err);
  sf_replay_trace_dispose(&t);
  fclose(f);
  free(text);
}

size_t rc_replay_failures(const drv_t *d, bool *failed)
{
  sf_policy_t pol;
  char err[256];
  size_t nkv = 0, before = 0;
  while (d->policy[nkv])
    nkv++;
  const char **keys = calloc(nkv / 2 + 1, sizeof *keys), **vals = calloc(nkv / 2 + 1, sizeof *vals);
  for (size_t i = 0; i < nkv / 2; i++) {
    keys[i] = d->policy[2 * i];
    vals[i] = d->policy[2 * i + 1];
  }
  cr_assert_eq(sf_policy_from_kv(&pol, keys, vals, nkv / 2, err, sizeof err), 0, "%s", err);
  for (size_t k = 1; k <= d->npods; k++) {
    sf_replay_result_t res;
    run_prefix(d, k, &pol, &res);
    failed[k - 1] = res.pods_failed > before;
    before = res.pods_failed;
    sf_replay_result_dispose(&res);
  }
  sf_policy_dispose(&pol);
  free(keys);
  free(vals);
  return before;
}

size_t rc_compare_per_pod(const drv_t *d, char *first, size_t len)
{
  bool *failed = calloc(d->npods + 1, sizeof *failed);
  size_t diffs = 0;
  rc_replay_failures(d, failed);
  first[0] = '\0';
  for (size_t k = 0; k < d->npods; k++) {
    bool live_failed = d->out[k] != OUT_PLACED;
    if (failed[k] != live_failed && diffs++ == 0)
      snprintf(first, len, "pod %s: replay %s, live %s", d->pods[k].name,
               failed[k] ? "failed" : "placed", live_failed ? "failed" : "placed");
  }
  free(failed);
  return diffs;
}

json_t *rc_run_binary(const drv_t *d, const char *trace, const char *policy_file)
{
  char cmd[1024], *line = NULL;
  size_t cap = 0;
  snprintf(cmd, sizeof cmd,
           "%s --trace %s --policy %s --policy-file %s "
           "--device-choice first-fit --ties first --extender-scores --seed 42 --json",
           e2e_bin("slicefit-replay"), trace, value_of(d->policy, "strategy", "fragmentation"),
           policy_file);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p);
  json_t *run = NULL;
  /* The first line is the run; the second the medians. */
  if (getline(&line, &cap, p) > 0)
    run = json_loads(line, 0, NULL);
  while (getline(&line, &cap, p) > 0) {
  }
  free(line);
  cr_assert_eq(pclose(p), 0, "%s failed", cmd);
  cr_assert_not_null(run, "%s printed no JSON run", cmd);
  return run;
}
