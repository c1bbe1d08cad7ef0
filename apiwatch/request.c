/*
 * Requests to the API server besides the watches (sf_apiwatch_request): the
 * Eviction API's POSTs. Each is one easy handle on the watcher's multi
 * handle, so it runs on the loop like the watches and never blocks it; the
 * watcher keeps the requests in flight in a list, which tells their easy
 * handles from the watches' when libcurl says one is done.
 */
#include <stdlib.h>
#include <string.h>
#include "watch_int.h"

struct sf__apireq {
  struct sf__apireq *next;
  sf_apiwatch_t *w;
  CURL *easy;
  struct curl_slist *hdrs;
  char *body; /* the request's, owned (libcurl reads it in place) */
  char *reply;
  size_t len, cap;
  bool too_big;
  sf_apiwatch_reply_cb cb;
  void *ud;
};

static size_t on_reply(char *p, size_t sz, size_t n, void *ud)
{
  sf__apireq_t *q = ud;
  size_t len = sz * n;
  if (q->len + len > MAX_ERR_BODY) {
    q->too_big = true;
    return len; /* the answer's status is what counts; its body is only cut */
  }
  sf_xgrow(&q->reply, &q->cap, q->len + len + 1, 1);
  memcpy(q->reply + q->len, p, len);
  q->len += len;
  q->reply[q->len] = '\0';
  return len;
}

static void req_free(sf__apireq_t *q)
{
  if (q->easy) {
    if (q->w->multi)
      curl_multi_remove_handle(q->w->multi, q->easy);
    curl_easy_cleanup(q->easy);
  }
  curl_slist_free_all(q->hdrs);
  free(q->body);
  free(q->reply);
  free(q);
}

static void unlink_req(sf__apireq_t *q)
{
  sf__apireq_t **pp = &q->w->reqs;
  while (*pp && *pp != q)
    pp = &(*pp)->next;
  if (*pp)
    *pp = q->next;
}

int sf_apiwatch_request(sf_apiwatch_t *w, const char *method, const char *path, const char *body,
                        sf_apiwatch_reply_cb cb, void *ud)
{
  if (!w->started || w->stopping)
    return SF_EINVAL;
  sf__apireq_t *q = sf_xcalloc(1, sizeof *q);
  q->w = w;
  q->cb = cb;
  q->ud = ud;
  q->body = body ? sf_xstrdup(body) : NULL;
  if (sf__curl_auth_headers(&w->o.kube, path, &q->hdrs)) {
    free(q->body);
    free(q);
    return SF_EINVAL;
  }
  if (body)
    q->hdrs = curl_slist_append(q->hdrs, "Content-Type: application/json");
  size_t ulen = strlen(w->o.kube.server) + strlen(path) + 1;
  char *url = sf_xmalloc(ulen);
  snprintf(url, ulen, "%s%s", w->o.kube.server, path);
  CURL *e = curl_easy_init();
  curl_easy_setopt(e, CURLOPT_URL, url);
  curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
  if (q->body)
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, q->body);
  curl_easy_setopt(e, CURLOPT_PRIVATE, q);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, q->hdrs);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_reply);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, q);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)w->o.request_timeout_ms);
  curl_easy_setopt(e, CURLOPT_USERAGENT, "slicefit/apiwatch");
  sf__curl_set_tls(e, &w->o.kube);
  free(url);
  q->easy = e;
  q->next = w->reqs;
  w->reqs = q;
  curl_multi_add_handle(w->multi, e);
  return 0;
}

bool sf__request_done(sf_apiwatch_t *w, CURL *easy, CURLcode result)
{
  sf__apireq_t *q = w->reqs;
  while (q && q->easy != easy)
    q = q->next;
  if (q == NULL)
    return false;
  long code = 0;
  if (result == CURLE_OK)
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
  unlink_req(q);
  const char *body = result == CURLE_OK ? (q->reply ? q->reply : "") : curl_easy_strerror(result);
  q->cb(q->ud, code, body, strlen(body));
  req_free(q);
  return true;
}

void sf__requests_abort(sf_apiwatch_t *w)
{
  while (w->reqs) {
    sf__apireq_t *q = w->reqs;
    w->reqs = q->next;
    req_free(q);
  }
}
