/*
 * Client certificates (--client-ca-file): a caller whose certificate chains
 * to the CA is served; one without a certificate, or with one of another
 * CA, gets no HTTP answer (the handshake fails); a CA file replaced on disk
 * is picked up without a restart. /debug/state on the serving port is off
 * by default and, when asked for, needs the client CA.
 *
 * The CAs and client certificates are made by openssl at run time; the
 * serving certificate is test/extender/data/tls's.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "harness.h"

typedef struct {
  char dir[64];
} pki_t;

static void sh(const char *cmd)
{
  cr_assert_eq(system(cmd), 0, "%s", cmd);
}

/* CA `name` (name-ca.pem, name-ca.key) and a client certificate it signs (name.pem, name.key). */
static void make_ca_and_client(const pki_t *p, const char *name)
{
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "cd %s && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
           "-days 2 -subj /CN=%s-ca -keyout %s-ca.key -out %s-ca.pem 2>/dev/null && "
           "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
           "-subj /CN=kube-scheduler -keyout %s.key -out %s.csr 2>/dev/null && "
           "printf 'extendedKeyUsage=clientAuth\\nbasicConstraints=CA:FALSE\\n' > %s.ext && "
           "openssl x509 -req -in %s.csr -CA %s-ca.pem -CAkey %s-ca.key -CAcreateserial -days 2 "
           "-extfile %s.ext -out %s.pem 2>/dev/null",
           p->dir, name, name, name, name, name, name, name, name, name, name, name);
  sh(cmd);
}

static void pki_init(pki_t *p)
{
  snprintf(p->dir, sizeof p->dir, "/tmp/sf-mtls-XXXXXX");
  cr_assert_not_null(mkdtemp(p->dir));
  make_ca_and_client(p, "a");
  make_ca_and_client(p, "b");
  char cmd[512];
  snprintf(cmd, sizeof cmd, "cp %s/a-ca.pem %s/ca.pem", p->dir, p->dir);
  sh(cmd);
}

static void pki_dispose(pki_t *p)
{
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", p->dir);
  sh(cmd);
}

/*
 * GET path over a fresh TLS connection with client certificate `who`
 * (NULL: none); the HTTP status, or 0 when no answer came. The body goes
 * to *body (new) when body is not NULL.
 */
static long get_body(const sfx_t *s, const pki_t *p, const char *who, const char *path, char **body)
{
  char url[128], cert[160], key[160], *text = NULL;
  size_t len = 0;
  snprintf(url, sizeof url, "https://127.0.0.1:%u%s", s->port, path);
  CURL *c = curl_easy_init();
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_CAINFO, sfx_path("test/extender/data/tls/cert.pem"));
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, fwrite);
  FILE *sink = open_memstream(&text, &len);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, sink);
  if (who) {
    snprintf(cert, sizeof cert, "%s/%s.pem", p->dir, who);
    snprintf(key, sizeof key, "%s/%s.key", p->dir, who);
    curl_easy_setopt(c, CURLOPT_SSLCERT, cert);
    curl_easy_setopt(c, CURLOPT_SSLKEY, key);
  }
  long status = 0;
  if (curl_easy_perform(c) == CURLE_OK)
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(c);
  fclose(sink);
  if (body)
    *body = text;
  else
    free(text);
  return status;
}

static long get_as(const sfx_t *s, const pki_t *p, const char *who, const char *path)
{
  return get_body(s, p, who, path, NULL);
}

static void nap(void)
{
  struct timespec ts = {0, 100000000L};
  nanosleep(&ts, NULL);
}

static void start(sfx_t *s, const pki_t *p, const char *more)
{
  static char cert[512], key[512], ca[128];
  snprintf(cert, sizeof cert, "%s", sfx_path("test/extender/data/tls/cert.pem"));
  snprintf(key, sizeof key, "%s", sfx_path("test/extender/data/tls/key.pem"));
  snprintf(ca, sizeof ca, "%s/ca.pem", p->dir);
  const char *extra[] = {"--tls-cert-file",
                         cert,
                         "--tls-private-key-file",
                         key,
                         "--client-ca-file",
                         ca,
                         "--tls-reload-interval=1",
                         more,
                         NULL};
  sfx_start_example(s, extra);
}

/* Stops the server (it must exit 0) and removes the certificates. */
static void finish(sfx_t *s, pki_t *p)
{
  cr_assert_eq(sfx_stop(s), 0);
  pki_dispose(p);
}

