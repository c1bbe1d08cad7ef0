/*
 * A live cluster: bin/slicefit --kubeconfig against test/tools' fake
 * kube-apiserver holding the example cluster. Ready only once synced; a
 * claim allocated through the API pins its pod at once; the policy
 * ConfigMap changes the strategy in force.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "cases.h"
#include "harness.h"

/* Loads the example cluster's objects of `kind` as resource `res`. */
static void load_kind(sfx_api_t *a, const json_t *list, const char *kind, const char *res,
                      const char *dir)
{
  json_t *items = json_array();
  size_t i;
  json_t *it;
  json_array_foreach(json_object_get(list, "items"), i, it)
  {
    if (strcmp(json_string_value(json_object_get(it, "kind")), kind) == 0)
      json_array_append(items, it);
  }
  char path[256];
  snprintf(path, sizeof path, "%s/%s.json", dir, res);
  cr_assert_eq(json_dump_file(items, path, 0), 0);
  sfx_api_cmd(a, "load %s %s", res, path);
  json_decref(items);
}

static void remove_dir(const char *dir)
{
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
}

static void nap(void)
{
  nanosleep(&(struct timespec){0, 20000000L}, NULL);
}

/* Polls GET path until its body contains `want` (10 s at most). */
static void wait_for(sfx_t *s, const char *path, const char *want)
{
  for (int i = 0; i < 500; i++) {
    sfx_reply_t r;
    sfx_request(s, "GET", path, NULL, 0, &r);
    bool ok = strstr(r.body, want) != NULL;
    sfx_reply_free(&r);
    if (ok)
      return;
    nap();
  }
  cr_assert_fail("GET %s never had %s", path, want);
}

/* The example's pending claim of tenants/agent-sandbox-7, now allocated 6Gi of rtx-2. */
static char *allocated_claim(const json_t *list)
{
  size_t i;
  json_t *it;
  json_array_foreach(json_object_get(list, "items"), i, it)
  {
    const json_t *md = json_object_get(it, "metadata");
    const char *name = json_string_value(json_object_get(md, "name"));
    if (strncmp(name, "agent-sandbox-7-gpu-", 20) != 0)
      continue;
    json_t *c = json_deep_copy(it);
    json_object_set_new(c, "status",
                        json_pack("{s:{s:{s:[{s:s,s:s,s:s,s:s,s:s,s:{s:s}}]},s:s}}", "allocation",
                                  "devices", "results", "request", "gpu", "driver", "gpu.nvidia.com",
                                  "pool", "rtx-2", "device", "gpu-0", "shareID",
                                  "5f0c2d8e-1b7a-4c3e-9a55-2d8f1e6b7c90", "consumedCapacity",
                                  "memory", "6Gi", "allocationTimestamp", "2026-12-01T00:00:00Z"));
    char *s = json_dumps(c, JSON_COMPACT);
    json_decref(c);
    return s;
  }
  cr_assert_fail("no agent-sandbox-7 claim in the example");
  return NULL;
}

Test(live, follows_the_api_server, .timeout = 60)
{
  sfx_api_t api;
  sfx_api_start(&api, NULL);
  char dir[] = "/tmp/sfx-live-XXXXXX", kc[64];
  cr_assert_not_null(mkdtemp(dir));
  json_t *list = sfx_load("extender/example-cluster.json");
  load_kind(&api, list, "DeviceClass", "deviceclasses", dir);
  load_kind(&api, list, "ResourceSlice", "resourceslices", dir);
  load_kind(&api, list, "ResourceClaim", "resourceclaims", dir);
  snprintf(kc, sizeof kc, "%s/kubeconfig", dir);
  sfx_write_kubeconfig(kc, api.port);
  sfx_t s;
  const char *args[] = {"--kubeconfig", kc,   "--policy-configmap",      "slicefit/policy",
                        "--policy",     NULL, "--allow-token-over-http", NULL};
  args[5] = strdup(sfx_path("extender/example-policy.json"));
  sfx_start(&s, args);
  wait_for(&s, "/readyz", "\"ready\":true");
  json_t *res = sfx_filter_pod(&s, "tenants", "agent-sandbox-7");
  cr_assert_eq(json_array_size(json_object_get(res, "NodeNames")), 7);
  json_decref(res);
  /* The scheduler allocates the claim on rtx-2: the pod is pinned there from then on. */
  char *claim = allocated_claim(list);
  sfx_api_cmd(&api, "put resourceclaims %s", claim);
  wait_for(&s, "/metrics", "\nslicefit_claims_pending_too_long 1\n");
  wait_for(&s, "/metrics", "\nslicefit_claims_pending{namespace=\"train\"} 1\n");
  res = sfx_filter_pod(&s, "tenants", "agent-sandbox-7");
  cr_assert_eq(json_array_size(json_object_get(res, "NodeNames")), 1);
  cr_assert_str_eq(json_string_value(json_array_get(json_object_get(res, "NodeNames"), 0)), "rtx-2");
  json_decref(res);
  wait_for(&s, "/metrics", "\nslicefit_node_devices_allocated{node=\"rtx-2\"} 0.9\n");
  /* The policy ConfigMap switches the strategy. */
  sfx_api_cmd(&api, "put configmaps {\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
                    "{\"namespace\":\"slicefit\",\"name\":\"policy\"},\"data\":{\"strategy\":"
                    "\"binpack\"}}");
  wait_for(&s, "/debug/state", "binpack");
  wait_for(&s, "/metrics", "\nslicefit_policy_updates_total{result=\"applied\"} 1\n");
  wait_for(&s, "/metrics", "\nslicefit_apiwatch_errors_total{reason=\"decode\"} 0\n");
  /* Live mode's /metrics (apiwatch's counters included) passes promtool's lint. */
  sfx_reply_t r;
  sfx_request(&s, "GET", "/metrics", NULL, 0, &r);
  char why[4096];
  int lint = sfx_promtool_lint(r.body, why, sizeof why);
  sfx_reply_free(&r);
  cr_assert_neq(lint, 1, "promtool check metrics (live mode): %s", why);
  if (lint < 0)
    cr_log_warn("SKIPPED: the live /metrics lint: promtool is not installed (make deps)");
  cr_assert_eq(sfx_stop(&s), 0);
  sfx_api_stop(&api);
  remove_dir(dir);
  free(claim);
  json_decref(list);
  free((char *)(uintptr_t)args[5]);
}

