/*
 * A live cluster: bin/slicefit --kubeconfig against test/tools' fake
 * kube-apiserver holding the example cluster. Ready only once synced; a
 * claim allocated through the API pins its pod at once; the policy
 * ConfigMap changes the strategy in force.
 */
#include <criterion/criterion.h>
#include <limits.h>
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
  json_array_foreach(json_object_get(list, "items"), i, it) {
    if (strcmp(json_string_value(json_object_get(it, "kind")), kind) == 0)
      json_array_append(items, it);
  }
  char path[256];
  snprintf(path, sizeof path, "%s/%s.json", dir, res);
  cr_assert_eq(json_dump_file(items, path, 0), 0);
  sfx_api_cmd(a, "load %s %s", res, path);
  json_decref(items);
}

static void write_kubeconfig(const char *path, unsigned port)
{
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fprintf(f,
          "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n"
          "    server: http://127.0.0.1:%u\nusers:\n- name: u\n  user:\n    token: t\n"
          "contexts:\n- name: c\n  context:\n    cluster: fake\n    user: u\n"
          "current-context: c\n",
          port);
  fclose(f);
}

static void remove_dir(const char *dir)
{
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
}

static void nap(void) { nanosleep(&(struct timespec){0, 20000000L}, NULL); }

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
  json_array_foreach(json_object_get(list, "items"), i, it) {
    const json_t *md = json_object_get(it, "metadata");
    const char *name = json_string_value(json_object_get(md, "name"));
    if (strncmp(name, "agent-sandbox-7-gpu-", 20) != 0)
      continue;
    json_t *c = json_deep_copy(it);
    json_object_set_new(
        c, "status",
        json_pack("{s:{s:{s:[{s:s,s:s,s:s,s:s,s:s,s:{s:s}}]},s:s}}", "allocation", "devices",
                  "results", "request", "gpu", "driver", "gpu.nvidia.com", "pool", "rtx-2",
                  "device", "gpu-0", "shareID", "5f0c2d8e-1b7a-4c3e-9a55-2d8f1e6b7c90",
                  "consumedCapacity", "memory", "6Gi", "allocationTimestamp",
                  "2026-12-01T00:00:00Z"));
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
  write_kubeconfig(kc, api.port);
  sfx_t s;
  const char *args[] = {"--kubeconfig", kc, "--policy-configmap", "slicefit/policy",
                        "--policy", NULL, "--allow-token-over-http", NULL};
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
  cr_assert_str_eq(json_string_value(json_array_get(json_object_get(res, "NodeNames"), 0)),
                   "rtx-2");
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

Test(live, not_ready_until_synced, .timeout = 60)
{
  /* An API server that answers nothing but errors: never ready, still serving health. */
  sfx_api_t api;
  sfx_api_start(&api, NULL);
  sfx_api_cmd(&api, "fail 500 1000000");
  char dir[] = "/tmp/sfx-live-XXXXXX", kc[64];
  cr_assert_not_null(mkdtemp(dir));
  snprintf(kc, sizeof kc, "%s/kubeconfig", dir);
  write_kubeconfig(kc, api.port);
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
    write_kubeconfig(kc, api.port);
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
                                     "object=\"rtx-2-xid\""), 1);
      res = sfx_filter_pod(&s, "tenants", "agent-sandbox-7");
      const char *why = json_string_value(json_object_get(json_object_get(res, "FailedNodes"), "rtx-2"));
      cr_assert(why && strstr(why, "does not tolerate taint gpu.nvidia.com/xid=79:NoSchedule"),
                "rtx-2: %s", why ? why : "passed");
      cr_assert_eq(json_array_size(json_object_get(res, "NodeNames")), 6);
      json_decref(res);
    } else {
      cr_assert_eq(sfx_log_count(&s, "\"watching devicetaintrules\""), 0);
      cr_assert_eq(sfx_log_count(&s, "\nW"), 0, "no warning where the kind is not served");
      cr_assert_eq(sfx_log_count(&s, "devicetaintrules not served by the API server; not watched"),
                   1, "said once at -v=2");
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
  write_kubeconfig(kc, api.port);
  sfx_t s;
  const char *args[] = {"--kubeconfig", kc, "--allow-token-over-http", "--stale-after", "2",
                        "--watch-silence", "1", NULL};
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
  write_kubeconfig(kc, 1);
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
