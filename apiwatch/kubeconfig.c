/*
 * Where the API server is and how to authenticate: a kubeconfig file (YAML,
 * parsed by libyaml into a document tree) resolved through its
 * current-context, or the in-cluster service account. The file is
 * untrusted input: every field is checked for its type, and errors name
 * the file and the field ("clusters[name=kind].cluster.server: missing").
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>
#include "slicefit/apiwatch.h"

#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount/"
#define MAX_FILE_BYTES ((size_t)16 << 20)

typedef struct {
  yaml_document_t doc;
  const char *name; /* the file, for errors */
  const char *dir;  /* resolves relative paths */
  char *err;
  size_t errlen;
} kdoc_t;

static int fail(kdoc_t *d, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(kdoc_t *d, int code, const char *fmt, ...)
{
  int n = snprintf(d->err, d->errlen, "kubeconfig %s: ", d->name);
  va_list ap;
  va_start(ap, fmt);
  if (n >= 0 && (size_t)n < d->errlen)
    vsnprintf(d->err + n, d->errlen - (size_t)n, fmt, ap);
  va_end(ap);
  return code;
}

/* The value node of `key` in mapping `map`, or NULL. */
static yaml_node_t *get(kdoc_t *d, yaml_node_t *map, const char *key)
{
  if (!map || map->type != YAML_MAPPING_NODE)
    return NULL;
  for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
    yaml_node_t *k = yaml_document_get_node(&d->doc, p->key);
    if (k && k->type == YAML_SCALAR_NODE && strlen(key) == k->data.scalar.length &&
        memcmp(k->data.scalar.value, key, k->data.scalar.length) == 0)
      return yaml_document_get_node(&d->doc, p->value);
  }
  return NULL;
}

/* A scalar's text (borrowed), NULL if absent; SF_EINVAL if present and not a scalar. */
static int scalar(kdoc_t *d, yaml_node_t *map, const char *key, const char *where, const char **out)
{
  yaml_node_t *n = get(d, map, key);
  *out = NULL;
  if (!n)
    return 0;
  if (n->type != YAML_SCALAR_NODE)
    return fail(d, SF_EINVAL, "%s.%s: not a string", where, key);
  *out = (const char *)n->data.scalar.value;
  if (strlen(*out) != n->data.scalar.length)
    return fail(d, SF_EINVAL, "%s.%s: holds a NUL byte", where, key);
  return 0;
}

/* The entry named `name` of the list `list` ("clusters", ...), its `inner` mapping. */
static int named(kdoc_t *d, const char *list, const char *inner, const char *name, yaml_node_t **out)
{
  yaml_node_t *seq = get(d, yaml_document_get_root_node(&d->doc), list);
  *out = NULL;
  if (seq && seq->type != YAML_SEQUENCE_NODE)
    return fail(d, SF_EINVAL, "%s: not a list", list);
  for (yaml_node_item_t *it = seq ? seq->data.sequence.items.start : NULL;
       seq && it < seq->data.sequence.items.top; it++) {
    yaml_node_t *e = yaml_document_get_node(&d->doc, *it);
    const char *n;
    if (scalar(d, e, "name", list, &n))
      return SF_EINVAL;
    if (!n || strcmp(n, name) != 0)
      continue;
    *out = get(d, e, inner);
    if (!*out || (*out)->type != YAML_MAPPING_NODE)
      return fail(d, SF_EINVAL, "%s[name=%s].%s: missing or not a mapping", list, name, inner);
    return 0;
  }
  return fail(d, SF_ENOENT, "%s: no entry named \"%s\"", list, name);
}

static int b64val(unsigned char c)
{
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '+')
    return 62;
  if (c == '/')
    return 63;
  return -1;
}

/* Standard base64 (whitespace ignored, '=' padding optional) into a new buffer. */
static int b64decode(const char *s, char **out, size_t *outlen)
{
  size_t n = strlen(s), o = 0;
  unsigned acc = 0, bits = 0;
  char *buf = sf_xmalloc(n / 4 * 3 + 4);
  bool pad = false;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
      continue;
    if (c == '=') {
      pad = true;
      continue;
    }
    int v = b64val(c);
    if (v < 0 || pad) {
      free(buf);
      return SF_EINVAL;
    }
    acc = (acc << 6) | (unsigned)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      buf[o++] = (char)((acc >> bits) & 0xff);
    }
  }
  if (bits >= 6) {
    free(buf);
    return SF_EINVAL;
  }
  buf[o] = '\0';
  *out = buf;
  *outlen = o;
  return 0;
}

