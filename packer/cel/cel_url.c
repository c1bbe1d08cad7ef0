/*
 * The Kubernetes URL library (k8s.io/apiserver/pkg/cel/library, in the base
 * environment since CEL came to Kubernetes): url(), isURL(), getScheme(),
 * getHost(), getHostname(), getPort(), getEscapedPath() and getQuery().
 *
 * Validity follows Go's net/url as the library calls it: isURL() and url()
 * accept what url.ParseRequestURI accepts (an absolute URI, an absolute
 * path or "*"; no control characters; a host of allowed characters with a
 * numeric port; userinfo of allowed characters; well-formed %-escapes), and
 * url() then parses again with url.Parse, which cuts the fragment (it must
 * be well-escaped too) and reads "//host" after a missing scheme as an
 * authority. The accessors answer as url.URL's fields and methods do.
 *
 * A URL value (V_URL) is its text without the fragment; each accessor parses
 * it again. getQuery() (V_QUERY) is the raw query: indexing it, `in` and
 * size() decode its pairs as url.ParseQuery does (pairs split on '&', one
 * with a ';' dropped, '+' a space, a pair with a bad escape dropped).
 */
#include <string.h>
#include "cel_int.h"

enum { E_PATH, E_HOST, E_ZONE, E_USER, E_QUERY, E_FRAGMENT };

/* parse()'s answer where Go releases disagree. */
static const char UNSURE[] = "Go releases parse this host differently";

typedef struct {
  const char *scheme, *auth, *path, *query;
  size_t scheme_n, auth_n, path_n, query_n;
  bool has_auth, opaque;
} url_t;

static bool alnum(unsigned char c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static int unhex(unsigned char c)
{
  return c >= '0' && c <= '9'   ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                : -1;
}

/* Go's shouldEscape for the modes used here (path and host). */
static bool should_escape(unsigned char c, int mode)
{
  if (alnum(c))
    return false;
  if ((mode == E_HOST || mode == E_ZONE) && strchr("!$&'()*+,;=:[]<>\"", c) != NULL && c != 0)
    return false;
  if (c == '-' || c == '_' || c == '.' || c == '~')
    return false;
  if (c != 0 && strchr("$&+,/:;=?@", c) != NULL)
    return mode == E_PATH ? c == '?' : true;
  return true;
}

/*
 * Go's unescape: decodes s[0..n) into out (when not NULL; at most n bytes)
 * and returns the decoded length, or -1 where Go answers an error.
 */
static long unescape(const char *s, size_t n, int mode, char *out)
{
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '%') {
      if (i + 2 >= n)
        return -1;
      int h = unhex((unsigned char)s[i + 1]), l = unhex((unsigned char)s[i + 2]);
      if (h < 0 || l < 0)
        return -1;
      bool pct25 = s[i + 1] == '2' && s[i + 2] == '5';
      if (mode == E_HOST && h < 8 && !pct25)
        return -1;
      unsigned char v = (unsigned char)(h << 4 | l);
      if (mode == E_ZONE && !pct25 && v != ' ' && should_escape(v, E_HOST))
        return -1;
      c = v;
      i += 2;
    } else if (c == '+') {
      c = mode == E_QUERY ? ' ' : '+';
    } else if ((mode == E_HOST || mode == E_ZONE) && c < 0x80 && should_escape(c, mode)) {
      return -1;
    }
    if (out != NULL)
      out[o] = (char)c;
    o++;
  }
  return (long)o;
}

/* Go's validOptionalPort: "" or ':' and digits. */
static bool valid_port(const char *s, size_t n)
{
  if (n == 0)
    return true;
  if (s[0] != ':')
    return false;
  for (size_t i = 1; i < n; i++)
    if (s[i] < '0' || s[i] > '9')
      return false;
  return true;
}

static const char *last_of(const char *s, size_t n, char c)
{
  for (size_t i = n; i-- > 0;)
    if (s[i] == c)
      return s + i;
  return NULL;
}

/*
 * Go's parseHost; the host decodes into out (when not NULL, at most n
 * bytes): its length, -1 when Go refuses it, -2 when Go releases disagree:
 * since Go 1.24.8 and 1.25.2 (CVE-2025-47912) brackets must hold an IPv6
 * address, where older releases took anything there and brackets elsewhere.
 */
