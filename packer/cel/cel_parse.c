/*
 * CEL lexer and recursive-descent parser: text in, a checked AST out (the
 * grammar is in cel.c). Identifiers are resolved here (device, cel.bind and
 * macro variables become slots), functions are looked up in a table by name
 * and arity, constant regular expressions are compiled once. Anything the
 * evaluator does not implement fails here, so a program that compiles can
 * only meet UNKNOWN at run time through a value (an RE2 feature, a quantity
 * past int64 milli-units, the cost limit).
 *
 * The text is untrusted (a DeviceClass or claim written by a user): lengths,
 * nesting depth and the number of variables are capped.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cel_int.h"
#include "slicefit/quantity.h"

enum { T_EOF, T_INT, T_UINT, T_DOUBLE, T_STR, T_IDENT, T_PUNCT };

#define PP(a, b) ((a) * 256 + (b))

typedef struct {
  int t;
  uint32_t pos, len;       /* the token's bytes in the text */
  uint64_t u;              /* T_INT (magnitude), T_UINT */
  double d;
  uint32_t soff, slen;     /* T_STR: decoded into the pool */
  int punct;               /* a char, or PP(c1, c2) */
} tok_t;

typedef struct {
  const char *name;
  uint32_t len, slot;
} scope_t;

typedef struct {
  sf_cel_prog_t *p;
  const char *src;
  uint32_t len, at;        /* lexer position */
  tok_t cur;
  bool failed;
  char err[160];
  uint32_t rec;            /* parser recursion */
  uint16_t *depth; size_t depthcap;
  size_t nodecap, kidcap, poolcap;
  scope_t scope[CEL_SLOTS_MAX]; uint32_t nscope;
} parser_t;

/* ---- errors ---- */

static void fail(parser_t *ps, uint32_t pos, const char *fmt, ...)
{
  if (ps->failed)
    return;
  uint32_t line, col;
  sf__cel_linecol(ps->src, pos, &line, &col);
  int n = snprintf(ps->err, sizeof ps->err, "%u:%u: ", line, col);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ps->err + n, sizeof ps->err - (size_t)n, fmt, ap);
  va_end(ap);
  ps->failed = true;
}

/* ---- the string pool ---- */

static void pool_put(parser_t *ps, char c)
{
  sf_cel_prog_t *p = ps->p;
  sf_xgrow(&p->pool, &ps->poolcap, (size_t)p->npool + 1, 1);
  p->pool[p->npool++] = c;
}