/* The fake API server with one fault command given, and a kubeconfig for it in dir (mkdtemp'd). */
static void faulty_api(sfx_api_t *api, const char *fault, char *dir, char *kc, size_t cap)
{
  sfx_api_start(api, NULL);
  sfx_api_cmd(api, "%s", fault);
  cr_assert_not_null(mkdtemp(dir));
  snprintf(kc, cap, "%s/kubeconfig", dir);
  sfx_write_kubeconfig(kc, api->port);
}

Test(live, not_ready_until_synced, .timeout = 60)
{
  /* An API server that answers nothing but errors: never ready, still serving health. */
  sfx_api_t api;
  char dir[] = "/tmp/sfx-live-XXXXXX", kc[64];
  faulty_api(&api, "fail 500 1000000", dir, kc, sizeof kc);
  sfx_t s;
  const char *args[] = {"--kubeconfig", kc, "--allow-token-over-http", NULL};
  sfx_start(&s, args);
  sfx_reply_t r;
  for (int i = 0; i < 10; i++) {
    sfx_request(&s, "GET", "/readyz", NULL, 0, &r);
    cr_assert_eq(r.status, 503);
    cr_assert(strstr(r.body, "not synced"), "%s", r.body);
    sfx_reply_free(&r);
    nap();
  }
  sfx_request(&s, "GET", "/healthz", NULL, 0, &r);
  cr_assert_eq(r.status, 200);
  sfx_reply_free(&r);
  /* The state is logged once, when it changes, not once per failing probe. */
  cr_assert_eq(sfx_log_count(&s, "path=\"/readyz\""), 0);
  cr_assert_eq(sfx_log_count(&s, "\"not ready until the cluster state has synced\""), 1);
  cr_assert_eq(sfx_stop(&s), 0);
  sfx_api_stop(&api);
  remove_dir(dir);
}

/*
 * DeviceTaintRules are watched where the API serves them (found by
 * discovery): a rule tainting rtx-2's pool takes rtx-2 out of the pending
 * claim's nodes. Where the API does not serve them, the replica syncs and
 * says nothing about them below -v=2.
 */
Test(live, device_taint_rules_watched_where_served, .timeout = 60)
{
  for (int served = 1; served >= 0; served--) {
    sfx_api_t api;
    sfx_api_start(&api, served ? NULL : "--no-device-taint-rules");
    char dir[] = "/tmp/sfx-live-XXXXXX", kc[64];
    cr_assert_not_null(mkdtemp(dir));
    json_t *list = sfx_load("extender/example-cluster.json");
    load_kind(&api, list, "DeviceClass", "deviceclasses", dir);
    load_kind(&api, list, "ResourceSlice", "resourceslices", dir);
    load_kind(&api, list, "ResourceClaim", "resourceclaims", dir);
    snprintf(kc, sizeof kc, "%s/kubeconfig", dir);
    sfx_write_kubeconfig(kc, api.port);
    sfx_t s;
    const char *args[] = {"--kubeconfig", kc, "-v=5", "--allow-token-over-http", NULL};
    sfx_start(&s, args);
    wait_for(&s, "/readyz", "\"ready\":true");
    json_t *res = sfx_filter_pod(&s, "tenants", "agent-sandbox-7");
    cr_assert_eq(json_array_size(json_object_get(res, "NodeNames")), 7);
    json_decref(res);
    if (served) {
      cr_assert_eq(sfx_log_count(&s, "] \"watching devicetaintrules\" version=\"v1\""), 1);
      sfx_api_cmd(&api, "put devicetaintrules {\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":"
                        "\"DeviceTaintRule\",\"metadata\":{\"name\":\"rtx-2-xid\"},\"spec\":"
                        "{\"deviceSelector\":{\"driver\":\"gpu.nvidia.com\",\"pool\":\"rtx-2\"},"
                        "\"taint\":{\"key\":\"gpu.nvidia.com/xid\",\"value\":\"79\",\"effect\":"
                        "\"NoSchedule\"}}}");
      wait_for(&s, "/metrics", "\nslicefit_objects{kind=\"DeviceTaintRule\"} 1\n");
      /* -v=5: the event, as it reached the index. */
      cr_assert_eq(sfx_log_count(&s, "] \"watch event\" op=\"apply\" kind=\"DeviceTaintRule\" "
                                     "object=\"rtx-2-xid\""),
                   1);
      res = sfx_filter_pod(&s, "tenants", "agent-sandbox-7");
      const char *why = json_string_value(
          json_object_get(json_object_get(res, "FailedNodes"), "rtx-2"));
      cr_assert(why && strstr(why, "does not tolerate taint gpu.nvidia.com/xid=79:NoSchedule"),
                "rtx-2: %s", why ? why : "passed");
      cr_assert_eq(json_array_size(json_object_get(res, "NodeNames")), 6);
      json_decref(res);
    } else {
      cr_assert_eq(sfx_log_count(&s, "\"watching devicetaintrules\""), 0);
      cr_assert_eq(sfx_log_count(&s, "\nW"), 0, "no warning where the kind is not served");
      cr_assert_eq(sfx_log_count(&s, "devicetaintrules not served by the API server; not watched"), 1,
                   "said once at -v=2");
      wait_for(&s, "/metrics", "\nslicefit_objects{kind=\"DeviceTaintRule\"} 0\n");
    }
    cr_assert_eq(sfx_stop(&s), 0);
    sfx_api_stop(&api);
    remove_dir(dir);
    json_decref(list);
  }
}

