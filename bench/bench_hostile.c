/*
 * bench_hostile: bin/slicefit under hostile clients. A benchmark,
 * never a test: it prints figures and exits 0 whatever they are. Loopback
 * only; every phase is bounded in count and time and stops by itself.
 *
 * It starts bin/slicefit on the example cluster with its default limits and
 * a probe listener, then measures, from a legitimate client at 127.0.0.2:
 *
 *   quiet      /healthz (extender port and probe port) and /filter latency
 *   attack     the same while 2,000 hostile connections from 127.0.0.1 are
 *              held open: half send one header byte every 2 s (slowloris),
 *              half send nothing; each one closed is opened again
 *   large      /healthz and /filter latency while another client sends NodeList filters
 *              as large as the default --max-nodelist-bytes takes (100,000
 *              small Nodes; 48,000 Nodes with 13 labels), decoded by jansson
 *   bodies     the daemon's peak RSS (VmHWM) while 10 clients each send a
 *              maximum body (100,000 names of 253 characters, 25.4 MB) at
 *              once, and how many of them got 503 for the buffered-bytes bound
 *
 *   loop       slicefit_event_loop_lag_max_seconds after each phase: how late
 *              the daemon's 100 ms sweep timer ran at worst, i.e. the longest
 *              any one request could have waited behind another
 *   summary    the worst loop lag and the worst p99 of /healthz and /filter
 *              over the attack and large phases (the target: 100 ms)
 *
 * usage: bench_hostile [REQUESTS]   (REQUESTS per measured series, default 200)
 * RLIMIT_NOFILE is raised to 8,192 (the 2,000 connections need their fds).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HOSTILE 2000
#define LOG "build/bench-hostile.log"

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
  fprintf(stderr, "bench_hostile: %s (%s)\n", what, strerror(errno));
  exit(1);
}

static void sleep_ms(long ms)
{
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* ---- the daemon ---- */

static unsigned log_port(const char *key)
{
  FILE *f = fopen(LOG, "r");
  char line[4096];
  unsigned port = 0;
  while (f && fgets(line, sizeof line, f)) {
    const char *p = strstr(line, "] \"serving\""); /* klog: the message follows the source */
    const char *q = p ? strstr(p, key) : NULL;
    if (q)
      port = (unsigned)atoi(q + strlen(key));
  }
  if (f)
    fclose(f);
  return port;
}

static pid_t spawn(unsigned *port, unsigned *probe)
{
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (freopen(LOG, "w", stderr) == NULL)
      _exit(127);
    execl("bin/slicefit", "slicefit", "--snapshot", "extender/example-cluster.json", "--policy",
          "extender/example-policy.json", "--listen", "127.0.0.1:0", "--probe-listen", "127.0.0.1:0",
          (char *)NULL);
    _exit(127);
  }
  for (int i = 0; i < 1000 && *port == 0; i++) {
    sleep_ms(10);
    *port = log_port(" port=");
    *probe = log_port(" probe_port=");
    if (waitpid(pid, NULL, WNOHANG) == pid)
      die("bin/slicefit exited; see " LOG);
  }
  if (*port == 0)
    die("bin/slicefit did not start");
  return pid;
}

static long status_kib(pid_t pid, const char *key)
{
  char path[64], line[256];
  long kib = -1;
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  FILE *f = fopen(path, "r");
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, key, strlen(key)) == 0)
      kib = atol(line + strlen(key));
  if (f)
    fclose(f);
  return kib;
}

/* ---- raw HTTP/1.1 ---- */