static long parse_host(const char *h, size_t n, char *out)
{
  if (n > 0 && h[0] == '[') {
    const char *rb = last_of(h, n, ']');
    if (rb == NULL)
      return -1;
    size_t i = (size_t)(rb - h);
    if (!valid_port(rb + 1, n - i - 1))
      return -1;
    const char *zone = NULL;
    for (size_t z = 0; z + 3 <= i && zone == NULL; z++)
      zone = memcmp(h + z, "%25", 3) == 0 ? h + z : NULL;
    size_t lit = zone ? (size_t)(zone - h) : i;
    if (!sf__cel_ipv6(h + 1, lit - 1) || memchr(h + 1, '[', i - 1) || memchr(h, ']', i))
      return -2;
    for (size_t z = 0; z + 3 <= i; z++) {
      if (memcmp(h + z, "%25", 3) != 0)
        continue;
      long a = unescape(h, z, E_HOST, out);
      long b = a < 0 ? -1 : unescape(h + z, i - z, E_ZONE, out ? out + a : NULL);
      long d = b < 0 ? -1 : unescape(h + i, n - i, E_HOST, out ? out + a + b : NULL);
      return d < 0 ? -1 : a + b + d;
    }
  } else {
    const char *colon = last_of(h, n, ':');
    if (colon != NULL && !valid_port(colon, n - (size_t)(colon - h)))
      return -1;
    if (memchr(h, '[', n) != NULL || memchr(h, ']', n) != NULL)
      return unescape(h, n, E_HOST, NULL) < 0 ? -1 : -2;
  }
  return unescape(h, n, E_HOST, out);
}

static bool valid_userinfo(const char *s, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (!alnum((unsigned char)s[i]) && strchr("-._:~!$&'()*+,;=%@", s[i]) == NULL)
      return false;
  return true;
}

/* Go's url.parse (request: ParseRequestURI's mode) without the fragment; NULL or why not. */
static const char *parse(const char *s, size_t n, bool request, url_t *u)
{
  memset(u, 0, sizeof *u);
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
      return "net/url: invalid control character in URL";
  if (request && n == 0)
    return "empty url";
  if (n == 1 && s[0] == '*') {
    u->path = s;
    u->path_n = 1;
    return NULL;
  }
  const char *rest = s;
  size_t rn = n;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
      continue;
    if ((c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.') {
      if (i == 0)
        break;
      continue;
    }
    if (c == ':') {
      if (i == 0)
        return "missing protocol scheme";
      u->scheme = s;
      u->scheme_n = i;
      rest = s + i + 1;
      rn = n - i - 1;
    }
    break;
  }
  size_t nq = 0;
  for (size_t i = 0; i < rn; i++)
    nq += rest[i] == '?';
  if (rn > 0 && rest[rn - 1] == '?' && nq == 1) {
    rn--;
  } else if (nq > 0) {
    const char *q = memchr(rest, '?', rn);
    u->query = q + 1;
    u->query_n = rn - (size_t)(q + 1 - rest);
    rn = (size_t)(q - rest);
  }
  if (rn == 0 || rest[0] != '/') {
    if (u->scheme_n > 0) {
      u->opaque = true;
      return NULL;
    }
    if (request)
      return "invalid URI for request";
    const char *slash = memchr(rest, '/', rn);
    size_t seg = slash ? (size_t)(slash - rest) : rn;
    if (memchr(rest, ':', seg) != NULL)
      return "first path segment in URL cannot contain colon";
  }
  bool triple = rn >= 3 && memcmp(rest, "///", 3) == 0;
  if ((u->scheme_n > 0 || (!request && !triple)) && rn >= 2 && memcmp(rest, "//", 2) == 0) {
    const char *a = rest + 2;
    const char *slash = memchr(a, '/', rn - 2);
    size_t an = slash ? (size_t)(slash - a) : rn - 2;
    const char *at = last_of(a, an, '@');
    size_t hstart = at ? (size_t)(at - a) + 1 : 0;
    long hl = parse_host(a + hstart, an - hstart, NULL);
    if (hl < 0)
      return hl == -2 ? UNSURE : "invalid host";
    if (at != NULL && (!valid_userinfo(a, hstart - 1) || unescape(a, hstart - 1, E_USER, NULL) < 0))
      return "net/url: invalid userinfo";
    u->has_auth = true;
    u->auth = a + hstart;
    u->auth_n = an - hstart;
    rest = a + an;
    rn -= an + 2;
  }
  if (unescape(rest, rn, E_PATH, NULL) < 0)
    return "invalid URL escape in the path";
  u->path = rest;
  u->path_n = rn;
  return NULL;
}

