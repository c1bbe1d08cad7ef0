/*
 * CEL recursive-descent parser: tokens (cel_lex.c) in, a checked AST out
 * (the grammar is in cel.c). Identifiers are resolved here (device,
 * cel.bind and macro variables become slots), functions are looked up in a
 * table by name and arity, constant regular expressions are compiled once.
 * Anything the evaluator does not implement fails here, so a program that
 * compiles can only meet UNKNOWN at run time through a value (an RE2
 * feature, a quantity past int64 milli-units, the cost limit).
 *
 * The text is untrusted (a DeviceClass or claim written by a user): lengths,
 * nesting depth and the number of variables are capped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cel_lex.h"
#include "slicefit/quantity.h"

/* ---- nodes ---- */

/* The static type of a new node of kind op over kids, before call() or a selection refines it. */
static uint32_t static_type(const parser_t *ps, int op, const uint32_t *kids, uint32_t nk)
{
  static const uint32_t lit[] = {
      [N_NULL] = TY_NULL,     [N_BOOL] = TY_BOOL,     [N_INT] = TY_INT,   [N_UINT] = TY_UINT,
      [N_DOUBLE] = TY_DOUBLE, [N_STR] = TY_STR,       [N_LIST] = TY_LIST, [N_DEVICE] = TY_DEVICE,
      [N_QTY] = TY_QTY,       [N_SEMVER] = TY_SEMVER, [N_HAS] = TY_BOOL,  [N_NOT] = TY_BOOL,
      [N_AND] = TY_BOOL,      [N_OR] = TY_BOOL,       [N_EQ] = TY_BOOL,   [N_NE] = TY_BOOL,
      [N_LT] = TY_BOOL,       [N_LE] = TY_BOOL,       [N_GT] = TY_BOOL,   [N_GE] = TY_BOOL,
      [N_IN] = TY_BOOL,
  };
  if (op < (int)(sizeof lit / sizeof lit[0]) && lit[op] != 0)
    return lit[op];
  switch (op) {
  case N_NEG: return ps->ty[kids[0]];
  case N_BIND: return ps->ty[kids[1]];
  case N_COND: return ps->ty[kids[1]] == ps->ty[kids[2]] ? ps->ty[kids[1]] : TY_DYN;
  case N_ADD:
  case N_SUB:
  case N_MUL:
  case N_DIV:
  case N_MOD:
    return nk == 2 && ps->ty[kids[0]] == ps->ty[kids[1]] &&
                   (ps->ty[kids[0]] & (TY_NUM | TY_STR | TY_LIST)) == ps->ty[kids[0]]
               ? ps->ty[kids[0]]
               : TY_DYN;
  default: return TY_DYN;
  }
}

static uint32_t mk(parser_t *ps, int op, uint32_t pos, const uint32_t *kids, uint32_t nk)
{
  sf_cel_prog_t *p = ps->p;
  sf_xgrow(&p->nodes, &ps->nodecap, (size_t)p->nnodes + 1, sizeof *p->nodes);
  sf_xgrow(&ps->depth, &ps->depthcap, (size_t)p->nnodes + 1, sizeof *ps->depth);
  sf_xgrow(&ps->ty, &ps->tycap, (size_t)p->nnodes + 1, sizeof *ps->ty);
  sf_xgrow(&p->kids, &ps->kidcap, (size_t)p->nkids + nk, sizeof *p->kids);
  uint32_t n = p->nnodes++;
  cel_node_t *nd = &p->nodes[n];
  memset(nd, 0, sizeof *nd);
  nd->op = (uint8_t)op;
  nd->pos = pos;
  nd->k0 = p->nkids;
  nd->nk = nk;
  uint16_t d = 0;
  for (uint32_t i = 0; i < nk; i++) {
    p->kids[p->nkids++] = kids[i];
    if (ps->depth[kids[i]] > d)
      d = ps->depth[kids[i]];
  }
  ps->depth[n] = (uint16_t)(d + 1);
  ps->ty[n] = static_type(ps, op, kids, nk);
  if (d + 1 > CEL_DEPTH_MAX)
    sf__cel_fail(ps, pos, "expression nested too deeply");
  return n;
}

static uint32_t mk2(parser_t *ps, int op, uint32_t pos, uint32_t a, uint32_t b)
{
  uint32_t k[2] = {a, b};
  return mk(ps, op, pos, k, 2);
}

static uint32_t mk1(parser_t *ps, int op, uint32_t pos, uint32_t a)
{
  return mk(ps, op, pos, &a, 1);
}

/* A node naming the identifier or string `s` of length n (copied into the pool). */
static void set_name(parser_t *ps, uint32_t n, const char *s, uint32_t len)
{
  uint32_t off = ps->p->npool;
  for (uint32_t i = 0; i < len; i++)
    sf__cel_pool_put(ps, s[i]);
  sf__cel_pool_put(ps, '\0');
  ps->p->nodes[n].v.s.off = off;
  ps->p->nodes[n].v.s.len = len;
}

/* ---- expressions ---- */

static uint32_t expr(parser_t *ps);

/* Comma-separated expressions up to `close`; the caller frees *out. */
static uint32_t exprs(parser_t *ps, int close, uint32_t **out, uint32_t first)
{
  size_t cap = 0;
  uint32_t n = 0;
  *out = NULL;
  if (first != UINT32_MAX) {
    sf_xgrow(out, &cap, 1, sizeof **out);
    (*out)[n++] = first;
  }
  while (!ps->failed && !sf__cel_is_punct(ps, close)) {
    uint32_t e = expr(ps);
    sf_xgrow(out, &cap, (size_t)n + 1, sizeof **out);
    (*out)[n++] = e;
    if (!sf__cel_accept(ps, ','))
      break;
  }
  sf__cel_expect(ps, close);
  return n;
}

/*
 * The functions of the Kubernetes base CEL environment
 * (k8s.io/apiserver/pkg/cel/environment/base.go) that slicefit evaluates,
 * with the Kubernetes minor version whose base environment first offers the
 * function. 0: since CEL came to Kubernetes (the standard functions, the
 * Kubernetes lists, regex and URL libraries, and cel-go's strings extension
 * at version 0: charAt, indexOf, join, replace, split, substring, trim, ...);
 * 28 quantities and optionals; 29 the strings extension's version 2 (format,
 * strings.quote) and sets; 30 ip and cidr; 31 the format library and, in
 * DRA's own environment, semver and cel.bind; 32 two-variable
 * comprehensions; 34 the lists extension's version 3. The version table of
 * docs/operators.md is this one. `tgt` and `arg` are the
 * static types the overloads accept for the target (or first argument of a
 * global) and for the other arguments; `ret` the result's.
 */
