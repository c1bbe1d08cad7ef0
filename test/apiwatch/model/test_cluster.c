/* The cluster: pools, generations, allocations, taint rules, relists, and pod plans from fixtures. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <string.h>
#include "slicefit/mix.h"
#include "slicefit/cluster.h"
#include "fixture.h"

static sf_cluster_t *C;
static char err[SF_ERR_MAX];

static void setup(void) { C = sf_cluster_create(NULL); }
static void teardown(void) { sf_cluster_destroy(C); }

static void valid(void) {
  char why[256];
  cr_assert_eq(sf_index_validate(sf_cluster_index(C), why, sizeof why), 0, "%s", why);
}

static void load(const char *rel) {
  json_t *l = fx_load(rel);
  cr_assert_eq(sf_cluster_load_list(C, l, err, sizeof err), 0, "%s: %s", rel, err);
  json_decref(l);
  valid();
}

static void apply(json_t *o) {
  cr_assert_eq(sf_cluster_apply(C, SF_KIND_UNKNOWN, o, err, sizeof err), 0, "%s", err);
  valid();
}

static size_t node_devs(const char *node) {
  sf_index_t *idx = sf_cluster_index(C);
  sf_node_id n = sf_index_node_find(idx, node);
  size_t nd = 0;
  if (n >= 0) sf_index_node_devices(idx, n, &nd);
  return nd;
}

/* The NVIDIA cluster: 8xA100 on gpu-node-a, 4xH100 on gpu-node-b, the chart's classes. */
static void nvidia(void) {
  load("nvidia-slices.json");
  load("nvidia-dra-driver-gpu/deployments__helm__dra-driver-nvidia-gpu__templates__deviceclass-gpu.json");
  load("nvidia-dra-driver-gpu/deployments__helm__dra-driver-nvidia-gpu__templates__deviceclass-mig.json");
}

/* A slice of `pool` on `node` with `ndev` example-driver devices named prefix-i. */
static json_t *slice(const char *name, const char *node, const char *pool, int gen, int count,
                     int ndev, const char *prefix) {
  json_t *devs = json_array();
  for (int i = 0; i < ndev; i++) {
    char dn[64];
    snprintf(dn, sizeof dn, "%s-%d", prefix, i);
    json_array_append_new(devs, json_pack("{s:s,s:{s:{s:i}},s:{s:{s:s}}}", "name", dn,
                                          "attributes", "index", "int", i, "capacity", "memory",
                                          "value", "80Gi"));
  }
  return json_pack("{s:s,s:{s:s},s:{s:s,s:s,s:{s:s,s:i,s:i},s:o}}", "kind", "ResourceSlice",
                   "metadata", "name", name, "spec", "driver", "gpu.example.com", "nodeName", node,
                   "pool", "name", pool, "generation", gen, "resourceSliceCount", count, "devices",
                   devs);
}

TestSuite(cluster, .init = setup, .fini = teardown);

Test(cluster, nvidia_list_loads_whole) {
  nvidia();
  cr_assert_eq(sf_cluster_count(C, SF_KIND_RESOURCE_SLICE), 2);
  cr_assert_eq(sf_cluster_count(C, SF_KIND_DEVICE_CLASS), 2);
  cr_assert_eq(node_devs("gpu-node-a"), 8);
  cr_assert_eq(node_devs("gpu-node-b"), 4);
  sf_index_t *idx = sf_cluster_index(C);
  sf_dev_id d = sf_index_dev_find(idx, "gpu.nvidia.com", "gpu-node-b", "gpu-3");
  cr_assert_geq(d, 0);
  cr_assert_str_eq(sf_index_dev_attr(idx, d, "gpu.nvidia.com/productName")->s,
                   "NVIDIA H100 80GB HBM3");
  cr_assert_eq(sf_kind_from_name("DeviceClass"), SF_KIND_DEVICE_CLASS);
  cr_assert_eq(sf_kind_from_name("Pod"), SF_KIND_POD, "pods are tracked, for node CPU");
  cr_assert_eq(sf_kind_from_name("Deployment"), SF_KIND_UNKNOWN);
}

Test(cluster, newest_generation_counts) {
  json_t *s1 = slice("s1", "n1", "n1", 1, 1, 4, "old");
  json_t *s2 = slice("s2", "n1", "n1", 2, 1, 2, "new");
  apply(s1);
  cr_assert_eq(node_devs("n1"), 4);
  apply(s2);
  cr_assert_eq(node_devs("n1"), 2, "generation 1 no longer counts");
  cr_assert_geq(sf_index_dev_find(sf_cluster_index(C), "gpu.example.com", "n1", "new-1"), 0);
  cr_assert_lt(sf_index_dev_find(sf_cluster_index(C), "gpu.example.com", "n1", "old-1"), 0);
  cr_assert_eq(sf_cluster_delete(C, SF_KIND_RESOURCE_SLICE, s2, err, sizeof err), 0);
  valid();
  cr_assert_eq(node_devs("n1"), 4, "with generation 2 gone, generation 1 is the newest");
  json_decref(s1);
  json_decref(s2);
}

Test(cluster, incomplete_pool_offers_nothing) {
  json_t *a = slice("a", "n1", "p", 3, 2, 2, "a"), *b = slice("b", "n1", "p", 3, 2, 3, "b");
  apply(a);
  cr_assert_eq(node_devs("n1"), 0, "1 of 2 slices: incomplete");
  apply(b);
  cr_assert_eq(node_devs("n1"), 5);
  json_t *st = sf_cluster_state_json(C);
  json_t *pool = json_array_get(json_object_get(st, "pools"), 0);
  cr_assert(json_is_true(json_object_get(pool, "complete")));
  cr_assert_eq(json_integer_value(json_object_get(pool, "slices")), 2);
  json_decref(st);
  cr_assert_eq(sf_cluster_delete(C, SF_KIND_RESOURCE_SLICE, a, err, sizeof err), 0);
  cr_assert_eq(node_devs("n1"), 0);
  cr_assert_lt(sf_index_node_find(sf_cluster_index(C), "n1"), 0, "a node without devices goes");
  json_decref(a);
  json_decref(b);
}

/* The website's allocated claim is on kind-worker, device gpu-4 of pool kind-worker. */
static void kind_worker(void) {
  json_t *l = fx_load("dra-example-driver/README.kubectl-get-resourceslice-output.json");
  json_t *s = fx_item(l, 0), *spec = json_object_get(s, "spec");
  json_object_set_new(spec, "nodeName", json_string("kind-worker"));
  json_object_set_new(json_object_get(spec, "pool"), "name", json_string("kind-worker"));
  apply(s);
  json_decref(l);
}

Test(cluster, allocated_claim_is_recorded) {
  kind_worker();
  load("k8s-website/install-use-dra.kubectl-get-resourceclaim-output.json");
  sf_index_t *idx = sf_cluster_index(C);
  sf_alloc_id a = sf_index_alloc_find(idx, "dra-tutorial/some-gpu");
  cr_assert_geq(a, 0);
  cr_assert_str_eq(sf_index_node_name(idx, sf_index_alloc_node(idx, a)), "kind-worker");
  sf_dev_id d = sf_index_dev_find(idx, "gpu.example.com", "kind-worker", "gpu-4");
  cr_assert_eq(sf_index_dev_holders(idx, d), 1);
  json_t *l = fx_load("k8s-website/install-use-dra.kubectl-get-resourceclaim-output.json");
  cr_assert_eq(sf_cluster_delete(C, SF_KIND_RESOURCE_CLAIM, fx_item(l, 0), err, sizeof err), 0);
  cr_assert_eq(sf_index_dev_holders(idx, d), 0);
  cr_assert_lt(sf_index_alloc_find(idx, "dra-tutorial/some-gpu"), 0);
  valid();
  json_decref(l);
}

Test(cluster, claim_before_its_slice) {
  load("k8s-website/install-use-dra.kubectl-get-resourceclaim-output.json");
  cr_assert_lt(sf_index_alloc_find(sf_cluster_index(C), "dra-tutorial/some-gpu"), 0);
  kind_worker();
  cr_assert_geq(sf_index_alloc_find(sf_cluster_index(C), "dra-tutorial/some-gpu"), 0,
                "recorded once the pool is published");
}