/* The scheme, lower-cased as Go does. */
static cel_val_t scheme(cel_ctx_t *c, uint32_t n, const url_t *u)
{
  char *o = sf__cel_scratch(c, u->scheme_n);
  if (o == NULL)
    return sf__cel_unk(n, "string scratch space exhausted");
  for (size_t i = 0; i < u->scheme_n; i++)
    o[i] = u->scheme[i] >= 'A' && u->scheme[i] <= 'Z' ? (char)(u->scheme[i] + 32) : u->scheme[i];
  return sf__cel_str(o, u->scheme_n);
}

/* url(s): ParseRequestURI's check, then Parse's reading. */
static cel_val_t to_url(uint32_t n, const cel_val_t *s, bool test)
{
  url_t u;
  const char *why = parse(s->v.s, s->n, true, &u);
  if (why == UNSURE)
    return sf__cel_unk(n, UNSURE);
  if (test)
    return sf__cel_bool(why == NULL);
  size_t len = s->n;
  const char *hash = memchr(s->v.s, '#', len);
  if (why == NULL && hash != NULL) {
    len = (size_t)(hash - s->v.s);
    if (unescape(hash + 1, s->n - len - 1, E_FRAGMENT, NULL) < 0)
      why = "invalid URL escape in the fragment";
  }
  if (why == NULL)
    why = parse(s->v.s, len, false, &u);
  if (why == UNSURE)
    return sf__cel_unk(n, UNSURE);
  if (why != NULL)
    return sf__cel_err(n, "URL parse error during conversion from string");
  cel_val_t r = {.t = V_URL, .n = (uint32_t)len, .v.s = s->v.s};
  return r;
}

/* The decoded host into buf (the URL's length bounds it). */
static size_t host_of(const url_t *u, char *buf)
{
  return u->has_auth ? (size_t)parse_host(u->auth, u->auth_n, buf) : 0;
}

/* Go's splitHostPort: the host without port and brackets (port false) or the port. */
static cel_val_t host_part(cel_ctx_t *c, uint32_t n, const url_t *u, bool port)
{
  char *h = sf__cel_scratch(c, u->auth_n);
  if (h == NULL)
    return sf__cel_unk(n, "string scratch space exhausted");
  size_t len = host_of(u, h), hn = len;
  const char *colon = last_of(h, len, ':');
  const char *p = h + len;
  if (colon != NULL && valid_port(colon, len - (size_t)(colon - h))) {
    hn = (size_t)(colon - h);
    p = colon + 1;
  }
  if (port)
    return sf__cel_str(p, len - (size_t)(p - h));
  if (hn >= 2 && h[0] == '[' && h[hn - 1] == ']')
    return sf__cel_str(h + 1, hn - 2);
  return sf__cel_str(h, hn);
}

/* Go's EscapedPath: the path as written when it is validly encoded, else re-escaped. */
static cel_val_t escaped_path(cel_ctx_t *c, uint32_t n, const url_t *u)
{
  bool valid = true;
  for (size_t i = 0; i < u->path_n && valid; i++) {
    unsigned char ch = (unsigned char)u->path[i];
    valid = strchr("!$&'()*+,;=:@[]%", ch) != NULL || !should_escape(ch, E_PATH);
  }
  if (valid)
    return sf__cel_str(u->path, u->path_n);
  char *dec = sf__cel_scratch(c, 4 * u->path_n);
  if (dec == NULL)
    return sf__cel_unk(n, "string scratch space exhausted");
  size_t dn = (size_t)unescape(u->path, u->path_n, E_PATH, dec), o = dn;
  static const char hex[] = "0123456789ABCDEF";
  for (size_t i = 0; i < dn; i++) {
    unsigned char ch = (unsigned char)dec[i];
    if (should_escape(ch, E_PATH)) {
      dec[o++] = '%';
      dec[o++] = hex[ch >> 4];
      dec[o++] = hex[ch & 15];
    } else {
      dec[o++] = (char)ch;
    }
  }
  return sf__cel_str(dec + dn, o - dn);
}

