/*
 * Loading a List as live mode reads objects: one bad object is rejected alone, with the
 * decoder's message, and counted; kinds slicefit does not track are counted as ignored. From
 * the NVIDIA slices, the gpu-test1 demo (a Namespace, a ResourceClaimTemplate, Pods) and the
 * v1beta1 ResourceSlice of the API's round-trip data (what a 1.32 or 1.33 cluster serves).
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <string.h>
#include "slicefit/cluster.h"
#include "fixture.h"
#include "cluster_fx.h"

/* The NVIDIA slices, two of them broken as users met them, and the demo. */
static json_t *mixed_list(void)
{
  json_t *slices = fx_load("nvidia-slices.json");
  json_t *items = json_deep_copy(json_object_get(slices, "items"));
  /* A capacity the driver never writes: "80GiB" is no quantity. */
  json_t *bad_qty = json_deep_copy(json_array_get(items, 0));
  json_object_set_new(json_object_get(bad_qty, "metadata"), "name", json_string("bad-quantity"));
  json_t *dev = json_array_get(json_object_get(json_object_get(bad_qty, "spec"), "devices"), 0);
  json_object_set_new(json_object_get(json_object_get(dev, "capacity"), "memory"), "value",
                      json_string("80GiB"));
  json_array_append_new(items, bad_qty);
  /* 33 attributes and capacities on a device, one more than the API allows. */
  json_t *wide = json_deep_copy(json_array_get(items, 1));
  json_object_set_new(json_object_get(wide, "metadata"), "name", json_string("too-wide"));
  json_t *attrs =
      json_object_get(json_array_get(json_object_get(json_object_get(wide, "spec"), "devices"), 0),
                      "attributes");
  for (int k = 0; json_object_size(attrs) < 32; k++) {
    char key[32];
    snprintf(key, sizeof key, "extra%d", k);
    json_object_set_new(attrs, key, json_pack("{s:i}", "int", k));
  }
  json_array_append_new(items, wide);
  json_t *beta = fx_load("k8s-api-testdata/release-1.34.resource.k8s.io.v1beta1.ResourceSlice.json");
  json_array_append(items, beta);
  json_t *demo = fx_load("nvidia-dra-driver-gpu/demo__specs__quickstart__v1__gpu-test1.json");
  size_t i;
  json_t *it;
  json_array_foreach(json_object_get(demo, "items"), i, it) json_array_append(items, it);
  json_decref(demo);
  json_decref(beta);
  json_decref(slices);
  return json_pack("{s:s,s:s,s:o}", "apiVersion", "v1", "kind", "List", "items", items);
}

Test(cluster, bad_objects_are_rejected_alone)
{
  cr_redirect_stderr();
  json_t *list = mixed_list();
  cr_assert_eq(sf_cluster_load_list_each(ct_cluster, list, ct_err, sizeof ct_err), 0, "%s", ct_err);
  ct_valid();
  cr_assert_eq(ct_node_devs("gpu-node-a"), 8, "the good slices are served");
  cr_assert_eq(ct_node_devs("gpu-node-b"), 4);
  cr_assert_eq(sf_cluster_rejected(ct_cluster, SF_KIND_RESOURCE_SLICE), 3);
  const json_t *ign = sf_cluster_ignored(ct_cluster);
  cr_assert_eq(json_integer_value(json_object_get(ign, "ResourceClaimTemplate")), 1);
  cr_assert_eq(json_integer_value(json_object_get(ign, "Namespace")), 1);
  cr_assert_eq(json_integer_value(json_object_get(ign, "Pod")), 0, "pods are tracked");
  json_t *st = sf_cluster_state_json(ct_cluster);
  cr_assert_eq(json_integer_value(json_object_get(json_object_get(st, "rejected"), "ResourceSlice")),
               3);
  cr_assert_eq(json_integer_value(
                   json_object_get(json_object_get(st, "ignored"), "ResourceClaimTemplate")),
               1);
  json_decref(st);
  fflush(stderr);
  FILE *f = cr_get_redirected_stderr();
  char line[2048];
  int qty = 0, beta = 0, wide = 0;
  while (fgets(line, sizeof line, f)) {
    if (!strstr(line, "\"object rejected\" resource=\"resourceslices\""))
      continue;
    qty += strstr(line, "name=\"bad-quantity\" error=\"spec.devices[0].capacity.memory.value: "
                        "'80GiB' is not a quantity\"") != NULL;
    wide += strstr(line, "name=\"too-wide\" error=\"spec.devices[0]: 33 attributes and capacities, "
                         "more than 32\"") != NULL;
    beta += strstr(line, "name=\"nameValue\" error=\"apiVersion: resource.k8s.io/v1beta1 is not "
                         "supported (resource.k8s.io/v1 or v1beta2)\"") != NULL;
  }
  cr_assert_eq(qty, 1);
  cr_assert_eq(beta, 1);
  cr_assert_eq(wide, 1);
  json_decref(list);
}

Test(cluster, strict_load_refuses_the_list)
{
  json_t *list = mixed_list();
  cr_assert_eq(sf_cluster_load_list(ct_cluster, list, ct_err, sizeof ct_err), SF_EINVAL);
  cr_assert_str_eq(ct_err,
                   "items[2].spec.devices[0].capacity.memory.value: '80GiB' is not a quantity");
  cr_assert_eq(ct_node_devs("gpu-node-a"), 0, "nothing loaded");
  json_decref(list);
}
