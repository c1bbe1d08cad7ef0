/*
 * The extender's endpoints and its lifecycle. Handlers run on the loop's
 * thread from inside MHD_run, so each one sees the whole index as the last
 * completed event left it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ext_int.h"
#include "slicefit/cluster_defrag.h"
#include "slicefit/log.h"

void sf_extender_config_init(sf_extender_config_t *cfg)
{
  *cfg = (sf_extender_config_t){
      .listen = "127.0.0.1:8888",
      .max_body_bytes = SF_EXTENDER_MAX_BODY_DEFAULT,
      .max_nodelist_bytes = (size_t)12 << 20,
      .max_nodes = 100000,
      .max_depth = 64,
      .conn_timeout_s = 30,
      .max_connections = 1024,
      .drain_timeout_ms = 5000,
      .header_timeout_s = 10,
      .request_timeout_s = 30,
      .keepalive_requests = 1000,
      .max_connections_per_ip = 64,
      .max_buffered_bytes = (size_t)64 << 20,
      .retry_after_s = 1,
      .offload_bytes = (size_t)1 << 20,
      .liveness_stall_ms = 10000,
      .tls_min_version = "1.2",
      .tls_reload_s = 10,
  };
}

/* ---- filter and prioritize ---- */

static void ensure_scratch(sf_extender_t *x, size_t n)
{
  if (n <= x->nverdicts)
    return;
  free(x->verdicts);
  x->verdicts = sf_xcalloc(n, sizeof *x->verdicts);
  x->nverdicts = n;
}

/*
 * Verdicts for the nodes of a filter or prioritize call (NULL: every node
 * passes with score 0). A filter's verdicts are kept for the prioritize call
 * that follows for the same pod (evcache.c).
 */
static const sf_verdict_t *evaluate(sf_extender_t *x, const sf__args_t *a, bool filter,
                                    sf__reply_t *rep)
{
  char err[SF_ERR_MAX], key[SF__EVKEY_MAX];
  sf_pod_plan_t *plan = NULL;
  const sf_verdict_t *v = NULL;
  int rc = sf_cluster_plan(x->cluster, a->pod, &plan, err, sizeof err);
  if (rc) {
    sf__reply_error(rep, 400, "Pod: %s", err);
    goto done;
  }
  /* A pod that asks nothing of the devices gets every node back without a search. */
  if (sf_pod_plan_empty(plan) || a->n == 0)
    goto done;
  ensure_scratch(x, a->n);
  bool keyed = sf__evcache_key(a->pod, key, sizeof key);
  uint64_t list = a->list ? a->list->id : 0;
  if (!filter && keyed &&
      sf__evcache_lookup_list(&x->evcache, key, x->generation, a->names, a->n, list, x->verdicts)) {
    x->cache_hits++;
    v = x->verdicts;
    goto done;
  }
  x->cache_misses += !filter;
  rc = sf_cluster_evaluate_list(x->cluster, plan, a->names, a->n, list, x->verdicts);
  if (rc) {
    sf__reply_error(rep, 500, "evaluating the pod failed: %s", sf_strerror(rc));
    goto done;
  }
  v = x->verdicts;
  if (filter && keyed) {
    x->verdicts = sf__evcache_store_list(&x->evcache, key, x->generation, a->names, a->n, list,
                                         x->verdicts, &x->nverdicts);
    v = x->evcache.v;
  }
done:
  sf_pod_plan_free(plan);
  return v;
}

/* The body as ExtenderArgs: decoded here, or taken (moved) from the thread pool's decoding. */
static bool parse(sf_extender_t *x, const sf__req_t *req, sf__args_t *a, bool filter,
                  sf__reply_t *rep)
{
  char err[SF_ERR_MAX];
  sf__limits_t lim = {x->cfg.max_nodes, x->cfg.max_depth, x->cfg.max_nodelist_bytes};
  int rc;
  if (req->args) {
    rc = req->args_rc;
    snprintf(err, sizeof err, "%s", req->args_err);
    if (rc == 0)
      *a = *req->args;
  } else {
    rc = sf__args_parse_list(a, req->body, req->len, &lim, &x->lists[filter ? 0 : 1], err,
                             sizeof err);
  }
  if (rc)
    sf__reply_error(rep, rc == SF_E2BIG ? 413 : 400, "%s", err);
  return rc == 0;
}