cel_val_t sf__cel_url_call(cel_ctx_t *c, uint32_t n, int fn, const cel_val_t *a, uint32_t na)
{
  (void)na;
  if (fn == FN_URL || fn == FN_ISURL)
    return a[0].t == V_STR ? to_url(n, &a[0], fn == FN_ISURL) : sf__cel_err(n, "no such overload");
  if (a[0].t != V_URL)
    return sf__cel_err(n, "no such overload");
  url_t u;
  parse(a[0].v.s, a[0].n, false, &u);
  switch (fn) {
  case FN_GETSCHEME: return scheme(c, n, &u);
  case FN_GETHOST: {
    char *h = sf__cel_scratch(c, u.auth_n);
    return h == NULL ? sf__cel_unk(n, "string scratch space exhausted")
                     : sf__cel_str(h, host_of(&u, h));
  }
  case FN_GETHOSTNAME: return host_part(c, n, &u, false);
  case FN_GETPORT: return host_part(c, n, &u, true);
  case FN_GETESCAPEDPATH: return u.opaque ? sf__cel_str("", 0) : escaped_path(c, n, &u);
  default: {
    cel_val_t q = {.t = V_QUERY, .n = (uint32_t)u.query_n, .v.s = u.query ? u.query : ""};
    return q;
  }
  }
}

/* The next pair of raw query q from *at: false at the end; a dropped pair has key NULL. */
static bool next_pair(const cel_val_t *q, size_t *at, const char **k, size_t *kn, const char **v,
                      size_t *vn)
{
  if (*at >= q->n)
    return false;
  const char *s = q->v.s + *at;
  const char *amp = memchr(s, '&', q->n - *at);
  size_t len = amp ? (size_t)(amp - s) : q->n - *at;
  *at += len + 1;
  *k = NULL;
  if (len == 0 || memchr(s, ';', len) != NULL)
    return true;
  const char *eq = memchr(s, '=', len);
  *kn = eq ? (size_t)(eq - s) : len;
  *v = eq ? eq + 1 : s + len;
  *vn = eq ? len - *kn - 1 : 0;
  if (unescape(s, *kn, E_QUERY, NULL) >= 0 && unescape(*v, *vn, E_QUERY, NULL) >= 0)
    *k = s;
  return true;
}

/* The next decoded byte of a query component (valid escapes), advancing *i. */
static char qbyte(const char *s, size_t *i)
{
  char ch = s[*i];
  if (ch == '%') {
    ch = (char)(unhex((unsigned char)s[*i + 1]) << 4 | unhex((unsigned char)s[*i + 2]));
    *i += 3;
    return ch;
  }
  (*i)++;
  return ch == '+' ? ' ' : ch;
}

/* Does the raw component s decode to t? (eq_raw: t is raw too.) */
static bool key_eq(const char *s, size_t sn, const char *t, size_t tn, bool raw)
{
  size_t i = 0, j = 0;
  while (i < sn && j < tn)
    if (qbyte(s, &i) != (raw ? qbyte(t, &j) : t[j++]))
      return false;
  return i == sn && j == tn;
}

int sf__cel_query_lookup(cel_ctx_t *c, uint32_t n, const cel_val_t *q, const char *key, size_t kn,
                         cel_val_t *out)
{
  size_t at = 0, count = 0, pk, pv;
  const char *k, *v;
  while (next_pair(q, &at, &k, &pk, &v, &pv))
    count += k != NULL && key_eq(k, pk, key, kn, false);
  if (count == 0 || out == NULL)
    return count > 0;
  cel_val_t *l = sf__cel_reserve(c, count);
  if (l == NULL) {
    *out = sf__cel_unk(n, "list space exhausted");
    return 1;
  }
  size_t i = 0;
  at = 0;
  while (next_pair(q, &at, &k, &pk, &v, &pv)) {
    if (k == NULL || !key_eq(k, pk, key, kn, false))
      continue;
    char *o = sf__cel_scratch(c, pv);
    if (o == NULL) {
      *out = sf__cel_unk(n, "string scratch space exhausted");
      return 1;
    }
    size_t len = (size_t)unescape(v, pv, E_QUERY, o);
    l[i++] = sf__cel_str(o, len);
  }
  memset(out, 0, sizeof *out);
  out->t = V_LIST;
  out->n = (uint32_t)count;
  out->v.l = l;
  return 1;
}

int64_t sf__cel_query_size(const cel_val_t *q)
{
  size_t at = 0, pk, pv;
  const char *k, *v;
  int64_t keys = 0;
  while (next_pair(q, &at, &k, &pk, &v, &pv)) {
    if (k == NULL)
      continue;
    size_t at2 = 0, pk2, pv2;
    const char *k2, *v2;
    bool seen = false;
    while (!seen && q->v.s + at2 < k && next_pair(q, &at2, &k2, &pk2, &v2, &pv2))
      seen = k2 != NULL && key_eq(k2, pk2, k, pk, true);
    keys += !seen;
  }
  return keys;
}
