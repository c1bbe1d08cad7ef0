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
 *
 * The parts: watch.c (the helpers they share, libcurl on libuv, lifecycle),
 * watch_http.c (requests and the bytes of their responses), watch_sync.c
 * (lists, events to the sink, retries and backoff, finished transfers);
 * watch_int.h lays out the state.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <assert.h>
#include "watch_int.h"

/* ---- small helpers ---- */

uint64_t sf__watch_next_rand(sf_apiwatch_t *w)
{
  w->rng ^= w->rng << 13;
  w->rng ^= w->rng >> 7;
  w->rng ^= w->rng << 17;
  return w->rng;
}

/* A copy of `s` fit for a quoted log value: double quotes become single ones, backslashes
 * slashes, and control bytes '?', so the value can neither end early nor break the line. */
const char *sf__watch_logq(const char *s, char *out, size_t n)
{
  size_t i = 0;
  for (; s && s[i] && i + 1 < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    out[i] = ch == '"' ? '\'' : ch == '\\' ? '/' : ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
  }
  out[i] = '\0';
  return out;
}

/*
 * Times are the loop's monotonic milliseconds as they are; whether one was
 * ever recorded is a flag of its own, so no value of the clock is special
 * and an age is never computed from a time in the future.
 */
void sf__watch_confirm(res_t *r)
{
  r->confirmed = true;
  r->confirmed_ms = uv_now(r->w->loop);
}

void sf__watch_broken(res_t *r)
{
  if (r->broken)
    return;
  r->broken = true;
  r->broken_since = uv_now(r->w->loop);
}

uint64_t sf__watch_age_ms(uint64_t now, uint64_t since)
{
  return now > since ? now - since : 0;
}

bool sf__watch_res_current(const res_t *r, uint64_t now, uint64_t staleness_ms)
{
  if (!r->synced || !r->confirmed)
    return false;
  if (r->broken && sf__watch_age_ms(now, r->broken_since) > staleness_ms)
    return false;
  return sf__watch_age_ms(now, r->confirmed_ms) <= staleness_ms;
}

/* ---- libcurl on libuv ---- */

static void drain(sf_apiwatch_t *w)
{
  CURLMsg *m;
  int left;
  while ((m = curl_multi_info_read(w->multi, &left))) {
    if (m->msg != CURLMSG_DONE)
      continue;
    res_t *r = NULL;
    CURL *easy = m->easy_handle;
    CURLcode result = m->data.result;
    if (!w->stopping && sf__request_done(w, easy, result))
      continue;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&r);
    if (r && !w->stopping)
      sf__watch_finished(r, result);
  }
}

static void on_poll(uv_poll_t *h, int status, int events)
{
  poll_ctx_t *pc = h->data;
  int flags = 0, running;
  if (status < 0)
    flags = CURL_CSELECT_ERR;
  if (events & UV_READABLE)
    flags |= CURL_CSELECT_IN;
  if (events & UV_WRITABLE)
    flags |= CURL_CSELECT_OUT;
  curl_multi_socket_action(pc->w->multi, pc->s, flags, &running);
  drain(pc->w);
}

/* Poll handles carry their poll_ctx_t, timers (once closing) the watcher. */
static void on_closed(uv_handle_t *h)
{
  sf_apiwatch_t *w = h->type == UV_POLL ? ((poll_ctx_t *)h->data)->w : h->data;
  if (h->type == UV_POLL)
    free(h->data);
  if (--w->open_handles == 0 && w->stopping && w->done)
    w->done(w->done_ud);
}

static void close_poll(sf_apiwatch_t *w, poll_ctx_t *pc)
{
  if (pc->prev)
    pc->prev->next = pc->next;
  else
    w->polls = pc->next;
  if (pc->next)
    pc->next->prev = pc->prev;
  uv_poll_stop(&pc->h);
  uv_close((uv_handle_t *)&pc->h, on_closed);
}

static int on_socket(CURL *e, curl_socket_t s, int what, void *ud, void *sockp)
{
  sf_apiwatch_t *w = ud;
  poll_ctx_t *pc = sockp;
  (void)e;
  if (what == CURL_POLL_REMOVE) {
    if (pc)
      close_poll(w, pc);
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
    if (w->polls)
      w->polls->prev = pc;
    w->polls = pc;
    w->open_handles++;
    curl_multi_assign(w->multi, s, pc);
  }
  int ev = (what & CURL_POLL_IN ? UV_READABLE : 0) | (what & CURL_POLL_OUT ? UV_WRITABLE : 0);
  uv_poll_start(&pc->h, ev, on_poll);
  return 0;
}

