/*
 * The reflector's list and watch logic (watch.c has the whole design): the
 * policy ConfigMap, objects to the sink, lists done, watch events, retries
 * with backoff and relists, and what each finished transfer leads to.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "watch_int.h"

static const char *phase_name(phase_t ph)
{
  static const char *const names[] = {"idle", "list", "stream", "watch"};
  return names[ph];
}

static const char *str_at(const json_t *obj, const char *a, const char *b)
{
  const json_t *v = json_object_get(obj, a);
  return json_string_value(b ? json_object_get(v, b) : v);
}

static void set_rv(res_t *r, const json_t *obj)
{
  const char *rv = str_at(obj, "metadata", "resourceVersion");
  if (rv && *rv && strlen(rv) < sizeof r->rv)
    strcpy(r->rv, rv);
}

/* ---- the policy ConfigMap ---- */

static void apply_policy(res_t *r, const json_t *cm)
{
  sf_apiwatch_t *w = r->w;
  const char *name = str_at(cm, "metadata", "name");
  if (name && strcmp(name, w->cm_name) != 0)
    return;
  json_t *data = json_object_get(cm, "data");
  size_t n = json_object_size(data), i = 0;
  const char **keys = sf_xcalloc(n + 1, sizeof *keys), **vals = sf_xcalloc(n + 1, sizeof *vals);
  char err[SF_ERR_MAX] = "";
  const char *k;
  json_t *v;
  json_object_foreach(data, k, v)
  {
    if (!json_is_string(v)) {
      snprintf(err, sizeof err, "%s: the value is not a string", k);
      break;
    }
    keys[i] = k;
    vals[i++] = json_string_value(v);
  }
  sf_policy_t pol;
  if (!err[0] && sf_policy_from_kv(&pol, keys, vals, n, err, sizeof err) == 0) {
    if (w->o.policy_cb)
      w->o.policy_cb(w->o.policy_ud, &pol);
    sf_policy_dispose(&pol);
    w->st.policy_applied++;
    sf_log_info("policy applied", "configmap=%s keys=%zu", r->name + 10, n);
  } else {
    w->st.policy_invalid++;
    char q[SF_ERR_MAX];
    sf_log_error("policy rejected; the last good policy stays", "configmap=%s error=\"%s\"",
                 r->name + 10, sf__watch_logq(err, q, sizeof q));
  }
  free(keys);
  free(vals);
}

/* ---- objects to the sink ---- */

static void to_sink(res_t *r, int op, const json_t *obj)
{
  sf_apiwatch_t *w = r->w;
  char err[SF_ERR_MAX] = "";
  int rc;
  if (r->policy) {
    if (op == 0)
      apply_policy(r, obj);
    else
      sf_log_warn("policy configmap deleted; the last good policy stays", "configmap=%s",
                  r->name + 10);
    return;
  }
  r->touched = true;
  if (op == 0)
    rc = w->sink.apply(w->sink.ud, r->kind, obj, err, sizeof err);
  else
    rc = w->sink.remove(w->sink.ud, r->kind, obj, err, sizeof err);
  if (rc) {
    w->st.decode_errors++;
    char q[SF_ERR_MAX];
    char qn[300];
    sf_log_warn("object rejected", "resource=%s name=\"%s\" error=\"%s\"", r->name,
                sf__watch_logq(str_at(obj, "metadata", "name") ? str_at(obj, "metadata", "name")
                                                               : "?",
                               qn, sizeof qn),
                sf__watch_logq(err, q, sizeof q));
  }
}

