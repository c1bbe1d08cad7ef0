/*
 * The processes the end-to-end test drives and how it talks to them: the
 * fake kube-apiserver (commands on stdin, one reply line each on stdout),
 * bin/slicefit (HTTP on loopback, logs to a file), libcurl for HTTP.
 */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "e2e.h"

int64_t e2e_now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void e2e_sleep_ms(int ms)
{
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

const char *e2e_top(void)
{
  const char *t = getenv("SLICEFIT_TOP");
  return t && *t ? t : ".";
}

const char *e2e_bin(const char *name)
{
  static char path[PATH_MAX + 64];
  const char *bin = getenv("SLICEFIT_BIN");
  if (bin && *bin)
    snprintf(path, sizeof path, "%s/%s", bin, name);
  else
    snprintf(path, sizeof path, "%s/bin/%s", e2e_top(), name);
  return path;
}

const char *e2e_tool(const char *name)
{
  static char path[PATH_MAX + 64];
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  char *dir = dirname(exe);
  snprintf(path, sizeof path, "%s/tools/%s", dir, name);
  /* A benchmark runs from build/<variant>/bench/, beside tools/. */
  if (access(path, X_OK) != 0)
    snprintf(path, sizeof path, "%s/../tools/%s", dir, name);
  return path;
}

/* ---- every process this test started, until it is reaped ---- */

#define MAX_STARTED 16
static pid_t started[MAX_STARTED];

static void track(pid_t pid)
{
  for (size_t i = 0; pid > 0 && i < MAX_STARTED; i++)
    if (started[i] == 0) {
      started[i] = pid;
      return;
    }
}

static void untrack(pid_t pid)
{
  for (size_t i = 0; pid > 0 && i < MAX_STARTED; i++)
    if (started[i] == pid)
      started[i] = 0;
}

size_t e2e_reap_strays(char *why, size_t len)
{
  size_t n = 0, off = 0;
  if (len)
    why[0] = '\0';
  for (size_t i = 0; i < MAX_STARTED; i++) {
    pid_t pid = started[i];
    started[i] = 0;
    if (pid <= 0 || waitpid(pid, NULL, WNOHANG) == pid)
      continue; /* exited, and only reaped now */
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    if (off < len)
      off += (size_t)snprintf(why + off, len - off, "%s%d", n ? ", " : "", (int)pid);
    n++;
  }
  return n;
}

/* ---- the fake kube-apiserver ---- */

int e2e_apiserver_start(e2e_apiserver_t *a, const char *token, const char *log)
{
  int in[2], out[2];
  memset(a, 0, sizeof *a);
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
    return -1;
  const char *tool = e2e_tool("fake-apiserver");
  a->pid = fork();
  if (a->pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0)
      dup2(fd, 2);
    execl(tool, tool, "--token", token, (char *)NULL);
    _exit(127);
  }
  track(a->pid);
  close(in[0]);
  close(out[1]);
  a->in = fdopen(in[1], "w");
  a->out = fdopen(out[0], "r");
  char line[128] = "";
  if (a->pid < 0 || !fgets(line, sizeof line, a->out) || sscanf(line, "port %u", &a->port) != 1)
    return -1;
  return 0;
}

static int reply(e2e_apiserver_t *a, char *buf, size_t len)
{
  char tmp[256];
  if (buf == NULL) {
    buf = tmp;
    len = sizeof tmp;
  }
  if (!fgets(buf, (int)len, a->out))
    return -1;
  buf[strcspn(buf, "\n")] = '\0';
  return strncmp(buf, "ok", 2) == 0 ? 0 : -1;
}

int e2e_apiserver_cmd(e2e_apiserver_t *a, char *buf, size_t len, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vfprintf(a->in, fmt, ap);
  va_end(ap);
  fputc('\n', a->in);
  fflush(a->in);
  return reply(a, buf, len);
}

int e2e_apiserver_put(e2e_apiserver_t *a, const char *res, const json_t *obj)
{
  char *s = json_dumps(obj, JSON_COMPACT);
  fprintf(a->in, "put %s %s\n", res, s);
  fflush(a->in);
  free(s);
  return reply(a, NULL, 0);
}

void e2e_apiserver_stop(e2e_apiserver_t *a)
{
  if (a->in) {
    fputs("quit\n", a->in);
    fclose(a->in);
  }
  if (a->out)
    fclose(a->out);
  if (a->pid > 0) {
    waitpid(a->pid, NULL, 0);
    untrack(a->pid);
  }
  memset(a, 0, sizeof *a);
}

