/*
 * The CEL evaluator: a recursive walk over the AST built by cel_parse.c,
 * with values on the C stack. Lists and strings built during an evaluation
 * live in the context's fixed arena and scratch buffer (no heap on the hot
 * path); exhausting either, or the step budget, makes the result UNKNOWN.
 * The semantics (errors, absorption by && and ||, the device's maps) are
 * described in cel.c; equality and order are in cel_value.c, the device's
 * maps in cel_device.c.
 */
#include <string.h>
#include "cel_int.h"

char *sf__cel_scratch(cel_ctx_t *c, size_t n)
{
  if (n + 1 > CEL_SCRATCH - c->nscratch)
    return NULL;
  char *s = c->scratch + c->nscratch;
  c->nscratch += (uint32_t)n + 1;
  s[n] = '\0';
  return s;
}

cel_val_t *sf__cel_reserve(cel_ctx_t *c, size_t n)
{
  if (n > CEL_ARENA - c->narena)
    return NULL;
  cel_val_t *v = c->arena + c->narena;
  c->narena += (uint32_t)n;
  return v;
}

static const cel_node_t *node(const cel_ctx_t *c, uint32_t n)
{
  return &c->p->nodes[n];
}

static uint32_t kid(const cel_ctx_t *c, uint32_t n, uint32_t i)
{
  return c->p->kids[c->p->nodes[n].k0 + i];
}

/* ---- field selection, indexing, has() ---- */

/*
 * The operand m of a selection or an index, maybe optional: an empty
 * optional is the answer under the optional form (opt), a present one is
 * unwrapped; without opt either is UNKNOWN (`what`). True when *out is the
 * answer already.
 */
static bool optional_operand(uint32_t n, cel_val_t *m, bool opt, const char *what, cel_val_t *out)
{
  if (m->t != V_NONE && !(m->flags & CV_OPT))
    return false;
  if (!opt) {
    *out = sf__cel_unk(n, what);
    return true;
  }
  if (m->t == V_NONE) {
    *out = *m;
    return true;
  }
  m->flags = 0;
  return false;
}

/* m (maybe optional) [key] or .key, with the optional form when opt. */
static cel_val_t access(cel_ctx_t *c, uint32_t n, cel_val_t m, const char *key, size_t kn, bool opt)
{
  cel_val_t early;
  if (optional_operand(n, &m, opt, "selection on an optional value is not supported", &early))
    return early;
  cel_val_t out;
  int r = sf__cel_lookup(c, n, &m, key, kn, &out);
  if (r < 0)
    return out;
  if (r == 0) {
    memset(&out, 0, sizeof out);
    return opt ? (out.t = V_NONE, out) : sf__cel_err(n, "no such key");
  }
  if (opt)
    out.flags |= CV_OPT;
  return out;
}

static cel_val_t ev_select(cel_ctx_t *c, uint32_t n)
{
  const cel_node_t *nd = node(c, n);
  cel_val_t m = sf__cel_ev(c, kid(c, n, 0));
  if (BAD(m))
    return m;
  return access(c, n, m, c->p->pool + nd->v.s.off, nd->v.s.len, nd->flags & F_OPT);
}

static cel_val_t list_at(uint32_t n, cel_val_t l, const cel_val_t *i, bool opt)
{
  int64_t at;
  if (i->t == V_INT)
    at = i->v.i;
  else if (i->t == V_UINT)
    at = i->v.u > (uint64_t)INT64_MAX ? -1 : (int64_t)i->v.u;
  else
    return sf__cel_err(n, "no such overload: list index");
  if (at >= 0 && (uint64_t)at < l.n) {
    cel_val_t r = l.v.l[at];
    r.flags |= opt ? CV_OPT : 0;
    return r;
  }
  cel_val_t none = {.t = V_NONE};
  return opt ? none : sf__cel_err(n, "index out of range");
}

