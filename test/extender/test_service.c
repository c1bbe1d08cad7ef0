/*
 * The daemon around the verbs: health, readiness, metrics, the debug view,
 * TLS, flags, start-up errors and the SIGTERM drain.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "cases.h"
#include "harness.h"

TestSuite(service, .timeout = 60);

static void get(sfx_t *s, const char *path, sfx_reply_t *r, long status)
{
  sfx_request(s, "GET", path, NULL, 0, r);
  cr_assert_eq(r->status, status, "GET %s: %ld %s", path, r->status, r->body);
}

static void filter_once(sfx_t *s)
{
  json_decref(sfx_filter_pod(s, "tenants", "agent-sandbox-7"));
}

Test(service, health_and_readiness)
{
  sfx_t s;
  sfx_start_example(&s, NULL);
  sfx_reply_t r;
  get(&s, "/healthz", &r, 200);
  cr_assert_str_eq(r.body, "ok\n");
  sfx_reply_free(&r);
  get(&s, "/readyz", &r, 200);
  cr_assert_str_eq(r.body, "{\"ready\":true}\n");
  sfx_reply_free(&r);
  cr_assert_eq(sfx_stop(&s), 0);
}

static void expect_line(const char *text, const char *line)
{
  cr_assert(strstr(text, line), "metrics should have \"%s\"", line);
}

Test(service, metrics)
{
  sfx_t s;
  sfx_start_example(&s, NULL);
  filter_once(&s);
  sfx_reply_t r;
  get(&s, "/metrics", &r, 200);
  cr_assert_str_eq(r.ctype, "text/plain; version=0.0.4; charset=utf-8");
  expect_line(r.body, "\nslicefit_http_requests_total{verb=\"filter\",code=\"200\"} 1\n");
  expect_line(r.body, "\nslicefit_http_request_duration_seconds_count{verb=\"filter\"} 1\n");
  expect_line(r.body,
              "\nslicefit_http_request_duration_seconds_bucket{verb=\"filter\",le=\"+Inf\"} 1\n");
  expect_line(r.body, "\nslicefit_index_nodes 16\n");
  expect_line(r.body, "\nslicefit_index_devices 56\n");
  expect_line(r.body, "\nslicefit_objects{kind=\"ResourceClaim\"} 9\n");
  expect_line(r.body, "\nslicefit_objects{kind=\"DeviceClass\"} 4\n");
  expect_line(r.body, "\nslicefit_node_devices{node=\"h100-0\"} 8\n");
  expect_line(r.body, "\nslicefit_node_devices_allocated{node=\"h100-0\"} 4\n");
  expect_line(r.body, "\nslicefit_node_devices_allocated{node=\"rtx-4\"} 0.8\n");
  expect_line(r.body, "\nslicefit_cluster_devices 56\n");
  expect_line(r.body, "\nslicefit_claims_pending{namespace=\"tenants\"} 1\n");
  expect_line(r.body, "\nslicefit_claims_pending{namespace=\"train\"} 1\n");
  expect_line(r.body, "\nslicefit_claims_pending{namespace=\"other\"} 0\n");
  /* The example's claims were created days before (fixed timestamps): both too long. */
  expect_line(r.body, "\nslicefit_claims_pending_too_long 2\n");
  expect_line(r.body, "\nslicefit_claims_pending_warn_after_seconds 300\n");
  expect_line(r.body, "\nslicefit_build_info{version=\"");
  expect_line(r.body, "\nprocess_start_time_seconds ");
  expect_line(r.body, "\nprocess_open_fds ");
  expect_line(r.body, "\nprocess_resident_memory_bytes ");
  expect_line(r.body, "\nslicefit_filter_verdicts_total{outcome=\"unsure\",reason=\"other\"} 0\n");
  expect_line(r.body, "\nslicefit_ready 1\n");
  sfx_reply_free(&r);
  cr_assert_eq(sfx_stop(&s), 0);
}

