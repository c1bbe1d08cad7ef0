/* The cluster: pools, generations, allocations, taint rules and relists. Pod plans are in
 * test_cluster_plan.c, the claims of each pool in test_cluster_claims.c, DRA's finer rules in
 * test_cluster_rules.c; their helpers in cluster_fx.c. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <string.h>
#include "slicefit/mix.h"
#include "slicefit/cluster.h"
#include "fixture.h"
#include "cluster_fx.h"

static void setup(void)
{
  ct_cluster = sf_cluster_create(NULL);
}
static void teardown(void)
{
  sf_cluster_destroy(ct_cluster);
}

TestSuite(cluster, .init = setup, .fini = teardown);

Test(cluster, nvidia_list_loads_whole)
{
  ct_nvidia();
  cr_assert_eq(sf_cluster_count(ct_cluster, SF_KIND_RESOURCE_SLICE), 2);
  cr_assert_eq(sf_cluster_count(ct_cluster, SF_KIND_DEVICE_CLASS), 2);
  cr_assert_eq(ct_node_devs("gpu-node-a"), 8);
  cr_assert_eq(ct_node_devs("gpu-node-b"), 4);
  sf_index_t *idx = sf_cluster_index(ct_cluster);
  sf_dev_id d = sf_index_dev_find(idx, "gpu.nvidia.com", "gpu-node-b", "gpu-3");
  cr_assert_geq(d, 0);
  cr_assert_str_eq(sf_index_dev_attr(idx, d, "gpu.nvidia.com/productName")->s,
                   "NVIDIA H100 80GB HBM3");
  cr_assert_eq(sf_kind_from_name("DeviceClass"), SF_KIND_DEVICE_CLASS);
  cr_assert_eq(sf_kind_from_name("Pod"), SF_KIND_POD, "pods are tracked, for node CPU");
  cr_assert_eq(sf_kind_from_name("Deployment"), SF_KIND_UNKNOWN);
}

Test(cluster, newest_generation_counts)
{
  json_t *s1 = ct_slice("s1", "n1", "n1", 1, 1, 4, "old");
  json_t *s2 = ct_slice("s2", "n1", "n1", 2, 1, 2, "new");
  ct_apply(s1);
  cr_assert_eq(ct_node_devs("n1"), 4);
  ct_apply(s2);
  cr_assert_eq(ct_node_devs("n1"), 2, "generation 1 no longer counts");
  cr_assert_geq(sf_index_dev_find(sf_cluster_index(ct_cluster), "gpu.example.com", "n1", "new-1"), 0);
  cr_assert_lt(sf_index_dev_find(sf_cluster_index(ct_cluster), "gpu.example.com", "n1", "old-1"), 0);
  cr_assert_eq(sf_cluster_delete(ct_cluster, SF_KIND_RESOURCE_SLICE, s2, ct_err, sizeof ct_err), 0);
  ct_valid();
  cr_assert_eq(ct_node_devs("n1"), 4, "with generation 2 gone, generation 1 is the newest");
  json_decref(s1);
  json_decref(s2);
}

Test(cluster, incomplete_pool_offers_nothing)
{
  json_t *a = ct_slice("a", "n1", "p", 3, 2, 2, "a"), *b = ct_slice("b", "n1", "p", 3, 2, 3, "b");
  ct_apply(a);
  cr_assert_eq(ct_node_devs("n1"), 0, "1 of 2 slices: incomplete");
  ct_apply(b);
  cr_assert_eq(ct_node_devs("n1"), 5);
  json_t *st = sf_cluster_state_json(ct_cluster);
  json_t *pool = json_array_get(json_object_get(st, "pools"), 0);
  cr_assert(json_is_true(json_object_get(pool, "complete")));
  cr_assert_eq(json_integer_value(json_object_get(pool, "slices")), 2);
  json_decref(st);
  cr_assert_eq(sf_cluster_delete(ct_cluster, SF_KIND_RESOURCE_SLICE, a, ct_err, sizeof ct_err), 0);
  cr_assert_eq(ct_node_devs("n1"), 0);
  cr_assert_lt(sf_index_node_find(sf_cluster_index(ct_cluster), "n1"), 0,
               "a node without devices goes");
  json_decref(a);
  json_decref(b);
}

Test(cluster, allocated_claim_is_recorded)
{
  ct_kind_worker();
  ct_load("k8s-website/install-use-dra.kubectl-get-resourceclaim-output.json");
  sf_index_t *idx = sf_cluster_index(ct_cluster);
  sf_alloc_id a = sf_index_alloc_find(idx, "dra-tutorial/some-gpu");
  cr_assert_geq(a, 0);
  cr_assert_str_eq(sf_index_node_name(idx, sf_index_alloc_node(idx, a)), "kind-worker");
  sf_dev_id d = sf_index_dev_find(idx, "gpu.example.com", "kind-worker", "gpu-4");
  cr_assert_eq(sf_index_dev_holders(idx, d), 1);
  json_t *l = fx_load("k8s-website/install-use-dra.kubectl-get-resourceclaim-output.json");
  cr_assert_eq(sf_cluster_delete(ct_cluster, SF_KIND_RESOURCE_CLAIM, fx_item(l, 0), ct_err,
                                 sizeof ct_err),
               0);
  cr_assert_eq(sf_index_dev_holders(idx, d), 0);
  cr_assert_lt(sf_index_alloc_find(idx, "dra-tutorial/some-gpu"), 0);
  ct_valid();
  json_decref(l);
}

Test(cluster, claim_before_its_slice)
{
  ct_load("k8s-website/install-use-dra.kubectl-get-resourceclaim-output.json");
  cr_assert_lt(sf_index_alloc_find(sf_cluster_index(ct_cluster), "dra-tutorial/some-gpu"), 0);
  ct_kind_worker();
  cr_assert_geq(sf_index_alloc_find(sf_cluster_index(ct_cluster), "dra-tutorial/some-gpu"), 0,
                "recorded once the pool is published");
}

Test(cluster, consumed_capacity_of_a_shared_device)
{
  json_t *s =
      json_pack("{s:s,s:{s:s},s:{s:s,s:s,s:{s:s,s:i},s:[{s:s,s:b,s:{s:{s:s,s:{s:s,s:{s:s,s:s}}}}}]}}",
                "kind", "ResourceSlice", "metadata", "name", "s", "spec", "driver", "gpu.example.com",
                "nodeName", "n1", "pool", "name", "n1", "resourceSliceCount", 1, "devices", "name",
                "gpu-0", "allowMultipleAllocations", 1, "capacity", "memory", "value", "80Gi",
                "requestPolicy", "default", "80Gi", "validRange", "min", "1Gi", "step", "1Gi");
  ct_apply(s);
  json_t *cl = fx_json(
      "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"c\",\"namespace\":\"n\"},\"status\":"
      "{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"r\",\"driver\":\"gpu.example.com\","
      "\"pool\":\"n1\",\"device\":\"gpu-0\",\"shareID\":\"u1\",\"consumedCapacity\":{\"memory\":"
      "\"16Gi\"}}]}}}}");
  ct_apply(cl);
  sf_index_t *idx = sf_cluster_index(ct_cluster);
  sf_dev_id d = sf_index_dev_find(idx, "gpu.example.com", "n1", "gpu-0");
  sf_milli_t v, f;
  sf_index_dev_cap(idx, d, 0, &v, &f);
  cr_assert_eq(v - f, 16LL * 1024 * 1024 * 1024 * 1000, "16Gi consumed");
  json_decref(s);
  json_decref(cl);
}

Test(cluster, taint_rules)
{
  ct_kind_worker();
  ct_load(
      "dra-example-driver/device-taints-tolerations__device-taint-pod-noschedule__3-device-taint-rule.json");
  sf_index_t *idx = sf_cluster_index(ct_cluster);
  sf_dev_id d = sf_index_dev_find(idx, "gpu.example.com", "kind-worker", "gpu-2");
  cr_assert_eq(sf_index_dev_ntaints(idx, d), 1);
  cr_assert_str_eq(sf_index_dev_taint(idx, d, 0)->key, "gpu.example.com/unhealthy");
  cr_assert_eq(sf_index_dev_taint(idx, d, 0)->effect, SF_TAINT_NOSCHEDULE);
  json_t *rule = fx_json("{\"kind\":\"DeviceTaintRule\",\"metadata\":{\"name\":\"example\"}}");
  cr_assert_eq(sf_cluster_delete(ct_cluster, SF_KIND_UNKNOWN, rule, ct_err, sizeof ct_err), 0);
  cr_assert_eq(sf_index_dev_ntaints(idx, d), 0);
  json_decref(rule);
  /* v1alpha3 selected devices by class: slicefit cannot tell which, so it taints none. */
  rule = fx_json(
      "{\"kind\":\"DeviceTaintRule\",\"metadata\":{\"name\":\"old\"},\"spec\":{"
      "\"deviceSelector\":{\"deviceClassName\":\"gpu.example.com\"},\"taint\":{\"key\":\"k\","
      "\"effect\":\"NoSchedule\"}}}");
  ct_apply(rule);
  cr_assert_eq(sf_index_dev_ntaints(idx, d), 0);
  json_decref(rule);
}

