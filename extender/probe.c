/*
 * The probe listener: GET /healthz and GET /readyz on their own address
 * (--probe-listen), served by libmicrohttpd's own thread, so that neither
 * a flood of connections on the extender's port nor a long request on the
 * loop keeps the kubelet from its answer.
 *
 * This thread never touches the loop or the index. It reads atomics of its
 * own extender that the loop writes: the time the loop last turned (a timer
 * stamps it every 100 ms) and readiness. Liveness is "the loop turns":
 * /healthz fails only when the loop has been stuck for liveness_stall_ms.
 * Readiness is "the data is current", as the loop last said through
 * sf_extender_set_ready on this extender: other listeners of the process
 * (--debug-listen, --metrics-listen) have states of their own and never set
 * this one. Liveness also fails while the serving port cannot accept for
 * want of descriptors: a process that cannot take connections is of no use
 * until restarted or relieved.
 *
 * The listen socket is ours and a thread of ours accepts from it, handing
 * each connection to MHD's thread: MHD's own accept() spins (and logs each
 * turn) when it finds no descriptor while it has no connection. One spare
 * descriptor (/dev/null) is kept for the probes and given up for one when
 * accept() says EMFILE, so the kubelet gets its answer even then; the loop
 * refills it before the serving port takes a freed descriptor, so the
 * serving port's backlog cannot starve the probes. When even that fails the
 * thread waits RETRY_MS before trying again, never spinning.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
#include "ext_int.h"
#include "slicefit/log.h"

#define RETRY_MS 100

void sf__probe_beat(sf_extender_t *x)
{
  atomic_store(&x->probe_beat, sf__mono_ms());
}

void sf__probe_set_ready(sf_extender_t *x, bool ready)
{
  atomic_store(&x->probe_ready, ready);
}

uint64_t sf__probe_stall_ms(const sf_extender_t *x)
{
  uint64_t b = atomic_load(&x->probe_beat), now = sf__mono_ms();
  return now > b ? now - b : 0;
}

static enum MHD_Result answer(struct MHD_Connection *conn, unsigned status, const char *text)
{
  struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), (void *)(uintptr_t)text,
                                                           MHD_RESPMEM_MUST_COPY);
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
  enum MHD_Result ok = MHD_queue_response(conn, status, r);
  MHD_destroy_response(r);
  return ok;
}

static enum MHD_Result on_probe(void *cls, struct MHD_Connection *conn, const char *url,
                                const char *method, const char *version, const char *data,
                                size_t *size, void **con_cls)
{
  const sf_extender_t *x = cls;
  char msg[160];
  (void)version;
  (void)data;
  if (*con_cls == NULL) { /* the headers: answer at the next call */
    *con_cls = (void *)1;
    return MHD_YES;
  }
  if (*size) { /* a body on a probe is not read */
    *size = 0;
    return MHD_YES;
  }
  if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
    return answer(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "use GET\n");
  if (strcmp(url, "/healthz") == 0)
    return sf__alive(x, msg, sizeof msg) ? answer(conn, MHD_HTTP_OK, "ok\n")
                                         : answer(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, msg);
  if (strcmp(url, "/readyz") == 0)
    return atomic_load(&x->probe_ready) ? answer(conn, MHD_HTTP_OK, "ok\n")
                                        : answer(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
                                                 "not ready: the cluster state is not current\n");
  return answer(conn, MHD_HTTP_NOT_FOUND, "no such path\n");
}

bool sf__alive(const sf_extender_t *x, char *why, size_t cap)
{
  uint64_t stall = sf__probe_stall_ms(x);
  if (stall > x->cfg.liveness_stall_ms) {
    snprintf(why, cap, "the event loop has not turned for %llu ms\n", (unsigned long long)stall);
    return false;
  }
  if (atomic_load(&x->serve_short.on)) {
    uint64_t since = atomic_load(&x->serve_short.since_ms), now = sf__mono_ms();
    snprintf(why, cap,
             "the serving port cannot accept connections: out of file descriptors for %llu ms\n",
             (unsigned long long)(now > since ? now - since : 0));
    return false;
  }
  return true;
}

void sf__probe_spare_fill(sf_extender_t *x)
{
  int none = -1;
  if (x->probe_fd < 0 || atomic_load(&x->probe_spare) >= 0)
    return;
  int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (fd >= 0 && !atomic_compare_exchange_strong(&x->probe_spare, &none, fd))
    close(fd);
}