/* -v=4: one line per filter or prioritize call with its verdict counts. */
static void log_call(const char *verb, const sf__args_t *a, const sf_verdict_t *v,
                     const size_t counts[3])
{
  if (!sf_log_v(4))
    return;
  const json_t *md = json_object_get(a->pod, "metadata");
  const char *ns = json_string_value(json_object_get(md, "namespace"));
  const char *name = json_string_value(json_object_get(md, "name"));
  char pod[300];
  snprintf(pod, sizeof pod, "%s/%s", ns ? ns : "", name ? name : "");
  for (size_t i = 0; i < strlen(pod); i++)
    pod[i] = pod[i] == '"' ? '\'' : pod[i];
  sf_log_vinfo(4, verb, "pod=\"%s\" nodes=%zu fit=%zu no=%zu unsure=%zu devices=%s", pod, a->n,
               v ? counts[SF_FIT_YES] : a->n, v ? counts[SF_FIT_NO] : 0,
               v ? counts[SF_FIT_UNSURE] : 0, v ? "true" : "false");
}

/* A body decoded off the loop gets its reply built there too: the verdicts are copied, the args moved. */
static bool defer(const sf__req_t *req, sf__args_t *a, const sf_verdict_t *v, bool filter,
                  sf__reply_t *rep)
{
  if (req->args == NULL)
    return false;
  sf__later_t *l = sf_xcalloc(1, sizeof *l);
  l->args = *a;
  l->filter = filter;
  if (v) {
    l->v = sf_xmalloc((a->n ? a->n : 1) * sizeof *l->v);
    memcpy(l->v, v, a->n * sizeof *l->v);
  }
  rep->later = l;
  *a = (sf__args_t){0};
  return true;
}

static void on_filter(sf_extender_t *x, const sf__req_t *req, sf__reply_t *rep)
{
  sf__args_t a;
  if (!parse(x, req, &a, true, rep))
    return;
  const sf_verdict_t *v = evaluate(x, &a, true, rep);
  size_t counts[3] = {0};
  if (rep->status == 200) {
    if (v) /* a pod that asks no devices is not counted: slicefit had nothing to judge */
      sf__verdicts_count(x->verdicts_total, v, a.n, counts);
    log_call("filter", &a, v, counts);
    if (!defer(req, &a, v, true, rep))
      sf__filter_reply(&rep->body, &a, v);
  }
  sf__args_dispose(&a);
}

static void on_prioritize(sf_extender_t *x, const sf__req_t *req, sf__reply_t *rep)
{
  sf__args_t a;
  if (!parse(x, req, &a, false, rep))
    return;
  const sf_verdict_t *v = evaluate(x, &a, false, rep);
  if (rep->status == 200) {
    size_t counts[3] = {0};
    for (size_t i = 0; v && i < a.n; i++)
      counts[v[i].fit]++;
    log_call("prioritize", &a, v, counts);
    if (!defer(req, &a, v, false, rep))
      sf__prioritize_reply(&rep->body, &a, v);
  }
  sf__args_dispose(&a);
}

/* ---- health, readiness, metrics, state ---- */

static void on_healthz(sf_extender_t *x, const sf__req_t *req, sf__reply_t *rep)
{
  char why[160];
  (void)req;
  rep->ctype = "text/plain; charset=utf-8";
  if (sf__alive(x, why, sizeof why))
    sf__buf_puts(&rep->body, "ok\n");
  else
    sf__reply_error(rep, 500, "%.*s", (int)strcspn(why, "\n"), why);
}