Test(cluster, consumed_capacity_of_a_shared_device) {
  json_t *s = json_pack(
      "{s:s,s:{s:s},s:{s:s,s:s,s:{s:s,s:i},s:[{s:s,s:b,s:{s:{s:s,s:{s:s,s:{s:s,s:s}}}}}]}}",
      "kind", "ResourceSlice", "metadata", "name", "s", "spec", "driver", "gpu.example.com",
      "nodeName", "n1", "pool", "name", "n1", "resourceSliceCount", 1, "devices", "name", "gpu-0",
      "allowMultipleAllocations", 1, "capacity", "memory", "value", "80Gi", "requestPolicy",
      "default", "80Gi", "validRange", "min", "1Gi", "step", "1Gi");
  apply(s);
  json_t *cl = fx_json(
      "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"c\",\"namespace\":\"n\"},\"status\":"
      "{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"r\",\"driver\":\"gpu.example.com\","
      "\"pool\":\"n1\",\"device\":\"gpu-0\",\"shareID\":\"u1\",\"consumedCapacity\":{\"memory\":"
      "\"16Gi\"}}]}}}}");
  apply(cl);
  sf_index_t *idx = sf_cluster_index(C);
  sf_dev_id d = sf_index_dev_find(idx, "gpu.example.com", "n1", "gpu-0");
  sf_milli_t v, f;
  sf_index_dev_cap(idx, d, 0, &v, &f);
  cr_assert_eq(v - f, 16LL * 1024 * 1024 * 1024 * 1000, "16Gi consumed");
  json_decref(s);
  json_decref(cl);
}

Test(cluster, taint_rules) {
  kind_worker();
  load("dra-example-driver/device-taints-tolerations__device-taint-pod-noschedule__3-device-taint-rule.json");
  sf_index_t *idx = sf_cluster_index(C);
  sf_dev_id d = sf_index_dev_find(idx, "gpu.example.com", "kind-worker", "gpu-2");
  cr_assert_eq(sf_index_dev_ntaints(idx, d), 1);
  cr_assert_str_eq(sf_index_dev_taint(idx, d, 0)->key, "gpu.example.com/unhealthy");
  cr_assert_eq(sf_index_dev_taint(idx, d, 0)->effect, SF_TAINT_NOSCHEDULE);
  json_t *rule = fx_json("{\"kind\":\"DeviceTaintRule\",\"metadata\":{\"name\":\"example\"}}");
  cr_assert_eq(sf_cluster_delete(C, SF_KIND_UNKNOWN, rule, err, sizeof err), 0);
  cr_assert_eq(sf_index_dev_ntaints(idx, d), 0);
  json_decref(rule);
  /* v1alpha3 selected devices by class: slicefit cannot tell which, so it taints none. */
  rule = fx_json("{\"kind\":\"DeviceTaintRule\",\"metadata\":{\"name\":\"old\"},\"spec\":{"
                 "\"deviceSelector\":{\"deviceClassName\":\"gpu.example.com\"},\"taint\":{\"key\":\"k\","
                 "\"effect\":\"NoSchedule\"}}}");
  apply(rule);
  cr_assert_eq(sf_index_dev_ntaints(idx, d), 0);
  json_decref(rule);
}

Test(cluster, replace_is_all_or_nothing) {
  nvidia();
  json_t *items = json_array();
  json_array_append_new(items, slice("x", "n9", "n9", 1, 1, 2, "g"));
  json_array_append_new(items, fx_json("{\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":\"bad\"},"
                                       "\"spec\":{\"driver\":\"d\",\"nodeName\":\"n\",\"pool\":"
                                       "{\"name\":\"p\",\"resourceSliceCount\":1},\"devices\":[{"
                                       "\"name\":\"a\",\"capacity\":{\"memory\":{\"value\":\"12Qi\"}}}]}}"));
  cr_assert_eq(sf_cluster_replace(C, SF_KIND_RESOURCE_SLICE, items, err, sizeof err), SF_EINVAL);
  cr_assert_str_eq(err, "items[1].spec.devices[0].capacity.memory.value: '12Qi' is not a quantity");
  cr_assert_eq(node_devs("gpu-node-a"), 8, "unchanged");
  cr_assert_eq(sf_cluster_count(C, SF_KIND_RESOURCE_SLICE), 2);
  json_array_remove(items, 1);
  /* Two slices of a pool that says it has one: incomplete as upstream's allocator counts
   * (resourceSliceCount must equal the slices of the generation), so it publishes nothing. */
  json_array_append_new(items, slice("y", "n9", "n9", 1, 1, 1, "g"));
  cr_assert_eq(sf_cluster_replace(C, SF_KIND_RESOURCE_SLICE, items, err, sizeof err), 0, "%s", err);
  cr_assert_eq(sf_cluster_invalid_pools(C), 0);
  cr_assert_eq(node_devs("gpu-node-a"), 0, "relisted away");
  cr_assert_lt(sf_index_node_find(sf_cluster_index(C), "n9"), 0);
  valid();
  json_array_remove(items, 1);
  cr_assert_eq(sf_cluster_replace(C, SF_KIND_RESOURCE_SLICE, items, err, sizeof err), 0, "%s", err);
  cr_assert_eq(sf_cluster_invalid_pools(C), 0, "valid again");
  cr_assert_eq(node_devs("gpu-node-a"), 0, "relisted away");
  cr_assert_eq(node_devs("n9"), 2);
  cr_assert_eq(sf_cluster_count(C, SF_KIND_RESOURCE_SLICE), 1);
  valid();
  json_decref(items);
}

Test(cluster, duplicate_devices_make_the_pool_invalid, .init = cr_redirect_stderr) {
  json_t *a = slice("a", "n1", "p", 1, 2, 2, "g"), *b = slice("b", "n1", "p", 1, 2, 2, "g");
  apply(a);
  cr_assert_eq(node_devs("n1"), 0, "incomplete");
  apply(b);  /* not an error: the pool is invalid on n1, and says so */
  cr_assert_eq(sf_cluster_count(C, SF_KIND_RESOURCE_SLICE), 2);
  cr_assert_eq(sf_cluster_invalid_pools(C), 1);
  cr_assert_eq(node_devs("n1"), 0);
  json_t *st = sf_cluster_state_json(C);
  const char *why = json_string_value(
      json_object_get(json_object_get(json_array_get(json_object_get(st, "pools"), 0), "invalid"), "reason"));
  cr_assert(why && strstr(why, "duplicate device name"), "%s", why ? why : "(none)");
  json_decref(st);
  cr_assert_eq(sf_cluster_delete(C, SF_KIND_UNKNOWN, b, err, sizeof err), 0);
  cr_assert_eq(sf_cluster_invalid_pools(C), 0);
  valid();
  json_decref(a);
  json_decref(b);
}

Test(cluster, bad_objects_are_errors) {
  json_t *o = fx_json("{\"kind\":\"Service\",\"metadata\":{\"name\":\"p\"}}");
  cr_assert_eq(sf_cluster_apply(C, SF_KIND_UNKNOWN, o, err, sizeof err), SF_EINVAL);
  cr_assert_str_eq(err, "kind: 'Service' is not tracked");
  json_decref(o);
  o = fx_json("{\"kind\":\"List\",\"items\":[{\"kind\":\"DeviceClass\",\"metadata\":{}}]}");
  cr_assert_eq(sf_cluster_load_list(C, o, err, sizeof err), SF_EINVAL);
  cr_assert_str_eq(err, "items[0].metadata.name: is required");
  json_decref(o);
  o = fx_json("{}");
  cr_assert_eq(sf_cluster_replace(C, SF_KIND_DEVICE_CLASS, o, err, sizeof err), SF_EINVAL);
  cr_assert_str_eq(err, "items: expected an array");
  json_decref(o);
}

/* ---- plans ---- */

static sf_pod_plan_t *plan(json_t *pod) {
  sf_pod_plan_t *p = NULL;
  cr_assert_eq(sf_cluster_plan(C, pod, &p, err, sizeof err), 0, "%s", err);
  return p;
}

static void evaluate(sf_pod_plan_t *p, const char *const *names, size_t n, sf_verdict_t *out) {
  cr_assert_eq(sf_cluster_evaluate(C, p, names, n, out), 0);
}