/* The status of GET path. */
static long status_of(sfx_t *s, const char *path)
{
  sfx_reply_t r;
  sfx_request(s, "GET", path, NULL, 0, &r);
  long st = r.status;
  sfx_reply_free(&r);
  return st;
}

static void wait_status(sfx_t *s, const char *path, long want, int tries)
{
  for (int i = 0; i < tries && status_of(s, path) != want; i++)
    nap();
  cr_assert_eq(status_of(s, path), want, "GET %s", path);
}

Test(live, hung_api_server_turns_readyz_unready_and_back, .timeout = 90)
{
  sfx_api_t api;
  sfx_api_start(&api, NULL);
  char dir[] = "/tmp/sfx-live-XXXXXX", kc[64];
  cr_assert_not_null(mkdtemp(dir));
  snprintf(kc, sizeof kc, "%s/kubeconfig", dir);
  sfx_write_kubeconfig(kc, api.port);
  sfx_t s;
  const char *args[] = {"--kubeconfig",
                        kc,
                        "--allow-token-over-http",
                        "--stale-after",
                        "2",
                        "--watch-silence",
                        "1",
                        NULL};
  sfx_start(&s, args);
  wait_status(&s, "/readyz", 200, 500);
  wait_for(&s, "/metrics", "slicefit_apiwatch_confirmed_age_seconds{resource=\"resourceslices\"}");
  /* The server keeps every connection open and sends nothing. */
  sfx_api_cmd(&api, "hang on");
  wait_status(&s, "/readyz", 503, 750);
  cr_assert_eq(status_of(&s, "/healthz"), 200, "alive: the loop turns");
  double restarts = 0;
  for (int i = 0; i < 500 && restarts == 0; i++, nap()) {
    sfx_reply_t r;
    sfx_request(&s, "GET", "/metrics", NULL, 0, &r);
    const char *p = strstr(r.body, "\nslicefit_apiwatch_silent_restarts_total ");
    restarts = p ? atof(p + 41) : 0;
    sfx_reply_free(&r);
  }
  cr_assert_gt(restarts, 0, "silent watches counted");
  cr_assert_gt(sfx_log_count(&s, "] \"no byte from the server; restarting\""), 0);
  sfx_api_cmd(&api, "hang off");
  wait_status(&s, "/readyz", 200, 750);
  cr_assert_eq(sfx_stop(&s), 0);
  sfx_api_stop(&api);
  remove_dir(dir);
}

Test(live, token_over_plain_http_is_refused_at_start, .timeout = 30)
{
  char dir[] = "/tmp/sfx-live-XXXXXX", kc[64], cmd[512];
  cr_assert_not_null(mkdtemp(dir));
  snprintf(kc, sizeof kc, "%s/kubeconfig", dir);
  sfx_write_kubeconfig(kc, 1);
  snprintf(cmd, sizeof cmd, "timeout 20 '%s' --kubeconfig %s --listen 127.0.0.1:0 2>&1",
           sfx_bin("slicefit"), kc);
  FILE *p = popen(cmd, "r");
  char out[4096];
  size_t n = fread(out, 1, sizeof out - 1, p);
  out[n] = '\0';
  int st = pclose(p);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1, "exit status %d: %s", st, out);
  cr_assert(strstr(out, "plain http"), "%s", out);
  remove_dir(dir);
}

/* ---- node CPU and the pods on nodes ---- */

static const char *const CPU_NODES[] = {"gpu-a", "gpu-b", "cpu-1"};

static void put_node(sfx_api_t *a, const char *name, const char *cpu)
{
  sfx_api_cmd(a,
              "put nodes {\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\","
              "\"labels\":{\"kubernetes.io/hostname\":\"%s\"}},\"status\":{\"allocatable\":{\"cpu\":"
              "\"%s\",\"memory\":\"64Gi\",\"pods\":\"110\"},\"capacity\":{\"cpu\":\"%s\"}}}",
              name, name, cpu, cpu);
}

static void put_slice(sfx_api_t *a, const char *node)
{
  sfx_api_cmd(
      a,
      "put resourceslices {\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\","
      "\"metadata\":{\"name\":\"%s-gpu.example.com\"},\"spec\":{\"driver\":\"gpu.example.com\","
      "\"nodeName\":\"%s\",\"pool\":{\"name\":\"%s\",\"generation\":1,\"resourceSliceCount\":1},"
      "\"devices\":[{\"name\":\"gpu-0\",\"attributes\":{\"productName\":{\"string\":\"LATEST-GPU-MODEL\"}},"
      "\"capacity\":{\"memory\":{\"value\":\"80Gi\"}}},{\"name\":\"gpu-1\",\"attributes\":"
      "{\"productName\":{\"string\":\"LATEST-GPU-MODEL\"}},\"capacity\":{\"memory\":{\"value\":\"80Gi\"}}}]}}",
      node, node, node);
}

/* A claim for one whole GPU; allocated on `node`'s gpu-0 when node is not NULL. */
static void put_claim(sfx_api_t *a, const char *name, const char *node)
{
  char status[512] = "";
  if (node)
    snprintf(status, sizeof status,
             ",\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":"
             "\"gpu\",\"driver\":\"gpu.example.com\",\"pool\":\"%s\",\"device\":\"gpu-0\"}]},"
             "\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\","
             "\"operator\":\"In\",\"values\":[\"%s\"]}]}]}}}",
             node, node);
  sfx_api_cmd(a,
              "put resourceclaims {\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\","
              "\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\"},\"spec\":{\"devices\":{\"requests\":"
              "[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"gpu.example.com\"}}]}}%s}",
              name, status);
}

