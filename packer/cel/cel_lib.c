/*
 * CEL's function library as DRA selectors see it: strings, Kubernetes
 * quantities (through sf_quantity_parse: exact int64 milli-units), semantic
 * versions (strict SemVer 2.0.0, as the Kubernetes semver library parses
 * them), optionals and the basic conversions. Arguments arrive evaluated and
 * free of errors; a wrong argument type is CEL's "no such overload" error.
 * What Kubernetes can compute but int64 milli-units cannot hold (quantity
 * "1E", finer than 1m, sums past 9.2e15 units) is UNKNOWN, never an error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cel_int.h"
#include "slicefit/quantity.h"

static cel_val_t overload(uint32_t n)
{
  return sf__cel_err(n, "no such overload");
}

cel_val_t sf__cel_str(const char *s, size_t n)
{
  cel_val_t r = {.t = V_STR, .n = (uint32_t)n, .v.s = s};
  return r;
}

#define str_val sf__cel_str

static cel_val_t qty_val(sf_milli_t q)
{
  cel_val_t r = {.t = V_QTY, .v.q = q};
  return r;
}

static int sign3(int64_t a, int64_t b)
{
  return a < b ? -1 : a > b;
}

/* ---- semantic versions ---- */

static bool isdig(char c)
{
  return c >= '0' && c <= '9';
}

