/* The cluster: DRA's finer rules in plans: selector slices, results held whole, invalid CEL,
 * capacity names, allocation mode All over an unsettled pool. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <string.h>
#include "slicefit/mix.h"
#include "slicefit/cluster.h"
#include "fixture.h"
#include "cluster_fx.h"

/* A network-attached device follows the Node's labels; a known node nothing reaches is a no. */
Test(cluster, node_labels_decide_where_a_selector_slice_reaches)
{
  json_t *cls = fx_json(
      "{\"kind\":\"DeviceClass\",\"metadata\":{\"name\":\"net\"},\"spec\":{\"selectors\":"
      "[{\"cel\":{\"expression\":\"device.driver == \\\"net.example.com\\\"\"}}]}}");
  json_t *sl = fx_json(
      "{\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":\"fabric\"},\"spec\":{\"driver\":\"net.example.com\","
      "\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"rack\",\"operator\":\"In\","
      "\"values\":[\"r1\"]}]}]},\"pool\":{\"name\":\"fabric\",\"resourceSliceCount\":1,\"generation\":1},"
      "\"devices\":[{\"name\":\"nic-0\"}]}}");
  json_t *claim = fx_json(
      "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"c\",\"namespace\":\"n\"},"
      "\"spec\":{\"devices\":{\"requests\":[{\"name\":\"r\",\"exactly\":{\"deviceClassName\":"
      "\"net\"}}]}}}");
  json_t *n1 = fx_json(
      "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\",\"labels\":{\"rack\":\"r2\"}}}");
  json_t *pod = fx_json(
      "{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\"},\"spec\":{\"resourceClaims\":"
      "[{\"name\":\"x\",\"resourceClaimName\":\"c\"}]}}");
  ct_apply(cls);
  ct_apply(sl);
  ct_apply(claim);
  ct_apply(n1);
  const char *names[] = {"n1", "n9"};
  sf_verdict_t v[2];
  sf_pod_plan_t *p = ct_plan(pod);
  ct_evaluate(p, names, 2, v);
  cr_assert_eq(v[0].fit, SF_FIT_NO, "n1 is a node the fabric does not reach: %s", v[0].reason);
  cr_assert_eq(v[1].fit, SF_FIT_UNSURE, "n9 is no Node slicefit knows");
  sf_pod_plan_free(p);
  json_object_set_new(json_object_get(json_object_get(n1, "metadata"), "labels"), "rack",
                      json_string("r1"));
  ct_apply(n1);
  p = ct_plan(pod);
  ct_evaluate(p, names, 1, v);
  cr_assert_eq(v[0].fit, SF_FIT_YES, "relabelled into the rack: %s", v[0].reason);
  sf_pod_plan_free(p);
  cr_assert_eq(sf_cluster_count(ct_cluster, SF_KIND_NODE), 1);
  cr_assert_eq(sf_cluster_delete(ct_cluster, SF_KIND_NODE, n1, ct_err, sizeof ct_err), 0);
  p = ct_plan(pod);
  ct_evaluate(p, names, 1, v);
  cr_assert_eq(v[0].fit, SF_FIT_UNSURE, "deleted: no longer a known Node");
  sf_pod_plan_free(p);
  ct_valid();
  json_decref(cls);
  json_decref(sl);
  json_decref(claim);
  json_decref(n1);
  json_decref(pod);
}

/* A result without shareID holds a shared device whole, also one that publishes no capacity
 * (there is nothing to fill up, so only the hold itself can keep other claims off). */
