/*
 * bin/slicefit's life: load the state and the policy, serve on one libuv
 * loop, drain on SIGTERM or SIGINT, and exit 0.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ext_int.h"
#include "slicefit/apiwatch.h"
#include "slicefit/log.h"

typedef struct {
  uv_loop_t loop;
  uv_signal_t sigterm, sigint;
  uv_timer_t sync_timer;           /* live source: follows sf_apiwatch_synced for /readyz */
  sf_cluster_t *cluster;
  json_t *pending;                 /* claims without an allocation (pending.c) */
  sf_extender_t *ext;
  sf_kubeconfig_t kube;
  sf_apiwatch_t *watch;            /* NULL with a snapshot */
  sf_apiwatch_sink_t sink;
} daemon_t;

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
  json_object_foreach(obj, k, v) {
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

static int load_snapshot(daemon_t *d, const char *path, char *err, size_t errlen)
{
  json_error_t je;
  json_t *list = json_load_file(path, 0, &je);
  if (list == NULL) {
    snprintf(err, errlen, "%s: line %d: %s", path, je.line, je.text);
    return SF_EINVAL;
  }
  char why[SF_ERR_MAX];
  int rc = sf_cluster_load_list(d->cluster, list, why, sizeof why);
  if (rc)
    snprintf(err, errlen, "%s: %s", path, why);
  else
    sf__pending_load_list(d->pending, list);
  json_decref(list);
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
  if (rc == 0)
    d->cluster = sf_cluster_create(have_pol ? &pol : NULL);
  if (rc == 0 && opt->snapshot)
    rc = load_snapshot(d, opt->snapshot, err, errlen);
  if (have_pol)
    sf_policy_dispose(&pol);
  return rc;
}

/* ---- a live cluster: apiwatch feeds the cluster through this sink ---- */

static int sink_apply(void *ud, sf_kind_t kind, const json_t *obj, char *err, size_t errlen)
{
  daemon_t *d = ud;
  int rc = sf_cluster_apply(d->cluster, kind, obj, err, errlen);
  if (rc == 0 && kind == SF_KIND_RESOURCE_CLAIM)
    sf__pending_apply(d->pending, obj);
  sf_extender_invalidate(d->ext);
  return rc;
}

static int sink_remove(void *ud, sf_kind_t kind, const json_t *obj, char *err, size_t errlen)
{
  daemon_t *d = ud;
  int rc = sf_cluster_delete(d->cluster, kind, obj, err, errlen);
  if (rc == 0 && kind == SF_KIND_RESOURCE_CLAIM)
    sf__pending_delete(d->pending, obj);
  sf_extender_invalidate(d->ext);
  return rc;
}

static int sink_replace(void *ud, sf_kind_t kind, const json_t *items, char *err, size_t errlen)
{
  daemon_t *d = ud;
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

/* apiwatch's counters in /metrics. */
static void watch_metrics(sf__buf_t *b, void *ud)
{
  const daemon_t *d = ud;
  sf_apiwatch_stats_t st;
  sf_apiwatch_stats(d->watch, &st);
  const struct {
    const char *name;
    uint64_t v;
  } rows[] = {{"events", st.events}, {"bookmarks", st.bookmarks}, {"lists", st.lists},
              {"relists_expired", st.relists_expired}, {"watch_resumes", st.watch_resumes},
              {"errors_http_5xx", st.err_http_5xx}, {"errors_http_429", st.err_http_429},
              {"errors_auth", st.err_auth}, {"errors_connect", st.err_connect},
              {"errors_tls", st.err_tls}, {"errors_other", st.err_other},
              {"decode_errors", st.decode_errors}, {"framing_errors", st.framing_errors},
              {"policy_applied", st.policy_applied}, {"policy_invalid", st.policy_invalid},
              {"silent_restarts", st.silent_restarts}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    sf__buf_printf(b,
                   "# TYPE slicefit_apiwatch_%s_total counter\nslicefit_apiwatch_%s_total %llu\n",
                   rows[i].name, rows[i].name, (unsigned long long)rows[i].v);
  watch_ages(b, d->watch);
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

static int start_watch(daemon_t *d, const sf_daemon_options_t *opt, char *err, size_t errlen)
{
  static const sf_apiwatch_sink_t sink = {sink_apply, sink_remove, sink_replace, NULL};
  int rc = load_kube(d, opt, err, errlen);
  if (rc)
    return rc;
  d->sink = sink;
  d->sink.ud = d;
  sf_apiwatch_opts_t o = {.kube = d->kube, .policy_configmap = opt->policy_configmap,
                          .policy_cb = on_policy, .policy_ud = d, .sink = &d->sink,
                          .staleness_ms = opt->stale_after_s * 1000u,
                          .silent_ms = opt->watch_silence_s * 1000u};
  d->watch = sf_apiwatch_create(&d->loop, d->cluster, &o, err, errlen);
  if (d->watch == NULL || sf_apiwatch_start(d->watch) != 0)
    return SF_EINVAL;
  d->ext->metrics_hook = watch_metrics;
  d->ext->metrics_ud = d;
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
  sf_log_info("serving", "listen=%s tls=%s source=%s nodes=%zu allocations=%zu claims=%zu "
              "strategy=%s port=%u probe_port=%u",
              opt->http.listen, opt->http.tls_cert_file ? "true" : "false",
              opt->snapshot       ? opt->snapshot
              : opt->kubeconfig   ? opt->kubeconfig
                                  : "in-cluster",
              sf_index_node_count(idx),
              sf_index_alloc_count(idx), sf_cluster_count(d->cluster, SF_KIND_RESOURCE_CLAIM),
              sf_strategy_name(sf_cluster_policy(d->cluster)->strategy),
              sf_extender_port(d->ext), sf_extender_probe_port(d->ext));
}

int sf_daemon_run(const sf_daemon_options_t *opt)
{
  daemon_t d = {.pending = json_object()};
  char err[512], qerr[1100];
  int rc = build_cluster(&d, opt, err, sizeof err);
  signal(SIGPIPE, SIG_IGN);
  uv_loop_init(&d.loop);
  if (rc == 0)
    rc = sf_extender_start(&d.loop, d.cluster, &opt->http, &d.ext, err, sizeof err);
  if (rc) {
    sf_log_error("cannot start", "reason=%s", sf_log_quote(qerr, sizeof qerr, err));
    goto done;
  }
  d.ext->pending = d.pending;
  /* A snapshot is whole once loaded; a live source is ready once apiwatch has synced. */
  if (opt->snapshot)
    sf_extender_set_ready(d.ext, true);
  else if ((rc = start_watch(&d, opt, err, sizeof err)) != 0) {
    sf_log_error("cannot start", "reason=%s", sf_log_quote(qerr, sizeof qerr, err));
    goto done;
  }
  watch_signals(&d);
  log_state(&d, opt);
  uv_run(&d.loop, UV_RUN_DEFAULT);
  sf_log_info("stopped", NULL);
done:
  sf_extender_destroy(d.ext);
  uv_run(&d.loop, UV_RUN_DEFAULT);
  sf_apiwatch_destroy(d.watch);
  sf_kubeconfig_dispose(&d.kube);
  uv_loop_close(&d.loop);
  sf_cluster_destroy(d.cluster);
  json_decref(d.pending);
  return rc ? 1 : 0;
}
