/*
 * The reflector: LIST then WATCH each resource over libcurl's multi
 * interface, driven by the caller's libuv loop (curl tells us which sockets
 * to poll through CURLMOPT_SOCKETFUNCTION and when to wake through
 * CURLMOPT_TIMERFUNCTION; uv_poll and uv_timer call back into
 * curl_multi_socket_action). Everything runs on the loop's thread.
 *
 * Each resource is a small state machine:
 *
 *   (start) -> STREAM (watch-list: initial ADDED events, then the
 *              initial-events-end BOOKMARK)  --400/422--> LIST
 *           -> LIST (pages, limit/continue)
 *   list complete: sink.replace(all items) in one step, synced
 *   -> WATCH from the list's rv; events go to the sink, rv follows them and
 *      bookmarks; a clean end re-watches from the rv; a 410 (event or HTTP)
 *      lists again; any other failure backs off with jitter and retries the
 *      same phase.
 *
 * Bytes from the server are untrusted: the framer caps each event, jansson
 * parses it, and the sink validates objects. An event cut short (a line
 * break inside it) is counted as a framing error and the watch restarts
 * from the last event that arrived whole, so the cut one comes again.
 *
 * Freshness. A resource is "confirmed current" whenever its list completes,
 * a watch on it is answered 200, or any byte (event or bookmark) arrives on
 * its watch. Watches end by themselves after timeoutSeconds (default
 * 10..20 s, so that even a quiet resource is confirmed well within the
 * staleness bound, at the cost of one cheap re-watch from the watch cache
 * every 15 s or so), and a transfer that receives no byte for silent_ms is
 * a dead watch: curl aborts it (low-speed limit) and it restarts from its
 * resourceVersion. sf_apiwatch_synced is false while any resource has gone
 * unconfirmed for longer than staleness_ms. Retry-After is honoured up to
 * backoff_max_ms; a watch-list that fell back to LIST is tried again after
 * stream_retry_ms.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <assert.h>
#include "curl_int.h"
#include "slicefit/apiwatch.h"
#include "slicefit/log.h"

/* Nodes, DeviceClasses, ResourceSlices, ResourceClaims, DeviceTaintRules and the policy ConfigMap. */
#define MAX_RES 7
#define MAX_ERR_BODY ((size_t)64 << 10)
#define INITIAL_END "k8s.io/initial-events-end"

typedef enum { PH_IDLE, PH_LIST, PH_STREAM, PH_WATCH } phase_t;
typedef enum { ACT_NONE, ACT_RELIST, ACT_FAIL } action_t;

typedef struct {
  char *p;
  size_t len, cap;
} buf_t;

typedef struct poll_ctx {
  uv_poll_t h;
  curl_socket_t s;
  sf_apiwatch_t *w;
  struct poll_ctx *next, *prev;
} poll_ctx_t;

typedef struct {
  sf_apiwatch_t *w;
  char name[80];            /* for logs: "resourceslices", "configmap ns/name" */
  char *path;               /* "/apis/resource.k8s.io/v1/resourceslices" */
  char *selector;           /* fieldSelector, or NULL */
  sf_kind_t kind;
  bool policy;              /* the policy ConfigMap, not an object of the cluster */
  bool streaming;           /* try watch-list */
  phase_t phase;
  char rv[64];
  json_t *items;            /* the list being gathered */
  char *cont;
  CURL *easy;
  struct curl_slist *hdrs;
  buf_t body;
  sf_framer_t framer;
  bool in_initial;          /* streaming, before the initial-events-end bookmark */
  bool direct;              /* this list applies objects as they come (see relist) */
  bool touched;             /* the sink has seen objects of this resource */
  size_t listed;            /* objects in the list so far */
  int after;                /* index of the resource whose first sync starts this one; -1 none */
  action_t action;
  char action_why[160];
  bool synced;
  uint64_t broken_since;    /* loop ms of the first failure since the last good watch; 0 = none */
  uint64_t confirmed_ms;    /* loop ms the resource was last confirmed current; 0 = never */
  uint64_t stream_again_ms; /* loop ms from which watch-list is tried again; 0 = not off */
  uint64_t truncated;       /* framer's count when the current transfer started */
  uint64_t started_ms;
  uint32_t events_now;      /* events in the current watch */
  uint32_t attempt;         /* failures in a row */
  uv_timer_t timer;
} res_t;

struct sf_apiwatch {
  uv_loop_t *loop;
  sf_apiwatch_opts_t o;
  sf_apiwatch_sink_t sink;
  CURLM *multi;
  uv_timer_t curl_timer;
  res_t res[MAX_RES];
  size_t nres;
  poll_ctx_t *polls;
  sf_apiwatch_stats_t st;
  bool started, stopping;
  int open_handles;
  void (*done)(void *ud);
  void *done_ud;
  uint64_t rng;
  char *cm_name;            /* the policy ConfigMap's name */
};

static void issue(res_t *r, phase_t ph);
static void relist(res_t *r);
static void detach(res_t *r);

/* ---- small helpers ---- */

static uint64_t next_rand(sf_apiwatch_t *w) {
  w->rng ^= w->rng << 13;
  w->rng ^= w->rng >> 7;
  w->rng ^= w->rng << 17;
  return w->rng;
}

