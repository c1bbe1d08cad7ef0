/* What the cluster's tests share (cluster_fx.h). */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <string.h>
#include "slicefit/mix.h"
#include "slicefit/cluster.h"
#include "fixture.h"
#include "cluster_fx.h"

sf_cluster_t *ct_cluster;
char ct_err[SF_ERR_MAX];

void ct_valid(void)
{
  char why[256];
  cr_assert_eq(sf_index_validate(sf_cluster_index(ct_cluster), why, sizeof why), 0, "%s", why);
}

void ct_load(const char *rel)
{
  json_t *l = fx_load(rel);
  cr_assert_eq(sf_cluster_load_list(ct_cluster, l, ct_err, sizeof ct_err), 0, "%s: %s", rel, ct_err);
  json_decref(l);
  ct_valid();
}

void ct_apply(json_t *o)
{
  cr_assert_eq(sf_cluster_apply(ct_cluster, SF_KIND_UNKNOWN, o, ct_err, sizeof ct_err), 0, "%s",
               ct_err);
  ct_valid();
}

size_t ct_node_devs(const char *node)
{
  sf_index_t *idx = sf_cluster_index(ct_cluster);
  sf_node_id n = sf_index_node_find(idx, node);
  size_t nd = 0;
  if (n >= 0)
    sf_index_node_devices(idx, n, &nd);
  return nd;
}

/* The NVIDIA cluster: 8xA100 on gpu-node-a, 4xH100 on gpu-node-b, the chart's classes. */
void ct_nvidia(void)
{
  ct_load("nvidia-slices.json");
  ct_load(
      "nvidia-dra-driver-gpu/deployments__helm__dra-driver-nvidia-gpu__templates__deviceclass-gpu.json");
  ct_load(
      "nvidia-dra-driver-gpu/deployments__helm__dra-driver-nvidia-gpu__templates__deviceclass-mig.json");
}

/* A slice of `pool` on `node` with `ndev` example-driver devices named prefix-i. */
json_t *ct_slice(const char *name, const char *node, const char *pool, int gen, int count, int ndev,
                 const char *prefix)
{
  json_t *devs = json_array();
  for (int i = 0; i < ndev; i++) {
    char dn[64];
    snprintf(dn, sizeof dn, "%s-%d", prefix, i);
    json_array_append_new(devs, json_pack("{s:s,s:{s:{s:i}},s:{s:{s:s}}}", "name", dn, "attributes",
                                          "index", "int", i, "capacity", "memory", "value", "80Gi"));
  }
  return json_pack("{s:s,s:{s:s},s:{s:s,s:s,s:{s:s,s:i,s:i},s:o}}", "kind", "ResourceSlice",
                   "metadata", "name", name, "spec", "driver", "gpu.example.com", "nodeName", node,
                   "pool", "name", pool, "generation", gen, "resourceSliceCount", count, "devices",
                   devs);
}

/* The website's allocated claim is on kind-worker, device gpu-4 of pool kind-worker. */
void ct_kind_worker(void)
{
  json_t *l = fx_load("dra-example-driver/README.kubectl-get-resourceslice-output.json");
  json_t *s = fx_item(l, 0), *spec = json_object_get(s, "spec");
  json_object_set_new(spec, "nodeName", json_string("kind-worker"));
  json_object_set_new(json_object_get(spec, "pool"), "name", json_string("kind-worker"));
  ct_apply(s);
  json_decref(l);
}

sf_pod_plan_t *ct_plan(json_t *pod)
{
  sf_pod_plan_t *p = NULL;
  cr_assert_eq(sf_cluster_plan(ct_cluster, pod, &p, ct_err, sizeof ct_err), 0, "%s", ct_err);
  return p;
}

void ct_evaluate(sf_pod_plan_t *p, const char *const *names, size_t n, sf_verdict_t *out)
{
  cr_assert_eq(sf_cluster_evaluate(ct_cluster, p, names, n, out), 0);
}

/* One shared example-driver GPU as its chart publishes it with gpuAllowMultipleAllocations. */
void ct_shared_gpu_node(void)
{
  json_t *s = fx_json(
      "{\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":\"n1-gpu\"},\"spec\":{\"driver\":\"gpu.example.com\","
      "\"nodeName\":\"n1\",\"pool\":{\"name\":\"n1\",\"generation\":1,\"resourceSliceCount\":1},\"devices\":["
      "{\"name\":\"gpu-0\",\"allowMultipleAllocations\":true,\"capacity\":{"
      "\"memory\":{\"value\":\"80Gi\",\"requestPolicy\":{\"default\":\"80Gi\",\"validRange\":"
      "{\"min\":\"1Gi\",\"step\":\"1Gi\",\"max\":\"80Gi\"}}},"
      "\"compute\":{\"value\":\"100\",\"requestPolicy\":{\"default\":\"100\",\"validRange\":"
      "{\"min\":\"1\",\"step\":\"1\",\"max\":\"100\"}}}}}]}}");
  ct_apply(s);
  json_decref(s);
}
