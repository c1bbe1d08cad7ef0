/*
 * libmicrohttpd on the libuv loop. MHD runs in external-poll mode with its
 * own epoll set (MHD_USE_EPOLL): one uv_poll watches that single descriptor
 * and one uv_timer follows MHD_get_timeout, so MHD_run, and with it every
 * request handler, runs on the loop's thread and nowhere else.
 *
 * Requests are answered from the access handler once the body is complete;
 * the body is buffered up to max_body_bytes (413 past it, at once when
 * Content-Length says so), and the bytes all live requests hold (bodies and
 * replies) are bounded by max_buffered_bytes (503 with Retry-After past it).
 * A filter or prioritize body larger than offload_bytes is decoded on
 * libuv's thread pool while its connection is suspended, so one large
 * request does not hold up the others; the decoded arguments then come back
 * to the loop, which alone touches the index. Deadlines and the drain are
 * in conns.c. Untrusted input starts here: the method, the path, the
 * headers and the body all come from the network.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <malloc.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "ext_int.h"
#include "slicefit/log.h"

typedef struct {
  const sf__route_t *route; /* NULL once answered with an error at the headers */
  sf__conn_t *conn;         /* borrowed; NULL only if MHD gave no socket context */
  sf__buf_t body;
  sf__buf_t out;             /* the reply MHD is sending: freed or kept once it is done */
  unsigned long long expect; /* Content-Length, 0 when not given */
  uint64_t t0;
  size_t seen;     /* body bytes read */
  size_t charged;  /* bytes counted in x->buffered for this request */
  size_t reserved; /* of which reserved at the headers for the announced body */
  bool answered, too_big, busy;
  /* off-loop decoding */
  uv_work_t work;
  struct MHD_Connection *mc;
  sf_extender_t *x;
  bool decoding, decoded;
  sf__later_t *later; /* a reply being built on the pool, then its body is in `built` */
  bool built;
  sf__buf_t built_body;
  void *next_queued; /* the next request waiting for the pool (req_t *) */
  int args_rc;
  sf__args_t args;
  char args_err[SF_ERR_MAX];
} req_t;

void sf__reply_error(sf__reply_t *rep, unsigned status, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rep->reason, sizeof rep->reason, fmt, ap);
  va_end(ap);
  rep->status = status;
  rep->body.len = 0;
  sf__buf_puts(&rep->body, "{\"Error\":");
  sf__buf_json_str(&rep->body, rep->reason);
  sf__buf_printf(&rep->body, ",\"Code\":%u}", status);
}

/*
 * Buffers outlive their request: a filter's body is ~55 KB and its reply
 * ~0.4 MB at 5,000 nodes, and growing fresh ones each time cost a realloc
 * chain, page faults and malloc_consolidate on every call. A few are kept,
 * none larger than SPARE_MAX, so memory stays bounded.
 */
#define SPARE_MAX (8u << 20)

static sf__buf_t take_spare(sf_extender_t *x)
{
  if (x->nspare == 0)
    return (sf__buf_t){0};
  sf__buf_t b = x->spare[--x->nspare];
  b.len = 0;
  b.p[0] = '\0';
  return b;
}

static void give_spare(sf_extender_t *x, sf__buf_t *b)
{
  size_t keep = sizeof x->spare / sizeof x->spare[0];
  if (b->p && b->cap <= SPARE_MAX && x->nspare < keep && !x->destroyed)
    x->spare[x->nspare++] = *b;
  else
    free(b->p);
  *b = (sf__buf_t){0};
}

void sf__http_spares_dispose(sf_extender_t *x)
{
  while (x->nspare)
    free(x->spare[--x->nspare].p);
}

/* Copies `s` into dst as a double-quoted log value; control bytes become '?'. */
static const char *quote(char *dst, size_t cap, const char *s)
{
  size_t n = 0;
  dst[n++] = '"';
  for (; s && *s && n + 3 < cap; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\')
      dst[n++] = '\\';
    dst[n++] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
  }
  dst[n++] = '"';
  dst[n] = '\0';
  return dst;
}

