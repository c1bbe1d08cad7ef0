/*
 * The reflector's HTTP side (watch.c has the whole design): each request
 * built and issued on the multi handle, and the bytes of its response, a
 * capped body or the watch stream cut into events by the framer.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "watch_int.h"

static bool buf_add(buf_t *b, const char *p, size_t n, size_t cap)
{
  if (b->len + n > cap)
    return false;
  sf_xgrow(&b->p, &b->cap, b->len + n + 1, 1);
  memcpy(b->p + b->len, p, n);
  b->len += n;
  b->p[b->len] = '\0';
  return true;
}

static size_t on_data(char *p, size_t sz, size_t n, void *ud)
{
  res_t *r = ud;
  size_t len = sz * n;
  long code = 0;
  curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
  if (code == 200 && r->phase == PH_LIST)
    return sf__watch_list_bytes(r, p, len) == 0 ? len : 0;
  if (code != 200) {
    if (buf_add(&r->body, p, len, MAX_ERR_BODY))
      return len;
    sf__watch_fail_event(r, ACT_FAIL, "response larger than the cap");
    return 0;
  }
  if (len)
    sf__watch_confirm(r);
  for (size_t off = 0; off < len;) {
    const char *ev;
    size_t evlen;
    long used = sf_framer_feed(&r->framer, p + off, len - off, &ev, &evlen);
    if (used < 0) {
      r->w->st.framing_errors++;
      sf__watch_fail_event(r, ACT_FAIL,
                           used == SF_E2BIG ? "an event larger than the cap" : "malformed stream");
      return 0;
    }
    off += (size_t)used;
    if (r->framer.truncated != r->truncated) {
      /* Going on would skip the cut event: start again from the last whole one. */
      r->truncated = r->framer.truncated;
      r->w->st.framing_errors++;
      sf__watch_fail_event(r, ACT_FAIL,
                           "an event cut short by a line break; watching again from the last "
                           "whole event");
      return 0;
    }
    if (ev && sf__watch_on_event(r, ev, evlen))
      return 0;
  }
  return len;
}

/* The end of the headers of a good watch: the stream is healthy again. */
static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
  res_t *r = ud;
  long code = 0;
  if (sz * n <= 2 && (p[0] == '\r' || p[0] == '\n')) {
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
    if (code == 200 && r->phase == PH_WATCH)
      r->broken = false;
    if (code == 200 && r->phase != PH_LIST && !r->in_initial)
      sf__watch_confirm(r);
  }
  return sz * n;
}

/* ---- requests ---- */

static char *build_url(res_t *r, phase_t ph)
{
  sf_apiwatch_t *w = r->w;
  char q[1024];
  int n = 0;
  char *sel = r->selector ? curl_easy_escape(NULL, r->selector, 0) : NULL;
  char *cont = r->cont ? curl_easy_escape(NULL, r->cont, 0) : NULL;
  uint32_t t = w->o.watch_timeout_s ? w->o.watch_timeout_s
                                    : 10 + (uint32_t)(sf__watch_next_rand(w) % 11);
  if (ph == PH_LIST)
    n = snprintf(q, sizeof q, "limit=%u%s%s", w->o.page_size, cont ? "&continue=" : "",
                 cont ? cont : "");
  else if (ph == PH_STREAM)
    n = snprintf(q, sizeof q,
                 "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
                 "&allowWatchBookmarks=true&timeoutSeconds=%u",
                 t);
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

void sf__curl_set_tls(CURL *e, const sf_kubeconfig_t *kc)
{
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

int sf__curl_auth_headers(const sf_kubeconfig_t *kc, const char *what, struct curl_slist **out)
{
  char err[SF_ERR_MAX];
  char *tok = sf_kubeconfig_token(kc, err, sizeof err);
  struct curl_slist *h = curl_slist_append(NULL, "Accept: application/json");
  if (!tok && kc->token_file) {
    char q[SF_ERR_MAX];
    sf_log_error("cannot read the token", "resource=%s error=\"%s\"", what,
                 sf__watch_logq(err, q, sizeof q));
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

/*
 * A server that ignores sendInitialEvents (older than watch-list, or with
 * the gate off but not refusing) sends the objects and never the end
 * bookmark: after the request timeout, list and watch instead.
 */
static void on_stream_deadline(uv_timer_t *t)
{
  res_t *r = t->data;
  if (r->phase != PH_STREAM || !r->in_initial)
    return;
  r->w->st.streaming_fallbacks++;
  sf_log_warn("watch-list sent no initial-events-end bookmark; using LIST and WATCH", "resource=%s",
              r->name);
  sf__watch_detach(r);
  sf__watch_stream_off(r);
  sf__watch_relist(r);
}

/* Watch-list off for this resource, to be tried again after stream_retry_ms. */
void sf__watch_stream_off(res_t *r)
{
  r->streaming = false;
  r->stream_again_ms = uv_now(r->w->loop) + r->w->o.stream_retry_ms;
}

void sf__watch_issue(res_t *r, phase_t ph)
{
  sf_apiwatch_t *w = r->w;
  r->phase = ph;
  r->action = ACT_NONE;
  r->body.len = 0;
  sf_listscan_dispose(&r->scan);
  sf_listscan_init(&r->scan, w->o.max_list_bytes);
  r->list_bytes = 0;
  r->events_now = 0;
  r->started_ms = uv_now(w->loop);
  sf_framer_reset(&r->framer);
  if (sf__curl_auth_headers(&w->o.kube, r->name, &r->hdrs)) {
    w->st.err_auth++;
    sf__watch_retry(r, 0);
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
  if (ph != PH_LIST)
    limit += (long)(w->o.watch_timeout_s ? w->o.watch_timeout_s : 20) * 1000;
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, limit);
  /* No byte at all for silent_ms: the server or the path to it is gone. */
  curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, (long)((w->o.silent_ms + 999) / 1000));
  r->truncated = r->framer.truncated;
  sf__curl_set_tls(e, &w->o.kube);
  free(url);
  r->easy = e;
  curl_multi_add_handle(w->multi, e);
  if (ph == PH_STREAM)
    uv_timer_start(&r->timer, on_stream_deadline, w->o.request_timeout_ms, 0);
}

void sf__watch_detach(res_t *r)
{
  if (!r->easy)
    return;
  curl_multi_remove_handle(r->w->multi, r->easy);
  curl_easy_cleanup(r->easy);
  curl_slist_free_all(r->hdrs);
  r->easy = NULL;
  r->hdrs = NULL;
}