/* gpu-test1's pod1 with the claim its template made, as the controller would have. */
static json_t *gpu_test1_pod(const char *claim) {
  json_t *l = fx_load("nvidia-dra-driver-gpu/demo__specs__quickstart__v1__gpu-test1.json");
  json_t *tmpl = fx_item(l, 1), *pod = json_deep_copy(fx_item(l, 2));
  json_t *cl = json_pack("{s:s,s:{s:s,s:s},s:O}", "kind", "ResourceClaim", "metadata", "name",
                         claim, "namespace", "gpu-test1", "spec",
                         json_object_get(json_object_get(tmpl, "spec"), "spec"));
  apply(cl);
  json_object_set_new(pod, "status", json_pack("{s:[{s:s,s:s}]}", "resourceClaimStatuses", "name",
                                               "gpu", "resourceClaimName", claim));
  json_decref(cl);
  json_decref(l);
  return pod;
}

static const char *const NODES[] = {"gpu-node-a", "gpu-node-b", "cpu-node"};

Test(cluster, plan_from_template_claim) {
  nvidia();
  json_t *pod = gpu_test1_pod("pod1-gpu-x1");
  sf_pod_plan_t *p = plan(pod);
  cr_assert_not(sf_pod_plan_empty(p));
  sf_verdict_t v[3];
  evaluate(p, NODES, 3, v);
  cr_assert_eq(v[0].fit, SF_FIT_YES, "%s", v[0].reason);
  cr_assert_eq(v[1].fit, SF_FIT_YES, "%s", v[1].reason);
  cr_assert_eq(v[2].fit, SF_FIT_UNSURE, "a node slicefit does not know");
  sf_pod_plan_free(p);
  json_decref(pod);
}

Test(cluster, claim_not_created_yet_is_unsure) {
  nvidia();
  json_t *l = fx_load("nvidia-dra-driver-gpu/demo__specs__quickstart__v1__gpu-test1.json");
  sf_pod_plan_t *p = plan(fx_item(l, 2));
  sf_verdict_t v[3];
  evaluate(p, NODES, 3, v);
  for (int i = 0; i < 3; i++) {
    cr_assert_eq(v[i].fit, SF_FIT_UNSURE);
    cr_assert_str_eq(v[i].reason, "the claim for gpu (template single-gpu) is not created yet");
  }
  sf_pod_plan_free(p);
  json_t *pod = json_deep_copy(fx_item(l, 2));
  json_object_set_new(pod, "status", json_pack("{s:[{s:s,s:s}]}", "resourceClaimStatuses", "name",
                                               "gpu", "resourceClaimName", "gone"));
  p = plan(pod);
  evaluate(p, NODES, 1, v);
  cr_assert_str_eq(v[0].reason, "claim gpu-test1/gone is not known yet");
  sf_pod_plan_free(p);
  json_decref(pod);
  json_decref(l);
}

Test(cluster, allocated_claim_pins_the_pod) {
  kind_worker();
  load("k8s-website/install-use-dra.kubectl-get-resourceclaim-output.json");
  json_t *pod = fx_json("{\"metadata\":{\"name\":\"pod0\",\"namespace\":\"dra-tutorial\"},\"spec\":"
                        "{\"resourceClaims\":[{\"name\":\"g\",\"resourceClaimName\":\"some-gpu\"}]}}");
  sf_pod_plan_t *p = plan(pod);
  const char *names[] = {"other", "kind-worker"};
  sf_verdict_t v[2];
  evaluate(p, names, 2, v);
  cr_assert_eq(v[0].fit, SF_FIT_NO);
  cr_assert_str_eq(v[0].reason, "claim dra-tutorial/some-gpu is allocated on node kind-worker");
  cr_assert_eq(v[1].fit, SF_FIT_YES, "%s", v[1].reason);
  sf_pod_plan_free(p);
  json_decref(pod);
}

Test(cluster, extended_resources_through_the_class) {
  nvidia();
  json_t *l = fx_load("nvidia-dra-driver-gpu/demo__specs__extended-resources__gpu-full.json");
  json_t *pod = json_deep_copy(fx_item(l, 1));
  sf_pod_plan_t *p = plan(pod);
  sf_verdict_t v[3];
  evaluate(p, NODES, 2, v);
  cr_assert_eq(v[0].fit, SF_FIT_YES, "%s", v[0].reason);
  cr_assert_eq(v[1].fit, SF_FIT_YES, "%s", v[1].reason);
  sf_pod_plan_free(p);
  /* Eight GPUs fit only the A100 node. */
  json_t *lim = json_object_get(json_object_get(json_array_get(json_object_get(json_object_get(pod, "spec"), "containers"), 0), "resources"), "limits");
  json_object_set_new(lim, "nvidia.com/gpu", json_integer(8));
  p = plan(pod);
  evaluate(p, NODES, 2, v);
  cr_assert_eq(v[0].fit, SF_FIT_YES, "%s", v[0].reason);
  cr_assert_eq(v[1].fit, SF_FIT_NO);
  sf_pod_plan_free(p);
  /* The implicit name deviceclass.resource.kubernetes.io/<class> works too. */
  json_object_del(lim, "nvidia.com/gpu");
  json_object_set_new(lim, "deviceclass.resource.kubernetes.io/gpu.nvidia.com", json_integer(5));
  p = plan(pod);
  evaluate(p, NODES, 2, v);
  cr_assert_eq(v[0].fit, SF_FIT_YES);
  cr_assert_eq(v[1].fit, SF_FIT_NO);
  sf_pod_plan_free(p);
  json_decref(pod);
  json_decref(l);
}

Test(cluster, pod_without_claims_is_empty) {
  nvidia();
  json_t *pod = fx_json("{\"metadata\":{\"name\":\"web\",\"namespace\":\"d\"},\"spec\":{\"containers\":"
                        "[{\"name\":\"c\",\"resources\":{\"limits\":{\"example.com/foo\":1,\"cpu\":\"2\"}}}]}}");
  sf_pod_plan_t *p = plan(pod);
  cr_assert(sf_pod_plan_empty(p), "an extended resource no class names is not slicefit's");
  sf_verdict_t v[3];
  evaluate(p, NODES, 3, v);
  for (int i = 0; i < 3; i++) cr_assert_eq(v[i].fit, SF_FIT_YES);
  sf_pod_plan_free(p);
  json_decref(pod);
}

Test(cluster, plan_errors_and_unknown_class) {
  json_t *bad = fx_json("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"resourceClaims\":[{\"name\":1}]}}");
  sf_pod_plan_t *p = NULL;
  cr_assert_eq(sf_cluster_plan(C, bad, &p, err, sizeof err), SF_EINVAL);
  cr_assert_str_eq(err, "spec.resourceClaims[0].name: expected a string, got an integer");
  cr_assert_null(p);
  json_decref(bad);
  load("nvidia-slices.json");
  json_t *pod = gpu_test1_pod("c1");
  p = plan(pod);
  sf_verdict_t v[1];
  evaluate(p, NODES, 1, v);
  /* Upstream's allocator fails a claim whose class does not exist: so does the filter. */
  cr_assert_eq(v[0].fit, SF_FIT_NO);
  cr_assert_str_eq(v[0].reason, "request gpu: could not retrieve device class gpu.nvidia.com");
  sf_pod_plan_free(p);
  json_decref(pod);
}

Test(cluster, taint_rule_blocks_untolerated_claims) {
  nvidia();
  json_t *rule = fx_json("{\"kind\":\"DeviceTaintRule\",\"metadata\":{\"name\":\"b-down\"},\"spec\":"
                         "{\"deviceSelector\":{\"driver\":\"gpu.nvidia.com\",\"pool\":\"gpu-node-b\"},"
                         "\"taint\":{\"key\":\"maint\",\"effect\":\"NoSchedule\"}}}");
  apply(rule);
  json_t *pod = gpu_test1_pod("c1");
  sf_pod_plan_t *p = plan(pod);
  sf_verdict_t v[2];
  evaluate(p, NODES, 2, v);
  cr_assert_eq(v[0].fit, SF_FIT_YES);
  cr_assert_eq(v[1].fit, SF_FIT_NO, "every device of gpu-node-b is tainted");
  sf_pod_plan_free(p);
  json_decref(pod);
  json_decref(rule);
}

