/*
 * bin/slicefit's life: load the state and the policy, serve on one libuv
 * loop, drain on SIGTERM or SIGINT, and exit 0.
 */
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ext_int.h"
#include "slicefit/apiwatch.h"
#include "slicefit/log.h"

#define PENDING_CHECK_MS 5000

typedef struct {
  uv_loop_t loop;
  uv_signal_t sigterm, sigint;
  uv_timer_t sync_timer;    /* live source: follows sf_apiwatch_synced for /readyz */
  uv_timer_t pending_timer; /* claims pending too long */
  json_t *warned;           /* "ns/name" of the claims counted as pending too long */
  sf__pending_stats_t pstats;
  sf_cluster_t *cluster;
  json_t *pending; /* claims without an allocation (pending.c) */
  sf_extender_t *ext;
  sf_extender_t *debug;   /* --debug-listen: /debug/state on its own listener, or NULL */
  sf_extender_t *metrics; /* --metrics-listen: /metrics on its own listener, or NULL */
  char debug_addr[128], metrics_addr[128];
  char taint_rules_version[16]; /* resource.k8s.io version serving devicetaintrules, or "" */
  sf_kubeconfig_t kube;
  sf_apiwatch_t *watch; /* NULL with a snapshot */
  sf_apiwatch_sink_t sink;
  sf__defrag_t *defrag;          /* --defrag-evict, or NULL */
  sf__defrag_stats_t defrag_off; /* the figures when plans are not carried out */
} daemon_t;

static int64_t now_seconds(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec;
}