static bool isalnumh(char c)
{
  return isdig(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
}

/* A numeric part at *i (no leading zero, fits int64); -1 on failure. */
static int64_t vnum(const char *s, size_t n, size_t *i)
{
  size_t start = *i;
  int64_t v = 0;
  for (; *i < n && isdig(s[*i]); (*i)++) {
    if (v > (INT64_MAX - 9) / 10)
      return -1;
    v = v * 10 + (s[*i] - '0');
  }
  if (*i == start || (s[start] == '0' && *i - start > 1))
    return -1;
  return v;
}

/* Dot-separated identifiers at *i up to '+' or the end; numeric ones without leading zeros when strict. */
static bool idents(const char *s, size_t n, size_t *i, bool strict)
{
  for (;;) {
    size_t start = *i;
    bool digits = true;
    for (; *i < n && isalnumh(s[*i]); (*i)++)
      digits &= isdig(s[*i]);
    if (*i == start || (strict && digits && s[start] == '0' && *i - start > 1))
      return false;
    if (*i >= n || s[*i] != '.')
      return true;
    (*i)++;
  }
}

int sf__cel_semver(const char *s, size_t n, int64_t part[3])
{
  size_t i = 0;
  int64_t p[3];
  for (int k = 0; k < 3; k++) {
    if (k > 0 && (i >= n || s[i++] != '.'))
      return -1;
    if ((p[k] = vnum(s, n, &i)) < 0)
      return -1;
  }
  if (i < n && s[i] == '-' && (++i, !idents(s, n, &i, true)))
    return -1;
  if (i < n && s[i] == '+' && (++i, !idents(s, n, &i, false)))
    return -1;
  if (i != n)
    return -1;
  if (part != NULL)
    memcpy(part, p, sizeof p);
  return 0;
}

/* The prerelease of a valid version: its start and length (0 when none). */
static size_t prerelease(const char *s, size_t n, const char **pre)
{
  const char *dash = memchr(s, '-', n), *plus = memchr(s, '+', n);
  if (dash == NULL || (plus != NULL && plus < dash))
    return 0;
  *pre = dash + 1;
  return (size_t)((plus ? plus : s + n) - *pre);
}

static int ident_cmp(const char *a, size_t an, const char *b, size_t bn)
{
  bool na = true, nb = true;
  for (size_t i = 0; i < an; i++)
    na &= isdig(a[i]);
  for (size_t i = 0; i < bn; i++)
    nb &= isdig(b[i]);
  if (na != nb)
    return na ? -1 : 1;
  if (na && an != bn)
    return an < bn ? -1 : 1;
  int r = memcmp(a, b, an < bn ? an : bn);
  return r != 0 ? (r < 0 ? -1 : 1) : sign3((int64_t)an, (int64_t)bn);
}

static int pre_cmp(const char *a, size_t an, const char *b, size_t bn)
{
  if (an == 0 || bn == 0)
    return an == bn ? 0 : an == 0 ? 1 : -1;
  for (;;) {
    const char *ea = memchr(a, '.', an), *eb = memchr(b, '.', bn);
    size_t la = ea ? (size_t)(ea - a) : an, lb = eb ? (size_t)(eb - b) : bn;
    int r = ident_cmp(a, la, b, lb);
    if (r != 0)
      return r;
    if (ea == NULL || eb == NULL)
      return ea == eb ? 0 : ea == NULL ? -1 : 1;
    a = ea + 1;
    an -= la + 1;
    b = eb + 1;
    bn -= lb + 1;
  }
}

int sf__cel_semver_cmp(const char *a, size_t an, const char *b, size_t bn)
{
  int64_t pa[3] = {0, 0, 0}, pb[3] = {0, 0, 0};
  sf__cel_semver(a, an, pa);
  sf__cel_semver(b, bn, pb);
  for (int k = 0; k < 3; k++)
    if (pa[k] != pb[k])
      return sign3(pa[k], pb[k]);
  const char *xa = NULL, *xb = NULL;
  size_t la = prerelease(a, an, &xa), lb = prerelease(b, bn, &xb);
  return pre_cmp(xa, la, xb, lb);
}

/*
 * semver(s, normalize): with normalize, a leading 'v' is dropped and a
 * missing minor or patch becomes 0 ("v1.2" is "1.2.0"), as the Kubernetes
 * library does.
 */
static cel_val_t semver(cel_ctx_t *c, uint32_t n, const cel_val_t *s, bool normalize, bool test)
{
  const char *t = s->v.s;
  size_t len = s->n;
  if (normalize) {
    size_t skip = len > 0 && t[0] == 'v';
    size_t core = skip, dots = 0;
    while (core < len && t[core] != '-' && t[core] != '+')
      dots += t[core++] == '.';
    char *buf = sf__cel_scratch(c, len + 4);
    if (buf == NULL)
      return sf__cel_unk(n, "string scratch space exhausted");
    size_t o = core - skip;
    memcpy(buf, t + skip, o);
    for (; dots < 2; dots++, o += 2)
      memcpy(buf + o, ".0", 2);
    memcpy(buf + o, t + core, len - core);
    o += len - core;
    buf[o] = '\0';
    t = buf;
    len = o;
  }
  bool ok = sf__cel_semver(t, len, NULL) == 0;
  if (test)
    return sf__cel_bool(ok);
  cel_val_t r = {.t = V_SEMVER, .n = (uint32_t)len, .v.s = t};
  return ok ? r : sf__cel_err(n, "invalid semantic version");
}

/* ---- quantities ---- */

/* The resource.Quantity grammar, without range limits. */
static bool qty_syntax(const char *s, size_t n)
{
  static const char *const suffixes[] = {"",  "n", "u",  "m",  "k",  "M",  "G",  "T",
                                         "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  size_t i = s != NULL && n > 0 && (s[0] == '+' || s[0] == '-'), digits = 0;
  for (; i < n && isdig(s[i]); i++)
    digits++;
  if (i < n && s[i] == '.')
    for (i++; i < n && isdig(s[i]); i++)
      digits++;
  if (digits == 0)
    return false;
  for (size_t k = 0; k < sizeof suffixes / sizeof suffixes[0]; k++)
    if (strlen(suffixes[k]) == n - i && memcmp(suffixes[k], s + i, n - i) == 0)
      return true;
  if (s[i] != 'e' && s[i] != 'E')
    return false;
  i += 1u + ((i + 1 < n && (s[i + 1] == '+' || s[i + 1] == '-')) ? 1u : 0u);
  size_t start = i;
  while (i < n && isdig(s[i]))
    i++;
  return i == n && i > start;
}

static cel_val_t quantity(uint32_t n, const cel_val_t *s, bool test)
{
  sf_milli_t q;
  int rc = sf_quantity_parse_n(s->v.s, s->n, &q);
  bool syntax = qty_syntax(s->v.s, s->n);
  if (test)
    return sf__cel_bool(rc == 0 || syntax);
  if (rc == 0)
    return qty_val(q);
  return syntax ? sf__cel_unk(n, "quantity outside int64 milli-units")
                : sf__cel_err(n, "invalid quantity");
}

static cel_val_t qty_arith(uint32_t n, sf_milli_t a, const cel_val_t *b, bool sub)
{
  sf_milli_t v = b->v.q, r;
  if (b->t == V_INT && __builtin_mul_overflow(b->v.i, (int64_t)1000, &v))
    return sf__cel_unk(n, "quantity outside int64 milli-units");
  bool over = sub ? __builtin_sub_overflow(a, v, &r) : __builtin_add_overflow(a, v, &r);
  return over ? sf__cel_unk(n, "quantity outside int64 milli-units") : qty_val(r);
}

static cel_val_t qty_method(uint32_t n, int fn, const cel_val_t *a, uint32_t na)
{
  sf_milli_t q = a[0].v.q;
  if (na == 2 && (fn == FN_ADD || fn == FN_SUB) && (a[1].t == V_QTY || a[1].t == V_INT))
    return qty_arith(n, q, &a[1], fn == FN_SUB);
  if (na == 2 && a[1].t != V_QTY)
    return overload(n);
  switch (fn) {
  case FN_COMPARE: return sf__cel_int(sign3(q, a[1].v.q));
  case FN_GT: return sf__cel_bool(q > a[1].v.q);
  case FN_LT: return sf__cel_bool(q < a[1].v.q);
  case FN_ASINT:
    return q % 1000 == 0 ? sf__cel_int(q / 1000) : sf__cel_err(n, "cannot convert value to integer");
  case FN_ISINT: return sf__cel_bool(q % 1000 == 0);
  case FN_SIGN: return sf__cel_int(sign3(q, 0));
  case FN_ASFLOAT: {
    cel_val_t r = {.t = V_DOUBLE, .v.d = (double)q / 1000.0};
    return r;
  }
  default: return overload(n);
  }
}

static cel_val_t semver_method(uint32_t n, int fn, const cel_val_t *a, uint32_t na)
{
  int64_t part[3];
  if (na == 2) {
    if (a[1].t != V_SEMVER)
      return overload(n);
    int r = sf__cel_semver_cmp(a[0].v.s, a[0].n, a[1].v.s, a[1].n);
    return fn == FN_COMPARE ? sf__cel_int(r)
           : fn == FN_GT    ? sf__cel_bool(r > 0)
           : fn == FN_LT    ? sf__cel_bool(r < 0)
                            : overload(n);
  }
  if (fn != FN_MAJOR && fn != FN_MINOR && fn != FN_PATCH)
    return overload(n);
  sf__cel_semver(a[0].v.s, a[0].n, part);
  return sf__cel_int(part[fn - FN_MAJOR]);
}

/* ---- strings ---- */

static int64_t codepoints(const char *s, size_t n)
{
  int64_t k = 0;
  for (size_t i = 0; i < n; i++)
    k += ((unsigned char)s[i] & 0xC0) != 0x80;
  return k;
}

cel_re_t *sf__cel_regex(cel_ctx_t *c, uint32_t n, const cel_val_t *pat, cel_re_t *dyn)
{
  const cel_node_t *nd = &c->p->nodes[n];
  if (nd->v.i >= 0)
    return &c->p->res[nd->v.i];
  sf__cel_re_compile(dyn, pat->v.s, pat->n, nd->fn != FN_MATCHES);
  return dyn;
}

static cel_val_t matches(cel_ctx_t *c, uint32_t n, const cel_val_t *s, const cel_val_t *pat)
{
  const cel_node_t *nd = &c->p->nodes[n];
  cel_re_t dyn, *re = sf__cel_regex(c, n, pat, &dyn);
  cel_val_t r = sf__cel_unk(n, "regular expression not supported by the POSIX translation");
  bool wide = false;
  for (uint32_t i = 0; i < s->n; i++)
    wide |= (unsigned char)s->v.s[i] >= 0x80;
  if (re->ok && memchr(s->v.s, '\0', s->n) != NULL)
    r = sf__cel_unk(n, "matches() on a string holding NUL");
  else if (re->ok && re->bytewise && wide)
    r = sf__cel_unk(n, "matches() of '.' or a negated class on non-ASCII text");
  else if (re->ok)
    r = sf__cel_bool(regexec(&re->re, s->v.s, 0, NULL, 0) == 0);
  if (nd->v.i < 0 && dyn.ok)
    regfree(&dyn.re);
  return r;
}

static cel_val_t recase(cel_ctx_t *c, uint32_t n, const cel_val_t *s, bool upper)
{
  char *o = sf__cel_scratch(c, s->n);
  if (o == NULL)
    return sf__cel_unk(n, "string scratch space exhausted");
  for (uint32_t i = 0; i < s->n; i++) {
    char ch = s->v.s[i];
    if (upper && ch >= 'a' && ch <= 'z')
      ch = (char)(ch - 'a' + 'A');
    else if (!upper && ch >= 'A' && ch <= 'Z')
      ch = (char)(ch - 'A' + 'a');
    o[i] = ch;
  }
  return str_val(o, s->n);
}

static cel_val_t string_fn(cel_ctx_t *c, uint32_t n, int fn, const cel_val_t *a, uint32_t na)
{
  const cel_val_t *s = &a[0], *t = &a[1];
  if (na == 2 && t->t != V_STR)
    return overload(n);
  switch (fn) {
  case FN_STARTS: return sf__cel_bool(t->n <= s->n && memcmp(s->v.s, t->v.s, t->n) == 0);
  case FN_ENDS: return sf__cel_bool(t->n <= s->n && memcmp(s->v.s + s->n - t->n, t->v.s, t->n) == 0);
  case FN_CONTAINS: {
    bool found = t->n == 0;
    for (uint32_t i = 0; !found && i + t->n <= s->n; i++)
      found = memcmp(s->v.s + i, t->v.s, t->n) == 0;
    c->steps += s->n / 16;
    return sf__cel_bool(found);
  }
  case FN_MATCHES: return matches(c, n, s, t);
  case FN_LOWER:
  case FN_UPPER: return recase(c, n, s, fn == FN_UPPER);
  case FN_QUANTITY:
  case FN_ISQUANTITY: return quantity(n, s, fn == FN_ISQUANTITY);
  default: return overload(n);
  }
}

/* ---- conversions ---- */

static bool parse_i64(const char *s, size_t n, int64_t *out)
{
  size_t i = n > 0 && (s[0] == '-' || s[0] == '+');
  bool neg = n > 0 && s[0] == '-';
  uint64_t u = 0;
  if (i == n)
    return false;
  for (; i < n; i++) {
    if (!isdig(s[i]) || u > (UINT64_MAX - 9) / 10)
      return false;
    u = u * 10 + (uint64_t)(s[i] - '0');
  }
  if (u > (uint64_t)INT64_MAX + neg)
    return false;
  *out = neg ? (int64_t)(0 - u) : (int64_t)u;
  return true;
}

static cel_val_t to_int(uint32_t n, const cel_val_t *a)
{
  int64_t i;
  switch (a->t) {
  case V_INT: return *a;
  case V_UINT:
    return a->v.u > INT64_MAX ? sf__cel_err(n, "integer overflow") : sf__cel_int((int64_t)a->v.u);
  case V_DOUBLE:
    if (!(a->v.d > -9223372036854775808.0 - 1024 && a->v.d < 9223372036854775808.0))
      return sf__cel_err(n, "double out of the int range");
    return sf__cel_int((int64_t)a->v.d);
  case V_STR: return parse_i64(a->v.s, a->n, &i) ? sf__cel_int(i) : sf__cel_err(n, "invalid integer");
  default: return overload(n);
  }
}

static cel_val_t to_uint(uint32_t n, const cel_val_t *a)
{
  cel_val_t r = {.t = V_UINT};
  if (a->t == V_INT && a->v.i >= 0)
    r.v.u = (uint64_t)a->v.i;
  else if (a->t == V_UINT)
    r.v.u = a->v.u;
  else if (a->t == V_DOUBLE && a->v.d > -1.0 && a->v.d < 18446744073709551616.0)
    r.v.u = (uint64_t)a->v.d;
  else if (a->t == V_STR && a->n > 0 && a->v.s[0] != '-' && a->v.s[0] != '+' &&
           parse_i64(a->v.s, a->n, &r.v.i))
    return r; /* the int64 parse covers uint values up to INT64_MAX; larger ones are rare */
  else
    return a->t == V_INT || a->t == V_DOUBLE || a->t == V_STR
               ? sf__cel_err(n, "value out of the uint range")
               : overload(n);
  return r;
}

static cel_val_t to_double(uint32_t n, const cel_val_t *a)
{
  cel_val_t r = {.t = V_DOUBLE};
  char *end;
  if (a->t == V_DOUBLE)
    return *a;
  if (a->t == V_INT)
    r.v.d = (double)a->v.i;
  else if (a->t == V_UINT)
    r.v.d = (double)a->v.u;
  else if (a->t == V_STR && a->n > 0 && (r.v.d = strtod(a->v.s, &end), end == a->v.s + a->n))
    return r;
  else
    return a->t == V_STR ? sf__cel_err(n, "invalid double") : overload(n);
  return r;
}

/* string(double): cel-go prints it with Go's %g, the shortest digits, as format's %s does. */
static cel_val_t double_string(cel_ctx_t *c, uint32_t n, double x)
{
  char *o = sf__cel_scratch(c, 64);
  if (o == NULL)
    return sf__cel_unk(n, "string scratch space exhausted");
  long len = sf__cel_fmt_double('s', -1, x, o, 64);
  return len < 0 ? sf__cel_unk(n, "string() of this double is not known for certain")
                 : str_val(o, (size_t)len);
}

static cel_val_t to_string(cel_ctx_t *c, uint32_t n, const cel_val_t *a)
{
  if (a->t == V_STR)
    return *a;
  if (a->t == V_BOOL)
    return a->v.b ? str_val("true", 4) : str_val("false", 5);
  if (a->t != V_INT && a->t != V_UINT)
    return a->t == V_DOUBLE ? double_string(c, n, a->v.d) : overload(n);
  char *o = sf__cel_scratch(c, 20);
  if (o == NULL)
    return sf__cel_unk(n, "string scratch space exhausted");
  int len = a->t == V_INT ? snprintf(o, 21, "%lld", (long long)a->v.i)
                          : snprintf(o, 21, "%llu", (unsigned long long)a->v.u);
  return str_val(o, (size_t)len);
}

/* ---- optionals ---- */

static cel_val_t optional_fn(uint32_t n, int fn, const cel_val_t *a)
{
  bool some = a[0].flags & CV_OPT, none = a[0].t == V_NONE;
  cel_val_t v = a[0];
  v.flags = 0;
  if (fn == FN_OPT_OF)
    return some || none ? sf__cel_unk(n, "nested optionals are not supported")
                        : (v.flags = CV_OPT, v);
  if (!some && !none)
    return overload(n);
  switch (fn) {
  case FN_HASVALUE: return sf__cel_bool(some);
  case FN_VALUE: return some ? v : sf__cel_err(n, "optional.none() dereference");
  default: return some ? v : a[1];
  }
}

static bool optional_arg(int fn)
{
  return fn == FN_ORVALUE || fn == FN_HASVALUE || fn == FN_VALUE || fn == FN_OPT_OF || fn == FN_DYN;
}

cel_val_t sf__cel_call(cel_ctx_t *c, uint32_t n, const cel_val_t *a, uint32_t na)
{
  int fn = c->p->nodes[n].fn;
  int64_t size;
  cel_val_t none = {.t = V_NONE};
  if (fn == FN_OPT_NONE)
    return none;
  if (optional_arg(fn))
    return fn == FN_DYN ? a[0] : optional_fn(n, fn, a);
  for (uint32_t i = 0; i < na; i++)
    if (a[i].flags & CV_OPT || a[i].t == V_NONE)
      return overload(n);
  switch (fn) {
  case FN_SIZE:
    if (a[0].t == V_STR)
      return sf__cel_int(codepoints(a[0].v.s, a[0].n));
    if (a[0].t == V_LIST)
      return sf__cel_int(a[0].n);
    return sf__cel_map_size(c, &a[0], &size) ? sf__cel_int(size) : overload(n);
  case FN_SEMVER:
  case FN_ISSEMVER:
    if (a[0].t != V_STR || (na == 2 && a[1].t != V_BOOL))
      return overload(n);
    return semver(c, n, &a[0], na == 2 && a[1].v.b, fn == FN_ISSEMVER);
  case FN_INT: return to_int(n, &a[0]);
  case FN_UINT: return to_uint(n, &a[0]);
  case FN_DOUBLE: return to_double(n, &a[0]);
  case FN_STRING:
    return a[0].t == V_IP || a[0].t == V_CIDR ? sf__cel_net_call(c, n, fn, a, na)
                                              : to_string(c, n, &a[0]);
  default: break;
  }
  if (fn >= FN_FMT_NAMED)
    return sf__cel_format_call(c, n, fn, a, na);
  if (fn >= FN_URL)
    return sf__cel_url_call(c, n, fn, a, na);
  if (fn >= FN_IP)
    return sf__cel_net_call(c, n, fn, a, na);
  if (fn >= FN_CHARAT)
    return sf__cel_ext_call(c, n, fn, a, na);
  if (a[0].t == V_STR)
    return string_fn(c, n, fn, a, na);
  if (a[0].t == V_QTY)
    return qty_method(n, fn, a, na);
  if (a[0].t == V_SEMVER)
    return semver_method(n, fn, a, na);
  return overload(n);
}