Test(cluster, state_json) {
  nvidia();
  json_t *st = sf_cluster_state_json(C);
  cr_assert_eq(json_integer_value(json_object_get(json_object_get(st, "objects"), "ResourceSlice")), 2);
  json_t *nodes = json_object_get(st, "nodes");
  cr_assert_eq(json_array_size(nodes), 2);
  json_t *dev = json_array_get(json_object_get(json_array_get(nodes, 0), "devices"), 0);
  cr_assert_str_eq(json_string_value(json_object_get(dev, "driver")), "gpu.nvidia.com");
  cr_assert(json_object_get(json_object_get(dev, "capacity"), "gpu.nvidia.com/memory"));
  cr_assert_str_eq(json_string_value(json_object_get(json_object_get(st, "policy"), "strategy")),
                   "fragmentation");
  json_decref(st);
}

Test(cluster, device_turns_shared_under_an_allocation) {
  /* Found by fuzz_decode: a device republished as shared while a claim holds it. */
  json_t *s = slice("s", "n1", "n1", 1, 1, 1, "gpu");
  apply(s);
  json_t *cl = fx_json(
      "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"c\",\"namespace\":\"n\"},\"status\":"
      "{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"r\",\"driver\":\"gpu.example.com\","
      "\"pool\":\"n1\",\"device\":\"gpu-0\",\"shareID\":\"u1\",\"consumedCapacity\":{\"memory\":\"16Gi\"}}]}}}}");
  apply(cl);
  json_t *dev = json_array_get(json_object_get(json_object_get(s, "spec"), "devices"), 0);
  json_object_set_new(dev, "allowMultipleAllocations", json_true());
  apply(s);
  sf_index_t *idx = sf_cluster_index(C);
  sf_dev_id d = sf_index_dev_find(idx, "gpu.example.com", "n1", "gpu-0");
  sf_milli_t v, f;
  sf_index_dev_cap(idx, d, 0, &v, &f);
  cr_assert_eq(v - f, 16LL * 1024 * 1024 * 1024 * 1000, "now shared: the claim consumes 16Gi");
  json_decref(s);
  json_decref(cl);
}

Test(cluster, unsupported_selector_is_unsure_and_logged_once) {
  cr_redirect_stderr();
  load("nvidia-slices.json");
  json_t *cls = fx_json("{\"kind\":\"DeviceClass\",\"metadata\":{\"name\":\"gpu.nvidia.com\"},\"spec\":"
                        "{\"selectors\":[{\"cel\":{\"expression\":\"device.driver == 'x' || math.greatest(1, 2) == 2\"}}]}}");
  apply(cls);
  apply(cls);
  json_t *pod = gpu_test1_pod("c1");
  sf_pod_plan_t *p = plan(pod);
  sf_verdict_t v[2];
  evaluate(p, NODES, 2, v);
  cr_assert_eq(v[0].fit, SF_FIT_UNSURE, "an expression that does not compile is never a silent no");
  cr_assert_eq(v[1].fit, SF_FIT_UNSURE);
  sf_pod_plan_free(p);
  fflush(stderr);
  FILE *f = cr_get_redirected_stderr();
  char line[1024];
  int n = 0;
  while (fgets(line, sizeof line, f))
    n += strstr(line, "selector not supported") && strstr(line, "device.driver ==") ? 1 : 0;
  cr_assert_eq(n, 1, "logged %d times", n);
  json_decref(pod);
  json_decref(cls);
}

Test(cluster, per_device_nodes_and_shared_counters) {
  /* 1.35 layout: the counters in one slice, the devices consuming them in another. */
  json_t *ctr = fx_json(
      "{\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":\"ctr\"},\"spec\":{\"driver\":\"gpu.example.com\","
      "\"nodeName\":\"n1\",\"pool\":{\"name\":\"n1\",\"resourceSliceCount\":2},\"sharedCounters\":[{"
      "\"name\":\"gpu-0-counters\",\"counters\":{\"memory\":{\"value\":\"80Gi\"}}}]}}");
  json_t *devs = fx_json(
      "{\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":\"devs\"},\"spec\":{\"driver\":\"gpu.example.com\","
      "\"nodeName\":\"n1\",\"pool\":{\"name\":\"n1\",\"resourceSliceCount\":2},\"devices\":["
      "{\"name\":\"gpu-0-partition-0\",\"consumesCounters\":[{\"counterSet\":\"gpu-0-counters\","
      "\"counters\":{\"memory\":{\"value\":\"40Gi\"}}}]},"
      "{\"name\":\"gpu-0-full\",\"consumesCounters\":[{\"counterSet\":\"gpu-0-counters\","
      "\"counters\":{\"memory\":{\"value\":\"80Gi\"}}}]}]}}");
  apply(devs);
  cr_assert_eq(node_devs("n1"), 0, "the counter slice is missing");
  apply(ctr);
  cr_assert_eq(node_devs("n1"), 2);
  /* perDeviceNodeSelection: each device says where it is; an allNodes device reaches every node
   * the pool does (here the two it names), one device seen from both. */
  json_t *pd = fx_json(
      "{\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":\"pd\"},\"spec\":{\"driver\":\"net.example.com\","
      "\"perDeviceNodeSelection\":true,\"pool\":{\"name\":\"fabric\",\"resourceSliceCount\":1},"
      "\"devices\":[{\"name\":\"a\",\"nodeName\":\"n2\"},{\"name\":\"b\",\"nodeName\":\"n3\"},"
      "{\"name\":\"c\",\"allNodes\":true}]}}");
  apply(pd);
  cr_assert_eq(node_devs("n2"), 2);
  cr_assert_eq(node_devs("n3"), 2);
  sf_index_t *ix = sf_cluster_index(C);
  sf_dev_id dc = sf_index_dev_find(ix, "net.example.com", "fabric", "c");
  size_t nd2;
  const sf_dev_id *d2 = sf_index_node_devices(ix, sf_index_node_find(ix, "n2"), &nd2);
  cr_assert(nd2 == 2 && (d2[0] == dc || d2[1] == dc), "one device c, offered on n2");
  json_decref(ctr);
  json_decref(devs);
  json_decref(pd);
}

Test(cluster, constraints_reach_the_packer) {
  nvidia();
  /* gpu-node-a: pcieRoot pci0000:00 for gpu-0..3, pci0000:01 for gpu-4..7; gpu-node-b: all 00. */
#define CONSTRAINED_FMT \
      "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\"},\"spec\":{\"devices\":" \
      "{\"requests\":[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":\"gpu.nvidia.com\",\"count\":%d}}," \
      "{\"name\":\"b\",\"firstAvailable\":[{\"name\":\"one\",\"deviceClassName\":\"gpu.nvidia.com\"}]}]," \
      "\"constraints\":[{\"requests\":[\"a\",\"b/one\"],\"matchAttribute\":" \
      "\"resource.kubernetes.io/pcieRoot\"}]}}}"
  char buf[1024];
  snprintf(buf, sizeof buf, CONSTRAINED_FMT, "three", 3);
  json_t *c3 = fx_json(buf);
  snprintf(buf, sizeof buf, CONSTRAINED_FMT, "four", 4);
  json_t *c4 = fx_json(buf);
  apply(c3);
  apply(c4);
  json_t *pod = fx_json("{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"},\"spec\":{\"resourceClaims\":"
                        "[{\"name\":\"x\",\"resourceClaimName\":\"three\"}]}}");
  sf_pod_plan_t *p = plan(pod);
  sf_verdict_t v[2];
  evaluate(p, NODES, 2, v);
  cr_assert_eq(v[0].fit, SF_FIT_YES, "3+1 under one PCIe root: %s", v[0].reason);
  cr_assert_eq(v[1].fit, SF_FIT_YES, "%s", v[1].reason);
  sf_pod_plan_free(p);
  json_string_set(json_object_get(json_array_get(json_object_get(json_object_get(pod, "spec"), "resourceClaims"), 0), "resourceClaimName"), "four");
  p = plan(pod);
  evaluate(p, NODES, 2, v);
  cr_assert_eq(v[0].fit, SF_FIT_NO, "4+1 under one root of 4");
  cr_assert_eq(v[1].fit, SF_FIT_NO, "5 devices on a node of 4");
  sf_pod_plan_free(p);
  json_decref(pod);
  json_decref(c3);
  json_decref(c4);
}