static void pool_utf8(parser_t *ps, uint32_t cp)
{
  if (cp < 0x80) {
    pool_put(ps, (char)cp);
  } else if (cp < 0x800) {
    pool_put(ps, (char)(0xC0 | (cp >> 6)));
    pool_put(ps, (char)(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    pool_put(ps, (char)(0xE0 | (cp >> 12)));
    pool_put(ps, (char)(0x80 | ((cp >> 6) & 0x3F)));
    pool_put(ps, (char)(0x80 | (cp & 0x3F)));
  } else {
    pool_put(ps, (char)(0xF0 | (cp >> 18)));
    pool_put(ps, (char)(0x80 | ((cp >> 12) & 0x3F)));
    pool_put(ps, (char)(0x80 | ((cp >> 6) & 0x3F)));
    pool_put(ps, (char)(0x80 | (cp & 0x3F)));
  }
}

/* ---- lexer ---- */

static int hexval(char c)
{
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

static bool isident(char c, bool first)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (!first && c >= '0' && c <= '9');
}

/* Reads `digits` hex digits at ps->at into *cp. */
static bool hexn(parser_t *ps, int digits, uint32_t *cp)
{
  *cp = 0;
  for (int i = 0; i < digits; i++) {
    int h = ps->at < ps->len ? hexval(ps->src[ps->at]) : -1;
    if (h < 0)
      return false;
    *cp = *cp * 16 + (uint32_t)h;
    ps->at++;
  }
  return true;
}

/* Decodes one escape after the backslash into the pool. */
static void escape(parser_t *ps)
{
  uint32_t pos = ps->at - 1, cp = 0;
  char c = ps->at < ps->len ? ps->src[ps->at++] : '\0';
  static const char from[] = "\\\"'`?abfnrtv", to[] = "\\\"'`?\a\b\f\n\r\t\v";
  const char *k = c ? strchr(from, c) : NULL;
  if (k != NULL) {
    pool_put(ps, to[k - from]);
    return;
  }
  bool ok;
  if (c == 'x' || c == 'X') {
    ok = hexn(ps, 2, &cp);
  } else if (c == 'u') {
    ok = hexn(ps, 4, &cp);
  } else if (c == 'U') {
    ok = hexn(ps, 8, &cp);
  } else if (c >= '0' && c <= '3') {
    cp = (uint32_t)(c - '0');
    ok = true;
    for (int i = 0; i < 2 && ok; i++) {
      char d = ps->at < ps->len ? ps->src[ps->at++] : '\0';
      ok = d >= '0' && d <= '7';
      cp = cp * 8 + (uint32_t)(d - '0');
    }
  } else {
    ok = false;
  }
  if (!ok || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    fail(ps, pos, "invalid escape sequence");
  else
    pool_utf8(ps, cp);
}

/* A string literal starting at the quote at ps->at; raw when r. */
static void lex_string(parser_t *ps, tok_t *t, bool raw)
{
  char q = ps->src[ps->at];
  bool triple = ps->at + 2 < ps->len && ps->src[ps->at + 1] == q && ps->src[ps->at + 2] == q;
  ps->at += triple ? 3 : 1;
  t->t = T_STR;
  t->soff = ps->p->npool;
  for (;;) {
    if (ps->at >= ps->len) {
      fail(ps, t->pos, "unterminated string");
      return;
    }
    char c = ps->src[ps->at];
    if (c == q && (!triple || (ps->at + 2 < ps->len && ps->src[ps->at + 1] == q && ps->src[ps->at + 2] == q))) {
      ps->at += triple ? 3 : 1;
      break;
    }
    if ((c == '\n' || c == '\r') && !triple) {
      fail(ps, t->pos, "newline in string");
      return;
    }
    ps->at++;
    if (c == '\\' && !raw)
      escape(ps);
    else
      pool_put(ps, c);
  }
  t->slen = ps->p->npool - t->soff;
  pool_put(ps, '\0');
}

/* After the integer digits at *i: a fraction and/or an exponent; true when there is one. */
static bool float_tail(const parser_t *ps, uint32_t *i)
{
  const char *s = ps->src;
  bool flt = false;
  if (*i + 1 < ps->len && s[*i] == '.' && s[*i + 1] >= '0' && s[*i + 1] <= '9') {
    flt = true;
    for ((*i)++; *i < ps->len && s[*i] >= '0' && s[*i] <= '9'; (*i)++)
      ;
  }
  if (*i < ps->len && (s[*i] == 'e' || s[*i] == 'E')) {
    uint32_t j = *i + 1;
    if (j < ps->len && (s[j] == '+' || s[j] == '-'))
      j++;
    if (j < ps->len && s[j] >= '0' && s[j] <= '9') {
      flt = true;
      for (*i = j; *i < ps->len && s[*i] >= '0' && s[*i] <= '9'; (*i)++)
        ;
    }
  }
  return flt;
}

static void lex_double(parser_t *ps, tok_t *t, uint32_t end)
{
  char buf[400];
  uint32_t n = end - ps->at;
  if (n >= sizeof buf) {
    fail(ps, t->pos, "floating-point literal too long");
    n = 0;
  }
  memcpy(buf, ps->src + ps->at, n);
  buf[n] = '\0';
  t->t = T_DOUBLE;
  t->d = strtod(buf, NULL);
}

static void lex_number(parser_t *ps, tok_t *t)
{
  const char *s = ps->src;
  uint32_t i = ps->at;
  bool hex = s[i] == '0' && i + 1 < ps->len && (s[i + 1] == 'x' || s[i + 1] == 'X');
  bool over = false;
  uint64_t u = 0;
  if (hex) {
    for (i += 2; i < ps->len && hexval(s[i]) >= 0; i++) {
      over |= u > UINT64_MAX / 16;
      u = u * 16 + (uint64_t)hexval(s[i]);
    }
    if (i == ps->at + 2)
      fail(ps, t->pos, "malformed hexadecimal literal");
  } else {
    for (; i < ps->len && s[i] >= '0' && s[i] <= '9'; i++) {
      over |= u > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10;
      u = u * 10 + (uint64_t)(s[i] - '0');
    }
  }
  if (!hex && float_tail(ps, &i)) {
    lex_double(ps, t, i);
    ps->at = i;
    return;
  }
  t->t = T_INT;
  if (i < ps->len && (s[i] == 'u' || s[i] == 'U')) {
    i++;
    t->t = T_UINT;
  }
  if (over)
    fail(ps, t->pos, "integer literal out of range");
  t->u = u;
  ps->at = i;
}

static void skip_space(parser_t *ps)
{
  while (ps->at < ps->len) {
    char c = ps->src[ps->at];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f') {
      ps->at++;
    } else if (c == '/' && ps->at + 1 < ps->len && ps->src[ps->at + 1] == '/') {
      while (ps->at < ps->len && ps->src[ps->at] != '\n')
        ps->at++;
    } else {
      break;
    }
  }
}

static void lex_punct(parser_t *ps, tok_t *t)
{
  static const char *two[] = {"&&", "||", "==", "!=", "<=", ">="};
  const char *s = ps->src + ps->at;
  t->t = T_PUNCT;
  for (size_t k = 0; k < sizeof two / sizeof two[0]; k++) {
    if (ps->at + 1 < ps->len && s[0] == two[k][0] && s[1] == two[k][1]) {
      t->punct = PP(s[0], s[1]);
      ps->at += 2;
      return;
    }
  }
  if (strchr("()[]{}.,?:!-+*/%<>", s[0]) == NULL || s[0] == '\0') {
    fail(ps, ps->at, "unexpected character '%c'", s[0] >= 32 && s[0] < 127 ? s[0] : '?');
    t->t = T_EOF;
    return;
  }
  t->punct = s[0];
  ps->at++;
}

static void next(parser_t *ps)
{
  tok_t *t = &ps->cur;
  skip_space(ps);
  memset(t, 0, sizeof *t);
  t->pos = ps->at;
  const char *s = ps->src + ps->at;
  size_t left = ps->len - ps->at;
  if (ps->failed || left == 0) {
    t->t = T_EOF;
  } else if (s[0] == '"' || s[0] == '\'') {
    lex_string(ps, t, false);
  } else if ((s[0] == 'r' || s[0] == 'R') && left > 1 && (s[1] == '"' || s[1] == '\'')) {
    ps->at++;
    lex_string(ps, t, true);
  } else if ((s[0] == 'b' || s[0] == 'B') && left > 1 && strchr("\"'rR", s[1]) != NULL && s[1]) {
    fail(ps, t->pos, "bytes literals are not supported");
  } else if ((s[0] >= '0' && s[0] <= '9') || (s[0] == '.' && left > 1 && s[1] >= '0' && s[1] <= '9')) {
    lex_number(ps, t);
  } else if (isident(s[0], true)) {
    while (ps->at < ps->len && isident(ps->src[ps->at], false))
      ps->at++;
    t->t = T_IDENT;
  } else {
    lex_punct(ps, t);
  }
  t->len = ps->at - t->pos;
}

static bool is_punct(const parser_t *ps, int c)
{
  return ps->cur.t == T_PUNCT && ps->cur.punct == c;
}

static bool accept(parser_t *ps, int c)
{
  if (!is_punct(ps, c))
    return false;
  next(ps);
  return true;
}

static void expect(parser_t *ps, int c)
{
  if (!accept(ps, c))
    fail(ps, ps->cur.pos, "expected '%c'", c);
}

static bool tok_is(const tok_t *t, const char *src, const char *word)
{
  return t->t == T_IDENT && strlen(word) == t->len && memcmp(src + t->pos, word, t->len) == 0;
}

/* ---- nodes ---- */

static uint32_t mk(parser_t *ps, int op, uint32_t pos, const uint32_t *kids, uint32_t nk)
{
  sf_cel_prog_t *p = ps->p;
  sf_xgrow(&p->nodes, &ps->nodecap, (size_t)p->nnodes + 1, sizeof *p->nodes);
  sf_xgrow(&ps->depth, &ps->depthcap, (size_t)p->nnodes + 1, sizeof *ps->depth);
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
  if (d + 1 > CEL_DEPTH_MAX)
    fail(ps, pos, "expression nested too deeply");
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
    pool_put(ps, s[i]);
  pool_put(ps, '\0');
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
  while (!ps->failed && !is_punct(ps, close)) {
    uint32_t e = expr(ps);
    sf_xgrow(out, &cap, (size_t)n + 1, sizeof **out);
    (*out)[n++] = e;
    if (!accept(ps, ','))
      break;
  }
  expect(ps, close);
  return n;
}

static const struct {
  const char *name;
  uint16_t fn;
  uint8_t kind;            /* 1: global, 2: method, 3: both */
  uint8_t min, max;        /* arguments including the target */
} fns[] = {
  {"size", FN_SIZE, 3, 1, 1}, {"startsWith", FN_STARTS, 2, 2, 2}, {"endsWith", FN_ENDS, 2, 2, 2},
  {"contains", FN_CONTAINS, 2, 2, 2}, {"matches", FN_MATCHES, 3, 2, 2},
  {"lowerAscii", FN_LOWER, 2, 1, 1}, {"upperAscii", FN_UPPER, 2, 1, 1},
  {"quantity", FN_QUANTITY, 1, 1, 1}, {"isQuantity", FN_ISQUANTITY, 1, 1, 1},
  {"compareTo", FN_COMPARE, 2, 2, 2}, {"isGreaterThan", FN_GT, 2, 2, 2},
  {"isLessThan", FN_LT, 2, 2, 2}, {"add", FN_ADD, 2, 2, 2}, {"sub", FN_SUB, 2, 2, 2},
  {"asInteger", FN_ASINT, 2, 1, 1}, {"asApproximateFloat", FN_ASFLOAT, 2, 1, 1},
  {"isInteger", FN_ISINT, 2, 1, 1}, {"sign", FN_SIGN, 2, 1, 1},
  {"semver", FN_SEMVER, 1, 1, 2}, {"isSemver", FN_ISSEMVER, 1, 1, 2},
  {"major", FN_MAJOR, 2, 1, 1}, {"minor", FN_MINOR, 2, 1, 1}, {"patch", FN_PATCH, 2, 1, 1},
  {"orValue", FN_ORVALUE, 2, 2, 2}, {"hasValue", FN_HASVALUE, 2, 1, 1}, {"value", FN_VALUE, 2, 1, 1},
  {"int", FN_INT, 1, 1, 1}, {"uint", FN_UINT, 1, 1, 1}, {"double", FN_DOUBLE, 1, 1, 1},
  {"string", FN_STRING, 1, 1, 1}, {"dyn", FN_DYN, 1, 1, 1},
};

/* A regular expression compiled once when the pattern is a literal. */
static void const_regex(parser_t *ps, cel_node_t *call)
{
  sf_cel_prog_t *p = ps->p;
  const cel_node_t *pat = &p->nodes[p->kids[call->k0 + 1]];
  call->v.i = -1;
  if (pat->op != N_STR)
    return;
  p->res = sf_xrealloc(p->res, (p->nres + 1) * sizeof *p->res);
  sf__cel_re_compile(&p->res[p->nres], p->pool + pat->v.s.off, pat->v.s.len);
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
  const cel_node_t *arg = &p->nodes[p->kids[call->k0]];
  sf_milli_t q;
  if (call->nk != 1 || arg->op != N_STR)
    return;
  if (call->fn == FN_QUANTITY && sf_quantity_parse_n(p->pool + arg->v.s.off, arg->v.s.len, &q) == 0) {
    call->op = N_QTY;
    call->v.i = q;
  } else if (call->fn == FN_SEMVER && sf__cel_semver(p->pool + arg->v.s.off, arg->v.s.len, NULL) == 0) {
    call->op = N_SEMVER;
    call->v.s = arg->v.s;
  }
}

static uint32_t call(parser_t *ps, const tok_t *name, bool method, uint32_t *args, uint32_t nargs)
{
  for (size_t k = 0; k < sizeof fns / sizeof fns[0]; k++) {
    if (!tok_is(name, ps->src, fns[k].name))
      continue;
    if (!(fns[k].kind & (method ? 2 : 1)) || nargs < fns[k].min || nargs > fns[k].max) {
      fail(ps, name->pos, "no overload of '%s' takes %u argument(s)%s", fns[k].name,
           method ? nargs - 1 : nargs, method ? " as a method" : "");
      return 0;
    }
    uint32_t n = mk(ps, N_CALL, name->pos, args, nargs);
    cel_node_t *nd = &ps->p->nodes[n];
    nd->fn = fns[k].fn;
    nd->flags = method ? F_TARGET : 0;
    if (nd->fn == FN_MATCHES)
      const_regex(ps, nd);
    fold(ps, nd);
    return n;
  }
  fail(ps, name->pos, "unsupported function '%.*s'", (int)name->len, ps->src + name->pos);
  return 0;
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
    fail(ps, v->pos, "expected a variable name");
    return;
  }
  if (ps->nscope >= CEL_SLOTS_MAX || ps->p->nslots >= CEL_SLOTS_MAX) {
    fail(ps, v->pos, "too many variables");
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
  next(ps);
  expect(ps, ',');
  uint32_t init = expr(ps);
  expect(ps, ',');
  push_var(ps, &v, &slot);
  if (ps->failed)
    return 0;
  uint32_t body = expr(ps);
  ps->nscope--;
  expect(ps, ')');
  uint32_t n = mk2(ps, N_BIND, pos, init, body);
  ps->p->nodes[n].v.u = slot;
  return n;
}

static const char *const macros[] = {"exists", "all", "exists_one", "map", "filter"};

/* range.macro(var, a [, b]): after '('. */
static uint32_t macro(parser_t *ps, int kind, uint32_t range, uint32_t pos)
{
  uint32_t slot, k[3] = {range, 0, 0}, nk = 2;
  tok_t v = ps->cur;
  next(ps);
  expect(ps, ',');
  push_var(ps, &v, &slot);
  if (ps->failed)
    return 0;
  k[1] = expr(ps);
  if (kind == M_MAP && accept(ps, ','))
    k[nk++] = expr(ps);
  ps->nscope--;
  expect(ps, ')');
  uint32_t n = mk(ps, N_COMPR, pos, k, nk);
  ps->p->nodes[n].fn = (uint16_t)kind;
  ps->p->nodes[n].v.u = slot;
  return n;
}

static uint32_t member_call(parser_t *ps, uint32_t target, const tok_t *name)
{
  for (int k = 0; k < (int)(sizeof macros / sizeof macros[0]); k++)
    if (tok_is(name, ps->src, macros[k]))
      return macro(ps, k, target, name->pos);
  return call_args(ps, name, target);
}

static bool reserved(const tok_t *t, const char *src)
{
  static const char *const words[] = {"as", "break", "const", "continue", "else", "for", "function", "if",
                                      "import", "let", "loop", "package", "namespace", "return", "var",
                                      "void", "while", "in"};
  for (size_t k = 0; k < sizeof words / sizeof words[0]; k++)
    if (tok_is(t, src, words[k]))
      return true;
  return false;
}

static uint32_t member_tail(parser_t *ps, uint32_t e)
{
  while (!ps->failed) {
    uint32_t pos = ps->cur.pos;
    if (accept(ps, '.')) {
      bool opt = accept(ps, '?');
      tok_t name = ps->cur;
      if (name.t != T_IDENT || reserved(&name, ps->src) || tok_is(&name, ps->src, "true") ||
          tok_is(&name, ps->src, "false") || tok_is(&name, ps->src, "null")) {
        fail(ps, name.pos, "expected a field name");
        break;
      }
      next(ps);
      if (!opt && accept(ps, '(')) {
        e = member_call(ps, e, &name);
        continue;
      }
      e = mk1(ps, N_SELECT, pos, e);
      ps->p->nodes[e].flags = opt ? F_OPT : 0;
      set_name(ps, e, ps->src + name.pos, name.len);
    } else if (accept(ps, '[')) {
      bool opt = accept(ps, '?');
      uint32_t i = expr(ps);
      expect(ps, ']');
      e = mk2(ps, N_INDEX, pos, e, i);
      ps->p->nodes[e].flags = opt ? F_OPT : 0;
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
      fail(ps, t->pos, "integer literal out of range");
    n = mk(ps, N_INT, t->pos, NULL, 0);
    ps->p->nodes[n].v.i = neg ? (int64_t)(0 - t->u) : (int64_t)t->u;
  }
  return n;
}

/* cel.bind(...), optional.of(...), optional.none(): after the namespace. */
static uint32_t namespaced(parser_t *ps, const tok_t *ns)
{
  tok_t fn = ps->cur;
  next(ps);
  expect(ps, '(');
  if (tok_is(ns, ps->src, "cel") && tok_is(&fn, ps->src, "bind"))
    return bind(ps, ns->pos);
  if (tok_is(ns, ps->src, "optional") && (tok_is(&fn, ps->src, "of") || tok_is(&fn, ps->src, "none"))) {
    uint32_t *args;
    uint32_t n = exprs(ps, ')', &args, UINT32_MAX), r = 0;
    bool of = tok_is(&fn, ps->src, "of");
    if (n != (of ? 1u : 0u))
      fail(ps, fn.pos, "optional.%s takes %u argument(s)", of ? "of" : "none", of ? 1 : 0);
    if (!ps->failed) {
      r = mk(ps, N_CALL, ns->pos, args, n);
      ps->p->nodes[r].fn = of ? FN_OPT_OF : FN_OPT_NONE;
    }
    free(args);
    return r;
  }
  fail(ps, ns->pos, "unsupported function '%.*s.%.*s'", (int)ns->len, ps->src + ns->pos, (int)fn.len,
       ps->src + fn.pos);
  return 0;
}

static bool peek_namespaced(const parser_t *ps)
{
  /* IDENT '.' IDENT '(' with the dot at the lexer's position. */
  uint32_t i = ps->at;
  while (i < ps->len && (ps->src[i] == ' ' || ps->src[i] == '\n' || ps->src[i] == '\t' || ps->src[i] == '\r'))
    i++;
  if (!is_punct(ps, '.') || i >= ps->len || !isident(ps->src[i], true))
    return false;
  while (i < ps->len && isident(ps->src[i], false))
    i++;
  while (i < ps->len && (ps->src[i] == ' ' || ps->src[i] == '\n' || ps->src[i] == '\t' || ps->src[i] == '\r'))
    i++;
  return i < ps->len && ps->src[i] == '(';
}

static uint32_t ident(parser_t *ps, const tok_t *t)
{
  if (tok_is(t, ps->src, "true") || tok_is(t, ps->src, "false")) {
    uint32_t n = mk(ps, N_BOOL, t->pos, NULL, 0);
    ps->p->nodes[n].v.b = tok_is(t, ps->src, "true");
    return n;
  }
  if (tok_is(t, ps->src, "null"))
    return mk(ps, N_NULL, t->pos, NULL, 0);
  if (reserved(t, ps->src)) {
    fail(ps, t->pos, "reserved identifier '%.*s'", (int)t->len, ps->src + t->pos);
    return 0;
  }
  if (accept(ps, '('))
    return tok_is(t, ps->src, "has") ? UINT32_MAX : call_args(ps, t, UINT32_MAX);
  for (uint32_t i = ps->nscope; i-- > 0;) {
    if (ps->scope[i].len == t->len && memcmp(ps->scope[i].name, ps->src + t->pos, t->len) == 0) {
      uint32_t n = mk(ps, N_VAR, t->pos, NULL, 0);
      ps->p->nodes[n].v.u = ps->scope[i].slot;
      return n;
    }
  }
  if (tok_is(t, ps->src, "device"))
    return mk(ps, N_DEVICE, t->pos, NULL, 0);
  if ((tok_is(t, ps->src, "cel") || tok_is(t, ps->src, "optional")) && peek_namespaced(ps)) {
    next(ps);
    return namespaced(ps, t);
  }
  fail(ps, t->pos, "undeclared reference to '%.*s'", (int)t->len, ps->src + t->pos);
  return 0;
}

/* has(e.f): after "has(". */
static uint32_t has(parser_t *ps, uint32_t pos)
{
  uint32_t e = expr(ps);
  expect(ps, ')');
  if (ps->failed)
    return 0;
  cel_node_t *sel = &ps->p->nodes[e];
  if (sel->op != N_SELECT || sel->flags) {
    fail(ps, pos, "has() needs a field selection");
    return 0;
  }
  uint32_t n = mk1(ps, N_HAS, pos, ps->p->kids[sel->k0]);
  ps->p->nodes[n].v = ps->p->nodes[e].v;
  return n;
}

static uint32_t primary(parser_t *ps)
{
  tok_t t = ps->cur;
  next(ps);
  if (t.t == T_IDENT) {
    uint32_t n = ident(ps, &t);
    return n == UINT32_MAX ? has(ps, t.pos) : n;
  }
  if (t.t == T_INT || t.t == T_UINT || t.t == T_DOUBLE || t.t == T_STR)
    return literal(ps, &t, false);
  if (t.t == T_PUNCT && t.punct == '(') {
    uint32_t e = expr(ps);
    expect(ps, ')');
    return e;
  }
  if (t.t == T_PUNCT && t.punct == '[') {
    uint32_t *items;
    uint32_t n = exprs(ps, ']', &items, UINT32_MAX);
    uint32_t r = ps->failed ? 0 : mk(ps, N_LIST, t.pos, items, n);
    free(items);
    return r;
  }
  if (t.t == T_PUNCT && t.punct == '{')
    fail(ps, t.pos, "map and message literals are not supported");
  else if (t.t == T_PUNCT && t.punct == '.')
    fail(ps, t.pos, "root-scoped identifiers are not supported");
  else
    fail(ps, t.pos, t.t == T_EOF ? "unexpected end of expression" : "unexpected token");
  return 0;
}

static uint32_t unary(parser_t *ps)
{
  uint32_t pos = ps->cur.pos;
  /* "!!!…" and "---…" recurse here without passing through expr(). */
  if (ps->rec > CEL_DEPTH_MAX) {
    fail(ps, pos, "expression nested too deeply");
    return 0;
  }
  if (accept(ps, '!')) {
    ps->rec++;
    uint32_t e = unary(ps);
    ps->rec--;
    return ps->failed ? 0 : mk1(ps, N_NOT, pos, e);
  }
  if (accept(ps, '-')) {
    tok_t t = ps->cur;
    if (t.t == T_INT || t.t == T_DOUBLE) {
      next(ps);
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
  static const struct { int punct, op, level; } ops[] = {
    {'*', N_MUL, 3}, {'/', N_DIV, 3}, {'%', N_MOD, 3}, {'+', N_ADD, 2}, {'-', N_SUB, 2},
    {'<', N_LT, 1}, {PP('<', '='), N_LE, 1}, {'>', N_GT, 1}, {PP('>', '='), N_GE, 1},
    {PP('=', '='), N_EQ, 1}, {PP('!', '='), N_NE, 1},
  };
  if (level == 1 && tok_is(&ps->cur, ps->src, "in"))
    return N_IN;
  for (size_t k = 0; ps->cur.t == T_PUNCT && k < sizeof ops / sizeof ops[0]; k++)
    if (ops[k].punct == ps->cur.punct && ops[k].level == level)
      return ops[k].op;
  return -1;
}

/* Left-associative binary levels: 1 relations, 2 addition, 3 multiplication. */
static uint32_t binary(parser_t *ps, int level)
{
  uint32_t l = level == 3 ? unary(ps) : binary(ps, level + 1);
  int op;
  while (!ps->failed && (op = binop(ps, level)) >= 0) {
    uint32_t pos = ps->cur.pos;
    next(ps);
    uint32_t r = level == 3 ? unary(ps) : binary(ps, level + 1);
    l = mk2(ps, op, pos, l, r);
  }
  return l;
}

/* Builds a balanced tree of && or || over ops[lo, hi), as cel-go does. */
static uint32_t balance(parser_t *ps, int op, const uint32_t *ops, const uint32_t *pos, uint32_t lo, uint32_t hi)
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
  } while (!ps->failed && accept(ps, tokc));
  uint32_t r = ps->failed ? 0 : balance(ps, op, ops, pos, 0, n);
  free(ops);
  free(pos);
  return r;
}

static uint32_t expr(parser_t *ps)
{
  if (++ps->rec > CEL_DEPTH_MAX) {
    fail(ps, ps->cur.pos, "expression nested too deeply");
    return 0;
  }
  uint32_t c = logic(ps, N_OR);
  uint32_t pos = ps->cur.pos;
  if (!ps->failed && accept(ps, '?')) {
    uint32_t a = logic(ps, N_OR);
    expect(ps, ':');
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
  next(&ps);
  p->root = expr(&ps);
  if (!ps.failed && ps.cur.t != T_EOF)
    fail(&ps, ps.cur.pos, "unexpected text after the expression");
  if (ps.failed)
    p->err = sf_xstrdup(ps.err);
  free(ps.depth);
}