static const char *remote(struct MHD_Connection *conn, char *buf, size_t cap)
{
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn,
                                                               MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  snprintf(buf, cap, "-");
  if (ci == NULL || ci->client_addr == NULL)
    return buf;
  const struct sockaddr *sa = ci->client_addr;
  char host[INET6_ADDRSTRLEN] = "?";
  unsigned port = 0;
  if (sa->sa_family == AF_INET) {
    const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    port = ntohs(in->sin_port);
  } else if (sa->sa_family == AF_INET6) {
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)sa;
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    port = ntohs(in6->sin6_port);
  }
  snprintf(buf, cap, "%s:%u", host, port);
  return buf;
}

static void log_reply(struct MHD_Connection *conn, const char *method, const char *url,
                      const sf__reply_t *rep, double secs)
{
  char path[256], why[SF_ERR_MAX + 8], peer[80];
  /* A 503 from /readyz is the state, logged by the daemon once per change, not per probe. */
  bool probe = rep->status == 503 && strcmp(url, "/readyz") == 0;
  if (rep->status >= 400 && !probe)
    sf_log_warn("request rejected", "method=%s path=%s status=%u reason=%s remote=%s",
                quote(why, 32, method), quote(path, sizeof path, url), rep->status,
                quote(why + 32, sizeof why - 32, rep->reason), remote(conn, peer, sizeof peer));
  else if (sf_log_enabled(SF_LOG_DEBUG))
    sf_log_debug("request served", "method=%s path=%s status=%u bytes=%zu dur_us=%.0f", method,
                 quote(path, sizeof path, url), rep->status, rep->body.len, secs * 1e6);
}

/* Counts bytes a live request holds; they are given back when it completes. */
static void charge(sf_extender_t *x, req_t *r, size_t n)
{
  r->charged += n;
  x->buffered += n;
}

static enum MHD_Result respond(sf_extender_t *x, struct MHD_Connection *conn, req_t *r,
                               const char *method, const char *url, sf__reply_t *rep)
{
  double secs = (double)(uv_hrtime() - r->t0) / 1e9;
  log_reply(conn, method, url, rep, secs);
  sf__stats_record(&x->stats[r->route ? r->route->stats : SF__V_OTHER], rep->status, secs);
  r->answered = true;
  /* MHD reads r->out until the request completes; on_completed then takes it back. */
  give_spare(x, &r->out);
  r->out = rep->body;
  rep->body = (sf__buf_t){0};
  struct MHD_Response *resp = MHD_create_response_from_buffer(r->out.len,
                                                              r->out.p ? r->out.p
                                                                       : (char *)(uintptr_t) "",
                                                              MHD_RESPMEM_PERSISTENT);
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                          rep->ctype ? rep->ctype : "application/json");
  if (rep->allow)
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, rep->allow);
  if (rep->status == MHD_HTTP_SERVICE_UNAVAILABLE && r->busy) {
    char ra[16];
    snprintf(ra, sizeof ra, "%u", x->cfg.retry_after_s);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, ra);
  }
  /* The last answer of a connection: draining, its quota of requests, or a request we refused to frame. */
  if (x->draining || rep->close ||
      (r->conn && x->cfg.keepalive_requests && r->conn->requests >= x->cfg.keepalive_requests))
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
  charge(x, r, r->out.len);
  enum MHD_Result ok = MHD_queue_response(conn, rep->status, resp);
  MHD_destroy_response(resp);
  return ok;
}

const char *sf__req_arg(const sf__req_t *req, const char *key)
{
  return req->mc ? MHD_lookup_connection_value(req->mc, MHD_GET_ARGUMENT_KIND, key) : NULL;
}

/* 404 for an unknown path, 405 (with Allow) for a known path and another method. */
static const sf__route_t *route(sf_extender_t *x, const char *method, const char *url,
                                sf__reply_t *rep)
{
  const sf__route_t *found = NULL;
  for (size_t i = 0; i < x->nroutes; i++) {
    if (strcmp(x->routes[i].path, url) != 0)
      continue;
    if (strcmp(x->routes[i].method, method) == 0)
      return &x->routes[i];
    found = &x->routes[i];
  }
  if (found) {
    rep->allow = found->method;
    sf__reply_error(rep, MHD_HTTP_METHOD_NOT_ALLOWED, "method %s is not allowed on %s; use %s",
                    method, url, found->method);
  } else {
    sf__reply_error(rep, MHD_HTTP_NOT_FOUND, "no such path: %s", url);
  }
  return NULL;
}