static bool buf_add(buf_t *b, const char *p, size_t n, size_t cap) {
  if (b->len + n > cap) return false;
  sf_xgrow(&b->p, &b->cap, b->len + n + 1, 1);
  memcpy(b->p + b->len, p, n);
  b->len += n;
  b->p[b->len] = '\0';
  return true;
}

/* A copy of `s` fit for a quoted log value: double quotes become single ones, backslashes
 * slashes, and control bytes '?', so the value can neither end early nor break the line. */
static const char *logq(const char *s, char *out, size_t n) {
  size_t i = 0;
  for (; s && s[i] && i + 1 < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    out[i] = ch == '"' ? '\'' : ch == '\\' ? '/' : ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
  }
  out[i] = '\0';
  return out;
}

static const char *phase_name(phase_t ph) {
  static const char *const names[] = {"idle", "list", "stream", "watch"};
  return names[ph];
}

static const char *str_at(const json_t *obj, const char *a, const char *b) {
  const json_t *v = json_object_get(obj, a);
  return json_string_value(b ? json_object_get(v, b) : v);
}

static void set_rv(res_t *r, const json_t *obj) {
  const char *rv = str_at(obj, "metadata", "resourceVersion");
  if (rv && *rv && strlen(rv) < sizeof r->rv) strcpy(r->rv, rv);
}

static void confirm(res_t *r) { r->confirmed_ms = uv_now(r->w->loop) | 1; }

/* ---- the policy ConfigMap ---- */

static void apply_policy(res_t *r, const json_t *cm) {
  sf_apiwatch_t *w = r->w;
  const char *name = str_at(cm, "metadata", "name");
  if (name && strcmp(name, w->cm_name) != 0) return;
  json_t *data = json_object_get(cm, "data");
  size_t n = json_object_size(data), i = 0;
  const char **keys = sf_xcalloc(n + 1, sizeof *keys), **vals = sf_xcalloc(n + 1, sizeof *vals);
  char err[SF_ERR_MAX] = "";
  const char *k;
  json_t *v;
  json_object_foreach(data, k, v) {
    if (!json_is_string(v)) {
      snprintf(err, sizeof err, "%s: the value is not a string", k);
      break;
    }
    keys[i] = k;
    vals[i++] = json_string_value(v);
  }
  sf_policy_t pol;
  if (!err[0] && sf_policy_from_kv(&pol, keys, vals, n, err, sizeof err) == 0) {
    if (w->o.policy_cb) w->o.policy_cb(w->o.policy_ud, &pol);
    sf_policy_dispose(&pol);
    w->st.policy_applied++;
    sf_log_info("policy applied", "configmap=%s keys=%zu", r->name + 10, n);
  } else {
    w->st.policy_invalid++;
    char q[SF_ERR_MAX];
    sf_log_error("policy rejected; the last good policy stays", "configmap=%s error=\"%s\"",
                 r->name + 10, logq(err, q, sizeof q));
  }
  free(keys);
  free(vals);
}

/* ---- objects to the sink ---- */

static void to_sink(res_t *r, int op, const json_t *obj) {
  sf_apiwatch_t *w = r->w;
  char err[SF_ERR_MAX] = "";
  int rc;
  if (r->policy) {
    if (op == 0) apply_policy(r, obj);
    else sf_log_warn("policy configmap deleted; the last good policy stays", "configmap=%s",
                     r->name + 10);
    return;
  }
  r->touched = true;
  if (op == 0) rc = w->sink.apply(w->sink.ud, r->kind, obj, err, sizeof err);
  else rc = w->sink.remove(w->sink.ud, r->kind, obj, err, sizeof err);
  if (rc) {
    w->st.decode_errors++;
    char q[SF_ERR_MAX];
    char qn[300];
    sf_log_warn("object rejected", "resource=%s name=\"%s\" error=\"%s\"", r->name,
                logq(str_at(obj, "metadata", "name") ? str_at(obj, "metadata", "name") : "?", qn,
                     sizeof qn),
                logq(err, q, sizeof q));
  }
}

/* Replaces the resource's objects with the gathered list, in one step when it validates. */
static void replace_all(res_t *r) {
  sf_apiwatch_t *w = r->w;
  char err[SF_ERR_MAX] = "";
  if (r->policy) {
    if (json_array_size(r->items) == 0)
      sf_log_warn("policy configmap not found; the policy in force stays", "configmap=%s",
                  r->name + 10);
    else apply_policy(r, json_array_get(r->items, 0));
    return;
  }
  r->touched = true;
  if (w->sink.replace(w->sink.ud, r->kind, r->items, err, sizeof err) == 0) return;
  /* One bad object must not hide the others: empty the kind, then apply one by one. */
  char q[SF_ERR_MAX];
  sf_log_warn("list rejected as a whole; applying its objects one by one", "resource=%s error=\"%s\"",
              r->name, logq(err, q, sizeof q));
  json_t *none = json_array();
  w->sink.replace(w->sink.ud, r->kind, none, err, sizeof err);
  json_decref(none);
  size_t i;
  json_t *obj;
  json_array_foreach(r->items, i, obj) to_sink(r, 0, obj);
}

static void on_retry(uv_timer_t *t);

/*
 * Starts the resources that waited for r's first sync, from their timers:
 * this may run inside a curl callback, where no transfer may be added.
 */
