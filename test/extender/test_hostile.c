/*
 * Hostile clients: slow and idle connections, floods from one
 * address, bodies that fill memory, one large request among small ones,
 * ambiguous framing, SIGTERM with requests on the wire, and serving TLS.
 * Real bin/slicefit processes on loopback; every wait is bounded.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "cases.h"
#include "harness.h"

TestSuite(hostile, .timeout = 120);

static void sleep_ms(long ms)
{
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* A TCP connection to 127.0.0.1:port from source address `src` (127.0.0.x); -1 on error. */
static int connect_from(unsigned port, const char *src)
{
  int fd = socket(AF_INET, SOCK_STREAM, 0);
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
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

static void send_all(int fd, const char *p, size_t n)
{
  while (n) {
    ssize_t k = write(fd, p, n);
    cr_assert(k > 0, "write: %s", strerror(errno));
    p += k;
    n -= (size_t)k;
  }
}

/*
 * Reads until the peer closes or `ms` pass with nothing new; NUL-terminates.
 * Returns true when the peer closed the connection.
 */
static bool read_until_close(int fd, char *buf, size_t cap, int ms)
{
  size_t got = 0;
  for (;;) {
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    if (poll(&pf, 1, ms) != 1)
      break;
    ssize_t k = read(fd, buf + got, cap - 1 - got);
    if (k <= 0) {
      buf[got] = '\0';
      return true;
    }
    got += (size_t)k;
    if (got == cap - 1)
      break;
  }
  buf[got] = '\0';
  return false;
}

static int count(const char *hay, const char *needle)
{
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
    n++;
  return n;
}

static char *filter_body(size_t *len)
{
  json_t *pod = sfx_pod("pod-gpu-test1.json", "tenants", "agent-sandbox-7");
  json_t *args = sfx_args(pod, sfx_nodes, SFX_NNODES, true);
  char *body = json_dumps(args, JSON_COMPACT);
  *len = strlen(body);
  json_decref(args);
  json_decref(pod);
  return body;
}

/* One raw keep-alive filter request (head and body) into buf. */
static size_t raw_filter(char *buf, size_t cap)
{
  size_t len;
  char *body = filter_body(&len);
  int n = snprintf(buf, cap, "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n%s", len,
                   body);
  free(body);
  cr_assert(n > 0 && (size_t)n < cap);
  return (size_t)n;
}

static const char *GET_HEALTHZ = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";

Test(hostile, slowloris_headers_are_cut_at_the_header_deadline)
{
  /* One header byte every 200 ms: each byte used to reset the 30 s idle timeout. */
  sfx_t s;
  const char *extra[] = {"--header-timeout", "1", NULL};
  sfx_start_example(&s, extra);
  int fd = sfx_connect(&s);
  const char *head =
      "POST /filter HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
  bool closed = false;
  char buf[256];
  for (size_t i = 0; head[i] && !closed; i++) {
    if (write(fd, head + i, 1) != 1)
      break;
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    if (poll(&pf, 1, 200) == 1)
      closed = read(fd, buf, sizeof buf) <= 0;
  }
  cr_assert(closed, "a client trickling its headers is closed at the header deadline");
  close(fd);
  cr_assert_eq(sfx_stop(&s), 0);
}

Test(hostile, trickled_body_is_cut_at_the_request_deadline)
{
  sfx_t s;
  const char *extra[] = {"--request-timeout", "1", NULL};
  sfx_start_example(&s, extra);
  int fd = sfx_connect(&s);
  const char *head = "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n";
  send_all(fd, head, strlen(head));
  bool closed = false;
  char buf[256];
  for (int i = 0; i < 60 && !closed; i++) {
    if (write(fd, " ", 1) != 1)
      break;
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    if (poll(&pf, 1, 200) == 1)
      closed = read(fd, buf, sizeof buf) <= 0;
  }
  cr_assert(closed, "a body trickled a byte at a time is closed at the request deadline");
  close(fd);
  /* The line may follow the close by a moment: wait for it, up to 2 s. */
  for (int i = 0; i < 200 && sfx_log_count(&s, "] \"request aborted\" reason=\"timeout\"") == 0; i++)
    usleep(10000);
  cr_assert_eq(sfx_log_count(&s, "] \"request aborted\" reason=\"timeout\""), 1);
  cr_assert_eq(sfx_stop(&s), 0);
}

Test(hostile, one_address_cannot_take_every_connection)
{
  sfx_t s;
  const char *extra[] = {"--max-connections-per-ip", "4", "--max-connections", "16", NULL};
  sfx_start_example(&s, extra);
  int fds[12];
  for (int i = 0; i < 12; i++)
    fds[i] = connect_from(s.port, "127.0.0.1");
  /* Past its 4, every connection from that address is closed at once. */
  char buf[256];
  int closed = 0;
  for (int i = 0; i < 12; i++) {
    struct pollfd pf = {.fd = fds[i], .events = POLLIN};
    if (poll(&pf, 1, 1000) == 1 && read(fds[i], buf, sizeof buf) <= 0)
      closed++;
  }
  cr_assert_eq(closed, 8, "8 of 12 refused (%d)", closed);
  /* Another address is served meanwhile. */
  int other = connect_from(s.port, "127.0.0.2");
  cr_assert(other >= 0);
  send_all(other, GET_HEALTHZ, strlen(GET_HEALTHZ));
  read_until_close(other, buf, sizeof buf, 2000);
  cr_assert(strncmp(buf, "HTTP/1.1 200", 12) == 0, "%s", buf);
  close(other);
  for (int i = 0; i < 12; i++)
    close(fds[i]);
  cr_assert_eq(sfx_stop(&s), 0);
}

static unsigned probe_port(const sfx_t *s)
{
  char *log = sfx_log(s);
  const char *p = strstr(log, " probe_port=");
  unsigned port = p ? (unsigned)atoi(p + 12) : 0;
  free(log);
  return port;
}

Test(hostile, probes_answer_while_every_connection_is_taken)
{
  sfx_t s;
  const char *extra[] = {"--probe-listen", "127.0.0.1:0", "--max-connections", "8", NULL};
  sfx_start_example(&s, extra);
  unsigned pp = probe_port(&s);
  cr_assert_gt(pp, 0, "the probe listener's port is logged");
  int fds[8];
  for (int i = 0; i < 8; i++)
    fds[i] = connect_from(s.port, "127.0.0.1");
  sleep_ms(200);
  char buf[512];
  const char *paths[] = {"/healthz", "/readyz"};
  for (int i = 0; i < 2; i++) {
    int fd = connect_from(pp, "127.0.0.1");
    cr_assert(fd >= 0);
    char req[128];
    snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", paths[i]);
    send_all(fd, req, strlen(req));
    read_until_close(fd, buf, sizeof buf, 5000);
    cr_assert(strncmp(buf, "HTTP/1.1 200", 12) == 0, "%s: %s", paths[i], buf);
    close(fd);
  }
  for (int i = 0; i < 8; i++)
    close(fds[i]);
  cr_assert_eq(sfx_stop(&s), 0);
}

Test(hostile, keepalive_connections_end_after_their_quota)
{
  sfx_t s;
  const char *extra[] = {"--keepalive-requests", "2", NULL};
  sfx_start_example(&s, extra);
  int fd = sfx_connect(&s);
  char req[256], buf[4096];
  snprintf(req, sizeof req, "%s%s%s", GET_HEALTHZ, GET_HEALTHZ, GET_HEALTHZ);
  send_all(fd, req, strlen(req));
  bool closed = read_until_close(fd, buf, sizeof buf, 3000);
  cr_assert(closed, "closed after its second answer");
  cr_assert_eq(count(buf, "HTTP/1.1 200"), 2, "%s", buf);
  cr_assert_eq(count(buf, "Connection: close"), 1, "%s", buf);
  close(fd);
  cr_assert_eq(sfx_stop(&s), 0);
}

Test(hostile, buffered_bytes_are_bounded_with_503_and_retry_after)
{
  sfx_t s;
  const char *extra[] = {"--max-buffered-bytes", "1000000", "--retry-after", "2", NULL};
  sfx_start_example(&s, extra);
  /* A holds 800,000 bytes of an unfinished body. */
  int a = sfx_connect(&s);
  const char *ha = "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 900000\r\n\r\n";
  send_all(a, ha, strlen(ha));
  char *junk = malloc(800000);
  memset(junk, ' ', 800000);
  send_all(a, junk, 800000);
  sleep_ms(300);
  /* B announces 2,000,000 more: refused at once. */
  int b = sfx_connect(&s);
  const char *hb = "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n";
  send_all(b, hb, strlen(hb));
  char buf[4096];
  read_until_close(b, buf, sizeof buf, 3000);
  cr_assert(strncmp(buf, "HTTP/1.1 503", 12) == 0, "%s", buf);
  cr_assert(strstr(buf, "Retry-After: 2\r\n"), "%s", buf);
  close(b);
  /* An ordinary small call still goes through: small bodies have a reserve of their own. */
  size_t flen;
  char *fbody = filter_body(&flen);
  sfx_reply_t fr;
  sfx_request(&s, "POST", "/filter", fbody, flen, &fr);
  cr_assert_eq(fr.status, 200, "%s", fr.body);
  sfx_reply_free(&fr);
  free(fbody);
  /* C sends a chunked body that grows past the bound: dropped, 503 at its end. */
  int c = sfx_connect(&s);
  const char *hc = "POST /filter HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  send_all(c, hc, strlen(hc));
  char chunk[64];
  for (int i = 0; i < 20; i++) {
    int n = snprintf(chunk, sizeof chunk, "%x\r\n", 100000);
    send_all(c, chunk, (size_t)n);
    send_all(c, junk, 100000);
    send_all(c, "\r\n", 2);
  }
  send_all(c, "0\r\n\r\n", 5);
  read_until_close(c, buf, sizeof buf, 3000);
  cr_assert(strncmp(buf, "HTTP/1.1 503", 12) == 0, "%s", buf);
  close(c);
  /* Once A is gone its bytes are given back: a filter is served again. */
  close(a);
  sleep_ms(300);
  size_t len;
  char *body = filter_body(&len);
  sfx_reply_t r;
  sfx_request(&s, "POST", "/filter", body, len, &r);
  cr_assert_eq(r.status, 200, "%s", r.body);
  sfx_reply_free(&r);
  free(body);
  free(junk);
  cr_assert_eq(sfx_stop(&s), 0);
}

Test(hostile, default_body_limit_fits_100000_node_names_and_no_more)
{
  sfx_t s;
  sfx_start_example(&s, NULL);
  /* 100,000 names of 253 characters (the longest DNS subdomain) fit. */
  json_t *pod = sfx_pod("pod-no-gpu.json", "default", "web-0");
  json_t *names = json_array();
  char name[254];
  for (int i = 0; i < 100000; i++) {
    snprintf(name, sizeof name, "%06d", i);
    memset(name + 6, 'n', 247);
    name[253] = '\0';
    json_array_append_new(names, json_string(name));
  }
  json_t *args = json_pack("{s:o,s:n,s:o}", "Pod", pod, "Nodes", "NodeNames", names);
  char *body = json_dumps(args, JSON_COMPACT);
  json_decref(args);
  size_t len = strlen(body);
  char head[160];
  int hl = snprintf(head, sizeof head,
                    "POST /prioritize HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                    "Content-Length: %zu\r\n\r\n",
                    len);
  int pfd = sfx_connect(&s);
  send_all(pfd, head, (size_t)hl);
  send_all(pfd, body, len);
  free(body);
  /* Only the status line matters; the reply (every name again) is read and dropped. */
  char status[64] = "";
  size_t got = 0;
  struct pollfd pp = {.fd = pfd, .events = POLLIN};
  while (got < sizeof status - 1 && poll(&pp, 1, 120000) == 1) {
    ssize_t k = read(pfd, status + got, sizeof status - 1 - got);
    if (k <= 0)
      break;
    got += (size_t)k;
  }
  status[got] = '\0';
  close(pfd);
  cr_assert(strncmp(status, "HTTP/1.1 200", 12) == 0, "%zu bytes: %s", len, status);
  /* 28 MB is refused at the headers. */
  int fd = sfx_connect(&s);
  const char *big = "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 28000000\r\n\r\n";
  send_all(fd, big, strlen(big));
  char buf[4096];
  read_until_close(fd, buf, sizeof buf, 3000);
  cr_assert(strncmp(buf, "HTTP/1.1 413", 12) == 0, "%s", buf);
  close(fd);
  cr_assert_eq(sfx_stop(&s), 0);
}

Test(hostile, a_large_request_does_not_hold_up_a_small_one)
{
  /* 100,000 Node objects (about 12 MB, decoded by jansson) and a /healthz sent after them. */
  sfx_t s;
  sfx_start_example(&s, NULL);
  json_t *pod = sfx_pod("pod-no-gpu.json", "default", "web-0");
  const char **names = calloc(100000, sizeof *names);
  char(*text)[24] = calloc(100000, sizeof *text);
  for (int i = 0; i < 100000; i++) {
    snprintf(text[i], sizeof text[i], "node-%06d", i);
    names[i] = text[i];
  }
  json_t *args = sfx_args(pod, names, 100000, false);
  char *body = json_dumps(args, JSON_COMPACT);
  size_t len = strlen(body);
  char head[128];
  int hl =
      snprintf(head, sizeof head,
               "POST /filter HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: %zu\r\n\r\n",
               len);
  int big = sfx_connect(&s), small = sfx_connect(&s);
  send_all(big, head, (size_t)hl);
  send_all(big, body, len);
  /* Long enough for the server to have read the whole body and started on it (decoding it alone
   * takes about a second); a loop that decodes it in place answers nothing meanwhile. */
  sleep_ms(150);
  send_all(small, GET_HEALTHZ, strlen(GET_HEALTHZ));
  /* The small answer comes while the large one is still being worked on. */
  struct pollfd pf[2] = {{.fd = big, .events = POLLIN}, {.fd = small, .events = POLLIN}};
  cr_assert(poll(pf, 2, 30000) >= 1);
  cr_assert(pf[1].revents & POLLIN, "/healthz answered first");
  cr_assert_eq(pf[0].revents & POLLIN, 0, "before the large filter");
  char buf[256];
  cr_assert(read(small, buf, sizeof buf) > 12);
  cr_assert(strncmp(buf, "HTTP/1.1 200", 12) == 0);
  /* And the large one is answered in full. */
  size_t cap = 64u << 20;
  char *reply = malloc(cap);
  read_until_close(big, reply, cap, 30000);
  cr_assert(strncmp(reply, "HTTP/1.1 200", 12) == 0, "%.300s", reply);
  cr_assert(strstr(reply, "node-099999"), "every node echoed");
  free(reply);
  close(big);
  close(small);
  free(body);
  json_decref(args);
  json_decref(pod);
  free(names);
  free(text);
  cr_assert_eq(sfx_stop(&s), 0);
}

Test(hostile, a_nodelist_past_its_limit_is_refused)
{
  /* A NodeList decodes to about twenty times its text: 12 MiB by default, not 25. */
  sfx_t s;
  sfx_start_example(&s, NULL);
  json_t *pod = sfx_pod("pod-no-gpu.json", "default", "web-0");
  const char **names = calloc(160000, sizeof *names);
  char(*text)[24] = calloc(160000, sizeof *text);
  for (int i = 0; i < 160000; i++) {
    snprintf(text[i], sizeof text[i], "node-%06d", i);
    names[i] = text[i];
  }
  json_t *args = sfx_args(pod, names, 160000, false);
  char *body = json_dumps(args, JSON_COMPACT);
  sfx_reply_t r;
  sfx_request(&s, "POST", "/filter", body, strlen(body), &r);
  cr_assert_eq(r.status, 413, "%zu bytes: %.300s", strlen(body), r.body);
  cr_assert(strstr(r.body, "nodeCacheCapable"), "%s", r.body);
  sfx_reply_free(&r);
  free(body);
  json_decref(args);
  json_decref(pod);
  free(names);
  free(text);
  cr_assert_eq(sfx_stop(&s), 0);
}

static void expect_refused(const sfx_t *s, const char *req, const char *want)
{
  int fd = sfx_connect(s);
  send_all(fd, req, strlen(req));
  char buf[4096];
  bool closed = read_until_close(fd, buf, sizeof buf, 3000);
  cr_assert(strncmp(buf, "HTTP/1.1 400", 12) == 0, "%s -> %s", req, buf);
  cr_assert(strstr(buf, want), "%s -> %s", req, buf);
  cr_assert(closed, "the connection is closed after: %s", req);
  close(fd);
}

Test(hostile, ambiguous_paths_and_framing_are_refused)
{
  sfx_t s;
  sfx_start_example(&s, NULL);
  expect_refused(&s, "GET /healthz%00junk HTTP/1.1\r\nHost: x\r\n\r\n", "NUL");
  expect_refused(&s, "GET /debug/state%00.json HTTP/1.1\r\nHost: x\r\n\r\n", "NUL");
  expect_refused(&s, "GET /healthz HTTP/1.1\r\n\r\n", "Host");
  expect_refused(&s,
                 "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                 "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                 "Transfer-Encoding");
  /* Still serving, and HTTP/1.0 without Host is fine. */
  int fd = sfx_connect(&s);
  const char *ok10 = "GET /healthz HTTP/1.0\r\n\r\n";
  send_all(fd, ok10, strlen(ok10));
  char buf[1024];
  read_until_close(fd, buf, sizeof buf, 3000);
  cr_assert(strncmp(buf, "HTTP/1.1 200", 12) == 0 || strncmp(buf, "HTTP/1.0 200", 12) == 0, "%s",
            buf);
  close(fd);
  cr_assert_eq(sfx_stop(&s), 0);
}

Test(hostile, sigterm_answers_every_request_already_on_the_wire)
{
  sfx_t s;
  sfx_start_example(&s, NULL);
  char req[8192];
  size_t n = raw_filter(req, sizeof req);
  /* Eight keep-alive connections that have each been answered once... */
  int fds[12];
  char buf[16384];
  for (int i = 0; i < 8; i++) {
    fds[i] = sfx_connect(&s);
    send_all(fds[i], req, n);
    struct pollfd pf = {.fd = fds[i], .events = POLLIN};
    cr_assert_eq(poll(&pf, 1, 5000), 1);
    cr_assert(read(fds[i], buf, sizeof buf) > 0);
  }
  /* ... each send another request, four new connections send one, and SIGTERM follows. */
  for (int i = 8; i < 12; i++)
    fds[i] = sfx_connect(&s);
  for (int i = 0; i < 12; i++)
    send_all(fds[i], req, n);
  kill(s.pid, SIGTERM);
  for (int i = 0; i < 12; i++) {
    bool closed = read_until_close(fds[i], buf, sizeof buf, 10000);
    cr_assert(strncmp(buf, "HTTP/1.1 200", 12) == 0, "connection %d: %.200s", i, buf);
    cr_assert(closed, "connection %d closed after its answer", i);
    close(fds[i]);
  }
  cr_assert_eq(sfx_wait(&s), 0);
  sfx_cleanup(&s);
}

/* ---- serving TLS ---- */

static CURLcode tls_get(unsigned port, const char *ca, long maxver, const char *ciphers)
{
  CURL *c = curl_easy_init();
  char url[64];
  snprintf(url, sizeof url, "https://127.0.0.1:%u/healthz", port);
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_CAINFO, sfx_path(ca));
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 5L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, fwrite);
  FILE *null = fopen("/dev/null", "w");
  curl_easy_setopt(c, CURLOPT_WRITEDATA, null);
  if (maxver)
    curl_easy_setopt(c, CURLOPT_SSLVERSION, maxver);
  if (ciphers)
    curl_easy_setopt(c, CURLOPT_SSL_CIPHER_LIST, ciphers);
  CURLcode rc = curl_easy_perform(c);
  curl_easy_cleanup(c);
  fclose(null);
  return rc;
}