static void reply_too_big(sf_extender_t *x, sf__reply_t *rep, unsigned long long have)
{
  sf__reply_error(rep, MHD_HTTP_CONTENT_TOO_LARGE,
                  "request body of %llu bytes is larger than the limit of %zu bytes", have,
                  x->cfg.max_body_bytes);
}

/*
 * What a body may take of the bound: small bodies (a filter at 5,000 nodes
 * is 55 KB) also get a reserve of their own, so that a few large uploads
 * cannot starve ordinary calls.
 */
#define SMALL_BODY ((size_t)1 << 20)
#define SMALL_RESERVE ((size_t)8 << 20)

static bool over_budget(const sf_extender_t *x, size_t body_total, size_t more)
{
  size_t limit = x->cfg.max_buffered_bytes + (body_total <= SMALL_BODY ? SMALL_RESERVE : 0);
  return x->buffered + more > limit;
}

static void reply_busy(sf_extender_t *x, req_t *r, sf__reply_t *rep)
{
  r->busy = true;
  x->busy_rejects++;
  sf__reply_error(rep, MHD_HTTP_SERVICE_UNAVAILABLE,
                  "the server holds %zu bytes of requests, its limit is %zu; retry in %u s",
                  x->buffered, x->cfg.max_buffered_bytes, x->cfg.retry_after_s);
}

/*
 * Requests that are ambiguous to frame or to route are refused before their
 * body: a NUL in the path (MHD would route "/healthz%00junk" as /healthz),
 * HTTP/1.1 without Host, and Content-Length with Transfer-Encoding (request
 * smuggling); the connection is closed after that answer.
 */