/* The sets of types the overloads below accept, named by what their members share. */
#define TY_SIZED (TY_STR | TY_LIST | TY_MAP) /* size() */
#define TY_SEQ (TY_STR | TY_LIST)            /* indexOf(), lastIndexOf() */
#define TY_ORDERED (TY_QTY | TY_SEMVER)      /* compareTo(), isGreaterThan(), isLessThan() */
#define TY_AMOUNT (TY_QTY | TY_INT)          /* what a quantity's add() and sub() take */
#define TY_STR_OR_INT (TY_STR | TY_INT)      /* findAll(), replace(), split(): a text or a count */
#define TY_ADDR (TY_STR | TY_NET)            /* an IP or a CIDR, as text or parsed */
#define TY_CONVERTIBLE (TY_NUM | TY_STR)     /* int(), uint(), double() */
#define TY_PRINTABLE (TY_CONVERTIBLE | TY_BOOL | TY_QTY | TY_SEMVER | TY_NET) /* string() */

static const struct {
  const char *name; /* "ns.name" for a namespaced global */
  uint16_t fn;
  uint8_t kind;     /* 1: global, 2: method, 3: both, 4: namespaced global */
  uint8_t min, max; /* arguments including the target */
  uint8_t minor;
  uint32_t tgt, arg, ret;
} fns[] = {
    {"size", FN_SIZE, 3, 1, 1, 0, TY_SIZED, TY_NONE, TY_INT},
    {"startsWith", FN_STARTS, 2, 2, 2, 0, TY_STR, TY_STR, TY_BOOL},
    {"endsWith", FN_ENDS, 2, 2, 2, 0, TY_STR, TY_STR, TY_BOOL},
    {"contains", FN_CONTAINS, 2, 2, 2, 0, TY_STR, TY_STR, TY_BOOL},
    {"matches", FN_MATCHES, 3, 2, 2, 0, TY_STR, TY_STR, TY_BOOL},
    {"lowerAscii", FN_LOWER, 2, 1, 1, 0, TY_STR, TY_NONE, TY_STR},
    {"upperAscii", FN_UPPER, 2, 1, 1, 0, TY_STR, TY_NONE, TY_STR},
    {"find", FN_FIND, 2, 2, 2, 0, TY_STR, TY_STR, TY_STR},
    {"findAll", FN_FINDALL, 2, 2, 3, 0, TY_STR, TY_STR_OR_INT, TY_LIST},
    {"isSorted", FN_ISSORTED, 2, 1, 1, 0, TY_LIST, TY_NONE, TY_BOOL},
    {"sum", FN_SUM, 2, 1, 1, 0, TY_LIST, TY_NONE, TY_DYN},
    {"min", FN_MIN, 2, 1, 1, 0, TY_LIST, TY_NONE, TY_DYN},
    {"max", FN_MAX, 2, 1, 1, 0, TY_LIST, TY_NONE, TY_DYN},
    {"indexOf", FN_INDEXOF, 2, 2, 3, 0, TY_SEQ, TY_DYN, TY_INT},
    {"lastIndexOf", FN_LASTINDEXOF, 2, 2, 3, 0, TY_SEQ, TY_DYN, TY_INT},
    {"quantity", FN_QUANTITY, 1, 1, 1, 28, TY_STR, TY_NONE, TY_QTY},
    {"isQuantity", FN_ISQUANTITY, 1, 1, 1, 28, TY_STR, TY_NONE, TY_BOOL},
    {"compareTo", FN_COMPARE, 2, 2, 2, 28, TY_ORDERED, TY_ORDERED, TY_INT},
    {"isGreaterThan", FN_GT, 2, 2, 2, 28, TY_ORDERED, TY_ORDERED, TY_BOOL},
    {"isLessThan", FN_LT, 2, 2, 2, 28, TY_ORDERED, TY_ORDERED, TY_BOOL},
    {"add", FN_ADD, 2, 2, 2, 28, TY_QTY, TY_AMOUNT, TY_QTY},
    {"sub", FN_SUB, 2, 2, 2, 28, TY_QTY, TY_AMOUNT, TY_QTY},
    {"asInteger", FN_ASINT, 2, 1, 1, 28, TY_QTY, TY_NONE, TY_INT},
    {"asApproximateFloat", FN_ASFLOAT, 2, 1, 1, 28, TY_QTY, TY_NONE, TY_DOUBLE},
    {"isInteger", FN_ISINT, 2, 1, 1, 28, TY_QTY, TY_NONE, TY_BOOL},
    {"sign", FN_SIGN, 2, 1, 1, 28, TY_QTY, TY_NONE, TY_INT},
    {"orValue", FN_ORVALUE, 2, 2, 2, 28, TY_OPT, TY_DYN, TY_DYN},
    {"hasValue", FN_HASVALUE, 2, 1, 1, 28, TY_OPT, TY_NONE, TY_BOOL},
    {"value", FN_VALUE, 2, 1, 1, 28, TY_OPT, TY_NONE, TY_DYN},
    {"charAt", FN_CHARAT, 2, 2, 2, 0, TY_STR, TY_INT, TY_STR},
    {"join", FN_JOIN, 2, 1, 2, 0, TY_LIST, TY_STR, TY_STR},
    {"replace", FN_REPLACE, 2, 3, 4, 0, TY_STR, TY_STR_OR_INT, TY_STR},
    {"split", FN_SPLIT, 2, 2, 3, 0, TY_STR, TY_STR_OR_INT, TY_LIST},
    {"substring", FN_SUBSTRING, 2, 2, 3, 0, TY_STR, TY_INT, TY_STR},
    {"trim", FN_TRIM, 2, 1, 1, 0, TY_STR, TY_NONE, TY_STR},
    {"format", FN_FORMAT, 2, 2, 2, 29, TY_STR, TY_LIST, TY_STR},
    {"strings.quote", FN_QUOTE, 4, 1, 1, 29, TY_STR, TY_NONE, TY_STR},
    {"sets.contains", FN_SETS_CONTAINS, 4, 2, 2, 29, TY_LIST, TY_LIST, TY_BOOL},
    {"sets.equivalent", FN_SETS_EQUIVALENT, 4, 2, 2, 29, TY_LIST, TY_LIST, TY_BOOL},
    {"sets.intersects", FN_SETS_INTERSECTS, 4, 2, 2, 29, TY_LIST, TY_LIST, TY_BOOL},
    /* The base environment has semver from 1.33; DRA's own environment adds it from 1.31. */
    {"semver", FN_SEMVER, 1, 1, 2, 31, TY_STR, TY_BOOL, TY_SEMVER},
    {"isSemver", FN_ISSEMVER, 1, 1, 2, 31, TY_STR, TY_BOOL, TY_BOOL},
    {"major", FN_MAJOR, 2, 1, 1, 31, TY_SEMVER, TY_NONE, TY_INT},
    {"minor", FN_MINOR, 2, 1, 1, 31, TY_SEMVER, TY_NONE, TY_INT},
    {"patch", FN_PATCH, 2, 1, 1, 31, TY_SEMVER, TY_NONE, TY_INT},
    {"slice", FN_SLICE, 2, 3, 3, 34, TY_LIST, TY_INT, TY_LIST},
    {"flatten", FN_FLATTEN, 2, 1, 2, 34, TY_LIST, TY_INT, TY_LIST},
    {"distinct", FN_DISTINCT, 2, 1, 1, 34, TY_LIST, TY_NONE, TY_LIST},
    {"reverse", FN_REVERSE, 2, 1, 1, 34, TY_LIST, TY_NONE, TY_LIST},
    {"sort", FN_SORT, 2, 1, 1, 34, TY_LIST, TY_NONE, TY_LIST},
    {"first", FN_FIRST, 2, 1, 1, 34, TY_LIST, TY_NONE, TY_OPT},
    {"last", FN_LAST, 2, 1, 1, 34, TY_LIST, TY_NONE, TY_OPT},
    {"lists.range", FN_RANGE, 4, 1, 1, 34, TY_INT, TY_NONE, TY_LIST},
    /* ip(string) and cidr.ip() share a name. */
    {"ip", FN_IP, 3, 1, 1, 30, TY_ADDR, TY_NONE, TY_NET},
    {"isIP", FN_ISIP, 1, 1, 1, 30, TY_STR, TY_NONE, TY_BOOL},
    {"ip.isCanonical", FN_ISCANONICAL, 4, 1, 1, 30, TY_STR, TY_NONE, TY_BOOL},
    {"family", FN_FAMILY, 2, 1, 1, 30, TY_NET, TY_NONE, TY_INT},
    {"isUnspecified", FN_ISUNSPECIFIED, 2, 1, 1, 30, TY_NET, TY_NONE, TY_BOOL},
    {"isLoopback", FN_ISLOOPBACK, 2, 1, 1, 30, TY_NET, TY_NONE, TY_BOOL},
    {"isLinkLocalMulticast", FN_ISLLMULTICAST, 2, 1, 1, 30, TY_NET, TY_NONE, TY_BOOL},
    {"isLinkLocalUnicast", FN_ISLLUNICAST, 2, 1, 1, 30, TY_NET, TY_NONE, TY_BOOL},
    {"isGlobalUnicast", FN_ISGLOBALUNICAST, 2, 1, 1, 30, TY_NET, TY_NONE, TY_BOOL},
    {"cidr", FN_CIDR, 1, 1, 1, 30, TY_STR, TY_NONE, TY_NET},
    {"isCIDR", FN_ISCIDR, 1, 1, 1, 30, TY_STR, TY_NONE, TY_BOOL},
    {"containsIP", FN_CONTAINSIP, 2, 2, 2, 30, TY_NET, TY_ADDR, TY_BOOL},
    {"containsCIDR", FN_CONTAINSCIDR, 2, 2, 2, 30, TY_NET, TY_ADDR, TY_BOOL},
    {"masked", FN_MASKED, 2, 1, 1, 30, TY_NET, TY_NONE, TY_NET},
    {"prefixLength", FN_PREFIXLEN, 2, 1, 1, 30, TY_NET, TY_NONE, TY_INT},
    /* A URL shares TY_NET with IPs and CIDRs: the checker lets ip(x).getHost() through to a run-time error. */
    {"url", FN_URL, 1, 1, 1, 0, TY_STR, TY_NONE, TY_NET},
    {"isURL", FN_ISURL, 1, 1, 1, 0, TY_STR, TY_NONE, TY_BOOL},
    {"getScheme", FN_GETSCHEME, 2, 1, 1, 0, TY_NET, TY_NONE, TY_STR},
    {"getHost", FN_GETHOST, 2, 1, 1, 0, TY_NET, TY_NONE, TY_STR},
    {"getHostname", FN_GETHOSTNAME, 2, 1, 1, 0, TY_NET, TY_NONE, TY_STR},
    {"getPort", FN_GETPORT, 2, 1, 1, 0, TY_NET, TY_NONE, TY_STR},
    {"getEscapedPath", FN_GETESCAPEDPATH, 2, 1, 1, 0, TY_NET, TY_NONE, TY_STR},
    {"getQuery", FN_GETQUERY, 2, 1, 1, 0, TY_NET, TY_NONE, TY_DYN},
    {"int", FN_INT, 1, 1, 1, 0, TY_CONVERTIBLE, TY_NONE, TY_INT},
    {"uint", FN_UINT, 1, 1, 1, 0, TY_CONVERTIBLE, TY_NONE, TY_UINT},
    {"double", FN_DOUBLE, 1, 1, 1, 0, TY_CONVERTIBLE, TY_NONE, TY_DOUBLE},
    /* string() of a quantity or a version is left to run time: not every Kubernetes release agrees. */
    {"string", FN_STRING, 1, 1, 1, 0, TY_PRINTABLE, TY_NONE, TY_STR},
    {"dyn", FN_DYN, 1, 1, 1, 0, TY_DYN, TY_NONE, TY_DYN},
    /* The Kubernetes format library; a constant's format is set from its name (call_named). */
    {"format.named", FN_FMT_NAMED, 4, 1, 1, 31, TY_STR, TY_NONE, TY_OPT},
    {"validate", FN_VALIDATE, 2, 2, 2, 31, TY_FORMAT, TY_STR, TY_OPT},
    /* format.dns1123Label(), format.uuid() and the other formats cel_format.c names. */
    {"format.*", FN_FMT_CONST, 4, 0, 0, 31, TY_NONE, TY_NONE, TY_FORMAT},
};