/* A policy value may be written as a JSON string, number or boolean. */
static const char *value_text(const json_t *v, char *buf, size_t cap)
{
  if (json_is_string(v))
    return json_string_value(v);
  if (json_is_integer(v))
    snprintf(buf, cap, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
  else if (json_is_real(v))
    snprintf(buf, cap, "%.17g", json_real_value(v));
  else if (json_is_boolean(v))
    snprintf(buf, cap, "%s", json_is_true(v) ? "true" : "false");
  else
    return NULL;
  return buf;
}

/** Reads a JSON object of policy keys into *pol (all or nothing). */
static int load_policy(const char *path, sf_policy_t *pol, char *err, size_t errlen)
{
  json_error_t je;
  json_t *obj = json_load_file(path, 0, &je);
  size_t n = json_object_size(obj), i = 0;
  const char **keys = sf_xcalloc(n, sizeof *keys), **vals = sf_xcalloc(n, sizeof *vals);
  char(*bufs)[64] = sf_xcalloc(n, sizeof *bufs);
  int rc = SF_EINVAL;
  const char *k;
  json_t *v;
  if (!json_is_object(obj)) {
    snprintf(err, errlen, "%s: %s", path, obj ? "expected a JSON object of policy keys" : je.text);
    goto done;
  }
  json_object_foreach(obj, k, v)
  {
    keys[i] = k;
    vals[i] = value_text(v, bufs[i], sizeof bufs[i]);
    if (vals[i++] == NULL) {
      snprintf(err, errlen, "%s: %s: expected a string, number or boolean", path, k);
      goto done;
    }
  }
  rc = sf_policy_from_kv(pol, keys, vals, n, err, errlen);
done:
  free(keys);
  free(vals);
  free(bufs);
  json_decref(obj);
  return rc;
}

/*
 * The snapshot as a live cluster would be read: a bad object is rejected alone (logged and
 * counted, as apiwatch rejects one event), the rest is served; --strict refuses the file.
 */
static int load_snapshot(daemon_t *d, const char *path, bool strict, char *err, size_t errlen)
{
  int rc = sf__snapshot_load(d->cluster, d->pending, path, strict, err, errlen);
  malloc_trim(0); /* what loading freed goes back to the system */
  return rc;
}

static int build_cluster(daemon_t *d, const sf_daemon_options_t *opt, char *err, size_t errlen)
{
  sf_policy_t pol;
  bool have_pol = false;
  int rc = 0;
  if (opt->policy) {
    rc = load_policy(opt->policy, &pol, err, errlen);
    have_pol = rc == 0;
  }
  /* A random seed for the cluster's hash maps: object names come from the API
   * server, and a fixed seed would let their authors collide them on purpose.
   * The seed decides no output, only where names sit in the tables. */
  uint64_t seed = 0;
  if (rc == 0 && uv_random(NULL, NULL, &seed, sizeof seed, 0, NULL) != 0)
    sf_log_warn("no random seed for the hash maps", "seed=0");
  if (rc == 0)
    d->cluster = sf_cluster_create_seeded(have_pol ? &pol : NULL, seed);
  if (rc == 0 && opt->kube_minor)
    sf_cluster_set_kube_minor(d->cluster, opt->kube_minor);
  if (rc == 0 && opt->snapshot)
    rc = load_snapshot(d, opt->snapshot, opt->strict, err, errlen);
  if (have_pol)
    sf_policy_dispose(&pol);
  return rc;
}

/* ---- a live cluster: apiwatch feeds the cluster through this sink ---- */

/* -v=5: each watch event as it reaches the index. */
static void log_event(const char *op, sf_kind_t kind, const json_t *obj)
{
  if (!sf_log_v(5))
    return;
  const json_t *md = json_object_get(obj, "metadata");
  const char *ns = json_string_value(json_object_get(md, "namespace"));
  const char *name = json_string_value(json_object_get(md, "name"));
  const char *rv = json_string_value(json_object_get(md, "resourceVersion"));
  char obj_name[300];
  snprintf(obj_name, sizeof obj_name, "%s%s%s", ns ? ns : "", ns ? "/" : "", name ? name : "");
  for (char *c = obj_name; *c; c++)
    *c = *c == '"' ? '\'' : *c;
  sf_log_vinfo(5, "watch event", "op=%s kind=%s object=\"%s\" rv=%s", op, sf_kind_name(kind),
               obj_name, rv ? rv : "none");
}

static int sink_apply(void *ud, sf_kind_t kind, const json_t *obj, char *err, size_t errlen)
{
  daemon_t *d = ud;
  log_event("apply", kind, obj);
  uint64_t pods = sf_cluster_pod_changes(d->cluster);
  int rc = sf_cluster_apply(d->cluster, kind, obj, err, errlen);
  if (rc == 0 && kind == SF_KIND_RESOURCE_CLAIM)
    sf__pending_apply(d->pending, obj);
  /* Most pod events are status updates that change nothing slicefit keeps: the filter's
   * verdicts stay good for the prioritize call that follows. */
  if (kind != SF_KIND_POD || sf_cluster_pod_changes(d->cluster) != pods)
    sf_extender_invalidate(d->ext);
  return rc;
}

static int sink_remove(void *ud, sf_kind_t kind, const json_t *obj, char *err, size_t errlen)
{
  daemon_t *d = ud;
  log_event("delete", kind, obj);
  uint64_t pods = sf_cluster_pod_changes(d->cluster);
  int rc = sf_cluster_delete(d->cluster, kind, obj, err, errlen);
  if (rc == 0 && kind == SF_KIND_RESOURCE_CLAIM)
    sf__pending_delete(d->pending, obj);
  if (kind != SF_KIND_POD || sf_cluster_pod_changes(d->cluster) != pods)
    sf_extender_invalidate(d->ext);
  return rc;
}

static int sink_replace(void *ud, sf_kind_t kind, const json_t *items, char *err, size_t errlen)
{
  daemon_t *d = ud;
  sf_log_vinfo(5, "watch relist", "kind=%s objects=%zu", sf_kind_name(kind), json_array_size(items));
  int rc = sf_cluster_replace(d->cluster, kind, items, err, errlen);
  if (rc == 0 && kind == SF_KIND_RESOURCE_CLAIM)
    sf__pending_replace(d->pending, items);
  sf_extender_invalidate(d->ext);
  return rc;
}

static void on_policy(void *ud, const sf_policy_t *pol)
{
  daemon_t *d = ud;
  sf_cluster_set_policy(d->cluster, pol);
  sf_extender_invalidate(d->ext);
  sf_log_info("policy applied", "strategy=%s", sf_strategy_name(pol->strategy));
}

static void on_sync_tick(uv_timer_t *t)
{
  daemon_t *d = t->data;
  bool synced = sf_apiwatch_synced(d->watch);
  if (synced != d->ext->ready)
    sf_log_info(synced ? "cluster state synced" : "cluster state stale", "ready=%s",
                synced ? "true" : "false");
  if (synced && !d->ext->ready)
    malloc_trim(0); /* the lists' text and trees are freed: give the memory back */
  sf_extender_set_ready(d->ext, synced);
}

/* How long ago each watched resource was last confirmed current (a list, a watch answered, a byte). */
static void watch_ages(sf__buf_t *b, const sf_apiwatch_t *w)
{
  sf_apiwatch_age_t ages[8];
  size_t n = sf_apiwatch_ages(w, ages, 8);
  sf__buf_puts(b, "# HELP slicefit_apiwatch_confirmed_age_seconds Seconds since the resource was "
                  "last confirmed current; /readyz fails past the stale-after bound.\n"
                  "# TYPE slicefit_apiwatch_confirmed_age_seconds gauge\n");
  for (size_t i = 0; i < n; i++) {
    if (ages[i].age_ms == UINT64_MAX)
      sf__buf_printf(b, "slicefit_apiwatch_confirmed_age_seconds{resource=\"%s\"} +Inf\n",
                     ages[i].resource);
    else
      sf__buf_printf(b, "slicefit_apiwatch_confirmed_age_seconds{resource=\"%s\"} %.3f\n",
                     ages[i].resource, (double)ages[i].age_ms / 1000.0);
  }
}

static void put_counter(sf__buf_t *b, const char *name, const char *help, uint64_t v)
{
  sf__buf_printf(b, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name,
                 (unsigned long long)v);
}

/* apiwatch's counters in /metrics: every error kind is a reason of one counter. */
static void watch_metrics(sf__buf_t *b, const sf_apiwatch_stats_t *st)
{
  put_counter(b, "slicefit_apiwatch_events_total", "Watch events (ADDED, MODIFIED, DELETED) applied.",
              st->events);
  put_counter(b, "slicefit_apiwatch_bookmarks_total", "Watch bookmarks received.", st->bookmarks);
  put_counter(b, "slicefit_apiwatch_lists_total",
              "Complete lists of a resource (the first "
              "sync and every relist).",
              st->lists);
  put_counter(b, "slicefit_apiwatch_relists_expired_total",
              "Relists forced by 410 Gone: the "
              "watch fell too far behind.",
              st->relists_expired);
  put_counter(b, "slicefit_apiwatch_watch_resumes_total",
              "Watches restarted from the last "
              "resourceVersion after they ended.",
              st->watch_resumes);
  const struct {
    const char *reason;
    uint64_t v;
  } errs[] = {{"http_5xx", st->err_http_5xx}, {"http_429", st->err_http_429},
              {"auth", st->err_auth},         {"connect", st->err_connect},
              {"tls", st->err_tls},           {"other", st->err_other},
              {"decode", st->decode_errors},  {"framing", st->framing_errors}};
  sf__buf_puts(b, "# HELP slicefit_apiwatch_errors_total Errors talking to the API server, by "
                  "reason (decode: an object rejected; framing: a malformed event).\n"
                  "# TYPE slicefit_apiwatch_errors_total counter\n");
  for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++)
    sf__buf_printf(b, "slicefit_apiwatch_errors_total{reason=\"%s\"} %llu\n", errs[i].reason,
                   (unsigned long long)errs[i].v);
  put_counter(b, "slicefit_apiwatch_silent_restarts_total",
              "Watches restarted after sending no "
              "byte (event or bookmark) for the watch-silence bound.",
              st->silent_restarts);
  sf__buf_printf(b,
                 "# HELP slicefit_policy_updates_total Policy ConfigMap versions seen, by "
                 "result (rejected: the last good policy stays).\n"
                 "# TYPE slicefit_policy_updates_total counter\n"
                 "slicefit_policy_updates_total{result=\"applied\"} %llu\n"
                 "slicefit_policy_updates_total{result=\"rejected\"} %llu\n",
                 (unsigned long long)st->policy_applied, (unsigned long long)st->policy_invalid);
}