/* The snapshot's /metrics passes promtool's lint (the live one: live/follows_the_api_server). */
Test(service, metrics_lint)
{
  sfx_t s;
  sfx_start_example(&s, NULL);
  sfx_reply_t r;
  get(&s, "/metrics", &r, 200);
  char why[4096];
  int lint = sfx_promtool_lint(r.body, why, sizeof why);
  sfx_reply_free(&r);
  cr_assert_eq(sfx_stop(&s), 0);
  if (lint < 0) {
    /* A skip's reason is not printed by Criterion without --verbose: a warning is. */
    cr_log_warn("SKIPPED: service::metrics_lint: promtool is not installed (make deps installs "
                "Debian's prometheus)");
    cr_skip_test("promtool is not installed");
  }
  cr_assert_eq(lint, 0, "promtool check metrics: %s", why);
}

Test(service, debug_state)
{
  sfx_t s;
  sfx_start_example(&s, NULL);
  sfx_reply_t r;
  get(&s, "/debug/state", &r, 200);
  json_t *st = json_loads(r.body, 0, NULL);
  cr_assert(json_is_object(st), "%.200s", r.body);
  cr_assert(strstr(r.body, "\"h100-0\""));
  cr_assert(strstr(r.body, "island_map"));
  json_decref(st);
  sfx_reply_free(&r);
  /* It names every claim: the plain serving port does not serve it, ... */
  unsigned dbg = s.debug_port;
  cr_assert_neq(dbg, 0, "the serving line names the --debug-listen port");
  s.debug_port = 0;
  get(&s, "/debug/state", &r, 404);
  sfx_reply_free(&r);
  /* ... and the debug listener serves nothing else but /healthz. */
  s.port = dbg;
  get(&s, "/metrics", &r, 404);
  sfx_reply_free(&r);
  get(&s, "/healthz", &r, 200);
  sfx_reply_free(&r);
  cr_assert_eq(sfx_stop(&s), 0);
}

Test(service, tls)
{
  sfx_t s;
  const char *extra[] = {"--tls-cert-file", NULL, "--tls-private-key-file", NULL, NULL};
  extra[1] = strdup(sfx_path("test/extender/data/tls/cert.pem"));
  extra[3] = strdup(sfx_path("test/extender/data/tls/key.pem"));
  sfx_start_example(&s, extra);
  cr_assert(s.tls);
  filter_once(&s); /* verified against the test certificate */
  sfx_reply_t r;
  get(&s, "/healthz", &r, 200);
  sfx_reply_free(&r);
  /* Plain HTTP to the TLS port gets no answer. */
  s.tls = false;
  CURL *c = curl_easy_init();
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%u/healthz", s.port);
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 5L);
  cr_assert_neq(curl_easy_perform(c), CURLE_OK);
  curl_easy_cleanup(c);
  cr_assert_eq(sfx_stop(&s), 0);
  free((char *)(uintptr_t)extra[1]);
  free((char *)(uintptr_t)extra[3]);
}

