/*
 * The serving certificate, and the TLS versions and suites offered.
 *
 * libmicrohttpd asks for the certificate at each handshake through
 * MHD_OPTION_HTTPS_CERT_CALLBACK, so a new pair takes effect for the next
 * connection without a restart: every tls_reload_s the loop stats the two
 * files (the kubelet swaps a Secret's files by a symlink, which changes the
 * inode), and a changed pair that loads and matches replaces the served one.
 * A bad pair is logged and the old one stays. The previous pair is kept one
 * more generation, as a handshake under way may still point at it.
 *
 * With a client CA (--client-ca-file), every handshake asks for a client
 * certificate and fails unless one arrives that chains to that CA: a
 * caller without one gets no HTTP answer at all. The CA file is reloaded
 * on change like the pair; a file that does not load leaves the previous
 * CA in force.
 *
 * GnuTLS runs inside MHD_run, on the loop's thread, like everything else.
 * The files are trusted configuration; their content is checked anyway.
 * The client's certificate chain is untrusted input, read by GnuTLS.
 */
#include <errno.h>
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "ext_int.h"
#include "slicefit/log.h"

#define MAX_CHAIN 8

typedef struct {
  gnutls_pcert_st pcert[MAX_CHAIN];
  unsigned n;
  gnutls_privkey_t key;
} pair_t;

struct sf__tls {
  pair_t cur, old;
  struct stat cert_st, key_st; /* the files as last loaded (or last tried) */
  char prio[256];
  uint64_t reloads;
  gnutls_x509_trust_list_t ca; /* the client CA, or NULL: clients are not asked for a certificate */
  struct stat ca_st;
  uint64_t ca_reloads, clients_refused;
};

/* MHD gives the callback no closure, and a process serves one extender. */
static struct sf__tls *served;

static void pair_dispose(pair_t *p)
{
  for (unsigned i = 0; i < p->n; i++)
    gnutls_pcert_deinit(&p->pcert[i]);
  if (p->key)
    gnutls_privkey_deinit(p->key);
  memset(p, 0, sizeof *p);
}

static char *slurp(const char *path, size_t *len, char *err, size_t errlen)
{
  FILE *f = fopen(path, "rb");
  sf__buf_t b = {0};
  char chunk[4096];
  size_t n;
  if (f == NULL) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return NULL;
  }
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
    sf__buf_put(&b, chunk, n);
  fclose(f);
  return sf__buf_steal(&b, len);
}

/* The key must belong to the certificate: GnuTLS checks it when both go into credentials. */
static int check_match(const gnutls_datum_t *c, const gnutls_datum_t *k, char *err, size_t errlen)
{
  gnutls_certificate_credentials_t cred;
  gnutls_certificate_allocate_credentials(&cred);
  int rc = gnutls_certificate_set_x509_key_mem(cred, c, k, GNUTLS_X509_FMT_PEM);
  gnutls_certificate_free_credentials(cred);
  if (rc < 0)
    snprintf(err, errlen, "the certificate and key do not load as a pair: %s", gnutls_strerror(rc));
  return rc < 0 ? SF_EINVAL : 0;
}

static int load_pair(const sf_extender_config_t *cfg, pair_t *p, char *err, size_t errlen)
{
  size_t cl = 0, kl = 0;
  char *cert = slurp(cfg->tls_cert_file, &cl, err, errlen);
  char *key = cert ? slurp(cfg->tls_key_file, &kl, err, errlen) : NULL;
  int rc = SF_EINVAL;
  memset(p, 0, sizeof *p);
  if (key == NULL)
    goto done;
  gnutls_datum_t c = {(unsigned char *)cert, (unsigned)cl}, k = {(unsigned char *)key, (unsigned)kl};
  if ((rc = check_match(&c, &k, err, errlen)) != 0)
    goto done;
  p->n = MAX_CHAIN;
  int g = gnutls_pcert_list_import_x509_raw(p->pcert, &p->n, &c, GNUTLS_X509_FMT_PEM, 0);
  if (g >= 0) {
    gnutls_privkey_init(&p->key);
    g = gnutls_privkey_import_x509_raw(p->key, &k, GNUTLS_X509_FMT_PEM, NULL, 0);
  } else {
    p->n = 0;
  }
  if (g < 0) {
    snprintf(err, errlen, "%s: %s", cfg->tls_cert_file, gnutls_strerror(g));
    pair_dispose(p);
    rc = SF_EINVAL;
  }
done:
  free(cert);
  free(key);
  return rc;
}

