/*
 * Reasons that tell the truth: the capacity or counter really short, in the units the request
 * used; firstAvailable alternatives that match but are in use; and a log line that says what a
 * selector without a cel field answers.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <string.h>
#include "slicefit/cluster.h"
#include "fixture.h"
#include "cluster_fx.h"

#define SHARED \
  "dra-example-driver/gpu-allow-multiple-allocations__gpu-allow-multiple-allocations.json"

/* A claim that holds `memory` and `compute` of the shared gpu-0 on n1, as DRA records it. */
static void hold(const char *memory, const char *compute)
{
  char text[1024];
  snprintf(text, sizeof text,
           "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"big\",\"namespace\":\"other\"},"
           "\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"r\",\"driver\":"
           "\"gpu.example.com\",\"pool\":\"n1\",\"device\":\"gpu-0\",\"shareID\":\"s1\","
           "\"consumedCapacity\":{\"memory\":\"%s\",\"compute\":\"%s\"}}]},\"nodeSelector\":"
           "{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\","
           "\"values\":[\"n1\"]}]}]}}}}",
           memory, compute);
  json_t *held = fx_json(text);
  ct_apply(held);
  json_decref(held);
}

/* pod0 of the example driver's demo, its claim shared-gpu-pod0 asking `requests`, on n1. */
static void expect_reason(json_t *requests, const char *want)
{
  json_t *l = fx_load(SHARED);
  json_t *claim = json_deep_copy(fx_item(l, 1));
  json_t *ex =
      json_object_get(json_array_get(json_object_get(json_object_get(json_object_get(claim, "spec"),
                                                                     "devices"),
                                                     "requests"),
                                     0),
                      "exactly");
  json_object_set_new(json_object_get(ex, "capacity"), "requests", requests);
  ct_apply(claim);
  const char *names[] = {"n1"};
  sf_verdict_t v[1];
  sf_pod_plan_t *p = ct_plan(fx_item(l, 3));
  ct_evaluate(p, names, 1, v);
  cr_assert_eq(v[0].fit, SF_FIT_NO, "%s", v[0].reason);
  cr_assert_str_eq(v[0].reason, want);
  sf_pod_plan_free(p);
  json_decref(claim);
  json_decref(l);
}

/*
 * The example driver publishes a shared GPU with memory and compute, each with a request policy
 * (its kubelet plugin's device enumeration with gpuAllowMultipleAllocations, as
 * ct_shared_gpu_node builds it): with compute used up, the reason names compute, not the memory
 * the request also asks for and that is free.
 */
Test(cluster, reason_names_the_capacity_really_short)
{
  ct_load("dra-example-driver/deployments__helm__dra-example-driver__templates__deviceclass.json");
  ct_shared_gpu_node();
  hold("10Gi", "90");
  expect_reason(json_pack("{s:s,s:s}", "compute", "20", "memory", "16Gi"),
                "request gpu of claim gpu-allow-multiple-allocations/shared-gpu-pod0 needs 20 of "
                "compute; the most free on a matching device is 10");
  /* Not named by the request: the device's request policy consumes its default, 100. */
  expect_reason(json_pack("{s:s}", "memory", "16Gi"),
                "request gpu of claim gpu-allow-multiple-allocations/shared-gpu-pod0 needs 100 of "
                "compute (the device's default); the most free on a matching device is 10");
}

Test(cluster, reason_speaks_the_units_of_the_request)
{
  ct_load("dra-example-driver/deployments__helm__dra-example-driver__templates__deviceclass.json");
  ct_shared_gpu_node();
  hold("78Gi", "10");
  expect_reason(json_pack("{s:s,s:s}", "compute", "20", "memory", "16Gi"),
                "request gpu of claim gpu-allow-multiple-allocations/shared-gpu-pod0 needs 16Gi of "
                "memory; the most free on a matching device is 2Gi");
  /* Decimal units asked, decimal units answered (the device's step rounds 3G up to 3Gi). */
  expect_reason(json_pack("{s:s,s:s}", "compute", "20", "memory", "3G"),
                "request gpu of claim gpu-allow-multiple-allocations/shared-gpu-pod0 needs 3G of "
                "memory; the most free on a matching device is 2147483648");
}