static cel_val_t map_at(uint32_t n, const cel_val_t *m, const cel_val_t *k, bool opt)
{
  cel_val_t out, none = {.t = V_NONE};
  int r = sf__cel_map_get(m, n, k, &out);
  if (r < 0)
    return out;
  if (r == 0)
    return opt ? none : sf__cel_err(n, "no such key");
  if (opt && (out.flags & CV_OPT || out.t == V_NONE))
    return sf__cel_unk(n, "nested optionals are not supported");
  out.flags |= opt ? CV_OPT : 0;
  return out;
}

static bool maplike(int t)
{
  return t == V_DEVICE || t == V_ATTRS || t == V_CAPS || t == V_ADOM || t == V_CDOM || t == V_QUERY;
}

static cel_val_t ev_index(cel_ctx_t *c, uint32_t n)
{
  bool opt = node(c, n)->flags & F_OPT;
  cel_val_t m = sf__cel_ev(c, kid(c, n, 0));
  cel_val_t k = sf__cel_ev(c, kid(c, n, 1));
  if (BAD(m) || BAD(k))
    return sf__cel_worst(m, k);
  if (k.flags & CV_OPT || k.t == V_NONE)
    return sf__cel_err(n, "no such overload: optional key");
  cel_val_t early;
  if (optional_operand(n, &m, opt, "indexing an optional value is not supported", &early))
    return early;
  if (m.t == V_LIST)
    return list_at(n, m, &k, opt);
  if (m.t == V_MAP)
    return map_at(n, &m, &k, opt);
  if (k.t == V_STR)
    return access(c, n, m, k.v.s, k.n, opt);
  if (!maplike(m.t))
    return sf__cel_err(n, "no such overload: index");
  cel_val_t none = {.t = V_NONE};
  return opt ? none : sf__cel_err(n, "no such key");
}

/* Is node n a chain of selections and constant indexes from `device` or a variable? */
static bool attribute_chain(const cel_ctx_t *c, uint32_t n)
{
  for (;;) {
    const cel_node_t *nd = node(c, n);
    if (nd->op == N_DEVICE || nd->op == N_VAR)
      return true;
    if (nd->op == N_INDEX && node(c, kid(c, n, 1))->op > N_STR)
      return false;
    if (nd->op != N_SELECT && nd->op != N_INDEX)
      return false;
    n = kid(c, n, 0);
  }
}

static cel_val_t ev_has(cel_ctx_t *c, uint32_t n)
{
  const cel_node_t *nd = node(c, n);
  uint32_t steps = c->steps;
  cel_val_t m = sf__cel_ev(c, kid(c, n, 0)), out;
  /* Kubernetes' environment charges nothing for has() of an attribute (PresenceTestHasCost false). */
  if (attribute_chain(c, kid(c, n, 0)) && steps <= CEL_COST_MAX)
    c->steps = steps;
  if (BAD(m))
    return m;
  if (m.flags & CV_OPT || m.t == V_NONE)
    return sf__cel_unk(n, "has() on an optional value is not supported");
  int r = m.t == V_ATTRS || m.t == V_CAPS
              ? sf__cel_has_domain(c, m.t == V_ATTRS, c->p->pool + nd->v.s.off, nd->v.s.len)
              : sf__cel_lookup(c, n, &m, c->p->pool + nd->v.s.off, nd->v.s.len, &out);
  return r < 0 ? out : sf__cel_bool(r == 1);
}

/* ---- operators ---- */

/* a && b (is_and) or a || b, both evaluated: CEL's commutative absorption. */
static cel_val_t logic2(uint32_t n, cel_val_t a, cel_val_t b, bool is_and)
{
  if (a.t == V_BOOL && !(a.flags & CV_OPT) && a.v.b != is_and)
    return a;
  if (b.t == V_BOOL && !(b.flags & CV_OPT) && b.v.b != is_and)
    return b;
  if (BAD(a) || BAD(b))
    return sf__cel_worst(a, b);
  if (a.t == V_BOOL && b.t == V_BOOL && !((a.flags | b.flags) & CV_OPT))
    return a;
  return sf__cel_err(n, "no such overload: logical operator on a non-bool");
}