/* Replaces the resource's objects with the gathered list, in one step when it validates. */
static void replace_all(res_t *r)
{
  sf_apiwatch_t *w = r->w;
  char err[SF_ERR_MAX] = "";
  if (r->policy) {
    if (json_array_size(r->items) == 0)
      sf_log_warn("policy configmap not found; the policy in force stays", "configmap=%s",
                  r->name + 10);
    else
      apply_policy(r, json_array_get(r->items, 0));
    return;
  }
  r->touched = true;
  if (w->sink.replace(w->sink.ud, r->kind, r->items, err, sizeof err) == 0)
    return;
  /* One bad object must not hide the others: empty the kind, then apply one by one. */
  char q[SF_ERR_MAX];
  sf_log_warn("list rejected as a whole; applying its objects one by one", "resource=%s error=\"%s\"",
              r->name, sf__watch_logq(err, q, sizeof q));
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
static void start_waiting(res_t *r)
{
  sf_apiwatch_t *w = r->w;
  for (size_t i = 0; i < w->nres; i++)
    if (w->res[i].after == (int)(r - w->res) && w->res[i].phase == PH_IDLE)
      uv_timer_start(&w->res[i].timer, on_retry, 0, 0);
}

static void list_done(res_t *r)
{
  if (r->phase == PH_STREAM) {
    uv_timer_stop(&r->timer);
    r->w->st.stream_lists++;
  }
  if (!r->direct)
    replace_all(r);
  r->w->st.lists++;
  sf_log_info("resource synced", "resource=%s rv=%s objects=%zu", r->name, r->rv, r->listed);
  json_decref(r->items);
  r->items = NULL;
  r->synced = true;
  r->broken = false;
  r->attempt = 0;
  r->in_initial = false;
  sf__watch_confirm(r);
  start_waiting(r);
}

/* ---- watch events ---- */

int sf__watch_fail_event(res_t *r, action_t act, const char *why)
{
  r->action = act;
  snprintf(r->action_why, sizeof r->action_why, "%s", why);
  return -1;
}

static int on_error_event(res_t *r, const json_t *status)
{
  json_int_t code = json_integer_value(json_object_get(status, "code"));
  const char *reason = str_at(status, "reason", NULL), *msg = str_at(status, "message", NULL);
  char why[160];
  snprintf(why, sizeof why, "ERROR event code=%lld reason=%s message=%s", (long long)code,
           reason ? reason : "", msg ? msg : "");
  bool gone = code == 410 || (reason && (!strcmp(reason, "Expired") || !strcmp(reason, "Gone")));
  if (!gone)
    r->w->st.err_other++;
  return sf__watch_fail_event(r, gone ? ACT_RELIST : ACT_FAIL, why);
}

static int on_bookmark(res_t *r, const json_t *obj)
{
  r->w->st.bookmarks++;
  r->attempt = 0;
  set_rv(r, obj);
  const json_t *ann = json_object_get(json_object_get(obj, "metadata"), "annotations");
  const char *end = json_string_value(json_object_get(ann, INITIAL_END));
  if (r->in_initial && end && !strcmp(end, "true"))
    list_done(r);
  return 0;
}

/* One object of a list: to the sink now (a direct list) or kept for the replace. */
static void listed(res_t *r, json_t *obj)
{
  r->listed++;
  if (r->direct)
    to_sink(r, 0, obj);
  else
    json_array_append(r->items, obj); /* shared, not copied */
}

static int dispatch(res_t *r, const char *type, json_t *obj)
{
  bool add = !strcmp(type, "ADDED") || !strcmp(type, "MODIFIED");
  if (!strcmp(type, "BOOKMARK"))
    return on_bookmark(r, obj);
  if (!strcmp(type, "ERROR"))
    return on_error_event(r, obj);
  if (!add && strcmp(type, "DELETED") != 0)
    return sf__watch_fail_event(r, ACT_FAIL, "unknown event type");
  r->events_now++;
  r->w->st.events++;
  /* A whole event: the stream works again, so a later failure backs off from the start. */
  r->attempt = 0;
  if (r->in_initial && add)
    listed(r, obj);
  else if (!r->in_initial)
    to_sink(r, add ? 0 : 1, obj);
  set_rv(r, obj);
  return 0;
}

int sf__watch_on_event(res_t *r, const char *ev, size_t len)
{
  json_error_t je;
  json_t *e = json_loadb(ev, len, 0, &je);
  const char *type = json_string_value(json_object_get(e, "type"));
  json_t *obj = json_object_get(e, "object");
  int rc;
  if (!type || !json_is_object(obj)) {
    r->w->st.framing_errors++;
    rc = sf__watch_fail_event(r, ACT_FAIL, e ? "an event without type or object" : je.text);
  } else {
    rc = dispatch(r, type, obj);
  }
  json_decref(e);
  return rc;
}

static void on_retry(uv_timer_t *t)
{
  res_t *r = t->data;
  if (r->phase == PH_WATCH)
    sf__watch_issue(r, PH_WATCH);
  else
    sf__watch_relist(r);
}

/* Schedules the same phase again after delay_ms, or after the backoff when 0. */
void sf__watch_retry(res_t *r, uint32_t delay_ms)
{
  sf_apiwatch_t *w = r->w;
  if (!delay_ms) {
    uint64_t d = (uint64_t)w->o.backoff_min_ms << (r->attempt < 20 ? r->attempt : 20);
    if (d > w->o.backoff_max_ms)
      d = w->o.backoff_max_ms;
    delay_ms = (uint32_t)(d / 2 + sf__watch_next_rand(w) % (d / 2 + 1)); /* jitter: [d/2, d] */
  }
  r->attempt++;
  if (r->synced)
    sf__watch_broken(r);
  uv_timer_start(&r->timer, on_retry, delay_ms, 0);
}

void sf__watch_relist(res_t *r)
{
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
  sf__watch_issue(r, r->streaming ? PH_STREAM : PH_LIST);
}

/* ---- finished transfers ---- */

/* One item of a LIST page, as soon as its last byte arrives. */
static int list_item(void *ud, const char *text, size_t len)
{
  res_t *r = ud;
  json_error_t je;
  json_t *obj = json_loadb(text, len, 0, &je);
  if (obj == NULL) {
    char why[160];
    snprintf(why, sizeof why, "an item of the list is not JSON: %.100s", je.text);
    return sf__watch_fail_event(r, ACT_FAIL, why);
  }
  listed(r, obj);
  json_decref(obj);
  return 0;
}

/*
 * A LIST answer is read item by item as it arrives, as watch events are: an
 * API server serving from its watch cache may ignore `limit` and send every
 * object in one page, which parsed whole took about ten times its text.
 */
int sf__watch_list_bytes(res_t *r, const char *p, size_t len)
{
  r->list_bytes += len;
  if (r->list_bytes > r->w->o.max_list_bytes)
    return sf__watch_fail_event(r, ACT_FAIL, "response larger than the cap");
  int rc = sf_listscan_feed(&r->scan, p, len, list_item, r);
  if (rc == SF_EINVAL && r->action == ACT_NONE)
    return sf__watch_fail_event(r, ACT_FAIL, "malformed list response");
  if (rc == SF_E2BIG)
    return sf__watch_fail_event(r, ACT_FAIL, "an item of the list larger than the cap");
  return rc ? -1 : 0;
}

static void list_page(res_t *r)
{
  char err[SF_ERR_MAX];
  json_t *list = sf_listscan_finish(&r->scan, err, sizeof err);
  json_t *items = json_object_get(list, "items");
  if (!json_is_array(items) && !json_is_null(items)) {
    r->w->st.err_other++;
    char q[SF_ERR_MAX];
    sf_log_warn("bad list response", "resource=%s error=\"%s\"", r->name,
                list ? "no items array" : sf__watch_logq(err, q, sizeof q));
    json_decref(list);
    sf__watch_retry(r, 0);
    return;
  }
  size_t i;
  json_t *obj;
  json_array_foreach(items, i, obj) listed(r, obj); /* only an "items" key spelled with escapes */
  set_rv(r, list);
  const char *cont = str_at(list, "metadata", "continue");
  free(r->cont);
  r->cont = cont && *cont ? sf_xstrdup(cont) : NULL;
  json_decref(list);
  sf_listscan_dispose(&r->scan);
  if (r->cont) {
    sf__watch_issue(r, PH_LIST);
    return;
  }
  list_done(r);
  sf__watch_issue(r, PH_WATCH);
}

static void stream_ended(res_t *r, bool to_watch)
{
  sf_apiwatch_t *w = r->w;
  bool quick = r->events_now == 0 && uv_now(w->loop) - r->started_ms < 1000;
  w->st.watch_resumes++;
  sf_log_info("watch ended; resuming", "resource=%s rv=%s", r->name, r->rv);
  r->phase = to_watch ? PH_WATCH : r->phase;
  if (quick)
    sf__watch_retry(r, 0); /* a server that ends watches at once is not hammered */
  else
    sf__watch_issue(r, r->phase);
}

static void ok(res_t *r)
{
  if (r->phase == PH_LIST)
    list_page(r);
  else if (r->phase == PH_WATCH)
    stream_ended(r, true);
  else if (!r->in_initial)
    stream_ended(r, true);
  else {
    r->w->st.err_other++;
    sf_log_warn("watch-list ended before its initial events did; listing again", "resource=%s",
                r->name);
    sf__watch_retry(r, 0);
  }
}

static void http_error(res_t *r, long code, curl_off_t retry_after)
{
  sf_apiwatch_t *w = r->w;
  json_t *st = r->body.len ? json_loadb(r->body.p, r->body.len, 0, NULL) : NULL;
  const char *msg = str_at(st, "message", NULL), *reason = str_at(st, "reason", NULL);
  uint32_t delay = 0;
  char q[SF_ERR_MAX];
  char qr[64];
  sf_log_warn("request failed", "resource=%s phase=%s status=%ld reason=\"%s\" message=\"%s\"",
              r->name, phase_name(r->phase), code,
              sf__watch_logq(reason ? reason : "", qr, sizeof qr), sf__watch_logq(msg, q, sizeof q));
  if (code == 410) {
    w->st.relists_expired++;
    json_decref(st);
    sf__watch_relist(r);
    return;
  }
  if (r->phase == PH_STREAM && (code == 400 || code == 422)) {
    w->st.streaming_fallbacks++;
    sf_log_info("the server does not offer watch-list; using LIST and WATCH", "resource=%s", r->name);
    sf__watch_stream_off(r);
    json_decref(st);
    sf__watch_relist(r);
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
  sf__watch_retry(r, delay);
}

/* The whole-request time limit of the current transfer (--watch-timeout and its kin). */
static uint64_t limit_ms(const res_t *r)
{
  const sf_apiwatch_opts_t *o = &r->w->o;
  uint64_t limit = o->request_timeout_ms;
  if (r->phase != PH_LIST)
    limit += (uint64_t)(o->watch_timeout_s ? o->watch_timeout_s : 20) * 1000;
  return limit;
}

static void transport_error(res_t *r, CURLcode cc)
{
  sf_apiwatch_t *w = r->w;
  switch (cc) {
  case CURLE_SSL_CONNECT_ERROR:
  case CURLE_PEER_FAILED_VERIFICATION:
  case CURLE_SSL_CERTPROBLEM:
  case CURLE_SSL_CIPHER:
  case CURLE_SSL_CACERT_BADFILE:
  case CURLE_SSL_ISSUER_ERROR:
  case CURLE_SSL_ENGINE_INITFAILED:
  case CURLE_SSL_ENGINE_NOTFOUND:
  case CURLE_SSL_CRL_BADFILE: w->st.err_tls++; break;
  case CURLE_OPERATION_TIMEDOUT:
    /* Before the request's own time limit: the low-speed limit, a silent transfer. */
    if (uv_now(w->loop) - r->started_ms + 1000 < limit_ms(r)) {
      w->st.silent_restarts++;
      sf_log_warn("no byte from the server; restarting", "resource=%s phase=%s rv=%s silent_ms=%u",
                  r->name, phase_name(r->phase), r->rv, w->o.silent_ms);
    }
    w->st.err_connect++;
    break;
  case CURLE_COULDNT_CONNECT:
  case CURLE_COULDNT_RESOLVE_HOST:
  case CURLE_RECV_ERROR:
  case CURLE_SEND_ERROR:
  case CURLE_GOT_NOTHING:
  case CURLE_PARTIAL_FILE: w->st.err_connect++; break;
  default: w->st.err_other++;
  }
  sf_log_warn("request failed", "resource=%s phase=%s rv=%s error=\"%s\"", r->name,
              phase_name(r->phase), r->rv, curl_easy_strerror(cc));
  if (r->phase == PH_STREAM && !r->in_initial)
    r->phase = PH_WATCH;
  sf__watch_retry(r, 0);
}

void sf__watch_finished(res_t *r, CURLcode cc)
{
  long code = 0;
  curl_off_t retry_after = 0;
  curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
  curl_easy_getinfo(r->easy, CURLINFO_RETRY_AFTER, &retry_after);
  sf__watch_detach(r);
  if (r->action == ACT_RELIST) {
    r->w->st.relists_expired++;
    char q[SF_ERR_MAX];
    sf_log_info("resource version expired; listing again", "resource=%s why=\"%s\"", r->name,
                sf__watch_logq(r->action_why, q, sizeof q));
    sf__watch_relist(r);
  } else if (code != 200 && code != 0) {
    http_error(r, code, retry_after); /* an error body cut short still has its status */
  } else if (r->action == ACT_FAIL) {
    char q[SF_ERR_MAX];
    sf_log_warn("request failed", "resource=%s phase=%s rv=%s why=\"%s\"", r->name,
                phase_name(r->phase), r->rv, sf__watch_logq(r->action_why, q, sizeof q));
    if (r->phase == PH_STREAM && !r->in_initial)
      r->phase = PH_WATCH;
    sf__watch_retry(r, 0);
  } else if (cc != CURLE_OK) {
    transport_error(r, cc);
  } else {
    ok(r);
  }
}
