/*
 * manifests/monitoring/: the PrometheusRule's alerts name only metrics the
 * daemon exports, each alert has a runbook in docs/operators.md, and the
 * ServiceMonitor scrapes a port the Service and the NetworkPolicy have.
 *
 * The rules come from `kubectl kustomize manifests/monitoring` or, where
 * kubectl is absent, from the file itself through ytree. The exported
 * names come from a real bin/slicefit watching the fake kube-apiserver
 * (live mode exports every family, apiwatch's included).
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <ctype.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include "manifests.h"

static const char *top(void)
{
  const char *t = getenv("SLICEFIT_TOP");
  cr_assert(t && *t && !strchr(t, '\''), "SLICEFIT_TOP must name the repository (run make test)");
  return t;
}

static char *slurp(FILE *f)
{
  size_t cap = 1 << 16, n = 0, got;
  char *buf = malloc(cap);
  while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
    n += got;
    if (cap - n < 4096)
      buf = realloc(buf, cap *= 2);
  }
  buf[n] = '\0';
  return buf;
}

static yt_node_t *parse(const char *text, const char *what)
{
  char err[512];
  yt_node_t *docs = yt_parse(text, strlen(text), err, sizeof err);
  cr_assert_not_null(docs, "%s: %s", what, err);
  return docs;
}

/* kubectl kustomize DIR, or the FILE read as is where kubectl is absent. */
static yt_node_t *render_or_read(const char *dir, const char *file)
{
  char cmd[PATH_MAX + 64];
  FILE *f;
  bool kubectl = system("command -v kubectl >/dev/null 2>&1") == 0;
  if (kubectl) {
    snprintf(cmd, sizeof cmd, "kubectl kustomize '%s/%s'", top(), dir);
    f = popen(cmd, "r");
  } else {
    cr_log_warn("SKIPPED: the kustomize rendering of %s: kubectl is not on PATH; %s/%s is read "
                "as it is",
                dir, dir, file);
    snprintf(cmd, sizeof cmd, "%s/%s/%s", top(), dir, file);
    f = fopen(cmd, "r");
  }
  cr_assert_not_null(f, "%s", cmd);
  char *text = slurp(f);
  cr_assert_eq(kubectl ? pclose(f) : fclose(f), 0, "%s failed", cmd);
  yt_node_t *docs = parse(text, cmd);
  free(text);
  return docs;
}

static const yt_node_t *doc_of_kind(const yt_node_t *docs, const char *kind)
{
  for (size_t i = 0; i < yt_len(docs); i++) {
    const char *k = yt_str(yt_get(yt_at(docs, i), "kind"));
    if (k && strcmp(k, kind) == 0)
      return yt_at(docs, i);
  }
  return NULL;
}

/* ---- a live bin/slicefit and its /metrics ---- */

typedef struct {
  mf_fake_t api;
  pid_t daemon;
  char dir[64];
} live_t;

static size_t on_data(char *d, size_t size, size_t n, void *ud)
{
  FILE *f = ud;
  return fwrite(d, size, n, f);
}

/* GET url, or POST `body` to it; the answer's body (new). */
static char *http(const char *url, const char *body)
{
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  CURL *c = curl_easy_init();
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, f);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
  if (body)
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
  CURLcode rc = curl_easy_perform(c);
  curl_easy_cleanup(c);
  fclose(f);
  cr_assert_eq(rc, CURLE_OK, "%s %s: %s", body ? "POST" : "GET", url, curl_easy_strerror(rc));
  return text;
}

static char *get_metrics(unsigned port)
{
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%u/metrics", port);
  return http(url, NULL);
}

static void api_load_example(live_t *l);

/*
 * Starts the fake API server, runs `fill` on it (may be NULL), then the
 * daemon on it with `extra` flags (NULL-ended); the daemon's port.
 */