static cel_val_t ev_logic(cel_ctx_t *c, uint32_t n, bool is_and)
{
  cel_val_t a = sf__cel_ev(c, kid(c, n, 0));
  if (a.t == V_BOOL && !(a.flags & CV_OPT) && a.v.b != is_and)
    return a;
  return logic2(n, a, sf__cel_ev(c, kid(c, n, 1)), is_and);
}

static cel_val_t concat(cel_ctx_t *c, uint32_t n, const cel_val_t *a, const cel_val_t *b)
{
  cel_val_t r = *a;
  r.n = a->n + b->n;
  if (a->t == V_STR) {
    char *s = sf__cel_scratch(c, r.n);
    if (s == NULL)
      return sf__cel_unk(n, "string scratch space exhausted");
    memcpy(s, a->v.s, a->n);
    memcpy(s + a->n, b->v.s, b->n);
    r.v.s = s;
    return r;
  }
  cel_val_t *l = sf__cel_reserve(c, r.n);
  if (l == NULL)
    return sf__cel_unk(n, "list arena exhausted");
  memcpy(l, a->v.l, a->n * sizeof *l);
  memcpy(l + a->n, b->v.l, b->n * sizeof *l);
  r.v.l = l;
  return r;
}

/* CEL's int (signed) and uint arithmetic: overflow, and division or modulus by zero, are errors. */
static cel_val_t arith_integer(uint32_t n, int op, cel_val_t a, cel_val_t b)
{
  bool u = a.t == V_UINT, over = false;
  cel_val_t v = {.t = a.t};
  if ((op == N_DIV || op == N_MOD) && (u ? b.v.u == 0 : b.v.i == 0))
    return sf__cel_err(n, op == N_DIV ? "division by zero" : "modulus by zero");
  switch (op) {
  case N_ADD:
    over = u ? __builtin_add_overflow(a.v.u, b.v.u, &v.v.u)
             : __builtin_add_overflow(a.v.i, b.v.i, &v.v.i);
    break;
  case N_SUB:
    over = u ? __builtin_sub_overflow(a.v.u, b.v.u, &v.v.u)
             : __builtin_sub_overflow(a.v.i, b.v.i, &v.v.i);
    break;
  case N_MUL:
    over = u ? __builtin_mul_overflow(a.v.u, b.v.u, &v.v.u)
             : __builtin_mul_overflow(a.v.i, b.v.i, &v.v.i);
    break;
  default:
    if (u)
      v.v.u = op == N_DIV ? a.v.u / b.v.u : a.v.u % b.v.u;
    else if (!(over = a.v.i == INT64_MIN && b.v.i == -1))
      v.v.i = op == N_DIV ? a.v.i / b.v.i : a.v.i % b.v.i;
  }
  return over ? sf__cel_err(n, u ? "unsigned integer overflow" : "integer overflow") : v;
}

static cel_val_t arith_double(uint32_t n, int op, double a, double b)
{
  cel_val_t v = {.t = V_DOUBLE};
  switch (op) {
  case N_ADD: v.v.d = a + b; break;
  case N_SUB: v.v.d = a - b; break;
  case N_MUL: v.v.d = a * b; break;
  case N_DIV: v.v.d = a / b; break;
  default: return sf__cel_err(n, "no such overload: double modulus");
  }
  return v;
}

static cel_val_t ev_arith(cel_ctx_t *c, uint32_t n, int op)
{
  cel_val_t a = sf__cel_ev(c, kid(c, n, 0));
  cel_val_t b = sf__cel_ev(c, kid(c, n, 1));
  if (BAD(a) || BAD(b))
    return sf__cel_worst(a, b);
  if (a.t != b.t || (a.flags | b.flags) & CV_OPT)
    return sf__cel_err(n, "no such overload: arithmetic on different types");
  if (a.t == V_INT || a.t == V_UINT)
    return arith_integer(n, op, a, b);
  if (a.t == V_DOUBLE)
    return arith_double(n, op, a.v.d, b.v.d);
  if (op == N_ADD && (a.t == V_STR || a.t == V_LIST))
    return concat(c, n, &a, &b);
  return sf__cel_err(n, "no such overload: arithmetic");
}

