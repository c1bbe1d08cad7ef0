/* The integration-test harness (see harness.h). */
#include "harness.h"
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *sfx_path(const char *rel)
{
  static char buf[1024];
  const char *top = getenv("SLICEFIT_TOP");
  snprintf(buf, sizeof buf, "%s/%s", top ? top : ".", rel);
  return buf;
}

const char *sfx_bin(const char *prog)
{
  static char buf[1024];
  const char *bin = getenv("SLICEFIT_BIN"), *top = getenv("SLICEFIT_TOP");
  if (bin && *bin)
    snprintf(buf, sizeof buf, "%s/%s", bin, prog);
  else
    snprintf(buf, sizeof buf, "%s/bin/%s", top ? top : ".", prog);
  return buf;
}

char *sfx_log(const sfx_t *s)
{
  return sfx_read_file(s->log_path);
}

char *sfx_read_file(const char *path)
{
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return strdup("");
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = calloc(1, (size_t)n + 1);
  size_t got = fread(buf, 1, (size_t)n, f);
  buf[got] = '\0';
  fclose(f);
  return buf;
}

int sfx_log_count(const sfx_t *s, const char *needle)
{
  char *log = sfx_log(s);
  int n = 0;
  for (const char *p = log; (p = strstr(p, needle)) != NULL; p += strlen(needle))
    n++;
  free(log);
  return n;
}

static void sleep_ms(long ms)
{
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Waits for the "serving" line and takes the port from it. */
static void wait_serving(sfx_t *s)
{
  for (int i = 0; i < 1000; i++) {
    char *log = sfx_log(s);
    /* klog text, or a JSON line with --logging-format=json. */
    const char *p = strstr(log, "] \"serving\""), *j = strstr(log, "\"msg\":\"serving\"");
    const char *q = p ? strstr(p, " port=") : j ? strstr(j, ",\"port\":") : NULL;
    const char *dq = p ? strstr(p, " debug_port=") : j ? strstr(j, ",\"debug_port\":") : NULL;
    if (q)
      s->port = (unsigned)atoi(q + (p ? 6 : 8));
    if (dq)
      s->debug_port = (unsigned)atoi(dq + (p ? 12 : 14));
    free(log);
    if (s->port)
      return;
    int st;
    if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
      char *l = sfx_log(s);
      cr_assert_fail("bin/slicefit exited before serving: %s", l);
    }
    sleep_ms(10);
  }
  cr_assert_fail("bin/slicefit did not start serving in 10 s");
}

/* RLIMIT_NOFILE for the next daemon started, or 0 to leave the test's. */
static struct rlimit next_nofile;

void sfx_start_nofile(sfx_t *s, const char *const *args, unsigned long soft, unsigned long hard)
{
  next_nofile = (struct rlimit){soft, hard};
  sfx_start(s, args);
}

