/*
 * POST /filter against bin/slicefit on the example cluster, with pods made
 * from the NVIDIA DRA driver's demo specs, in both nodeCacheCapable modes.
 * Every field of ExtenderFilterResult is checked.
 */
#include <criterion/criterion.h>
#include <string.h>
#include "cases.h"
#include "harness.h"

static sfx_t srv;

static void setup(void)
{
  sfx_start_example(&srv, NULL);
}
static void teardown(void)
{
  cr_expect_eq(sfx_stop(&srv), 0);
}

TestSuite(filter, .init = setup, .fini = teardown, .timeout = 60);

/* Checks a reply against the nodes that must pass; every other node must fail with a reason. */
static void check_result(const json_t *res, bool cache_mode, const char *const *pass)
{
  cr_assert(json_is_object(res));
  cr_assert_eq(json_object_size(res), 5, "exactly the five ExtenderFilterResult keys");
  const json_t *names = json_object_get(res, "NodeNames");
  const json_t *nodes = json_object_get(res, "Nodes");
  const json_t *failed = json_object_get(res, "FailedNodes");
  const json_t *unres = json_object_get(res, "FailedAndUnresolvableNodes");
  cr_assert_str_eq(json_string_value(json_object_get(res, "Error")), "");
  cr_assert(json_is_object(failed) && json_is_object(unres));
  cr_assert_eq(json_object_size(unres), 0);
  const json_t *list = cache_mode ? names : json_object_get(nodes, "items");
  cr_assert(cache_mode ? json_is_null(nodes) : json_is_null(names));
  if (!cache_mode)
    cr_assert(json_is_object(json_object_get(nodes, "metadata")));
  size_t npass = 0;
  for (size_t i = 0; pass[i]; i++)
    npass++;
  cr_assert_eq(json_array_size(list), npass, "passing nodes");
  cr_assert_eq(json_object_size(failed), SFX_NNODES - npass, "failed nodes");
  size_t k = 0;
  for (size_t i = 0; i < SFX_NNODES; i++) {
    const char *n = sfx_nodes[i];
    const char *reason = json_string_value(json_object_get(failed, n));
    if (!sfx_in(n, pass)) {
      cr_assert(reason && strlen(reason) > 10, "%s must fail with a sentence", n);
      continue;
    }
    const json_t *e = json_array_get(list, k++);
    /* Passing nodes keep the input order; Node objects come back as they were sent. */
    const char *got = cache_mode ? json_string_value(e)
                                 : json_string_value(
                                       json_object_get(json_object_get(e, "metadata"), "name"));
    cr_assert_str_eq(got, n);
    if (!cache_mode)
      cr_assert_str_eq(json_string_value(
                           json_object_get(json_object_get(json_object_get(e, "metadata"), "labels"),
                                           "kubernetes.io/hostname")),
                       n);
    cr_assert_null(reason, "%s passes and is not in FailedNodes", n);
  }
}

static void run(const json_t *pod, const char *const *pass)
{
  for (int mode = 0; mode < 2; mode++) {
    json_t *args = sfx_args(pod, sfx_nodes, SFX_NNODES, mode == 0);
    long status;
    json_t *res = sfx_post_json(&srv, "/filter", args, &status);
    cr_assert_eq(status, 200);
    check_result(res, mode == 0, pass);
    json_decref(res);
    json_decref(args);
  }
}

Test(filter, shared_card_claim_fits_cards_with_enough_free_memory)
{
  /* 6Gi of a shared card: rtx-4 has 4Gi left; H100/A100 are not shared cards. */
  json_t *pod = sfx_pod("pod-gpu-test1.json", "tenants", "agent-sandbox-7");
  static const char *const pass[] = {"rtx-0", "rtx-1", "rtx-2", "rtx-3",
                                     "rtx-5", "rtx-6", "rtx-7", NULL};
  run(pod, pass);
  json_decref(pod);
}