static void start_waiting(res_t *r) {
  sf_apiwatch_t *w = r->w;
  for (size_t i = 0; i < w->nres; i++)
    if (w->res[i].after == (int)(r - w->res) && w->res[i].phase == PH_IDLE)
      uv_timer_start(&w->res[i].timer, on_retry, 0, 0);
}

static void list_done(res_t *r) {
  if (r->phase == PH_STREAM) {
    uv_timer_stop(&r->timer);
    r->w->st.stream_lists++;
  }
  if (!r->direct) replace_all(r);
  r->w->st.lists++;
  sf_log_info("resource synced", "resource=%s rv=%s objects=%zu", r->name, r->rv, r->listed);
  json_decref(r->items);
  r->items = NULL;
  r->synced = true;
  r->broken_since = 0;
  r->attempt = 0;
  r->in_initial = false;
  confirm(r);
  start_waiting(r);
}

/* ---- watch events ---- */

static int fail_event(res_t *r, action_t act, const char *why) {
  r->action = act;
  snprintf(r->action_why, sizeof r->action_why, "%s", why);
  return -1;
}

static int on_error_event(res_t *r, const json_t *status) {
  json_int_t code = json_integer_value(json_object_get(status, "code"));
  const char *reason = str_at(status, "reason", NULL), *msg = str_at(status, "message", NULL);
  char why[160];
  snprintf(why, sizeof why, "ERROR event code=%lld reason=%s message=%s", (long long)code,
           reason ? reason : "", msg ? msg : "");
  bool gone = code == 410 || (reason && (!strcmp(reason, "Expired") || !strcmp(reason, "Gone")));
  if (!gone) r->w->st.err_other++;
  return fail_event(r, gone ? ACT_RELIST : ACT_FAIL, why);
}

static int on_bookmark(res_t *r, const json_t *obj) {
  r->w->st.bookmarks++;
  set_rv(r, obj);
  const json_t *ann = json_object_get(json_object_get(obj, "metadata"), "annotations");
  const char *end = json_string_value(json_object_get(ann, INITIAL_END));
  if (r->in_initial && end && !strcmp(end, "true")) list_done(r);
  return 0;
}

/* One object of a list: to the sink now (a direct list) or kept for the replace. */
static void listed(res_t *r, json_t *obj) {
  r->listed++;
  if (r->direct) to_sink(r, 0, obj);
  else json_array_append(r->items, obj);  /* shared, not copied */
}

static int dispatch(res_t *r, const char *type, json_t *obj) {
  bool add = !strcmp(type, "ADDED") || !strcmp(type, "MODIFIED");
  if (!strcmp(type, "BOOKMARK")) return on_bookmark(r, obj);
  if (!strcmp(type, "ERROR")) return on_error_event(r, obj);
  if (!add && strcmp(type, "DELETED") != 0) return fail_event(r, ACT_FAIL, "unknown event type");
  r->events_now++;
  r->w->st.events++;
  if (r->in_initial && add) listed(r, obj);
  else if (!r->in_initial) to_sink(r, add ? 0 : 1, obj);
  set_rv(r, obj);
  return 0;
}

static int on_event(res_t *r, const char *ev, size_t len) {
  json_error_t je;
  json_t *e = json_loadb(ev, len, 0, &je);
  const char *type = json_string_value(json_object_get(e, "type"));
  json_t *obj = json_object_get(e, "object");
  int rc;
  if (!type || !json_is_object(obj)) {
    r->w->st.framing_errors++;
    rc = fail_event(r, ACT_FAIL, e ? "an event without type or object" : je.text);
  } else {
    rc = dispatch(r, type, obj);
  }
  json_decref(e);
  return rc;
}

static size_t on_data(char *p, size_t sz, size_t n, void *ud) {
  res_t *r = ud;
  size_t len = sz * n;
  long code = 0;
  curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
  if (code != 200 || r->phase == PH_LIST) {
    size_t cap = code == 200 ? r->w->o.max_list_bytes : MAX_ERR_BODY;
    if (buf_add(&r->body, p, len, cap)) return len;
    fail_event(r, ACT_FAIL, "response larger than the cap");
    return 0;
  }
  if (len) confirm(r);
  for (size_t off = 0; off < len;) {
    const char *ev;
    size_t evlen;
    long used = sf_framer_feed(&r->framer, p + off, len - off, &ev, &evlen);
    if (used < 0) {
      r->w->st.framing_errors++;
      fail_event(r, ACT_FAIL, used == SF_E2BIG ? "an event larger than the cap" : "malformed stream");
      return 0;
    }
    off += (size_t)used;
    if (r->framer.truncated != r->truncated) {
      /* Going on would skip the cut event: start again from the last whole one. */
      r->truncated = r->framer.truncated;
      r->w->st.framing_errors++;
      fail_event(r, ACT_FAIL, "an event cut short by a line break; watching again from the last "
                              "whole event");
      return 0;
    }
    if (ev && on_event(r, ev, evlen)) return 0;
  }
  return len;
}

/* The end of the headers of a good watch: the stream is healthy again. */
static size_t on_header(char *p, size_t sz, size_t n, void *ud) {
  res_t *r = ud;
  long code = 0;
  if (sz * n <= 2 && (p[0] == '\r' || p[0] == '\n')) {
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
    if (code == 200 && r->phase == PH_WATCH) r->broken_since = 0;
    if (code == 200 && r->phase != PH_LIST && !r->in_initial) confirm(r);
  }
  return sz * n;
}

