/*
 * Extended resources during a migration from the device plugin (KEP-5004): a node whose device
 * plugin advertises the name is NodeResourcesFit's, and the class that serves a name is the one
 * created last. From the NVIDIA chart's class and its gpu-full demo pod.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include "slicefit/cluster.h"
#include "fixture.h"
#include "cluster_fx.h"

/*
 * A Node as the kubelet reports it while the NVIDIA device plugin runs on it: the plugin
 * registers nvidia.com/gpu and the kubelet lists it in capacity and allocatable (`gpus` NULL:
 * no plugin, a DRA node). A stale "0" after the plugin went away still counts as advertised.
 */
static json_t *node(const char *name, const char *gpus)
{
  json_t *n = json_pack("{s:s,s:s,s:{s:s},s:{s:{s:s,s:s,s:s}}}", "kind", "Node", "apiVersion", "v1",
                        "metadata", "name", name, "status", "allocatable", "cpu", "64", "memory",
                        "512Gi", "pods", "110");
  if (gpus)
    json_object_set_new(json_object_get(json_object_get(n, "status"), "allocatable"),
                        "nvidia.com/gpu", json_string(gpus));
  return n;
}

static void nodes(const char *dp_gpus)
{
  json_t *a = node("gpu-node-a", NULL), *b = node("gpu-node-b", NULL), *dp = node("dp-node", dp_gpus);
  ct_apply(a);
  ct_apply(b);
  ct_apply(dp);
  json_decref(a);
  json_decref(b);
  json_decref(dp);
}

/* The demo's pod, asking for `gpus` nvidia.com/gpu in its limits. */
static json_t *gpu_full_pod(int gpus)
{
  json_t *l = fx_load("nvidia-dra-driver-gpu/demo__specs__extended-resources__gpu-full.json");
  json_t *pod = json_deep_copy(fx_item(l, 1));
  json_t *ctr = json_array_get(json_object_get(json_object_get(pod, "spec"), "containers"), 0);
  json_object_set_new(json_object_get(json_object_get(ctr, "resources"), "limits"), "nvidia.com/gpu",
                      json_integer(gpus));
  json_decref(l);
  return pod;
}

static const char *const NODES[] = {"gpu-node-a", "gpu-node-b", "dp-node"};

Test(cluster, device_plugin_node_is_node_resources_fits)
{
  ct_nvidia();
  nodes("4");
  json_t *pod = gpu_full_pod(1);
  sf_pod_plan_t *p = ct_plan(pod);
  sf_verdict_t v[3];
  ct_evaluate(p, NODES, 3, v);
  cr_assert_eq(v[0].fit, SF_FIT_YES, "%s", v[0].reason);
  cr_assert_eq(v[1].fit, SF_FIT_YES, "%s", v[1].reason);
  cr_assert_eq(v[2].fit, SF_FIT_YES, "no slice reaches dp-node, yet DRA leaves it to the plugin: %s",
               v[2].reason);
  cr_assert_eq(v[2].score, SF_SCORE_MAX / 2, "scored neutrally");
  cr_assert_str_eq(v[2].reason,
                   "the node's device plugin serves nvidia.com/gpu: kube-scheduler's NodeResourcesFit "
                   "judges it");
  sf_pod_plan_free(p);
  /* More GPUs than any DRA node has: the DRA nodes refuse, the plugin's node is not slicefit's. */
  json_decref(pod);
  pod = gpu_full_pod(9);
  p = ct_plan(pod);
  ct_evaluate(p, NODES, 3, v);
  cr_assert_eq(v[0].fit, SF_FIT_NO);
  cr_assert_eq(v[1].fit, SF_FIT_NO);
  cr_assert_eq(v[2].fit, SF_FIT_YES, "%s", v[2].reason);
  sf_pod_plan_free(p);
  json_decref(pod);
}

Test(cluster, stale_zero_counts_and_its_removal_hands_the_node_to_dra)
{
  ct_nvidia();
  nodes("0");
  json_t *pod = gpu_full_pod(1);
  sf_pod_plan_t *p = ct_plan(pod);
  sf_verdict_t v[3];
  ct_evaluate(p, NODES, 3, v);
  cr_assert_eq(v[2].fit, SF_FIT_YES, "a stale 0 still makes the node the plugin's: %s", v[2].reason);
  sf_pod_plan_free(p);
  /* The entry removed (migration step 5): DRA's now, and no pool reaches the node. */
  json_t *dp = node("dp-node", NULL);
  ct_apply(dp);
  json_decref(dp);
  p = ct_plan(pod);
  ct_evaluate(p, NODES, 3, v);
  cr_assert_eq(v[2].fit, SF_FIT_NO);
  cr_assert_str_eq(v[2].reason, "no complete, valid resource pool reaches the node");
  sf_pod_plan_free(p);
  json_decref(pod);
}