/* Macros (cel-go's standard ones, and from 1.32 ext.TwoVarComprehensions) by name and variables. */
static const struct {
  const char *name;
  uint8_t kind, vars, minor;
} macros[] = {
    {"exists", M_EXISTS, 1, 0},
    {"all", M_ALL, 1, 0},
    {"exists_one", M_EXISTS_ONE, 1, 0},
    {"map", M_MAP, 1, 0},
    {"filter", M_FILTER, 1, 0},
    {"all", M_ALL2, 2, 32},
    {"exists", M_EXISTS2, 2, 32},
    {"existsOne", M_EXISTS_ONE2, 2, 32},
    {"exists_one", M_EXISTS_ONE2, 2, 32},
    {"transformList", M_TRANSFORM2, 2, 32},
    {"transformMap", M_TRANSFORM_MAP2, 2, 32},
    {"transformMapEntry", M_TRANSFORM_ENTRY2, 2, 32},
    {"sortBy", M_SORTBY, 1, 34},
};

/* The table's name for function `name` (len bytes): "format.*" for each of the formats. */
static const char *table_name(const char *name, size_t len, size_t *out_len)
{
  *out_len = len;
  if (len > 7 && memcmp(name, "format.", 7) == 0 && sf__cel_format_id(name + 7, len - 7) >= 0) {
    *out_len = strlen("format.*");
    return "format.*";
  }
  return name;
}