/* A path field, made absolute against the file's folder. */
static char *path_of(kdoc_t *d, const char *p)
{
  if (!p || !*p)
    return NULL;
  if (p[0] == '/' || !d->dir || !*d->dir)
    return sf_xstrdup(p);
  size_t n = strlen(d->dir) + strlen(p) + 2;
  char *s = sf_xmalloc(n);
  snprintf(s, n, "%s/%s", d->dir, p);
  return s;
}

/* A "-data" field (base64) and its file twin. */
static int pem(kdoc_t *d, yaml_node_t *m, const char *where, const char *filekey, char **file,
               char **data, size_t *len)
{
  const char *f, *b;
  char datakey[64];
  snprintf(datakey, sizeof datakey, "%s-data", filekey);
  if (scalar(d, m, filekey, where, &f) || scalar(d, m, datakey, where, &b))
    return SF_EINVAL;
  if (b && *b && b64decode(b, data, len))
    return fail(d, SF_EINVAL, "%s.%s: not base64", where, datakey);
  if (!*data)
    *file = path_of(d, f);
  return 0;
}

static int parse_bool(kdoc_t *d, yaml_node_t *m, const char *key, const char *where, bool *out)
{
  const char *v;
  if (scalar(d, m, key, where, &v))
    return SF_EINVAL;
  if (!v)
    return 0;
  if (!strcmp(v, "true") || !strcmp(v, "True") || !strcmp(v, "TRUE"))
    *out = true;
  else if (!strcmp(v, "false") || !strcmp(v, "False") || !strcmp(v, "FALSE"))
    *out = false;
  else
    return fail(d, SF_EINVAL, "%s.%s: '%s' is not a boolean", where, key, v);
  return 0;
}

static int read_cluster(kdoc_t *d, const char *name, sf_kubeconfig_t *kc)
{
  yaml_node_t *c;
  char where[300];
  int rc = named(d, "clusters", "cluster", name, &c);
  if (rc)
    return rc;
  snprintf(where, sizeof where, "clusters[name=%s].cluster", name);
  const char *server;
  if (scalar(d, c, "server", where, &server))
    return SF_EINVAL;
  if (!server || !*server)
    return fail(d, SF_EINVAL, "%s.server: missing", where);
  if (strncmp(server, "https://", 8) && strncmp(server, "http://", 7))
    return fail(d, SF_EINVAL, "%s.server: '%s' is not an http(s) URL", where, server);
  /* "https://" or "https:///x" would become a URL without a host that curl retries for ever. */
  const char *host = strstr(server, "://") + 3;
  if (*host == '\0' || *host == '/' || *host == '?' || *host == '#' || *host == ':')
    return fail(d, SF_EINVAL, "%s.server: '%s' names no host", where, server);
  kc->server = sf_xstrdup(server);
  size_t n = strlen(kc->server);
  while (n > 0 && kc->server[n - 1] == '/')
    kc->server[--n] = '\0';
  if (parse_bool(d, c, "insecure-skip-tls-verify", where, &kc->insecure))
    return SF_EINVAL;
  rc = pem(d, c, where, "certificate-authority", &kc->ca_file, &kc->ca_data, &kc->ca_len);
  /* As kubectl: skipping verification and naming a CA contradict each other. */
  if (rc == 0 && kc->insecure && (kc->ca_file || kc->ca_data))
    return fail(d, SF_EINVAL,
                "%s: insecure-skip-tls-verify and a certificate authority are both set; "
                "keep one",
                where);
  return rc;
}