/* The daemon's part of /metrics: pending claims, and apiwatch with a live source. */
static void daemon_metrics(sf__buf_t *b, void *ud)
{
  daemon_t *d = ud;
  sf__metrics_pending(b, d->pending, now_seconds(), &d->pstats);
  sf__metrics_defrag(b, d->defrag ? sf__defrag_stats(d->defrag) : &d->defrag_off);
  if (d->watch) {
    sf_apiwatch_stats_t st;
    sf_apiwatch_stats(d->watch, &st);
    watch_metrics(b, &st);
    watch_ages(b, d->watch);
  }
}

/* ---- claims pending too long: counted, and logged at -v=2 with the filter's reasons ---- */

/*
 * The filter's verdicts in a few words: the nodes that fit (why is it still
 * pending?), then each distinct reason with the nodes that gave it, the most
 * common first, at most MAX_GROUPS reasons and MAX_NAMES names each.
 */
#define MAX_GROUPS 6
#define MAX_NAMES 3

static int by_size(const void *a, const void *b)
{
  const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
  size_t nx = json_array_size(json_object_get(x, "nodes"));
  size_t ny = json_array_size(json_object_get(y, "nodes"));
  return nx != ny ? (nx < ny ? 1 : -1) : 0;
}

static void put_names(sf__buf_t *b, const json_t *nodes)
{
  size_t n = json_array_size(nodes);
  for (size_t i = 0; i < n && i < MAX_NAMES; i++)
    sf__buf_printf(b, "%s%s", i ? ", " : "", json_string_value(json_array_get(nodes, i)));
  if (n > MAX_NAMES)
    sf__buf_printf(b, " and %zu more", n - MAX_NAMES);
}

