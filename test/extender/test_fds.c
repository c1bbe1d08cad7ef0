/*
 * Running short of file descriptors, with real processes on loopback and
 * RLIMIT_NOFILE set in the child before it runs bin/slicefit: the limit is
 * checked against the connections the flags allow at start (raised, or a
 * clear refusal); the serving port, out of descriptors at run time, fails
 * liveness, keeps its backlog and takes it as soon as descriptors free; a
 * probe arriving meanwhile is answered without spinning; each change is
 * logged once and counted.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "../../extender/ext_int.h"
#include "harness.h"

TestSuite(fds, .timeout = 120);

static void sleep_ms(long ms)
{
  nanosleep(&(struct timespec){ms / 1000, (ms % 1000) * 1000000L}, NULL);
}

/* Runs bin/slicefit with args under RLIMIT_NOFILE soft/hard; its exit status, output in out. */
static int run_limited(const char *const *args, rlim_t soft, rlim_t hard, char *out, size_t cap)
{
  int pfd[2];
  cr_assert_eq(pipe(pfd), 0);
  char exe[1024];
  snprintf(exe, sizeof exe, "%s", sfx_bin("slicefit"));
  const char *argv[32] = {exe};
  size_t n = 1;
  for (size_t i = 0; args[i] && n < 31; i++)
    argv[n++] = args[i];
  pid_t pid = fork();
  cr_assert(pid >= 0);
  if (pid == 0) {
    struct rlimit rl = {soft, hard};
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
      _exit(126);
    dup2(pfd[1], 1);
    dup2(pfd[1], 2);
    close(pfd[0]);
    alarm(20);
    execv(exe, (char *const *)(uintptr_t)argv);
    _exit(127);
  }
  close(pfd[1]);
  sfx_read_all(pfd[0], out, cap);
  int st;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(fds, a_hard_limit_below_the_connections_allowed_refuses_to_start)
{
  char out[4096], snap[1024];
  snprintf(snap, sizeof snap, "%s", sfx_path("extender/example-cluster.json"));
  const char *args[] = {"--snapshot",        snap,   "--listen", "127.0.0.1:0",
                        "--max-connections", "1000", NULL};
  cr_assert_eq(run_limited(args, 64, 64, out, sizeof out), 1, "%s", out);
  cr_assert(strstr(out, "\"cannot start\""), "%s", out);
  cr_assert(strstr(out, "file descriptor limit (RLIMIT_NOFILE, ulimit -n) is 64, hard 64"), "%s",
            out);
  cr_assert(strstr(out, "--max-connections 1000"), "%s", out);
  cr_assert(strstr(out, "lower --max-connections to 28"), "the figure that would fit: %s", out);
}

/* The soft limit of a process, from /proc/PID/limits. */
static long soft_nofile(pid_t pid)
{
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/limits", (int)pid);
  FILE *f = fopen(path, "r");
  cr_assert_not_null(f);
  long soft = -1;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "Max open files", 14) == 0)
      soft = atol(line + 26);
  fclose(f);
  return soft;
}

Test(fds, a_low_soft_limit_is_raised_to_what_the_flags_need)
{
  sfx_t s;
  char snap[1024];
  snprintf(snap, sizeof snap, "%s", sfx_path("extender/example-cluster.json"));
  const char *args[] = {"--snapshot", snap, "--probe-listen", "127.0.0.1:0", "--max-connections",
                        "200",        NULL};
  sfx_start_nofile(&s, args, 64, 4096);
  sf_daemon_options_t opt = {.snapshot = snap, .debug_listen = "127.0.0.1:0"};
  opt.http.max_connections = 200;
  opt.http.probe_listen = "127.0.0.1:0";
  long want = (long)sf__fd_need(&opt);
  cr_assert_gt(want, 200);
  cr_assert_eq(soft_nofile(s.pid), want);
  cr_assert_eq(sfx_log_count(&s, "\"raised the file descriptor limit\" from=64"), 1);
  cr_assert_eq(sfx_stop(&s), 0);
}