static int dial(unsigned port, const char *src)
{
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return -1;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (src) {
    struct sockaddr_in b = {.sin_family = AF_INET};
    inet_pton(AF_INET, src, &b.sin_addr);
    if (bind(fd, (struct sockaddr *)&b, sizeof b) != 0) {
      close(fd);
      return -1;
    }
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

static bool send_all(int fd, const char *p, size_t n)
{
  while (n) {
    ssize_t k = write(fd, p, n);
    if (k <= 0)
      return false;
    p += k;
    n -= (size_t)k;
  }
  return true;
}

/* Reads one response (headers, then Content-Length bytes); its status, or -1. 60 s at most. */
static int read_reply(int fd)
{
  static char buf[1 << 20];
  size_t got = 0, need = 0, dropped = 0;
  char *body = NULL;
  int status = 0;
  double t0 = now_s();
  while (now_s() - t0 < 60) {
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    if (poll(&pf, 1, 1000) != 1)
      continue;
    ssize_t k = read(fd, buf + got, sizeof buf - 1 - got);
    if (k <= 0)
      return -1;
    got += (size_t)k;
    buf[got] = '\0';
    if (body == NULL && (body = strstr(buf, "\r\n\r\n")) != NULL) {
      body += 4;
      const char *cl = strcasestr(buf, "Content-Length:");
      need = (size_t)(body - buf) + (cl ? (size_t)atol(cl + 15) : 0);
      status = atoi(buf + 9);
    }
    if (body && dropped + got >= need)
      return status;
    if (body && got == sizeof buf - 1) { /* a large body: keep counting, drop the bytes */
      dropped += got;
      got = 0;
    }
  }
  return -1;
}

typedef struct {
  unsigned port;
  int fd; /* keep-alive, from 127.0.0.2 */
  const char *req;
  size_t len;
} client_t;

/* One round trip in ms; reconnects when the server closed the connection. */
static double roundtrip(client_t *c, int *status)
{
  double t0 = now_s();
  for (int attempt = 0; attempt < 2; attempt++) {
    if (c->fd < 0)
      c->fd = dial(c->port, "127.0.0.2");
    if (c->fd >= 0 && send_all(c->fd, c->req, c->len) && (*status = read_reply(c->fd)) > 0)
      return (now_s() - t0) * 1e3;
    if (c->fd >= 0)
      close(c->fd);
    c->fd = -1;
  }
  *status = -1;
  return (now_s() - t0) * 1e3;
}

static int cmp_d(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The worst p99 of each kind of request over the phases under load, and the worst loop lag. */
static double worst_health_p99, worst_filter_p99, worst_lag_ms;

static void worst(double *w, double v)
{
  if (v > *w)
    *w = v;
}

static double series(const char *phase, const char *what, client_t *c, size_t n)
{
  double *v = calloc(n, sizeof *v);
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    int st;
    v[i] = roundtrip(c, &st);
    bad += st != 200;
  }
  qsort(v, n, sizeof *v, cmp_d);
  printf("%-8s %-22s n=%zu p50=%.2f ms p99=%.2f ms max=%.2f ms errors=%zu\n", phase, what, n,
         v[n / 2], v[n * 99 / 100], v[n - 1], bad);
  double p99 = v[n * 99 / 100];
  free(v);
  return p99;
}

/* ---- the attacker (a child process) ---- */

static void attack(unsigned port, double secs)
{
  struct pollfd *pf = calloc(HOSTILE, sizeof *pf);
  double *next = calloc(HOSTILE, sizeof *next);
  size_t sent[HOSTILE] = {0};
  unsigned long reopened = 0;
  const char *head = "POST /filter HTTP/1.1\r\nHost: x\r\nX-Slow: ";
  for (int i = 0; i < HOSTILE; i++) {
    pf[i].fd = dial(port, "127.0.0.1");
    pf[i].events = POLLIN;
  }
  double t0 = now_s();
  while (now_s() - t0 < secs) {
    poll(pf, HOSTILE, 200);
    double t = now_s();
    for (int i = 0; i < HOSTILE; i++) {
      char b[512];
      if (pf[i].fd >= 0 && (pf[i].revents & (POLLIN | POLLHUP | POLLERR)) &&
          read(pf[i].fd, b, sizeof b) <= 0) {
        close(pf[i].fd);
        pf[i].fd = -1;
        next[i] = t + 0.2; /* open it again a little later, not in a tight loop */
      }
      if (pf[i].fd < 0) {
        if (t < next[i])
          continue;
        pf[i].fd = dial(port, "127.0.0.1");
        sent[i] = 0;
        reopened++;
        next[i] = t;
        continue;
      }
      /* Odd ones trickle their headers, one byte every 2 s; even ones stay idle. */
      if (i % 2 && t >= next[i]) {
        char ch = sent[i] < strlen(head) ? head[sent[i]] : 'a';
        if (write(pf[i].fd, &ch, 1) == 1)
          sent[i]++;
        next[i] = t + 2;
      }
    }
  }
  fprintf(stderr, "attacker: %lu connections reopened after the server closed them\n", reopened);
  _exit(0);
}

/* ---- bodies ---- */

static char *filter_request(size_t *len)
{
  const char *pod =
      "{\"metadata\":{\"namespace\":\"tenants\",\"name\":\"agent-sandbox-7\",\"uid\":\"u1\"},"
      "\"spec\":{\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimTemplateName\":\"single-gpu\"}]}}";
  const char *nodes = "[\"h100-0\",\"a100-0\",\"rtx-2\",\"rtx-4\",\"rtx-5\"]";
  char body[2048];
  int bl = snprintf(body, sizeof body, "{\"Pod\":%s,\"NodeNames\":%s}", pod, nodes);
  char *req = malloc(4096);
  *len = (size_t)snprintf(req, 4096,
                          "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                          "Content-Length: %d\r\n\r\n%s",
                          bl, body);
  return req;
}

/* 100,000 names of 253 characters: the largest body the default limit takes. */
static char *max_body(size_t *len)
{
  size_t cap = 100000 * 256 + 4096;
  char *b = malloc(cap);
  size_t n = (size_t)sprintf(b, "{\"Pod\":{\"metadata\":{\"namespace\":\"default\",\"name\":\"web\","
                                "\"uid\":\"w\"},\"spec\":{}},\"NodeNames\":[");
  for (int i = 0; i < 100000; i++) {
    n += (size_t)sprintf(b + n, "%s\"%06d", i ? "," : "", i);
    memset(b + n, 'n', 247);
    n += 247;
    b[n++] = '"';
  }
  n += (size_t)sprintf(b + n, "]}");
  *len = n;
  return b;
}

/* `count` Node objects; `fat` gives each 12 short labels more (many small JSON values). */
static char *nodelist_body(size_t *len, int count, bool fat)
{
  size_t cap = 100000 * 300 + 4096;
  char *b = malloc(cap);
  size_t n = (size_t)sprintf(b, "{\"Pod\":{\"metadata\":{\"namespace\":\"default\",\"name\":\"web\","
                                "\"uid\":\"w\"},\"spec\":{}},\"Nodes\":{\"items\":[");
  for (int i = 0; i < count; i++) {
    n += (size_t)sprintf(b + n,
                         "%s{\"metadata\":{\"name\":\"node-%06d\",\"labels\":{\"kubernetes.io/"
                         "hostname\":\"node-%06d\"",
                         i ? "," : "", i, i);
    for (int k = 0; fat && k < 12; k++)
      n += (size_t)sprintf(b + n, ",\"l%02d\":\"v%d\"", k, k);
    n += (size_t)sprintf(b + n, "}},\"spec\":{},\"status\":{}}");
  }
  n += (size_t)sprintf(b + n, "]}}");
  *len = n;
  return b;
}

/* Resets the daemon's VmHWM, so that each phase reports its own peak. */
static void reset_peak(pid_t pid)
{
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/clear_refs", (int)pid);
  FILE *f = fopen(path, "w");
  if (f) {
    fputs("5", f);
    fclose(f);
  }
}

/* Sends one POST /filter with `body` on a new connection from 127.0.0.3; its status. */
static int post_big(unsigned port, const char *body, size_t len)
{
  int fd = dial(port, "127.0.0.3");
  char head[256];
  int hl =
      snprintf(head, sizeof head,
               "POST /filter HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: %zu\r\n\r\n",
               len);
  int st = -1;
  /* A refusal comes before the body is all sent: read the answer even when sending failed. */
  if (fd >= 0 && send_all(fd, head, (size_t)hl))
    send_all(fd, body, len);
  if (fd >= 0)
    st = read_reply(fd);
  if (fd >= 0)
    close(fd);
  return st;
}

static void phase_large(pid_t daemon, unsigned port, client_t *health, client_t *filter, int count,
                        bool fat)
{
  size_t len;
  char *body = nodelist_body(&len, count, fat);
  reset_peak(daemon);
  pid_t kid = fork();
  if (kid == 0) {
    for (int i = 0; i < 3; i++)
      post_big(port, body, len);
    _exit(0);
  }
  /* /healthz and a small /filter, in turn, back to back for as long as the large requests last. */
  size_t cap = 200000, got[2] = {0, 0}, bad[2] = {0, 0};
  double *v[2] = {calloc(cap, sizeof(double)), calloc(cap, sizeof(double))}, t0 = now_s();
  client_t *c[2] = {health, filter};
  for (int i = 0; waitpid(kid, NULL, WNOHANG) == 0 && got[1] < cap && now_s() - t0 < 120; i ^= 1) {
    int st;
    v[i][got[i]++] = roundtrip(c[i], &st);
    bad[i] += st != 200;
  }
  double secs = now_s() - t0;
  static const char *const what[2] = {"/healthz (extender)", "/filter"};
  for (int i = 0; i < 2; i++) {
    size_t n = got[i] ? got[i] : 1;
    qsort(v[i], got[i], sizeof(double), cmp_d);
    printf("large    %-22s n=%zu p50=%.2f ms p99=%.2f ms max=%.2f ms errors=%zu "
           "(during 3 filters of %d Nodes, %zu bytes each, %.1f s; daemon peak RSS %ld KiB)\n",
           what[i], got[i], v[i][n / 2], v[i][n * 99 / 100], v[i][n - 1], bad[i], count, len, secs,
           status_kib(daemon, "VmHWM:"));
    worst(i ? &worst_filter_p99 : &worst_health_p99, v[i][n * 99 / 100]);
    free(v[i]);
  }
  waitpid(kid, NULL, 0);
  free(body);
}

/* The daemon's slicefit_event_loop_lag_max_seconds so far (the longest one turn held the loop). */
static void print_lag(unsigned port, const char *after)
{
  static const char req[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  int fd = dial(port, "127.0.0.2");
  static char buf[1 << 16];
  size_t got = 0;
  ssize_t k;
  if (fd >= 0 && send_all(fd, req, sizeof req - 1))
    while (got < sizeof buf - 1 && (k = read(fd, buf + got, sizeof buf - 1 - got)) > 0)
      got += (size_t)k;
  buf[got] = '\0';
  const char *lag = strstr(buf, "\nslicefit_event_loop_lag_max_seconds ");
  double ms = lag ? atof(lag + 38) * 1e3 : -1.0;
  printf("loop     longest hold of the event loop so far (after %s): %.1f ms\n", after, ms);
  worst(&worst_lag_ms, ms);
  if (fd >= 0)
    close(fd);
}

static void phase_bodies(pid_t daemon, unsigned port)
{
  size_t len;
  char *body = max_body(&len);
  long before = status_kib(daemon, "VmRSS:");
  reset_peak(daemon);
  int pipefd[2];
  if (pipe(pipefd) != 0)
    die("pipe");
  pid_t kids[10];
  for (int i = 0; i < 10; i++) {
    kids[i] = fork();
    if (kids[i] == 0) {
      int st = post_big(port, body, len);
      if (write(pipefd[1], &st, sizeof st) != sizeof st)
        _exit(1);
      _exit(0);
    }
  }
  int codes[600] = {0};
  for (int i = 0; i < 10; i++) {
    int st = -1;
    if (read(pipefd[0], &st, sizeof st) == sizeof st && st >= 0 && st < 600)
      codes[st]++;
  }
  for (int i = 0; i < 10; i++)
    waitpid(kids[i], NULL, 0);
  long hwm = status_kib(daemon, "VmHWM:"), after = status_kib(daemon, "VmRSS:");
  printf("bodies   10 x %zu-byte bodies at once: 200=%d 503=%d 413=%d other=%d; RSS %ld KiB "
         "before, peak (VmHWM) %ld KiB, %ld KiB after\n",
         len, codes[200], codes[503], codes[413], 10 - codes[200] - codes[503] - codes[413], before,
         hwm, after);
  free(body);
}

int main(int argc, char **argv)
{
  size_t n = argc > 1 ? (size_t)atol(argv[1]) : 200;
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max < 8192 ? rl.rlim_max : 8192;
  setrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_cur < HOSTILE + 200)
    fprintf(stderr, "bench_hostile: only %lu descriptors; the attack will be smaller\n",
            (unsigned long)rl.rlim_cur);
  signal(SIGPIPE, SIG_IGN);
  unsigned port = 0, probe = 0;
  pid_t daemon = spawn(&port, &probe);
  size_t flen;
  char *freq = filter_request(&flen);
  static const char health_req[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  client_t filter = {port, -1, freq, flen}, health = {port, -1, health_req, sizeof health_req - 1},
           probes = {probe, -1, health_req, sizeof health_req - 1};
  series("quiet", "/healthz (extender)", &health, n);
  series("quiet", "/healthz (probe port)", &probes, n);
  series("quiet", "/filter", &filter, n);
  printf("quiet    daemon RSS %ld KiB\n", status_kib(daemon, "VmRSS:"));

  pid_t att = fork();
  if (att == 0)
    attack(port, 40);
  sleep_ms(3000); /* the connections are open, the slow ones have sent a byte or two */
  worst(&worst_health_p99, series("attack", "/healthz (extender)", &health, n));
  series("attack", "/healthz (probe port)", &probes, n);
  worst(&worst_filter_p99, series("attack", "/filter", &filter, n));
  printf("attack   daemon RSS %ld KiB\n", status_kib(daemon, "VmRSS:"));
  kill(att, SIGKILL);
  waitpid(att, NULL, 0);
  sleep_ms(500);
  print_lag(port, "attack");

  /* The largest NodeLists the default --max-nodelist-bytes (12 MiB) takes. */
  phase_large(daemon, port, &health, &filter, 100000, false);
  print_lag(port, "large");
  phase_large(daemon, port, &health, &filter, 48000, true);
  print_lag(port, "large, fat");
  phase_bodies(daemon, port);

  print_lag(port, "end");
  /* The target: under load no request waits more than 100 ms behind another. */
  printf("summary  worst loop lag %.1f ms; worst p99 under load: /healthz %.2f ms, /filter %.2f ms "
         "(attack and large phases)\n",
         worst_lag_ms, worst_health_p99, worst_filter_p99);
  kill(daemon, SIGTERM);
  waitpid(daemon, NULL, 0);
  free(freq);
  return 0;
}