static void start_tls(sfx_t *s, const char *cert, const char *key, const char *const *more)
{
  const char *extra[16] = {"--tls-cert-file", cert, "--tls-private-key-file", key};
  size_t n = 4;
  for (size_t i = 0; more && more[i]; i++)
    extra[n++] = more[i];
  extra[n] = NULL;
  sfx_start_example(s, extra);
}

Test(hostile, tls_offers_only_1_2_and_up_with_forward_secrecy)
{
  sfx_t s;
  char cert[1024], key[1024];
  snprintf(cert, sizeof cert, "%s", sfx_path("test/extender/data/tls/cert.pem"));
  snprintf(key, sizeof key, "%s", sfx_path("test/extender/data/tls/key.pem"));
  start_tls(&s, cert, key, NULL);
  const char *ca = "test/extender/data/tls/cert.pem";
  cr_assert_eq(tls_get(s.port, ca, 0, NULL), CURLE_OK);
  cr_assert_eq(tls_get(s.port, ca, CURL_SSLVERSION_TLSv1_2 | CURL_SSLVERSION_MAX_TLSv1_2, NULL),
               CURLE_OK, "TLS 1.2 with an ECDHE suite");
  /* TLS 1.1 (the client allows it at security level 0) and static-RSA suites are refused. */
  cr_assert_neq(tls_get(s.port, ca, CURL_SSLVERSION_TLSv1_1 | CURL_SSLVERSION_MAX_TLSv1_1,
                        "DEFAULT:@SECLEVEL=0"),
                CURLE_OK, "TLS 1.1 refused");
  cr_assert_neq(tls_get(s.port, ca, CURL_SSLVERSION_TLSv1_2 | CURL_SSLVERSION_MAX_TLSv1_2,
                        "AES128-GCM-SHA256:AES256-SHA256:AES128-SHA"),
                CURLE_OK, "static RSA key exchange refused");
  cr_assert_eq(sfx_stop(&s), 0);
  /* --tls-min-version 1.3 refuses 1.2. */
  const char *v13[] = {"--tls-min-version", "1.3", NULL};
  start_tls(&s, cert, key, v13);
  cr_assert_eq(tls_get(s.port, ca, 0, NULL), CURLE_OK);
  cr_assert_neq(tls_get(s.port, ca, CURL_SSLVERSION_TLSv1_2 | CURL_SSLVERSION_MAX_TLSv1_2, NULL),
                CURLE_OK, "TLS 1.2 refused at --tls-min-version 1.3");
  cr_assert_eq(sfx_stop(&s), 0);
}