int e2e_kubeconfig_write(const char *path, unsigned port, const char *token)
{
  FILE *f = fopen(path, "w");
  if (f == NULL)
    return -1;
  fprintf(f,
          "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n"
          "    server: http://127.0.0.1:%u\nusers:\n- name: slicefit\n  user:\n    token: %s\n"
          "contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: slicefit\n"
          "current-context: fake\n",
          port, token);
  return fclose(f) == 0 ? 0 : -1;
}

/* ---- bin/slicefit ---- */

int e2e_slicefit_start(e2e_slicefit_t *s, const char *dir, const char *const *args)
{
  char bin[PATH_MAX], listen[64];
  const char *argv[32];
  size_t n = 0;
  static unsigned seq;
  memset(s, 0, sizeof *s);
  snprintf(bin, sizeof bin, "%s", e2e_bin("slicefit"));
  /* Port 0: the daemon binds a free port and logs it (no race with other tests). */
  snprintf(listen, sizeof listen, "--listen=127.0.0.1:0");
  snprintf(s->log, sizeof s->log, "%s/slicefit-%u.log", dir, seq++);
  argv[n++] = bin;
  argv[n++] = listen;
  argv[n++] = "--debug-listen=127.0.0.1:0"; /* /debug/state, on a second free port */
  for (size_t i = 0; args && args[i] && n < 31; i++)
    argv[n++] = args[i];
  argv[n] = NULL;
  s->pid = fork();
  if (s->pid == 0) {
    int fd = open(s->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    execv(bin, (char *const *)(uintptr_t)argv);
    _exit(127);
  }
  track(s->pid);
  return s->pid > 0 ? 0 : -1;
}

/* The value of ` key=N` on the daemon's `] "serving"` log line, or 0 while it is not there. */
static unsigned logged_port(const char *log, const char *key)
{
  FILE *f = fopen(log, "r");
  char line[1024];
  unsigned port = 0;
  while (f && port == 0 && fgets(line, sizeof line, f)) {
    const char *p = strstr(line, "] \"serving\"") ? strstr(line, key) : NULL;
    if (p)
      port = (unsigned)strtoul(p + strlen(key), NULL, 10);
  }
  if (f)
    fclose(f);
  return port;
}

/* Serving port -> its --debug-listen port, for e2e_http's /debug/ requests. */
static struct {
  unsigned port, debug;
} debug_ports[16];

static void remember_debug_port(unsigned port, unsigned debug)
{
  static size_t next;
  size_t i = next++ % 16;
  debug_ports[i].port = port;
  debug_ports[i].debug = debug;
}

static unsigned debug_port_of(unsigned port)
{
  for (size_t i = 0; i < 16; i++)
    if (debug_ports[i].port == port)
      return debug_ports[i].debug;
  return 0;
}

int e2e_slicefit_wait_ready(e2e_slicefit_t *s, int deadline_ms)
{
  int64_t end = e2e_now_ms() + deadline_ms;
  do {
    if (s->port == 0) {
      s->port = logged_port(s->log, " port=");
      s->debug_port = logged_port(s->log, " debug_port=");
      if (s->port)
        remember_debug_port(s->port, s->debug_port);
    }
    if (s->port && e2e_http(s->port, "GET", "/readyz", NULL, NULL) == 200)
      return 0;
    if (waitpid(s->pid, NULL, WNOHANG) == s->pid)
      return -1; /* it exited */
    e2e_sleep_ms(10);
  } while (e2e_now_ms() < end);
  return -1;
}

int e2e_slicefit_stop(e2e_slicefit_t *s)
{
  int st = 0;
  if (s->pid <= 0)
    return -1;
  kill(s->pid, SIGTERM);
  int64_t end = e2e_now_ms() + 5000;
  pid_t r;
  while ((r = waitpid(s->pid, &st, WNOHANG)) == 0 && e2e_now_ms() < end)
    e2e_sleep_ms(5);
  if (r == 0) {
    kill(s->pid, SIGKILL);
    waitpid(s->pid, &st, 0);
    st = -1;
  }
  untrack(s->pid);
  s->pid = 0;
  return st < 0 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int e2e_slicefit_kill(e2e_slicefit_t *s)
{
  int st = 0;
  if (s->pid <= 0)
    return -1;
  kill(s->pid, SIGKILL);
  waitpid(s->pid, &st, 0);
  untrack(s->pid);
  s->pid = 0;
  return WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL ? 0 : -1;
}

void e2e_rmdir(const char *dir)
{
  if (getenv("SLICEFIT_E2E_KEEP"))
    return;
  DIR *d = opendir(dir);
  struct dirent *e;
  char path[PATH_MAX];
  while (d && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.')
      continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    unlink(path);
  }
  if (d)
    closedir(d);
  rmdir(dir);
}

/* ---- HTTP ---- */

static char ca_path[PATH_MAX]; /* set: https, verified against this CA */

int e2e_tls_make(const char *dir, char *cert, char *key, size_t len)
{
  char cmd[3 * PATH_MAX];
  snprintf(cert, len, "%s/tls.crt", dir);
  snprintf(key, len, "%s/tls.key", dir);
  /* A self-signed serving certificate for the Service name and loopback, its own CA. */
  snprintf(cmd, sizeof cmd,
           "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
           "-subj /CN=slicefit.slicefit-system.svc -addext "
           "subjectAltName=DNS:slicefit.slicefit-system.svc,IP:127.0.0.1 "
           "-keyout %s -out %s 2>%s/openssl.log",
           key, cert, dir);
  return system(cmd) == 0 ? 0 : -1;
}

void e2e_http_use_ca(const char *ca)
{
  snprintf(ca_path, sizeof ca_path, "%s", ca ? ca : "");
}

typedef struct {
  char *p;
  size_t n;
} sink_t;

static size_t on_data(char *data, size_t size, size_t nmemb, void *ud)
{
  sink_t *b = ud;
  size_t len = size * nmemb;
  char *p = realloc(b->p, b->n + len + 1);
  if (p == NULL)
    return 0;
  memcpy(p + b->n, data, len);
  b->p = p;
  b->n += len;
  b->p[b->n] = '\0';
  return len;
}

/*
 * One handle per port, kept: connections are reused (keep-alive, and TLS
 * sessions), as kube-scheduler's Go client does. A restarted replica has a
 * new port; the oldest handle makes room.
 */
static CURL *handle(unsigned port)
{
  static struct {
    unsigned port;
    CURL *c;
  } cache[8];
  static size_t next;
  for (size_t i = 0; i < 8; i++)
    if (cache[i].c && cache[i].port == port) {
      curl_easy_reset(cache[i].c);
      return cache[i].c;
    }
  size_t i = next++ % 8;
  if (cache[i].c)
    curl_easy_cleanup(cache[i].c);
  cache[i].port = port;
  cache[i].c = curl_easy_init();
  return cache[i].c;
}

long e2e_http(unsigned port, const char *method, const char *path, const char *body, char **out)
{
  char url[256];
  sink_t b = {NULL, 0};
  long code = -1;
  struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
  /* /debug/ is served on the replica's --debug-listen port, in plain HTTP. */
  unsigned dport = strncmp(path, "/debug/", 7) == 0 ? debug_port_of(port) : 0;
  bool tls = ca_path[0] && dport == 0;
  port = dport ? dport : port;
  CURL *c = handle(port);
  snprintf(url, sizeof url, "%s://127.0.0.1:%u%s", tls ? "https" : "http", port, path);
  curl_easy_setopt(c, CURLOPT_URL, url);
  if (tls)
    curl_easy_setopt(c, CURLOPT_CAINFO, ca_path);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L); /* kube-scheduler's default httpTimeout */
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  if (body) {
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
  }
  if (curl_easy_perform(c) == CURLE_OK)
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
  curl_slist_free_all(hdr);
  if (out)
    *out = b.p;
  else
    free(b.p);
  return code;
}

json_t *e2e_http_json(unsigned port, const char *method, const char *path, const json_t *body,
                      long *status)
{
  char *req = body ? json_dumps(body, JSON_COMPACT) : NULL, *resp = NULL;
  long code = e2e_http(port, method, path, req, &resp);
  json_t *v = resp ? json_loads(resp, JSON_DISABLE_EOF_CHECK, NULL) : NULL;
  if (status)
    *status = code;
  free(req);
  free(resp);
  return v;
}

static double series_value(const char *text, const char *series)
{
  size_t n = strlen(series);
  for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
    if (strncmp(l, series, n) == 0 && l[n] == ' ')
      return strtod(l + n + 1, NULL);
  return -1;
}

int e2e_metrics(unsigned port, const char *const *series, double *out, size_t n)
{
  char *text = NULL;
  long st = e2e_http(port, "GET", "/metrics", NULL, &text);
  for (size_t i = 0; i < n; i++)
    out[i] = st == 200 && text ? series_value(text, series[i]) : -1;
  free(text);
  return st == 200 ? 0 : -1;
}