static cel_val_t ev_unary(cel_ctx_t *c, uint32_t n, int op)
{
  cel_val_t a = sf__cel_ev(c, kid(c, n, 0));
  if (BAD(a))
    return a;
  if (a.flags & CV_OPT)
    return sf__cel_err(n, "no such overload: unary operator on an optional");
  if (op == N_NOT)
    return a.t == V_BOOL ? sf__cel_bool(!a.v.b)
                         : sf__cel_err(n, "no such overload: '!' on a non-bool");
  if (a.t == V_INT)
    return a.v.i == INT64_MIN ? sf__cel_err(n, "integer overflow") : sf__cel_int(-a.v.i);
  if (a.t == V_DOUBLE) {
    a.v.d = -a.v.d;
    return a;
  }
  return sf__cel_err(n, "no such overload: negation");
}

static cel_val_t ev_cmp(cel_ctx_t *c, uint32_t n, int op)
{
  cel_val_t a = sf__cel_ev(c, kid(c, n, 0));
  cel_val_t b = sf__cel_ev(c, kid(c, n, 1));
  if (BAD(a) || BAD(b))
    return sf__cel_worst(a, b);
  if (op == N_EQ || op == N_NE) {
    cel_val_t e = sf__cel_eq(n, &a, &b);
    if (e.t == V_BOOL && op == N_NE)
      e.v.b = !e.v.b;
    return e;
  }
  int o = sf__cel_order(&a, &b);
  if (o == 3)
    return sf__cel_err(n, "no such overload: ordering");
  if (o == 2)
    return sf__cel_bool(false);
  switch (op) {
  case N_LT: return sf__cel_bool(o < 0);
  case N_LE: return sf__cel_bool(o <= 0);
  case N_GT: return sf__cel_bool(o > 0);
  default: return sf__cel_bool(o >= 0);
  }
}

static cel_val_t ev_in(cel_ctx_t *c, uint32_t n)
{
  cel_val_t a = sf__cel_ev(c, kid(c, n, 0));
  cel_val_t b = sf__cel_ev(c, kid(c, n, 1));
  if (BAD(a) || BAD(b))
    return sf__cel_worst(a, b);
  if (b.flags & CV_OPT)
    return sf__cel_err(n, "no such overload: 'in' an optional");
  if (b.t == V_LIST) {
    cel_val_t bad = sf__cel_bool(false);
    for (uint32_t i = 0; i < b.n; i++) {
      cel_val_t e = sf__cel_eq(n, &a, &b.v.l[i]);
      if (e.t == V_BOOL && e.v.b)
        return e;
      if (BAD(e) && bad.t != V_UNK)
        bad = e;
    }
    return bad;
  }
  if (b.t == V_ATTRS || b.t == V_CAPS)
    return sf__cel_bool(a.t == V_STR && !(a.flags & CV_OPT) &&
                        sf__cel_has_domain(c, b.t == V_ATTRS, a.v.s, a.n));
  if (b.t == V_QUERY)
    return sf__cel_bool(a.t == V_STR && !(a.flags & CV_OPT) &&
                        sf__cel_query_lookup(c, n, &b, a.v.s, a.n, NULL));
  if (b.t == V_MAP) {
    int at = sf__cel_map_find(&b, &a);
    return at == -2 ? sf__cel_unk(n, "a map key of this type is not supported")
                    : sf__cel_bool(at >= 0);
  }
  if (b.t == V_ADOM || b.t == V_CDOM) {
    cel_val_t out;
    return sf__cel_bool(a.t == V_STR && !(a.flags & CV_OPT) &&
                        sf__cel_lookup(c, n, &b, a.v.s, a.n, &out) == 1);
  }
  return sf__cel_err(n, "no such overload: 'in'");
}