int sf__cel_function_minor(const char *name)
{
  size_t len;
  name = table_name(name, strlen(name), &len);
  for (size_t k = 0; k < sizeof fns / sizeof fns[0]; k++)
    if (strcmp(fns[k].name, name) == 0)
      return fns[k].minor;
  int best = -1;
  for (size_t k = 0; k < sizeof macros / sizeof macros[0]; k++)
    if (strcmp(macros[k].name, name) == 0 && (best < 0 || macros[k].minor < best))
      best = macros[k].minor;
  return best;
}

/* A regular expression compiled once when the pattern is a literal. */
static void const_regex(parser_t *ps, cel_node_t *call)
{
  sf_cel_prog_t *p = ps->p;
  const cel_node_t *pat = &p->nodes[p->kids[call->k0 + 1]];
  call->v.i = -1;
  if (pat->op != N_STR)
    return;
  p->res = sf_xrealloc(p->res, (p->nres + 1) * sizeof *p->res);
  sf__cel_re_compile(&p->res[p->nres], p->pool + pat->v.s.off, pat->v.s.len, call->fn != FN_MATCHES);
  call->v.i = p->nres++;
}

/*
 * quantity('lit') and semver('lit') of a valid literal become constants, so
 * the usual capacity comparison does not parse its operand per device. An
 * invalid literal stays a call and fails (or is unknown) at run time, as in
 * Kubernetes.
 */
static void fold(parser_t *ps, cel_node_t *call)
{
  sf_cel_prog_t *p = ps->p;
  sf_milli_t q;
  if (call->nk != 1)
    return;
  const cel_node_t *arg = &p->nodes[p->kids[call->k0]];
  if (arg->op != N_STR)
    return;
  if (call->fn == FN_QUANTITY && sf_quantity_parse_n(p->pool + arg->v.s.off, arg->v.s.len, &q) == 0) {
    call->op = N_QTY;
    call->v.i = q;
  } else if (call->fn == FN_SEMVER &&
             sf__cel_semver(p->pool + arg->v.s.off, arg->v.s.len, NULL) == 0) {
    call->op = N_SEMVER;
    call->v.s = arg->v.s;
  }
}

/* Does a known static type `have` (TY_DYN when unknown) fit the overloads' `want`? */
static bool fits(uint32_t have, uint32_t want)
{
  return have == TY_DYN || (have & want) != 0;
}

/*
 * The types argument i (from 1) of function k may have: the table's, except
 * where the overloads fix each position (a string's indexOf(string, int),
 * replace(string, string, int), split(string, int), findAll(string, int)).
 */
static uint32_t arg_type(size_t k, uint32_t i, uint32_t target)
{
  switch (fns[k].fn) {
  case FN_INDEXOF:
  case FN_LASTINDEXOF:
    if (target != TY_STR)
      return fns[k].arg;
    return i == 1 ? TY_STR : TY_INT;
  case FN_REPLACE: return i <= 2 ? TY_STR : TY_INT;
  case FN_SPLIT:
  case FN_FINDALL: return i == 1 ? TY_STR : TY_INT;
  default: return fns[k].arg;
  }
}

/*
 * The checks cel-go's type checker makes of a call whose operands' types are
 * known: a target or argument that no overload takes does not compile.
 */
static void check_call(parser_t *ps, size_t k, uint32_t pos, const uint32_t *args, uint32_t nargs)
{
  bool ok = fits(ps->ty[args[0]], fns[k].tgt);
  for (uint32_t i = 1; ok && i < nargs; i++)
    ok = fits(ps->ty[args[i]], arg_type(k, i, ps->ty[args[0]]));
  if (!ok)
    sf__cel_fail(ps, pos, "found no matching overload for '%s' applied to these argument types",
                 fns[k].name);
}

static uint32_t call_named(parser_t *ps, const char *name, size_t len, uint32_t pos, bool method,
                           uint32_t *args, uint32_t nargs)
{
  size_t tlen;
  const char *tname = table_name(name, len, &tlen);
  for (size_t k = 0; k < sizeof fns / sizeof fns[0]; k++) {
    if (strlen(fns[k].name) != tlen || memcmp(fns[k].name, tname, tlen) != 0)
      continue;
    if (!(fns[k].kind & (method ? 2 : 1 | 4)) || nargs < fns[k].min || nargs > fns[k].max) {
      sf__cel_fail(ps, pos, "no overload of '%.*s' takes %u argument(s)%s", (int)len, name,
                   method ? nargs - 1 : nargs, method ? " as a method" : "");
      return 0;
    }
    if (nargs > 0)
      check_call(ps, k, pos, args, nargs);
    uint32_t n = mk(ps, N_CALL, pos, args, nargs);
    cel_node_t *nd = &ps->p->nodes[n];
    nd->fn = fns[k].fn;
    nd->flags = method ? F_TARGET : 0;
    ps->ty[n] = fns[k].ret;
    if (fns[k].minor > ps->p->minor)
      ps->p->minor = fns[k].minor;
    if (nd->fn == FN_MATCHES || nd->fn == FN_FIND || nd->fn == FN_FINDALL)
      const_regex(ps, nd);
    if (nd->fn == FN_FMT_CONST)
      nd->v.i = sf__cel_format_id(name + strlen("format."), len - strlen("format."));
    fold(ps, nd);
    return n;
  }
  /* The format library is complete: another name in it is one the environment does not declare. */
  if (len > 7 && memcmp(name, "format.", 7) == 0)
    sf__cel_fail(ps, pos, "undeclared reference to '%.*s'", (int)len, name);
  else
    sf__cel_fail(ps, pos, "unsupported function '%.*s'", (int)len, name);
  return 0;
}