static bool refuse_framing(struct MHD_Connection *conn, const sf__conn_t *c, const char *version,
                           sf__reply_t *rep)
{
  bool cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length") != NULL;
  bool te = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Transfer-Encoding") != NULL;
  if (c && c->bad_uri)
    sf__reply_error(rep, MHD_HTTP_BAD_REQUEST, "the path holds an encoded NUL byte (%%00)");
  else if (strcmp(version, MHD_HTTP_VERSION_1_1) == 0 &&
           MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Host") == NULL)
    sf__reply_error(rep, MHD_HTTP_BAD_REQUEST, "an HTTP/1.1 request needs a Host header");
  else if (cl && te)
    sf__reply_error(rep, MHD_HTTP_BAD_REQUEST,
                    "Content-Length and Transfer-Encoding together are not accepted");
  else
    return false;
  rep->close = true;
  return true;
}

/* The first call for a request: headers are in, the body is not. */
static enum MHD_Result begin(sf_extender_t *x, struct MHD_Connection *conn, const char *url,
                             const char *method, const char *version, void **con_cls)
{
  req_t *r = sf_xcalloc(1, sizeof *r);
  r->t0 = uv_hrtime();
  r->conn = sf__conn_of(conn);
  if (r->conn) {
    r->conn->in_request = true;
    r->conn->line_seen = false;
    r->conn->req_ms = uv_now(x->loop);
    r->conn->requests++;
  }
  *con_cls = r;
  x->inflight++;
  sf__reply_t rep = {0};
  enum MHD_Result ok = MHD_YES;
  if (!refuse_framing(conn, r->conn, version, &rep))
    r->route = route(x, method, url, &rep);
  const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
  unsigned long long len = cl ? strtoull(cl, NULL, 10) : 0;
  r->expect = len;
  if (r->route && len > x->cfg.max_body_bytes) {
    reply_too_big(x, &rep, len);
  } else if (r->route && over_budget(x, (size_t)len, (size_t)len)) {
    reply_busy(x, r, &rep);
  } else if (r->route) {
    /* The announced body is reserved now, so that concurrent uploads are refused at their headers. */
    r->reserved = (size_t)len;
    charge(x, r, r->reserved);
  }
  if (rep.status)
    ok = respond(x, conn, r, method, url, &rep);
  sf__buf_dispose(&rep.body);
  return ok;
}

static enum MHD_Result take_body(sf_extender_t *x, struct MHD_Connection *conn, req_t *r,
                                 const char *method, const char *url, const char *data, size_t *size)
{
  size_t n = *size;
  *size = 0;
  r->seen += n;
  if (r->answered)
    return MHD_YES;
  /* Past the bound on what all requests hold: this body is dropped and gets 503 at its end. */
  size_t total = r->body.len + n, held = r->body.len > r->reserved ? r->body.len : r->reserved;
  size_t more = total > held ? total - held : 0;
  if (!r->too_big && !r->busy && more && over_budget(x, total, more)) {
    sf__reply_t rep = {0};
    reply_busy(x, r, &rep);
    sf__buf_dispose(&rep.body);
    sf__buf_dispose(&r->body);
  }
  if (r->busy)
    return MHD_YES;
  if (!r->too_big && r->body.len + n <= x->cfg.max_body_bytes) {
    if (r->body.p == NULL) {
      r->body = take_spare(x);
      /* Room for the announced length, up to 1 MiB: a claimed size costs nothing unsent. */
      size_t want = r->expect < (1u << 20) ? (size_t)r->expect : (1u << 20);
      sf__buf_reserve(&r->body, want > n ? want : n);
    }
    sf__buf_put(&r->body, data, n);
    charge(x, r, more);
    return MHD_YES;
  }
  /*
   * A chunked body grew past the limit. MHD cannot answer in the middle of an
   * upload, so the rest is read and dropped and 413 goes out at its end; a
   * body that keeps coming past twice the limit loses its connection.
   */
  if (!r->too_big)
    sf__buf_dispose(&r->body);
  r->too_big = true;
  if (r->seen <= 2 * x->cfg.max_body_bytes)
    return MHD_YES;
  sf__reply_t rep = {0};
  reply_too_big(x, &rep, (unsigned long long)r->seen);
  log_reply(conn, method, url, &rep, (double)(uv_hrtime() - r->t0) / 1e9);
  sf__stats_record(&x->stats[r->route->stats], rep.status, 0);
  sf__buf_dispose(&rep.body);
  r->answered = true;
  return MHD_NO;
}

/* ---- decoding a large body off the loop ---- */

/* On a thread of libuv's pool: touches nothing but the request's own bytes. */
static void decode_work(uv_work_t *w)
{
  req_t *r = w->data;
  if (r->later) { /* the second trip: the reply */
    sf__later_t *l = r->later;
    if (l->filter)
      sf__filter_reply(&r->built_body, &l->args, l->v);
    else
      sf__prioritize_reply(&r->built_body, &l->args, l->v);
    sf__args_dispose(&l->args);
    free(l->v);
    return;
  }
  sf__limits_t lim = {r->x->cfg.max_nodes, r->x->cfg.max_depth, r->x->cfg.max_nodelist_bytes};
  r->args_rc = sf__args_parse(&r->args, r->body.p ? r->body.p : "", r->body.len, &lim, r->args_err,
                              sizeof r->args_err);
  if (r->args_rc == 0)
    sf__args_detach(&r->args);
}

static void decode_done(uv_work_t *w, int status);

/*
 * One body is decoded at a time: a NodeList's jansson tree is many times its
 * text, so decoding in parallel would multiply the peak memory. The others
 * wait, suspended, in arrival order.
 */
static void decode_next(sf_extender_t *x)
{
  req_t *r = x->decode_head;
  if (r == NULL || x->jobs > 0)
    return;
  x->decode_head = r->next_queued;
  if (x->decode_head == NULL)
    x->decode_tail = NULL;
  x->jobs++;
  uv_queue_work(x->loop, &r->work, decode_work, decode_done);
}

/* Back on the loop: MHD calls the access handler again, which answers. */
static void decode_done(uv_work_t *w, int status)
{
  req_t *r = w->data;
  sf_extender_t *x = r->x;
  (void)status;
  r->decoding = false;
  if (r->later) {
    free(r->later);
    r->later = NULL;
    r->built = true;
  }
  r->decoded = true;
  x->jobs--;
  x->queued--;
  MHD_resume_connection(r->mc);
  decode_next(x);
  sf__http_pump(x);
}

/* Suspends the connection until the pool has worked on the request (decode, or build the reply). */
static void enqueue(sf_extender_t *x, struct MHD_Connection *conn, req_t *r)
{
  r->decoding = true;
  r->x = x;
  r->mc = conn;
  r->work.data = r;
  r->next_queued = NULL;
  if (x->decode_tail)
    ((req_t *)x->decode_tail)->next_queued = r;
  else
    x->decode_head = r;
  x->decode_tail = r;
  x->queued++;
  MHD_suspend_connection(conn);
  decode_next(x);
}

static bool offload(sf_extender_t *x, struct MHD_Connection *conn, req_t *r)
{
  if (!r->route->offload || r->body.len <= x->cfg.offload_bytes || r->decoded)
    return false;
  enqueue(x, conn, r);
  return true;
}

/* Freed decode trees sit in the pool thread's malloc arena: give them back to the system there. */
static void trim_work(uv_work_t *w)
{
  (void)w;
  malloc_trim(0);
}

static void trim_done(uv_work_t *w, int status)
{
  (void)status;
  free(w);
}

static enum MHD_Result finish(sf_extender_t *x, struct MHD_Connection *conn, req_t *r,
                              const char *method, const char *url)
{
  if (r->answered || r->decoding)
    return MHD_YES;
  sf__reply_t rep = {.status = MHD_HTTP_OK};
  if (r->too_big || r->busy) {
    if (r->too_big)
      reply_too_big(x, &rep, (unsigned long long)r->seen);
    else
      reply_busy(x, r, &rep);
    enum MHD_Result ok = respond(x, conn, r, method, url, &rep);
    sf__buf_dispose(&rep.body);
    return ok;
  }
  if (r->built) { /* the reply the pool built */
    rep.body = r->built_body;
    r->built_body = (sf__buf_t){0};
    enum MHD_Result ok = respond(x, conn, r, method, url, &rep);
    sf__buf_dispose(&rep.body);
    return ok;
  }
  if (offload(x, conn, r))
    return MHD_YES;
  sf__req_t req = {.method = method,
                   .path = url,
                   .mc = conn,
                   .body = r->body.p ? r->body.p : "",
                   .len = r->body.len};
  if (r->decoded) {
    req.args = &r->args;
    req.args_rc = r->args_rc;
    req.args_err = r->args_err;
  }
  rep.body = take_spare(x);
  r->route->fn(x, &req, &rep);
  r->args = (sf__args_t){0}; /* the handler took them (and freed or moved them) */
  give_spare(x, &r->body);
  if (rep.later) {
    r->later = rep.later;
    sf__buf_dispose(&rep.body);
    enqueue(x, conn, r);
    return MHD_YES;
  }
  enum MHD_Result ok = respond(x, conn, r, method, url, &rep);
  sf__buf_dispose(&rep.body);
  return ok;
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version, const char *data,
                                 size_t *size, void **con_cls)
{
  sf_extender_t *x = cls;
  req_t *r = *con_cls;
  if (r == NULL)
    return begin(x, conn, url, method, version, con_cls);
  if (*size)
    return take_body(x, conn, r, method, url, data, size);
  return finish(x, conn, r, method, url);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
  sf_extender_t *x = cls;
  req_t *r = *con_cls;
  char peer[80];
  if (r == NULL)
    return;
  sf__conn_t *c = r->conn;
  if (c) {
    c->in_request = false;
    c->since_ms = uv_now(x->loop);
  }
  x->buffered -= r->charged;
  sf__args_dispose(&r->args); /* decoded but never handed to a handler (the peer went) */
  if (r->decoded) {
    uv_work_t *w = sf_xcalloc(1, sizeof *w);
    uv_queue_work(x->loop, w, trim_work, trim_done);
  }
  if (!r->answered || toe == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED)
    sf_log_warn("request aborted", "reason=%s remote=%s",
                c && c->killed                                  ? c->killed
                : toe == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED ? "timeout"
                : toe == MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN ? "shutdown"
                : toe == MHD_REQUEST_TERMINATED_CLIENT_ABORT    ? "client-closed"
                                                                : "error",
                remote(conn, peer, sizeof peer));
  give_spare(x, &r->body);
  give_spare(x, &r->out);
  sf__buf_dispose(&r->built_body);
  free(r);
  *con_cls = NULL;
  x->inflight--;
}

/*
 * MHD's own messages: warnings while starting (a bind failure), debug after;
 * either way no more than SF__MHD_LOG_BURST in a window, so that a library
 * that repeats itself in a tight loop cannot fill the disk.
 */
void sf__mhd_log(void *cls, const char *fmt, va_list ap)
{
  sf__mhd_log_t *l = cls;
  uint64_t now = sf__mono_ms();
  if (now - l->window_ms >= SF__MHD_LOG_WINDOW_MS) {
    if (l->suppressed)
      sf_log_warn("libmicrohttpd messages left out", "listener=%s count=%llu window_s=%u",
                  l->listener, (unsigned long long)l->suppressed, SF__MHD_LOG_WINDOW_MS / 1000);
    l->window_ms = now;
    l->in_window = 0;
    l->suppressed = 0;
  }
  if (l->in_window >= SF__MHD_LOG_BURST) {
    l->suppressed++;
    return;
  }
  l->in_window++;
  char msg[512], q[600];
  vsnprintf(msg, sizeof msg, fmt, ap);
  size_t n = strlen(msg);
  while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
    msg[--n] = '\0';
  sf_log(l->started ? SF_LOG_DEBUG : SF_LOG_WARN, "libmicrohttpd", "listener=%s message=%s",
         l->listener, sf_log_quote(q, sizeof q, msg));
}

/* ---- driving MHD from the loop ---- */

static void on_timer(uv_timer_t *t);
static void on_again(uv_idle_t *h);

void sf__http_pump(sf_extender_t *x)
{
  if (x->mhd == NULL)
    return;
  MHD_run(x->mhd);
  MHD_UNSIGNED_LONG_LONG ms;
  bool timed = MHD_get_timeout(x->mhd, &ms) == MHD_YES;
  /*
   * MHD has more to do at once (a client keeps sending, or pipelined
   * requests wait in its buffer): run it again in the loop's next turn, from
   * the idle handle, after the timers and the other descriptors. A 0 ms
   * timer restarted from its own callback would run again inside the same
   * uv__run_timers (libuv 1.44 compares with a loop time that does not move
   * there), so one client could hold the loop for as long as it sends.
   */
  if (timed && ms == 0) {
    uv_timer_stop(&x->timer);
    uv_idle_start(&x->again, on_again);
  } else {
    uv_idle_stop(&x->again);
    if (timed)
      uv_timer_start(&x->timer, on_timer, (uint64_t)ms, 0);
    else
      uv_timer_stop(&x->timer);
  }
}

static void on_timer(uv_timer_t *t)
{
  sf__http_pump(t->data);
}

static void on_again(uv_idle_t *h)
{
  sf__http_pump(h->data);
}

static void on_poll(uv_poll_t *p, int status, int events)
{
  (void)status;
  (void)events;
  sf__http_pump(p->data);
}

/* ---- start and stop ---- */

int sf__resolve(const char *listen, const char *flag, struct sockaddr_storage *ss, char *err,
                size_t errlen)
{
  char host[256];
  const char *colon = strrchr(listen, ':');
  size_t hl = colon ? (size_t)(colon - listen) : 0;
  if (colon == NULL || hl >= sizeof host || colon[1] == '\0') {
    snprintf(err, errlen, "%s %s: expected HOST:PORT", flag, listen);
    return SF_EINVAL;
  }
  memcpy(host, listen, hl);
  host[hl] = '\0';
  if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') { /* [::1]:8888 */
    memmove(host, host + 1, hl - 2);
    host[hl - 2] = '\0';
  }
  struct addrinfo hints = {.ai_family = AF_UNSPEC,
                           .ai_socktype = SOCK_STREAM,
                           .ai_flags = AI_PASSIVE | AI_NUMERICSERV},
                  *ai = NULL;
  int rc = getaddrinfo(host[0] ? host : NULL, colon + 1, &hints, &ai);
  if (rc != 0) {
    snprintf(err, errlen, "%s %s: %s", flag, listen, gai_strerror(rc));
    return SF_EINVAL;
  }
  memcpy(ss, ai->ai_addr, ai->ai_addrlen);
  freeaddrinfo(ai);
  return 0;
}

