/*
 * The Kubernetes IP and CIDR libraries (k8s.io/apiserver/pkg/cel/library,
 * in the base environment from 1.30): ip(), isIP(), ip.isCanonical(),
 * family(), the is...() tests, cidr(), isCIDR(), containsIP(),
 * containsCIDR(), ip() of a CIDR, masked(), prefixLength() and string().
 *
 * Parsing follows Go's net/netip, which the library calls: IPv4 as four
 * decimal octets without leading zeros; IPv6 as RFC 4291 text (groups of at
 * most four hex digits, one "::", an embedded dotted IPv4 at the end). The
 * library then refuses a zone ("%eth0") and an IPv4-mapped IPv6 address. A
 * CIDR keeps the address as written (masked() clears the host bits).
 * string() prints as netip does (RFC 5952 for IPv6).
 *
 * A value (V_IP, V_CIDR) is 18 bytes of the evaluation's scratch: the
 * family (4 or 6), the prefix length (CIDR), and 16 address bytes (IPv4 in
 * the first 4).
 */
#include <stdio.h>
#include <string.h>
#include "cel_int.h"

#define NET_BYTES 18

typedef struct {
  uint8_t fam, bits;
  uint8_t a[16];
} net_t;

static bool digit(char c)
{
  return c >= '0' && c <= '9';
}

static int hexval(char c)
{
  return digit(c)               ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                : -1;
}

/* Four octets at s[0..n) into out; false unless netip.ParseAddr would take them. */
static bool parse4(const char *s, size_t n, uint8_t out[4])
{
  size_t i = 0;
  for (int k = 0; k < 4; k++) {
    if (k > 0 && (i >= n || s[i++] != '.'))
      return false;
    size_t start = i;
    unsigned v = 0;
    while (i < n && digit(s[i]) && i - start < 3)
      v = v * 10 + (unsigned)(s[i++] - '0');
    if (i == start || v > 255 || (s[start] == '0' && i - start > 1) || (i < n && digit(s[i])))
      return false;
    out[k] = (uint8_t)v;
  }
  return i == n;
}

/* RFC 4291 text at s[0..n) into 16 bytes; false unless netip.ParseAddr would take it (no zone). */
static bool parse6(const char *s, size_t n, uint8_t out[16])
{
  uint8_t a[16] = {0};
  int k = 0, ellipsis = -1;
  size_t i = 0;
  if (n >= 2 && s[0] == ':' && s[1] == ':') {
    ellipsis = 0;
    i = 2;
  }
  while (i < n) {
    size_t start = i;
    unsigned v = 0;
    while (i < n && hexval(s[i]) >= 0 && i - start < 4)
      v = v * 16 + (unsigned)hexval(s[i++]);
    if (i == start || (i < n && hexval(s[i]) >= 0))
      return false;
    if (i < n && s[i] == '.') {
      /* An embedded IPv4 ends the address. */
      if (k > 12 || !parse4(s + start, n - start, a + k))
        return false;
      k += 4;
      i = n;
      break;
    }
    if (k > 14)
      return false;
    a[k++] = (uint8_t)(v >> 8);
    a[k++] = (uint8_t)v;
    if (i == n)
      break;
    if (s[i] != ':' || ++i == n)
      return false;
    if (s[i] == ':') {
      if (ellipsis >= 0)
        return false;
      ellipsis = k;
      if (++i == n)
        break;
    }
  }
  if (ellipsis < 0 ? k != 16 : k == 16)
    return false;
  if (ellipsis >= 0) {
    int tail = k - ellipsis;
    memmove(a + 16 - tail, a + ellipsis, (size_t)tail);
    memset(a + ellipsis, 0, (size_t)(16 - tail - ellipsis));
  }
  memcpy(out, a, 16);
  return true;
}

static bool v4_mapped(const uint8_t a[16])
{
  static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return memcmp(a, prefix, 12) == 0;
}

/* An address as the library takes it: NULL, or why not. */
bool sf__cel_ipv6(const char *s, size_t n)
{
  uint8_t a[16];
  return parse6(s, n, a);
}

static const char *parse_ip(const char *s, size_t n, net_t *out)
{
  memset(out, 0, sizeof *out);
  if (memchr(s, '%', n) != NULL)
    return "IP address with zone value is not allowed";
  if (memchr(s, ':', n) == NULL) {
    out->fam = 4;
    return parse4(s, n, out->a) ? NULL : "IP address parse error";
  }
  out->fam = 6;
  if (!parse6(s, n, out->a))
    return "IP address parse error";
  return v4_mapped(out->a) ? "IPv4-mapped IPv6 address is not allowed" : NULL;
}