/*
 * Takes one connection for MHD, giving up the spare descriptor for it when
 * there is no other; false while the listener is short of descriptors
 * (until an accept() finds the backlog empty), so the caller tries again
 * after RETRY_MS.
 */
static bool take_one(sf_extender_t *x)
{
  struct sockaddr_storage ss;
  socklen_t len = sizeof ss;
  int fd = accept4(x->probe_fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd < 0 && sf__fd_low(errno)) {
    int spare = atomic_exchange(&x->probe_spare, -1);
    if (spare >= 0) {
      close(spare);
      len = sizeof ss;
      fd = accept4(x->probe_fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    }
  }
  int err = fd < 0 ? errno : 0;
  if (fd < 0)
    sf__fdshort_note(&x->probe_short, err == EAGAIN || err == EWOULDBLOCK ? 0 : err);
  else
    MHD_add_connection(x->probe, fd, (struct sockaddr *)&ss, len);
  sf__probe_spare_fill(x);
  return !atomic_load(&x->probe_short.on);
}

static void *accept_thread(void *arg)
{
  sf_extender_t *x = arg;
  bool waiting = false; /* out of descriptors: the listen socket is left alone RETRY_MS */
  sf__probe_spare_fill(x);
  for (;;) {
    struct pollfd pf[2] = {{.fd = x->probe_wake, .events = POLLIN},
                           {.fd = x->probe_fd, .events = POLLIN}};
    int n = poll(pf, waiting ? 1 : 2, waiting ? RETRY_MS : -1);
    if (n < 0 && errno != EINTR)
      break;
    if (pf[0].revents)
      break;
    if (waiting || pf[1].revents)
      waiting = !take_one(x);
    else
      sf__probe_spare_fill(x);
  }
  return NULL;
}

int sf__probe_start(sf_extender_t *x, char *err, size_t errlen)
{
  struct sockaddr_storage ss;
  if (x->cfg.probe_listen == NULL)
    return 0;
  int rc = sf__resolve(x->cfg.probe_listen, "--probe-listen", &ss, err, errlen);
  if (rc)
    return rc;
  sf__probe_beat(x); /* alive from the start: the sweep timer beats from then on */
  x->probe_fd = sf__listen_socket(&ss);
  if (x->probe_fd < 0) {
    snprintf(err, errlen, "cannot listen on %s (--probe-listen): %s", x->cfg.probe_listen,
             strerror(errno));
    return SF_EINVAL;
  }
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG |
                   MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC;
  if (ss.ss_family == AF_INET6)
    flags |= MHD_USE_IPv6;
  x->probe_log.listener = "probe";
  /* Small on purpose: a kubelet needs one or two connections. */
  x->probe = MHD_start_daemon(flags, 0, NULL, NULL, on_probe, x, MHD_OPTION_EXTERNAL_LOGGER,
                              sf__mhd_log, &x->probe_log, MHD_OPTION_CONNECTION_TIMEOUT, 5u,
                              MHD_OPTION_CONNECTION_LIMIT, 32u, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                              16u, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)16384, MHD_OPTION_END);
  x->probe_wake = x->probe ? eventfd(0, EFD_CLOEXEC) : -1;
  if (x->probe_wake < 0 || pthread_create(&x->probe_thread, NULL, accept_thread, x) != 0) {
    snprintf(err, errlen,
             "cannot serve on %s (--probe-listen): libmicrohttpd or its thread did "
             "not start",
             x->cfg.probe_listen);
    return SF_EINVAL;
  }
  x->probe_log.started = true;
  x->probe_thread_on = true;
  return 0;
}

void sf__probe_stop(sf_extender_t *x)
{
  if (x->probe_thread_on) {
    uint64_t one = 1;
    if (write(x->probe_wake, &one, sizeof one) != sizeof one)
      sf_log_warn("cannot wake the probe thread", "errno=%s", strerror(errno));
    pthread_join(x->probe_thread, NULL);
    x->probe_thread_on = false;
  }
  if (x->probe)
    MHD_stop_daemon(x->probe);
  x->probe = NULL;
  int spare = atomic_exchange(&x->probe_spare, -1);
  if (spare >= 0)
    close(spare);
  if (x->probe_wake >= 0)
    close(x->probe_wake);
  if (x->probe_fd >= 0)
    close(x->probe_fd);
  x->probe_wake = x->probe_fd = -1;
}

uint16_t sf_extender_probe_port(const sf_extender_t *x)
{
  return sf__socket_port(x->probe_fd);
}
