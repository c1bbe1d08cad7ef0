/*
 * Answers that depend on the cluster's Kubernetes version: devices with bindingConditions are
 * selectable only where DRADeviceBindingConditions is on (beta and on by default from 1.36,
 * alpha and off on 1.34 and 1.35): the allocator's isSelectable refuses them otherwise.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include "slicefit/cluster.h"
#include "fixture.h"
#include "cluster_fx.h"

/*
 * The example driver's real slice on kind-worker (its README's `kubectl get resourceslice`),
 * every device published with a binding condition, as a driver that attaches devices late does
 * (the example driver's controller satisfies such conditions in
 * cmd/dra-example-controller/plugins/bindingconditions.go); `plain` devices keep none.
 */
static void slice_with_conditions(size_t plain)
{
  json_t *l = fx_load("dra-example-driver/README.kubectl-get-resourceslice-output.json");
  json_t *s = fx_item(l, 0), *spec = json_object_get(s, "spec");
  json_object_set_new(spec, "nodeName", json_string("kind-worker"));
  json_object_set_new(json_object_get(spec, "pool"), "name", json_string("kind-worker"));
  size_t i;
  json_t *dev;
  json_array_foreach(json_object_get(spec, "devices"), i, dev)
  {
    if (i < plain)
      continue;
    json_object_set_new(dev, "bindingConditions", json_pack("[s]", "gpu.example.com/attached"));
    json_object_set_new(dev, "bindingFailureConditions", json_pack("[s]", "gpu.example.com/failed"));
  }
  ct_apply(s);
  json_decref(l);
}

/* pod0 of the basic-resourceclaimtemplate demo, with the claim its template made. */
static sf_fit_t verdict_on_kind_worker(char *why)
{
  json_t *l = fx_load(
      "dra-example-driver/basic-resourceclaimtemplate__basic-resourceclaimtemplate.json");
  json_t *cl = json_pack("{s:s,s:{s:s,s:s},s:O}", "kind", "ResourceClaim", "metadata", "name",
                         "pod0-gpu-x", "namespace", "basic-resourceclaimtemplate", "spec",
                         json_object_get(json_object_get(fx_item(l, 1), "spec"), "spec"));
  ct_apply(cl);
  json_t *pod = json_deep_copy(fx_item(l, 2));
  json_object_set_new(pod, "status",
                      json_pack("{s:[{s:s,s:s}]}", "resourceClaimStatuses", "name", "gpu",
                                "resourceClaimName", "pod0-gpu-x"));
  sf_pod_plan_t *p = ct_plan(pod);
  const char *names[] = {"kind-worker"};
  sf_verdict_t v[1];
  ct_evaluate(p, names, 1, v);
  snprintf(why, SF_REASON_MAX, "%s", v[0].reason);
  sf_pod_plan_free(p);
  json_decref(pod);
  json_decref(cl);
  json_decref(l);
  return v[0].fit;
}

Test(cluster, binding_conditions_follow_the_kubernetes_version)
{
  char why[SF_REASON_MAX];
  ct_load("dra-example-driver/deployments__helm__dra-example-driver__templates__deviceclass.json");
  slice_with_conditions(0);
  cr_assert_eq(sf_cluster_kube_minor(ct_cluster), 0);
  cr_assert_eq(verdict_on_kind_worker(why), SF_FIT_YES, "version unknown: every gate on: %s", why);
  sf_cluster_set_kube_minor(ct_cluster, 34);
  ct_valid();
  cr_assert_eq(verdict_on_kind_worker(why), SF_FIT_NO, "1.34: the gate is off by default");
  sf_cluster_set_kube_minor(ct_cluster, 35);
  cr_assert_eq(verdict_on_kind_worker(why), SF_FIT_NO, "1.35: still off");
  sf_cluster_set_kube_minor(ct_cluster, 36);
  ct_valid();
  cr_assert_eq(verdict_on_kind_worker(why), SF_FIT_YES, "1.36: beta, on: %s", why);
}

Test(cluster, devices_without_conditions_stay_selectable_on_older_versions)
{
  char why[SF_REASON_MAX];
  ct_load("dra-example-driver/deployments__helm__dra-example-driver__templates__deviceclass.json");
  sf_cluster_set_kube_minor(ct_cluster, 34);
  slice_with_conditions(1);
  cr_assert_eq(verdict_on_kind_worker(why), SF_FIT_YES, "gpu-0 has no condition: %s", why);
  cr_assert_eq(ct_node_devs("kind-worker"), 1, "the seven others are not selectable on 1.34");
  sf_cluster_set_kube_minor(ct_cluster, 36);
  cr_assert_eq(ct_node_devs("kind-worker"), 8);
}