/* The client CA bundle (PEM, one or more certificates) as a new trust list. */
static int load_ca(const char *path, gnutls_x509_trust_list_t *out, char *err, size_t errlen)
{
  size_t len = 0;
  char *pem = slurp(path, &len, err, errlen);
  *out = NULL;
  if (pem == NULL)
    return SF_EINVAL;
  gnutls_x509_trust_list_t tl;
  gnutls_x509_trust_list_init(&tl, 0);
  gnutls_datum_t d = {(unsigned char *)pem, (unsigned)len};
  int n = gnutls_x509_trust_list_add_trust_mem(tl, &d, NULL, GNUTLS_X509_FMT_PEM, 0, 0);
  free(pem);
  if (n <= 0) {
    snprintf(err, errlen, "%s: %s", path,
             n < 0 ? gnutls_strerror(n) : "no PEM certificate in the file");
    gnutls_x509_trust_list_deinit(tl, 1);
    return SF_EINVAL;
  }
  *out = tl;
  return 0;
}

/* The peer's chain, verified against the client CA for TLS client use. 0 accepts. */
static int verify_client(gnutls_session_t s)
{
  unsigned n = 0, status = GNUTLS_CERT_INVALID, k = 0;
  const gnutls_datum_t *raw = gnutls_certificate_get_peers(s, &n);
  gnutls_x509_crt_t chain[MAX_CHAIN];
  int rc = -1;
  if (served == NULL || served->ca == NULL || raw == NULL || n == 0)
    goto done;
  for (; k < n && k < MAX_CHAIN; k++) {
    gnutls_x509_crt_init(&chain[k]);
    if (gnutls_x509_crt_import(chain[k], &raw[k], GNUTLS_X509_FMT_DER) < 0) {
      k++;
      goto done;
    }
  }
  gnutls_typed_vdata_st purpose = {GNUTLS_DT_KEY_PURPOSE_OID,
                                   (unsigned char *)(uintptr_t)GNUTLS_KP_TLS_WWW_CLIENT, 0};
  if (gnutls_x509_trust_list_verify_crt2(served->ca, chain, k, &purpose, 1, 0, &status, NULL) == 0 &&
      status == 0)
    rc = 0;
done:
  for (unsigned i = 0; i < k; i++)
    gnutls_x509_crt_deinit(chain[i]);
  if (rc != 0 && served != NULL)
    served->clients_refused++;
  return rc;
}

/* Within the handshake, before the server's certificate goes out: require and verify the client's. */
static void ask_client(gnutls_session_t s)
{
  if (served == NULL || served->ca == NULL)
    return;
  gnutls_certificate_server_set_request(s, GNUTLS_CERT_REQUIRE);
  gnutls_session_set_verify_function(s, verify_client);
}

static int on_cert(gnutls_session_t s, const gnutls_datum_t *req_ca_dn, int nreqs,
                   const gnutls_pk_algorithm_t *algos, int nalgos, gnutls_pcert_st **pcert,
                   unsigned int *npcert, gnutls_privkey_t *key)
{
  (void)req_ca_dn;
  (void)nreqs;
  (void)algos;
  (void)nalgos;
  if (served == NULL || served->cur.n == 0)
    return -1;
  ask_client(s);
  *pcert = served->cur.pcert;
  *npcert = served->cur.n;
  *key = served->cur.key;
  return 0;
}

/* TLS 1.2 (or 1.3) and up, ephemeral key exchange only, AEAD suites only. */
static int priorities(const char *min, char *out, size_t cap, char *err, size_t errlen)
{
  const char *vers;
  if (min == NULL || strcmp(min, "1.2") == 0)
    vers = "+VERS-TLS1.3:+VERS-TLS1.2";
  else if (strcmp(min, "1.3") == 0)
    vers = "+VERS-TLS1.3";
  else {
    snprintf(err, errlen, "--tls-min-version %s: expected 1.2 or 1.3", min);
    return SF_EINVAL;
  }
  snprintf(out, cap,
           "SECURE128:-VERS-ALL:%s:-RSA:-CIPHER-ALL:+AES-256-GCM:+AES-128-GCM:"
           "+CHACHA20-POLY1305:%%SERVER_PRECEDENCE",
           vers);
  return 0;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
  return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
         a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

int sf__tls_start(sf_extender_t *x, struct MHD_OptionItem *opts, char *err, size_t errlen)
{
  const sf_extender_config_t *c = &x->cfg;
  if (!c->tls_cert_file != !c->tls_key_file) {
    snprintf(err, errlen, "--tls-cert-file and --tls-private-key-file go together");
    return SF_EINVAL;
  }
  if (c->tls_client_ca_file && !c->tls_cert_file) {
    snprintf(err, errlen, "--client-ca-file needs --tls-cert-file and --tls-private-key-file");
    return SF_EINVAL;
  }
  opts[0] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
  if (c->tls_cert_file == NULL)
    return 0;
  if (!MHD_is_feature_supported(MHD_FEATURE_TLS)) {
    snprintf(err, errlen, "this libmicrohttpd was built without TLS");
    return SF_EINVAL;
  }
  struct sf__tls *t = sf_xcalloc(1, sizeof *t);
  int rc = priorities(c->tls_min_version, t->prio, sizeof t->prio, err, errlen);
  stat(c->tls_cert_file, &t->cert_st);
  stat(c->tls_key_file, &t->key_st);
  if (rc == 0)
    rc = load_pair(c, &t->cur, err, errlen);
  if (rc == 0 && c->tls_client_ca_file) {
    stat(c->tls_client_ca_file, &t->ca_st);
    rc = load_ca(c->tls_client_ca_file, &t->ca, err, errlen);
  }
  if (rc) {
    pair_dispose(&t->cur);
    free(t);
    return rc;
  }
  x->tls = served = t;
  opts[0] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_CERT_CALLBACK, 0, (void *)(uintptr_t)on_cert};
  opts[1] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0, t->prio};
  opts[2] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
  return 0;
}