static int connect_to(unsigned port)
{
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0, "connect: %s", strerror(errno));
  return fd;
}

/* Waits (up to ms between bytes) for the answer on fd until the server closes; its status, or 0. */
static int answer_of(int fd, int ms)
{
  char buf[4096];
  size_t got = 0;
  while (got < sizeof buf - 1) {
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    if (poll(&pf, 1, ms) != 1)
      break;
    ssize_t k = read(fd, buf + got, sizeof buf - 1 - got);
    if (k <= 0)
      break;
    got += (size_t)k;
    buf[got] = '\0';
  }
  buf[got] = '\0';
  return strncmp(buf, "HTTP/1.1 ", 9) == 0 ? atoi(buf + 9) : 0;
}

/* The load: 200 clients at once under ulimit -n 64 are all answered. */
Test(fds, two_hundred_clients_under_ulimit_64_are_all_answered)
{
  sfx_t s;
  char snap[1024];
  snprintf(snap, sizeof snap, "%s", sfx_path("extender/example-cluster.json"));
  const char *args[] = {"--snapshot", snap, "--max-connections", "8", NULL};
  sfx_start_nofile(&s, args, 64, 64);
  enum { N = 200 };
  int fds[N];
  const char *req = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  for (int i = 0; i < N; i++) {
    fds[i] = connect_to(s.port);
    cr_assert_eq(write(fds[i], req, strlen(req)), (ssize_t)strlen(req));
  }
  for (int i = 0; i < N; i++) {
    cr_assert_eq(answer_of(fds[i], 10000), 200, "client %d of %d", i, N);
    close(fds[i]);
  }
  cr_assert_eq(sfx_log_count(&s, "out of file descriptors"), 0, "the limit was never reached");
  cr_assert_eq(sfx_stop(&s), 0);
}

/* The highest descriptor number the process holds. */
static int highest_fd(pid_t pid)
{
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
  DIR *d = opendir(path);
  cr_assert_not_null(d);
  int hi = -1;
  struct dirent *e;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.' && atoi(e->d_name) > hi)
      hi = atoi(e->d_name);
  closedir(d);
  return hi;
}

static void set_soft(pid_t pid, rlim_t soft, rlim_t hard)
{
  struct rlimit rl = {soft, hard};
  cr_assert_eq(prlimit(pid, RLIMIT_NOFILE, &rl, NULL), 0, "prlimit: %s", strerror(errno));
}

/* CPU seconds (user and system) the process has used. */
static double cpu_s(pid_t pid)
{
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  cr_assert_not_null(f);
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *p = strrchr(buf, ')');
  unsigned long ut = 0, st = 0;
  cr_assert_eq(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st), 2);
  return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static long log_bytes(const sfx_t *s)
{
  char *log = sfx_log(s);
  long n = (long)strlen(log);
  free(log);
  return n;
}