static void put_reasons(sf__buf_t *b, const char *const *names, const sf_verdict_t *v, size_t n)
{
  json_t *fit = json_array(), *groups = json_object();
  for (size_t i = 0; i < n; i++) {
    if (v[i].fit == SF_FIT_YES) {
      json_array_append_new(fit, json_string(names[i]));
      continue;
    }
    json_t *g = json_object_get(groups, v[i].reason);
    if (g == NULL) {
      g = json_pack("{s:s,s:[]}", "reason", v[i].reason, "nodes");
      json_object_set_new(groups, v[i].reason, g);
    }
    json_array_append_new(json_object_get(g, "nodes"), json_string(names[i]));
  }
  if (json_array_size(fit)) {
    sf__buf_puts(b, "fits on ");
    put_names(b, fit);
  }
  size_t ng = json_object_size(groups), i = 0;
  json_t **order = sf_xcalloc(ng + 1, sizeof *order);
  const char *k;
  json_t *g;
  json_object_foreach(groups, k, g) order[i++] = g;
  qsort(order, ng, sizeof *order, by_size);
  for (i = 0; i < ng && i < MAX_GROUPS; i++) {
    sf__buf_printf(b, "%s%s: ", b->len ? "; " : "",
                   json_string_value(json_object_get(order[i], "reason")));
    put_names(b, json_object_get(order[i], "nodes"));
  }
  if (ng > MAX_GROUPS)
    sf__buf_printf(b, "; %zu other reasons", ng - MAX_GROUPS);
  free(order);
  json_decref(groups);
  json_decref(fit);
}

