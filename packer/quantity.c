/*
 * Kubernetes resource.Quantity, parsed exactly into int64 milli-units.
 *
 * Grammar (apimachinery's, minus the sub-milli suffixes "n" and "u"):
 *
 *   quantity ::= [sign] number suffix
 *   number   ::= digits | digits "." [digits] | "." digits
 *   suffix   ::= "" | "m" | "k" | "M" | "G" | "T" | "P" | "E"     decimal SI
 *              | "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei"         binary SI
 *              | ("e" | "E") [sign] digits                       decimal exponent
 *
 * A lone sign, a lone ".", whitespace anywhere and trailing bytes are errors.
 * The bytes are untrusted (they come from the API server or a ConfigMap).
 *
 * Algorithm. The value in milli-units is M * 10^e * 2^b, where M is the
 * integer formed by every digit (fraction included) with leading and trailing
 * zeros stripped, e = exponent + 3 - fraction digits + trailing zeros, and
 * b = 10 * (binary suffix rank). No floating point anywhere:
 *
 *   1. M = 0 is 0 whatever the exponent ("0e999999999999" is fine).
 *   2. With L significant digits, the order is o = L-1+e and the value lies in
 *      [10^o * 2^b, 10^(o+1) * 2^b). As 2^10 > 10^3, o + 3b/10 >= 19 means at
 *      least 10^19 > 2^63: SF_ERANGE. As 2^60 < 10^19, o <= -20 means below one
 *      milli-unit and not zero: SF_EINVAL.
 *   3. Otherwise a small base-10^9 big number computes q = floor(M * 2^b *
 *      10^e) and whether a remainder was dropped ("inexact"). Only the first
 *      80 digits M' of M are kept, and that is exact: after step 2 a longer M
 *      gives 10^-e >= 10^61 > 2^b, so an integer value k would need
 *      M = k * 10^-e / 2^b, itself an integer; none lies strictly between M'
 *      and M' + 1 (scaled), so truncation changes neither q nor the verdict.
 *      It does drop a non-zero tail (M ends in a non-zero digit): inexact.
 *   4. Too large when q > limit, or q = limit and inexact (limit 2^63-1, or
 *      2^63 for negatives): SF_ERANGE. Then inexact: SF_EINVAL.
 *
 * So ERANGE wins over EINVAL when a value is both too large and too precise.
 * The most negative int64 is accepted ("-9223372036854775.808").
 *
 * Formatting is canonical as the API server does it: the largest suffix that
 * keeps an integer, in the binary family when asked and the value is whole
 * bytes divisible by 1024, else decimal ("1500m", "2k").
 */
#include <assert.h>
#include <stdbool.h>
#include <string.h>
#include "slicefit/quantity.h"

/* A clamp on exponents: far beyond anything that fits, far below overflow. */
#define EXP_CLAMP 1000000000LL
#define LIMB_BASE 1000000000u
#define LIMBS 12 /* 80 digits times 2^60: under 99 digits */
#define KEEP 80  /* significant digits that decide the value */

/* The syntax, split; digits point into the caller's string. */
typedef struct {
  bool neg;
  const char *ip, *fp; /* integer and fraction digits */
  size_t ni, nf;
  int64_t exp10; /* from the suffix */
  unsigned b;    /* power of two from a binary suffix */
} parts_t;

/* The significant digits: indexes [first, last] into ip ++ fp. */
typedef struct {
  const parts_t *p;
  size_t first, last;
} digits_t;

/* A small unsigned big number, base 10^9, least significant limb first. */
typedef struct {
  uint32_t limb[LIMBS];
  size_t n;
} big_t;

static bool isdig(char c)
{
  return c >= '0' && c <= '9';
}

static size_t span(const char *s, size_t len)
{
  size_t i = 0;
  while (i < len && isdig(s[i]))
    i++;
  return i;
}

/* Signed exponent digits, clamped: any clamped value gives the same verdict. */
static int exponent(const char *s, size_t len, int64_t *out)
{
  bool neg = false;
  int64_t v = 0;
  size_t i = 0;
  if (i < len && (s[i] == '+' || s[i] == '-'))
    neg = s[i++] == '-';
  if (i == len || span(s + i, len - i) != len - i)
    return SF_EINVAL;
  for (; i < len; i++)
    if (v < EXP_CLAMP)
      v = v * 10 + (s[i] - '0');
  *out = neg ? -v : v;
  return 0;
}

