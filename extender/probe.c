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
 * this one.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "ext_int.h"
#include "slicefit/log.h"

static uint64_t mono_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void sf__probe_beat(sf_extender_t *x)
{
  atomic_store(&x->probe_beat, mono_ms());
}

void sf__probe_set_ready(sf_extender_t *x, bool ready)
{
  atomic_store(&x->probe_ready, ready);
}

uint64_t sf__probe_stall_ms(const sf_extender_t *x)
{
  uint64_t b = atomic_load(&x->probe_beat), now = mono_ms();
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
  char msg[128];
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
  if (strcmp(url, "/healthz") == 0) {
    uint64_t stall = sf__probe_stall_ms(x);
    if (stall <= x->cfg.liveness_stall_ms)
      return answer(conn, MHD_HTTP_OK, "ok\n");
    snprintf(msg, sizeof msg, "the event loop has not turned for %llu ms\n",
             (unsigned long long)stall);
    return answer(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, msg);
  }
  if (strcmp(url, "/readyz") == 0)
    return atomic_load(&x->probe_ready) ? answer(conn, MHD_HTTP_OK, "ok\n")
                                        : answer(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
                                                 "not ready: the cluster state is not current\n");
  return answer(conn, MHD_HTTP_NOT_FOUND, "no such path\n");
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
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
  if (ss.ss_family == AF_INET6)
    flags |= MHD_USE_IPv6;
  /* Small on purpose: a kubelet needs one or two connections. */
  x->probe = MHD_start_daemon(flags, 0, NULL, NULL, on_probe, x, MHD_OPTION_SOCK_ADDR, &ss,
                              MHD_OPTION_CONNECTION_TIMEOUT, 5u, MHD_OPTION_CONNECTION_LIMIT, 32u,
                              MHD_OPTION_PER_IP_CONNECTION_LIMIT, 16u,
                              MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)16384, MHD_OPTION_END);
  if (x->probe == NULL) {
    snprintf(err, errlen, "cannot listen on %s (--probe-listen)", x->cfg.probe_listen);
    return SF_EINVAL;
  }
  return 0;
}

void sf__probe_stop(sf_extender_t *x)
{
  if (x->probe)
    MHD_stop_daemon(x->probe);
  x->probe = NULL;
}

uint16_t sf_extender_probe_port(const sf_extender_t *x)
{
  if (x->probe == NULL)
    return 0;
  const union MHD_DaemonInfo *di = MHD_get_daemon_info(x->probe, MHD_DAEMON_INFO_BIND_PORT);
  return di ? di->port : 0;
}
