/*
 * The CEL lexer: tokens from the text, string literals decoded (every CEL
 * escape, code points written as UTF-8) into the program's string pool,
 * numbers range-checked, and the parser's errors with their line and
 * column. The parser (cel_parse.c) reads one token ahead, ps->cur, and
 * advances with sf__cel_next.
 *
 * The text is untrusted: every read is bounded by its length, and a
 * literal that does not fit is an error, not a truncation.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cel_lex.h"

/* ---- errors ---- */

void sf__cel_fail(parser_t *ps, uint32_t pos, const char *fmt, ...)
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

void sf__cel_pool_put(parser_t *ps, char c)
{
  sf_cel_prog_t *p = ps->p;
  sf_xgrow(&p->pool, &ps->poolcap, (size_t)p->npool + 1, 1);
  p->pool[p->npool++] = c;
}

static void pool_utf8(parser_t *ps, uint32_t cp)
{
  if (cp < 0x80) {
    sf__cel_pool_put(ps, (char)cp);
  } else if (cp < 0x800) {
    sf__cel_pool_put(ps, (char)(0xC0 | (cp >> 6)));
    sf__cel_pool_put(ps, (char)(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    sf__cel_pool_put(ps, (char)(0xE0 | (cp >> 12)));
    sf__cel_pool_put(ps, (char)(0x80 | ((cp >> 6) & 0x3F)));
    sf__cel_pool_put(ps, (char)(0x80 | (cp & 0x3F)));
  } else {
    sf__cel_pool_put(ps, (char)(0xF0 | (cp >> 18)));
    sf__cel_pool_put(ps, (char)(0x80 | ((cp >> 12) & 0x3F)));
    sf__cel_pool_put(ps, (char)(0x80 | ((cp >> 6) & 0x3F)));
    sf__cel_pool_put(ps, (char)(0x80 | (cp & 0x3F)));
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

bool sf__cel_isident(char c, bool first)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         (!first && c >= '0' && c <= '9');
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
    sf__cel_pool_put(ps, to[k - from]);
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
    sf__cel_fail(ps, pos, "invalid escape sequence");
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
      sf__cel_fail(ps, t->pos, "unterminated string");
      return;
    }
    char c = ps->src[ps->at];
    if (c == q &&
        (!triple || (ps->at + 2 < ps->len && ps->src[ps->at + 1] == q && ps->src[ps->at + 2] == q))) {
      ps->at += triple ? 3 : 1;
      break;
    }
    if ((c == '\n' || c == '\r') && !triple) {
      sf__cel_fail(ps, t->pos, "newline in string");
      return;
    }
    ps->at++;
    if (c == '\\' && !raw)
      escape(ps);
    else
      sf__cel_pool_put(ps, c);
  }
  t->slen = ps->p->npool - t->soff;
  sf__cel_pool_put(ps, '\0');
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
    sf__cel_fail(ps, t->pos, "floating-point literal too long");
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
      sf__cel_fail(ps, t->pos, "malformed hexadecimal literal");
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
    sf__cel_fail(ps, t->pos, "integer literal out of range");
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
    sf__cel_fail(ps, ps->at, "unexpected character '%c'", s[0] >= 32 && s[0] < 127 ? s[0] : '?');
    t->t = T_EOF;
    return;
  }
  t->punct = s[0];
  ps->at++;
}

void sf__cel_next(parser_t *ps)
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
    sf__cel_fail(ps, t->pos, "bytes literals are not supported");
  } else if ((s[0] >= '0' && s[0] <= '9') ||
             (s[0] == '.' && left > 1 && s[1] >= '0' && s[1] <= '9')) {
    lex_number(ps, t);
  } else if (sf__cel_isident(s[0], true)) {
    while (ps->at < ps->len && sf__cel_isident(ps->src[ps->at], false))
      ps->at++;
    t->t = T_IDENT;
  } else {
    lex_punct(ps, t);
  }
  t->len = ps->at - t->pos;
}

bool sf__cel_is_punct(const parser_t *ps, int c)
{
  return ps->cur.t == T_PUNCT && ps->cur.punct == c;
}

bool sf__cel_accept(parser_t *ps, int c)
{
  if (!sf__cel_is_punct(ps, c))
    return false;
  sf__cel_next(ps);
  return true;
}

void sf__cel_expect(parser_t *ps, int c)
{
  if (!sf__cel_accept(ps, c))
    sf__cel_fail(ps, ps->cur.pos, "expected '%c'", c);
}

bool sf__cel_tok_is(const tok_t *t, const char *src, const char *word)
{
  return t->t == T_IDENT && strlen(word) == t->len && memcmp(src + t->pos, word, t->len) == 0;
}