/* Runs bin/slicefit with args to completion; returns its exit status and stdout+stderr. */
static int run_cli(const char *args, char *out, size_t cap)
{
  char cmd[2048];
  char top[1024];
  snprintf(top, sizeof top, "%s", sfx_path(""));
  snprintf(cmd, sizeof cmd, "cd '%s' && timeout 20 '%s' %s 2>&1", top, sfx_bin("slicefit"), args);
  FILE *p = popen(cmd, "r");
  size_t n = fread(out, 1, cap - 1, p);
  out[n] = '\0';
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(service, flags)
{
  static char out[65536];
  cr_assert_eq(run_cli("--help", out, sizeof out), 0);
  const char *flags[] = {"--listen",
                         "--snapshot",
                         "--policy",
                         "--tls-cert-file",
                         "--tls-private-key-file",
                         "--max-body-bytes",
                         "--max-nodes",
                         "--connection-timeout",
                         "--drain-timeout",
                         "--v",
                         "--logging-format",
                         "--debug-listen",
                         "--pending-warn-after",
                         "--client-ca-file",
                         "--node-pool-label",
                         "--gpu-price",
                         "--version",
                         "--strict",
                         "--kubernetes-version",
                         "--defrag-evict",
                         "--defrag-after",
                         "/debug/defrag",
                         "search_budget",
                         "headroom_pct",
                         "strategy",
                         "extender/example-cluster.json",
                         "127.0.0.1:8888"};
  for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
    cr_assert(strstr(out, flags[i]), "--help lists %s", flags[i]);
  cr_assert_eq(run_cli("--version", out, sizeof out), 0);
  cr_assert(strncmp(out, "slicefit ", 9) == 0 && strstr(out, "(commit "), "%s", out);
  cr_assert_eq(run_cli("--logging-format=yaml", out, sizeof out), 2);
  cr_assert_eq(run_cli("--pending-warn-after=5x", out, sizeof out), 2);
  cr_assert_eq(run_cli("--bogus", out, sizeof out), 2);
  cr_assert(strstr(out, "unknown flag --bogus"));
  cr_assert_eq(run_cli("--max-nodes=-3", out, sizeof out), 2);
  cr_assert_eq(run_cli("--gpu-price=-5", out, sizeof out), 2);
  cr_assert(strstr(out, "--gpu-price -5: expected a non-negative number"), "%s", out);
  cr_assert_eq(run_cli("--gpu-price=12usd", out, sizeof out), 2);
  cr_assert_eq(run_cli("--listen", out, sizeof out), 2);
  cr_assert_eq(run_cli("--kubernetes-version=34", out, sizeof out), 2);
  cr_assert(strstr(out, "expected a version such as 1.34"), "%s", out);
  cr_assert_eq(run_cli("--strict --kubeconfig /nonexistent", out, sizeof out), 2);
  cr_assert(strstr(out, "--strict applies to --snapshot"), "%s", out);
  cr_assert_eq(run_cli("--defrag-evict --snapshot extender/example-cluster.json", out, sizeof out),
               2);
  cr_assert(strstr(out, "--defrag-evict needs a live cluster"), "%s", out);
  cr_assert_eq(run_cli("--defrag-evict=maybe", out, sizeof out), 2);
  cr_assert(strstr(out, "--defrag-evict maybe: expected true or false"), "%s", out);
  cr_assert_eq(run_cli("--defrag-after=0", out, sizeof out), 2);
  cr_assert(strstr(out, "--defrag-after 0: expected a duration above 0"), "%s", out);
  cr_assert_eq(run_cli("--defrag-after=10x", out, sizeof out), 2);
  cr_assert(strstr(out, "expected a duration such as 300s"), "%s", out);
}

/* Writes `text` to a new temporary file; its path in path (at least 32 bytes). */
static void temp_file(char *path, const char *text)
{
  strcpy(path, "/tmp/slicefit-snap-XXXXXX");
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  close(fd);
}

/*
 * A file that is not one JSON List is refused; an item that is JSON but does not decode is
 * refused with --strict (without it, it is rejected alone: test_live.c, test/model).
 */
Test(service, snapshot_read_item_by_item_names_the_bad_item)
{
  static const struct {
    const char *text, *says;
  } bad[] = {
      {"{\"kind\":\"List\",\"items\":[{\"kind\":\"DeviceClass\"", "ended before"},
      {"{\"kind\":\"List\",\"items\":[{\"kind\":\"DeviceClass\",\"metadata\":{\"name\":\"a\"}},"
       "{\"kind\":1:2}]}",
       "items[1]"},
      {"{\"items\":[{\"kind\":\"ResourceSlice\",\"apiVersion\":\"resource.k8s.io/v1\","
       "\"metadata\":{\"name\":\"s\"},\"spec\":{}}]}",
       "items[0].spec"},
      {"[]", "not one JSON List"},
      {"{\"kind\":\"List\"}", "items: is required"},
  };
  static char out[8192];
  char path[64], args[160];
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    temp_file(path, bad[i].text);
    snprintf(args, sizeof args, "--strict --snapshot %s --listen 127.0.0.1:0", path);
    int rc = run_cli(args, out, sizeof out);
    unlink(path);
    cr_assert_eq(rc, 1, "%s: %s", bad[i].text, out);
    cr_assert(strstr(out, bad[i].says), "%s: wanted \"%s\" in %s", bad[i].text, bad[i].says, out);
  }
}