/* A pod asking `cpu`, with claim `claim` (or none), bound to `node` (or pending). */
static json_t *cpu_pod(const char *name, const char *cpu, const char *claim, const char *node)
{
  json_t *spec = json_pack("{s:[{s:s,s:s,s:{s:{s:s,s:s}}}]}", "containers", "name", "main", "image",
                           "busybox", "resources", "requests", "cpu", cpu, "memory", "1Gi");
  if (claim) {
    json_object_set_new(spec, "resourceClaims",
                        json_pack("[{s:s,s:s}]", "name", "gpu", "resourceClaimName", claim));
    json_object_set_new(json_object_get(json_array_get(json_object_get(spec, "containers"), 0),
                                        "resources"),
                        "claims", json_pack("[{s:s}]", "name", "gpu"));
  }
  if (node)
    json_object_set_new(spec, "nodeName", json_string(node));
  return json_pack("{s:s,s:s,s:{s:s,s:s,s:s,s:s},s:o,s:{s:s}}", "apiVersion", "v1", "kind", "Pod",
                   "metadata", "name", name, "namespace", "ml", "uid", name, "resourceVersion", "1",
                   "spec", spec, "status", "phase", node ? "Running" : "Pending");
}

static void put_pod(sfx_api_t *a, json_t *pod)
{
  char *s = json_dumps(pod, JSON_COMPACT);
  sfx_api_cmd(a, "put pods %s", s);
  free(s);
}

/* The scores of CPU_NODES for `pod`, and which of them the filter passes. */
static void cpu_scores(sfx_t *s, const json_t *pod, long sc[3], bool pass[3])
{
  json_t *args = sfx_args(pod, CPU_NODES, 3, true);
  long status;
  json_t *res = sfx_post_json(s, "/prioritize", args, &status);
  cr_assert_eq(status, 200);
  for (size_t i = 0; i < 3; i++)
    sc[i] = (long)json_integer_value(json_object_get(json_array_get(res, i), "Score"));
  json_decref(res);
  res = sfx_post_json(s, "/filter", args, &status);
  cr_assert_eq(status, 200);
  for (size_t i = 0; i < 3; i++) {
    pass[i] = false;
    size_t k;
    json_t *n;
    json_array_foreach(json_object_get(res, "NodeNames"), k, n)
        pass[i] |= !strcmp(json_string_value(n), CPU_NODES[i]);
  }
  json_decref(res);
  json_decref(args);
}

/* The value of a counter or gauge without labels on /metrics. */
static double metric(sfx_t *s, const char *name)
{
  sfx_reply_t r;
  char key[128];
  snprintf(key, sizeof key, "\n%s ", name);
  sfx_request(s, "GET", "/metrics", NULL, 0, &r);
  const char *p = strstr(r.body, key);
  double v = p ? atof(p + strlen(key)) : -1;
  sfx_reply_free(&r);
  cr_assert_geq(v, 0, "no %s on /metrics", name);
  return v;
}

/* Polls until the score of node i for `pod` is `want` (10 s at most). */
static void wait_score(sfx_t *s, const json_t *pod, size_t i, long want)
{
  long sc[3];
  bool pass[3];
  for (int k = 0; k < 500; k++, nap()) {
    cpu_scores(s, pod, sc, pass);
    if (sc[i] == want)
      return;
  }
  cr_assert_fail("%s never scored %ld (now %ld)", CPU_NODES[i], want, sc[i]);
}

/*
 * What the replay's default models, live: Nodes' allocatable CPU and the pods
 * bound to them reach the index through the watches. A GPU pod that binpack
 * sends to the fuller node goes to the other once that node's CPU is used up
 * (the full node still passes the filter: kube-scheduler judges CPU). A pod
 * without claims is scored: a node without GPUs is the best place for it,
 * and a GPU node where it would leave a typical GPU pod short of CPU scores
 * below the top (FGD's "lack CPU" rule, with the typical pod's CPU learned
 * from the pending pod behind its claim).
 */
