/* The cluster: pod plans from fixtures, evaluated on the nodes; the learned mix of the claims. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <string.h>
#include "slicefit/mix.h"
#include "slicefit/cluster.h"
#include "fixture.h"
#include "cluster_fx.h"

/* ---- plans ---- */

/* gpu-test1's pod1 with the claim its template made, as the controller would have. */
static json_t *gpu_test1_pod(const char *claim)
{
  json_t *l = fx_load("nvidia-dra-driver-gpu/demo__specs__quickstart__v1__gpu-test1.json");
  json_t *tmpl = fx_item(l, 1), *pod = json_deep_copy(fx_item(l, 2));
  json_t *cl = json_pack("{s:s,s:{s:s,s:s},s:O}", "kind", "ResourceClaim", "metadata", "name", claim,
                         "namespace", "gpu-test1", "spec",
                         json_object_get(json_object_get(tmpl, "spec"), "spec"));
  ct_apply(cl);
  json_object_set_new(pod, "status",
                      json_pack("{s:[{s:s,s:s}]}", "resourceClaimStatuses", "name", "gpu",
                                "resourceClaimName", claim));
  json_decref(cl);
  json_decref(l);
  return pod;
}

static const char *const NODES[] = {"gpu-node-a", "gpu-node-b", "cpu-node"};

Test(cluster, plan_from_template_claim)
{
  ct_nvidia();
  json_t *pod = gpu_test1_pod("pod1-gpu-x1");
  sf_pod_plan_t *p = ct_plan(pod);
  cr_assert_not(sf_pod_plan_empty(p));
  sf_verdict_t v[3];
  ct_evaluate(p, NODES, 3, v);
  cr_assert_eq(v[0].fit, SF_FIT_YES, "%s", v[0].reason);
  cr_assert_eq(v[1].fit, SF_FIT_YES, "%s", v[1].reason);
  cr_assert_eq(v[2].fit, SF_FIT_UNSURE, "a node slicefit does not know");
  sf_pod_plan_free(p);
  json_decref(pod);
}

Test(cluster, claim_not_created_yet_is_unsure)
{
  ct_nvidia();
  json_t *l = fx_load("nvidia-dra-driver-gpu/demo__specs__quickstart__v1__gpu-test1.json");
  sf_pod_plan_t *p = ct_plan(fx_item(l, 2));
  sf_verdict_t v[3];
  ct_evaluate(p, NODES, 3, v);
  for (int i = 0; i < 3; i++) {
    cr_assert_eq(v[i].fit, SF_FIT_UNSURE);
    cr_assert_str_eq(v[i].reason, "the claim for gpu (template single-gpu) is not created yet");
  }
  sf_pod_plan_free(p);
  json_t *pod = json_deep_copy(fx_item(l, 2));
  json_object_set_new(pod, "status",
                      json_pack("{s:[{s:s,s:s}]}", "resourceClaimStatuses", "name", "gpu",
                                "resourceClaimName", "gone"));
  p = ct_plan(pod);
  ct_evaluate(p, NODES, 1, v);
  cr_assert_str_eq(v[0].reason, "claim gpu-test1/gone is not known yet");
  sf_pod_plan_free(p);
  json_decref(pod);
  json_decref(l);
}

Test(cluster, allocated_claim_pins_the_pod)
{
  ct_kind_worker();
  ct_load("k8s-website/install-use-dra.kubectl-get-resourceclaim-output.json");
  json_t *pod = fx_json(
      "{\"metadata\":{\"name\":\"pod0\",\"namespace\":\"dra-tutorial\"},\"spec\":"
      "{\"resourceClaims\":[{\"name\":\"g\",\"resourceClaimName\":\"some-gpu\"}]}}");
  sf_pod_plan_t *p = ct_plan(pod);
  const char *names[] = {"other", "kind-worker"};
  sf_verdict_t v[2];
  ct_evaluate(p, names, 2, v);
  cr_assert_eq(v[0].fit, SF_FIT_NO);
  cr_assert_str_eq(v[0].reason, "claim dra-tutorial/some-gpu is allocated on node kind-worker");
  cr_assert_eq(v[1].fit, SF_FIT_YES, "%s", v[1].reason);
  sf_pod_plan_free(p);
  json_decref(pod);
}