/* Connections and the limits across them. */
static void metrics_conns(sf__buf_t *b, const sf_extender_t *x)
{
  static const char *const why[SF__KILL_COUNT] = {"header_deadline", "idle", "request_deadline",
                                                  "drain"};
  sf__buf_printf(b,
                 "# HELP slicefit_http_connections Open connections on the extender port.\n"
                 "# TYPE slicefit_http_connections gauge\nslicefit_http_connections %u\n"
                 "# HELP slicefit_http_buffered_bytes Request and reply bytes held now.\n"
                 "# TYPE slicefit_http_buffered_bytes gauge\nslicefit_http_buffered_bytes %zu\n"
                 "# HELP slicefit_http_busy_rejections_total Requests refused with 503 "
                 "because max_buffered_bytes was reached.\n"
                 "# TYPE slicefit_http_busy_rejections_total counter\n"
                 "slicefit_http_busy_rejections_total %llu\n"
                 "# HELP slicefit_http_connections_closed_total Connections closed by a "
                 "deadline or the drain.\n"
                 "# TYPE slicefit_http_connections_closed_total counter\n",
                 x->nconns, x->buffered, (unsigned long long)x->busy_rejects);
  for (int i = 0; i < SF__KILL_COUNT; i++)
    sf__buf_printf(b, "slicefit_http_connections_closed_total{reason=\"%s\"} %llu\n", why[i],
                   (unsigned long long)x->kills[i]);
  sf__buf_printf(b,
                 "# HELP slicefit_event_loop_lag_max_seconds The longest a 100 ms timer of the "
                 "loop ran late since start: how long one turn held the loop.\n"
                 "# TYPE slicefit_event_loop_lag_max_seconds gauge\n"
                 "slicefit_event_loop_lag_max_seconds %.6f\n",
                 (double)x->max_lag_ns / 1e9);
}

/* Descriptor shortages of the serving and probe ports. */
static void metrics_fds(sf__buf_t *b, const sf_extender_t *x)
{
  const sf__fdshort_t *sh[2] = {&x->serve_short, &x->probe_short};
  sf__buf_puts(b, "# HELP slicefit_accept_fd_shortages_total Times a listener began to fail "
                  "accept() for want of file descriptors (its backlog then waits).\n"
                  "# TYPE slicefit_accept_fd_shortages_total counter\n");
  for (int i = 0; i < 2; i++)
    sf__buf_printf(b, "slicefit_accept_fd_shortages_total{listener=\"%s\"} %llu\n", sh[i]->listener,
                   (unsigned long long)atomic_load(&sh[i]->events));
  sf__buf_puts(b, "# HELP slicefit_accept_fd_short Whether a listener cannot accept now for want "
                  "of file descriptors.\n# TYPE slicefit_accept_fd_short gauge\n");
  for (int i = 0; i < 2; i++)
    sf__buf_printf(b, "slicefit_accept_fd_short{listener=\"%s\"} %d\n", sh[i]->listener,
                   atomic_load(&sh[i]->on) ? 1 : 0);
}

static void on_readyz(sf_extender_t *x, const sf__req_t *req, sf__reply_t *rep)
{
  (void)req;
  if (x->draining)
    sf__reply_error(rep, 503, "shutting down");
  else if (!x->ready)
    sf__reply_error(rep, 503, "the cluster state has not synced yet");
  else
    sf__buf_puts(&rep->body, "{\"ready\":true}\n");
}