static unsigned live_start(live_t *l, void (*fill)(live_t *), const char *const *extra)
{
  char kc[128], log[128], bin[PATH_MAX], listen[] = "--listen=127.0.0.1:0";
  strcpy(l->dir, "/tmp/sf-mon-XXXXXX");
  cr_assert_not_null(mkdtemp(l->dir));
  mf_fake_start(&l->api, NULL);
  if (fill)
    fill(l);
  snprintf(kc, sizeof kc, "%s/kubeconfig", l->dir);
  mf_kubeconfig_write(kc, l->api.port, "t");
  snprintf(log, sizeof log, "%s/slicefit.log", l->dir);
  const char *bindir = getenv("SLICEFIT_BIN");
  if (bindir && *bindir)
    snprintf(bin, sizeof bin, "%s/slicefit", bindir);
  else
    snprintf(bin, sizeof bin, "%s/bin/slicefit", top());
  const char *argv[32] = {bin, listen, "--kubeconfig", kc, "--allow-token-over-http"};
  for (size_t i = 0, n = 5; extra && extra[i] && n < 31; i++)
    argv[n++] = extra[i];
  l->daemon = fork();
  if (l->daemon == 0) {
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    execv(bin, (char *const *)(uintptr_t)argv);
    _exit(127);
  }
  unsigned port = 0;
  for (int i = 0; i < 1000 && port == 0; i++) {
    struct timespec ts = {0, 10000000L};
    nanosleep(&ts, NULL);
    FILE *f = fopen(log, "r");
    char *text = f ? slurp(f) : NULL;
    if (f)
      fclose(f);
    const char *p = text ? strstr(text, "] \"serving\"") : NULL;
    p = p ? strstr(p, " port=") : NULL;
    port = p ? (unsigned)atoi(p + 6) : 0;
    free(text);
  }
  cr_assert_neq(port, 0, "bin/slicefit did not serve (log %s)", log);
  return port;
}

/* Starts the daemon on the fake API server; returns its /metrics text (new). */
static char *live_metrics(live_t *l)
{
  return get_metrics(live_start(l, NULL, NULL));
}

static void live_stop(live_t *l)
{
  int st = 0;
  if (l->daemon > 0) {
    kill(l->daemon, SIGTERM);
    waitpid(l->daemon, &st, 0);
  }
  mf_fake_stop(&l->api);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", l->dir);
  cr_expect_eq(system(cmd), 0);
  cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "bin/slicefit did not exit 0 on SIGTERM");
}

/* Is `name` a family the exposition declares, or a histogram's _bucket/_sum/_count? */
__attribute__((noinline)) static bool exported(const char *metrics, const char *name)
{
  char want[200];
  static const char *const suffix[] = {"", "_bucket", "_sum", "_count"};
  for (size_t i = 0; i < 4; i++) {
    size_t n = strlen(name), s = strlen(suffix[i]);
    if (n <= s || strcmp(name + n - s, suffix[i]) != 0)
      continue;
    snprintf(want, sizeof want, "\n# TYPE %.*s ", (int)(n - s), name);
    const char *t = strstr(metrics, want);
    if (t && (i == 0 || strncmp(t + strlen(want), "histogram", 9) == 0))
      return true;
  }
  return false;
}

/* Every identifier of the expression that names one of slicefit's or the process's metrics. */
static size_t check_expr(const char *alert, const char *expr, const char *metrics)
{
  size_t found = 0;
  for (const char *p = expr; *p;) {
    if (!(isalpha((unsigned char)*p) || *p == '_') ||
        (p > expr && (isalnum((unsigned char)p[-1]) || p[-1] == '_' || p[-1] == '"'))) {
      p++;
      continue;
    }
    const char *s = p;
    while (isalnum((unsigned char)*p) || *p == '_' || *p == ':')
      p++;
    char name[200];
    snprintf(name, sizeof name, "%.*s", (int)(p - s), s);
    if (strncmp(name, "slicefit_", 9) != 0 && strncmp(name, "process_", 8) != 0)
      continue;
    cr_expect(exported(metrics, name), "alert %s: %s is not a metric bin/slicefit exports", alert,
              name);
    found++;
  }
  return found;
}