Test(cluster, extended_resources_through_the_class)
{
  ct_nvidia();
  json_t *l = fx_load("nvidia-dra-driver-gpu/demo__specs__extended-resources__gpu-full.json");
  json_t *pod = json_deep_copy(fx_item(l, 1));
  sf_pod_plan_t *p = ct_plan(pod);
  sf_verdict_t v[3];
  ct_evaluate(p, NODES, 2, v);
  cr_assert_eq(v[0].fit, SF_FIT_YES, "%s", v[0].reason);
  cr_assert_eq(v[1].fit, SF_FIT_YES, "%s", v[1].reason);
  sf_pod_plan_free(p);
  /* Eight GPUs fit only the A100 node. */
  json_t *lim =
      json_object_get(json_object_get(json_array_get(json_object_get(json_object_get(pod, "spec"),
                                                                     "containers"),
                                                     0),
                                      "resources"),
                      "limits");
  json_object_set_new(lim, "nvidia.com/gpu", json_integer(8));
  p = ct_plan(pod);
  ct_evaluate(p, NODES, 2, v);
  cr_assert_eq(v[0].fit, SF_FIT_YES, "%s", v[0].reason);
  cr_assert_eq(v[1].fit, SF_FIT_NO);
  sf_pod_plan_free(p);
  /* The implicit name deviceclass.resource.kubernetes.io/<class> works too. */
  json_object_del(lim, "nvidia.com/gpu");
  json_object_set_new(lim, "deviceclass.resource.kubernetes.io/gpu.nvidia.com", json_integer(5));
  p = ct_plan(pod);
  ct_evaluate(p, NODES, 2, v);
  cr_assert_eq(v[0].fit, SF_FIT_YES);
  cr_assert_eq(v[1].fit, SF_FIT_NO);
  sf_pod_plan_free(p);
  json_decref(pod);
  json_decref(l);
}

Test(cluster, pod_without_claims_is_empty)
{
  ct_nvidia();
  json_t *pod = fx_json(
      "{\"metadata\":{\"name\":\"web\",\"namespace\":\"d\"},\"spec\":{\"containers\":"
      "[{\"name\":\"c\",\"resources\":{\"limits\":{\"example.com/foo\":1,\"cpu\":\"2\"}}}]}}");
  sf_pod_plan_t *p = ct_plan(pod);
  cr_assert(sf_pod_plan_empty(p), "an extended resource no class names is not slicefit's");
  sf_verdict_t v[3];
  ct_evaluate(p, NODES, 3, v);
  for (int i = 0; i < 3; i++)
    cr_assert_eq(v[i].fit, SF_FIT_YES);
  sf_pod_plan_free(p);
  json_decref(pod);
}

Test(cluster, plan_errors_and_unknown_class)
{
  json_t *bad = fx_json(
      "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"resourceClaims\":[{\"name\":1}]}}");
  sf_pod_plan_t *p = NULL;
  cr_assert_eq(sf_cluster_plan(ct_cluster, bad, &p, ct_err, sizeof ct_err), SF_EINVAL);
  cr_assert_str_eq(ct_err, "spec.resourceClaims[0].name: expected a string, got an integer");
  cr_assert_null(p);
  json_decref(bad);
  ct_load("nvidia-slices.json");
  json_t *pod = gpu_test1_pod("c1");
  p = ct_plan(pod);
  sf_verdict_t v[1];
  ct_evaluate(p, NODES, 1, v);
  /* Upstream's allocator fails a claim whose class does not exist: so does the filter. */
  cr_assert_eq(v[0].fit, SF_FIT_NO);
  cr_assert_str_eq(v[0].reason, "request gpu: could not retrieve device class gpu.nvidia.com");
  sf_pod_plan_free(p);
  json_decref(pod);
}