/* A path with a NUL is kept escaped, so it matches no route (see refuse_framing). */
static size_t unescape(void *cls, struct MHD_Connection *c, char *s)
{
  (void)cls;
  (void)c;
  size_t w = 0;
  for (size_t i = 0; s[i]; i++) {
    unsigned v;
    if (s[i] == '%' && isxdigit((unsigned char)s[i + 1]) && isxdigit((unsigned char)s[i + 2]) &&
        sscanf(s + i + 1, "%2x", &v) == 1 && v != 0) {
      s[w++] = (char)v;
      i += 2;
    } else {
      s[w++] = s[i];
    }
  }
  s[w] = '\0';
  return w;
}

static int start_mhd(sf_extender_t *x, const struct sockaddr_storage *ss, struct MHD_OptionItem *tls,
                     char *err, size_t errlen)
{
  /* The listen socket is ours (conns.c accepts from it): MHD is handed each connection. */
  unsigned flags = MHD_USE_EPOLL | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME |
                   MHD_USE_NO_LISTEN_SOCKET;
  x->listen_fd = sf__listen_socket(ss);
  if (x->listen_fd < 0) {
    snprintf(err, errlen, "cannot listen on %s: %s", x->cfg.listen, strerror(errno));
    return SF_EINVAL;
  }
  if (ss->ss_family == AF_INET6)
    flags |= MHD_USE_IPv6;
  if (x->tls)
    flags |= MHD_USE_TLS;
  x->serve_log.listener = x->serve_short.listener;
  x->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_access, x, MHD_OPTION_EXTERNAL_LOGGER,
                            sf__mhd_log, &x->serve_log, MHD_OPTION_CONNECTION_TIMEOUT,
                            x->cfg.conn_timeout_s, MHD_OPTION_CONNECTION_LIMIT,
                            x->cfg.max_connections, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                            x->cfg.max_connections_per_ip, MHD_OPTION_NOTIFY_COMPLETED, on_completed,
                            x, MHD_OPTION_NOTIFY_CONNECTION, sf__conn_notify, x,
                            MHD_OPTION_URI_LOG_CALLBACK, sf__conn_uri, x,
                            MHD_OPTION_UNESCAPE_CALLBACK, unescape, x, MHD_OPTION_ARRAY, tls,
                            MHD_OPTION_END);
  if (x->mhd == NULL) {
    snprintf(err, errlen, "cannot serve on %s: libmicrohttpd did not start", x->cfg.listen);
    return SF_EINVAL;
  }
  x->serve_log.started = true;
  return 0;
}