/* A changed client CA file that loads replaces the CA in force; one that does not is logged. */
static void check_ca(sf_extender_t *x)
{
  struct sf__tls *t = x->tls;
  struct stat st;
  const char *path = x->cfg.tls_client_ca_file;
  if (path == NULL || stat(path, &st) != 0 || same_file(&st, &t->ca_st))
    return;
  t->ca_st = st;
  gnutls_x509_trust_list_t ca;
  char err[SF_ERR_MAX];
  if (load_ca(path, &ca, err, sizeof err) != 0) {
    sf_log_warn("client CA not reloaded; the previous one stays", "error=\"%s\"", err);
    return;
  }
  gnutls_x509_trust_list_deinit(t->ca, 1);
  t->ca = ca;
  t->ca_reloads++;
  sf_log_info("client CA reloaded", "ca=%s", path);
}

void sf__tls_check(sf_extender_t *x)
{
  struct sf__tls *t = x->tls;
  struct stat cs, ks;
  if (t == NULL)
    return;
  check_ca(x);
  if (stat(x->cfg.tls_cert_file, &cs) != 0 || stat(x->cfg.tls_key_file, &ks) != 0)
    return;
  if (same_file(&cs, &t->cert_st) && same_file(&ks, &t->key_st))
    return;
  t->cert_st = cs;
  t->key_st = ks;
  pair_t p;
  char err[SF_ERR_MAX];
  if (load_pair(&x->cfg, &p, err, sizeof err) != 0) {
    sf_log_warn("serving certificate not reloaded; the previous one stays", "error=\"%s\"", err);
    return;
  }
  pair_dispose(&t->old);
  t->old = t->cur;
  t->cur = p;
  t->reloads++;
  sf_log_info("serving certificate reloaded", "cert=%s", x->cfg.tls_cert_file);
}

void sf__metrics_tls(sf__buf_t *b, const sf_extender_t *x)
{
  const struct sf__tls *t = x->tls;
  sf__buf_printf(b,
                 "# HELP slicefit_tls_certificate_reloads_total Serving certificate pairs "
                 "loaded after a change of their files.\n"
                 "# TYPE slicefit_tls_certificate_reloads_total counter\n"
                 "slicefit_tls_certificate_reloads_total %llu\n"
                 "# HELP slicefit_tls_client_ca_reloads_total Client CA files (--client-ca-file) "
                 "loaded after a change.\n# TYPE slicefit_tls_client_ca_reloads_total counter\n"
                 "slicefit_tls_client_ca_reloads_total %llu\n"
                 "# HELP slicefit_tls_clients_refused_total TLS handshakes refused for a client "
                 "certificate that does not chain to the client CA.\n"
                 "# TYPE slicefit_tls_clients_refused_total counter\n"
                 "slicefit_tls_clients_refused_total %llu\n",
                 (unsigned long long)(t ? t->reloads : 0),
                 (unsigned long long)(t ? t->ca_reloads : 0),
                 (unsigned long long)(t ? t->clients_refused : 0));
}

void sf__tls_stop(sf_extender_t *x)
{
  struct sf__tls *t = x->tls;
  if (t == NULL)
    return;
  pair_dispose(&t->cur);
  pair_dispose(&t->old);
  if (t->ca)
    gnutls_x509_trust_list_deinit(t->ca, 1);
  if (served == t)
    served = NULL;
  free(t);
  x->tls = NULL;
}