/*
 * firstAvailable on the NVIDIA cluster: an H200 if there is one, else an A100 80GB. On the A100
 * node, whose eight GPUs another claim holds, the second alternative matches and is in use.
 */
Test(cluster, first_available_that_matches_but_is_in_use)
{
  ct_nvidia();
  json_t *results = json_array();
  for (int i = 0; i < 8; i++) {
    char dev[16];
    snprintf(dev, sizeof dev, "gpu-%d", i);
    json_array_append_new(results, json_pack("{s:s,s:s,s:s,s:s}", "request", "gpus", "driver",
                                             "gpu.nvidia.com", "pool", "gpu-node-a", "device", dev));
  }
  json_t *held = json_pack("{s:s,s:{s:s,s:s},s:{s:{s:{s:o},s:{s:[{s:[{s:s,s:s,s:[s]}]}]}}}}", "kind",
                           "ResourceClaim", "metadata", "name", "training", "namespace", "ml",
                           "status", "allocation", "devices", "results", results, "nodeSelector",
                           "nodeSelectorTerms", "matchFields", "key", "metadata.name", "operator",
                           "In", "values", "gpu-node-a");
  ct_apply(held);
  json_t *claim = fx_json(
      "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":"
      "\"any-big-gpu\",\"namespace\":\"gpu-test1\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":"
      "\"gpu\",\"firstAvailable\":[{\"name\":\"h200\",\"deviceClassName\":\"gpu.nvidia.com\","
      "\"selectors\":[{\"cel\":{\"expression\":\"device.attributes['gpu.nvidia.com'].productName."
      "startsWith('NVIDIA H200')\"}}]},{\"name\":\"a100\",\"deviceClassName\":\"gpu.nvidia.com\","
      "\"selectors\":[{\"cel\":{\"expression\":\"device.attributes['gpu.nvidia.com'].productName == "
      "'NVIDIA A100-SXM4-80GB'\"}}]}]}]}}}");
  ct_apply(claim);
  json_t *pod = fx_json(
      "{\"metadata\":{\"name\":\"pod1\",\"namespace\":\"gpu-test1\"},\"spec\":"
      "{\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimName\":\"any-big-gpu\"}]}}");
  sf_pod_plan_t *p = ct_plan(pod);
  const char *names[] = {"gpu-node-a", "gpu-node-b"};
  sf_verdict_t v[2];
  ct_evaluate(p, names, 2, v);
  cr_assert_eq(v[0].fit, SF_FIT_NO);
  cr_assert_str_eq(
      v[0].reason,
      "request gpu of claim gpu-test1/any-big-gpu needs 1 device(s); 0 of 8 matching are free");
  cr_assert_eq(v[1].fit, SF_FIT_NO);
  cr_assert_str_eq(v[1].reason,
                   "no device on the node matches request gpu of claim gpu-test1/any-big-gpu");
  sf_pod_plan_free(p);
  json_decref(pod);
  json_decref(claim);
  json_decref(held);
}

/* A selector of a later release (no cel field): DRA fails the claim, and the log says so. */
Test(cluster, selector_without_cel_logs_what_it_answers)
{
  cr_redirect_stderr();
  ct_load("nvidia-slices.json");
  json_t *l = fx_load(
      "nvidia-dra-driver-gpu/deployments__helm__dra-driver-nvidia-gpu__templates__deviceclass-gpu.json");
  json_t *cls = json_deep_copy(fx_item(l, 0));
  json_array_append_new(json_object_get(json_object_get(cls, "spec"), "selectors"),
                        json_pack("{s:{s:s}}", "future", "expression", "x"));
  ct_apply(cls);
  json_t *claim = fx_json(
      "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"c1\",\"namespace\":\"gpu-test1\"},\"spec\":"
      "{\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"gpu.nvidia.com\"}}]}}}");
  ct_apply(claim);
  json_t *pod = fx_json("{\"metadata\":{\"name\":\"pod1\",\"namespace\":\"gpu-test1\"},\"spec\":"
                        "{\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimName\":\"c1\"}]}}");
  sf_pod_plan_t *p = ct_plan(pod);
  const char *names[] = {"gpu-node-a"};
  sf_verdict_t v[1];
  ct_evaluate(p, names, 1, v);
  cr_assert_eq(v[0].fit, SF_FIT_NO, "%s", v[0].reason);
  sf_pod_plan_free(p);
  fflush(stderr);
  FILE *f = cr_get_redirected_stderr();
  char line[1024];
  int answers_no = 0, unsure = 0;
  while (fgets(line, sizeof line, f)) {
    answers_no += strstr(line, "\"selector has no cel field, nodes answer no\"") != NULL;
    unsure += strstr(line, "stay unsure") != NULL;
  }
  cr_assert_eq(answers_no, 1);
  cr_assert_eq(unsure, 0);
  json_decref(pod);
  json_decref(claim);
  json_decref(cls);
  json_decref(l);
}

