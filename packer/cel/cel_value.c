/*
 * CEL values: the constructors the evaluator and the library share, and
 * CEL's equality and order. Numbers of different types compare exactly (an
 * int64 against a double without rounding either); NaN is unordered. An
 * error or UNKNOWN operand makes the answer that value, UNKNOWN before an
 * error (it might not be one).
 */
#include <string.h>
#include "cel_int.h"

cel_val_t sf__cel_err(uint32_t node, const char *msg)
{
  cel_val_t r = {.t = V_ERR, .n = node, .v.s = msg};
  return r;
}

cel_val_t sf__cel_unk(uint32_t node, const char *msg)
{
  cel_val_t r = {.t = V_UNK, .n = node, .v.s = msg};
  return r;
}

cel_val_t sf__cel_bool(bool b)
{
  cel_val_t r = {.t = V_BOOL, .v.b = b};
  return r;
}

cel_val_t sf__cel_int(int64_t i)
{
  cel_val_t r = {.t = V_INT, .v.i = i};
  return r;
}

/* Of two values at least one of which is bad: UNKNOWN wins over an error (it might not be one). */
cel_val_t sf__cel_worst(cel_val_t a, cel_val_t b)
{
  if (a.t == V_UNK)
    return a;
  if (b.t == V_UNK)
    return b;
  return a.t == V_ERR ? a : b;
}

/* ---- order and equality ---- */

static bool numeric(int t)
{
  return t == V_INT || t == V_UINT || t == V_DOUBLE;
}

static int cmp3(bool lt, bool gt)
{
  return lt ? -1 : gt ? 1 : 0;
}

/* int64 against a double, exactly (no rounding of large integers). */
static int cmp_int_double(int64_t i, double d)
{
  if (d != d)
    return 2;
  if (d >= 9223372036854775808.0)
    return -1;
  if (d < -9223372036854775808.0)
    return 1;
  int64_t t = (int64_t)d;
  if (i != t)
    return cmp3(i<t, i> t);
  double frac = d - (double)t;
  return cmp3(frac > 0, frac < 0);
}

static int cmp_uint_double(uint64_t u, double d)
{
  if (d != d)
    return 2;
  if (d >= 18446744073709551616.0)
    return -1;
  if (d < 0)
    return 1;
  uint64_t t = (uint64_t)d;
  if (u != t)
    return cmp3(u<t, u> t);
  return cmp3(d - (double)t > 0, false);
}

static int cmp_num(const cel_val_t *a, const cel_val_t *b)
{
  if (a->t == V_INT && b->t == V_INT)
    return cmp3(a->v.i<b->v.i, a->v.i> b->v.i);
  if (a->t == V_UINT && b->t == V_UINT)
    return cmp3(a->v.u<b->v.u, a->v.u> b->v.u);
  if (a->t == V_DOUBLE && b->t == V_DOUBLE)
    return a->v.d != a->v.d || b->v.d != b->v.d ? 2 : cmp3(a->v.d<b->v.d, a->v.d> b->v.d);
  if (a->t == V_INT && b->t == V_UINT)
    return a->v.i < 0 ? -1 : cmp3((uint64_t)a->v.i<b->v.u, (uint64_t)a->v.i> b->v.u);
  if (a->t == V_INT)
    return cmp_int_double(a->v.i, b->v.d);
  if (a->t == V_UINT && b->t == V_INT)
    return -cmp_num(b, a);
  if (a->t == V_UINT)
    return cmp_uint_double(a->v.u, b->v.d);
  int r = cmp_num(b, a);
  return r == 2 ? 2 : -r;
}

int sf__cel_order(const cel_val_t *a, const cel_val_t *b)
{
  if ((a->flags | b->flags) & CV_OPT)
    return 3;
  if (numeric(a->t) && numeric(b->t))
    return cmp_num(a, b);
  if (a->t != b->t)
    return 3;
  if (a->t == V_BOOL)
    return cmp3(!a->v.b && b->v.b, a->v.b && !b->v.b);
  if (a->t != V_STR)
    return 3;
  int r = memcmp(a->v.s, b->v.s, a->n < b->n ? a->n : b->n);
  return r != 0 ? cmp3(r<0, r> 0) : cmp3(a->n<b->n, a->n> b->n);
}

static cel_val_t list_eq(uint32_t n, const cel_val_t *a, const cel_val_t *b)
{
  if (a->n != b->n)
    return sf__cel_bool(false);
  cel_val_t bad = sf__cel_bool(true);
  for (uint32_t i = 0; i < a->n; i++) {
    cel_val_t e = sf__cel_eq(n, &a->v.l[i], &b->v.l[i]);
    if (e.t == V_BOOL && !e.v.b)
      return e;
    if (BAD(e) && !(bad.t == V_UNK))
      bad = e;
  }
  return bad;
}

cel_val_t sf__cel_eq(uint32_t n, const cel_val_t *a, const cel_val_t *b)
{
  if (BAD(*a) || BAD(*b))
    return sf__cel_worst(*a, *b);
  if ((a->flags ^ b->flags) & CV_OPT)
    return sf__cel_bool(false);
  if (numeric(a->t) && numeric(b->t))
    return sf__cel_bool(cmp_num(a, b) == 0);
  if (a->t != b->t) {
    if (a->t == V_MAP || b->t == V_MAP)
      return sf__cel_map_eq(n, a, b);
    if (a->t >= V_URL || b->t >= V_URL)
      return sf__cel_unk(n, "equality of URLs and their queries is not supported");
    /* Kubernetes' Quantity, Semver, IP and CIDR types answer "no such overload" to another type. */
    bool ext = a->t == V_QTY || a->t == V_SEMVER || a->t >= V_IP || b->t == V_QTY ||
               b->t == V_SEMVER || b->t >= V_IP;
    return ext ? sf__cel_err(n, "no such overload: equality") : sf__cel_bool(false);
  }
  switch (a->t) {
  case V_NULL:
  case V_NONE:
  case V_DEVICE: return sf__cel_bool(true); /* there is one device per evaluation */
  case V_BOOL: return sf__cel_bool(a->v.b == b->v.b);
  case V_STR: return sf__cel_bool(a->n == b->n && memcmp(a->v.s, b->v.s, a->n) == 0);
  case V_QTY: return sf__cel_bool(a->v.q == b->v.q);
  case V_SEMVER: return sf__cel_bool(sf__cel_semver_cmp(a->v.s, a->n, b->v.s, b->n) == 0);
  case V_LIST: return list_eq(n, a, b);
  case V_IP:
  case V_CIDR: return sf__cel_bool(sf__cel_net_eq(a, b));
  case V_MAP: return sf__cel_map_eq(n, a, b);
  default: return sf__cel_unk(n, "equality of the device's maps, URLs and formats is not supported");
  }
}