Test(client_cert, only_clients_of_the_ca_are_served, .timeout = 60)
{
  pki_t p;
  sfx_t s;
  pki_init(&p);
  start(&s, &p, NULL);
  cr_assert_eq(get_as(&s, &p, "a", "/healthz"), 200, "a client of the CA is served");
  cr_assert_eq(get_as(&s, &p, "a", "/metrics"), 200);
  cr_assert_eq(get_as(&s, &p, NULL, "/healthz"), 0, "no certificate: no answer");
  cr_assert_eq(get_as(&s, &p, NULL, "/metrics"), 0);
  cr_assert_eq(get_as(&s, &p, "b", "/healthz"), 0, "another CA's certificate: no answer");
  /* /debug/state is not served on the serving port unless asked for. */
  cr_assert_eq(get_as(&s, &p, "a", "/debug/state"), 404);
  /* Refusals are counted: the no-certificate ones fail before verification, b's in it. */
  char *text = NULL;
  cr_assert_eq(get_body(&s, &p, "a", "/metrics", &text), 200);
  cr_assert(strstr(text, "\nslicefit_tls_clients_refused_total 1\n"), "%s", text);
  free(text);
  finish(&s, &p);
}

Test(client_cert, a_rotated_ca_is_picked_up, .timeout = 60)
{
  pki_t p;
  sfx_t s;
  pki_init(&p);
  start(&s, &p, NULL);
  cr_assert_eq(get_as(&s, &p, "a", "/healthz"), 200);
  cr_assert_eq(get_as(&s, &p, "b", "/healthz"), 0);
  /* The kubelet swaps a Secret's files by a rename: a new inode. */
  char cmd[512];
  snprintf(cmd, sizeof cmd, "cp %s/b-ca.pem %s/ca.new && mv %s/ca.new %s/ca.pem", p.dir, p.dir, p.dir,
           p.dir);
  sh(cmd);
  long a = 200, b = 0;
  for (int i = 0; i < 100 && (a != 0 || b != 200); i++) {
    nap();
    a = get_as(&s, &p, "a", "/healthz");
    b = get_as(&s, &p, "b", "/healthz");
  }
  cr_assert_eq(b, 200, "the new CA's client is served");
  cr_assert_eq(a, 0, "the old CA's client is refused");
  cr_assert_eq(sfx_log_count(&s, "client CA reloaded"), 1);
  /* A file that is no CA leaves the one in force. */
  snprintf(cmd, sizeof cmd, "echo garbage > %s/ca.new && mv %s/ca.new %s/ca.pem", p.dir, p.dir,
           p.dir);
  sh(cmd);
  for (int i = 0; i < 100 && sfx_log_count(&s, "client CA not reloaded") == 0; i++)
    nap();
  cr_assert_eq(sfx_log_count(&s, "client CA not reloaded"), 1);
  cr_assert_eq(get_as(&s, &p, "b", "/healthz"), 200);
  finish(&s, &p);
}

Test(client_cert, debug_state_over_tls_only_to_verified_clients, .timeout = 60)
{
  pki_t p;
  sfx_t s;
  pki_init(&p);
  start(&s, &p, "--debug-state-over-tls=true");
  cr_assert_eq(get_as(&s, &p, "a", "/debug/state"), 200);
  cr_assert_eq(get_as(&s, &p, NULL, "/debug/state"), 0);
  /* /debug/defrag follows the same rule: it names pods and claims of every namespace. */
  cr_assert_eq(get_as(&s, &p, "a", "/debug/defrag?claim=tenants/nope"), 200);
  cr_assert_eq(get_as(&s, &p, NULL, "/debug/defrag?claim=tenants/nope"), 0);
  finish(&s, &p);
}

/* Runs bin/slicefit with args; its exit status, its output in out. */
static int run(const char *args, char *out, size_t cap)
{
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "cd '%s' && timeout 20 '%s' %s 2>&1", sfx_path(""), sfx_bin("slicefit"),
           args);
  FILE *f = popen(cmd, "r");
  size_t n = fread(out, 1, cap - 1, f);
  out[n] = '\0';
  int st = pclose(f);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(client_cert, bad_flags_are_refused, .timeout = 60)
{
  static char out[4096];
  cr_assert_neq(run("--listen=127.0.0.1:0 --debug-state-over-tls=true", out, sizeof out), 0);
  cr_assert(strstr(out, "--debug-state-over-tls needs"), "%s", out);
  cr_assert_neq(run("--listen=127.0.0.1:0 --client-ca-file=/nonexistent", out, sizeof out), 0);
  cr_assert(strstr(out, "--client-ca-file needs --tls-cert-file"), "%s", out);
  char args[1024];
  snprintf(args, sizeof args,
           "--listen=127.0.0.1:0 --tls-cert-file=test/extender/data/tls/cert.pem "
           "--tls-private-key-file=test/extender/data/tls/key.pem --client-ca-file=README.md");
  cr_assert_neq(run(args, out, sizeof out), 0);
  cr_assert(strstr(out, "README.md"), "%s", out);
}