/* ---- requests ---- */

static char *build_url(res_t *r, phase_t ph) {
  sf_apiwatch_t *w = r->w;
  char q[1024];
  int n = 0;
  char *sel = r->selector ? curl_easy_escape(NULL, r->selector, 0) : NULL;
  char *cont = r->cont ? curl_easy_escape(NULL, r->cont, 0) : NULL;
  uint32_t t = w->o.watch_timeout_s ? w->o.watch_timeout_s : 10 + (uint32_t)(next_rand(w) % 11);
  if (ph == PH_LIST)
    n = snprintf(q, sizeof q, "limit=%u%s%s", w->o.page_size, cont ? "&continue=" : "",
                 cont ? cont : "");
  else if (ph == PH_STREAM)
    n = snprintf(q, sizeof q, "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
                              "&allowWatchBookmarks=true&timeoutSeconds=%u", t);
  else
    n = snprintf(q, sizeof q, "watch=1&allowWatchBookmarks=true&resourceVersion=%s&timeoutSeconds=%u",
                 r->rv, t);
  size_t len = strlen(w->o.kube.server) + strlen(r->path) + (size_t)n + (sel ? strlen(sel) : 0) +
               (cont ? strlen(cont) : 0) + 32;
  char *url = sf_xmalloc(len);
  snprintf(url, len, "%s%s?%s%s%s", w->o.kube.server, r->path, q, sel ? "&fieldSelector=" : "",
           sel ? sel : "");
  curl_free(sel);
  curl_free(cont);
  return url;
}

void sf__curl_set_tls(CURL *e, const sf_kubeconfig_t *kc) {
  if (kc->ca_data) {
    struct curl_blob b = {kc->ca_data, kc->ca_len, CURL_BLOB_COPY};
    curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &b);
  } else if (kc->ca_file) {
    curl_easy_setopt(e, CURLOPT_CAINFO, kc->ca_file);
  }
  if (kc->insecure) {
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (kc->cert_data) {
    struct curl_blob b = {kc->cert_data, kc->cert_len, CURL_BLOB_COPY};
    curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &b);
  } else if (kc->cert_file) {
    curl_easy_setopt(e, CURLOPT_SSLCERT, kc->cert_file);
  }
  if (kc->key_data) {
    struct curl_blob b = {kc->key_data, kc->key_len, CURL_BLOB_COPY};
    curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &b);
  } else if (kc->key_file) {
    curl_easy_setopt(e, CURLOPT_SSLKEY, kc->key_file);
  }
}

/* Headers of one request; the token is read now, so a rotated file is picked up. */
static int make_headers(res_t *r, struct curl_slist **out) {
  char err[SF_ERR_MAX];
  char *tok = sf_kubeconfig_token(&r->w->o.kube, err, sizeof err);
  struct curl_slist *h = curl_slist_append(NULL, "Accept: application/json");
  if (!tok && r->w->o.kube.token_file) {
    char q[SF_ERR_MAX];
    sf_log_error("cannot read the token", "resource=%s error=\"%s\"", r->name,
                 logq(err, q, sizeof q));
    curl_slist_free_all(h);
    return SF_ENOENT;
  }
  if (tok) {
    size_t n = strlen(tok) + 32;
    char *line = sf_xmalloc(n);
    snprintf(line, n, "Authorization: Bearer %s", tok);
    h = curl_slist_append(h, line);
    free(line);
    free(tok);
  }
  *out = h;
  return 0;
}

static void retry(res_t *r, uint32_t delay_ms);
static void stream_off(res_t *r);

/*
 * A server that ignores sendInitialEvents (older than watch-list, or with
 * the gate off but not refusing) sends the objects and never the end
 * bookmark: after the request timeout, list and watch instead.
 */
static void on_stream_deadline(uv_timer_t *t) {
  res_t *r = t->data;
  if (r->phase != PH_STREAM || !r->in_initial) return;
  r->w->st.streaming_fallbacks++;
  sf_log_warn("watch-list sent no initial-events-end bookmark; using LIST and WATCH",
              "resource=%s", r->name);
  detach(r);
  stream_off(r);
  relist(r);
}

/* Watch-list off for this resource, to be tried again after stream_retry_ms. */
static void stream_off(res_t *r) {
  r->streaming = false;
  r->stream_again_ms = uv_now(r->w->loop) + r->w->o.stream_retry_ms;
}

static void issue(res_t *r, phase_t ph) {
  sf_apiwatch_t *w = r->w;
  r->phase = ph;
  r->action = ACT_NONE;
  r->body.len = 0;
  r->events_now = 0;
  r->started_ms = uv_now(w->loop);
  sf_framer_reset(&r->framer);
  if (make_headers(r, &r->hdrs)) {
    w->st.err_auth++;
    retry(r, 0);
    return;
  }
  char *url = build_url(r, ph);
  CURL *e = curl_easy_init();
  curl_easy_setopt(e, CURLOPT_URL, url);
  curl_easy_setopt(e, CURLOPT_PRIVATE, r);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->hdrs);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
  curl_easy_setopt(e, CURLOPT_USERAGENT, "slicefit/apiwatch");
  long limit = (long)w->o.request_timeout_ms;
  if (ph != PH_LIST) limit += (long)(w->o.watch_timeout_s ? w->o.watch_timeout_s : 20) * 1000;
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, limit);
  /* No byte at all for silent_ms: the server or the path to it is gone. */
  curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, (long)((w->o.silent_ms + 999) / 1000));
  r->truncated = r->framer.truncated;
  sf__curl_set_tls(e, &w->o.kube);
  free(url);
  r->easy = e;
  curl_multi_add_handle(w->multi, e);
  if (ph == PH_STREAM) uv_timer_start(&r->timer, on_stream_deadline, w->o.request_timeout_ms, 0);
}