Test(monitoring, alerts_name_exported_metrics_and_have_runbooks, .timeout = 60)
{
  yt_node_t *docs = render_or_read("manifests/monitoring", "prometheusrule.yaml");
  const yt_node_t *rule = doc_of_kind(docs, "PrometheusRule");
  cr_assert_not_null(rule, "no PrometheusRule in manifests/monitoring");
  char ops_path[PATH_MAX];
  snprintf(ops_path, sizeof ops_path, "%s/docs/operators.md", top());
  FILE *f = fopen(ops_path, "r");
  cr_assert_not_null(f);
  char *ops = slurp(f);
  fclose(f);
  live_t l = {0};
  char *metrics = live_metrics(&l);
  const char *wanted[] = {"SlicefitTargetDown",          "SlicefitAbsent",
                          "SlicefitAnswerErrors",        "SlicefitReadinessFlapping",
                          "SlicefitClaimPendingTooLong", "SlicefitWatchStale",
                          "SlicefitWatchRelisting",      "SlicefitPolicyRejected",
                          "SlicefitFilterSlow",          "SlicefitUnsureVerdicts"};
  size_t nalerts = 0;
  const yt_node_t *groups = yt_dig(rule, "spec", "groups", NULL);
  for (size_t g = 0; g < yt_len(groups); g++) {
    const yt_node_t *rules = yt_get(yt_at(groups, g), "rules");
    for (size_t r = 0; r < yt_len(rules); r++) {
      const yt_node_t *it = yt_at(rules, r);
      const char *alert = yt_str(yt_get(it, "alert")), *expr = yt_str(yt_get(it, "expr"));
      cr_assert(alert && expr, "rule %zu of group %zu has no alert or expr", r, g);
      cr_expect(check_expr(alert, expr, metrics) > 0 || strstr(expr, "up{job=\"slicefit\"}"),
                "alert %s names no slicefit metric and not slicefit's scrape target", alert);
      char heading[160], url[200], anchor[200];
      snprintf(heading, sizeof heading, "**%s**", alert);
      cr_expect(strstr(ops, heading), "docs/operators.md has no runbook line starting %s", heading);
      /* runbook_url: docs/operators.md#runbook-<alert in lower case>, an anchor the page has. */
      snprintf(url, sizeof url, "docs/operators.md#runbook-%s", alert);
      for (char *c = url + strlen("docs/operators.md#runbook-"); *c; c++)
        *c = (char)tolower((unsigned char)*c);
      snprintf(anchor, sizeof anchor, "<a id=\"%s\"></a>", strchr(url, '#') + 1);
      const char *got = yt_str(yt_dig(it, "annotations", "runbook_url", NULL));
      cr_expect(got && strcmp(got, url) == 0, "%s: runbook_url %s, expected %s", alert,
                got ? got : "(none)", url);
      cr_expect(strstr(ops, anchor), "docs/operators.md has no anchor %s", anchor);
      nalerts++;
      for (size_t w = 0; w < sizeof wanted / sizeof wanted[0]; w++)
        if (strcmp(wanted[w], alert) == 0)
          wanted[w] = "";
    }
  }
  for (size_t w = 0; w < sizeof wanted / sizeof wanted[0]; w++)
    cr_expect_str_empty(wanted[w], "no alert %s", wanted[w]);
  cr_log_info("%zu alerts checked against %zu bytes of /metrics", nalerts, strlen(metrics));
  free(metrics);
  free(ops);
  yt_free(docs);
  live_stop(&l);
}