/* What the filter says on every node for a pod that holds just this claim. */
static void log_pending(const char *key, int64_t age_s, void *ud)
{
  daemon_t *d = ud;
  if (!sf_log_v(2))
    return;
  const char *slash = strchr(key, '/');
  if (slash == NULL)
    return; /* pending.c always writes "namespace/name" */
  json_t *pod = json_pack("{s:{s:s%,s:s,s:s},s:{s:[{s:s,s:s}]}}", "metadata", "namespace", key,
                          (size_t)(slash - key), "name", "slicefit-pending-check", "uid", "", "spec",
                          "resourceClaims", "name", "claim", "resourceClaimName", slash + 1);
  sf_pod_plan_t *plan = NULL;
  char err[SF_ERR_MAX];
  sf__buf_t why = {0};
  size_t counts[3] = {0}, n = 0;
  const sf_index_t *idx = sf_cluster_index(d->cluster);
  const char **names = sf_xcalloc(sf_index_node_end(idx) + 1, sizeof *names);
  sf_verdict_t *v = NULL;
  for (sf_node_id nd = 0; nd < sf_index_node_end(idx); nd++)
    if (sf_index_node_live(idx, nd))
      names[n++] = sf_index_node_name(idx, nd);
  if (pod && sf_cluster_plan(d->cluster, pod, &plan, err, sizeof err) == 0) {
    v = sf_xcalloc(n + 1, sizeof *v);
    if (sf_cluster_evaluate(d->cluster, plan, names, n, v) == 0) {
      for (size_t i = 0; i < n; i++)
        counts[v[i].fit]++;
      put_reasons(&why, names, v, n);
    } else {
      sf__buf_puts(&why, "the filter could not evaluate it");
    }
  } else {
    sf__buf_printf(&why, "not evaluated: %s", pod ? err : "bad key");
  }
  for (size_t i = 0; i < why.len; i++)
    why.p[i] = why.p[i] == '"' ? '\'' : why.p[i];
  sf_log_vinfo(2, "claim pending too long",
               "claim=\"%s\" age_s=%lld nodes=%zu fit=%zu no=%zu "
               "unsure=%zu reasons=\"%s\"",
               key, (long long)age_s, n, counts[SF_FIT_YES], counts[SF_FIT_NO], counts[SF_FIT_UNSURE],
               why.len ? why.p : "");
  sf__buf_dispose(&why);
  free(v);
  free(names);
  sf_pod_plan_free(plan);
  json_decref(pod);
}

static void on_pending_tick(uv_timer_t *t)
{
  daemon_t *d = t->data;
  sf__pending_sweep(d->pending, d->warned, now_seconds(), &d->pstats, log_pending, d);
  /* A plan from a view that is not current could evict the wrong pods: only when synced. */
  if (d->defrag && sf_apiwatch_synced(d->watch))
    sf__defrag_tick(d->defrag, d->pending, now_seconds(), uv_now(&d->loop));
}

static int load_kube(daemon_t *d, const sf_daemon_options_t *opt, char *err, size_t errlen)
{
  int rc;
  if (opt->kubeconfig && *opt->kubeconfig)
    rc = sf_kubeconfig_load(&d->kube, opt->kubeconfig, err, errlen);
  else
    rc = sf_kubeconfig_incluster(&d->kube, NULL, err, errlen);
  if (rc == 0)
    rc = sf_kubeconfig_check_transport(&d->kube, opt->allow_token_over_http, err, errlen);
  return rc;
}

/*
 * DeviceTaintRules are watched wherever the API serves them, at the version
 * it prefers; most clusters do not (an alpha API until 1.35): then quietly not.
 */
static void discover_taint_rules(daemon_t *d)
{
  char err[SF_ERR_MAX] = "";
  int rc = sf_apiwatch_discover(&d->kube, "resource.k8s.io", "devicetaintrules", 5000,
                                d->taint_rules_version, sizeof d->taint_rules_version, err,
                                sizeof err);
  if (rc)
    sf_log_warn("cannot ask which resource.k8s.io version serves devicetaintrules; not watched",
                "error=\"%s\"", err);
  else if (d->taint_rules_version[0])
    sf_log_info("watching devicetaintrules", "version=%s", d->taint_rules_version);
  else
    sf_log_vinfo(2, "devicetaintrules not served by the API server; not watched", NULL);
}

/*
 * The cluster's Kubernetes version decides answers that follow its default feature gates
 * (DRADeviceBindingConditions): --kubernetes-version, else the API server's /version. Unknown,
 * every gate slicefit models stays on, and the log says so.
 */
static void learn_version(daemon_t *d, const sf_daemon_options_t *opt)
{
  char err[SF_ERR_MAX] = "";
  int minor = opt->kube_minor;
  if (minor == 0 && sf_apiwatch_server_minor(&d->kube, 5000, &minor, err, sizeof err) != 0) {
    sf_log_warn("cannot read the API server's version; answering with every feature gate on",
                "error=\"%s\"", err);
    return;
  }
  sf_cluster_set_kube_minor(d->cluster, minor);
  sf_log_info("kubernetes version", "minor=%d source=%s", minor,
              opt->kube_minor ? "--kubernetes-version" : "/version");
}