static int suffix(const char *s, size_t len, parts_t *p)
{
  static const char dec[] = "kMGTPE", bin[] = "KMGTPE";
  const char *c;
  p->exp10 = 0;
  p->b = 0;
  if (len == 0)
    return 0;
  if (len == 1 && s[0] == 'm') {
    p->exp10 = -3;
    return 0;
  }
  if (len == 1 && (c = memchr(dec, s[0], sizeof dec - 1)) != NULL) {
    p->exp10 = 3 * (c - dec + 1);
    return 0;
  }
  if (len == 2 && s[1] == 'i' && (c = memchr(bin, s[0], sizeof bin - 1)) != NULL) {
    p->b = 10 * (unsigned)(c - bin + 1);
    return 0;
  }
  if (s[0] == 'e' || s[0] == 'E')
    return exponent(s + 1, len - 1, &p->exp10);
  return SF_EINVAL;
}

static int split(const char *s, size_t len, parts_t *p)
{
  size_t i = 0;
  p->neg = false;
  if (i < len && (s[i] == '+' || s[i] == '-'))
    p->neg = s[i++] == '-';
  p->ip = s + i;
  p->ni = span(s + i, len - i);
  i += p->ni;
  p->fp = s + i;
  p->nf = 0;
  if (i < len && s[i] == '.') {
    p->fp = s + ++i;
    p->nf = span(s + i, len - i);
    i += p->nf;
  }
  if (p->ni + p->nf == 0)
    return SF_EINVAL;
  return suffix(s + i, len - i, p);
}

static char digit_at(const parts_t *p, size_t i)
{
  return i < p->ni ? p->ip[i] : p->fp[i - p->ni];
}

/* Finds the significant digits; false when every digit is zero. */
static bool significant(const parts_t *p, digits_t *d)
{
  size_t n = p->ni + p->nf;
  d->p = p;
  d->first = 0;
  while (d->first < n && digit_at(p, d->first) == '0')
    d->first++;
  if (d->first == n)
    return false;
  d->last = n - 1;
  while (digit_at(p, d->last) == '0')
    d->last--;
  return true;
}

/* x = x * mul + add; the caller has bounded x so that it cannot overflow. */
static void big_muladd(big_t *x, uint32_t mul, uint32_t add)
{
  uint64_t carry = add;
  for (size_t i = 0; i < x->n; i++) {
    uint64_t t = (uint64_t)x->limb[i] * mul + carry;
    x->limb[i] = (uint32_t)(t % LIMB_BASE);
    carry = t / LIMB_BASE;
  }
  if (carry != 0) {
    assert(x->n < LIMBS);
    x->limb[x->n++] = (uint32_t)carry;
  }
}

/* x /= 10; returns the remainder. */
static uint32_t big_div10(big_t *x)
{
  uint64_t rem = 0;
  for (size_t i = x->n; i-- > 0;) {
    uint64_t t = rem * LIMB_BASE + x->limb[i];
    x->limb[i] = (uint32_t)(t / 10);
    rem = t % 10;
  }
  while (x->n > 0 && x->limb[x->n - 1] == 0)
    x->n--;
  return (uint32_t)rem;
}

static int big_to_u64(const big_t *x, uint64_t *out)
{
  uint64_t v = 0;
  for (size_t i = x->n; i-- > 0;)
    if (__builtin_mul_overflow(v, (uint64_t)LIMB_BASE, &v) ||
        __builtin_add_overflow(v, x->limb[i], &v))
      return SF_ERANGE;
  *out = v;
  return 0;
}

/* Loads the first KEEP significant digits into x; returns how many were dropped. */
static size_t load(const digits_t *d, big_t *x)
{
  size_t n = d->last - d->first + 1, keep = n < KEEP ? n : KEEP;
  x->n = 0;
  for (size_t i = d->first; i < d->first + keep; i++)
    big_muladd(x, 10, (uint32_t)(digit_at(d->p, i) - '0'));
  return n - keep;
}

