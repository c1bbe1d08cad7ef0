/*
 * The descriptors the daemon may need at once, checked against
 * RLIMIT_NOFILE before anything listens: every connection the flags allow
 * on each listener, the watch's connections to the API server, and a margin
 * for the rest (the loop, the thread pool, the epoll sets, the files read at
 * run time). A soft limit below it is raised as far as the hard limit
 * allows; a hard limit below it refuses to start, naming the figures, since
 * a process that runs out of descriptors stops accepting while it looks alive.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include "ext_int.h"
#include "slicefit/log.h"

#define FD_BASE 32    /* stdio, the loop, signals, the pool, epoll sets, files read */
#define FD_PROBE 40   /* the probe listener: 32 connections, its socket, epoll, spare */
#define FD_SIDE 20    /* a --debug-listen or --metrics-listen listener: 16 connections */
#define FD_WATCH 24   /* a watch per resource, a list and discovery at once */
#define FD_LISTENER 4 /* the serving port's socket and MHD's epoll */

static bool set(const char *s)
{
  return s && *s;
}

unsigned long sf__fd_need(const sf_daemon_options_t *opt)
{
  unsigned long n = FD_BASE + FD_LISTENER + (unsigned long)opt->http.max_connections;
  if (set(opt->http.probe_listen))
    n += FD_PROBE;
  if (set(opt->debug_listen))
    n += FD_SIDE;
  if (set(opt->metrics_listen))
    n += FD_SIDE;
  if (!set(opt->snapshot))
    n += FD_WATCH;
  return n;
}

int sf__fd_budget(const sf_daemon_options_t *opt, char *err, size_t errlen)
{
  struct rlimit rl;
  unsigned long need = sf__fd_need(opt);
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
    snprintf(err, errlen, "cannot read the file descriptor limit: %s", strerror(errno));
    return SF_EINVAL;
  }
  if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need)
    return 0;
  if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need) {
    unsigned long fixed = need - opt->http.max_connections;
    snprintf(err, errlen,
             "the file descriptor limit (RLIMIT_NOFILE, ulimit -n) is %llu, hard %llu; "
             "--max-connections %u with the probe, watch and side listeners needs %lu: raise "
             "the limit (the container runtime's nofile) or lower --max-connections to %llu",
             (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max,
             opt->http.max_connections, need,
             (unsigned long long)(rl.rlim_max > fixed ? rl.rlim_max - fixed : 0));
    return SF_EINVAL;
  }
  rlim_t was = rl.rlim_cur;
  rl.rlim_cur = need;
  if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
    snprintf(err, errlen, "cannot raise the file descriptor limit from %llu to %lu: %s",
             (unsigned long long)was, need, strerror(errno));
    return SF_EINVAL;
  }
  sf_log_info("raised the file descriptor limit", "from=%llu to=%lu hard=%llu max_connections=%u",
              (unsigned long long)was, need, (unsigned long long)rl.rlim_max,
              opt->http.max_connections);
  return 0;
}