Test(cluster, result_without_share_id_holds_a_shared_device_whole)
{
  ct_load("dra-example-driver/deployments__helm__dra-example-driver__templates__deviceclass.json");
  json_t *s = fx_json(
      "{\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":\"n1-gpu\"},\"spec\":{\"driver\":\"gpu.example.com\","
      "\"nodeName\":\"n1\",\"pool\":{\"name\":\"n1\",\"generation\":1,\"resourceSliceCount\":1},\"devices\":["
      "{\"name\":\"gpu-0\",\"allowMultipleAllocations\":true}]}}");
  ct_apply(s);
  json_t *want = fx_json(
      "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"want\",\"namespace\":\"ns\"},\"spec\":{\"devices\":"
      "{\"requests\":[{\"name\":\"r\",\"exactly\":{\"deviceClassName\":\"gpu.example.com\"}}]}}}");
  ct_apply(want);
  json_t *pod = fx_json(
      "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"},\"spec\":{\"containers\":"
      "[{\"name\":\"c\",\"image\":\"x\"}],\"resourceClaims\":[{\"name\":\"g\",\"resourceClaimName\":\"want\"}]}}");
#define HELD_FMT                                                                                     \
  "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"held\",\"namespace\":\"other\"},\"status\":" \
  "{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"r\",\"driver\":\"gpu.example.com\","    \
  "\"pool\":\"n1\",\"device\":\"gpu-0\"%s}]}}}}"
  const char *names[] = {"n1"};
  sf_verdict_t v[1];
  char text[1024];
  /* Shared (a shareID): another share fits. */
  snprintf(text, sizeof text, HELD_FMT, ",\"shareID\":\"s1\"");
  json_t *held = fx_json(text);
  ct_apply(held);
  json_decref(held);
  sf_pod_plan_t *p = ct_plan(pod);
  ct_evaluate(p, names, 1, v);
  cr_assert_eq(v[0].fit, SF_FIT_YES, "%s", v[0].reason);
  sf_pod_plan_free(p);
  /* The same result without its shareID: the device is held whole, nothing else fits. */
  snprintf(text, sizeof text, HELD_FMT, "");
  held = fx_json(text);
  ct_apply(held);
  p = ct_plan(pod);
  ct_evaluate(p, names, 1, v);
  cr_assert_eq(v[0].fit, SF_FIT_NO, "held whole, yet: %s", v[0].reason);
  sf_pod_plan_free(p);
  /* Deleting the claim frees it. */
  cr_assert_eq(sf_cluster_delete(ct_cluster, SF_KIND_UNKNOWN, held, ct_err, sizeof ct_err), 0, "%s",
               ct_err);
  json_decref(held);
  ct_valid();
  p = ct_plan(pod);
  ct_evaluate(p, names, 1, v);
  cr_assert_eq(v[0].fit, SF_FIT_YES, "%s", v[0].reason);
  sf_pod_plan_free(p);
  json_decref(pod);
  json_decref(want);
  json_decref(s);
}

/* The verdict on n1 for a pod whose one claim asks class `cls` with request selector `sel`. */
static sf_verdict_t one_selector(const char *cls_sel, const char *req_sel)
{
  char text[1024];
  snprintf(text, sizeof text,
           "{\"kind\":\"DeviceClass\",\"metadata\":{\"name\":\"c\"},\"spec\":{\"selectors\":[{\"cel\":"
           "{\"expression\":\"%s\"}}]}}",
           cls_sel);
  json_t *o = fx_json(text);
  ct_apply(o);
  json_decref(o);
  snprintf(text, sizeof text,
           "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"rc\",\"namespace\":\"ns\"},\"spec\":{\"devices\":"
           "{\"requests\":[{\"name\":\"r\",\"exactly\":{\"deviceClassName\":\"c\",\"selectors\":[{\"cel\":"
           "{\"expression\":\"%s\"}}]}}]}}}",
           req_sel);
  o = fx_json(text);
  ct_apply(o);
  json_decref(o);
  json_t *pod = fx_json(
      "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"},\"spec\":{\"containers\":"
      "[{\"name\":\"c\",\"image\":\"x\"}],\"resourceClaims\":[{\"name\":\"g\",\"resourceClaimName\":\"rc\"}]}}");
  const char *names[] = {"n1"};
  sf_verdict_t v[1];
  sf_pod_plan_t *p = ct_plan(pod);
  ct_evaluate(p, names, 1, v);
  sf_pod_plan_free(p);
  json_decref(pod);
  return v[0];
}