int sf__http_start(sf_extender_t *x, char *err, size_t errlen)
{
  struct sockaddr_storage ss;
  struct MHD_OptionItem tls[4];
  int rc = sf__resolve(x->cfg.listen, "--listen", &ss, err, errlen);
  if (rc == 0)
    rc = sf__tls_start(x, tls, err, errlen);
  if (rc == 0)
    rc = start_mhd(x, &ss, tls, err, errlen);
  if (rc == 0)
    rc = sf__probe_start(x, err, errlen);
  if (rc)
    return rc;
  const union MHD_DaemonInfo *di = MHD_get_daemon_info(x->mhd, MHD_DAEMON_INFO_EPOLL_FD);
  uv_poll_init(x->loop, &x->poll, di->epoll_fd);
  x->poll.data = x;
  x->nhandles++;
  x->poll_inited = true;
  uv_poll_start(&x->poll, UV_READABLE, on_poll);
  uv_poll_init(x->loop, &x->accept_poll, x->listen_fd);
  x->accept_poll.data = x;
  x->nhandles++;
  x->accept_inited = true;
  sf__conns_listen(x);
  sf__conns_start(x);
  sf__http_pump(x);
  return 0;
}

/*
 * Stops listening. Connections the kernel has accepted but MHD has not yet
 * taken are handed to MHD, so their requests are answered too.
 */