static void detach(res_t *r) {
  if (!r->easy) return;
  curl_multi_remove_handle(r->w->multi, r->easy);
  curl_easy_cleanup(r->easy);
  curl_slist_free_all(r->hdrs);
  r->easy = NULL;
  r->hdrs = NULL;
}

static void on_retry(uv_timer_t *t) {
  res_t *r = t->data;
  if (r->phase == PH_WATCH) issue(r, PH_WATCH);
  else relist(r);
}

/* Schedules the same phase again after delay_ms, or after the backoff when 0. */
static void retry(res_t *r, uint32_t delay_ms) {
  sf_apiwatch_t *w = r->w;
  if (!delay_ms) {
    uint64_t d = (uint64_t)w->o.backoff_min_ms << (r->attempt < 20 ? r->attempt : 20);
    if (d > w->o.backoff_max_ms) d = w->o.backoff_max_ms;
    delay_ms = (uint32_t)(d / 2 + next_rand(w) % (d / 2 + 1));  /* jitter: [d/2, d] */
  }
  r->attempt++;
  if (r->synced && !r->broken_since) r->broken_since = uv_now(w->loop) | 1;
  uv_timer_start(&r->timer, on_retry, delay_ms, 0);
}

static void relist(res_t *r) {
  if (!r->streaming && r->stream_again_ms && uv_now(r->w->loop) >= r->stream_again_ms &&
      !r->w->o.no_streaming_list) {
    r->streaming = true;
    r->stream_again_ms = 0;
    sf_log_info("trying watch-list again", "resource=%s", r->name);
  }
  json_decref(r->items);
  r->items = json_array();
  free(r->cont);
  r->cont = NULL;
  r->in_initial = r->streaming;
  r->listed = 0;
  /*
   * The first list of a resource the sink has never seen applies each object
   * as it arrives: the same result as a replace into nothing, without
   * holding the whole list in memory. Any later list (a relist, or a retry
   * after a direct one failed half way) replaces in one step.
   */
  r->direct = !r->touched && !r->policy;
  issue(r, r->streaming ? PH_STREAM : PH_LIST);
}

/* ---- finished transfers ---- */

static void list_page(res_t *r) {
  json_error_t je;
  json_t *list = json_loadb(r->body.p ? r->body.p : "", r->body.len, 0, &je);
  json_t *items = json_object_get(list, "items");
  if (!json_is_array(items) && !json_is_null(items)) {
    r->w->st.err_other++;
    char q[SF_ERR_MAX];
    sf_log_warn("bad list response", "resource=%s error=\"%s\"", r->name,
                list ? "no items array" : logq(je.text, q, sizeof q));
    json_decref(list);
    retry(r, 0);
    return;
  }
  size_t i;
  json_t *obj;
  json_array_foreach(items, i, obj) listed(r, obj);
  set_rv(r, list);
  const char *cont = str_at(list, "metadata", "continue");
  free(r->cont);
  r->cont = cont && *cont ? sf_xstrdup(cont) : NULL;
  json_decref(list);
  if (r->cont) {
    issue(r, PH_LIST);
    return;
  }
  list_done(r);
  issue(r, PH_WATCH);
}

static void stream_ended(res_t *r, bool to_watch) {
  sf_apiwatch_t *w = r->w;
  bool quick = r->events_now == 0 && uv_now(w->loop) - r->started_ms < 1000;
  w->st.watch_resumes++;
  sf_log_info("watch ended; resuming", "resource=%s rv=%s", r->name, r->rv);
  r->phase = to_watch ? PH_WATCH : r->phase;
  if (quick) retry(r, 0);  /* a server that ends watches at once is not hammered */
  else issue(r, r->phase);
}

static void ok(res_t *r) {
  if (r->phase == PH_LIST) list_page(r);
  else if (r->phase == PH_WATCH) stream_ended(r, true);
  else if (!r->in_initial) stream_ended(r, true);
  else {
    r->w->st.err_other++;
    sf_log_warn("watch-list ended before its initial events did; listing again", "resource=%s",
                r->name);
    retry(r, 0);
  }
}