Test(cluster, admin_access_is_modelled) {
  load("dra-example-driver/deployments__helm__dra-example-driver__templates__deviceclass.json");
  kind_worker();
  json_t *l = fx_load("dra-example-driver/admin-access__admin-access.json"), *it;
  size_t i;
  json_t *pod = NULL;
  json_array_foreach(json_object_get(l, "items"), i, it) {
    const char *k = json_string_value(json_object_get(it, "kind"));
    if (!strcmp(k, "ResourceClaimTemplate")) {
      json_t *cl = json_pack("{s:s,s:{s:s,s:s},s:O}", "kind", "ResourceClaim", "metadata", "name",
                             "admin-claim", "namespace",
                             json_string_value(json_object_get(json_object_get(it, "metadata"), "namespace")),
                             "spec", json_object_get(json_object_get(it, "spec"), "spec"));
      apply(cl);
      json_decref(cl);
    }
    if (!strcmp(k, "Pod") && !pod) pod = json_deep_copy(it);
  }
  cr_assert(pod);
  json_t *st = json_pack("{s:[]}", "resourceClaimStatuses"), *rc;
  json_array_foreach(json_object_get(json_object_get(pod, "spec"), "resourceClaims"), i, rc)
    json_array_append_new(json_object_get(st, "resourceClaimStatuses"),
                          json_pack("{s:O,s:s}", "name", json_object_get(rc, "name"),
                                    "resourceClaimName", "admin-claim"));
  json_object_set_new(pod, "status", st);
  sf_pod_plan_t *p = plan(pod);
  sf_verdict_t v[1];
  const char *names[] = {"kind-worker"};
  evaluate(p, names, 1, v);
  /* Admin access is modelled: it may take a device others hold, so the node fits. */
  cr_assert_eq(v[0].fit, SF_FIT_YES, "%s", v[0].reason);
  sf_pod_plan_free(p);
  json_decref(pod);
  json_decref(l);
}

/* One shared example-driver GPU as its chart publishes it with gpuAllowMultipleAllocations. */
static void shared_gpu_node(void) {
  json_t *s = fx_json(
      "{\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":\"n1-gpu\"},\"spec\":{\"driver\":\"gpu.example.com\","
      "\"nodeName\":\"n1\",\"pool\":{\"name\":\"n1\",\"generation\":1,\"resourceSliceCount\":1},\"devices\":["
      "{\"name\":\"gpu-0\",\"allowMultipleAllocations\":true,\"capacity\":{"
      "\"memory\":{\"value\":\"80Gi\",\"requestPolicy\":{\"default\":\"80Gi\",\"validRange\":"
      "{\"min\":\"1Gi\",\"step\":\"1Gi\",\"max\":\"80Gi\"}}},"
      "\"compute\":{\"value\":\"100\",\"requestPolicy\":{\"default\":\"100\",\"validRange\":"
      "{\"min\":\"1\",\"step\":\"1\",\"max\":\"100\"}}}}}]}}");
  apply(s);
  json_decref(s);
}

Test(cluster, consumable_capacity_from_the_example_driver) {
  load("dra-example-driver/deployments__helm__dra-example-driver__templates__deviceclass.json");
  shared_gpu_node();
  json_t *l = fx_load("dra-example-driver/gpu-allow-multiple-allocations__gpu-allow-multiple-allocations.json");
  cr_assert_eq(sf_cluster_load_list(C, l, err, sizeof err), 0, "%s", err);
  cr_assert_eq(sf_cluster_count(C, SF_KIND_RESOURCE_CLAIM), 2, "claims kept, pods and namespaces skipped");
  const char *names[] = {"n1"};
  sf_verdict_t v[1];
  sf_pod_plan_t *p = plan(fx_item(l, 3));
  evaluate(p, names, 1, v);
  cr_assert_eq(v[0].fit, SF_FIT_YES, "16Gi and 20 compute of a free GPU: %s", v[0].reason);
  sf_pod_plan_free(p);
  /* Another claim already holds 70Gi of it: 16Gi no longer fits. */
  json_t *held = fx_json(
      "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"big\",\"namespace\":\"other\"},\"status\":"
      "{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"r\",\"driver\":\"gpu.example.com\","
      "\"pool\":\"n1\",\"device\":\"gpu-0\",\"shareID\":\"s1\",\"consumedCapacity\":{\"memory\":\"70Gi\","
      "\"compute\":\"10\"}}]},\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":"
      "\"metadata.name\",\"operator\":\"In\",\"values\":[\"n1\"]}]}]}}}}");
  apply(held);
  p = plan(fx_item(l, 3));
  evaluate(p, names, 1, v);
  cr_assert_eq(v[0].fit, SF_FIT_NO);
  sf_pod_plan_free(p);
  json_decref(held);
  json_decref(l);
}

/* The learned mix of the index, as text, for comparisons. */
static void mix_text(sf_cluster_t *c, char *out, size_t len) {
  sf_index_t *idx = sf_cluster_index(c);
  size_t n = 0;
  out[0] = '\0';
  for (size_t i = 0; i < sf_mix_size(idx); i++) {
    sf_shape_t s;
    cr_assert_eq(sf_mix_shape(idx, i, &s), 0);
    n += (size_t)snprintf(out + n, len - n, "%lldx%u@%.4f;", (long long)s.amount, s.count, s.weight);
  }
}

#define MIX_CLAIM_FMT                                                                              \
  "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\"},\"spec\":{\"devices\":" \
  "{\"requests\":[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":\"gpu.nvidia.com\",\"count\":%d}}]}}}"

/* The mix is the claims present: history, order and a restart do not change it. */
Test(cluster, learned_mix_is_the_claims_present) {
  nvidia();
  char buf[512], a[512], b[512];
  json_t *cl[3];
  for (int i = 0; i < 3; i++) {
    char name[16];
    snprintf(name, sizeof name, "c%d", i);
    snprintf(buf, sizeof buf, MIX_CLAIM_FMT, name, i + 1);
    cl[i] = fx_json(buf);
  }
  json_t *pod = fx_json("{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"},\"spec\":{}}");
  sf_pod_plan_t *p = plan(pod);
  sf_verdict_t v[2];
  evaluate(p, NODES, 2, v);  /* the classes are read: claims now teach as they come and go */
  sf_pod_plan_free(p);
  cr_assert_eq(sf_mix_size(sf_cluster_index(C)), 0);
  apply(cl[0]);
  apply(cl[1]);
  apply(cl[1]);  /* modified: still one claim */
  apply(cl[2]);
  cr_assert_eq(sf_mix_size(sf_cluster_index(C)), 3);
  cr_assert_eq(sf_cluster_delete(C, SF_KIND_RESOURCE_CLAIM, cl[0], err, sizeof err), 0);
  p = plan(pod);
  evaluate(p, NODES, 2, v);
  sf_pod_plan_free(p);
  mix_text(C, a, sizeof a);
  cr_assert_eq(sf_mix_size(sf_cluster_index(C)), 2, "%s", a);
  /* Another daemon that lists the same two claims, in the other order. */
  sf_cluster_t *keep = C;
  C = sf_cluster_create(NULL);
  nvidia();
  apply(cl[2]);
  apply(cl[1]);
  p = plan(pod);
  evaluate(p, NODES, 2, v);
  sf_pod_plan_free(p);
  mix_text(C, b, sizeof b);
  cr_assert_str_eq(a, b);
  sf_cluster_destroy(C);
  C = keep;
  json_decref(pod);
  for (int i = 0; i < 3; i++) json_decref(cl[i]);
}

/* ---- the claims of each pool ---- */

/* A claim named `name` allocated on device `dev` of pool `pool` (example driver), or pending. */
static json_t *pool_claim(const char *name, const char *pool, const char *dev) {
  char buf[1024];
  if (!pool)
    snprintf(buf, sizeof buf, "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\"}}", name);
  else
    snprintf(buf, sizeof buf,
             "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\"},\"status\":"
             "{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"r\",\"driver\":\"gpu.example.com\","
             "\"pool\":\"%s\",\"device\":\"%s\"}]}}}}",
             name, pool, dev);
  return fx_json(buf);
}