static int read_user(kdoc_t *d, const char *name, sf_kubeconfig_t *kc)
{
  yaml_node_t *u;
  char where[300];
  int rc = named(d, "users", "user", name, &u);
  if (rc)
    return rc;
  snprintf(where, sizeof where, "users[name=%s].user", name);
  static const char *const unsupported[] = {"exec", "auth-provider", "username", "password"};
  for (size_t i = 0; i < sizeof unsupported / sizeof *unsupported; i++)
    if (get(d, u, unsupported[i]))
      return fail(d, SF_EINVAL, "%s.%s: not supported (use a token or a client certificate)", where,
                  unsupported[i]);
  const char *tok, *tokfile;
  if (scalar(d, u, "token", where, &tok) || scalar(d, u, "tokenFile", where, &tokfile))
    return SF_EINVAL;
  if (tok && *tok)
    kc->token = sf_xstrdup(tok);
  else
    kc->token_file = path_of(d, tokfile);
  if (pem(d, u, where, "client-certificate", &kc->cert_file, &kc->cert_data, &kc->cert_len) ||
      pem(d, u, where, "client-key", &kc->key_file, &kc->key_data, &kc->key_len))
    return SF_EINVAL;
  bool cert = kc->cert_file || kc->cert_data, key = kc->key_file || kc->key_data;
  if (cert != key)
    return fail(d, SF_EINVAL, "%s.%s: missing (a client certificate needs its key)", where,
                cert ? "client-key" : "client-certificate");
  return 0;
}

static int resolve(kdoc_t *d, sf_kubeconfig_t *kc)
{
  yaml_node_t *root = yaml_document_get_root_node(&d->doc);
  if (!root || root->type != YAML_MAPPING_NODE)
    return fail(d, SF_EINVAL, "not a YAML mapping");
  const char *cur, *cluster, *user;
  if (scalar(d, root, "current-context", "", &cur))
    return SF_EINVAL;
  if (!cur || !*cur)
    return fail(d, SF_EINVAL, "current-context: missing");
  yaml_node_t *ctx;
  char where[300];
  int rc = named(d, "contexts", "context", cur, &ctx);
  if (rc)
    return rc;
  snprintf(where, sizeof where, "contexts[name=%s].context", cur);
  if (scalar(d, ctx, "cluster", where, &cluster) || scalar(d, ctx, "user", where, &user))
    return SF_EINVAL;
  if (!cluster || !*cluster)
    return fail(d, SF_EINVAL, "%s.cluster: missing", where);
  rc = read_cluster(d, cluster, kc);
  if (!rc && user && *user)
    rc = read_user(d, user, kc);
  return rc;
}

int sf_kubeconfig_parse(sf_kubeconfig_t *out, const char *text, size_t len, const char *name,
                        const char *dir, char *err, size_t errlen)
{
  kdoc_t d = {.name = name ? name : "(memory)", .dir = dir, .err = err, .errlen = errlen};
  yaml_parser_t p;
  int rc = 0;
  bool have_doc = false;
  memset(out, 0, sizeof *out);
  yaml_parser_initialize(&p);
  yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
  if (!yaml_parser_load(&p, &d.doc)) {
    rc = fail(&d, SF_EINVAL, "line %zu: %s", p.problem_mark.line + 1,
              p.problem ? p.problem : "invalid YAML");
    goto done;
  }
  have_doc = true;
  rc = resolve(&d, out);
done:
  if (have_doc)
    yaml_document_delete(&d.doc);
  yaml_parser_delete(&p);
  if (rc)
    sf_kubeconfig_dispose(out);
  return rc;
}

/* Reads a whole file into a new NUL-terminated buffer; SF_ENOENT with err. */
static int slurp(const char *path, char **out, size_t *outlen, char *err, size_t errlen)
{
  FILE *f = fopen(path, "rb");
  char *buf = NULL;
  size_t n = 0, cap = 0;
  int rc = 0;
  if (!f) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return SF_ENOENT;
  }
  for (;;) {
    sf_xgrow(&buf, &cap, n + 4096, 1);
    size_t got = fread(buf + n, 1, cap - n - 1, f);
    n += got;
    if (n > MAX_FILE_BYTES) {
      snprintf(err, errlen, "%s: larger than 16 MiB", path);
      rc = SF_E2BIG;
      break;
    }
    if (got == 0)
      break;
  }
  if (!rc && ferror(f)) {
    snprintf(err, errlen, "%s: read error", path);
    rc = SF_ENOENT;
  }
  fclose(f);
  if (rc) {
    free(buf);
    return rc;
  }
  buf[n] = '\0';
  *out = buf;
  *outlen = n;
  return 0;
}