static void on_metrics(sf_extender_t *x, const sf__req_t *req, sf__reply_t *rep)
{
  (void)req;
  /* The metrics listener serves the serving listener's figures (its own requests aside). */
  x = x->metrics_of ? x->metrics_of : x;
  rep->ctype = "text/plain; version=0.0.4; charset=utf-8";
  sf__metrics_requests(&rep->body, x->stats, SF__V_COUNT);
  sf__metrics_cluster(&rep->body, x->cluster, x->packer, x->cfg.node_pool_label);
  sf__metrics_tenants(&rep->body, x->cluster, x->cfg.gpu_price_month);
  sf__metrics_tls(&rep->body, x);
  sf__metrics_verdicts(&rep->body, (const uint64_t(*)[SF__NREASON + 1]) x->verdicts_total);
  sf__metrics_build(&rep->body);
  sf__metrics_process(&rep->body);
  if (x->metrics_hook)
    x->metrics_hook(&rep->body, x->metrics_ud);
  metrics_conns(&rep->body, x);
  metrics_fds(&rep->body, x);
  sf__buf_printf(&rep->body,
                 "# HELP slicefit_ready Whether the cluster state has synced.\n"
                 "# TYPE slicefit_ready gauge\nslicefit_ready %d\n"
                 "# HELP slicefit_ready_changes_total Times readiness changed (either way) "
                 "since start.\n# TYPE slicefit_ready_changes_total counter\n"
                 "slicefit_ready_changes_total %llu\n"
                 "# HELP slicefit_eval_cache_hits_total Prioritize calls answered from the "
                 "filter's verdicts.\n# TYPE slicefit_eval_cache_hits_total counter\n"
                 "slicefit_eval_cache_hits_total %llu\n"
                 "# HELP slicefit_eval_cache_misses_total Prioritize calls evaluated afresh.\n"
                 "# TYPE slicefit_eval_cache_misses_total counter\n"
                 "slicefit_eval_cache_misses_total %llu\n"
                 "# HELP slicefit_http_requests_in_flight Requests received and not yet "
                 "answered, this one excluded.\n"
                 "# TYPE slicefit_http_requests_in_flight gauge\n"
                 "slicefit_http_requests_in_flight %u\n"
                 "# HELP slicefit_uptime_seconds Seconds since the server started.\n"
                 "# TYPE slicefit_uptime_seconds gauge\nslicefit_uptime_seconds %.3f\n",
                 x->ready ? 1 : 0, (unsigned long long)x->ready_changes,
                 (unsigned long long)x->cache_hits, (unsigned long long)x->cache_misses,
                 x->inflight - 1, (double)(uv_hrtime() - x->started_ns) / 1e9);
}

static void on_debug_state(sf_extender_t *x, const sf__req_t *req, sf__reply_t *rep)
{
  (void)req;
  json_t *st = sf_cluster_state_json(x->cluster);
  char *s = st ? json_dumps(st, JSON_INDENT(1) | JSON_SORT_KEYS) : NULL;
  if (s)
    sf__buf_puts(&rep->body, s);
  else
    sf__reply_error(rep, 500, "the state could not be serialised");
  free(s);
  json_decref(st);
}

/* Is s[0..n) a lowercase RFC 1123 name of at most max bytes ('.' allowed when dots)? */
static bool dns_name(const char *s, size_t n, size_t max, bool dots)
{
  if (n == 0 || n > max || s[0] == '-' || s[n - 1] == '-' || s[0] == '.' || s[n - 1] == '.')
    return false;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
          (dots && s[i] == '.')))
      return false;
  return true;
}

/*
 * GET /debug/defrag?claim=NS/NAME[&format=text]: the defragmentation plan
 * for one claim, from the cluster's own records, as bin/slicefit-defrag
 * prints it. A missing or malformed claim is a 400; every well-formed claim
 * gets a 200 whose `why` says what the planner found (unknown, allocated,
 * fits now, fits nowhere, no plan within the limits, or the plan).
 */