/* The ServiceMonitor's port is a port of the Service, and the NetworkPolicy opens it. */
Test(monitoring, servicemonitor_port_is_served_and_allowed)
{
  yt_node_t *mon = render_or_read("manifests/monitoring", "servicemonitor.yaml");
  const yt_node_t *sm = doc_of_kind(mon, "ServiceMonitor");
  cr_assert_not_null(sm);
  const char *port = yt_str(yt_get(yt_at(yt_dig(sm, "spec", "endpoints", NULL), 0), "port"));
  cr_assert_not_null(port);
  char path[PATH_MAX];
  bool in_service = false, in_policy = false;
  static const char *const files[] = {"service.yaml", "networkpolicy.yaml"};
  for (int i = 0; i < 2; i++) {
    snprintf(path, sizeof path, "%s/manifests/%s", top(), files[i]);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    char *text = slurp(f);
    fclose(f);
    yt_node_t *docs = parse(text, path);
    const yt_node_t *d = yt_at(docs, 0);
    if (i == 0) {
      const yt_node_t *ports = yt_dig(d, "spec", "ports", NULL);
      for (size_t k = 0; k < yt_len(ports); k++)
        in_service |= strcmp(yt_str(yt_get(yt_at(ports, k), "name")), port) == 0;
    } else {
      const yt_node_t *ing = yt_dig(d, "spec", "ingress", NULL);
      for (size_t k = 0; k < yt_len(ing); k++) {
        const yt_node_t *ports = yt_get(yt_at(ing, k), "ports");
        for (size_t m = 0; m < yt_len(ports); m++)
          in_policy |= strcmp(yt_str(yt_get(yt_at(ports, m), "port")), port) == 0;
      }
    }
    yt_free(docs);
    free(text);
  }
  cr_assert(in_service, "the Service has no port named %s", port);
  cr_assert(in_policy, "the NetworkPolicy does not open port %s", port);
  yt_free(mon);
}

/* A ytree as JSON (scalars as strings), which YAML readers such as promtool's take as YAML. */
static json_t *to_json(const yt_node_t *n)
{
  if (n->kind == YT_SCALAR)
    return json_string(n->str);
  json_t *j = n->kind == YT_SEQ ? json_array() : json_object();
  for (size_t i = 0; i < n->n; i++) {
    if (n->kind == YT_SEQ)
      json_array_append_new(j, to_json(n->items[i]));
    else
      json_object_set_new(j, n->keys[i], to_json(n->items[i]));
  }
  return j;
}

/* Skips the test, with a visible SKIPPED line, when promtool is not installed. */
static void need_promtool(void)
{
  if (system("command -v promtool >/dev/null 2>&1") != 0) {
    cr_log_warn("SKIPPED: monitoring::%s: promtool is not installed (make deps installs Debian's "
                "prometheus)",
                criterion_current_test->name);
    cr_skip_test("promtool is not installed");
  }
}

/*
 * The PrometheusRule's groups as a rules file, dir/rules.yml, in a new
 * temporary folder dir (a template, "/tmp/sf-rules-XXXXXX"). Returns the
 * rules' names, in order, as a new JSON array.
 */
static json_t *write_rules(char *dir)
{
  yt_node_t *docs = render_or_read("manifests/monitoring", "prometheusrule.yaml");
  const yt_node_t *rule = doc_of_kind(docs, "PrometheusRule");
  cr_assert_not_null(rule, "no PrometheusRule in manifests/monitoring");
  const yt_node_t *groups = yt_dig(rule, "spec", "groups", NULL);
  json_t *file = json_pack("{s:o}", "groups", to_json(groups)), *names = json_array();
  for (size_t g = 0; g < yt_len(groups); g++) {
    const yt_node_t *rules = yt_get(yt_at(groups, g), "rules");
    for (size_t r = 0; r < yt_len(rules); r++)
      json_array_append_new(names, json_string(yt_str(yt_get(yt_at(rules, r), "alert"))));
  }
  char path[64];
  cr_assert_not_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/rules.yml", dir);
  cr_assert_eq(json_dump_file(file, path, JSON_INDENT(1)), 0);
  json_decref(file);
  yt_free(docs);
  return names;
}