/* DRA fails a claim whose class or request selector is not valid CEL: no, with the error. What
 * is merely outside slicefit's CEL subset is left to the in-tree plugin: unsure. */
Test(cluster, invalid_cel_fails_the_claim_with_its_error)
{
  json_t *s = fx_json(
      "{\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":\"n1-gpu\"},\"spec\":{\"driver\":\"gpu.example.com\","
      "\"nodeName\":\"n1\",\"pool\":{\"name\":\"n1\",\"generation\":1,\"resourceSliceCount\":1},\"devices\":["
      "{\"name\":\"gpu-0\"}]}}");
  ct_apply(s);
  json_decref(s);
  const char *ok = "device.driver == 'gpu.example.com'";
  sf_verdict_t v = one_selector(ok, "true");
  cr_assert_eq(v.fit, SF_FIT_YES, "%s", v.reason);
  v = one_selector(ok, "noSuchVar");
  cr_assert_eq(v.fit, SF_FIT_NO);
  cr_assert(strstr(v.reason, "selector noSuchVar: ") && strstr(v.reason, "noSuchVar'"), "%s",
            v.reason);
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
Test(cluster, capacity_name_takes_the_driver_of_a_double_quoted_class)
{
  json_t *other = fx_json(
      "{\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":\"n1-nic\"},\"spec\":{\"driver\":\"nic.example.com\","
      "\"nodeName\":\"n1\",\"pool\":{\"name\":\"n1-nic\",\"generation\":1,\"resourceSliceCount\":1},\"devices\":["
      "{\"name\":\"nic-0\",\"allowMultipleAllocations\":true,\"capacity\":{\"memory\":{\"value\":\"1Gi\"}}}]}}");
  ct_apply(other);
  json_decref(other);
  ct_shared_gpu_node();
  const char *quotes[] = {"'gpu.example.com'", "\\\"gpu.example.com\\\""};
  for (size_t i = 0; i < 2; i++) {
    char text[1024];
    snprintf(text, sizeof text,
             "{\"kind\":\"DeviceClass\",\"metadata\":{\"name\":\"c\"},\"spec\":{\"selectors\":[{\"cel\":"
             "{\"expression\":\"device.driver == %s\"}}]}}",
             quotes[i]);
    json_t *cls = fx_json(text);
    ct_apply(cls);
    json_decref(cls);
    json_t *cl = fx_json(
        "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"rc\",\"namespace\":\"ns\"},\"spec\":{\"devices\":"
        "{\"requests\":[{\"name\":\"r\",\"exactly\":{\"deviceClassName\":\"c\",\"capacity\":{\"requests\":"
        "{\"memory\":\"16Gi\"}}}}]}}}");
    ct_apply(cl);
    json_decref(cl);
    json_t *pod = fx_json(
        "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"},\"spec\":{\"containers\":"
        "[{\"name\":\"c\",\"image\":\"x\"}],\"resourceClaims\":[{\"name\":\"g\",\"resourceClaimName\":\"rc\"}]}}");
    const char *names[] = {"n1"};
    sf_verdict_t v[1];
    sf_pod_plan_t *p = ct_plan(pod);
    ct_evaluate(p, names, 1, v);
    /* gpu.example.com/memory (80Gi): fits; nic.example.com/memory (1Gi) would not. */
    cr_assert_eq(v[0].fit, SF_FIT_YES, "selector %s: %s", quotes[i], v[0].reason);
    sf_pod_plan_free(p);
    json_decref(pod);
  }
}

/* DRA refuses allocation mode All on a node that any pool reaches incomplete or invalid, whatever
 * its driver; an ExactCount request does not look at other pools. */