void sf__http_quiesce(sf_extender_t *x)
{
  if (x->mhd)
    sf__conns_unlisten(x);
}

void sf__http_stop(sf_extender_t *x)
{
  sf__probe_stop(x);
  if (x->mhd) {
    /* libuv must stop watching the epoll descriptor before MHD closes it. */
    uv_poll_stop(&x->poll);
    uv_timer_stop(&x->timer);
    uv_idle_stop(&x->again);
    uv_timer_stop(&x->reaper);
    uv_poll_stop(&x->accept_poll);
    MHD_stop_daemon(x->mhd);
    x->mhd = NULL;
  }
  if (x->listen_fd >= 0)
    close(x->listen_fd);
  x->listen_fd = -1;
  sf__tls_stop(x);
}

uint16_t sf_extender_port(const sf_extender_t *x)
{
  return sf__socket_port(x->listen_fd);
}

uint16_t sf__socket_port(int fd)
{
  struct sockaddr_storage ss;
  socklen_t len = sizeof ss;
  if (fd < 0 || getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
    return 0;
  if (ss.ss_family == AF_INET6)
    return ntohs(((const struct sockaddr_in6 *)(const void *)&ss)->sin6_port);
  return ntohs(((const struct sockaddr_in *)(const void *)&ss)->sin_port);
}