static void on_curl_timer(uv_timer_t *t)
{
  sf_apiwatch_t *w = t->data;
  int running;
  curl_multi_socket_action(w->multi, CURL_SOCKET_TIMEOUT, 0, &running);
  drain(w);
}

static int on_timer_set(CURLM *m, long ms, void *ud)
{
  sf_apiwatch_t *w = ud;
  (void)m;
  if (ms < 0)
    uv_timer_stop(&w->curl_timer);
  else
    uv_timer_start(&w->curl_timer, on_curl_timer, (uint64_t)ms, 0);
  return 0;
}

/* ---- lifecycle ---- */

static res_t *add_res(sf_apiwatch_t *w, const char *name, const char *path, sf_kind_t kind)
{
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

static int add_policy_res(sf_apiwatch_t *w, const char *nsname, char *err, size_t errlen)
{
  const char *slash = strchr(nsname, '/');
  if (!slash || slash == nsname || !slash[1] || strchr(slash + 1, '/') || strlen(nsname) > 60 + 253) {
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

static void defaults(sf_apiwatch_opts_t *o)
{
  if (!o->page_size)
    o->page_size = 500;
  if (!o->staleness_ms)
    o->staleness_ms = 30000;
  if (!o->backoff_min_ms)
    o->backoff_min_ms = 200;
  if (!o->backoff_max_ms)
    o->backoff_max_ms = 30000;
  if (o->backoff_max_ms < o->backoff_min_ms)
    o->backoff_max_ms = o->backoff_min_ms;
  if (!o->request_timeout_ms)
    o->request_timeout_ms = 60000;
  if (!o->silent_ms)
    o->silent_ms = 30000;
  if (!o->stream_retry_ms)
    o->stream_retry_ms = 600000;
  if (!o->max_list_bytes)
    o->max_list_bytes = (size_t)1 << 30;
}

sf_apiwatch_t *sf_apiwatch_create_sink(uv_loop_t *loop, const sf_apiwatch_opts_t *opts, char *err,
                                       size_t errlen)
{
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

int sf_apiwatch_start(sf_apiwatch_t *w)
{
  if (w->started)
    return SF_EINVAL;
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
    if (w->res[i].after < 0)
      sf__watch_relist(&w->res[i]);
  return 0;
}

bool sf_apiwatch_synced(const sf_apiwatch_t *w)
{
  uint64_t now = uv_now(w->loop);
  if (!w->started || w->stopping)
    return false;
  for (size_t i = 0; i < w->nres; i++)
    if (!sf__watch_res_current(&w->res[i], now, w->o.staleness_ms))
      return false;
  return true;
}

size_t sf_apiwatch_ages(const sf_apiwatch_t *w, sf_apiwatch_age_t *out, size_t cap)
{
  uint64_t now = uv_now(w->loop);
  size_t n = 0;
  for (size_t i = 0; i < w->nres && n < cap; i++, n++) {
    const res_t *r = &w->res[i];
    out[n].resource = r->name;
    out[n].age_ms = r->confirmed ? sf__watch_age_ms(now, r->confirmed_ms) : UINT64_MAX;
  }
  return n;
}

void sf_apiwatch_stats(const sf_apiwatch_t *w, sf_apiwatch_stats_t *out)
{
  *out = w->st;
}

void sf_apiwatch_stop(sf_apiwatch_t *w, void (*done)(void *ud), void *ud)
{
  if (!w->started || w->stopping) {
    if (done)
      done(ud);
    return;
  }
  w->stopping = true;
  w->done = done;
  w->done_ud = ud;
  for (size_t i = 0; i < w->nres; i++) {
    sf__watch_detach(&w->res[i]);
    w->res[i].timer.data = w;
    uv_close((uv_handle_t *)&w->res[i].timer, on_closed);
  }
  sf__requests_abort(w);
  curl_multi_cleanup(w->multi);
  w->multi = NULL;
  while (w->polls)
    close_poll(w, w->polls);
  uv_close((uv_handle_t *)&w->curl_timer, on_closed);
}

void sf_apiwatch_destroy(sf_apiwatch_t *w)
{
  if (!w)
    return;
  for (size_t i = 0; i < w->nres; i++) {
    res_t *r = &w->res[i];
    free(r->path);
    free(r->selector);
    free(r->cont);
    free(r->body.p);
    json_decref(r->items);
    sf_listscan_dispose(&r->scan);
    sf_framer_dispose(&r->framer);
  }
  free(w->cm_name);
  if (w->started)
    curl_global_cleanup();
  free(w);
}