Test(cluster, taint_rule_blocks_untolerated_claims)
{
  ct_nvidia();
  json_t *rule = fx_json(
      "{\"kind\":\"DeviceTaintRule\",\"metadata\":{\"name\":\"b-down\"},\"spec\":"
      "{\"deviceSelector\":{\"driver\":\"gpu.nvidia.com\",\"pool\":\"gpu-node-b\"},"
      "\"taint\":{\"key\":\"maint\",\"effect\":\"NoSchedule\"}}}");
  ct_apply(rule);
  json_t *pod = gpu_test1_pod("c1");
  sf_pod_plan_t *p = ct_plan(pod);
  sf_verdict_t v[2];
  ct_evaluate(p, NODES, 2, v);
  cr_assert_eq(v[0].fit, SF_FIT_YES);
  cr_assert_eq(v[1].fit, SF_FIT_NO, "every device of gpu-node-b is tainted");
  sf_pod_plan_free(p);
  json_decref(pod);
  json_decref(rule);
}

Test(cluster, state_json)
{
  ct_nvidia();
  json_t *st = sf_cluster_state_json(ct_cluster);
  cr_assert_eq(json_integer_value(json_object_get(json_object_get(st, "objects"), "ResourceSlice")),
               2);
  json_t *nodes = json_object_get(st, "nodes");
  cr_assert_eq(json_array_size(nodes), 2);
  json_t *dev = json_array_get(json_object_get(json_array_get(nodes, 0), "devices"), 0);
  cr_assert_str_eq(json_string_value(json_object_get(dev, "driver")), "gpu.nvidia.com");
  cr_assert(json_object_get(json_object_get(dev, "capacity"), "gpu.nvidia.com/memory"));
  cr_assert_str_eq(json_string_value(json_object_get(json_object_get(st, "policy"), "strategy")),
                   "fragmentation");
  json_decref(st);
}

Test(cluster, device_turns_shared_under_an_allocation)
{
  /* Found by fuzz_decode: a device republished as shared while a claim holds it. */
  json_t *s = ct_slice("s", "n1", "n1", 1, 1, 1, "gpu");
  ct_apply(s);
  json_t *cl = fx_json(
      "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"c\",\"namespace\":\"n\"},\"status\":"
      "{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"r\",\"driver\":\"gpu.example.com\","
      "\"pool\":\"n1\",\"device\":\"gpu-0\",\"shareID\":\"u1\",\"consumedCapacity\":{\"memory\":\"16Gi\"}}]}}}}");
  ct_apply(cl);
  json_t *dev = json_array_get(json_object_get(json_object_get(s, "spec"), "devices"), 0);
  json_object_set_new(dev, "allowMultipleAllocations", json_true());
  ct_apply(s);
  sf_index_t *idx = sf_cluster_index(ct_cluster);
  sf_dev_id d = sf_index_dev_find(idx, "gpu.example.com", "n1", "gpu-0");
  sf_milli_t v, f;
  sf_index_dev_cap(idx, d, 0, &v, &f);
  cr_assert_eq(v - f, 16LL * 1024 * 1024 * 1024 * 1000, "now shared: the claim consumes 16Gi");
  json_decref(s);
  json_decref(cl);
}

