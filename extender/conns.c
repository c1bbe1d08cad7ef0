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
 */
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <string.h>
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