/* q = floor(|value|) and whether that dropped a remainder, as step 3 says. */
static int magnitude(const digits_t *d, unsigned b, int64_t e, uint64_t *q, bool *inexact)
{
  big_t x;
  uint64_t v;
  size_t dropped = load(d, &x);
  /* The last digit of M is not zero, so any dropped digit leaves a remainder. */
  bool sticky = dropped > 0;
  e += (int64_t)dropped;
  for (unsigned k = 0; k < b; k += 10)
    big_muladd(&x, 1024, 0);
  for (; e < 0; e++)
    sticky |= big_div10(&x) != 0;
  if (big_to_u64(&x, &v) != 0)
    return SF_ERANGE;
  for (; e > 0; e--)
    if (__builtin_mul_overflow(v, (uint64_t)10, &v))
      return SF_ERANGE;
  *q = v;
  *inexact = sticky;
  return 0;
}

/* Steps 2 to 4 for a non-zero value: |value| into *mag. */
static int value(const parts_t *p, const digits_t *d, uint64_t *mag)
{
  /* Lengths are far below 2^40, exponents are clamped: no overflow here. */
  int64_t e = p->exp10 + 3 - (int64_t)p->nf + (int64_t)(p->ni + p->nf - 1 - d->last);
  int64_t order = (int64_t)(d->last - d->first) + e;
  uint64_t limit = (uint64_t)INT64_MAX + (p->neg ? 1u : 0u);
  bool inexact;
  int rc;
  if (order + 3 * (int64_t)p->b / 10 >= 19)
    return SF_ERANGE;
  if (order <= -20)
    return SF_EINVAL;
  if ((rc = magnitude(d, p->b, e, mag, &inexact)) != 0)
    return rc;
  if (*mag > limit || (*mag == limit && inexact))
    return SF_ERANGE;
  return inexact ? SF_EINVAL : 0;
}

int sf_quantity_parse_n(const char *s, size_t len, sf_milli_t *out)
{
  parts_t p;
  digits_t d;
  uint64_t mag = 0;
  int rc;
  assert(s != NULL || len == 0);
  /* Early, so that split() never does arithmetic on a NULL pointer. */
  if (len == 0)
    return SF_EINVAL;
  if ((rc = split(s, len, &p)) != 0)
    return rc;
  if (significant(&p, &d) && (rc = value(&p, &d, &mag)) != 0)
    return rc;
  /* Negating in unsigned arithmetic keeps INT64_MIN well defined. */
  *out = p.neg ? (sf_milli_t)(0 - mag) : (sf_milli_t)mag;
  return 0;
}

int sf_quantity_parse(const char *s, sf_milli_t *out)
{
  assert(s != NULL);
  return sf_quantity_parse_n(s, strlen(s), out);
}

/* Largest k <= max with u divisible by base^k; u is divided by base^k. */
static unsigned reduce(uint64_t *u, uint64_t base, unsigned max)
{
  unsigned k = 0;
  while (k < max && *u % base == 0) {
    *u /= base;
    k++;
  }
  return k;
}

/* Writes u in decimal backwards ending at end; returns the first byte. */
static char *utoa(uint64_t u, char *end)
{
  do {
    *--end = (char)('0' + u % 10);
    u /= 10;
  } while (u != 0);
  return end;
}

int sf_quantity_format(sf_milli_t v, int binary, char *buf, size_t len)
{
  static const char *const dec[] = {"", "k", "M", "G", "T", "P", "E"};
  static const char *const bin[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  const char *suf = "";
  char tmp[32], *s;
  size_t n, sl;
  assert(buf != NULL || len == 0);
  if (u % 1000 != 0) {
    suf = "m";
  } else if (u != 0) {
    u /= 1000;
    if (binary && u % 1024 == 0)
      suf = bin[reduce(&u, 1024, 6)];
    else
      suf = dec[reduce(&u, 1000, 6)];
  }
  /* Built right to left in tmp: digits, then the sign before them. */
  sl = strlen(suf);
  s = utoa(u, tmp + sizeof tmp - sl);
  memcpy(tmp + sizeof tmp - sl, suf, sl);
  if (v < 0)
    *--s = '-';
  n = (size_t)(tmp + sizeof tmp - s);
  /* snprintf's contract: the full length back, a truncated NUL-ended copy. */
  if (len > 0) {
    size_t c = n < len - 1 ? n : len - 1;
    memcpy(buf, s, c);
    buf[c] = '\0';
  }
  return (int)n;
}