Test(cluster, unsupported_selector_is_unsure_and_logged_once)
{
  cr_redirect_stderr();
  ct_load("nvidia-slices.json");
  json_t *cls = fx_json(
      "{\"kind\":\"DeviceClass\",\"metadata\":{\"name\":\"gpu.nvidia.com\"},\"spec\":"
      "{\"selectors\":[{\"cel\":{\"expression\":\"device.driver == 'x' || math.greatest(1, 2) == 2\"}}]}}");
  ct_apply(cls);
  ct_apply(cls);
  json_t *pod = gpu_test1_pod("c1");
  sf_pod_plan_t *p = ct_plan(pod);
  sf_verdict_t v[2];
  ct_evaluate(p, NODES, 2, v);
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

Test(cluster, per_device_nodes_and_shared_counters)
{
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
  ct_apply(devs);
  cr_assert_eq(ct_node_devs("n1"), 0, "the counter slice is missing");
  ct_apply(ctr);
  cr_assert_eq(ct_node_devs("n1"), 2);
  /* perDeviceNodeSelection: each device says where it is; an allNodes device reaches every node
   * the pool does (here the two it names), one device seen from both. */
  json_t *pd = fx_json(
      "{\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":\"pd\"},\"spec\":{\"driver\":\"net.example.com\","
      "\"perDeviceNodeSelection\":true,\"pool\":{\"name\":\"fabric\",\"resourceSliceCount\":1},"
      "\"devices\":[{\"name\":\"a\",\"nodeName\":\"n2\"},{\"name\":\"b\",\"nodeName\":\"n3\"},"
      "{\"name\":\"c\",\"allNodes\":true}]}}");
  ct_apply(pd);
  cr_assert_eq(ct_node_devs("n2"), 2);
  cr_assert_eq(ct_node_devs("n3"), 2);
  sf_index_t *ix = sf_cluster_index(ct_cluster);
  sf_dev_id dc = sf_index_dev_find(ix, "net.example.com", "fabric", "c");
  size_t nd2;
  const sf_dev_id *d2 = sf_index_node_devices(ix, sf_index_node_find(ix, "n2"), &nd2);
  cr_assert(nd2 == 2 && (d2[0] == dc || d2[1] == dc), "one device c, offered on n2");
  json_decref(ctr);
  json_decref(devs);
  json_decref(pd);
}

Test(cluster, constraints_reach_the_packer)
{
  ct_nvidia();
  /* gpu-node-a: pcieRoot pci0000:00 for gpu-0..3, pci0000:01 for gpu-4..7; gpu-node-b: all 00. */
#define CONSTRAINED_FMT                                                                                    \
  "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\"},\"spec\":{\"devices\":" \
  "{\"requests\":[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":\"gpu.nvidia.com\",\"count\":%d}},"     \
  "{\"name\":\"b\",\"firstAvailable\":[{\"name\":\"one\",\"deviceClassName\":\"gpu.nvidia.com\"}]}],"      \
  "\"constraints\":[{\"requests\":[\"a\",\"b/one\"],\"matchAttribute\":"                                   \
  "\"resource.kubernetes.io/pcieRoot\"}]}}}"
  char buf[1024];
  snprintf(buf, sizeof buf, CONSTRAINED_FMT, "three", 3);
  json_t *c3 = fx_json(buf);
  snprintf(buf, sizeof buf, CONSTRAINED_FMT, "four", 4);
  json_t *c4 = fx_json(buf);
  ct_apply(c3);
  ct_apply(c4);
  json_t *pod = fx_json(
      "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"},\"spec\":{\"resourceClaims\":"
      "[{\"name\":\"x\",\"resourceClaimName\":\"three\"}]}}");
  sf_pod_plan_t *p = ct_plan(pod);
  sf_verdict_t v[2];
  ct_evaluate(p, NODES, 2, v);
  cr_assert_eq(v[0].fit, SF_FIT_YES, "3+1 under one PCIe root: %s", v[0].reason);
  cr_assert_eq(v[1].fit, SF_FIT_YES, "%s", v[1].reason);
  sf_pod_plan_free(p);
  json_string_set(json_object_get(json_array_get(json_object_get(json_object_get(pod, "spec"),
                                                                 "resourceClaims"),
                                                 0),
                                  "resourceClaimName"),
                  "four");
  p = ct_plan(pod);
  ct_evaluate(p, NODES, 2, v);
  cr_assert_eq(v[0].fit, SF_FIT_NO, "4+1 under one root of 4");
  cr_assert_eq(v[1].fit, SF_FIT_NO, "5 devices on a node of 4");
  sf_pod_plan_free(p);
  json_decref(pod);
  json_decref(c3);
  json_decref(c4);
}