static uint32_t call(parser_t *ps, const tok_t *name, bool method, uint32_t *args, uint32_t nargs)
{
  return call_named(ps, ps->src + name->pos, name->len, name->pos, method, args, nargs);
}

/* Generic call: the arguments follow at '('. */
static uint32_t call_args(parser_t *ps, const tok_t *name, uint32_t target)
{
  uint32_t *args;
  uint32_t n = exprs(ps, ')', &args, target);
  uint32_t r = ps->failed ? 0 : call(ps, name, target != UINT32_MAX, args, n);
  free(args);
  return r;
}

/* Puts the variable named by token v in scope with a fresh slot. */
static void push_var(parser_t *ps, const tok_t *v, uint32_t *slot)
{
  *slot = 0;
  if (v->t != T_IDENT) {
    sf__cel_fail(ps, v->pos, "expected a variable name");
    return;
  }
  if (ps->nscope >= CEL_SLOTS_MAX || ps->p->nslots >= CEL_SLOTS_MAX) {
    sf__cel_fail(ps, v->pos, "too many variables");
    return;
  }
  *slot = ps->p->nslots++;
  ps->scope[ps->nscope++] = (scope_t){ps->src + v->pos, v->len, *slot};
}

/* cel.bind(var, init, body): after "cel.bind(". The variable is in scope for the body only. */
static uint32_t bind(parser_t *ps, uint32_t pos)
{
  tok_t v = ps->cur;
  uint32_t slot;
  sf__cel_next(ps);
  sf__cel_expect(ps, ',');
  uint32_t init = expr(ps);
  sf__cel_expect(ps, ',');
  push_var(ps, &v, &slot);
  if (ps->failed)
    return 0;
  uint32_t body = expr(ps);
  ps->nscope--;
  sf__cel_expect(ps, ')');
  uint32_t n = mk2(ps, N_BIND, pos, init, body);
  ps->p->nodes[n].v.u = slot;
  return n;
}

/* The position of the first character from `i` on that is not a space, tab or line break. */
static uint32_t skip_blanks(const parser_t *ps, uint32_t i)
{
  while (i < ps->len &&
         (ps->src[i] == ' ' || ps->src[i] == '\n' || ps->src[i] == '\t' || ps->src[i] == '\r'))
    i++;
  return i;
}

/* Is the text after the current token (an identifier) a ','? Then it is a second variable. */
static bool second_var(const parser_t *ps)
{
  uint32_t i = skip_blanks(ps, ps->at);
  return ps->cur.t == T_IDENT && i < ps->len && ps->src[i] == ',';
}

/* The macro `name` with one or two variables; -1 when there is none. */
static int macro_kind(const parser_t *ps, const tok_t *name, uint8_t vars)
{
  for (size_t k = 0; k < sizeof macros / sizeof macros[0]; k++)
    if (macros[k].vars == vars && sf__cel_tok_is(name, ps->src, macros[k].name))
      return (int)k;
  return -1;
}

/* range.macro(var, [var2,] a [, b]): after '('. */
static uint32_t macro(parser_t *ps, const tok_t *name, uint32_t range)
{
  uint32_t slot, slot2, k[3] = {range, 0, 0}, nk = 2;
  tok_t v = ps->cur;
  sf__cel_next(ps);
  sf__cel_expect(ps, ',');
  int m = second_var(ps) ? macro_kind(ps, name, 2) : -1;
  m = m >= 0 ? m : macro_kind(ps, name, 1);
  if (m < 0)
    m = macro_kind(ps, name, 2); /* existsOne and transformList have only two variables */
  push_var(ps, &v, &slot);
  if (macros[m].vars == 2) {
    tok_t w = ps->cur;
    sf__cel_next(ps);
    sf__cel_expect(ps, ',');
    push_var(ps, &w, &slot2);
  }
  if (ps->failed)
    return 0;
  int kind = macros[m].kind;
  k[1] = expr(ps);
  bool to_map = kind == M_TRANSFORM_MAP2 || kind == M_TRANSFORM_ENTRY2;
  if ((kind == M_MAP || kind == M_TRANSFORM2 || to_map) && sf__cel_accept(ps, ','))
    k[nk++] = expr(ps);
  ps->nscope -= macros[m].vars;
  sf__cel_expect(ps, ')');
  uint32_t n = mk(ps, N_COMPR, name->pos, k, nk);
  ps->p->nodes[n].fn = (uint16_t)kind;
  ps->p->nodes[n].v.u = slot;
  bool pred = kind == M_EXISTS || kind == M_ALL || kind == M_EXISTS_ONE || kind == M_ALL2 ||
              kind == M_EXISTS2 || kind == M_EXISTS_ONE2;
  ps->ty[n] = pred ? TY_BOOL : to_map ? TY_MAPV : TY_LIST;
  /* transformMapEntry's transform is a map (cel.@mapInsert's overloads). */
  if (!ps->failed && kind == M_TRANSFORM_ENTRY2 && !fits(ps->ty[k[nk - 1]], TY_MAP))
    sf__cel_fail(ps, name->pos, "found no matching overload for 'cel.@mapInsert'");
  if (macros[m].minor > ps->p->minor)
    ps->p->minor = macros[m].minor;
  if (!fits(ps->ty[range], TY_LIST | TY_ATTRS | TY_ADOM | TY_CAPS | TY_CDOM | TY_MAPV))
    sf__cel_fail(ps, name->pos, "expression of this type cannot be the range of a comprehension");
  return n;
}

static uint32_t member_call(parser_t *ps, uint32_t target, const tok_t *name)
{
  /* Macros of the environment that build maps or optionals: their variables are not references. */
  static const char *const unsupported[] = {"optMap", "optFlatMap"};
  for (size_t k = 0; k < sizeof unsupported / sizeof unsupported[0]; k++)
    if (sf__cel_tok_is(name, ps->src, unsupported[k])) {
      sf__cel_fail(ps, name->pos, "unsupported macro '%s'", unsupported[k]);
      return 0;
    }
  if (macro_kind(ps, name, 1) >= 0 || macro_kind(ps, name, 2) >= 0)
    return macro(ps, name, target);
  return call_args(ps, name, target);
}