Test(service, startup_errors)
{
  static char out[8192];
  cr_assert_eq(run_cli("--snapshot /nonexistent.json --listen 127.0.0.1:0", out, sizeof out), 1);
  /* klog: an error line starts with E, the message is quoted after "] ". */
  const char *e = strstr(out, "] \"cannot start\"");
  cr_assert(e, "%s", out);
  while (e > out && e[-1] != '\n')
    e--;
  cr_assert_eq(*e, 'E', "%s", out);
  cr_assert(strstr(out, "/nonexistent.json"));
  cr_assert_eq(run_cli("--snapshot test/extender/data/pod-no-gpu.json --listen 127.0.0.1:0", out,
                       sizeof out),
               1);
  cr_assert_eq(run_cli("--policy test/extender/data/pod-no-gpu.json --listen 127.0.0.1:0", out,
                       sizeof out),
               1);
  cr_assert(strstr(out, "cannot start"));
  cr_assert_eq(run_cli("--listen nowhere", out, sizeof out), 1);
  cr_assert(strstr(out, "HOST:PORT"));
  cr_assert_eq(run_cli("--tls-cert-file test/extender/data/tls/cert.pem --listen 127.0.0.1:0", out,
                       sizeof out),
               1);
  /* A port in use. */
  sfx_t s;
  sfx_start_example(&s, NULL);
  char args[128];
  snprintf(args, sizeof args, "--listen 127.0.0.1:%u", s.port);
  cr_assert_eq(run_cli(args, out, sizeof out), 1);
  cr_assert(strstr(out, "cannot listen"), "%s", out);
  cr_assert_eq(sfx_stop(&s), 0);
}

static void wait_log(const sfx_t *s, const char *needle)
{
  for (int i = 0; i < 1000 && sfx_log_count(s, needle) == 0; i++) {
    struct timespec ts = {0, 10000000L};
    nanosleep(&ts, NULL);
  }
  cr_assert_gt(sfx_log_count(s, needle), 0, "log should have %s", needle);
}

static int in_flight(sfx_t *s)
{
  sfx_reply_t r;
  get(s, "/metrics", &r, 200);
  const char *p = strstr(r.body, "\nslicefit_http_requests_in_flight ");
  int n = p ? atoi(p + 34) : -1;
  sfx_reply_free(&r);
  return n;
}

/* A raw filter request for pod NS/NAME: the body (new) and its HTTP head in `head`. */
static char *raw_filter(const char *ns, const char *name, bool close, char *head, size_t cap)
{
  json_t *pod = sfx_pod("pod-gpu-test1.json", ns, name);
  json_t *args = sfx_args(pod, sfx_nodes, SFX_NNODES, true);
  char *body = json_dumps(args, JSON_COMPACT);
  snprintf(head, cap, "POST /filter HTTP/1.1\r\nHost: x\r\n%sContent-Length: %zu\r\n\r\n",
           close ? "Connection: close\r\n" : "", strlen(body));
  json_decref(args);
  json_decref(pod);
  return body;
}