/* The node claim ns/`name` is recorded on, or "-" when it is not recorded. */
static const char *recorded_on(const char *name) {
  char key[64];
  sf_index_t *idx = sf_cluster_index(C);
  snprintf(key, sizeof key, "ns/%s", name);
  sf_alloc_id a = sf_index_alloc_find(idx, key);
  return a < 0 ? "-" : sf_index_node_name(idx, sf_index_alloc_node(idx, a));
}

static void apply_claim(const char *name, const char *pool, const char *dev) {
  json_t *cl = pool_claim(name, pool, dev);
  apply(cl);
  json_decref(cl);
}

static void delete_claim(const char *name) {
  json_t *cl = pool_claim(name, NULL, NULL);
  cr_assert_eq(sf_cluster_delete(C, SF_KIND_RESOURCE_CLAIM, cl, err, sizeof err), 0, "%s", err);
  json_decref(cl);
  valid();
}

/* Republishes pool `pool` (slice of the same name on node `pool`) with `ndev` devices. */
static void publish_pool(const char *pool, int gen, int ndev) {
  json_t *s = slice(pool, pool, pool, gen, 1, ndev, "gpu");
  apply(s);
  json_decref(s);
}

/* Claims come, go, and move between pools; a slice republished takes its pool's claims off
 * the index and puts them back, and no other pool's. */
Test(cluster, pool_claim_sets_follow_claims) {
  publish_pool("n1", 1, 4);
  publish_pool("n2", 1, 4);
  apply_claim("a", "n1", "gpu-0");
  apply_claim("b", "n1", "gpu-1");
  apply_claim("c", "n1", "gpu-2");
  apply_claim("d", "n2", "gpu-0");
  delete_claim("a");                /* the last stored claim (d) moves into its slot */
  apply_claim("e", NULL, NULL);     /* and e takes d's old one */
  apply_claim("b", "n2", "gpu-1");  /* moves to the other pool */
  apply_claim("e", "n1", "gpu-3");  /* pending, then allocated */
  cr_assert_str_eq(recorded_on("b"), "n2");
  publish_pool("n1", 2, 0);         /* n1's devices are gone: its claims with them */
  cr_assert_str_eq(recorded_on("c"), "-");
  cr_assert_str_eq(recorded_on("e"), "-");
  cr_assert_str_eq(recorded_on("b"), "n2");
  cr_assert_str_eq(recorded_on("d"), "n2");
  publish_pool("n2", 2, 0);
  cr_assert_str_eq(recorded_on("b"), "-");
  cr_assert_str_eq(recorded_on("d"), "-");
  publish_pool("n1", 3, 4);
  publish_pool("n2", 3, 4);
  cr_assert_str_eq(recorded_on("c"), "n1");
  cr_assert_str_eq(recorded_on("e"), "n1");
  cr_assert_str_eq(recorded_on("b"), "n2");
  cr_assert_str_eq(recorded_on("d"), "n2");
  cr_assert_str_eq(recorded_on("a"), "-");
  delete_claim("c");                /* e fills c's place in n1's set */
  delete_claim("b");
  publish_pool("n1", 4, 0);
  cr_assert_str_eq(recorded_on("e"), "-");
  publish_pool("n1", 5, 4);
  cr_assert_str_eq(recorded_on("e"), "n1");
  apply_claim("e", NULL, NULL);     /* allocation taken back */
  publish_pool("n1", 6, 0);
  publish_pool("n1", 7, 4);
  cr_assert_str_eq(recorded_on("e"), "-");
  cr_assert_str_eq(recorded_on("d"), "n2");
}

/* A relist of the claims rebuilds the pool sets; a claim with results on two pools (and two on
 * one) is in both sets once. */
Test(cluster, pool_claim_sets_after_relist) {
  publish_pool("n1", 1, 2);
  publish_pool("n2", 1, 2);
  apply_claim("old", "n1", "gpu-0");
  json_t *items = json_array();
  json_array_append_new(items, pool_claim("x", "n2", "gpu-0"));
  json_array_append_new(items, fx_json(
      "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"two\",\"namespace\":\"ns\"},\"status\":"
      "{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"r\",\"driver\":\"gpu.example.com\","
      "\"pool\":\"n1\",\"device\":\"gpu-0\"},{\"request\":\"r\",\"driver\":\"gpu.example.com\","
      "\"pool\":\"n1\",\"device\":\"gpu-1\"},{\"request\":\"s\",\"driver\":\"gpu.example.com\","
      "\"pool\":\"n2\",\"device\":\"gpu-1\"}]}}}}"));
  cr_assert_eq(sf_cluster_replace(C, SF_KIND_RESOURCE_CLAIM, items, err, sizeof err), 0, "%s", err);
  valid();
  cr_assert_str_eq(recorded_on("old"), "-");
  cr_assert_str_eq(recorded_on("two"), "n1", "recorded on its first device's node");
  publish_pool("n1", 2, 0);
  cr_assert_str_eq(recorded_on("two"), "n2", "n1 gone: its devices on n2 remain");
  cr_assert_str_eq(recorded_on("x"), "n2");
  publish_pool("n1", 3, 2);
  cr_assert_str_eq(recorded_on("two"), "n1");
  delete_claim("two");
  publish_pool("n2", 2, 0);
  publish_pool("n2", 3, 2);
  cr_assert_str_eq(recorded_on("x"), "n2");
  cr_assert_str_eq(recorded_on("two"), "-");
  json_decref(items);
}

/* Every claim recorded on the node of the pool `want` says (-1: not recorded). */
static void claims_recorded_as(const int *want, size_t n, const char *when) {
  for (size_t i = 0; i < n; i++) {
    char name[32], node[16];
    snprintf(name, sizeof name, "c%zu", i);
    snprintf(node, sizeof node, "p%d", want[i]);
    cr_assert_str_eq(recorded_on(name), want[i] < 0 ? "-" : node, "claim %s %s", name, when);
  }
}

/* A long deterministic run of claims added, allocated, moved, made pending and deleted: each
 * pool republished without devices takes exactly its claims off, and with them back. */
Test(cluster, pool_claim_sets_under_churn) {
  enum { NPOOLS = 4, NCLAIMS = 12, STEPS = 300 };
  int gen[NPOOLS], on[NCLAIMS], off[NCLAIMS];
  char pool[16], name[16], dev[16];
  for (int p = 0; p < NPOOLS; p++) {
    snprintf(pool, sizeof pool, "p%d", p);
    publish_pool(pool, gen[p] = 1, NCLAIMS);
  }
  for (int i = 0; i < NCLAIMS; i++) on[i] = -1;
  unsigned x = 12345;
  for (int step = 0; step < STEPS; step++) {
    x = x * 1103515245u + 12345u;
    int i = (int)((x >> 8) % NCLAIMS), r = (int)((x >> 16) % 6);
    snprintf(name, sizeof name, "c%d", i);
    snprintf(dev, sizeof dev, "gpu-%d", i);
    snprintf(pool, sizeof pool, "p%d", r % NPOOLS);
    if (r == 0) delete_claim(name);
    else if (r == 1) apply_claim(name, NULL, NULL);
    else apply_claim(name, pool, dev);
    on[i] = r < 2 ? -1 : r % NPOOLS;
    int q = (int)((x >> 20) % NPOOLS);
    snprintf(pool, sizeof pool, "p%d", q);
    publish_pool(pool, ++gen[q], 0);
    for (int k = 0; k < NCLAIMS; k++) off[k] = on[k] == q ? -1 : on[k];
    claims_recorded_as(off, NCLAIMS, "with its pool gone");
    publish_pool(pool, ++gen[q], NCLAIMS);
    claims_recorded_as(on, NCLAIMS, "with its pool back");
  }
}

/* A claim modified with another spec teaches its new shapes in place of the old ones; modified
 * with the same spec (its status), the mix stays as it is. */