static const char *parse_cidr(const char *s, size_t n, net_t *out)
{
  const char *slash = memchr(s, '/', n);
  if (slash == NULL)
    return "network address parse error";
  const char *why = parse_ip(s, (size_t)(slash - s), out);
  if (why != NULL)
    return strcmp(why, "IP address parse error") == 0 ? "network address parse error" : why;
  size_t i = (size_t)(slash - s) + 1, start = i;
  unsigned bits = 0;
  while (i < n && digit(s[i]) && i - start < 3)
    bits = bits * 10 + (unsigned)(s[i++] - '0');
  if (i == start || i != n || (s[start] == '0' && i - start > 1) ||
      bits > (out->fam == 4 ? 32u : 128u))
    return "network address parse error";
  out->bits = (uint8_t)bits;
  return NULL;
}

static size_t addr_len(const net_t *x)
{
  return x->fam == 4 ? 4 : 16;
}

/* Does prefix p (its first `bits` bits) contain address a of the same family? */
static bool in_prefix(const net_t *p, const uint8_t *a, unsigned bits)
{
  for (unsigned b = 0; b < bits; b++)
    if (((p->a[b / 8] ^ a[b / 8]) >> (7 - b % 8)) & 1)
      return false;
  return true;
}

/* netip's String(): dotted IPv4; IPv6 with the first longest run of two or more zero groups as "::". */
static size_t format_ip(const net_t *x, char *o)
{
  if (x->fam == 4)
    return (size_t)snprintf(o, 16, "%u.%u.%u.%u", x->a[0], x->a[1], x->a[2], x->a[3]);
  int best = -1, bestlen = 1;
  for (int g = 0; g < 8;) {
    int run = 0;
    while (g + run < 8 && x->a[2 * (g + run)] == 0 && x->a[2 * (g + run) + 1] == 0)
      run++;
    if (run > bestlen) {
      best = g;
      bestlen = run;
    }
    g += run > 0 ? run : 1;
  }
  size_t len = 0;
  for (int g = 0; g < 8; g++) {
    if (g == best) {
      len += (size_t)snprintf(o + len, 3, "::");
      g += bestlen - 1;
      continue;
    }
    if (g > 0 && g != best + bestlen)
      o[len++] = ':';
    len += (size_t)snprintf(o + len, 5, "%x", (unsigned)(x->a[2 * g] << 8 | x->a[2 * g + 1]));
  }
  o[len] = '\0';
  return len;
}

static cel_val_t net_val(cel_ctx_t *c, uint32_t n, const net_t *x, bool cidr)
{
  char *o = sf__cel_scratch(c, NET_BYTES);
  if (o == NULL)
    return sf__cel_unk(n, "string scratch space exhausted");
  memcpy(o, x, NET_BYTES);
  cel_val_t r = {.t = cidr ? V_CIDR : V_IP, .v.s = o};
  return r;
}

static void net_of(const cel_val_t *v, net_t *x)
{
  memcpy(x, v->v.s, NET_BYTES);
}

/* string(ip) and string(cidr). */
static cel_val_t net_string(cel_ctx_t *c, uint32_t n, const net_t *x, bool cidr)
{
  char buf[64];
  size_t len = format_ip(x, buf);
  if (cidr)
    len += (size_t)snprintf(buf + len, 5, "/%u", x->bits);
  char *o = sf__cel_scratch(c, len);
  if (o == NULL)
    return sf__cel_unk(n, "string scratch space exhausted");
  memcpy(o, buf, len);
  return sf__cel_str(o, len);
}

static bool is_multicast(const net_t *x)
{
  return x->fam == 4 ? (x->a[0] & 0xF0) == 0xE0 : x->a[0] == 0xFF;
}