/* A pod that also holds a claim: on the plugin's node only the claim is DRA's to judge. */
Test(cluster, device_plugin_node_still_judges_the_pods_claims)
{
  ct_nvidia();
  nodes("4");
  json_t *l = fx_load("nvidia-dra-driver-gpu/demo__specs__quickstart__v1__gpu-test1.json");
  json_t *cl = json_pack("{s:s,s:{s:s,s:s},s:O}", "kind", "ResourceClaim", "metadata", "name", "c1",
                         "namespace", "extended-resource-gpu-full", "spec",
                         json_object_get(json_object_get(fx_item(l, 1), "spec"), "spec"));
  ct_apply(cl);
  json_t *pod = gpu_full_pod(1);
  json_object_set_new(json_object_get(pod, "spec"), "resourceClaims",
                      json_pack("[{s:s,s:s}]", "name", "gpu", "resourceClaimName", "c1"));
  sf_pod_plan_t *p = ct_plan(pod);
  sf_verdict_t v[3];
  ct_evaluate(p, NODES, 3, v);
  cr_assert_eq(v[0].fit, SF_FIT_YES, "%s", v[0].reason);
  cr_assert_eq(v[2].fit, SF_FIT_NO, "the claim needs a DRA device dp-node does not have");
  cr_assert_str_eq(v[2].reason, "no complete, valid resource pool reaches the node");
  sf_pod_plan_free(p);
  json_decref(pod);
  json_decref(cl);
  json_decref(l);
}

/*
 * The chart's class and an operator's class for H100s only, both carrying nvidia.com/gpu: the
 * one created last serves the name, ties to the name sorted first, in whatever order they came.
 */
static void apply_class(const char *name, const char *created, const char *extra)
{
  json_t *l = fx_load(
      "nvidia-dra-driver-gpu/deployments__helm__dra-driver-nvidia-gpu__templates__deviceclass-gpu.json");
  json_t *cls = json_deep_copy(fx_item(l, 0));
  json_t *md = json_object_get(cls, "metadata");
  json_object_set_new(md, "name", json_string(name));
  json_object_set_new(md, "creationTimestamp", json_string(created));
  if (extra) {
    json_t *sel = json_object_get(json_object_get(cls, "spec"), "selectors");
    json_array_append_new(sel, json_pack("{s:{s:s}}", "cel", "expression", extra));
  }
  ct_apply(cls);
  json_decref(cls);
  json_decref(l);
}

#define H100 "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'"

static void expect_a100_node(bool fits)
{
  json_t *pod = gpu_full_pod(1);
  sf_pod_plan_t *p = ct_plan(pod);
  sf_verdict_t v[2];
  ct_evaluate(p, NODES, 2, v);
  cr_assert_eq(v[0].fit, fits ? SF_FIT_YES : SF_FIT_NO, "%s", v[0].reason);
  cr_assert_eq(v[1].fit, SF_FIT_YES, "%s", v[1].reason);
  sf_pod_plan_free(p);
  json_decref(pod);
}

Test(cluster, newest_class_serves_the_extended_resource)
{
  ct_load("nvidia-slices.json");
  apply_class("gpu-h100", "2026-02-01T00:00:00Z", H100);
  apply_class("gpu.nvidia.com", "2026-01-01T00:00:00Z", NULL);
  expect_a100_node(false); /* gpu-h100 is newer, though seen first */
  apply_class("gpu.nvidia.com", "2026-03-01T00:00:00Z", NULL);
  expect_a100_node(true); /* the chart re-installed: its class is the newest */
  apply_class("gpu.nvidia.com", "2026-02-01T00:00:00Z", NULL);
  expect_a100_node(false); /* created together: gpu-h100 sorts first */
}

Test(cluster, newest_class_wins_in_the_other_order_too)
{
  ct_load("nvidia-slices.json");
  apply_class("gpu.nvidia.com", "2026-01-01T00:00:00Z", NULL);
  apply_class("gpu-h100", "2026-02-01T00:00:00Z", H100);
  expect_a100_node(false);
  ct_load("nvidia-slices.json");
  apply_class("gpu.nvidia.com", "2026-01-01T00:00:00Z", NULL);
  apply_class("gpu-h100", "2025-12-01T00:00:00Z", H100);
  expect_a100_node(true);
}

/* A class DRA fails the claim on (a selector that is not valid CEL) is not used on the plugin's node. */
Test(cluster, failing_class_is_not_used_where_the_plugin_serves)
{
  ct_load("nvidia-slices.json");
  apply_class("gpu.nvidia.com", "2026-01-01T00:00:00Z", "device.attributes[");
  nodes("4");
  json_t *pod = gpu_full_pod(1);
  sf_pod_plan_t *p = ct_plan(pod);
  sf_verdict_t v[3];
  ct_evaluate(p, NODES, 3, v);
  cr_assert_eq(v[0].fit, SF_FIT_NO, "DRA fails the claim on its own nodes");
  cr_assert_eq(v[1].fit, SF_FIT_NO);
  cr_assert_eq(v[2].fit, SF_FIT_YES, "%s", v[2].reason);
  sf_pod_plan_free(p);
  json_decref(pod);
}