Test(cluster, admin_access_is_modelled)
{
  ct_load("dra-example-driver/deployments__helm__dra-example-driver__templates__deviceclass.json");
  ct_kind_worker();
  json_t *l = fx_load("dra-example-driver/admin-access__admin-access.json"), *it;
  size_t i;
  json_t *pod = NULL;
  json_array_foreach(json_object_get(l, "items"), i, it)
  {
    const char *k = json_string_value(json_object_get(it, "kind"));
    if (!strcmp(k, "ResourceClaimTemplate")) {
      json_t *cl = json_pack("{s:s,s:{s:s,s:s},s:O}", "kind", "ResourceClaim", "metadata", "name",
                             "admin-claim", "namespace",
                             json_string_value(
                                 json_object_get(json_object_get(it, "metadata"), "namespace")),
                             "spec", json_object_get(json_object_get(it, "spec"), "spec"));
      ct_apply(cl);
      json_decref(cl);
    }
    if (!strcmp(k, "Pod") && !pod)
      pod = json_deep_copy(it);
  }
  cr_assert(pod);
  json_t *st = json_pack("{s:[]}", "resourceClaimStatuses"), *rc;
  json_array_foreach(json_object_get(json_object_get(pod, "spec"), "resourceClaims"), i, rc)
      json_array_append_new(json_object_get(st, "resourceClaimStatuses"),
                            json_pack("{s:O,s:s}", "name", json_object_get(rc, "name"),
                                      "resourceClaimName", "admin-claim"));
  json_object_set_new(pod, "status", st);
  sf_pod_plan_t *p = ct_plan(pod);
  sf_verdict_t v[1];
  const char *names[] = {"kind-worker"};
  ct_evaluate(p, names, 1, v);
  /* Admin access is modelled: it may take a device others hold, so the node fits. */
  cr_assert_eq(v[0].fit, SF_FIT_YES, "%s", v[0].reason);
  sf_pod_plan_free(p);
  json_decref(pod);
  json_decref(l);
}

Test(cluster, consumable_capacity_from_the_example_driver)
{
  ct_load("dra-example-driver/deployments__helm__dra-example-driver__templates__deviceclass.json");
  ct_shared_gpu_node();
  json_t *l = fx_load(
      "dra-example-driver/gpu-allow-multiple-allocations__gpu-allow-multiple-allocations.json");
  cr_assert_eq(sf_cluster_load_list(ct_cluster, l, ct_err, sizeof ct_err), 0, "%s", ct_err);
  cr_assert_eq(sf_cluster_count(ct_cluster, SF_KIND_RESOURCE_CLAIM), 2,
               "claims kept, pods and namespaces skipped");
  const char *names[] = {"n1"};
  sf_verdict_t v[1];
  sf_pod_plan_t *p = ct_plan(fx_item(l, 3));
  ct_evaluate(p, names, 1, v);
  cr_assert_eq(v[0].fit, SF_FIT_YES, "16Gi and 20 compute of a free GPU: %s", v[0].reason);
  sf_pod_plan_free(p);
  /* Another claim already holds 70Gi of it: 16Gi no longer fits. */
  json_t *held = fx_json(
      "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"big\",\"namespace\":\"other\"},\"status\":"
      "{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"r\",\"driver\":\"gpu.example.com\","
      "\"pool\":\"n1\",\"device\":\"gpu-0\",\"shareID\":\"s1\",\"consumedCapacity\":{\"memory\":\"70Gi\","
      "\"compute\":\"10\"}}]},\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":"
      "\"metadata.name\",\"operator\":\"In\",\"values\":[\"n1\"]}]}]}}}}");
  ct_apply(held);
  p = ct_plan(fx_item(l, 3));
  ct_evaluate(p, names, 1, v);
  cr_assert_eq(v[0].fit, SF_FIT_NO);
  sf_pod_plan_free(p);
  json_decref(held);
  json_decref(l);
}

/* The learned mix of the index, as text, for comparisons. */
static void mix_text(sf_cluster_t *c, char *out, size_t len)
{
  sf_index_t *idx = sf_cluster_index(c);
  size_t n = 0;
  out[0] = '\0';
  for (size_t i = 0; i < sf_mix_size(idx); i++) {
    sf_shape_t s;
    cr_assert_eq(sf_mix_shape(idx, i, &s), 0);
    n += (size_t)snprintf(out + n, len - n, "%lldx%u@%.4f;", (long long)s.amount, s.count, s.weight);
  }
}

#define MIX_CLAIM_FMT                                                                                      \
  "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\"},\"spec\":{\"devices\":" \
  "{\"requests\":[{\"name\":\"a\",\"exactly\":{\"deviceClassName\":\"gpu.nvidia.com\",\"count\":%d}}]}}}"