static void copy_file(const char *from, const char *to)
{
  char tmp[1100];
  snprintf(tmp, sizeof tmp, "%s.tmp", to);
  FILE *in = fopen(sfx_path(from), "rb"), *out = fopen(tmp, "wb");
  cr_assert(in && out);
  char b[8192];
  size_t k;
  while ((k = fread(b, 1, sizeof b, in)) > 0)
    fwrite(b, 1, k, out);
  fclose(in);
  fclose(out);
  cr_assert_eq(rename(tmp, to), 0); /* a new inode, as the kubelet's swap gives */
}

Test(hostile, serving_certificate_is_reloaded_without_restart)
{
  char dir[] = "/tmp/sfx-cert-XXXXXX", cert[1100], key[1100];
  cr_assert(mkdtemp(dir));
  snprintf(cert, sizeof cert, "%s/tls.crt", dir);
  snprintf(key, sizeof key, "%s/tls.key", dir);
  copy_file("test/extender/data/tls/cert.pem", cert);
  copy_file("test/extender/data/tls/key.pem", key);
  sfx_t s;
  const char *more[] = {"--tls-reload-interval", "1", NULL};
  start_tls(&s, cert, key, more);
  cr_assert_eq(tls_get(s.port, "test/extender/data/tls/cert.pem", 0, NULL), CURLE_OK);
  cr_assert_neq(tls_get(s.port, "test/extender/data/tls/cert2.pem", 0, NULL), CURLE_OK);
  /* A mismatched pair (new key, old certificate) is refused and the old pair stays. */
  copy_file("test/extender/data/tls/key2.pem", key);
  sleep_ms(1500);
  cr_assert_eq(tls_get(s.port, "test/extender/data/tls/cert.pem", 0, NULL), CURLE_OK);
  copy_file("test/extender/data/tls/cert2.pem", cert);
  bool swapped = false;
  for (int i = 0; i < 50 && !swapped; i++) {
    sleep_ms(200);
    swapped = tls_get(s.port, "test/extender/data/tls/cert2.pem", 0, NULL) == CURLE_OK;
  }
  cr_assert(swapped, "the new certificate is served");
  cr_assert_neq(tls_get(s.port, "test/extender/data/tls/cert.pem", 0, NULL), CURLE_OK);
  cr_assert_eq(sfx_log_count(&s, "] \"serving certificate reloaded\""), 1);
  cr_assert_eq(sfx_stop(&s), 0);
  unlink(cert);
  unlink(key);
  rmdir(dir);
}

