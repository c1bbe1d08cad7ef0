/*
 * Every accepted connection, and the deadlines libmicrohttpd does not keep.
 *
 * MHD's own connection timeout is an inactivity timeout: each byte resets
 * it, so a client sending one header byte every few seconds holds a slot
 * for ever. Here each connection has hard deadlines instead, measured on
 * the loop's clock by a sweep every SWEEP_MS:
 *
 *   opened ........ headers complete ........ answer sent ....... next headers
 *   |<- header_timeout ->|<---- request_timeout ---->|<- conn_timeout (idle) ->|
 *
 * (a later request line on a keep-alive connection starts a fresh
 * header_timeout). A connection past its deadline is shut down with
 * shutdown(2): MHD sees the peer go and closes it as usual, so the
 * descriptor is never closed under MHD.
 *
 * While draining, a connection with no request under way (no request line
 * since its last answer, no unread bytes in the kernel) is shut down too;
 * one whose request is already on the wire is left to be answered, and the
 * answer says Connection: close.
 *
 * Accepting is done here, not by MHD (which runs with no listen socket and
 * is handed each connection): MHD stops accepting for good when accept()
 * fails with EMFILE while it has connections (it waits for one of them to
 * close, then for a next MHD_run that an idle loop never makes), and spins
 * when it has none. Here a failing accept() pauses the listen socket's
 * uv_poll, the connections waiting stay in the kernel's backlog, and the
 * sweep tries again every SWEEP_MS (a closed connection, at once): Linux
 * reserves the descriptor before it looks at the backlog, so an accept()
 * that says EAGAIN proves descriptors are free again. The same pause holds
 * the backlog at max_connections.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "ext_int.h"
#include "slicefit/log.h"

#define SWEEP_MS 100

sf__conn_t *sf__conn_of(struct MHD_Connection *mc)
{
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(mc,
                                                               MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return ci ? ci->socket_context : NULL;
}

void sf__conn_notify(void *cls, struct MHD_Connection *mc, void **socket_context,
                     enum MHD_ConnectionNotificationCode toe)
{
  sf_extender_t *x = cls;
  sf__conn_t *c = *socket_context;
  if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
    c = sf_xcalloc(1, sizeof *c);
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(mc,
                                                                 MHD_CONNECTION_INFO_CONNECTION_FD);
    c->mc = mc;
    c->fd = ci ? ci->connect_fd : -1;
    c->since_ms = uv_now(x->loop);
    c->next = x->conns;
    if (x->conns)
      x->conns->prev = c;
    x->conns = c;
    x->nconns++;
    *socket_context = c;
    return;
  }
  if (c == NULL)
    return;
  /* A slot, and maybe a descriptor, is free: the backlog is looked at in the loop's next turn. */
  if (x->accept_paused && !x->draining)
    sf__conns_listen(x);
  if (c->prev)
    c->prev->next = c->next;
  else
    x->conns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  x->nconns--;
  free(c);
  *socket_context = NULL;
}

void *sf__conn_uri(void *cls, const char *uri, struct MHD_Connection *mc)
{
  sf_extender_t *x = cls;
  sf__conn_t *c = sf__conn_of(mc);
  if (c) {
    c->line_seen = true;
    c->line_ms = uv_now(x->loop);
    /* MHD unescapes the path into a C string, so %00 would cut it short unseen. */
    c->bad_uri = strstr(uri, "%00") != NULL;
  }
  return NULL;
}

static void kill_conn(sf_extender_t *x, sf__conn_t *c, int why)
{
  static const char *const names[SF__KILL_COUNT] = {"header-deadline", "idle", "timeout", "drain"};
  if (c->killed || c->fd < 0)
    return;
  c->killed = names[why];
  x->kills[why]++;
  shutdown(c->fd, SHUT_RDWR);
}

static bool unread_bytes(int fd)
{
  int n = 0;
  return ioctl(fd, FIONREAD, &n) == 0 && n > 0;
}

/* The connection's deadline now, in loop ms, and which one it is. */
static uint64_t deadline(const sf_extender_t *x, const sf__conn_t *c, int *why)
{
  uint64_t header = (uint64_t)x->cfg.header_timeout_s * 1000;
  if (c->in_request) {
    *why = SF__KILL_REQUEST;
    return c->req_ms + (uint64_t)x->cfg.request_timeout_s * 1000;
  }
  *why = SF__KILL_HEADERS;
  if (c->requests == 0)
    return c->since_ms + header;
  if (c->line_seen)
    return c->line_ms + header;
  *why = SF__KILL_IDLE;
  return c->since_ms + (uint64_t)x->cfg.conn_timeout_s * 1000;
}

void sf__conns_sweep(sf_extender_t *x)
{
  uint64_t now = uv_now(x->loop);
  for (sf__conn_t *c = x->conns; c; c = c->next) {
    int why;
    if (now > deadline(x, c, &why))
      kill_conn(x, c, why);
    else if (x->draining && !c->in_request && !c->line_seen && !unread_bytes(c->fd))
      kill_conn(x, c, SF__KILL_DRAIN);
  }
}