/* Runs a shell command; its exit status, its output (new) in *out. */
static int run(const char *cmd, char **out)
{
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p, "%s", cmd);
  *out = slurp(p);
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The PrometheusRule's groups pass `promtool check rules`: PromQL parses, templates expand. */
Test(monitoring, rules_pass_promtool)
{
  need_promtool();
  char dir[] = "/tmp/sf-rules-XXXXXX", cmd[160], *out;
  json_t *names = write_rules(dir);
  snprintf(cmd, sizeof cmd, "promtool check rules %s/rules.yml 2>&1; st=$?; rm -rf %s; exit $st", dir,
           dir);
  cr_expect_eq(run(cmd, &out), 0, "promtool check rules: %s", out);
  char want[64];
  snprintf(want, sizeof want, "SUCCESS: %zu rules found", json_array_size(names));
  cr_expect(strstr(out, want), "%s", out);
  cr_expect_eq(json_array_size(names), 10);
  free(out);
  json_decref(names);
}

/*
 * promtool test rules over test/manifests/alerts.test.yml: every alert
 * fires on a series that should fire it and stays silent on one that should
 * not (and each alert has a case there).
 */
Test(monitoring, alerts_fire_and_stay_silent)
{
  need_promtool();
  char dir[] = "/tmp/sf-rules-XXXXXX", cmd[PATH_MAX + 256], *out;
  json_t *names = write_rules(dir), *name;
  snprintf(cmd, sizeof cmd, "%s/test/manifests/alerts.test.yml", top());
  FILE *f = fopen(cmd, "r");
  cr_assert_not_null(f, "%s", cmd);
  char *tests = slurp(f);
  fclose(f);
  size_t i;
  json_array_foreach(names, i, name)
  {
    char want[160];
    snprintf(want, sizeof want, "alertname: %s\n    exp_alerts:\n    - exp_labels",
             json_string_value(name));
    cr_expect(strstr(tests, want), "alerts.test.yml has no case where %s fires",
              json_string_value(name));
  }
  snprintf(cmd, sizeof cmd,
           "cp '%s/test/manifests/alerts.test.yml' %s/ && cd %s && promtool test rules "
           "alerts.test.yml 2>&1; st=$?; rm -rf %s; exit $st",
           top(), dir, dir, dir);
  cr_expect_eq(run(cmd, &out), 0, "promtool test rules:\n%s", out);
  cr_expect(strstr(out, "SUCCESS"), "%s", out);
  free(out);
  free(tests);
  json_decref(names);
}

/* ---- the Grafana dashboard against a real Prometheus ---- */

/* The example cluster, by resource, and the Node h100-0 in node pool "gpu-h100". */
static void api_load_example(live_t *l)
{
  char path[PATH_MAX], cmd[PATH_MAX + 64];
  snprintf(path, sizeof path, "%s/extender/example-cluster.json", top());
  json_t *list = json_load_file(path, 0, NULL);
  cr_assert_not_null(list, "%s", path);
  static const char *const kinds[3][2] = {{"ResourceSlice", "resourceslices"},
                                          {"ResourceClaim", "resourceclaims"},
                                          {"DeviceClass", "deviceclasses"}};
  for (int k = 0; k < 3; k++) {
    json_t *items = json_array(), *it;
    size_t i;
    json_array_foreach(json_object_get(list, "items"), i,
                       it) if (strcmp(json_string_value(json_object_get(it, "kind")), kinds[k][0]) ==
                               0) json_array_append(items, it);
    snprintf(path, sizeof path, "%s/%s.json", l->dir, kinds[k][1]);
    cr_assert_eq(json_dump_file(items, path, 0), 0);
    json_decref(items);
    snprintf(cmd, sizeof cmd, "load %s %s", kinds[k][1], path);
    mf_fake_cmd(&l->api, cmd);
  }
  json_decref(list);
  mf_fake_cmd(&l->api,
              "put nodes {\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"h100-0\","
              "\"labels\":{\"karpenter.sh/nodepool\":\"gpu-h100\"}},\"status\":{\"allocatable\":"
              "{\"cpu\":\"64\",\"memory\":\"512Gi\"}}}");
}