static cel_val_t ev_list(cel_ctx_t *c, uint32_t n)
{
  const cel_node_t *nd = node(c, n);
  cel_val_t *l = sf__cel_reserve(c, nd->nk), bad = {.t = V_LIST};
  if (l == NULL)
    return sf__cel_unk(n, "list arena exhausted");
  for (uint32_t i = 0; i < nd->nk; i++) {
    l[i] = sf__cel_ev(c, kid(c, n, i));
    if (BAD(l[i]) && bad.t != V_UNK)
      bad = l[i];
  }
  cel_val_t r = {.t = V_LIST, .n = nd->nk, .v.l = l};
  return BAD(bad) ? bad : r;
}

/* A map literal: keys and values in order; a repeated key is cel-go's runtime error. */
static cel_val_t ev_map(cel_ctx_t *c, uint32_t n)
{
  const cel_node_t *nd = node(c, n);
  cel_map_builder_t b;
  cel_val_t bad = {.t = V_MAP};
  if (!sf__cel_map_start(c, &b, nd->nk / 2))
    return sf__cel_unk(n, "list arena exhausted");
  for (uint32_t i = 0; i + 1 < nd->nk; i += 2) {
    cel_val_t k = sf__cel_ev(c, kid(c, n, i)), v = sf__cel_ev(c, kid(c, n, i + 1));
    if (!BAD(k) && !BAD(v) && !BAD(bad))
      k = sf__cel_map_insert(c, n, &b, &k, &v);
    if ((BAD(k) || BAD(v)) && (!BAD(bad) || sf__cel_worst(k, v).t == V_UNK))
      bad = sf__cel_worst(k, v);
  }
  return BAD(bad) ? bad : b.m;
}

static cel_val_t ev_call(cel_ctx_t *c, uint32_t n)
{
  const cel_node_t *nd = node(c, n);
  cel_val_t a[CEL_ARGS_MAX], bad = {.t = V_NULL};
  for (uint32_t i = 0; i < nd->nk; i++) {
    a[i] = sf__cel_ev(c, kid(c, n, i));
    if (BAD(a[i]) && bad.t != V_UNK)
      bad = a[i];
  }
  return BAD(bad) ? bad : sf__cel_call(c, n, a, nd->nk);
}

static cel_val_t ev_cond(cel_ctx_t *c, uint32_t n)
{
  cel_val_t k = sf__cel_ev(c, kid(c, n, 0));
  if (BAD(k))
    return k;
  if (k.t != V_BOOL || k.flags & CV_OPT)
    return sf__cel_err(n, "no such overload: condition is not a bool");
  return sf__cel_ev(c, kid(c, n, k.v.b ? 1 : 2));
}

static cel_val_t ev_bind(cel_ctx_t *c, uint32_t n)
{
  /* The value is kept even when it is an error: it matters only if the body reads it. */
  c->slots[node(c, n)->v.u] = sf__cel_ev(c, kid(c, n, 0));
  return sf__cel_ev(c, kid(c, n, 1));
}

static cel_val_t compr(cel_ctx_t *c, uint32_t n, const cel_val_t *range);

static cel_val_t ev_compr(cel_ctx_t *c, uint32_t n)
{
  cel_val_t r = sf__cel_ev(c, kid(c, n, 0));
  if (BAD(r))
    return r;
  if (r.flags & CV_OPT || (r.t != V_LIST && r.t != V_ADOM && r.t != V_CDOM && r.t != V_MAP))
    return r.t == V_ATTRS || r.t == V_CAPS || r.t == V_QUERY
               ? sf__cel_unk(n, "macros over maps are not supported")
               : sf__cel_err(n, "no such overload: macro on a non-list");
  return compr(c, n, &r);
}