Test(service, sigterm_drains_in_flight_requests)
{
  sfx_t s;
  sfx_start_example(&s, NULL);
  char head[256];
  char *body = raw_filter("tenants", "agent-sandbox-7", false, head, sizeof head);
  size_t len = strlen(body), half = len / 2;
  /* An in-flight request: headers and half the body... */
  int fd = sfx_connect(&s);
  cr_assert(write(fd, head, strlen(head)) > 0);
  cr_assert(write(fd, body, half) == (ssize_t)half);
  for (int i = 0; i < 500 && in_flight(&s) != 1; i++)
    nanosleep(&(struct timespec){0, 10000000L}, NULL);
  cr_assert_eq(in_flight(&s), 1);
  /* ... then SIGTERM, with the harness's keep-alive connection left idle. */
  kill(s.pid, SIGTERM);
  wait_log(&s, "] \"draining\"");
  cr_assert_eq(sfx_connect(&s), -1, "no new connections once draining");
  cr_assert(write(fd, body + half, len - half) == (ssize_t)(len - half));
  char reply[8192];
  sfx_read_all(fd, reply, sizeof reply);
  cr_assert(strncmp(reply, "HTTP/1.1 200 OK\r\n", 17) == 0, "%s", reply);
  cr_assert(strstr(reply, "Connection: close\r\n"));
  cr_assert(strstr(reply, "\"NodeNames\":[") && strstr(reply, "\"rtx-0\""));
  cr_assert_eq(sfx_wait(&s), 0);
  cr_assert_eq(sfx_log_count(&s, "] \"drained\" inflight=0"), 1);
  sfx_cleanup(&s);
  free(body);
}

Test(service, sigterm_when_idle_exits_at_once)
{
  sfx_t s;
  sfx_start_example(&s, NULL);
  filter_once(&s); /* the keep-alive connection stays open and idle */
  kill(s.pid, SIGTERM);
  cr_assert_eq(sfx_wait(&s), 0);
  cr_assert_eq(sfx_log_count(&s, "] \"drained\" inflight=0"), 1);
  cr_assert_eq(sfx_log_count(&s, "] \"stopped\""), 1);
  sfx_cleanup(&s);
}

Test(service, several_connections_at_once)
{
  /* Four scheduler connections with requests half sent, completed in reverse order. */
  sfx_t s;
  sfx_start_example(&s, NULL);
  char head[256];
  char *body = raw_filter("train", "ddp-worker-0", true, head, sizeof head);
  size_t len = strlen(body), half = len / 2;
  int fds[4];
  for (int i = 0; i < 4; i++) {
    fds[i] = sfx_connect(&s);
    cr_assert(fds[i] >= 0);
    cr_assert(write(fds[i], head, strlen(head)) > 0);
    cr_assert(write(fds[i], body, half) == (ssize_t)half);
  }
  for (int i = 3; i >= 0; i--) {
    cr_assert(write(fds[i], body + half, len - half) == (ssize_t)(len - half));
    char reply[8192];
    sfx_read_all(fds[i], reply, sizeof reply);
    cr_assert(strncmp(reply, "HTTP/1.1 200 OK\r\n", 17) == 0, "%s", reply);
    cr_assert(strstr(reply, "\"NodeNames\":[\"h100-0\""), "%s", reply);
  }
  cr_assert_eq(sfx_stop(&s), 0);
  free(body);
}

/*
 * -v=2: each claim pending past --pending-warn-after is logged once, with the
 * filter's verdict per node; -v=4: each filter call with its verdict counts,
 * in klog text or JSON lines.
 */