static bool reserved(const tok_t *t, const char *src)
{
  static const char *const words[] = {"as",        "break",  "const",  "continue", "else",  "for",
                                      "function",  "if",     "import", "let",      "loop",  "package",
                                      "namespace", "return", "var",    "void",     "while", "in"};
  for (size_t k = 0; k < sizeof words / sizeof words[0]; k++)
    if (sf__cel_tok_is(t, src, words[k]))
      return true;
  return false;
}

/*
 * The static type of selecting (name != NULL) or indexing node e's operand,
 * as DRA declares the device: an object with fields driver, attributes,
 * capacity (and allowMultipleAllocations), maps of maps below it, attribute
 * values dyn and capacities quantities. A field the device does not have
 * does not compile.
 */
static void access_type(parser_t *ps, uint32_t e, const tok_t *name)
{
  static const char *const fields[] = {"driver", "attributes", "capacity",
                                       "allowMultipleAllocations"};
  static const uint32_t types[] = {TY_STR, TY_ATTRS, TY_CAPS, TY_BOOL};
  const cel_node_t *nd = &ps->p->nodes[e];
  uint32_t of = ps->ty[ps->p->kids[nd->k0]];
  ps->ty[e] = TY_DYN;
  if (nd->flags & F_OPT)
    return;
  if (of == TY_DEVICE && name != NULL) {
    for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++)
      if (sf__cel_tok_is(name, ps->src, fields[k]))
        ps->ty[e] = types[k];
    if (ps->ty[e] == TY_DYN)
      sf__cel_fail(ps, name->pos, "undefined field '%.*s'", (int)name->len, ps->src + name->pos);
  } else if (of == TY_ATTRS || of == TY_CAPS || of == TY_CDOM) {
    ps->ty[e] = of == TY_ATTRS ? TY_ADOM : of == TY_CAPS ? TY_CDOM : TY_QTY;
  }
}

static uint32_t member_tail(parser_t *ps, uint32_t e)
{
  while (!ps->failed) {
    uint32_t pos = ps->cur.pos;
    if (sf__cel_accept(ps, '.')) {
      bool opt = sf__cel_accept(ps, '?');
      tok_t name = ps->cur;
      if (name.t != T_IDENT || reserved(&name, ps->src) || sf__cel_tok_is(&name, ps->src, "true") ||
          sf__cel_tok_is(&name, ps->src, "false") || sf__cel_tok_is(&name, ps->src, "null")) {
        sf__cel_fail(ps, name.pos, "expected a field name");
        break;
      }
      sf__cel_next(ps);
      if (!opt && sf__cel_accept(ps, '(')) {
        e = member_call(ps, e, &name);
        continue;
      }
      e = mk1(ps, N_SELECT, pos, e);
      ps->p->nodes[e].flags = opt ? F_OPT : 0;
      set_name(ps, e, ps->src + name.pos, name.len);
      access_type(ps, e, &name);
    } else if (sf__cel_accept(ps, '[')) {
      bool opt = sf__cel_accept(ps, '?');
      uint32_t i = expr(ps);
      sf__cel_expect(ps, ']');
      e = mk2(ps, N_INDEX, pos, e, i);
      ps->p->nodes[e].flags = opt ? F_OPT : 0;
      access_type(ps, e, NULL);
    } else {
      break;
    }
  }
  return e;
}

static uint32_t literal(parser_t *ps, const tok_t *t, bool neg)
{
  uint32_t n;
  if (t->t == T_STR) {
    n = mk(ps, N_STR, t->pos, NULL, 0);
    ps->p->nodes[n].v.s.off = t->soff;
    ps->p->nodes[n].v.s.len = t->slen;
  } else if (t->t == T_DOUBLE) {
    n = mk(ps, N_DOUBLE, t->pos, NULL, 0);
    ps->p->nodes[n].v.d = neg ? -t->d : t->d;
  } else if (t->t == T_UINT) {
    n = mk(ps, N_UINT, t->pos, NULL, 0);
    ps->p->nodes[n].v.u = t->u;
  } else {
    if (t->u > (uint64_t)INT64_MAX + (neg ? 1u : 0u))
      sf__cel_fail(ps, t->pos, "integer literal out of range");
    n = mk(ps, N_INT, t->pos, NULL, 0);
    ps->p->nodes[n].v.i = neg ? (int64_t)(0 - t->u) : (int64_t)t->u;
  }
  return n;
}

/* cel.bind(...), optional.of(...), optional.none(): after the namespace. */
static uint32_t namespaced(parser_t *ps, const tok_t *ns)
{
  tok_t fn = ps->cur;
  sf__cel_next(ps);
  sf__cel_expect(ps, '(');
  if (sf__cel_tok_is(ns, ps->src, "cel") && sf__cel_tok_is(&fn, ps->src, "bind"))
    return bind(ps, ns->pos);
  if (sf__cel_tok_is(ns, ps->src, "optional") &&
      (sf__cel_tok_is(&fn, ps->src, "of") || sf__cel_tok_is(&fn, ps->src, "none"))) {
    uint32_t *args;
    uint32_t n = exprs(ps, ')', &args, UINT32_MAX), r = 0;
    bool of = sf__cel_tok_is(&fn, ps->src, "of");
    if (n != (of ? 1u : 0u))
      sf__cel_fail(ps, fn.pos, "optional.%s takes %u argument(s)", of ? "of" : "none", of ? 1 : 0);
    if (!ps->failed) {
      r = mk(ps, N_CALL, ns->pos, args, n);
      ps->p->nodes[r].fn = of ? FN_OPT_OF : FN_OPT_NONE;
    }
    free(args);
    return r;
  }
  /* strings.quote, sets.contains, lists.range, ...: the table's "ns.name" entries. */
  char full[64];
  int len = snprintf(full, sizeof full, "%.*s.%.*s", (int)ns->len, ps->src + ns->pos, (int)fn.len,
                     ps->src + fn.pos);
  uint32_t *args;
  uint32_t n = exprs(ps, ')', &args, UINT32_MAX), r = 0;
  if (!ps->failed)
    r = call_named(ps, full, len > 0 && (size_t)len < sizeof full ? (size_t)len : 0, ns->pos, false,
                   args, n);
  free(args);
  return r;
}