Test(live, node_cpu_and_pods_steer_placement, .timeout = 90)
{
  sfx_api_t api;
  sfx_api_start(&api, NULL);
  char dir[] = "/tmp/sfx-live-XXXXXX", kc[64];
  cr_assert_not_null(mkdtemp(dir));
  sfx_api_cmd(&api,
              "put deviceclasses {\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\","
              "\"metadata\":{\"name\":\"gpu.example.com\"},\"spec\":{\"selectors\":[{\"cel\":"
              "{\"expression\":\"device.driver == 'gpu.example.com'\"}}]}}");
  put_node(&api, "gpu-a", "8");
  put_node(&api, "gpu-b", "8");
  put_node(&api, "cpu-1", "64");
  put_slice(&api, "gpu-a");
  put_slice(&api, "gpu-b");
  put_claim(&api, "held", "gpu-a");
  put_claim(&api, "trainer-gpu", NULL);
  json_t *trainer = cpu_pod("trainer", "4", "trainer-gpu", NULL);
  put_pod(&api, trainer); /* pending: its claim's learned shape carries its 4 CPUs */
  snprintf(kc, sizeof kc, "%s/kubeconfig", dir);
  sfx_write_kubeconfig(kc, api.port);
  sfx_t s;
  char pol[1024];
  snprintf(pol, sizeof pol, "%s", sfx_path("test/extender/data/policy-binpack.json"));
  const char *args[] = {"--kubeconfig", kc,  "--policy-configmap",      "slicefit/policy",
                        "--policy",     pol, "--allow-token-over-http", NULL};
  sfx_start(&s, args);
  wait_for(&s, "/readyz", "\"ready\":true");
  long sc[3];
  bool pass[3];
  cpu_scores(&s, trainer, sc, pass);
  cr_assert_eq(sc[0], 10, "binpack: gpu-a has a GPU taken already");
  cr_assert_lt(sc[1], 10);
  cr_assert(pass[0] && pass[1]);
  /* A batch pod bound to gpu-a takes 6 of its 8 CPUs: the trainer's 4 no longer fit there. */
  json_t *cruncher = cpu_pod("cruncher", "6", NULL, "gpu-a");
  put_pod(&api, cruncher);
  wait_score(&s, trainer, 1, 10);
  cpu_scores(&s, trainer, sc, pass);
  cr_assert_eq(sc[0], 0, "gpu-a is short of CPU");
  cr_assert(pass[0], "and still passes the filter: NodeResourcesFit judges CPU");
  cr_assert(pass[1]);
  /* A pod status update that changes nothing slicefit keeps leaves the filter's verdicts good for
   * the prioritize call that follows (the evaluation cache); a change to the CPU would not. */
  double events = metric(&s, "slicefit_apiwatch_events_total"), hits;
  json_t *args1 = sfx_args(trainer, CPU_NODES, 3, true);
  long st;
  json_decref(sfx_post_json(&s, "/filter", args1, &st));
  hits = metric(&s, "slicefit_eval_cache_hits_total");
  json_object_set_new(json_object_get(cruncher, "status"), "podIP", json_string("10.0.3.7"));
  put_pod(&api, cruncher);
  while (metric(&s, "slicefit_apiwatch_events_total") <= events)
    nap();
  json_decref(sfx_post_json(&s, "/prioritize", args1, &st));
  cr_assert_eq(metric(&s, "slicefit_eval_cache_hits_total"), hits + 1,
               "answered from the filter's verdicts");
  json_decref(args1);
  /* A CPU-only pod under the default strategy: 5 CPUs on gpu-b would leave 3, short of the
   * typical GPU pod's 4; cpu-1 strands no GPU. */
  sfx_api_cmd(
      &api,
      "put configmaps {\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
      "{\"namespace\":\"slicefit\",\"name\":\"policy\"},\"data\":{\"strategy\":\"fragmentation\"}}");
  wait_for(&s, "/metrics", "\nslicefit_policy_updates_total{result=\"applied\"} 1\n");
  json_t *web = cpu_pod("web", "5", NULL, NULL);
  cpu_scores(&s, web, sc, pass);
  cr_assert_eq(sc[2], 10, "a node without GPUs is the best place");
  cr_assert_lt(sc[1], 10, "gpu-b would strand its GPUs for the typical pod");
  cr_assert_eq(sc[0], 0, "gpu-a has 2 CPUs free: passed unscored");
  cr_assert(pass[0] && pass[1] && pass[2], "a pod without claims is never rejected");
  /* The batch pod ends: its CPU comes back (the watch's selector drops it as DELETED), and
   * gpu-a is scored as gpu-b is: 5 CPUs there would strand its idle GPU too. */
  json_object_set_new(json_object_get(cruncher, "status"), "phase", json_string("Succeeded"));
  put_pod(&api, cruncher);
  wait_score(&s, web, 0, 9);
  /* The held claim's pod takes all 8 CPUs of gpu-a: its idle gpu-1 fits both learned shapes
   * (one GPU, 4 or 8 CPUs) and feeds neither, so it is starved; gpu-b feeds both. */
  cr_assert_eq(metric(&s, "slicefit_cluster_devices_starved"), 0);
  json_t *owner = cpu_pod("owner", "8", "held", "gpu-a");
  put_pod(&api, owner);
  wait_for(&s, "/metrics", "\nslicefit_cluster_devices_starved 1\n");
  json_object_set_new(json_object_get(owner, "status"), "phase", json_string("Succeeded"));
  put_pod(&api, owner);
  wait_for(&s, "/metrics", "\nslicefit_cluster_devices_starved 0\n");
  cr_assert_eq(sfx_stop(&s), 0);
  sfx_api_stop(&api);
  remove_dir(dir);
  json_decref(trainer);
  json_decref(cruncher);
  json_decref(web);
  json_decref(owner);
}

/* The example cluster with every device of rtx-2 published with a binding condition. */
static void load_with_conditions(sfx_api_t *a, const char *dir)
{
  json_t *list = sfx_load("extender/example-cluster.json");
  load_kind(a, list, "DeviceClass", "deviceclasses", dir);
  load_kind(a, list, "ResourceSlice", "resourceslices", dir);
  load_kind(a, list, "ResourceClaim", "resourceclaims", dir);
  size_t i, k;
  json_t *it, *dev;
  json_array_foreach(json_object_get(list, "items"), i, it)
  {
    const json_t *spec = json_object_get(it, "spec");
    const char *node = json_string_value(json_object_get(spec, "nodeName"));
    if (!node || strcmp(node, "rtx-2"))
      continue;
    json_t *s = json_deep_copy(it);
    json_array_foreach(json_object_get(json_object_get(s, "spec"), "devices"), k, dev)
        json_object_set_new(dev, "bindingConditions", json_pack("[s]", "gpu.nvidia.com/attached"));
    char *text = json_dumps(s, JSON_COMPACT);
    sfx_api_cmd(a, "put resourceslices %s", text);
    free(text);
    json_decref(s);
  }
  json_decref(list);
}