cel_val_t sf__cel_ev(cel_ctx_t *c, uint32_t n)
{
  const cel_node_t *nd = node(c, n);
  cel_val_t r = {.t = V_NULL};
  /*
   * The steps are a lower bound of the runtime cost cel-go charges with
   * Kubernetes' cost estimator: a read of `device` or of a variable starts an
   * attribute, which costs 1 however long its chain of selections; each macro
   * iteration costs at least its accumulator's read (elem()); string
   * functions at least a tenth of the string's length (the library's).
   * Operators, calls and literals may cost 0 there (an empty string's
   * trim(), a constant list folded at compile time) and count nothing here.
   * Past the limit cel-go's evaluation has failed too, so the answer is its
   * runtime error, not UNKNOWN.
   */
  if ((nd->op == N_DEVICE || nd->op == N_VAR) && ++c->steps > CEL_COST_MAX)
    return sf__cel_err(n, "operation cancelled: actual cost limit exceeded");
  switch (nd->op) {
  case N_NULL: return r;
  case N_BOOL: return sf__cel_bool(nd->v.b);
  case N_INT: return sf__cel_int(nd->v.i);
  case N_UINT: return (cel_val_t){.t = V_UINT, .v.u = nd->v.u};
  case N_DOUBLE: return (cel_val_t){.t = V_DOUBLE, .v.d = nd->v.d};
  case N_STR:
  case N_SEMVER:
    r.t = nd->op == N_STR ? V_STR : V_SEMVER;
    r.v.s = c->p->pool + nd->v.s.off;
    r.n = nd->v.s.len;
    return r;
  case N_LIST: return ev_list(c, n);
  case N_DEVICE: r.t = V_DEVICE; return r;
  case N_QTY: return (cel_val_t){.t = V_QTY, .v.q = nd->v.i};
  case N_VAR: return c->slots[nd->v.u];
  case N_SELECT: return ev_select(c, n);
  case N_INDEX: return ev_index(c, n);
  case N_HAS: return ev_has(c, n);
  case N_NOT:
  case N_NEG: return ev_unary(c, n, nd->op);
  case N_AND:
  case N_OR: return ev_logic(c, n, nd->op == N_AND);
  case N_COND: return ev_cond(c, n);
  case N_ADD:
  case N_SUB:
  case N_MUL:
  case N_DIV:
  case N_MOD: return ev_arith(c, n, nd->op);
  case N_EQ:
  case N_NE:
  case N_LT:
  case N_LE:
  case N_GT:
  case N_GE: return ev_cmp(c, n, nd->op);
  case N_IN: return ev_in(c, n);
  case N_CALL: return ev_call(c, n);
  case N_BIND: return ev_bind(c, n);
  case N_MAP: return ev_map(c, n);
  default: return ev_compr(c, n);
  }
}

/* ---- macros ---- */

/*
 * Element i of the range (a list, or a domain map's keys); false past the
 * end. Each iteration is a step: cel-go charges at least its accumulator's
 * read.
 */
static bool elem(cel_ctx_t *c, const cel_val_t *range, size_t *i, cel_val_t *out)
{
  /* Past the cost limit every loop ends at once; sf_cel_eval turns the result into the error. */
  if (++c->steps > CEL_COST_MAX)
    return false;
  if (range->t == V_LIST) {
    if (*i >= range->n)
      return false;
    *out = range->v.l[(*i)++];
    return true;
  }
  if (range->t == V_MAP) {
    if (*i >= range->n)
      return false;
    *out = range->v.l[2 * (*i)++];
    return true;
  }
  bool attrs = range->t == V_ADOM;
  size_t nf = sf__cel_nfields(c, attrs);
  for (; *i < nf; (*i)++) {
    const char *name = sf__cel_field_name(c, attrs, *i);
    if (sf__cel_in_domain(name, range->v.s, range->n)) {
      (*i)++;
      memset(out, 0, sizeof *out);
      out->t = V_STR;
      out->v.s = name + range->n + 1;
      out->n = (uint32_t)strlen(out->v.s);
      return true;
    }
  }
  return false;
}

static size_t range_len(const cel_ctx_t *c, const cel_val_t *range)
{
  if (range->t == V_LIST || range->t == V_MAP)
    return range->n;
  return (size_t)sf__cel_ndomain_fields(c, range->t == V_ADOM, range);
}