static bool is_loopback(const net_t *x)
{
  static const uint8_t one[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  return x->fam == 4 ? x->a[0] == 127 : memcmp(x->a, one, 16) == 0;
}

static bool is_unspecified(const net_t *x)
{
  static const uint8_t zero[16];
  return memcmp(x->a, zero, addr_len(x)) == 0;
}

static bool is_link_local_unicast(const net_t *x)
{
  return x->fam == 4 ? x->a[0] == 169 && x->a[1] == 254 : x->a[0] == 0xFE && (x->a[1] & 0xC0) == 0x80;
}

static bool is_link_local_multicast(const net_t *x)
{
  return x->fam == 4 ? x->a[0] == 224 && x->a[1] == 0 && x->a[2] == 0
                     : x->a[0] == 0xFF && (x->a[1] & 0x0F) == 0x02;
}

/* netip's IsGlobalUnicast: private IPv4 and ULA IPv6 addresses count. */
static bool is_global_unicast(const net_t *x)
{
  static const uint8_t bcast[4] = {255, 255, 255, 255};
  if (x->fam == 4 && memcmp(x->a, bcast, 4) == 0)
    return false;
  return !is_unspecified(x) && !is_loopback(x) && !is_multicast(x) && !is_link_local_unicast(x);
}

/* The IP or CIDR argument a (a string is parsed), or the error in *bad. */
static bool net_arg(uint32_t n, const cel_val_t *a, bool cidr, net_t *x, cel_val_t *bad)
{
  if (a->t == (cidr ? V_CIDR : V_IP)) {
    net_of(a, x);
    return true;
  }
  if (a->t != V_STR) {
    *bad = sf__cel_err(n, "no such overload");
    return false;
  }
  const char *why = cidr ? parse_cidr(a->v.s, a->n, x) : parse_ip(a->v.s, a->n, x);
  if (why != NULL)
    *bad = sf__cel_err(n, why);
  return why == NULL;
}

static cel_val_t contains(uint32_t n, const net_t *p, const cel_val_t *arg, bool cidr)
{
  net_t x;
  cel_val_t bad;
  if (!net_arg(n, arg, cidr, &x, &bad))
    return bad;
  if (x.fam != p->fam)
    return sf__cel_bool(false);
  return sf__cel_bool(in_prefix(p, x.a, p->bits) && (!cidr || p->bits <= x.bits));
}

/* ip(s), cidr(s), isIP(s), isCIDR(s), ip.isCanonical(s). */
static cel_val_t parse_fn(cel_ctx_t *c, uint32_t n, int fn, const cel_val_t *s)
{
  net_t x;
  bool cidr = fn == FN_CIDR || fn == FN_ISCIDR;
  const char *why = cidr ? parse_cidr(s->v.s, s->n, &x) : parse_ip(s->v.s, s->n, &x);
  if (fn == FN_ISIP || fn == FN_ISCIDR)
    return sf__cel_bool(why == NULL);
  if (why != NULL)
    return sf__cel_err(n, why);
  if (fn == FN_ISCANONICAL) {
    char buf[64];
    size_t len = format_ip(&x, buf);
    return sf__cel_bool(len == s->n && memcmp(buf, s->v.s, len) == 0);
  }
  return net_val(c, n, &x, cidr);
}

cel_val_t sf__cel_net_call(cel_ctx_t *c, uint32_t n, int fn, const cel_val_t *a, uint32_t na)
{
  net_t x;
  if (fn == FN_IP && a[0].t == V_CIDR) {
    net_of(&a[0], &x);
    x.bits = 0;
    return net_val(c, n, &x, false);
  }
  if (fn == FN_IP || fn == FN_CIDR || fn == FN_ISIP || fn == FN_ISCIDR || fn == FN_ISCANONICAL)
    return a[0].t == V_STR ? parse_fn(c, n, fn, &a[0]) : sf__cel_err(n, "no such overload");
  if (a[0].t != V_IP && a[0].t != V_CIDR)
    return sf__cel_err(n, "no such overload");
  net_of(&a[0], &x);
  bool cidr = a[0].t == V_CIDR;
  if (fn == FN_STRING)
    return net_string(c, n, &x, cidr);
  if (cidr) {
    switch (fn) {
    case FN_CONTAINSIP:
      return na == 2 ? contains(n, &x, &a[1], false) : sf__cel_err(n, "no such overload");
    case FN_CONTAINSCIDR:
      return na == 2 ? contains(n, &x, &a[1], true) : sf__cel_err(n, "no such overload");
    case FN_PREFIXLEN: return sf__cel_int(x.bits);
    case FN_MASKED:
      for (unsigned b = x.bits; b < 8 * addr_len(&x); b++)
        x.a[b / 8] &= (uint8_t) ~(0x80u >> (b % 8));
      return net_val(c, n, &x, true);
    default: return sf__cel_err(n, "no such overload");
    }
  }
  switch (fn) {
  case FN_FAMILY: return sf__cel_int(x.fam);
  case FN_ISUNSPECIFIED: return sf__cel_bool(is_unspecified(&x));
  case FN_ISLOOPBACK: return sf__cel_bool(is_loopback(&x));
  case FN_ISLLMULTICAST: return sf__cel_bool(is_link_local_multicast(&x));
  case FN_ISLLUNICAST: return sf__cel_bool(is_link_local_unicast(&x));
  case FN_ISGLOBALUNICAST: return sf__cel_bool(is_global_unicast(&x));
  default: return sf__cel_err(n, "no such overload");
  }
}

bool sf__cel_net_eq(const cel_val_t *a, const cel_val_t *b)
{
  size_t len = ((const uint8_t *)a->v.s)[0] == 4 ? 6 : NET_BYTES;
  /* The prefix length is 0 in an IP, so comparing it too is right for both kinds. */
  return memcmp(a->v.s, b->v.s, len) == 0;
}