Test(service, pending_too_long_and_calls_are_logged)
{
  for (int json = 0; json < 2; json++) {
    sfx_t s;
    const char *extra[] = {"-v=4", "--pending-warn-after=2m", NULL, NULL};
    extra[2] = json ? "--logging-format=json" : NULL;
    sfx_start_example(&s, extra);
    const char *claim =
        json ? "\"claim\":\"tenants/agent-sandbox-7-gpu-2x2nk\""
             : "] \"claim pending too long\" claim=\"tenants/agent-sandbox-7-gpu-2x2nk\"";
    wait_log(&s, claim);
    /* rtx-4's card has 4Gi free, the claim asks 6Gi: the reason names both. */
    wait_log(&s, "needs 6Gi of memory; the most free on a matching device is 4Gi: rtx-4");
    filter_once(&s);
    wait_log(&s, json ? "\"msg\":\"filter\",\"pod\":\"tenants/agent-sandbox-7\",\"nodes\":16,"
                        "\"fit\":7,\"no\":9,\"unsure\":0"
                      : "] \"filter\" pod=\"tenants/agent-sandbox-7\" nodes=16 fit=7 no=9 unsure=0");
    cr_assert_eq(sfx_log_count(&s, "claim pending too long"), 2, "once per claim");
    if (json) {
      /* Every line is one JSON object. */
      char *log = sfx_log(&s);
      for (char *line = strtok(log, "\n"); line; line = strtok(NULL, "\n")) {
        json_t *j = json_loads(line, 0, NULL);
        cr_assert(json_is_object(j) && json_object_get(j, "ts") && json_object_get(j, "v") &&
                      json_object_get(j, "msg"),
                  "not a JSON log line: %s", line);
        json_decref(j);
      }
      free(log);
    }
    cr_assert_eq(sfx_stop(&s), 0);
  }
}

/* --metrics-listen: /metrics (the serving port's figures) and /healthz, nothing else. */
Test(service, metrics_listener)
{
  sfx_t s;
  const char *extra[] = {"--metrics-listen=127.0.0.1:0", NULL};
  sfx_start_example(&s, extra);
  filter_once(&s);
  char *log = sfx_log(&s);
  const char *p = strstr(log, " metrics_port=");
  unsigned mport = p ? (unsigned)atoi(p + 14) : 0;
  free(log);
  cr_assert_neq(mport, 0, "the serving line names metrics_port");
  unsigned serving = s.port;
  s.port = mport;
  sfx_reply_t r;
  get(&s, "/metrics", &r, 200);
  expect_line(r.body, "\nslicefit_http_requests_total{verb=\"filter\",code=\"200\"} 1\n");
  expect_line(r.body, "\nslicefit_claims_pending{namespace=\"tenants\"} 1\n");
  sfx_reply_free(&r);
  get(&s, "/healthz", &r, 200);
  sfx_reply_free(&r);
  sfx_request(&s, "POST", "/filter", "{}", 2, &r);
  cr_assert_eq(r.status, 404);
  sfx_reply_free(&r);
  s.port = serving;
  cr_assert_eq(sfx_stop(&s), 0);
}

/* Counts lines of a shell command's output that contain `needle`. */
static int count_output(const char *cmd, const char *needle)
{
  FILE *p = popen(cmd, "r");
  char line[1024];
  int n = 0;
  while (p && fgets(line, sizeof line, p))
    n += strstr(line, needle) != NULL;
  if (p)
    pclose(p);
  return n;
}

Test(service, release_binary_is_hardened)
{
  char cmd[1200];
  const char *bin = sfx_bin("slicefit");
  snprintf(cmd, sizeof cmd, "nm -D '%s' 2>/dev/null", bin);
  if (count_output(cmd, "__asan_init") > 0)
    cr_skip_test("the sanitizer build is instrumented by ASan instead");
  snprintf(cmd, sizeof cmd, "readelf -d '%s'", bin);
  cr_assert_gt(count_output(cmd, "BIND_NOW"), 0, "-Wl,-z,now");
  snprintf(cmd, sizeof cmd, "readelf -lW '%s'", bin);
  cr_assert_gt(count_output(cmd, "GNU_RELRO"), 0, "-Wl,-z,relro");
  snprintf(cmd, sizeof cmd, "nm -D '%s'", bin);
  cr_assert_gt(count_output(cmd, "__stack_chk_fail"), 0, "-fstack-protector-strong");
  cr_assert_gt(count_output(cmd, "_chk"), 1, "-D_FORTIFY_SOURCE=2");
}