/* all / exists: folds with && or ||, stopping at the absorbing value. */
static cel_val_t quantifier(cel_ctx_t *c, uint32_t n, const cel_val_t *range, bool is_all)
{
  const cel_node_t *nd = node(c, n);
  cel_val_t acc = sf__cel_bool(is_all), x;
  size_t i = 0;
  while (elem(c, range, &i, &x)) {
    c->slots[nd->v.u] = x;
    acc = logic2(n, acc, sf__cel_ev(c, kid(c, n, 1)), is_all);
    if (acc.t == V_BOOL && acc.v.b != is_all)
      break;
  }
  return acc;
}

/* exists_one, map and filter: strict in their predicate and transform. */
static cel_val_t collect(cel_ctx_t *c, uint32_t n, const cel_val_t *range)
{
  const cel_node_t *nd = node(c, n);
  cel_val_t *out = nd->fn == M_EXISTS_ONE ? NULL : sf__cel_reserve(c, range_len(c, range)), x;
  if (nd->fn != M_EXISTS_ONE && out == NULL)
    return sf__cel_unk(n, "list arena exhausted");
  uint32_t count = 0;
  bool transform = (nd->fn == M_MAP && nd->nk == 2) || nd->fn == M_SORTBY;
  size_t i = 0;
  while (elem(c, range, &i, &x)) {
    c->slots[nd->v.u] = x;
    cel_val_t p = transform ? sf__cel_bool(true) : sf__cel_ev(c, kid(c, n, 1));
    if (BAD(p))
      return p;
    if (p.t != V_BOOL || p.flags & CV_OPT)
      return sf__cel_err(n, "no such overload: predicate is not a bool");
    if (!p.v.b)
      continue;
    if (nd->fn == M_MAP || nd->fn == M_SORTBY) {
      x = sf__cel_ev(c, kid(c, n, nd->nk - 1));
      if (BAD(x))
        return x;
    }
    if (out != NULL)
      out[count] = x;
    count++;
  }
  if (nd->fn == M_EXISTS_ONE)
    return sf__cel_bool(count == 1);
  if (nd->fn == M_SORTBY)
    return sf__cel_sort_by(c, n, range, out);
  cel_val_t r = {.t = V_LIST, .n = count, .v.l = out};
  return r;
}

/*
 * The next (key, value) of the range into the macro's two slots: (index,
 * element) of a list, (name, value) of a domain map. False past the end.
 */
static bool elem2(cel_ctx_t *c, uint32_t n, const cel_val_t *range, size_t *i)
{
  uint32_t slot = (uint32_t)node(c, n)->v.u;
  size_t at = *i;
  cel_val_t k;
  if (!elem(c, range, i, &k))
    return false;
  if (range->t == V_LIST) {
    c->slots[slot] = sf__cel_int((int64_t)at);
    c->slots[slot + 1] = k;
  } else if (range->t == V_MAP) {
    c->slots[slot] = k;
    c->slots[slot + 1] = range->v.l[2 * at + 1];
  } else {
    /* elem() left *i just past the field it named. */
    c->slots[slot] = k;
    sf__cel_field_value(c, n, range->t == V_ADOM, *i - 1, &c->slots[slot + 1]);
  }
  return true;
}

/* A bool predicate's value, or the error (ERR/UNK) that ends the macro. */
static bool predicate(uint32_t n, cel_val_t p, cel_val_t *bad)
{
  if (BAD(p) || p.t != V_BOOL || p.flags & CV_OPT) {
    *bad = BAD(p) ? p : sf__cel_err(n, "no such overload: predicate is not a bool");
    return false;
  }
  return true;
}

/*
 * all(k, v, p), exists(k, v, p), existsOne(k, v, p) and transformList(k,
 * v, [filter,] e) of ext.TwoVarComprehensions: the quantifiers absorb as
 * their one-variable forms, the others are strict.
 */