Test(cluster, learned_mix_follows_a_modified_spec) {
  nvidia();
  char buf[512], a[512], b[512];
  json_t *pod = fx_json("{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"},\"spec\":{}}");
  sf_pod_plan_t *p = plan(pod);
  sf_verdict_t v[2];
  evaluate(p, NODES, 2, v);
  sf_pod_plan_free(p);
  snprintf(buf, sizeof buf, MIX_CLAIM_FMT, "c", 1);
  json_t *one = fx_json(buf);
  snprintf(buf, sizeof buf, MIX_CLAIM_FMT, "c", 2);
  json_t *two = fx_json(buf);
  apply(one);
  mix_text(C, a, sizeof a);
  cr_assert_str_eq(a, "0x1@1.0000;");
  json_object_set_new(one, "status", json_pack("{s:{s:{s:[]}}}", "allocation", "devices", "results"));
  apply(one);
  mix_text(C, b, sizeof b);
  cr_assert_str_eq(b, a, "same spec, new status: the same mix");
  apply(two);
  mix_text(C, a, sizeof a);
  cr_assert_str_eq(a, "0x2@1.0000;", "the count-1 shape is gone, the count-2 one present");
  cr_assert_eq(sf_cluster_delete(C, SF_KIND_RESOURCE_CLAIM, two, err, sizeof err), 0);
  cr_assert_eq(sf_mix_size(sf_cluster_index(C)), 0);
  json_decref(one);
  json_decref(two);
  json_decref(pod);
}

/* A network-attached device follows the Node's labels; a known node nothing reaches is a no. */
Test(cluster, node_labels_decide_where_a_selector_slice_reaches) {
  json_t *cls = fx_json("{\"kind\":\"DeviceClass\",\"metadata\":{\"name\":\"net\"},\"spec\":{\"selectors\":"
                        "[{\"cel\":{\"expression\":\"device.driver == \\\"net.example.com\\\"\"}}]}}");
  json_t *sl = fx_json(
      "{\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":\"fabric\"},\"spec\":{\"driver\":\"net.example.com\","
      "\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"rack\",\"operator\":\"In\","
      "\"values\":[\"r1\"]}]}]},\"pool\":{\"name\":\"fabric\",\"resourceSliceCount\":1,\"generation\":1},"
      "\"devices\":[{\"name\":\"nic-0\"}]}}");
  json_t *claim = fx_json("{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"c\",\"namespace\":\"n\"},"
                          "\"spec\":{\"devices\":{\"requests\":[{\"name\":\"r\",\"exactly\":{\"deviceClassName\":"
                          "\"net\"}}]}}}");
  json_t *n1 = fx_json("{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\",\"labels\":{\"rack\":\"r2\"}}}");
  json_t *pod = fx_json("{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\"},\"spec\":{\"resourceClaims\":"
                        "[{\"name\":\"x\",\"resourceClaimName\":\"c\"}]}}");
  apply(cls);
  apply(sl);
  apply(claim);
  apply(n1);
  const char *names[] = {"n1", "n9"};
  sf_verdict_t v[2];
  sf_pod_plan_t *p = plan(pod);
  evaluate(p, names, 2, v);
  cr_assert_eq(v[0].fit, SF_FIT_NO, "n1 is a node the fabric does not reach: %s", v[0].reason);
  cr_assert_eq(v[1].fit, SF_FIT_UNSURE, "n9 is no Node slicefit knows");
  sf_pod_plan_free(p);
  json_object_set_new(json_object_get(json_object_get(n1, "metadata"), "labels"), "rack", json_string("r1"));
  apply(n1);
  p = plan(pod);
  evaluate(p, names, 1, v);
  cr_assert_eq(v[0].fit, SF_FIT_YES, "relabelled into the rack: %s", v[0].reason);
  sf_pod_plan_free(p);
  cr_assert_eq(sf_cluster_count(C, SF_KIND_NODE), 1);
  cr_assert_eq(sf_cluster_delete(C, SF_KIND_NODE, n1, err, sizeof err), 0);
  p = plan(pod);
  evaluate(p, names, 1, v);
  cr_assert_eq(v[0].fit, SF_FIT_UNSURE, "deleted: no longer a known Node");
  sf_pod_plan_free(p);
  valid();
  json_decref(cls);
  json_decref(sl);
  json_decref(claim);
  json_decref(n1);
  json_decref(pod);
}

/* A result without shareID holds a shared device whole, also one that publishes no capacity
 * (there is nothing to fill up, so only the hold itself can keep other claims off). */
Test(cluster, result_without_share_id_holds_a_shared_device_whole) {
  load("dra-example-driver/deployments__helm__dra-example-driver__templates__deviceclass.json");
  json_t *s = fx_json(
      "{\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":\"n1-gpu\"},\"spec\":{\"driver\":\"gpu.example.com\","
      "\"nodeName\":\"n1\",\"pool\":{\"name\":\"n1\",\"generation\":1,\"resourceSliceCount\":1},\"devices\":["
      "{\"name\":\"gpu-0\",\"allowMultipleAllocations\":true}]}}");
  apply(s);
  json_t *want = fx_json(
      "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"want\",\"namespace\":\"ns\"},\"spec\":{\"devices\":"
      "{\"requests\":[{\"name\":\"r\",\"exactly\":{\"deviceClassName\":\"gpu.example.com\"}}]}}}");
  apply(want);
  json_t *pod = fx_json(
      "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"},\"spec\":{\"containers\":"
      "[{\"name\":\"c\",\"image\":\"x\"}],\"resourceClaims\":[{\"name\":\"g\",\"resourceClaimName\":\"want\"}]}}");
#define HELD_FMT                                                                                        \
  "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"held\",\"namespace\":\"other\"},\"status\":"      \
  "{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"r\",\"driver\":\"gpu.example.com\","        \
  "\"pool\":\"n1\",\"device\":\"gpu-0\"%s}]}}}}"
  const char *names[] = {"n1"};
  sf_verdict_t v[1];
  char text[1024];
  /* Shared (a shareID): another share fits. */
  snprintf(text, sizeof text, HELD_FMT, ",\"shareID\":\"s1\"");
  json_t *held = fx_json(text);
  apply(held);
  json_decref(held);
  sf_pod_plan_t *p = plan(pod);
  evaluate(p, names, 1, v);
  cr_assert_eq(v[0].fit, SF_FIT_YES, "%s", v[0].reason);
  sf_pod_plan_free(p);
  /* The same result without its shareID: the device is held whole, nothing else fits. */
  snprintf(text, sizeof text, HELD_FMT, "");
  held = fx_json(text);
  apply(held);
  p = plan(pod);
  evaluate(p, names, 1, v);
  cr_assert_eq(v[0].fit, SF_FIT_NO, "held whole, yet: %s", v[0].reason);
  sf_pod_plan_free(p);
  /* Deleting the claim frees it. */
  cr_assert_eq(sf_cluster_delete(C, SF_KIND_UNKNOWN, held, err, sizeof err), 0, "%s", err);
  json_decref(held);
  valid();
  p = plan(pod);
  evaluate(p, names, 1, v);
  cr_assert_eq(v[0].fit, SF_FIT_YES, "%s", v[0].reason);
  sf_pod_plan_free(p);
  json_decref(pod);
  json_decref(want);
  json_decref(s);
}

/* The verdict on n1 for a pod whose one claim asks class `cls` with request selector `sel`. */
static sf_verdict_t one_selector(const char *cls_sel, const char *req_sel) {
  char text[1024];
  snprintf(text, sizeof text,
           "{\"kind\":\"DeviceClass\",\"metadata\":{\"name\":\"c\"},\"spec\":{\"selectors\":[{\"cel\":"
           "{\"expression\":\"%s\"}}]}}",
           cls_sel);
  json_t *o = fx_json(text);
  apply(o);
  json_decref(o);
  snprintf(text, sizeof text,
           "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"rc\",\"namespace\":\"ns\"},\"spec\":{\"devices\":"
           "{\"requests\":[{\"name\":\"r\",\"exactly\":{\"deviceClassName\":\"c\",\"selectors\":[{\"cel\":"
           "{\"expression\":\"%s\"}}]}}]}}}",
           req_sel);
  o = fx_json(text);
  apply(o);
  json_decref(o);
  json_t *pod = fx_json(
      "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"},\"spec\":{\"containers\":"
      "[{\"name\":\"c\",\"image\":\"x\"}],\"resourceClaims\":[{\"name\":\"g\",\"resourceClaimName\":\"rc\"}]}}");
  const char *names[] = {"n1"};
  sf_verdict_t v[1];
  sf_pod_plan_t *p = plan(pod);
  evaluate(p, names, 1, v);
  sf_pod_plan_free(p);
  json_decref(pod);
  return v[0];
}

/* DRA fails a claim whose class or request selector is not valid CEL: no, with the error. What
 * is merely outside slicefit's CEL subset is left to the in-tree plugin: unsure. */