/* The mix is the claims present: history, order and a restart do not change it. */
Test(cluster, learned_mix_is_the_claims_present)
{
  ct_nvidia();
  char buf[512], a[512], b[512];
  json_t *cl[3];
  for (int i = 0; i < 3; i++) {
    char name[16];
    snprintf(name, sizeof name, "c%d", i);
    snprintf(buf, sizeof buf, MIX_CLAIM_FMT, name, i + 1);
    cl[i] = fx_json(buf);
  }
  json_t *pod = fx_json("{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"},\"spec\":{}}");
  sf_pod_plan_t *p = ct_plan(pod);
  sf_verdict_t v[2];
  ct_evaluate(p, NODES, 2, v); /* the classes are read: claims now teach as they come and go */
  sf_pod_plan_free(p);
  cr_assert_eq(sf_mix_size(sf_cluster_index(ct_cluster)), 0);
  ct_apply(cl[0]);
  ct_apply(cl[1]);
  ct_apply(cl[1]); /* modified: still one claim */
  ct_apply(cl[2]);
  cr_assert_eq(sf_mix_size(sf_cluster_index(ct_cluster)), 3);
  cr_assert_eq(sf_cluster_delete(ct_cluster, SF_KIND_RESOURCE_CLAIM, cl[0], ct_err, sizeof ct_err),
               0);
  p = ct_plan(pod);
  ct_evaluate(p, NODES, 2, v);
  sf_pod_plan_free(p);
  mix_text(ct_cluster, a, sizeof a);
  cr_assert_eq(sf_mix_size(sf_cluster_index(ct_cluster)), 2, "%s", a);
  /* Another daemon that lists the same two claims, in the other order. */
  sf_cluster_t *keep = ct_cluster;
  ct_cluster = sf_cluster_create(NULL);
  ct_nvidia();
  ct_apply(cl[2]);
  ct_apply(cl[1]);
  p = ct_plan(pod);
  ct_evaluate(p, NODES, 2, v);
  sf_pod_plan_free(p);
  mix_text(ct_cluster, b, sizeof b);
  cr_assert_str_eq(a, b);
  sf_cluster_destroy(ct_cluster);
  ct_cluster = keep;
  json_decref(pod);
  for (int i = 0; i < 3; i++)
    json_decref(cl[i]);
}

/* A claim modified with another spec teaches its new shapes in place of the old ones; modified
 * with the same spec (its status), the mix stays as it is. */
Test(cluster, learned_mix_follows_a_modified_spec)
{
  ct_nvidia();
  char buf[512], a[512], b[512];
  json_t *pod = fx_json("{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"},\"spec\":{}}");
  sf_pod_plan_t *p = ct_plan(pod);
  sf_verdict_t v[2];
  ct_evaluate(p, NODES, 2, v);
  sf_pod_plan_free(p);
  snprintf(buf, sizeof buf, MIX_CLAIM_FMT, "c", 1);
  json_t *one = fx_json(buf);
  snprintf(buf, sizeof buf, MIX_CLAIM_FMT, "c", 2);
  json_t *two = fx_json(buf);
  ct_apply(one);
  mix_text(ct_cluster, a, sizeof a);
  cr_assert_str_eq(a, "0x1@1.0000;");
  json_object_set_new(one, "status", json_pack("{s:{s:{s:[]}}}", "allocation", "devices", "results"));
  ct_apply(one);
  mix_text(ct_cluster, b, sizeof b);
  cr_assert_str_eq(b, a, "same spec, new status: the same mix");
  ct_apply(two);
  mix_text(ct_cluster, a, sizeof a);
  cr_assert_str_eq(a, "0x2@1.0000;", "the count-1 shape is gone, the count-2 one present");
  cr_assert_eq(sf_cluster_delete(ct_cluster, SF_KIND_RESOURCE_CLAIM, two, ct_err, sizeof ct_err), 0);
  cr_assert_eq(sf_mix_size(sf_cluster_index(ct_cluster)), 0);
  json_decref(one);
  json_decref(two);
  json_decref(pod);
}