static int start_watch(daemon_t *d, const sf_daemon_options_t *opt, char *err, size_t errlen)
{
  static const sf_apiwatch_sink_t sink = {sink_apply, sink_remove, sink_replace, NULL};
  int rc = load_kube(d, opt, err, errlen);
  if (rc)
    return rc;
  d->sink = sink;
  d->sink.ud = d;
  sf_apiwatch_opts_t o = {.kube = d->kube,
                          .policy_configmap = opt->policy_configmap,
                          .policy_cb = on_policy,
                          .policy_ud = d,
                          .sink = &d->sink,
                          .watch_pods = true,
                          .staleness_ms = opt->stale_after_s * 1000u,
                          .silent_ms = opt->watch_silence_s * 1000u};
  discover_taint_rules(d);
  learn_version(d, opt);
  o.device_taint_rules = d->taint_rules_version[0] ? d->taint_rules_version : NULL;
  d->watch = sf_apiwatch_create(&d->loop, d->cluster, &o, err, errlen);
  if (d->watch == NULL || sf_apiwatch_start(d->watch) != 0)
    return SF_EINVAL;
  sf_log_info("not ready until the cluster state has synced", "ready=false");
  uv_timer_init(&d->loop, &d->sync_timer);
  d->sync_timer.data = d;
  uv_timer_start(&d->sync_timer, on_sync_tick, 100, 250);
  return 0;
}

static void on_watch_stopped(void *ud)
{
  daemon_t *d = ud;
  uv_close((uv_handle_t *)&d->sigterm, NULL);
  uv_close((uv_handle_t *)&d->sigint, NULL);
}

static void on_drained(sf_extender_t *x, void *arg)
{
  (void)x;
  daemon_t *d = arg;
  sf_extender_destroy(d->debug);
  sf_extender_destroy(d->metrics);
  d->debug = d->metrics = NULL;
  uv_close((uv_handle_t *)&d->pending_timer, NULL);
  if (d->watch) {
    uv_close((uv_handle_t *)&d->sync_timer, NULL);
    sf_apiwatch_stop(d->watch, on_watch_stopped, d);
  } else {
    on_watch_stopped(d);
  }
}

static void on_signal(uv_signal_t *s, int signum)
{
  daemon_t *d = s->data;
  /* The handlers stay until drained, so a second signal cannot kill a draining daemon. */
  sf_log_info("signal received, draining", "signal=%s", signum == SIGTERM ? "SIGTERM" : "SIGINT");
  sf_extender_drain(d->ext, on_drained, d);
}

static void watch_signals(daemon_t *d)
{
  uv_signal_init(&d->loop, &d->sigterm);
  uv_signal_init(&d->loop, &d->sigint);
  d->sigterm.data = d->sigint.data = d;
  uv_signal_start(&d->sigterm, on_signal, SIGTERM);
  uv_signal_start(&d->sigint, on_signal, SIGINT);
}

static void log_state(const daemon_t *d, const sf_daemon_options_t *opt)
{
  const sf_index_t *idx = sf_cluster_index(d->cluster);
  sf_log_info("serving",
              "listen=%s tls=%s source=%s nodes=%zu allocations=%zu claims=%zu "
              "strategy=%s port=%u debug_port=%u metrics_port=%u probe_port=%u",
              opt->http.listen, opt->http.tls_cert_file ? "true" : "false",
              opt->snapshot     ? opt->snapshot
              : opt->kubeconfig ? opt->kubeconfig
                                : "in-cluster",
              sf_index_node_count(idx),
              sf_index_alloc_count(idx) - sf_cluster_pod_allocations(d->cluster),
              sf_cluster_count(d->cluster, SF_KIND_RESOURCE_CLAIM),
              sf_strategy_name(sf_cluster_policy(d->cluster)->strategy), sf_extender_port(d->ext),
              d->debug ? sf_extender_port(d->debug) : 0u,
              d->metrics ? sf_extender_port(d->metrics) : 0u, sf_extender_probe_port(d->ext));
}