static void on_debug_defrag(sf_extender_t *x, const sf__req_t *req, sf__reply_t *rep)
{
  const char *claim = sf__req_arg(req, "claim"), *format = sf__req_arg(req, "format");
  const char *slash = claim ? strchr(claim, '/') : NULL;
  if (claim == NULL || slash == NULL || !dns_name(claim, (size_t)(slash - claim), 63, false) ||
      !dns_name(slash + 1, strlen(slash + 1), 253, true)) {
    sf__reply_error(rep, 400,
                    "expected ?claim=NAMESPACE/NAME (a ResourceClaim's namespace and name), "
                    "got %s%.200s%s",
                    claim ? "\"" : "", claim ? claim : "no claim", claim ? "\"" : "");
    return;
  }
  if (format != NULL && strcmp(format, "text") != 0 && strcmp(format, "json") != 0) {
    sf__reply_error(rep, 400, "expected format=json or format=text, got \"%.40s\"", format);
    return;
  }
  json_t *a = sf_cluster_defrag_live(x->cluster, claim, (int64_t)time(NULL));
  char *s = format && strcmp(format, "text") == 0
                ? sf_cluster_defrag_text(a)
                : json_dumps(a, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  if (format && strcmp(format, "text") == 0)
    rep->ctype = "text/plain; charset=utf-8";
  sf__buf_puts(&rep->body, s);
  sf__buf_puts(&rep->body, "\n");
  free(s);
  json_decref(a);
}

/*
 * /debug/state names every claim in every namespace: it is served on the
 * separate --debug-listen listener, which serves nothing else but /healthz,
 * and on the serving port only when asked (debug_over_tls) behind TLS with
 * a client CA, so that only verified clients reach it.
 */
static const sf__route_t routes[] = {
    {"/filter", "POST", on_filter, SF__V_FILTER, true},
    {"/prioritize", "POST", on_prioritize, SF__V_PRIORITIZE, true},
    {"/healthz", "GET", on_healthz, SF__V_HEALTHZ, false},
    {"/readyz", "GET", on_readyz, SF__V_READYZ, false},
    {"/metrics", "GET", on_metrics, SF__V_METRICS, false},
    /* Last two: left out when not served. */
    {"/debug/state", "GET", on_debug_state, SF__V_DEBUG, false},
    {"/debug/defrag", "GET", on_debug_defrag, SF__V_DEFRAG, false},
};
#define NROUTES (sizeof routes / sizeof routes[0])

static const sf__route_t debug_routes[] = {
    {"/debug/state", "GET", on_debug_state, SF__V_DEBUG, false},
    {"/debug/defrag", "GET", on_debug_defrag, SF__V_DEFRAG, false},
    {"/healthz", "GET", on_healthz, SF__V_HEALTHZ, false},
};

/* --metrics-listen: what Prometheus scrapes, on a port a NetworkPolicy can open to it alone. */
static const sf__route_t metrics_routes[] = {
    {"/metrics", "GET", on_metrics, SF__V_METRICS, false},
    {"/healthz", "GET", on_healthz, SF__V_HEALTHZ, false},
};

static const char *const verb_names[SF__V_COUNT] = {"filter",       "prioritize", "healthz",
                                                    "readyz",       "metrics",    "debug_state",
                                                    "debug_defrag", "other"};

/* ---- lifecycle ---- */

static void on_handle_closed(uv_handle_t *h)
{
  sf_extender_t *x = h->data;
  if (--x->nhandles == 0 && x->destroyed) {
    free(x->verdicts);
    sf__http_spares_dispose(x);
    sf__evcache_dispose(&x->evcache);
    sf__names_dispose(&x->lists[0]);
    sf__names_dispose(&x->lists[1]);
    free(x);
  }
}

int sf_extender_start(uv_loop_t *loop, sf_cluster_t *cluster, const sf_extender_config_t *cfg,
                      sf_extender_t **out, char *err, size_t errlen)
{
  sf_extender_t *x = sf_xcalloc(1, sizeof *x);
  x->loop = loop;
  x->cluster = cluster;
  x->cfg = *cfg;
  bool tls = cfg->tls_cert_file && cfg->tls_key_file;
  if (cfg->debug_over_tls && !(tls && cfg->tls_client_ca_file)) {
    snprintf(err, errlen,
             "--debug-state-over-tls needs --tls-cert-file, --tls-private-key-file "
             "and --client-ca-file: /debug/state names every claim");
    free(x);
    return SF_EINVAL;
  }
  x->routes = cfg->debug_only ? debug_routes : cfg->metrics_only ? metrics_routes : routes;
  x->nroutes = cfg->debug_only              ? sizeof debug_routes / sizeof debug_routes[0]
               : cfg->metrics_only          ? sizeof metrics_routes / sizeof metrics_routes[0]
               : tls && cfg->debug_over_tls ? NROUTES
                                            : NROUTES - 2;
  x->started_ns = uv_hrtime();
  for (int i = 0; i < SF__V_COUNT; i++)
    x->stats[i].verb = verb_names[i];
  uv_timer_init(loop, &x->timer);
  uv_timer_init(loop, &x->drain_timer);
  uv_timer_init(loop, &x->reaper);
  uv_idle_init(loop, &x->again);
  x->timer.data = x->drain_timer.data = x->reaper.data = x->again.data = x;
  x->nhandles = 4;
  x->listen_fd = x->probe_fd = x->probe_wake = -1;
  atomic_init(&x->probe_spare, -1);
  x->serve_short.listener = cfg->debug_only ? "debug" : cfg->metrics_only ? "metrics" : "serving";
  x->probe_short.listener = "probe";
  x->packer = sf_packer_create();
  int rc = sf__http_start(x, err, errlen);
  if (rc) {
    sf_extender_destroy(x);
    x = NULL;
  }
  *out = x;
  return rc;
}

void sf_extender_set_ready(sf_extender_t *x, bool ready)
{
  if (ready != x->ready)
    x->ready_changes++;
  x->ready = ready;
  sf__probe_set_ready(x, ready && !x->draining);
}

void sf_extender_invalidate(sf_extender_t *x)
{
  x->generation++;
}

void sf_extender_metrics_of(sf_extender_t *x, sf_extender_t *of)
{
  x->metrics_of = of;
}

static void finish_drain(sf_extender_t *x)
{
  uv_timer_stop(&x->drain_timer);
  sf_log_info("drained", "inflight=%u", x->inflight);
  sf__http_stop(x);
  if (x->drained)
    x->drained(x, x->drained_arg);
}

/*
 * Done once every connection is closed (the requests on the wire answered)
 * or at the deadline; a body being decoded on the pool is always waited for,
 * as MHD cannot stop with a suspended connection.
 */
static void on_drain_tick(uv_timer_t *t)
{
  sf_extender_t *x = t->data;
  sf__conns_sweep(x);
  if (x->queued == 0 && (x->nconns == 0 || uv_now(x->loop) >= x->drain_deadline))
    finish_drain(x);
}

void sf_extender_drain(sf_extender_t *x, sf_extender_drained_cb done, void *arg)
{
  if (x->draining)
    return;
  x->draining = true;
  x->drained = done;
  x->drained_arg = arg;
  x->drain_deadline = uv_now(x->loop) + x->cfg.drain_timeout_ms;
  sf__probe_set_ready(x, false);
  sf__http_quiesce(x);
  sf_log_info("draining", "inflight=%u timeout_ms=%u", x->inflight, x->cfg.drain_timeout_ms);
  uv_timer_start(&x->drain_timer, on_drain_tick, 0, 5);
}

void sf_extender_destroy(sf_extender_t *x)
{
  if (x == NULL)
    return;
  sf__http_stop(x);
  sf_packer_destroy(x->packer);
  x->packer = NULL;
  x->destroyed = true;
  uv_close((uv_handle_t *)&x->timer, on_handle_closed);
  uv_close((uv_handle_t *)&x->drain_timer, on_handle_closed);
  uv_close((uv_handle_t *)&x->reaper, on_handle_closed);
  uv_close((uv_handle_t *)&x->again, on_handle_closed);
  if (x->poll_inited)
    uv_close((uv_handle_t *)&x->poll, on_handle_closed);
  if (x->accept_inited)
    uv_close((uv_handle_t *)&x->accept_poll, on_handle_closed);
}