Test(cluster, replace_is_all_or_nothing)
{
  ct_nvidia();
  json_t *items = json_array();
  json_array_append_new(items, ct_slice("x", "n9", "n9", 1, 1, 2, "g"));
  json_array_append_new(items,
                        fx_json("{\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":\"bad\"},"
                                "\"spec\":{\"driver\":\"d\",\"nodeName\":\"n\",\"pool\":"
                                "{\"name\":\"p\",\"resourceSliceCount\":1},\"devices\":[{"
                                "\"name\":\"a\",\"capacity\":{\"memory\":{\"value\":\"12Qi\"}}}]}}"));
  cr_assert_eq(sf_cluster_replace(ct_cluster, SF_KIND_RESOURCE_SLICE, items, ct_err, sizeof ct_err),
               SF_EINVAL);
  cr_assert_str_eq(ct_err,
                   "items[1].spec.devices[0].capacity.memory.value: '12Qi' is not a quantity");
  cr_assert_eq(ct_node_devs("gpu-node-a"), 8, "unchanged");
  cr_assert_eq(sf_cluster_count(ct_cluster, SF_KIND_RESOURCE_SLICE), 2);
  json_array_remove(items, 1);
  /* Two slices of a pool that says it has one: incomplete as upstream's allocator counts
   * (resourceSliceCount must equal the slices of the generation), so it publishes nothing. */
  json_array_append_new(items, ct_slice("y", "n9", "n9", 1, 1, 1, "g"));
  cr_assert_eq(sf_cluster_replace(ct_cluster, SF_KIND_RESOURCE_SLICE, items, ct_err, sizeof ct_err),
               0, "%s", ct_err);
  cr_assert_eq(sf_cluster_invalid_pools(ct_cluster), 0);
  cr_assert_eq(ct_node_devs("gpu-node-a"), 0, "relisted away");
  cr_assert_lt(sf_index_node_find(sf_cluster_index(ct_cluster), "n9"), 0);
  ct_valid();
  json_array_remove(items, 1);
  cr_assert_eq(sf_cluster_replace(ct_cluster, SF_KIND_RESOURCE_SLICE, items, ct_err, sizeof ct_err),
               0, "%s", ct_err);
  cr_assert_eq(sf_cluster_invalid_pools(ct_cluster), 0, "valid again");
  cr_assert_eq(ct_node_devs("gpu-node-a"), 0, "relisted away");
  cr_assert_eq(ct_node_devs("n9"), 2);
  cr_assert_eq(sf_cluster_count(ct_cluster, SF_KIND_RESOURCE_SLICE), 1);
  ct_valid();
  json_decref(items);
}