/* Also the loop's heartbeat for liveness, and the certificate files' check. */
static void on_sweep(uv_timer_t *t)
{
  sf_extender_t *x = t->data;
  static unsigned ticks;
  /* How late this tick is: the longest the loop was held by one turn, roughly. */
  uint64_t now = uv_hrtime(), lag = x->last_sweep_ns ? now - x->last_sweep_ns : 0;
  lag = lag > SWEEP_MS * 1000000ull ? lag - SWEEP_MS * 1000000ull : 0;
  if (lag > x->max_lag_ns)
    x->max_lag_ns = lag;
  x->last_sweep_ns = now;
  sf__conns_sweep(x);
  /* Paused, or short with nothing arriving to prove otherwise: look at the backlog now. */
  if ((x->accept_paused || atomic_load(&x->serve_short.on)) && !x->draining)
    sf__conns_accept(x);
  sf__probe_beat(x);
  unsigned every = x->cfg.tls_reload_s ? x->cfg.tls_reload_s * (1000 / SWEEP_MS) : 0;
  if (x->tls && every && ++ticks % every == 0)
    sf__tls_check(x);
}

void sf__conns_start(sf_extender_t *x)
{
  sf__probe_beat(x);
  uv_timer_start(&x->reaper, on_sweep, SWEEP_MS, SWEEP_MS);
}

/* ---- accepting ---- */

uint64_t sf__mono_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

bool sf__fd_low(int err)
{
  return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
}

/* Called with the errno of a failed accept(), or 0 when it found the backlog empty. */
void sf__fdshort_note(sf__fdshort_t *s, int err)
{
  bool low = sf__fd_low(err), was = atomic_load(&s->on);
  if (low == was)
    return;
  if (low) {
    atomic_store(&s->since_ms, sf__mono_ms());
    atomic_fetch_add(&s->events, 1);
    atomic_store(&s->on, true);
    sf_log_warn("cannot accept connections: out of file descriptors; the backlog waits",
                "listener=%s errno=%s", s->listener, strerror(err));
    return;
  }
  atomic_store(&s->on, false);
  sf_log_info("accepting connections again", "listener=%s short_ms=%llu", s->listener,
              (unsigned long long)(sf__mono_ms() - atomic_load(&s->since_ms)));
}

int sf__listen_socket(const struct sockaddr_storage *ss)
{
  int one = 1, fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  socklen_t len = ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                            : sizeof(struct sockaddr_in);
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      bind(fd, (const struct sockaddr *)ss, len) != 0 || listen(fd, SOMAXCONN) != 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

static void on_listen(uv_poll_t *p, int status, int events)
{
  (void)status;
  (void)events;
  sf__conns_accept(p->data);
}

void sf__conns_listen(sf_extender_t *x)
{
  if (x->listen_fd < 0)
    return;
  x->accept_paused = false;
  uv_poll_start(&x->accept_poll, UV_READABLE, on_listen);
}

static void pause_accepting(sf_extender_t *x)
{
  x->accept_paused = true;
  uv_poll_stop(&x->accept_poll);
}

/* A burst of connections is taken a batch at a time, so the loop turns in between. */
#define ACCEPT_BATCH 64

void sf__conns_accept(sf_extender_t *x)
{
  int added = 0;
  sf__probe_spare_fill(x); /* a freed descriptor goes to the probes first */
  for (int i = 0; i < ACCEPT_BATCH && x->listen_fd >= 0; i++) {
    if (x->nconns >= x->cfg.max_connections) {
      pause_accepting(x);
      break;
    }
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    int fd = accept4(x->listen_fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    int err = fd < 0 ? errno : 0;
    if (err == EINTR || err == ECONNABORTED || err == EPROTO)
      continue;
    /* Only an empty backlog ends a shortage: one connection taken in between does not. */
    if (fd < 0)
      sf__fdshort_note(&x->serve_short, err == EAGAIN || err == EWOULDBLOCK ? 0 : err);
    if (sf__fd_low(err))
      pause_accepting(x);
    else if (x->accept_paused && fd < 0)
      sf__conns_listen(x); /* resumed by the sweep: nothing waiting, so watch for more */
    if (fd < 0)
      break;
    /* MHD closes the socket itself when it refuses it (the per-address limit). */
    MHD_add_connection(x->mhd, fd, (struct sockaddr *)&ss, len);
    added++;
  }
  if (added)
    sf__http_pump(x);
}

void sf__conns_unlisten(sf_extender_t *x)
{
  if (x->listen_fd < 0)
    return;
  uv_poll_stop(&x->accept_poll);
  for (;;) {
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    int fd = accept4(x->listen_fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
      break;
    MHD_add_connection(x->mhd, fd, (struct sockaddr *)&ss, len);
  }
  close(x->listen_fd);
  x->listen_fd = -1;
  sf__http_pump(x);
}