Test(cluster, all_mode_refuses_a_node_an_unsettled_pool_reaches, .init = cr_redirect_stderr)
{
  ct_load("dra-example-driver/deployments__helm__dra-example-driver__templates__deviceclass.json");
  json_t *gpu = ct_slice("gpus", "n1", "n1", 1, 1, 2, "gpu");
  ct_apply(gpu);
#define NIC_FMT                                                                                              \
  "{\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":\"%s\"},\"spec\":{\"driver\":\"nic.example.com\","     \
  "\"nodeName\":\"n1\",\"pool\":{\"name\":\"nics\",\"generation\":1,\"resourceSliceCount\":2},\"devices\":[" \
  "{\"name\":\"nic-0\"}]}}"
  char text[512];
  snprintf(text, sizeof text, NIC_FMT, "nic-a");
  json_t *nic_a = fx_json(text);
  ct_apply(nic_a); /* one slice of two: nics is incomplete on n1 */
  json_t *all = fx_json(
      "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"all\",\"namespace\":\"ns\"},\"spec\":{\"devices\":"
      "{\"requests\":[{\"name\":\"r\",\"exactly\":{\"deviceClassName\":\"gpu.example.com\",\"allocationMode\":"
      "\"All\"}}]}}}");
  json_t *one = fx_json(
      "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"one\",\"namespace\":\"ns\"},\"spec\":{\"devices\":"
      "{\"requests\":[{\"name\":\"r\",\"exactly\":{\"deviceClassName\":\"gpu.example.com\"}}]}}}");
  ct_apply(all);
  ct_apply(one);
  json_t *pod_all = fx_json(
      "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"},\"spec\":{\"containers\":"
      "[{\"name\":\"c\",\"image\":\"x\"}],\"resourceClaims\":[{\"name\":\"g\",\"resourceClaimName\":\"all\"}]}}");
  json_t *pod_one = fx_json(
      "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"q\",\"namespace\":\"ns\"},\"spec\":{\"containers\":"
      "[{\"name\":\"c\",\"image\":\"x\"}],\"resourceClaims\":[{\"name\":\"g\",\"resourceClaimName\":\"one\"}]}}");
  const char *names[] = {"n1"};
  sf_verdict_t v[1];
  sf_pod_plan_t *p = ct_plan(pod_all);
  ct_evaluate(p, names, 1, v);
  cr_assert_eq(v[0].fit, SF_FIT_NO);
  cr_assert_str_eq(v[0].reason,
                   "claim ns/all, request r: asks for all devices, but resource pool nic.example.com/nics is "
                   "currently being updated");
  sf_pod_plan_free(p);
  p = ct_plan(pod_one);
  ct_evaluate(p, names, 1, v);
  cr_assert_eq(v[0].fit, SF_FIT_YES, "%s", v[0].reason);
  sf_pod_plan_free(p);
  /* The second slice names nic-0 again: complete, but invalid. */
  snprintf(text, sizeof text, NIC_FMT, "nic-b");
  json_t *nic_b = fx_json(text);
  ct_apply(nic_b);
  p = ct_plan(pod_all);
  ct_evaluate(p, names, 1, v);
  cr_assert_eq(v[0].fit, SF_FIT_NO);
  cr_assert(strstr(v[0].reason, "resource pool nic.example.com/nics is currently invalid"), "%s",
            v[0].reason);
  sf_pod_plan_free(p);
  /* Gone: All takes both GPUs. */
  cr_assert_eq(sf_cluster_delete(ct_cluster, SF_KIND_UNKNOWN, nic_a, ct_err, sizeof ct_err), 0, "%s",
               ct_err);
  cr_assert_eq(sf_cluster_delete(ct_cluster, SF_KIND_UNKNOWN, nic_b, ct_err, sizeof ct_err), 0, "%s",
               ct_err);
  p = ct_plan(pod_all);
  ct_evaluate(p, names, 1, v);
  cr_assert_eq(v[0].fit, SF_FIT_YES, "%s", v[0].reason);
  sf_pod_plan_free(p);
  ct_valid();
  json_decref(gpu);
  json_decref(nic_a);
  json_decref(nic_b);
  json_decref(all);
  json_decref(one);
  json_decref(pod_all);
  json_decref(pod_one);
}