/* The fake API server says 1.34, where DRADeviceBindingConditions is off: rtx-2 refuses. */
Test(live, binding_conditions_follow_the_servers_version, .timeout = 60)
{
  for (int flagged = 0; flagged < 2; flagged++) {
    sfx_api_t api;
    sfx_api_start(&api, NULL);
    char dir[] = "/tmp/sfx-live-XXXXXX", kc[64];
    cr_assert_not_null(mkdtemp(dir));
    load_with_conditions(&api, dir);
    snprintf(kc, sizeof kc, "%s/kubeconfig", dir);
    sfx_write_kubeconfig(kc, api.port);
    sfx_t s;
    const char *args[] = {"--kubeconfig", kc, "--allow-token-over-http", NULL, NULL, NULL};
    if (flagged) {
      args[3] = "--kubernetes-version";
      args[4] = "1.36";
    }
    sfx_start(&s, args);
    wait_for(&s, "/readyz", "\"ready\":true");
    cr_assert_eq(sfx_log_count(&s,
                               flagged
                                   ? "\"kubernetes version\" minor=36 source=\"--kubernetes-version\""
                                   : "\"kubernetes version\" minor=34 source=\"/version\""),
                 1);
    json_t *res = sfx_filter_pod(&s, "tenants", "agent-sandbox-7");
    const json_t *failed = json_object_get(json_object_get(res, "FailedNodes"), "rtx-2");
    cr_assert_eq(failed == NULL, flagged == 1, "rtx-2 on 1.%d: %s", flagged ? 36 : 34,
                 failed ? json_string_value(failed) : "passed");
    json_decref(res);
    cr_assert_eq(sfx_stop(&s), 0);
    sfx_api_stop(&api);
    remove_dir(dir);
  }
}

/* GET /readyz on a port, again and again, from a thread of the test, counting the answers. */
typedef struct {
  unsigned port;
  atomic_bool stop;
  atomic_int ok, unready, other;
} poller_t;

static void *poll_readyz(void *arg)
{
  poller_t *p = arg;
  while (!atomic_load(&p->stop)) {
    long st = sfx_get_port(p->port, "/readyz", NULL, 0);
    atomic_fetch_add(st == 200 ? &p->ok : st == 503 ? &p->unready : &p->other, 1);
    nanosleep(&(struct timespec){0, 5000000L}, NULL);
  }
  return NULL;
}

static unsigned logged_port(const sfx_t *s, const char *key)
{
  char *log = sfx_log(s);
  const char *p = strstr(log, key);
  unsigned port = p ? (unsigned)atoi(p + strlen(key)) : 0;
  free(log);
  return port;
}

/*
 * Ready only after the first complete sync, on every listener: the probe
 * port is asked from before the process starts (while the API server is
 * silent, discovery alone holds the start for its 5 s), the serving port
 * once it serves, and the metrics listener's gauge; the --debug-listen and
 * --metrics-listen listeners are up all the while.
 */
Test(live, never_ready_before_the_first_sync_on_any_listener, .timeout = 90)
{
  sfx_api_t api;
  char dir[] = "/tmp/sfx-live-XXXXXX", kc[64];
  faulty_api(&api, "hang on", dir, kc, sizeof kc);
  poller_t pr = {.port = sfx_free_port()};
  char probe[32];
  snprintf(probe, sizeof probe, "127.0.0.1:%u", pr.port);
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, poll_readyz, &pr), 0);
  sfx_t s;
  const char *args[] = {"--kubeconfig",
                        kc,
                        "--allow-token-over-http",
                        "--probe-listen",
                        probe,
                        "--metrics-listen",
                        "127.0.0.1:0",
                        "--watch-silence",
                        "1",
                        NULL};
  sfx_start(&s, args);
  unsigned mport = logged_port(&s, " metrics_port=");
  cr_assert_gt(mport, 0);
  char buf[65536];
  for (int i = 0; i < 50; i++, nap()) {
    cr_assert_eq(status_of(&s, "/readyz"), 503, "the serving port, before any sync");
    cr_assert_eq(sfx_get_port(mport, "/metrics", buf, sizeof buf), 200);
    cr_assert(strstr(buf, "\nslicefit_ready 0\n"), "the metrics listener, before any sync");
  }
  cr_assert_eq(atomic_load(&pr.ok), 0, "the probe port said ready before any sync");
  cr_assert_gt(atomic_load(&pr.unready), 10, "the probe port answered 503 meanwhile");
  sfx_api_cmd(&api, "hang off");
  wait_status(&s, "/readyz", 200, 1000);
  for (int i = 0; i < 500 && atomic_load(&pr.ok) == 0; i++)
    nap();
  cr_assert_gt(atomic_load(&pr.ok), 0, "the probe port follows once synced");
  atomic_store(&pr.stop, true);
  pthread_join(th, NULL);
  cr_assert_eq(sfx_get_port(mport, "/metrics", buf, sizeof buf), 200);
  cr_assert(strstr(buf, "\nslicefit_ready 1\n"));
  cr_assert(strstr(buf, "\nslicefit_ready_changes_total 1\n"), "one change: unready to ready");
  cr_assert_eq(sfx_stop(&s), 0);
  sfx_api_stop(&api);
  remove_dir(dir);
}

