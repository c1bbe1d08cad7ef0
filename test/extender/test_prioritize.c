/*
 * POST /prioritize: a HostPriorityList with every input node in order,
 * scores 0..10, nodes that cannot fit at 0, and the packing preference of
 * the fragmentation strategy visible on the example cluster.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
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

TestSuite(prioritize, .init = setup, .fini = teardown, .timeout = 60);

/* Scores by node (index in sfx_nodes), checked for shape in both modes and equal across them. */
static void scores_of(const json_t *pod, long out[SFX_NNODES])
{
  long first[SFX_NNODES];
  for (int mode = 0; mode < 2; mode++) {
    json_t *args = sfx_args(pod, sfx_nodes, SFX_NNODES, mode == 0);
    long status;
    json_t *res = sfx_post_json(&srv, "/prioritize", args, &status);
    cr_assert_eq(status, 200);
    cr_assert(json_is_array(res));
    cr_assert_eq(json_array_size(res), SFX_NNODES);
    for (size_t i = 0; i < SFX_NNODES; i++) {
      const json_t *hp = json_array_get(res, i);
      cr_assert_eq(json_object_size(hp), 2, "HostPriority has Host and Score only");
      cr_assert_str_eq(json_string_value(json_object_get(hp, "Host")), sfx_nodes[i]);
      const json_t *sc = json_object_get(hp, "Score");
      cr_assert(json_is_integer(sc));
      out[i] = (long)json_integer_value(sc);
      cr_assert(out[i] >= 0 && out[i] <= 10, "%s scored %ld", sfx_nodes[i], out[i]);
      if (mode == 1)
        cr_assert_eq(out[i], first[i], "%s: same score in both modes", sfx_nodes[i]);
      first[i] = out[i];
    }
    json_decref(res);
    json_decref(args);
  }
}

static long score(const long s[SFX_NNODES], const char *node)
{
  for (size_t i = 0; i < SFX_NNODES; i++)
    if (strcmp(sfx_nodes[i], node) == 0)
      return s[i];
  cr_assert_fail("no node %s", node);
  return -1;
}

static long best_fit(const long s[SFX_NNODES], const char *const *fit)
{
  long best = -1;
  for (size_t i = 0; i < SFX_NNODES; i++)
    if (sfx_in(sfx_nodes[i], fit) && s[i] > best)
      best = s[i];
  return best;
}

Test(prioritize, default_policy_scores_only_nodes_that_fit)
{
  json_t *pod = sfx_pod("pod-gpu-test1.json", "tenants", "agent-sandbox-7");
  static const char *const fit[] = {"rtx-0", "rtx-1", "rtx-2", "rtx-3",
                                    "rtx-5", "rtx-6", "rtx-7", NULL};
  long s[SFX_NNODES];
  scores_of(pod, s);
  for (size_t i = 0; i < SFX_NNODES; i++)
    if (!sfx_in(sfx_nodes[i], fit))
      cr_assert_eq(s[i], 0, "%s cannot fit and scores 0", sfx_nodes[i]);
  cr_assert_eq(best_fit(s, fit), 10, "the best node gets MaxExtenderPriority");
  json_decref(pod);
}

/*
 * The README's example: 6Gi of a 20Gi shared card. rtx-1 (8Gi of 20Gi
 * used) keeps 6Gi, a share of the cluster's mix; rtx-2 (12Gi used) would
 * keep a 2Gi sliver no share of the mix fits, which the plan of the shares
 * prices above opening the idle rtx-5 (docs/replay.md, "Churn: pods that come
 * and go", has what the churn replay says of that choice).
 */
Test(prioritize, default_policy_opens_an_idle_card_rather_than_leave_a_sliver)
{
  json_t *pod = sfx_pod("pod-gpu-test1.json", "tenants", "agent-sandbox-7");
  long s[SFX_NNODES];
  scores_of(pod, s);
  cr_assert_eq(score(s, "rtx-1"), 10);
  cr_assert_gt(score(s, "rtx-5"), score(s, "rtx-2"));
  cr_assert_eq(score(s, "rtx-2"), 0);
  json_decref(pod);
}

/*
 * A pod without claims is scored (policy cpu_only_pods: score, the default),
 * as the FGD simulator scores it. This cluster has no Node objects and so no
 * node CPU: taking the pod's CPU strands no GPU anywhere, and only the fill
 * term tells the nodes apart (test_live.c has the case where node CPU decides).
 */
Test(prioritize, pod_without_claims_is_scored)
{
  json_t *pod = sfx_pod("pod-no-gpu.json", "default", "web-0");
  long s[SFX_NNODES];
  scores_of(pod, s);
  /* Every node is scored; a daemon told of no binding or departure yet takes the fleet to churn,
   * so weight_fill sends the CPU where the GPUs are used: the small, part-used RTX nodes before
   * the H100 nodes, whose idle GPUs stay for pods of many GPUs. */
  long rtx_least = 10, h100_most = 0;
  for (int i = 0; i < SFX_NNODES; i++) {
    if (strncmp(sfx_nodes[i], "rtx-", 4) == 0 && s[i] < rtx_least)
      rtx_least = s[i];
    if (strncmp(sfx_nodes[i], "h100-", 5) == 0 && s[i] > h100_most)
      h100_most = s[i];
  }
  cr_assert_gt(rtx_least, h100_most);
  json_decref(pod);
}