static void http_error(res_t *r, long code, curl_off_t retry_after) {
  sf_apiwatch_t *w = r->w;
  json_t *st = r->body.len ? json_loadb(r->body.p, r->body.len, 0, NULL) : NULL;
  const char *msg = str_at(st, "message", NULL), *reason = str_at(st, "reason", NULL);
  uint32_t delay = 0;
  char q[SF_ERR_MAX];
  char qr[64];
  sf_log_warn("request failed", "resource=%s phase=%s status=%ld reason=\"%s\" message=\"%s\"",
              r->name, phase_name(r->phase), code, logq(reason ? reason : "", qr, sizeof qr),
              logq(msg, q, sizeof q));
  if (code == 410) {
    w->st.relists_expired++;
    json_decref(st);
    relist(r);
    return;
  }
  if (r->phase == PH_STREAM && (code == 400 || code == 422)) {
    w->st.streaming_fallbacks++;
    sf_log_info("the server does not offer watch-list; using LIST and WATCH", "resource=%s",
                r->name);
    stream_off(r);
    json_decref(st);
    relist(r);
    return;
  }
  if (code == 429) {
    w->st.err_http_429++;
    /* Honoured up to the backoff cap (30 s by default), as client-go caps its own waits. */
    if (retry_after > 0)
      delay = (uint64_t)retry_after * 1000 < w->o.backoff_max_ms ? (uint32_t)retry_after * 1000
                                                                 : w->o.backoff_max_ms;
  } else if (code >= 500) {
    w->st.err_http_5xx++;
  } else if (code == 401 || code == 403) {
    w->st.err_auth++;
  } else {
    w->st.err_other++;
  }
  json_decref(st);
  retry(r, delay);
}

/* The whole-request time limit of the current transfer (see issue). */
static uint64_t limit_ms(const res_t *r) {
  const sf_apiwatch_opts_t *o = &r->w->o;
  uint64_t limit = o->request_timeout_ms;
  if (r->phase != PH_LIST) limit += (uint64_t)(o->watch_timeout_s ? o->watch_timeout_s : 20) * 1000;
  return limit;
}

static void transport_error(res_t *r, CURLcode cc) {
  sf_apiwatch_t *w = r->w;
  switch (cc) {
  case CURLE_SSL_CONNECT_ERROR: case CURLE_PEER_FAILED_VERIFICATION: case CURLE_SSL_CERTPROBLEM:
  case CURLE_SSL_CIPHER: case CURLE_SSL_CACERT_BADFILE: case CURLE_SSL_ISSUER_ERROR:
  case CURLE_SSL_ENGINE_INITFAILED: case CURLE_SSL_ENGINE_NOTFOUND: case CURLE_SSL_CRL_BADFILE:
    w->st.err_tls++;
    break;
  case CURLE_OPERATION_TIMEDOUT:
    /* Before the request's own time limit: the low-speed limit, a silent transfer. */
    if (uv_now(w->loop) - r->started_ms + 1000 < limit_ms(r)) {
      w->st.silent_restarts++;
      sf_log_warn("no byte from the server; restarting", "resource=%s phase=%s rv=%s silent_ms=%u",
                  r->name, phase_name(r->phase), r->rv, w->o.silent_ms);
    }
    w->st.err_connect++;
    break;
  case CURLE_COULDNT_CONNECT: case CURLE_COULDNT_RESOLVE_HOST:
  case CURLE_RECV_ERROR: case CURLE_SEND_ERROR: case CURLE_GOT_NOTHING: case CURLE_PARTIAL_FILE:
    w->st.err_connect++;
    break;
  default:
    w->st.err_other++;
  }
  sf_log_warn("request failed", "resource=%s phase=%s rv=%s error=\"%s\"", r->name,
              phase_name(r->phase), r->rv, curl_easy_strerror(cc));
  if (r->phase == PH_STREAM && !r->in_initial) r->phase = PH_WATCH;
  retry(r, 0);
}

static void finished(res_t *r, CURLcode cc) {
  long code = 0;
  curl_off_t retry_after = 0;
  curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
  curl_easy_getinfo(r->easy, CURLINFO_RETRY_AFTER, &retry_after);
  detach(r);
  if (r->action == ACT_RELIST) {
    r->w->st.relists_expired++;
    char q[SF_ERR_MAX];
    sf_log_info("resource version expired; listing again", "resource=%s why=\"%s\"", r->name,
                logq(r->action_why, q, sizeof q));
    relist(r);
  } else if (code != 200 && code != 0) {
    http_error(r, code, retry_after);  /* an error body cut short still has its status */
  } else if (r->action == ACT_FAIL) {
    char q[SF_ERR_MAX];
    sf_log_warn("request failed", "resource=%s phase=%s rv=%s why=\"%s\"", r->name,
                phase_name(r->phase), r->rv, logq(r->action_why, q, sizeof q));
    if (r->phase == PH_STREAM && !r->in_initial) r->phase = PH_WATCH;
    retry(r, 0);
  } else if (cc != CURLE_OK) {
    transport_error(r, cc);
  } else {
    ok(r);
  }
}

/* ---- libcurl on libuv ---- */

static void drain(sf_apiwatch_t *w) {
  CURLMsg *m;
  int left;
  while ((m = curl_multi_info_read(w->multi, &left))) {
    if (m->msg != CURLMSG_DONE) continue;
    res_t *r = NULL;
    curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
    if (r && !w->stopping) finished(r, m->data.result);
  }
}

static void on_poll(uv_poll_t *h, int status, int events) {
  poll_ctx_t *pc = h->data;
  int flags = 0, running;
  if (status < 0) flags = CURL_CSELECT_ERR;
  if (events & UV_READABLE) flags |= CURL_CSELECT_IN;
  if (events & UV_WRITABLE) flags |= CURL_CSELECT_OUT;
  curl_multi_socket_action(pc->w->multi, pc->s, flags, &running);
  drain(pc->w);
}