Test(cluster, duplicate_devices_make_the_pool_invalid, .init = cr_redirect_stderr)
{
  json_t *a = ct_slice("a", "n1", "p", 1, 2, 2, "g"), *b = ct_slice("b", "n1", "p", 1, 2, 2, "g");
  ct_apply(a);
  cr_assert_eq(ct_node_devs("n1"), 0, "incomplete");
  ct_apply(b); /* not an error: the pool is invalid on n1, and says so */
  cr_assert_eq(sf_cluster_count(ct_cluster, SF_KIND_RESOURCE_SLICE), 2);
  cr_assert_eq(sf_cluster_invalid_pools(ct_cluster), 1);
  cr_assert_eq(ct_node_devs("n1"), 0);
  json_t *st = sf_cluster_state_json(ct_cluster);
  const char *why = json_string_value(
      json_object_get(json_object_get(json_array_get(json_object_get(st, "pools"), 0), "invalid"),
                      "reason"));
  cr_assert(why && strstr(why, "duplicate device name"), "%s", why ? why : "(none)");
  json_decref(st);
  cr_assert_eq(sf_cluster_delete(ct_cluster, SF_KIND_UNKNOWN, b, ct_err, sizeof ct_err), 0);
  cr_assert_eq(sf_cluster_invalid_pools(ct_cluster), 0);
  ct_valid();
  json_decref(a);
  json_decref(b);
}

Test(cluster, bad_objects_are_errors)
{
  json_t *o = fx_json("{\"kind\":\"Service\",\"metadata\":{\"name\":\"p\"}}");
  cr_assert_eq(sf_cluster_apply(ct_cluster, SF_KIND_UNKNOWN, o, ct_err, sizeof ct_err), SF_EINVAL);
  cr_assert_str_eq(ct_err, "kind: 'Service' is not tracked");
  json_decref(o);
  o = fx_json("{\"kind\":\"List\",\"items\":[{\"kind\":\"DeviceClass\",\"metadata\":{}}]}");
  cr_assert_eq(sf_cluster_load_list(ct_cluster, o, ct_err, sizeof ct_err), SF_EINVAL);
  cr_assert_str_eq(ct_err, "items[0].metadata.name: is required");
  json_decref(o);
  o = fx_json("{}");
  cr_assert_eq(sf_cluster_replace(ct_cluster, SF_KIND_DEVICE_CLASS, o, ct_err, sizeof ct_err),
               SF_EINVAL);
  cr_assert_str_eq(ct_err, "items: expected an array");
  json_decref(o);
}