/* A plain listener of the debug or metrics kind at `addr`; ":PORT" is loopback. */
static int start_side(daemon_t *d, const char *addr, char *buf, size_t cap, bool debug,
                      sf_extender_t **out, char *err, size_t errlen)
{
  if (addr == NULL || *addr == '\0')
    return 0;
  snprintf(buf, cap, "%s%s", addr[0] == ':' ? "127.0.0.1" : "", addr);
  sf_extender_config_t cfg;
  sf_extender_config_init(&cfg);
  cfg.listen = buf;
  cfg.debug_only = debug;
  cfg.metrics_only = !debug;
  cfg.max_connections = 16;
  int rc = sf_extender_start(&d->loop, d->cluster, &cfg, out, err, errlen);
  /* No readiness of its own: /readyz is the serving listener's (and its probe's) alone. */
  if (rc == 0 && !debug)
    sf_extender_metrics_of(*out, d->ext);
  return rc;
}

static int start_debug(daemon_t *d, const sf_daemon_options_t *opt, char *err, size_t errlen)
{
  int rc = start_side(d, opt->debug_listen, d->debug_addr, sizeof d->debug_addr, true, &d->debug, err,
                      errlen);
  if (rc == 0)
    rc = start_side(d, opt->metrics_listen, d->metrics_addr, sizeof d->metrics_addr, false,
                    &d->metrics, err, errlen);
  return rc;
}

int sf_daemon_run(const sf_daemon_options_t *opt)
{
  daemon_t d = {.pending = json_object(), .warned = json_object()};
  char err[512], qerr[1100];
  int rc = sf__fd_budget(opt, err, sizeof err);
  if (rc == 0)
    rc = build_cluster(&d, opt, err, sizeof err);
  signal(SIGPIPE, SIG_IGN);
  uv_loop_init(&d.loop);
  if (rc == 0)
    rc = sf_extender_start(&d.loop, d.cluster, &opt->http, &d.ext, err, sizeof err);
  if (rc == 0)
    rc = start_debug(&d, opt, err, sizeof err);
  if (rc) {
    sf_log_error("cannot start", "reason=%s", sf_log_quote(qerr, sizeof qerr, err));
    goto done;
  }
  d.ext->metrics_hook = daemon_metrics;
  d.ext->metrics_ud = &d;
  /* A snapshot is whole once loaded; a live source is ready once apiwatch has synced. */
  if (opt->snapshot)
    sf_extender_set_ready(d.ext, true);
  else if ((rc = start_watch(&d, opt, err, sizeof err)) != 0) {
    sf_log_error("cannot start", "reason=%s", sf_log_quote(qerr, sizeof qerr, err));
    goto done;
  }
  /* Started only once nothing can fail: `done` has no timer to close. */
  d.pstats.warn_after_s = opt->pending_warn_after_s ? opt->pending_warn_after_s : 300;
  d.defrag_off.after_s = opt->defrag_after_s ? opt->defrag_after_s : 600;
  if (opt->defrag_evict && d.watch) {
    d.defrag = sf__defrag_create(d.cluster, d.watch, d.defrag_off.after_s);
    sf_log_info("defragmentation plans are carried out", "defrag_after_s=%lld",
                (long long)d.defrag_off.after_s);
  }
  uv_timer_init(&d.loop, &d.pending_timer);
  d.pending_timer.data = &d;
  uv_timer_start(&d.pending_timer, on_pending_tick, 0, PENDING_CHECK_MS);
  watch_signals(&d);
  log_state(&d, opt);
  uv_run(&d.loop, UV_RUN_DEFAULT);
  sf_log_info("stopped", NULL);
done:
  sf_extender_destroy(d.debug);
  sf_extender_destroy(d.metrics);
  sf_extender_destroy(d.ext);
  uv_run(&d.loop, UV_RUN_DEFAULT);
  sf_apiwatch_destroy(d.watch);
  sf__defrag_destroy(d.defrag); /* after the watcher: no eviction can answer any more */
  sf_kubeconfig_dispose(&d.kube);
  uv_loop_close(&d.loop);
  sf_cluster_destroy(d.cluster);
  json_decref(d.pending);
  json_decref(d.warned);
  return rc ? 1 : 0;
}