/* A free loopback port (bound, then closed: the race is the test's only). */
static unsigned free_port(void)
{
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t n = sizeof a;
  cr_assert(bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
            getsockname(fd, (struct sockaddr *)&a, &n) == 0);
  close(fd);
  return ntohs(a.sin_port);
}

/* Prometheus scraping 127.0.0.1:target every second, its data in dir; its port in *port. */
static pid_t start_prometheus(const char *dir, unsigned target, unsigned *port)
{
  char cfg[128], data[128], listen[64], cfgflag[160], dataflag[160], log[128];
  snprintf(cfg, sizeof cfg, "%s/prometheus.yml", dir);
  snprintf(data, sizeof data, "%s/tsdb", dir);
  snprintf(log, sizeof log, "%s/prometheus.log", dir);
  FILE *f = fopen(cfg, "w");
  fprintf(f,
          "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
          "scrape_configs:\n- job_name: slicefit\n  static_configs:\n"
          "  - targets: ['127.0.0.1:%u']\n",
          target);
  fclose(f);
  *port = free_port();
  snprintf(listen, sizeof listen, "--web.listen-address=127.0.0.1:%u", *port);
  snprintf(cfgflag, sizeof cfgflag, "--config.file=%s", cfg);
  snprintf(dataflag, sizeof dataflag, "--storage.tsdb.path=%s", data);
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 1);
    dup2(fd, 2);
    execlp("prometheus", "prometheus", cfgflag, dataflag, listen, "--log.level=warn", (char *)NULL);
    _exit(127);
  }
  return pid;
}

/* GET /api/v1/query?query=expr: the result array (new), or NULL when the query failed. */
static json_t *prom_query(unsigned port, const char *expr)
{
  CURL *c = curl_easy_init();
  char *q = curl_easy_escape(c, expr, 0), url[4096];
  snprintf(url, sizeof url, "http://127.0.0.1:%u/api/v1/query?query=%s", port, q);
  curl_free(q);
  curl_easy_cleanup(c);
  char *text = http(url, NULL);
  json_t *r = json_loads(text, 0, NULL);
  free(text);
  json_t *res = json_incref(json_object_get(json_object_get(r, "data"), "result"));
  const char *status = json_string_value(json_object_get(r, "status"));
  if (!json_is_array(res) || status == NULL || strcmp(status, "success") != 0) {
    json_decref(res);
    res = NULL;
  }
  json_decref(r);
  return res;
}

/* Every {{label}} of the legend is a label of every series in `result`. */
static void check_legend(const char *title, const char *expr, const char *legend,
                         const json_t *result)
{
  for (const char *p = legend; (p = strstr(p, "{{")) != NULL;) {
    const char *e = strstr(p, "}}");
    cr_assert_not_null(e, "%s: legend %s", title, legend);
    char label[64];
    snprintf(label, sizeof label, "%.*s", (int)(e - p - 2), p + 2);
    char *t = label + strspn(label, " ");
    t[strcspn(t, " ")] = '\0';
    size_t i;
    json_t *series;
    json_array_foreach(result, i, series)
    {
      const char *v = json_string_value(json_object_get(json_object_get(series, "metric"), t));
      cr_expect(v && *v, "panel \"%s\": %s returns a series without the label %s its legend uses",
                title, expr, t);
    }
    p = e + 2;
  }
}