/*
 * transformMap(k, v, [filter,] e) and transformMapEntry(k, v, [filter,] e):
 * the first maps each key kept to e, the second merges the map e gives; a
 * key met twice is cel-go's runtime error.
 */
static cel_val_t transform_map(cel_ctx_t *c, uint32_t n, const cel_val_t *range)
{
  const cel_node_t *nd = node(c, n);
  uint32_t slot = (uint32_t)nd->v.u;
  cel_map_builder_t b;
  cel_val_t bad;
  size_t i = 0;
  if (!sf__cel_map_start(c, &b, range_len(c, range)))
    return sf__cel_unk(n, "list arena exhausted");
  while (elem2(c, n, range, &i)) {
    cel_val_t p = nd->nk == 2 ? sf__cel_bool(true) : sf__cel_ev(c, kid(c, n, 1));
    if (!predicate(n, p, &bad))
      return bad;
    if (!p.v.b)
      continue;
    cel_val_t key = c->slots[slot], x = sf__cel_ev(c, kid(c, n, nd->nk - 1)), r = b.m;
    if (BAD(x))
      return x;
    if (nd->fn == M_TRANSFORM_MAP2)
      r = sf__cel_map_insert(c, n, &b, &key, &x);
    else if (x.t != V_MAP || x.flags & CV_OPT)
      return maplike(x.t) ? sf__cel_unk(n, "transformMapEntry of the device's maps is not supported")
                          : sf__cel_err(n, "no such overload: transformMapEntry of a non-map");
    for (uint32_t e = 0; nd->fn == M_TRANSFORM_ENTRY2 && e < x.n && !BAD(r); e++)
      r = sf__cel_map_insert(c, n, &b, &x.v.l[2 * e], &x.v.l[2 * e + 1]);
    if (BAD(r))
      return r;
  }
  return b.m;
}

static cel_val_t compr2(cel_ctx_t *c, uint32_t n, const cel_val_t *range)
{
  const cel_node_t *nd = node(c, n);
  int kind = nd->fn;
  bool is_all = kind == M_ALL2;
  cel_val_t acc = sf__cel_bool(is_all), bad;
  cel_val_t *out = kind == M_TRANSFORM2 ? sf__cel_reserve(c, range_len(c, range)) : NULL;
  if (kind == M_TRANSFORM2 && out == NULL)
    return sf__cel_unk(n, "list arena exhausted");
  uint32_t count = 0;
  size_t i = 0;
  while (elem2(c, n, range, &i)) {
    if (kind == M_ALL2 || kind == M_EXISTS2) {
      acc = logic2(n, acc, sf__cel_ev(c, kid(c, n, 1)), is_all);
      if (acc.t == V_BOOL && acc.v.b != is_all)
        break;
      continue;
    }
    cel_val_t p = kind == M_TRANSFORM2 && nd->nk == 2 ? sf__cel_bool(true)
                                                      : sf__cel_ev(c, kid(c, n, 1));
    if (!predicate(n, p, &bad))
      return bad;
    if (p.v.b && kind == M_TRANSFORM2) {
      cel_val_t x = sf__cel_ev(c, kid(c, n, nd->nk - 1));
      if (BAD(x))
        return x;
      out[count] = x;
    }
    count += p.v.b;
  }
  if (kind == M_ALL2 || kind == M_EXISTS2)
    return acc;
  if (kind == M_EXISTS_ONE2)
    return sf__cel_bool(count == 1);
  cel_val_t r = {.t = V_LIST, .n = count, .v.l = out};
  return r;
}

static cel_val_t compr(cel_ctx_t *c, uint32_t n, const cel_val_t *range)
{
  int kind = node(c, n)->fn;
  if (kind == M_TRANSFORM_MAP2 || kind == M_TRANSFORM_ENTRY2)
    return transform_map(c, n, range);
  if (kind >= M_ALL2)
    return compr2(c, n, range);
  if (kind == M_ALL || kind == M_EXISTS)
    return quantifier(c, n, range, kind == M_ALL);
  return collect(c, n, range);
}