void sfx_start(sfx_t *s, const char *const *args)
{
  struct rlimit nofile = next_nofile;
  next_nofile = (struct rlimit){0, 0};
  memset(s, 0, sizeof *s);
  strcpy(s->dir, "/tmp/sfx-XXXXXX");
  cr_assert_not_null(mkdtemp(s->dir));
  snprintf(s->log_path, sizeof s->log_path, "%s/log.txt", s->dir);
  char exe[1024];
  snprintf(exe, sizeof exe, "%s", sfx_bin("slicefit"));
  const char *argv[40] = {exe};
  size_t n = 1;
  argv[n++] = "--listen";
  argv[n++] = "127.0.0.1:0";
  /* /debug/state on a second free port (the test's args may name another). */
  argv[n++] = "--debug-listen=127.0.0.1:0";
  for (size_t i = 0; args && args[i] && n < 38; i++) {
    argv[n++] = args[i];
    s->tls |= strcmp(args[i], "--tls-cert-file") == 0;
  }
  s->pid = fork();
  cr_assert(s->pid >= 0);
  if (s->pid == 0) {
    /* The daemon dies with the test process, even when an assertion ends the test early. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (nofile.rlim_max && setrlimit(RLIMIT_NOFILE, &nofile) != 0)
      _exit(126);
    int fd = open(s->log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 1);
    dup2(fd, 2);
    execv(argv[0], (char *const *)(uintptr_t)argv);
    _exit(127);
  }
  wait_serving(s);
  s->curl = curl_easy_init();
}

void sfx_start_example(sfx_t *s, const char *const *extra)
{
  char snap[1024], pol[1024];
  snprintf(snap, sizeof snap, "%s", sfx_path("extender/example-cluster.json"));
  snprintf(pol, sizeof pol, "%s", sfx_path("extender/example-policy.json"));
  const char *args[32] = {"--snapshot", snap, "--policy", pol};
  size_t n = 4;
  for (size_t i = 0; extra && extra[i] && n < 31; i++)
    args[n++] = extra[i];
  sfx_start(s, args);
}

void sfx_cleanup(sfx_t *s)
{
  unlink(s->log_path);
  rmdir(s->dir);
}

static int cleaned(sfx_t *s, int status)
{
  if (status == 0)
    sfx_cleanup(s);
  return status;
}

int sfx_stop(sfx_t *s)
{
  if (s->curl)
    curl_easy_cleanup(s->curl);
  s->curl = NULL;
  int st = 0;
  kill(s->pid, SIGTERM);
  for (int i = 0; i < 1000 && waitpid(s->pid, &st, WNOHANG) == 0; i++)
    sleep_ms(10);
  if (waitpid(s->pid, &st, WNOHANG) == 0) {
    kill(s->pid, SIGKILL);
    waitpid(s->pid, &st, 0);
    return -1;
  }
  return cleaned(s, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

int sfx_wait(sfx_t *s)
{
  if (s->curl)
    curl_easy_cleanup(s->curl);
  s->curl = NULL;
  int st = 0;
  for (int i = 0; i < 2000; i++) {
    if (waitpid(s->pid, &st, WNOHANG) == s->pid)
      return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    sleep_ms(10);
  }
  kill(s->pid, SIGKILL);
  waitpid(s->pid, &st, 0);
  return -1;
}

static size_t on_body(char *data, size_t size, size_t n, void *ud)
{
  sfx_reply_t *r = ud;
  r->body = realloc(r->body, r->len + size * n + 1);
  memcpy(r->body + r->len, data, size * n);
  r->len += size * n;
  r->body[r->len] = '\0';
  return size * n;
}

static size_t on_header(char *data, size_t size, size_t n, void *ud)
{
  sfx_reply_t *r = ud;
  size_t len = size * n;
  char line[256];
  snprintf(line, sizeof line, "%.*s", (int)(len < 255 ? len : 255), data);
  line[strcspn(line, "\r\n")] = '\0';
  if (strncasecmp(line, "Content-Type: ", 14) == 0)
    snprintf(r->ctype, sizeof r->ctype, "%.127s", line + 14);
  if (strncasecmp(line, "Allow: ", 7) == 0)
    snprintf(r->allow, sizeof r->allow, "%.31s", line + 7);
  return len;
}

void sfx_request(sfx_t *s, const char *method, const char *path, const char *body, size_t len,
                 sfx_reply_t *r)
{
  char url[256];
  memset(r, 0, sizeof *r);
  r->body = calloc(1, 1);
  /* /debug/ goes to the --debug-listen listener (plain HTTP) when the daemon has one. */
  bool dbg = s->debug_port && strncmp(path, "/debug/", 7) == 0, tls = s->tls && !dbg;
  snprintf(url, sizeof url, "%s://127.0.0.1:%u%s", tls ? "https" : "http",
           dbg ? s->debug_port : s->port, path);
  CURL *c = s->curl;
  curl_easy_reset(c);
  struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
  h = curl_slist_append(h, "Expect:");
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  if (body) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
  }
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
  if (tls)
    curl_easy_setopt(c, CURLOPT_CAINFO, sfx_path("test/extender/data/tls/cert.pem"));
  CURLcode rc = curl_easy_perform(c);
  curl_slist_free_all(h);
  cr_assert_eq(rc, CURLE_OK, "%s %s: %s", method, path, curl_easy_strerror(rc));
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
}

void sfx_reply_free(sfx_reply_t *r)
{
  free(r->body);
  r->body = NULL;
}

json_t *sfx_post_json(sfx_t *s, const char *path, const json_t *body, long *status)
{
  char *text = json_dumps(body, JSON_COMPACT);
  sfx_reply_t r;
  sfx_request(s, "POST", path, text, strlen(text), &r);
  free(text);
  *status = r.status;
  json_t *v = json_loads(r.body, 0, NULL);
  sfx_reply_free(&r);
  return v;
}

json_t *sfx_load(const char *rel)
{
  json_error_t je;
  json_t *v = json_load_file(sfx_path(rel), 0, &je);
  cr_assert_not_null(v, "%s: %s", rel, je.text);
  return v;
}

json_t *sfx_args(const json_t *pod, const char *const *names, size_t n, bool cache_mode)
{
  json_t *arr = json_array();
  for (size_t i = 0; i < n; i++) {
    if (cache_mode)
      json_array_append_new(arr, json_string(names[i]));
    else
      json_array_append_new(arr, json_pack("{s:{s:s,s:{s:s}},s:{},s:{}}", "metadata", "name",
                                           names[i], "labels", "kubernetes.io/hostname", names[i],
                                           "spec", "status"));
  }
  if (cache_mode)
    return json_pack("{s:O,s:n,s:o}", "Pod", pod, "Nodes", "NodeNames", arr);
  return json_pack("{s:O,s:{s:{},s:o},s:n}", "Pod", pod, "Nodes", "metadata", "items", arr,
                   "NodeNames");
}