Test(cluster, invalid_cel_fails_the_claim_with_its_error) {
  json_t *s = fx_json(
      "{\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":\"n1-gpu\"},\"spec\":{\"driver\":\"gpu.example.com\","
      "\"nodeName\":\"n1\",\"pool\":{\"name\":\"n1\",\"generation\":1,\"resourceSliceCount\":1},\"devices\":["
      "{\"name\":\"gpu-0\"}]}}");
  apply(s);
  json_decref(s);
  const char *ok = "device.driver == 'gpu.example.com'";
  sf_verdict_t v = one_selector(ok, "true");
  cr_assert_eq(v.fit, SF_FIT_YES, "%s", v.reason);
  v = one_selector(ok, "noSuchVar");
  cr_assert_eq(v.fit, SF_FIT_NO);
  cr_assert(strstr(v.reason, "selector noSuchVar: ") && strstr(v.reason, "noSuchVar'"), "%s", v.reason);
  v = one_selector("device.driver ==", "true");
  cr_assert_eq(v.fit, SF_FIT_NO, "a class selector with a syntax error: %s", v.reason);
  cr_assert(strstr(v.reason, "selector device.driver ==: "), "%s", v.reason);
  v = one_selector(ok, "device.driver == 1");
  cr_assert_eq(v.fit, SF_FIT_NO, "no overload for string == int: %s", v.reason);
  /* An extension library slicefit lacks, an unsupported function: unsure. */
  v = one_selector(ok, "math.greatest(1, 2) > 0");
  cr_assert_eq(v.fit, SF_FIT_UNSURE, "%s", v.reason);
  v = one_selector(ok, "foo(1)");
  cr_assert_eq(v.fit, SF_FIT_UNSURE, "%s", v.reason);
}

/* An unqualified capacity name belongs to the driver the class's selector names, in single or
 * double quotes: not to whichever driver happens to publish first. */
Test(cluster, capacity_name_takes_the_driver_of_a_double_quoted_class) {
  json_t *other = fx_json(
      "{\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":\"n1-nic\"},\"spec\":{\"driver\":\"nic.example.com\","
      "\"nodeName\":\"n1\",\"pool\":{\"name\":\"n1-nic\",\"generation\":1,\"resourceSliceCount\":1},\"devices\":["
      "{\"name\":\"nic-0\",\"allowMultipleAllocations\":true,\"capacity\":{\"memory\":{\"value\":\"1Gi\"}}}]}}");
  apply(other);
  json_decref(other);
  shared_gpu_node();
  const char *quotes[] = {"'gpu.example.com'", "\\\"gpu.example.com\\\""};
  for (size_t i = 0; i < 2; i++) {
    char text[1024];
    snprintf(text, sizeof text,
             "{\"kind\":\"DeviceClass\",\"metadata\":{\"name\":\"c\"},\"spec\":{\"selectors\":[{\"cel\":"
             "{\"expression\":\"device.driver == %s\"}}]}}",
             quotes[i]);
    json_t *cls = fx_json(text);
    apply(cls);
    json_decref(cls);
    json_t *cl = fx_json(
        "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"rc\",\"namespace\":\"ns\"},\"spec\":{\"devices\":"
        "{\"requests\":[{\"name\":\"r\",\"exactly\":{\"deviceClassName\":\"c\",\"capacity\":{\"requests\":"
        "{\"memory\":\"16Gi\"}}}}]}}}");
    apply(cl);
    json_decref(cl);
    json_t *pod = fx_json(
        "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"},\"spec\":{\"containers\":"
        "[{\"name\":\"c\",\"image\":\"x\"}],\"resourceClaims\":[{\"name\":\"g\",\"resourceClaimName\":\"rc\"}]}}");
    const char *names[] = {"n1"};
    sf_verdict_t v[1];
    sf_pod_plan_t *p = plan(pod);
    evaluate(p, names, 1, v);
    /* gpu.example.com/memory (80Gi): fits; nic.example.com/memory (1Gi) would not. */
    cr_assert_eq(v[0].fit, SF_FIT_YES, "selector %s: %s", quotes[i], v[0].reason);
    sf_pod_plan_free(p);
    json_decref(pod);
  }
}

/* DRA refuses allocation mode All on a node that any pool reaches incomplete or invalid, whatever
 * its driver; an ExactCount request does not look at other pools. */
Test(cluster, all_mode_refuses_a_node_an_unsettled_pool_reaches, .init = cr_redirect_stderr) {
  load("dra-example-driver/deployments__helm__dra-example-driver__templates__deviceclass.json");
  json_t *gpu = slice("gpus", "n1", "n1", 1, 1, 2, "gpu");
  apply(gpu);
#define NIC_FMT                                                                                          \
  "{\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":\"%s\"},\"spec\":{\"driver\":\"nic.example.com\","     \
  "\"nodeName\":\"n1\",\"pool\":{\"name\":\"nics\",\"generation\":1,\"resourceSliceCount\":2},\"devices\":[" \
  "{\"name\":\"nic-0\"}]}}"
  char text[512];
  snprintf(text, sizeof text, NIC_FMT, "nic-a");
  json_t *nic_a = fx_json(text);
  apply(nic_a);  /* one slice of two: nics is incomplete on n1 */
  json_t *all = fx_json(
      "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"all\",\"namespace\":\"ns\"},\"spec\":{\"devices\":"
      "{\"requests\":[{\"name\":\"r\",\"exactly\":{\"deviceClassName\":\"gpu.example.com\",\"allocationMode\":"
      "\"All\"}}]}}}");
  json_t *one = fx_json(
      "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"one\",\"namespace\":\"ns\"},\"spec\":{\"devices\":"
      "{\"requests\":[{\"name\":\"r\",\"exactly\":{\"deviceClassName\":\"gpu.example.com\"}}]}}}");
  apply(all);
  apply(one);
  json_t *pod_all = fx_json(
      "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"},\"spec\":{\"containers\":"
      "[{\"name\":\"c\",\"image\":\"x\"}],\"resourceClaims\":[{\"name\":\"g\",\"resourceClaimName\":\"all\"}]}}");
  json_t *pod_one = fx_json(
      "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"q\",\"namespace\":\"ns\"},\"spec\":{\"containers\":"
      "[{\"name\":\"c\",\"image\":\"x\"}],\"resourceClaims\":[{\"name\":\"g\",\"resourceClaimName\":\"one\"}]}}");
  const char *names[] = {"n1"};
  sf_verdict_t v[1];
  sf_pod_plan_t *p = plan(pod_all);
  evaluate(p, names, 1, v);
  cr_assert_eq(v[0].fit, SF_FIT_NO);
  cr_assert_str_eq(v[0].reason,
                   "claim ns/all, request r: asks for all devices, but resource pool nic.example.com/nics is "
                   "currently being updated");
  sf_pod_plan_free(p);
  p = plan(pod_one);
  evaluate(p, names, 1, v);
  cr_assert_eq(v[0].fit, SF_FIT_YES, "%s", v[0].reason);
  sf_pod_plan_free(p);
  /* The second slice names nic-0 again: complete, but invalid. */
  snprintf(text, sizeof text, NIC_FMT, "nic-b");
  json_t *nic_b = fx_json(text);
  apply(nic_b);
  p = plan(pod_all);
  evaluate(p, names, 1, v);
  cr_assert_eq(v[0].fit, SF_FIT_NO);
  cr_assert(strstr(v[0].reason, "resource pool nic.example.com/nics is currently invalid"), "%s", v[0].reason);
  sf_pod_plan_free(p);
  /* Gone: All takes both GPUs. */
  cr_assert_eq(sf_cluster_delete(C, SF_KIND_UNKNOWN, nic_a, err, sizeof err), 0, "%s", err);
  cr_assert_eq(sf_cluster_delete(C, SF_KIND_UNKNOWN, nic_b, err, sizeof err), 0, "%s", err);
  p = plan(pod_all);
  evaluate(p, names, 1, v);
  cr_assert_eq(v[0].fit, SF_FIT_YES, "%s", v[0].reason);
  sf_pod_plan_free(p);
  valid();
  json_decref(gpu);
  json_decref(nic_a);
  json_decref(nic_b);
  json_decref(all);
  json_decref(one);
  json_decref(pod_all);
  json_decref(pod_one);
}