/* The fake API server holding test/fixtures' fragmented cluster, and a daemon watching it. */
static void start_fragmented(sfx_api_t *api, sfx_t *s, char *dir, char *kc, size_t cap,
                             const char *const *extra)
{
  sfx_api_start(api, NULL);
  cr_assert_not_null(mkdtemp(dir));
  json_t *list = sfx_load("test/fixtures/defrag/fragmented.json");
  load_kind(api, list, "DeviceClass", "deviceclasses", dir);
  load_kind(api, list, "ResourceSlice", "resourceslices", dir);
  load_kind(api, list, "ResourceClaim", "resourceclaims", dir);
  load_kind(api, list, "Pod", "pods", dir);
  json_decref(list);
  snprintf(kc, cap, "%s/kubeconfig", dir);
  sfx_write_kubeconfig(kc, api->port);
  const char *args[16] = {"--kubeconfig", kc, "--allow-token-over-http"};
  size_t n = 3;
  for (size_t i = 0; extra && extra[i] && n < 15; i++)
    args[n++] = extra[i];
  sfx_start(s, args);
  wait_for(s, "/readyz", "\"ready\":true");
}

/* Polls GET path until its body lacks `gone` (10 s at most); returns the last body (new). */
static char *wait_without(sfx_t *s, const char *path, const char *gone)
{
  for (int i = 0; i < 500; i++) {
    sfx_reply_t r;
    sfx_request(s, "GET", path, NULL, 0, &r);
    if (r.status == 200 && strstr(r.body, gone) == NULL) {
      char *body = strdup(r.body);
      sfx_reply_free(&r);
      return body;
    }
    sfx_reply_free(&r);
    nap();
  }
  cr_assert_fail("GET %s kept %s", path, gone);
  return NULL;
}

Test(live, debug_defrag_plans_from_the_watched_pods, .timeout = 60)
{
  sfx_api_t api;
  sfx_t s;
  char dir[] = "/tmp/sfx-live-XXXXXX", kc[64];
  start_fragmented(&api, &s, dir, kc, sizeof kc, NULL);
  /* The pods came from the watch: their owners, ages and claims pick infer-b. */
  wait_for(&s, "/debug/defrag?claim=team/big", "\"name\": \"infer-b\"");
  sfx_reply_t r;
  sfx_request(&s, "GET", "/debug/defrag?claim=team/big", NULL, 0, &r);
  json_t *a = json_loads(r.body, 0, NULL);
  sfx_reply_free(&r);
  cr_assert_str_eq(json_string_value(json_object_get(a, "node")), "node-b");
  cr_assert(json_is_true(json_object_get(a, "fits_after")));
  json_decref(a);
  /* infer-b loses its controller through the API: a bare pod, no longer chosen. */
  sfx_api_cmd(&api, "put pods {\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"namespace\":"
                    "\"team\",\"name\":\"infer-b\",\"uid\":\"uid-infer-b\",\"creationTimestamp\":"
                    "\"2026-12-07T23:00:00Z\"},\"spec\":{\"nodeName\":\"node-b\",\"containers\":"
                    "[{\"name\":\"c\"}],\"resourceClaims\":[{\"name\":\"gpu\","
                    "\"resourceClaimName\":\"small-b\"}]},\"status\":{\"phase\":\"Running\"}}");
  char *body = wait_without(&s, "/debug/defrag?claim=team/big", "infer-b");
  cr_assert(strstr(body, "\"why\"") != NULL, "%s", body);
  free(body);
  cr_assert_eq(sfx_stop(&s), 0);
  sfx_api_stop(&api);
  remove_dir(dir);
}

/* Puts claim NAME (team), allocated `mem` of gpu-0 of `node` with share `share`, through the API. */
static void put_team_claim(sfx_api_t *api, const char *name, const char *node, const char *mem,
                           const char *share)
{
  json_t *c =
      json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s}, s:{s:{s:[{s:s, s:{s:s, s:s, s:i, s:{s:{s:s}}}}]}},"
                " s:{s:{s:{s:[{s:s, s:s, s:s, s:s, s:s, s:{s:s}}]}}}}",
                "apiVersion", "resource.k8s.io/v1", "kind", "ResourceClaim", "metadata", "namespace",
                "team", "name", name, "uid", name, "creationTimestamp", "2026-12-01T00:00:00Z",
                "spec", "devices", "requests", "name", "gpu", "exactly", "deviceClassName",
                "gpu.nvidia.com", "allocationMode", "ExactCount", "count", 1, "capacity", "requests",
                "memory", mem, "status", "allocation", "devices", "results", "request", "gpu",
                "driver", "gpu.nvidia.com", "pool", node, "device", "gpu-0", "shareID", share,
                "consumedCapacity", "memory", mem);
  char *s = json_dumps(c, JSON_COMPACT);
  sfx_api_cmd(api, "put resourceclaims %s", s);
  free(s);
  json_decref(c);
}

/* Puts pod NAME (team) on `node`, owned by a ReplicaSet, created at `created`, holding `claim`. */
static void put_team_pod(sfx_api_t *api, const char *name, const char *node, const char *created,
                         const char *claim)
{
  json_t *p = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:[{s:s, s:s, s:s, s:s, s:b}]},"
                        " s:{s:s, s:[{s:s}], s:[{s:s, s:s}]}, s:{s:s}}",
                        "apiVersion", "v1", "kind", "Pod", "metadata", "namespace", "team", "name",
                        name, "uid", name, "creationTimestamp", created, "ownerReferences",
                        "apiVersion", "apps/v1", "kind", "ReplicaSet", "name", name, "uid", name,
                        "controller", 1, "spec", "nodeName", node, "containers", "name", "c",
                        "resourceClaims", "name", "gpu", "resourceClaimName", claim, "status",
                        "phase", "Running");
  put_pod(api, p);
  json_decref(p);
}

/* team/big waits since 2026-12-01: past any --defrag-after. */
static void big_waits_long(sfx_api_t *api)
{
  sfx_api_cmd(api, "put resourceclaims {\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":"
                   "\"ResourceClaim\",\"metadata\":{\"namespace\":\"team\",\"name\":\"big\","
                   "\"uid\":\"uid-big\",\"creationTimestamp\":\"2026-12-01T00:00:00Z\"},\"spec\":"
                   "{\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":"
                   "\"gpu.nvidia.com\",\"allocationMode\":\"ExactCount\",\"count\":1,\"capacity\":"
                   "{\"requests\":{\"memory\":\"80Gi\"}}}}]}}}");
}