int sfx_connect(const sfx_t *s)
{
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    close(fd);
    fd = -1;
  }
  return fd;
}

long sfx_get_port(unsigned port, const char *path, char *buf, size_t cap)
{
  char local[1024], req[256];
  if (buf == NULL) {
    buf = local;
    cap = sizeof local;
  }
  buf[0] = '\0';
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  struct timeval tv = {5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    close(fd);
    return -1;
  }
  int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path);
  if (write(fd, req, (size_t)n) != n) {
    close(fd);
    return -1;
  }
  sfx_read_all(fd, buf, cap);
  return strncmp(buf, "HTTP/1.1 ", 9) == 0 ? atol(buf + 9) : -1;
}

void sfx_read_all(int fd, char *buf, size_t cap)
{
  size_t got = 0;
  ssize_t k;
  while (got < cap - 1 && (k = read(fd, buf + got, cap - 1 - got)) > 0)
    got += (size_t)k;
  buf[got] = '\0';
  close(fd);
}

int sfx_promtool_lint(const char *text, char *why, size_t cap)
{
  why[0] = '\0';
  if (system("command -v promtool >/dev/null 2>&1") != 0) {
    snprintf(why, cap, "promtool is not installed");
    return -1;
  }
  char dir[] = "/tmp/sfx-lint-XXXXXX", in[64], cmd[256];
  cr_assert_not_null(mkdtemp(dir));
  snprintf(in, sizeof in, "%s/metrics.txt", dir);
  FILE *f = fopen(in, "w");
  cr_assert_not_null(f);
  fputs(text, f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "promtool check metrics < %s 2>&1", in);
  FILE *p = popen(cmd, "r");
  size_t n = fread(why, 1, cap - 1, p);
  why[n] = '\0';
  int st = pclose(p);
  unlink(in);
  rmdir(dir);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}

/* ---- the fake kube-apiserver (test/tools/fake-apiserver.c) ---- */

void sfx_api_start(sfx_api_t *a, const char *flag)
{
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 32);
  cr_assert(n > 0);
  exe[n] = '\0';
  strcpy(strrchr(exe, '/') + 1, "tools/fake-apiserver");
  int to[2], from[2];
  cr_assert(pipe(to) == 0 && pipe(from) == 0);
  a->pid = fork();
  if (a->pid == 0) {
    dup2(to[0], 0);
    dup2(from[1], 1);
    close(to[1]);
    close(from[0]);
    execl(exe, exe, flag, (char *)NULL);
    _exit(127);
  }
  close(to[0]);
  close(from[1]);
  a->in = fdopen(to[1], "w");
  a->out = fdopen(from[0], "r");
  char line[64];
  cr_assert(fgets(line, sizeof line, a->out) && sscanf(line, "port %u", &a->port) == 1);
}

static void api_vask(sfx_api_t *a, char *line, size_t cap, const char *fmt, va_list ap)
{
  vfprintf(a->in, fmt, ap);
  fputc('\n', a->in);
  fflush(a->in);
  cr_assert(fgets(line, (int)cap, a->out));
  cr_assert(strncmp(line, "ok", 2) == 0, "fake-apiserver: %s", line);
}

void sfx_api_cmd(sfx_api_t *a, const char *fmt, ...)
{
  char line[4096];
  va_list ap;
  va_start(ap, fmt);
  api_vask(a, line, sizeof line, fmt, ap);
  va_end(ap);
}

const char *sfx_api_ask(sfx_api_t *a, char *line, size_t cap, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  api_vask(a, line, cap, fmt, ap);
  va_end(ap);
  line[strcspn(line, "\n")] = '\0';
  return line[2] == ' ' ? line + 3 : line + 2;
}

void sfx_api_stop(sfx_api_t *a)
{
  fputs("quit\n", a->in);
  fclose(a->in);
  fclose(a->out);
  waitpid(a->pid, NULL, 0);
}

void sfx_write_kubeconfig(const char *path, unsigned port)
{
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fprintf(f,
          "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n"
          "    server: http://127.0.0.1:%u\nusers:\n- name: u\n  user:\n    token: t\n"
          "contexts:\n- name: c\n  context:\n    cluster: fake\n    user: u\n"
          "current-context: c\n",
          port);
  fclose(f);
}

unsigned sfx_free_port(void)
{
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  cr_assert(fd >= 0);
  struct sockaddr_in a = {.sin_family = AF_INET};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
  close(fd);
  return ntohs(a.sin_port);
}