/* A slice of driver-a's `pool` on node-1, of `count` slices, with one device (and its counter use). */
static json_t *bad_slice(const char *name, const char *pool, int count, const char *dev,
                         const char *set)
{
  json_t *d = json_pack("{s:s}", "name", dev);
  if (set)
    json_object_set_new(d, "consumesCounters",
                        json_pack("[{s:s,s:{s:{s:s}}}]", "counterSet", set, "counters", "memory",
                                  "value", "1Gi"));
  return json_pack("{s:s,s:s,s:{s:s},s:{s:s,s:s,s:{s:s,s:i,s:i},s:[o]}}", "apiVersion",
                   "resource.k8s.io/v1", "kind", "ResourceSlice", "metadata", "name", name, "spec",
                   "driver", "driver-a", "nodeName", "node-1", "pool", "name", pool, "generation", 1,
                   "resourceSliceCount", count, "devices", d);
}

/*
 * Invalid pools (a duplicate device name, an unknown counter set) do not stop
 * --snapshot from loading; each is in /debug/state with its reason, counted by
 * slicefit_pools_invalid and logged once, and the node is served from its valid pool.
 */
Test(service, invalid_pools_are_reported_not_fatal)
{
  char dir[] = "/tmp/sf-invalid-XXXXXX", snap[64], pol[1024];
  cr_assert_not_null(mkdtemp(dir));
  snprintf(snap, sizeof snap, "%s/snapshot.json", dir);
  snprintf(pol, sizeof pol, "%s", sfx_path("extender/example-policy.json"));
  json_t *items = json_pack("[{s:s,s:s,s:{s:s}},{s:s,s:s,s:{s:s},s:{s:[{s:{s:s}}]}},"
                            "{s:s,s:s,s:{s:s,s:s},s:{s:{s:[{s:s,s:{s:s,s:s}}]}}}]",
                            "apiVersion", "v1", "kind", "Node", "metadata", "name", "node-1",
                            "apiVersion", "resource.k8s.io/v1", "kind", "DeviceClass", "metadata",
                            "name", "class-a", "spec", "selectors", "cel", "expression",
                            "device.driver == \"driver-a\"", "apiVersion", "resource.k8s.io/v1",
                            "kind", "ResourceClaim", "metadata", "name", "claim-0", "namespace",
                            "default", "spec", "devices", "requests", "name", "req-0", "exactly",
                            "deviceClassName", "class-a", "allocationMode", "ExactCount");
  json_array_append_new(items, bad_slice("dup-1", "pool-1", 2, "device-1", NULL));
  json_array_append_new(items, bad_slice("dup-2", "pool-1", 2, "device-1", NULL));
  json_array_append_new(items, bad_slice("ctr-1", "pool-3", 1, "device-3", "counter-set-2"));
  json_array_append_new(items, bad_slice("ok-1", "pool-2", 1, "device-2", NULL));
  json_t *list = json_pack("{s:s,s:s,s:o}", "apiVersion", "v1", "kind", "List", "items", items);
  cr_assert_eq(json_dump_file(list, snap, 0), 0);
  json_decref(list);
  sfx_t s;
  const char *args[] = {"--snapshot", snap, "--policy", pol, NULL};
  sfx_start(&s, args);
  /* The node is served from pool-2. */
  json_t *pod = json_pack("{s:s,s:s,s:{s:s,s:s,s:s},s:{s:[{s:s,s:s}],s:[{s:s,s:s}]}}", "apiVersion",
                          "v1", "kind", "Pod", "metadata", "name", "p", "namespace", "default", "uid",
                          "u", "spec", "containers", "name", "c", "image", "x", "resourceClaims",
                          "name", "c0", "resourceClaimName", "claim-0");
  const char *node = "node-1";
  json_t *req = sfx_args(pod, &node, 1, true);
  long status = 0;
  json_t *res = sfx_post_json(&s, "/filter", req, &status);
  cr_assert_eq(status, 200);
  cr_assert_eq(json_array_size(json_object_get(res, "NodeNames")), 1,
               "node-1 fits from its valid pool");
  json_decref(res);
  json_decref(req);
  json_decref(pod);
  sfx_reply_t r;
  get(&s, "/debug/state", &r, 200);
  cr_assert(strstr(r.body, "duplicate device name device-1"), "%.2000s", r.body);
  cr_assert(strstr(r.body, "counter set counter-set-2 not found"), "%.2000s", r.body);
  sfx_reply_free(&r);
  get(&s, "/metrics", &r, 200);
  expect_line(r.body, "\nslicefit_pools_invalid 2\n");
  sfx_reply_free(&r);
  cr_assert_eq(sfx_log_count(&s, "resource pool invalid"), 2, "one line per invalid pool");
  cr_assert_eq(sfx_log_count(&s, "pool=\"driver-a/pool-1\""), 1);
  cr_assert_eq(sfx_stop(&s), 0);
  unlink(snap);
  rmdir(dir);
}