/*
 * The dashboard's ConfigMap carries the grafana_dashboard label and the
 * JSON; each panel's query, run by Prometheus scraping a live slicefit on
 * the fake API server (the example cluster), returns data with the labels
 * its legend names.
 */
Test(monitoring, dashboard_queries_return_data, .timeout = 120)
{
  if (system("command -v prometheus >/dev/null 2>&1") != 0) {
    cr_log_warn("SKIPPED: monitoring::dashboard_queries_return_data: prometheus is not installed "
                "(make deps installs Debian's prometheus)");
    cr_skip_test("prometheus is not installed");
  }
  yt_node_t *docs = render_or_read("manifests/monitoring", "kustomization.yaml");
  const yt_node_t *cm = NULL;
  for (size_t i = 0; i < yt_len(docs); i++)
    if (yt_dig(yt_at(docs, i), "metadata", "labels", "grafana_dashboard", NULL))
      cm = yt_at(docs, i);
  cr_assert_not_null(cm, "no ConfigMap labelled grafana_dashboard in manifests/monitoring");
  const char *text = yt_str(yt_dig(cm, "data", "slicefit.json", NULL));
  json_t *dash = text ? json_loads(text, 0, NULL) : NULL;
  cr_assert_not_null(dash, "the dashboard ConfigMap has no slicefit.json");

  live_t l = {0};
  const char *extra[] = {"--gpu-price=205", NULL};
  unsigned port = live_start(&l, api_load_example, extra);
  unsigned prom_port = 0;
  pid_t prom = start_prometheus(l.dir, port, &prom_port);
  char furl[64];
  snprintf(furl, sizeof furl, "http://127.0.0.1:%u/filter", port);
  const char *pod = "{\"Pod\":{\"metadata\":{\"name\":\"agent-sandbox-7\",\"namespace\":\"tenants\","
                    "\"uid\":\"u7\"},\"spec\":{\"containers\":[{\"name\":\"c\"}],\"resourceClaims\":"
                    "[{\"name\":\"gpu\",\"resourceClaimName\":\"agent-sandbox-7-gpu-2x2nk\"}]}},"
                    "\"NodeNames\":[\"h100-0\",\"rtx-0\",\"rtx-1\",\"a100-0\"]}";
  /* Filter calls while Prometheus scrapes, until it holds several scrapes of the ready daemon. */
  bool enough = false;
  for (int i = 0; i < 300 && !enough; i++) {
    free(http(furl, pod));
    struct timespec ts = {0, 100000000L};
    nanosleep(&ts, NULL);
    if (i % 10 == 9) {
      json_t *r = prom_query(prom_port, "count_over_time(slicefit_ready[1m]) >= 6 and "
                                        "slicefit_ready == 1");
      enough = r && json_array_size(r) > 0;
      json_decref(r);
    }
  }
  cr_assert(enough, "Prometheus did not scrape slicefit (see %s/prometheus.log)", l.dir);
  size_t queries = 0, pi;
  json_t *panel;
  json_array_foreach(json_object_get(dash, "panels"), pi, panel)
  {
    const char *title = json_string_value(json_object_get(panel, "title"));
    size_t ti;
    json_t *t;
    json_array_foreach(json_object_get(panel, "targets"), ti, t)
    {
      const char *expr = json_string_value(json_object_get(t, "expr"));
      const char *legend = json_string_value(json_object_get(t, "legendFormat"));
      json_t *r = prom_query(prom_port, expr);
      cr_expect(r && json_array_size(r) > 0, "panel \"%s\": %s returns no data", title, expr);
      if (r && legend)
        check_legend(title, expr, legend, r);
      json_decref(r);
      queries++;
    }
  }
  cr_log_info("%zu dashboard queries checked against Prometheus", queries);
  cr_assert_geq(queries, 20);
  kill(prom, SIGTERM);
  waitpid(prom, NULL, 0);
  json_decref(dash);
  yt_free(docs);
  live_stop(&l);
}