/*
 * Partitionable devices as the example driver publishes them (a counter set per GPU, a partition
 * and the whole GPU consuming it): with the partition held, the whole GPU's counter is short,
 * and the reason names that counter.
 */
Test(cluster, reason_names_the_counter_used_up)
{
  ct_load("dra-example-driver/deployments__helm__dra-example-driver__templates__deviceclass.json");
  /* The counters in one slice, the devices consuming them in another (the 1.35 layout). */
  json_t *ctr = fx_json(
      "{\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":\"ctr\"},\"spec\":{\"driver\":"
      "\"gpu.example.com\",\"nodeName\":\"n1\",\"pool\":{\"name\":\"n1\",\"resourceSliceCount\":2},"
      "\"sharedCounters\":[{\"name\":\"gpu-0-counters\",\"counters\":{\"memory\":{\"value\":\"80Gi\"}}}]}}");
  ct_apply(ctr);
  json_decref(ctr);
  json_t *slice = fx_json(
      "{\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":\"devs\"},\"spec\":{\"driver\":"
      "\"gpu.example.com\",\"nodeName\":\"n1\",\"pool\":{\"name\":\"n1\",\"resourceSliceCount\":2},"
      "\"devices\":[{\"name\":\"gpu-0-partition-0\",\"consumesCounters\":[{\"counterSet\":"
      "\"gpu-0-counters\",\"counters\":{\"memory\":{\"value\":\"40Gi\"}}}]},{\"name\":\"gpu-0-full\","
      "\"consumesCounters\":[{\"counterSet\":\"gpu-0-counters\",\"counters\":{\"memory\":{\"value\":"
      "\"80Gi\"}}}]}]}}");
  ct_apply(slice);
  json_t *held = fx_json(
      "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"half\",\"namespace\":\"other\"},\"status\":"
      "{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"r\",\"driver\":\"gpu.example.com\","
      "\"pool\":\"n1\",\"device\":\"gpu-0-partition-0\"}]},\"nodeSelector\":{\"nodeSelectorTerms\":"
      "[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"n1\"]}]}]}}}}");
  ct_apply(held);
  json_t *claim = fx_json(
      "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"c1\",\"namespace\":\"d\"},\"spec\":{\"devices\":"
      "{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"gpu.example.com\"}}]}}}");
  ct_apply(claim);
  json_t *pod = fx_json(
      "{\"metadata\":{\"name\":\"p\",\"namespace\":\"d\"},\"spec\":{\"resourceClaims\":"
      "[{\"name\":\"gpu\",\"resourceClaimName\":\"c1\"}]}}");
  sf_pod_plan_t *p = ct_plan(pod);
  const char *names[] = {"n1"};
  sf_verdict_t v[1];
  ct_evaluate(p, names, 1, v);
  cr_assert_eq(v[0].fit, SF_FIT_NO, "%s", v[0].reason);
  cr_assert_str_eq(v[0].reason,
                   "request gpu of claim d/c1: the shared counters of the matching devices "
                   "are used up (counter memory of set gpu-0-counters)");
  sf_pod_plan_free(p);
  json_decref(pod);
  json_decref(claim);
  json_decref(held);
  json_decref(slice);
}