/*
 * --snapshot reads objects as a live cluster's watch does: the v1beta1 ResourceSlice of the API's
 * round-trip data (what 1.32 and 1.33 serve) is rejected alone, logged and counted, and the
 * example cluster is served; the example's Namespace-like extras are counted as ignored.
 * --strict refuses the file as before.
 */
Test(service, snapshot_rejects_bad_objects_alone)
{
  char dir[] = "/tmp/sf-reject-XXXXXX", snap[64], args[160];
  static char out[8192];
  cr_assert_not_null(mkdtemp(dir));
  snprintf(snap, sizeof snap, "%s/snapshot.json", dir);
  json_t *list = sfx_load("extender/example-cluster.json");
  json_t *beta = sfx_load(
      "test/fixtures/k8s-api-testdata/release-1.34.resource.k8s.io.v1beta1.ResourceSlice.json");
  json_t *items = json_object_get(list, "items");
  json_array_append(items, beta);
  json_array_append_new(items, json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
                                         "metadata", "name", "tenants"));
  cr_assert_eq(json_dump_file(list, snap, 0), 0);
  json_decref(beta);
  json_decref(list);
  sfx_t s;
  const char *argv[] = {"--snapshot", snap, NULL};
  sfx_start(&s, argv);
  json_t *res = sfx_filter_pod(&s, "tenants", "agent-sandbox-7");
  cr_assert_eq(json_array_size(json_object_get(res, "NodeNames")), 7, "the rest is served");
  json_decref(res);
  sfx_reply_t r;
  get(&s, "/debug/state", &r, 200);
  cr_assert(strstr(r.body, "\"rejected\": {") || strstr(r.body, "\"rejected\":{"), "%.300s", r.body);
  json_t *st = json_loads(r.body, 0, NULL);
  cr_assert_eq(json_integer_value(json_object_get(json_object_get(st, "rejected"), "ResourceSlice")),
               1);
  cr_assert_eq(json_integer_value(json_object_get(json_object_get(st, "ignored"), "Namespace")), 1);
  json_decref(st);
  sfx_reply_free(&r);
  get(&s, "/metrics", &r, 200);
  expect_line(r.body, "\nslicefit_objects_rejected_total{kind=\"ResourceSlice\"} 1\n");
  sfx_reply_free(&r);
  cr_assert_eq(sfx_log_count(&s, "\"object rejected\" resource=\"resourceslices\" name=\"nameValue\" "
                                 "error=\"apiVersion: resource.k8s.io/v1beta1 is not supported"),
               1);
  cr_assert_eq(sfx_stop(&s), 0);
  snprintf(args, sizeof args, "--snapshot %s --strict --listen 127.0.0.1:0", snap);
  cr_assert_eq(run_cli(args, out, sizeof out), 1);
  cr_assert(strstr(out, "apiVersion: resource.k8s.io/v1beta1 is not supported"), "%s", out);
  unlink(snap);
  rmdir(dir);
}
