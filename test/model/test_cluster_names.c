/* Evaluating a names list the caller already passed: the nodes found then are taken again, and
   only while no node came or went (a removed node's id is reused by the next one). */
#include <criterion/criterion.h>
#include <string.h>
#include "slicefit/cluster.h"
#include "fixture.h"
#include "cluster_fx.h"

static json_t *gpu_pod(void)
{
  json_t *cl = fx_json("{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"c1\",\"namespace\":"
                       "\"t\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":{"
                       "\"deviceClassName\":\"gpu.nvidia.com\",\"count\":1}}]}}}");
  ct_apply(cl);
  json_decref(cl);
  return fx_json("{\"metadata\":{\"name\":\"p\",\"namespace\":\"t\",\"uid\":\"u\"},\"spec\":{"
                 "\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimName\":\"c1\"}]}}");
}

/*
 * evaluate_list(list) and a plain evaluate give the same verdicts; returns
 * the fits. The plain one forgets the list, so the list is evaluated again
 * last: the next call with it may take the nodes found.
 */
static void both(sf_pod_plan_t *p, const char *const *names, size_t n, uint64_t list, sf_fit_t *fits)
{
  sf_verdict_t got[4], want[4], again[4];
  cr_assert_eq(sf_cluster_evaluate_list(ct_cluster, p, names, n, list, got), 0);
  ct_evaluate(p, names, n, want);
  cr_assert_eq(sf_cluster_evaluate_list(ct_cluster, p, names, n, list, again), 0);
  for (size_t i = 0; i < n; i++) {
    cr_assert_eq(got[i].fit, want[i].fit, "%s: %d, afresh %d", names[i], got[i].fit, want[i].fit);
    cr_assert_eq(got[i].score, want[i].score, "%s", names[i]);
    fits[i] = got[i].fit;
  }
}

Test(cluster, a_known_list_follows_nodes_that_come_and_go)
{
  static const char *const names[] = {"gpu-node-a", "gpu-node-b", "gpu-node-c"};
  ct_nvidia();
  json_t *pod = gpu_pod();
  sf_pod_plan_t *p = ct_plan(pod);
  sf_fit_t fit[3];
  for (int round = 0; round < 2; round++) { /* the second takes the nodes found by the first */
    both(p, names, 3, 7, fit);
    cr_assert_eq(fit[0], SF_FIT_YES);
    cr_assert_eq(fit[1], SF_FIT_YES);
    cr_assert_eq(fit[2], SF_FIT_UNSURE, "not a node of the index");
  }
  sf_pod_plan_free(p);
  /* gpu-node-b goes, gpu-node-c comes with b's devices (and, likely, b's id). */
  json_t *l = fx_load("nvidia-slices.json");
  json_t *b = fx_item(l, 1), *c = json_deep_copy(b);
  cr_assert_eq(sf_cluster_delete(ct_cluster, SF_KIND_RESOURCE_SLICE, b, ct_err, sizeof ct_err), 0,
               "%s", ct_err);
  json_object_set_new(json_object_get(c, "metadata"), "name", json_string("gpu-node-c-slice"));
  json_object_set_new(json_object_get(c, "spec"), "nodeName", json_string("gpu-node-c"));
  json_object_set_new(json_object_get(json_object_get(c, "spec"), "pool"), "name",
                      json_string("gpu-node-c"));
  ct_apply(c);
  p = ct_plan(pod);
  both(p, names, 3, 7, fit);
  cr_assert_eq(fit[0], SF_FIT_YES);
  cr_assert_eq(fit[1], SF_FIT_UNSURE, "gpu-node-b is gone: its position must not keep its id");
  cr_assert_eq(fit[2], SF_FIT_YES, "gpu-node-c is found");
  both(p, names, 3, 7, fit); /* and taken again */
  cr_assert_eq(fit[1], SF_FIT_UNSURE);
  cr_assert_eq(fit[2], SF_FIT_YES);
  static const char *const other[] = {"gpu-node-c", "gpu-node-a"};
  both(p, other, 2, 8, fit); /* another list: the positions are found anew */
  cr_assert_eq(fit[0], SF_FIT_YES);
  both(p, names, 3, 7, fit);
  cr_assert_eq(fit[1], SF_FIT_UNSURE);
  /* A call that finds no node (a pod that asks nothing) leaves the positions another list's. */
  static const char *const probe[] = {"nope", "gpu-node-c"};
  json_t *bare = fx_json("{\"metadata\":{\"name\":\"q\",\"namespace\":\"t\",\"uid\":\"v\"},"
                         "\"spec\":{}}");
  sf_pod_plan_t *empty = ct_plan(bare);
  cr_assert(sf_pod_plan_empty(empty));
  sf_verdict_t got[2], want[2];
  cr_assert_eq(sf_cluster_evaluate_list(ct_cluster, empty, probe, 2, 9, got), 0);
  cr_assert_eq(sf_cluster_evaluate_list(ct_cluster, p, probe, 2, 9, got), 0);
  ct_evaluate(p, probe, 2, want);
  cr_assert_eq(got[0].fit, want[0].fit, "'nope' is no node, whatever the last list had there");
  cr_assert_eq(got[0].fit, SF_FIT_UNSURE);
  cr_assert_eq(got[1].fit, want[1].fit);
  sf_pod_plan_free(empty);
  json_decref(bare);
  sf_pod_plan_free(p);
  json_decref(c);
  json_decref(l);
  json_decref(pod);
}