/* Polls the fake's pod count until it is `want` (20 s at most). */
static void wait_pods(sfx_api_t *api, const char *want)
{
  char line[4096];
  for (int i = 0; i < 1000; i++) {
    if (strcmp(sfx_api_ask(api, line, sizeof line, "count pods"), want) == 0)
      return;
    nap();
  }
  cr_assert_fail("the fake API server never held %s pods (%s)", want, line);
}

Test(live, defrag_evict_carries_out_a_plan, .timeout = 90)
{
  sfx_api_t api;
  sfx_t s;
  char dir[] = "/tmp/sfx-live-XXXXXX", kc[64], line[4096];
  char pol[64];
  snprintf(pol, sizeof pol, "/tmp/sfx-live-pol-%d.json", (int)getpid());
  FILE *f = fopen(pol, "w");
  cr_assert_not_null(f);
  fputs("{\"defrag_max_per_hour\": \"1\"}\n", f);
  fclose(f);
  const char *extra[] = {"--defrag-evict", "--defrag-after=1s", "--policy", pol, NULL};
  start_fragmented(&api, &s, dir, kc, sizeof kc, extra);
  wait_for(&s, "/metrics", "\nslicefit_defrag_evict_enabled 1\n");
  big_waits_long(&api);
  /* The plan of /debug/defrag is carried out: infer-b is evicted, through the Eviction API. */
  wait_pods(&api, "2");
  cr_assert_str_eq(sfx_api_ask(&api, line, sizeof line, "evictions"), "[\"team/infer-b\"]");
  wait_for(&s, "/metrics", "\nslicefit_defrag_plans_total{result=\"carried_out\"} 1\n");
  wait_for(&s, "/metrics", "\nslicefit_defrag_pods_evicted_total 1\n");
  wait_for(&s, "/metrics", "\nslicefit_defrag_plans_total{result=\"found\"} 1\n");
  cr_assert_eq(sfx_log_count(&s, "\"pod evicted\" pod=\"team/infer-b\""), 1);
  cr_assert_eq(sfx_log_count(&s, "\"defragmentation plan carried out\" claim=\"team/big\""), 1);
  /* The watch saw it go: the plan for big no longer names it. */
  char *body = wait_without(&s, "/debug/defrag?claim=team/big", "infer-b");
  free(body);
  /* big still waits (no scheduler here), but one plan an hour is the policy's limit. */
  body = wait_without(&s, "/metrics", "slicefit_defrag_plans_total{result=\"held_back\"} 0\n");
  free(body);
  cr_assert_str_eq(sfx_api_ask(&api, line, sizeof line, "evictions"), "[\"team/infer-b\"]");
  cr_assert_eq(sfx_stop(&s), 0);
  sfx_api_stop(&api);
  remove_dir(dir);
  unlink(pol);
}

Test(live, defrag_evict_stops_at_a_refused_eviction, .timeout = 90)
{
  sfx_api_t api;
  sfx_t s;
  char dir[] = "/tmp/sfx-live-XXXXXX", kc[64], line[4096];
  const char *extra[] = {"--defrag-evict", "--defrag-after=1m", NULL};
  start_fragmented(&api, &s, dir, kc, sizeof kc, extra);
  /* node-a and node-b each hold two controlled pods: every plan evicts two (node-b's, younger). */
  put_team_claim(&api, "extra-a", "node-a", "5Gi", "00000000-0000-0000-0000-000000000005");
  put_team_claim(&api, "extra-b", "node-b", "5Gi", "00000000-0000-0000-0000-000000000004");
  put_team_pod(&api, "train-a2", "node-a", "2026-12-01T00:00:00Z", "extra-a");
  put_team_pod(&api, "infer-b2", "node-b", "2026-12-07T23:10:00Z", "extra-b");
  wait_for(&s, "/debug/defrag?claim=team/big", "infer-b2");
  sfx_reply_t r;
  sfx_request(&s, "GET", "/debug/defrag?claim=team/big", NULL, 0, &r);
  json_t *a = json_loads(r.body, 0, NULL);
  sfx_reply_free(&r);
  json_t *ev = json_object_get(a, "evictions");
  cr_assert_eq(json_array_size(ev), 2);
  char first[128];
  snprintf(first, sizeof first, "[\"team/%s\"]",
           json_string_value(json_object_get(json_array_get(ev, 0), "name")));
  json_decref(a);
  /* Every eviction meets a PodDisruptionBudget: the first is refused, the second never sent. */
  sfx_api_cmd(&api, "pdb all");
  big_waits_long(&api);
  wait_for(&s, "/metrics", "\nslicefit_defrag_plans_aborted_total{reason=\"disruption_budget\"} 1\n");
  cr_assert_str_eq(sfx_api_ask(&api, line, sizeof line, "evictions"), first);
  cr_assert_str_eq(sfx_api_ask(&api, line, sizeof line, "count pods"), "5");
  wait_for(&s, "/metrics", "\nslicefit_defrag_pods_evicted_total 0\n");
  wait_for(&s, "/metrics", "\nslicefit_defrag_plans_total{result=\"carried_out\"} 0\n");
  cr_assert_eq(sfx_log_count(&s, "would violate the pod's disruption budget"), 1);
  cr_assert_eq(sfx_log_count(&s, "\"pod evicted\""), 0);
  cr_assert_eq(sfx_stop(&s), 0);
  sfx_api_stop(&api);
  remove_dir(dir);
}