Test(filter, two_whole_gpus_need_a_node_with_two_free)
{
  json_t *pod = sfx_pod("pod-gpu-test1.json", "train", "ddp-worker-0");
  static const char *const pass[] = {"h100-0", "h100-1", "h100-2", "h100-3", "a100-0",
                                     "a100-1", "a100-2", "a100-3", NULL};
  run(pod, pass);
  json_decref(pod);
}

Test(filter, allocated_claim_pins_the_pod_to_its_node)
{
  json_t *pod = sfx_pod("pod-gpu-test1.json", "train", "llm-finetune-0");
  static const char *const pass[] = {"h100-0", NULL};
  run(pod, pass);
  json_decref(pod);
}

Test(filter, extended_resource_is_an_implicit_claim_on_its_class)
{
  /* nvidia.com/gpu: 1 asks a whole card: shared cards already in use cannot give one. */
  json_t *pod = sfx_pod("pod-gpu-full.json", "extended-resource-gpu-full", "gpu-full-pod");
  static const char *const pass[] = {"h100-0", "h100-1", "h100-2", "h100-3", "a100-0", "a100-1",
                                     "a100-2", "a100-3", "rtx-5",  "rtx-6",  "rtx-7",  NULL};
  run(pod, pass);
  json_decref(pod);
}

Test(filter, pod_without_claims_gets_every_node)
{
  json_t *pod = sfx_pod("pod-no-gpu.json", "default", "web-0");
  run(pod, sfx_nodes);
  json_decref(pod);
}

Test(filter, unknown_nodes_pass)
{
  /* A node the index does not know is for the in-tree plugin to judge. */
  json_t *pod = sfx_pod("pod-gpu-test1.json", "tenants", "agent-sandbox-7");
  const char *names[] = {"cpu-node-9", "rtx-4"};
  json_t *args = sfx_args(pod, names, 2, true);
  long status;
  json_t *res = sfx_post_json(&srv, "/filter", args, &status);
  cr_assert_eq(status, 200);
  cr_assert_eq(json_array_size(json_object_get(res, "NodeNames")), 1);
  cr_assert_str_eq(json_string_value(json_array_get(json_object_get(res, "NodeNames"), 0)),
                   "cpu-node-9");
  cr_assert_not_null(json_object_get(json_object_get(res, "FailedNodes"), "rtx-4"));
  json_decref(res);
  json_decref(args);
  json_decref(pod);
}

Test(filter, lowercase_keys_and_a_single_node)
{
  /* Go decodes keys case-insensitively; a nominated node comes alone. */
  json_t *pod = sfx_pod("pod-gpu-test1.json", "tenants", "agent-sandbox-7");
  json_t *args = json_pack("{s:O,s:n,s:[s]}", "pod", pod, "nodes", "nodenames", "rtx-2");
  long status;
  json_t *res = sfx_post_json(&srv, "/filter", args, &status);
  cr_assert_eq(status, 200);
  cr_assert_str_eq(json_string_value(json_array_get(json_object_get(res, "NodeNames"), 0)), "rtx-2");
  cr_assert_eq(json_object_size(json_object_get(res, "FailedNodes")), 0);
  json_decref(res);
  json_decref(args);
  json_decref(pod);
}

Test(filter, empty_node_list)
{
  json_t *pod = sfx_pod("pod-gpu-test1.json", "tenants", "agent-sandbox-7");
  for (int mode = 0; mode < 2; mode++) {
    json_t *args = sfx_args(pod, NULL, 0, mode == 0);
    long status;
    json_t *res = sfx_post_json(&srv, "/filter", args, &status);
    cr_assert_eq(status, 200);
    const json_t *list = mode == 0 ? json_object_get(res, "NodeNames")
                                   : json_object_get(json_object_get(res, "Nodes"), "items");
    cr_assert(json_is_array(list) && json_array_size(list) == 0);
    json_decref(res);
    json_decref(args);
  }
  json_decref(pod);
}