static bool peek_namespaced(const parser_t *ps)
{
  /* IDENT '.' IDENT '(' with the dot at the lexer's position. */
  uint32_t i = skip_blanks(ps, ps->at);
  if (!sf__cel_is_punct(ps, '.') || i >= ps->len || !sf__cel_isident(ps->src[i], true))
    return false;
  while (i < ps->len && sf__cel_isident(ps->src[i], false))
    i++;
  i = skip_blanks(ps, i);
  return i < ps->len && ps->src[i] == '(';
}

static uint32_t ident(parser_t *ps, const tok_t *t)
{
  if (sf__cel_tok_is(t, ps->src, "true") || sf__cel_tok_is(t, ps->src, "false")) {
    uint32_t n = mk(ps, N_BOOL, t->pos, NULL, 0);
    ps->p->nodes[n].v.b = sf__cel_tok_is(t, ps->src, "true");
    return n;
  }
  if (sf__cel_tok_is(t, ps->src, "null"))
    return mk(ps, N_NULL, t->pos, NULL, 0);
  if (reserved(t, ps->src)) {
    sf__cel_fail(ps, t->pos, "reserved identifier '%.*s'", (int)t->len, ps->src + t->pos);
    return 0;
  }
  if (sf__cel_accept(ps, '('))
    return sf__cel_tok_is(t, ps->src, "has") ? UINT32_MAX : call_args(ps, t, UINT32_MAX);
  for (uint32_t i = ps->nscope; i-- > 0;) {
    if (ps->scope[i].len == t->len && memcmp(ps->scope[i].name, ps->src + t->pos, t->len) == 0) {
      uint32_t n = mk(ps, N_VAR, t->pos, NULL, 0);
      ps->p->nodes[n].v.u = ps->scope[i].slot;
      return n;
    }
  }
  if (sf__cel_tok_is(t, ps->src, "device"))
    return mk(ps, N_DEVICE, t->pos, NULL, 0);
  if ((sf__cel_tok_is(t, ps->src, "cel") || sf__cel_tok_is(t, ps->src, "optional") ||
       sf__cel_tok_is(t, ps->src, "strings") || sf__cel_tok_is(t, ps->src, "sets") ||
       sf__cel_tok_is(t, ps->src, "lists") || sf__cel_tok_is(t, ps->src, "ip") ||
       sf__cel_tok_is(t, ps->src, "format")) &&
      peek_namespaced(ps)) {
    sf__cel_next(ps);
    return namespaced(ps, t);
  }
  sf__cel_fail(ps, t->pos, "undeclared reference to '%.*s'", (int)t->len, ps->src + t->pos);
  return 0;
}

/* has(e.f): after "has(". */
static uint32_t has(parser_t *ps, uint32_t pos)
{
  uint32_t e = expr(ps);
  sf__cel_expect(ps, ')');
  if (ps->failed)
    return 0;
  cel_node_t *sel = &ps->p->nodes[e];
  if (sel->op != N_SELECT || sel->flags) {
    sf__cel_fail(ps, pos, "has() needs a field selection");
    return 0;
  }
  uint32_t n = mk1(ps, N_HAS, pos, ps->p->kids[sel->k0]);
  ps->p->nodes[n].v = ps->p->nodes[e].v;
  return n;
}

/* Do the known static types of items[first], items[first + 2], ... differ? */
static bool mixed(const parser_t *ps, const uint32_t *items, uint32_t n, uint32_t first)
{
  for (uint32_t i = first + 2; i < n; i += 2)
    if (ps->ty[items[i]] != TY_DYN && ps->ty[items[first]] != TY_DYN &&
        ps->ty[items[i]] != ps->ty[items[first]])
      return true;
  return false;
}

/* {k: v, ...}: after '{'. Keys and values each of one type, as the homogeneous literals require. */
static uint32_t map_literal(parser_t *ps, uint32_t pos)
{
  uint32_t *items = NULL, n = 0, r = 0;
  size_t cap = 0;
  while (!ps->failed && !sf__cel_is_punct(ps, '}')) {
    if (sf__cel_is_punct(ps, '?')) {
      sf__cel_fail(ps, ps->cur.pos, "optional map entries are not supported");
      break;
    }
    sf_xgrow(&items, &cap, (size_t)n + 2, sizeof *items);
    items[n++] = expr(ps);
    sf__cel_expect(ps, ':');
    items[n++] = expr(ps);
    if (!sf__cel_accept(ps, ','))
      break;
  }
  sf__cel_expect(ps, '}');
  if (!ps->failed && (mixed(ps, items, n, 0) || mixed(ps, items, n, 1)))
    sf__cel_fail(ps, pos, "map literal keys or values of different types");
  if (!ps->failed) {
    r = mk(ps, N_MAP, pos, items, n);
    ps->ty[r] = TY_MAPV;
  }
  free(items);
  return r;
}

static uint32_t primary(parser_t *ps)
{
  tok_t t = ps->cur;
  sf__cel_next(ps);
  if (t.t == T_IDENT) {
    uint32_t n = ident(ps, &t);
    return n == UINT32_MAX ? has(ps, t.pos) : n;
  }
  if (t.t == T_INT || t.t == T_UINT || t.t == T_DOUBLE || t.t == T_STR)
    return literal(ps, &t, false);
  if (t.t == T_PUNCT && t.punct == '(') {
    uint32_t e = expr(ps);
    sf__cel_expect(ps, ')');
    return e;
  }
  if (t.t == T_PUNCT && t.punct == '[') {
    uint32_t *items;
    uint32_t n = exprs(ps, ']', &items, UINT32_MAX);
    uint32_t r = ps->failed ? 0 : mk(ps, N_LIST, t.pos, items, n);
    /* The base environment's HomogeneousAggregateLiterals: elements of known, different types do not compile. */
    for (uint32_t i = 1; !ps->failed && i < n; i++)
      if (ps->ty[items[i]] != TY_DYN && ps->ty[items[0]] != TY_DYN &&
          ps->ty[items[i]] != ps->ty[items[0]])
        sf__cel_fail(ps, ps->p->nodes[items[i]].pos, "list literal elements of different types");
    free(items);
    return r;
  }
  if (t.t == T_PUNCT && t.punct == '{')
    return map_literal(ps, t.pos);
  if (t.t == T_PUNCT && t.punct == '.')
    sf__cel_fail(ps, t.pos, "root-scoped identifiers are not supported");
  else
    sf__cel_fail(ps, t.pos, t.t == T_EOF ? "unexpected end of expression" : "unexpected token");
  return 0;
}