/* Poll handles carry their poll_ctx_t, timers (once closing) the watcher. */
static void on_closed(uv_handle_t *h) {
  sf_apiwatch_t *w = h->type == UV_POLL ? ((poll_ctx_t *)h->data)->w : h->data;
  if (h->type == UV_POLL) free(h->data);
  if (--w->open_handles == 0 && w->stopping && w->done) w->done(w->done_ud);
}

static void close_poll(sf_apiwatch_t *w, poll_ctx_t *pc) {
  if (pc->prev) pc->prev->next = pc->next;
  else w->polls = pc->next;
  if (pc->next) pc->next->prev = pc->prev;
  uv_poll_stop(&pc->h);
  uv_close((uv_handle_t *)&pc->h, on_closed);
}

static int on_socket(CURL *e, curl_socket_t s, int what, void *ud, void *sockp) {
  sf_apiwatch_t *w = ud;
  poll_ctx_t *pc = sockp;
  (void)e;
  if (what == CURL_POLL_REMOVE) {
    if (pc) close_poll(w, pc);
    curl_multi_assign(w->multi, s, NULL);
    return 0;
  }
  if (!pc) {
    pc = sf_xcalloc(1, sizeof *pc);
    pc->s = s;
    pc->w = w;
    uv_poll_init_socket(w->loop, &pc->h, s);
    pc->h.data = pc;
    pc->next = w->polls;
    if (w->polls) w->polls->prev = pc;
    w->polls = pc;
    w->open_handles++;
    curl_multi_assign(w->multi, s, pc);
  }
  int ev = (what & CURL_POLL_IN ? UV_READABLE : 0) | (what & CURL_POLL_OUT ? UV_WRITABLE : 0);
  uv_poll_start(&pc->h, ev, on_poll);
  return 0;
}

static void on_curl_timer(uv_timer_t *t) {
  sf_apiwatch_t *w = t->data;
  int running;
  curl_multi_socket_action(w->multi, CURL_SOCKET_TIMEOUT, 0, &running);
  drain(w);
}

static int on_timer_set(CURLM *m, long ms, void *ud) {
  sf_apiwatch_t *w = ud;
  (void)m;
  if (ms < 0) uv_timer_stop(&w->curl_timer);
  else uv_timer_start(&w->curl_timer, on_curl_timer, (uint64_t)ms, 0);
  return 0;
}

/* ---- lifecycle ---- */

static res_t *add_res(sf_apiwatch_t *w, const char *name, const char *path, sf_kind_t kind) {
  assert(w->nres < MAX_RES);
  res_t *r = &w->res[w->nres++];
  r->w = w;
  snprintf(r->name, sizeof r->name, "%s", name);
  r->path = sf_xstrdup(path);
  r->kind = kind;
  r->streaming = !w->o.no_streaming_list;
  r->after = -1;
  sf_framer_init(&r->framer, w->o.max_event_bytes);
  return r;
}

static int add_policy_res(sf_apiwatch_t *w, const char *nsname, char *err, size_t errlen) {
  const char *slash = strchr(nsname, '/');
  if (!slash || slash == nsname || !slash[1] || strchr(slash + 1, '/') ||
      strlen(nsname) > 60 + 253) {
    snprintf(err, errlen, "--policy-configmap: '%s' is not NAMESPACE/NAME", nsname);
    return SF_EINVAL;
  }
  char path[400], name[80];
  snprintf(path, sizeof path, "/api/v1/namespaces/%.*s/configmaps", (int)(slash - nsname), nsname);
  snprintf(name, sizeof name, "configmap %s", nsname);
  res_t *r = add_res(w, name, path, SF_KIND_UNKNOWN);
  r->policy = true;
  w->cm_name = sf_xstrdup(slash + 1);
  size_t n = strlen(slash + 1) + 16;
  r->selector = sf_xmalloc(n);
  snprintf(r->selector, n, "metadata.name=%s", slash + 1);
  return 0;
}

static void defaults(sf_apiwatch_opts_t *o) {
  if (!o->page_size) o->page_size = 500;
  if (!o->staleness_ms) o->staleness_ms = 30000;
  if (!o->backoff_min_ms) o->backoff_min_ms = 200;
  if (!o->backoff_max_ms) o->backoff_max_ms = 30000;
  if (o->backoff_max_ms < o->backoff_min_ms) o->backoff_max_ms = o->backoff_min_ms;
  if (!o->request_timeout_ms) o->request_timeout_ms = 60000;
  if (!o->silent_ms) o->silent_ms = 30000;
  if (!o->stream_retry_ms) o->stream_retry_ms = 600000;
  if (!o->max_list_bytes) o->max_list_bytes = (size_t)1 << 30;
}