/* GET path on the probe port: the status, the body in buf. */
static int probe_get(unsigned port, const char *path, char *buf, size_t cap)
{
  int fd = connect_from(port, "127.0.0.1");
  char req[128];
  snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path);
  send_all(fd, req, strlen(req));
  read_until_close(fd, buf, cap, 5000);
  close(fd);
  return atoi(buf + 9);
}

Test(hostile, liveness_is_the_loop_turning_and_readiness_the_data)
{
  /* With a zero stall allowance the probe thread sees the loop's last turn as too old. */
  sfx_t s;
  const char *extra[] = {"--probe-listen", "127.0.0.1:0", "--liveness-stall-ms", "0", NULL};
  sfx_start_example(&s, extra);
  unsigned pp = probe_port(&s);
  char buf[512];
  bool stale = false;
  for (int i = 0; i < 50 && !stale; i++) {
    stale = probe_get(pp, "/healthz", buf, sizeof buf) == 500;
    sleep_ms(7);
  }
  cr_assert(stale, "liveness reads the loop's heartbeat");
  cr_assert(strstr(buf, "event loop has not turned"), "%s", buf);
  cr_assert_eq(probe_get(pp, "/readyz", buf, sizeof buf), 200, "ready: the snapshot is whole");
  cr_assert_eq(sfx_stop(&s), 0);
  /* With the default (10 s) a turning loop is alive, every time. */
  const char *def[] = {"--probe-listen", "127.0.0.1:0", NULL};
  sfx_start_example(&s, def);
  pp = probe_port(&s);
  for (int i = 0; i < 20; i++)
    cr_assert_eq(probe_get(pp, "/healthz", buf, sizeof buf), 200, "%s", buf);
  cr_assert_eq(probe_get(pp, "/nope", buf, sizeof buf), 404);
  cr_assert_eq(sfx_stop(&s), 0);
}