int sf_kubeconfig_load(sf_kubeconfig_t *out, const char *path, char *err, size_t errlen)
{
  char *text = NULL, *dir = sf_xstrdup(path);
  size_t len;
  memset(out, 0, sizeof *out);
  int rc = slurp(path, &text, &len, err, errlen);
  if (rc)
    goto done;
  char *slash = strrchr(dir, '/');
  if (slash)
    *slash = '\0';
  else
    dir[0] = '\0';
  rc = sf_kubeconfig_parse(out, text, len, path, slash ? (slash == dir ? "/" : dir) : NULL, err,
                           errlen);
done:
  free(text);
  free(dir);
  return rc;
}

int sf_kubeconfig_incluster(sf_kubeconfig_t *out, const sf_incluster_paths_t *paths, char *err,
                            size_t errlen)
{
  const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
  memset(out, 0, sizeof *out);
  if (!host || !*host || !port || !*port) {
    snprintf(err, errlen,
             "in-cluster config: KUBERNETES_SERVICE_HOST and "
             "KUBERNETES_SERVICE_PORT must both be set (not running in a pod?)");
    return SF_ENOENT;
  }
  size_t n = strlen(host) + strlen(port) + 16;
  out->server = sf_xmalloc(n);
  bool v6 = strchr(host, ':') != NULL;
  snprintf(out->server, n, "https://%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "", port);
  out->token_file = sf_xstrdup(paths && paths->token_file ? paths->token_file : SA_DIR "token");
  out->ca_file = sf_xstrdup(paths && paths->ca_file ? paths->ca_file : SA_DIR "ca.crt");
  char *tok = sf_kubeconfig_token(out, err, errlen);
  if (!tok) {
    sf_kubeconfig_dispose(out);
    return SF_ENOENT;
  }
  free(tok);
  return 0;
}

/* A token goes into a header line: no control bytes. */
static char *checked(char *tok, const char *from, char *err, size_t errlen)
{
  for (const char *p = tok; *p; p++) {
    if ((unsigned char)*p < 0x20 || *p == 0x7f) {
      snprintf(err, errlen, "%s: the token holds a control character", from);
      free(tok);
      return NULL;
    }
  }
  return tok;
}

char *sf_kubeconfig_token(const sf_kubeconfig_t *kc, char *err, size_t errlen)
{
  if (kc->token)
    return checked(sf_xstrdup(kc->token), "user.token", err, errlen);
  if (!kc->token_file) {
    if (errlen)
      err[0] = '\0';
    return NULL;
  }
  char *text;
  size_t len;
  if (slurp(kc->token_file, &text, &len, err, errlen))
    return NULL;
  size_t b = 0;
  while (b < len && (text[b] == ' ' || text[b] == '\n' || text[b] == '\r' || text[b] == '\t'))
    b++;
  while (len > b && (text[len - 1] == ' ' || text[len - 1] == '\n' || text[len - 1] == '\r' ||
                     text[len - 1] == '\t'))
    len--;
  memmove(text, text + b, len - b);
  text[len - b] = '\0';
  if (!text[0]) {
    snprintf(err, errlen, "%s: empty token", kc->token_file);
    free(text);
    return NULL;
  }
  return checked(text, kc->token_file, err, errlen);
}

int sf_kubeconfig_check_transport(const sf_kubeconfig_t *kc, bool allow_plain_token, char *err,
                                  size_t errlen)
{
  bool token = kc->token || kc->token_file;
  if (!token || allow_plain_token || !kc->server || strncmp(kc->server, "http://", 7) != 0)
    return 0;
  snprintf(err, errlen,
           "%s: a bearer token would go over plain http; use https (or, for tests only, "
           "--allow-token-over-http)",
           kc->server);
  return SF_EINVAL;
}

void sf_kubeconfig_dispose(sf_kubeconfig_t *kc)
{
  if (!kc)
    return;
  free(kc->server);
  free(kc->ca_file);
  free(kc->ca_data);
  free(kc->token);
  free(kc->token_file);
  free(kc->cert_file);
  free(kc->cert_data);
  free(kc->key_file);
  free(kc->key_data);
  memset(kc, 0, sizeof *kc);
}
