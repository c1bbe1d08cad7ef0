/*
 * --snapshot: a kubectl List (ResourceSlices, ResourceClaims) is the cluster
 * the replay starts from. Its nodes and GPUs join the trace's, and its
 * allocated claims hold their devices before the first pod arrives.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "slicefit/replay.h"

/* snap-0: two T4 GPUs of "1" (a whole GPU each) shared by capacity; claim "old" holds gpu-0. */
static const char slice[] =
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\","
    "\"metadata\":{\"name\":\"snap-0-gpu.slicefit.io-a\",\"generation\":1},"
    "\"spec\":{\"driver\":\"gpu.slicefit.io\",\"nodeName\":\"snap-0\","
    "\"pool\":{\"name\":\"snap-0\",\"generation\":1,\"resourceSliceCount\":1},\"devices\":["
    "{\"name\":\"gpu-0\",\"allowMultipleAllocations\":true,\"attributes\":{\"model\":{\"string\":\"T4\"}},"
    "\"capacity\":{\"memory\":{\"value\":\"%s\"}}},"
    "{\"name\":\"gpu-1\",\"allowMultipleAllocations\":true,\"attributes\":{\"model\":{\"string\":\"T4\"}},"
    "\"capacity\":{\"memory\":{\"value\":\"1\"}}}]}}";

static const char claim[] =
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\","
    "\"metadata\":{\"name\":\"old\",\"namespace\":\"default\",\"uid\":\"u-1\"},"
    "\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"gpu.slicefit.io\","
    "\"count\":1,\"capacity\":{\"requests\":{\"memory\":\"1\"}}}}]}},"
    "\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpu\",\"driver\":\"gpu.slicefit.io\","
    "\"pool\":\"snap-0\",\"device\":\"gpu-0\",\"consumedCapacity\":{\"memory\":\"1\"}}]},"
    "\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\","
    "\"operator\":\"In\",\"values\":[\"snap-0\"]}]}]}}}}";

/* A List of the slice (its gpu-0 capacity `cap`) and, when `held`, the allocated claim. */
static json_t *snapshot(const char *cap, bool held)
{
  char text[4096], s[2048];
  json_error_t jerr;
  snprintf(s, sizeof(s), slice, cap);
  snprintf(text, sizeof(text), "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[%s%s%s]}", s,
           held ? "," : "", held ? claim : "");
  json_t *o = json_loads(text, 0, &jerr);
  cr_assert_not_null(o, "%s at %d:%d", jerr.text, jerr.line, jerr.column);
  return o;
}

/* One node with one T4 and three pods that each want a whole GPU. */
static void trace(sf_replay_trace_t *t)
{
  char err[SF_REPLAY_ERR_MAX] = "";
  char nodes[] = "sn,cpu_milli,memory_mib,gpu,model\nn-0,16000,65536,1,T4\n";
  char pods[] = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
                "p-0,1000,1024,1,1000\np-1,1000,1024,1,1000\np-2,1000,1024,1,1000\n";
  FILE *n = fmemopen(nodes, strlen(nodes), "r"), *p = fmemopen(pods, strlen(pods), "r");
  sf_replay_trace_init(t);
  cr_assert_eq(sf_replay_parse_nodes_csv(t, n, "nodes", err, sizeof err), 0, "%s", err);
  cr_assert_eq(sf_replay_parse_pods_csv(t, p, "pods", err, sizeof err), 0, "%s", err);
  fclose(n);
  fclose(p);
}

static int run(const sf_replay_trace_t *t, const char *policy, const json_t *snap,
               sf_replay_result_t *r, char *err, size_t errlen)
{
  sf_replay_opts_t o = {.policy = policy,
                        .device_choice = -1,
                        .seed = 1,
                        .snapshot = snap,
                        .snapshot_name = "snap.json"};
  return sf_replay_run(t, &o, r, err, errlen);
}

Test(replay_snapshot, allocated_claims_hold_their_devices_from_the_start)
{
  static const char *const policies[] = {"bestfit", "fgd", "fragmentation", "random"};
  sf_replay_trace_t t;
  trace(&t);
  json_t *held = snapshot("1", true), *idle = snapshot("1", false);
  for (size_t i = 0; i < 4; i++) {
    sf_replay_result_t r;
    char err[SF_REPLAY_ERR_MAX] = "";
    cr_assert_eq(run(&t, policies[i], NULL, &r, err, sizeof err), 0, "%s", err);
    cr_expect_eq(r.nodes, 1);
    cr_expect_eq(r.gpus, 1);
    cr_expect_eq(r.pods_failed, 2, "%s: without the snapshot one GPU serves one pod", policies[i]);
    sf_replay_result_dispose(&r);
    cr_assert_eq(run(&t, policies[i], held, &r, err, sizeof err), 0, "%s", err);
    cr_expect_eq(r.nodes, 2);
    cr_expect_eq(r.gpus, 3);
    cr_expect_eq(r.pods_failed, 1, "%s: gpu-0 is held by the snapshot's claim", policies[i]);
    cr_expect_float_eq(r.alloc_pct_final, 100.0, 1e-9);
    sf_replay_result_dispose(&r);
    cr_assert_eq(run(&t, policies[i], idle, &r, err, sizeof err), 0, "%s", err);
    cr_expect_eq(r.pods_failed, 0, "%s: with no claim the snapshot's two GPUs are free", policies[i]);
    sf_replay_result_dispose(&r);
  }
  json_decref(held);
  json_decref(idle);
  sf_replay_trace_dispose(&t);
}

Test(replay_snapshot, a_bad_snapshot_is_an_error_with_its_name_and_path)
{
  sf_replay_trace_t t;
  sf_replay_result_t r;
  char err[SF_REPLAY_ERR_MAX] = "";
  trace(&t);
  json_t *bad = snapshot("12Qi", false);
  cr_expect_neq(run(&t, "bestfit", bad, &r, err, sizeof err), 0);
  cr_expect(strstr(err, "snap.json: ") == err, "%s", err);
  cr_expect(strstr(err, "capacity") != NULL, "%s", err);
  json_decref(bad);
  json_t *notlist = json_pack("{s:s}", "kind", "Pod");
  cr_expect_neq(run(&t, "bestfit", notlist, &r, err, sizeof err), 0);
  cr_expect(strstr(err, "snap.json: ") == err, "%s", err);
  json_decref(notlist);
  sf_replay_trace_dispose(&t);
}