static void setup_pass(void)
{
  char path[1024];
  snprintf(path, sizeof path, "%s", sfx_path("test/extender/data/policy-cpu-only-pass.json"));
  const char *const extra[] = {"--policy", path, NULL};
  sfx_start_example(&srv, extra);
}

TestSuite(prioritize_pass, .init = setup_pass, .fini = teardown, .timeout = 60);

Test(prioritize_pass, pod_without_claims_scores_zero_everywhere)
{
  json_t *pod = sfx_pod("pod-no-gpu.json", "default", "web-0");
  long s[SFX_NNODES];
  scores_of(pod, s);
  for (int i = 0; i < SFX_NNODES; i++)
    cr_assert_eq(s[i], 0);
  json_decref(pod);
}

/* Under binpack the order is predictable: the fullest node that fits first. */
static void setup_binpack(void)
{
  char path[1024];
  snprintf(path, sizeof path, "%s", sfx_path("test/extender/data/policy-binpack.json"));
  const char *const extra[] = {"--policy", path, NULL};
  sfx_start_example(&srv, extra);
}

TestSuite(prioritize_binpack, .init = setup_binpack, .fini = teardown, .timeout = 60);

Test(prioritize_binpack, shared_claim_goes_to_the_fullest_card_that_fits)
{
  json_t *pod = sfx_pod("pod-gpu-test1.json", "tenants", "agent-sandbox-7");
  long s[SFX_NNODES];
  scores_of(pod, s);
  /* rtx-2 has 12Gi of 20Gi used and 8Gi free for the 6Gi asked; rtx-5 is idle. */
  cr_assert_eq(score(s, "rtx-2"), 10);
  cr_assert_gt(score(s, "rtx-1"), score(s, "rtx-0"));
  cr_assert_gt(score(s, "rtx-0"), score(s, "rtx-5"));
  cr_assert_eq(score(s, "rtx-4"), 0, "4Gi free: cannot fit");
  cr_assert_eq(score(s, "h100-1"), 0, "not a shared card");
  json_decref(pod);
}

Test(prioritize_binpack, two_gpus_keep_the_idle_nvswitch_nodes_whole)
{
  json_t *pod = sfx_pod("pod-gpu-test1.json", "train", "ddp-worker-0");
  long s[SFX_NNODES];
  scores_of(pod, s);
  /* h100-0 is already broken into by a 4-GPU job; the idle 8-GPU islands stay whole. */
  cr_assert_gt(score(s, "h100-0"), score(s, "h100-1"));
  cr_assert_gt(score(s, "a100-0"), score(s, "a100-1"));
  for (int i = 8; i < SFX_NNODES; i++)
    cr_assert_eq(s[i], 0, "%s has one GPU", sfx_nodes[i]);
  json_decref(pod);
}

static char *post_raw(const char *path, const json_t *args)
{
  char *body = json_dumps(args, JSON_COMPACT);
  sfx_reply_t r;
  sfx_request(&srv, "POST", path, body, strlen(body), &r);
  cr_assert_eq(r.status, 200);
  free(body);
  return r.body;
}

static long metric(const char *name)
{
  sfx_reply_t r;
  sfx_request(&srv, "GET", "/metrics", NULL, 0, &r);
  char needle[128];
  snprintf(needle, sizeof needle, "\n%s ", name);
  const char *p = strstr(r.body, needle);
  long v = p ? atol(p + strlen(needle)) : -1;
  sfx_reply_free(&r);
  return v;
}

Test(prioritize_binpack, after_a_filter_the_same_scores_come_from_its_verdicts)
{
  json_t *pod = sfx_pod("pod-gpu-test1.json", "tenants", "agent-sandbox-7");
  static const char *const pass[] = {"rtx-0", "rtx-1", "rtx-2", "rtx-3", "rtx-5", "rtx-6", "rtx-7"};
  json_t *all = sfx_args(pod, sfx_nodes, SFX_NNODES, true);
  json_t *some = sfx_args(pod, pass, 7, true);
  json_t *fewer = sfx_args(pod, pass + 1, 6, true);
  char *fresh = post_raw("/prioritize", some);
  free(post_raw("/filter", all));
  char *cached = post_raw("/prioritize", some);
  cr_assert_str_eq(cached, fresh);
  cr_assert_eq(metric("slicefit_eval_cache_hits_total"), 1);
  cr_assert_eq(metric("slicefit_eval_cache_misses_total"), 1);
  /* Fewer FIT nodes than the filter saw: scores are normalised again. */
  free(post_raw("/prioritize", fewer));
  cr_assert_eq(metric("slicefit_eval_cache_misses_total"), 2);
  free(fresh);
  free(cached);
  json_decref(all);
  json_decref(some);
  json_decref(fewer);
  json_decref(pod);
}