sf_apiwatch_t *sf_apiwatch_create_sink(uv_loop_t *loop, const sf_apiwatch_opts_t *opts, char *err,
                                       size_t errlen) {
  if (!opts->sink || !opts->sink->apply || !opts->sink->remove || !opts->sink->replace ||
      !opts->kube.server) {
    snprintf(err, errlen, "apiwatch: %s", opts->kube.server ? "no sink" : "no API server");
    return NULL;
  }
  sf_apiwatch_t *w = sf_xcalloc(1, sizeof *w);
  w->loop = loop;
  w->o = *opts;
  w->sink = *opts->sink;
  w->o.sink = &w->sink;
  defaults(&w->o);
  w->rng = uv_hrtime() ^ (uint64_t)(uintptr_t)w ^ 0x9e3779b97f4a7c15ull;
  if (w->o.policy_configmap && add_policy_res(w, w->o.policy_configmap, err, errlen)) {
    sf_apiwatch_destroy(w);
    return NULL;
  }
  /* Nodes first: which slices reach a node (selectors, allNodes) and whether a name is a node at
   * all are read from them when the slices arrive. */
  add_res(w, "nodes", "/api/v1/nodes", SF_KIND_NODE);
  add_res(w, "deviceclasses", "/apis/resource.k8s.io/v1/deviceclasses", SF_KIND_DEVICE_CLASS);
  add_res(w, "resourceslices", "/apis/resource.k8s.io/v1/resourceslices", SF_KIND_RESOURCE_SLICE);
  /*
   * Claims start once the slices have synced: their allocations name devices,
   * and a cluster records allocations again whenever a slice changes, so
   * slices first is the cheap order.
   */
  res_t *claims = add_res(w, "resourceclaims", "/apis/resource.k8s.io/v1/resourceclaims",
                          SF_KIND_RESOURCE_CLAIM);
  claims->after = (int)(claims - w->res) - 1;
  if (w->o.watch_pods) {
    /* Every pod that has not ended, as kube-scheduler's own informer watches them: the bound
     * ones give each node its CPU in use, the pending ones their claims' CPU. */
    res_t *pods = add_res(w, "pods", "/api/v1/pods", SF_KIND_POD);
    pods->selector = sf_xstrdup("status.phase!=Succeeded,status.phase!=Failed");
  }
  if (w->o.device_taint_rules) {
    char path[128];
    snprintf(path, sizeof path, "/apis/resource.k8s.io/%.16s/devicetaintrules",
             w->o.device_taint_rules);
    add_res(w, "devicetaintrules", path, SF_KIND_DEVICE_TAINT_RULE);
  }
  return w;
}

int sf_apiwatch_start(sf_apiwatch_t *w) {
  if (w->started) return SF_EINVAL;
  w->started = true;
  curl_global_init(CURL_GLOBAL_DEFAULT);
  w->multi = curl_multi_init();
  curl_multi_setopt(w->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
  curl_multi_setopt(w->multi, CURLMOPT_SOCKETDATA, w);
  curl_multi_setopt(w->multi, CURLMOPT_TIMERFUNCTION, on_timer_set);
  curl_multi_setopt(w->multi, CURLMOPT_TIMERDATA, w);
  uv_timer_init(w->loop, &w->curl_timer);
  w->curl_timer.data = w;
  w->open_handles++;
  for (size_t i = 0; i < w->nres; i++) {
    uv_timer_init(w->loop, &w->res[i].timer);
    w->res[i].timer.data = &w->res[i];
    w->open_handles++;
  }
  for (size_t i = 0; i < w->nres; i++)
    if (w->res[i].after < 0) relist(&w->res[i]);
  return 0;
}

bool sf_apiwatch_synced(const sf_apiwatch_t *w) {
  uint64_t now = uv_now(w->loop);
  if (!w->started || w->stopping) return false;
  for (size_t i = 0; i < w->nres; i++) {
    const res_t *r = &w->res[i];
    if (!r->synced) return false;
    if (r->broken_since && now - r->broken_since > w->o.staleness_ms) return false;
    if (now - r->confirmed_ms > w->o.staleness_ms) return false;
  }
  return true;
}

size_t sf_apiwatch_ages(const sf_apiwatch_t *w, sf_apiwatch_age_t *out, size_t cap) {
  uint64_t now = uv_now(w->loop);
  size_t n = 0;
  for (size_t i = 0; i < w->nres && n < cap; i++, n++) {
    const res_t *r = &w->res[i];
    out[n].resource = r->name;
    out[n].age_ms = r->confirmed_ms ? now - r->confirmed_ms : UINT64_MAX;
  }
  return n;
}

void sf_apiwatch_stats(const sf_apiwatch_t *w, sf_apiwatch_stats_t *out) { *out = w->st; }

void sf_apiwatch_stop(sf_apiwatch_t *w, void (*done)(void *ud), void *ud) {
  if (!w->started || w->stopping) {
    if (done) done(ud);
    return;
  }
  w->stopping = true;
  w->done = done;
  w->done_ud = ud;
  for (size_t i = 0; i < w->nres; i++) {
    detach(&w->res[i]);
    w->res[i].timer.data = w;
    uv_close((uv_handle_t *)&w->res[i].timer, on_closed);
  }
  curl_multi_cleanup(w->multi);
  w->multi = NULL;
  while (w->polls) close_poll(w, w->polls);
  uv_close((uv_handle_t *)&w->curl_timer, on_closed);
}

void sf_apiwatch_destroy(sf_apiwatch_t *w) {
  if (!w) return;
  for (size_t i = 0; i < w->nres; i++) {
    res_t *r = &w->res[i];
    free(r->path);
    free(r->selector);
    free(r->cont);
    free(r->body.p);
    json_decref(r->items);
    sf_framer_dispose(&r->framer);
  }
  free(w->cm_name);
  if (w->started) curl_global_cleanup();
  free(w);
}