Test(fds, out_of_descriptors_the_port_fails_liveness_and_resumes_when_they_free)
{
  sfx_t s;
  char snap[1024], buf[2048];
  snprintf(snap, sizeof snap, "%s", sfx_path("extender/example-cluster.json"));
  const char *args[] = {"--snapshot", snap, "--probe-listen", "127.0.0.1:0", "--max-connections",
                        "64",         NULL};
  sfx_start_nofile(&s, args, 256, 256);
  char *log = sfx_log(&s);
  const char *pp = strstr(log, " probe_port=");
  unsigned probe = pp ? (unsigned)atoi(pp + 12) : 0;
  free(log);
  cr_assert_gt(probe, 0);
  cr_assert_eq(sfx_get_port(probe, "/healthz", buf, sizeof buf), 200, "%s", buf);
  /* The process runs out: no descriptor number above those it holds. */
  set_soft(s.pid, (rlim_t)highest_fd(s.pid) + 1, 256);
  /* Clients that hold their connections: the first fill what descriptors remain, the rest wait. */
  enum { N = 30 };
  int fds[N];
  for (int i = 0; i < N; i++)
    fds[i] = connect_to(s.port);
  long st = 0;
  for (int i = 0; i < 100 && st != 500; i++, sleep_ms(50))
    st = sfx_get_port(probe, "/healthz", buf, sizeof buf);
  cr_assert_eq(st, 500, "liveness fails while the port cannot accept: %s", buf);
  cr_assert(strstr(buf, "the serving port cannot accept connections: out of file descriptors"), "%s",
            buf);
  /* Probes keep coming while the process is out: answered, and no spinning, no flood. */
  double cpu0 = cpu_s(s.pid);
  long log0 = log_bytes(&s);
  for (int i = 0; i < 20; i++, sleep_ms(50))
    cr_assert_eq(sfx_get_port(probe, "/healthz", NULL, 0), 500);
  double cpu = cpu_s(s.pid) - cpu0;
  cr_assert_lt(cpu, 0.5, "%.2f CPU seconds in 1 s while out of descriptors", cpu);
  cr_assert_lt(log_bytes(&s) - log0, 4096, "the log grew %ld bytes", log_bytes(&s) - log0);
  cr_assert_eq(sfx_log_count(&s, "out of file descriptors; the backlog waits\" listener=\"serving\""),
               1, "logged once");
  /* Descriptors free: the backlog is taken and every client answered. */
  set_soft(s.pid, 256, 256);
  const char *req = "GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  for (int i = 0; i < N; i++)
    cr_assert_eq(write(fds[i], req, strlen(req)), (ssize_t)strlen(req));
  int answered = 0;
  for (int i = 0; i < N; i++) {
    answered += answer_of(fds[i], 5000) == 200;
    close(fds[i]);
  }
  cr_assert_eq(answered, N, "%d of %d clients answered once descriptors freed", answered, N);
  /* The next sweep (every 100 ms) finds the backlog empty and the descriptors free. */
  for (int i = 0; i < 40 && st != 200; i++, sleep_ms(50))
    st = sfx_get_port(probe, "/healthz", buf, sizeof buf);
  cr_assert_eq(st, 200, "%s", buf);
  cr_assert_eq(sfx_log_count(&s, "\"accepting connections again\" listener=\"serving\""), 1);
  cr_assert_eq(sfx_get_port(s.port, "/metrics", NULL, 0), 200);
  static char m[1 << 20];
  sfx_get_port(s.port, "/metrics", m, sizeof m);
  cr_assert(strstr(m, "\nslicefit_accept_fd_shortages_total{listener=\"serving\"} 1\n"), "%s",
            strstr(m, "slicefit_accept_fd") ? strstr(m, "slicefit_accept_fd") : m);
  cr_assert(strstr(m, "\nslicefit_accept_fd_short{listener=\"serving\"} 0\n"));
  cr_assert_eq(sfx_stop(&s), 0);
}

/* libmicrohttpd's messages: a burst per window, then a count of what was left out. */
static void mhd_say(sf__mhd_log_t *l, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  sf__mhd_log(l, fmt, ap);
  va_end(ap);
}

Test(fds, libmicrohttpd_messages_are_rate_limited)
{
  char path[] = "/tmp/sfx-mhdlog-XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  sf__mhd_log_t l = {.listener = "probe", .started = false};
  for (int i = 0; i < 1000; i++)
    mhd_say(&l, "Hit process or system resource limit at FIRST connection %d.\n", i);
  l.window_ms -= SF__MHD_LOG_WINDOW_MS; /* the window has passed */
  mhd_say(&l, "once more\n");
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  FILE *f = fopen(path, "r");
  char line[1024];
  int said = 0, left = 0, other = 0;
  while (fgets(line, sizeof line, f)) {
    if (strstr(line, "\"libmicrohttpd\" listener=\"probe\" message=\"Hit process"))
      said++;
    else if (strstr(line, "\"libmicrohttpd messages left out\" listener=\"probe\" count=995"))
      left++;
    else if (strstr(line, "message=\"once more\""))
      other++;
  }
  fclose(f);
  unlink(path);
  cr_assert_eq(said, SF__MHD_LOG_BURST);
  cr_assert_eq(left, 1);
  cr_assert_eq(other, 1);
}