static uint32_t unary(parser_t *ps)
{
  uint32_t pos = ps->cur.pos;
  /* "!!!…" and "---…" recurse here without passing through expr(). */
  if (ps->rec > CEL_DEPTH_MAX) {
    sf__cel_fail(ps, pos, "expression nested too deeply");
    return 0;
  }
  if (sf__cel_accept(ps, '!')) {
    ps->rec++;
    uint32_t e = unary(ps);
    ps->rec--;
    return ps->failed ? 0 : mk1(ps, N_NOT, pos, e);
  }
  if (sf__cel_accept(ps, '-')) {
    tok_t t = ps->cur;
    if (t.t == T_INT || t.t == T_DOUBLE) {
      sf__cel_next(ps);
      return member_tail(ps, literal(ps, &t, true));
    }
    ps->rec++;
    uint32_t e = unary(ps);
    ps->rec--;
    return ps->failed ? 0 : mk1(ps, N_NEG, pos, e);
  }
  return member_tail(ps, primary(ps));
}

static int binop(const parser_t *ps, int level)
{
  static const struct {
    int punct, op, level;
  } ops[] = {
      {'*', N_MUL, 3},         {'/', N_DIV, 3},         {'%', N_MOD, 3},         {'+', N_ADD, 2},
      {'-', N_SUB, 2},         {'<', N_LT, 1},          {PP('<', '='), N_LE, 1}, {'>', N_GT, 1},
      {PP('>', '='), N_GE, 1}, {PP('=', '='), N_EQ, 1}, {PP('!', '='), N_NE, 1},
  };
  if (level == 1 && sf__cel_tok_is(&ps->cur, ps->src, "in"))
    return N_IN;
  for (size_t k = 0; ps->cur.t == T_PUNCT && k < sizeof ops / sizeof ops[0]; k++)
    if (ops[k].punct == ps->cur.punct && ops[k].level == level)
      return ops[k].op;
  return -1;
}

/*
 * cel-go's checker: no ordering or arithmetic operator takes a quantity, a
 * version, a bool (for arithmetic), null, a map or an optional, so an operand
 * known to be one does not compile (quantities and versions order through
 * compareTo and their other methods).
 */
static void check_operator(parser_t *ps, int op, uint32_t pos, uint32_t l, uint32_t r)
{
  uint32_t never = TY_QTY | TY_SEMVER | TY_NULL | TY_MAP | TY_OPT | TY_NET;
  if (op >= N_ADD && op <= N_MOD)
    never |= TY_BOOL;
  else if (op < N_LT || op > N_GE)
    return;
  for (int i = 0; i < 2; i++) {
    uint32_t t = ps->ty[i ? r : l];
    if (t != TY_DYN && (t & ~never) == 0) {
      sf__cel_fail(ps, pos, "found no matching overload for this operator on these operand types");
      return;
    }
  }
}

/* Left-associative binary levels: 1 relations, 2 addition, 3 multiplication. */
static uint32_t binary(parser_t *ps, int level)
{
  uint32_t l = level == 3 ? unary(ps) : binary(ps, level + 1);
  int op;
  while (!ps->failed && (op = binop(ps, level)) >= 0) {
    uint32_t pos = ps->cur.pos;
    sf__cel_next(ps);
    uint32_t r = level == 3 ? unary(ps) : binary(ps, level + 1);
    if (!ps->failed)
      check_operator(ps, op, pos, l, r);
    l = mk2(ps, op, pos, l, r);
  }
  return l;
}

/* Builds a balanced tree of && or || over ops[lo, hi), as cel-go does. */
static uint32_t balance(parser_t *ps, int op, const uint32_t *ops, const uint32_t *pos, uint32_t lo,
                        uint32_t hi)
{
  if (hi - lo == 1)
    return ops[lo];
  uint32_t mid = lo + (hi - lo) / 2;
  uint32_t l = balance(ps, op, ops, pos, lo, mid), r = balance(ps, op, ops, pos, mid, hi);
  return mk2(ps, op, pos[mid], l, r);
}

static uint32_t logic(parser_t *ps, int op)
{
  int tokc = op == N_OR ? PP('|', '|') : PP('&', '&');
  uint32_t *ops = NULL, *pos = NULL, n = 0;
  size_t cap = 0, pcap = 0;
  do {
    sf_xgrow(&ops, &cap, (size_t)n + 1, sizeof *ops);
    sf_xgrow(&pos, &pcap, (size_t)n + 1, sizeof *pos);
    pos[n] = ps->cur.pos;
    ops[n++] = op == N_OR ? logic(ps, N_AND) : binary(ps, 1);
  } while (!ps->failed && sf__cel_accept(ps, tokc));
  uint32_t r = ps->failed ? 0 : balance(ps, op, ops, pos, 0, n);
  free(ops);
  free(pos);
  return r;
}

static uint32_t expr(parser_t *ps)
{
  if (++ps->rec > CEL_DEPTH_MAX) {
    sf__cel_fail(ps, ps->cur.pos, "expression nested too deeply");
    return 0;
  }
  uint32_t c = logic(ps, N_OR);
  uint32_t pos = ps->cur.pos;
  if (!ps->failed && sf__cel_accept(ps, '?')) {
    uint32_t a = logic(ps, N_OR);
    sf__cel_expect(ps, ':');
    uint32_t b = expr(ps);
    uint32_t k[3] = {c, a, b};
    c = ps->failed ? 0 : mk(ps, N_COND, pos, k, 3);
  }
  ps->rec--;
  return c;
}

void sf__cel_parse(sf_cel_prog_t *p)
{
  parser_t ps;
  memset(&ps, 0, sizeof ps);
  ps.p = p;
  ps.src = p->text;
  size_t len = strlen(p->text);
  if (len > CEL_TEXT_MAX) {
    p->err = sf_xstrdup("expression longer than 10Ki");
    return;
  }
  ps.len = (uint32_t)len;
  sf__cel_next(&ps);
  p->root = expr(&ps);
  if (!ps.failed && ps.cur.t != T_EOF)
    sf__cel_fail(&ps, ps.cur.pos, "unexpected text after the expression");
  /* DRA compiles a selector only if it is a bool or dyn. */
  if (!ps.failed && !fits(ps.ty[p->root], TY_BOOL))
    sf__cel_fail(&ps, 0, "must evaluate to bool or the unknown type");
  if (ps.failed)
    p->err = sf_xstrdup(ps.err);
  free(ps.depth);
  free(ps.ty);
}
