/*
 * RE2 patterns (CEL's matches(), find() and findAll()) translated into
 * POSIX extended regular expressions for <regex.h>. For matches() only
 * whether a pattern matches somewhere in the text matters (REG_NOSUB), so
 * greediness (`*?`) and group kinds (`(?:`, `(?P<name>`) can be dropped;
 * find() answers only for patterns where the extent cannot differ either
 * (cel_ext.c). The translation accepts the subset
 * where both engines agree on ASCII text:
 *
 *   literals, escaped punctuation, \n \t \r \f \v \a, \xHH (ASCII)
 *   .  (as [^\n], as RE2 does without the s flag)
 *   [...] [^...] with ranges, escapes, \d \w \s and [:name:] inside
 *   \d \D \w \W \s \S, \A \z, ^ $ (no m flag: text boundaries in both)
 *   * + ? {n} {n,} {n,m} (n, m <= 1000), a trailing ? (lazy) dropped
 *   ( ) (?: ) (?P<n> ) (?<n> ) |, and a leading (?i)
 *
 * Everything else (other flags, \b, \p{..}, \Q..\E, non-ASCII bytes in the
 * pattern, empty groups or branches, anything RE2 itself would reject)
 * leaves r->ok false and matches() answers UNKNOWN. A pattern using `.` or
 * a negated class is marked bytewise: on a text with non-ASCII bytes RE2
 * counts UTF-8 characters where POSIX in the C locale counts bytes, so the
 * evaluator answers UNKNOWN there too. This assumes the process runs in the
 * C locale (slicefit never calls setlocale), where ranges are byte ranges.
 *
 * The pattern is untrusted: counted repetitions are capped (1000 each, 2000
 * in all, none on a group that holds one) and groups nest at most 64 deep,
 * so glibc's automaton stays small.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include "cel_int.h"

#define RE_SPECIAL ".[\\()*+?{|^$"
#define RE_DEPTH 64       /* nested groups */
#define RE_COUNT_MAX 2000 /* sum of counted repetitions: bounds the POSIX automaton */

typedef struct {
  const char *s;
  size_t n, i;
  char *out;
  size_t len, cap;
  bool bad, bytewise, icase;
  bool atom;         /* a quantifier may follow */
  bool atom_counted; /* ... and the atom is a group holding a {n,m} */
  bool empty;        /* the current branch has nothing yet */
  int depth;
  bool counted[RE_DEPTH + 1]; /* the group at each depth holds a {n,m} */
  long count_total;           /* sum of the {n,m} bounds */
} re_t;

typedef struct {
  uint64_t w[2];
} set_t; /* ASCII characters */

static void put(re_t *r, char c)
{
  sf_xgrow(&r->out, &r->cap, r->len + 2, 1);
  r->out[r->len++] = c;
  r->out[r->len] = '\0';
}

static void puts_(re_t *r, const char *s)
{
  while (*s)
    put(r, *s++);
}

static void set_add(set_t *st, unsigned c)
{
  st->w[c >> 6] |= 1ull << (c & 63);
}

static bool set_has(const set_t *st, unsigned c)
{
  return (st->w[c >> 6] >> (c & 63)) & 1;
}

static void set_range(set_t *st, unsigned lo, unsigned hi)
{
  for (unsigned c = lo; c <= hi; c++)
    set_add(st, c);
}

/* \d \w \s (upper case: negated) into st; false when `c` is not one of them. */
static bool perl_class(char c, set_t *st)
{
  set_t t = {{0, 0}};
  char l = (char)tolower((unsigned char)c);
  if (l == 'd') {
    set_range(&t, '0', '9');
  } else if (l == 'w') {
    set_range(&t, '0', '9');
    set_range(&t, 'A', 'Z');
    set_range(&t, 'a', 'z');
    set_add(&t, '_');
  } else if (l == 's') {
    set_range(&t, '\t', '\n');
    set_range(&t, '\f', '\r');
    set_add(&t, ' ');
  } else {
    return false;
  }
  for (int k = 0; k < 2; k++)
    st->w[k] |= c == l ? t.w[k] : ~t.w[k];
  st->w[0] &= ~1ull; /* never NUL */
  return true;
}

/* A single-character escape after '\\': the character, or -1. */
static int escaped_char(re_t *r)
{
  char c = r->i < r->n ? r->s[r->i++] : '\0';
  static const char from[] = "ntrfva", to[] = "\n\t\r\f\v\a";
  const char *k = c ? strchr(from, c) : NULL;
  if (k != NULL)
    return to[k - from];
  if (c == 'x' && r->i + 1 < r->n && isxdigit((unsigned char)r->s[r->i]) &&
      isxdigit((unsigned char)r->s[r->i + 1])) {
    int v = 0;
    for (int j = 0; j < 2; j++) {
      char h = r->s[r->i++];
      v = v * 16 + (isdigit((unsigned char)h) ? h - '0' : tolower((unsigned char)h) - 'a' + 10);
    }
    return v > 0 && v < 0x80 ? v : -1;
  }
  if (c > 0 && (unsigned char)c < 0x80 && !isalnum((unsigned char)c) && c != '_')
    return c;
  return -1;
}

/* [:name:] at r->i (just after '['); false when it is not one. */
static bool posix_class(re_t *r, set_t *st)
{
  static const char *const names[] = {"alnum", "alpha", "blank", "cntrl", "digit", "graph",
                                      "lower", "print", "punct", "space", "upper", "xdigit"};
  if (r->i >= r->n || r->s[r->i] != ':')
    return false;
  const char *end = memchr(r->s + r->i + 1, ':', r->n - r->i - 1);
  if (end == NULL || end + 1 >= r->s + r->n || end[1] != ']')
    return false;
  size_t len = (size_t)(end - (r->s + r->i + 1));
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
    if (strlen(names[k]) != len || memcmp(names[k], r->s + r->i + 1, len) != 0)
      continue;
    for (unsigned c = 1; c < 128; c++) {
      int ch = (int)c;
      bool in[] = {isalnum(ch), isalpha(ch), ch == ' ' || ch == '\t',
                   iscntrl(ch), isdigit(ch), isgraph(ch),
                   islower(ch), isprint(ch), ispunct(ch),
                   isspace(ch), isupper(ch), isxdigit(ch)};
      if (in[k])
        set_add(st, c);
    }
    r->i += len + 3;
    return true;
  }
  return false;
}

/* One class member at r->i: a char (returned) or a class merged into st (-2); -1 bad. */
static int class_item(re_t *r, set_t *st)
{
  char c = r->s[r->i++];
  if (c == '[' && posix_class(r, st))
    return -2;
  if (c != '\\')
    return (unsigned char)c < 0x80 && c != '\0' ? c : -1;
  if (r->i < r->n && perl_class(r->s[r->i], st)) {
    r->bytewise |= isupper((unsigned char)r->s[r->i]) != 0;
    r->i++;
    return -2;
  }
  return escaped_char(r);
}

static void emit_set(re_t *r, const set_t *st, bool neg)
{
  static const char last[] = "[^-";
  put(r, '[');
  if (neg)
    put(r, '^');
  bool any = set_has(st, ']');
  if (any)
    put(r, ']');
  for (unsigned c = 1; c < 128; c++) {
    if (!set_has(st, c) || strchr("]-^[", (int)c) != NULL)
      continue;
    unsigned e = c;
    while (e + 1 < 128 && set_has(st, e + 1) && strchr("]-^[", (int)(e + 1)) == NULL)
      e++;
    put(r, (char)c);
    if (e >= c + 2) {
      put(r, '-');
      put(r, (char)e);
      c = e;
    }
    any = true;
  }
  for (const char *l = last; *l; l++) {
    if (!set_has(st, (unsigned char)*l))
      continue;
    if (*l == '^' && !any && !neg) {
      /* '^' first would negate: put '-' before it ("[-^]") or escape it alone. */
      if (set_has(st, '-')) {
        puts_(r, "-^]");
        return;
      }
      r->len--;
      puts_(r, "\\^");
      return;
    }
    put(r, *l);
    any = true;
  }
  put(r, ']');
}

static void parse_class(re_t *r)
{
  set_t st = {{0, 0}};
  bool neg = r->i < r->n && r->s[r->i] == '^';
  r->i += neg;
  bool first = true;
  while (!r->bad && r->i < r->n && (first || r->s[r->i] != ']')) {
    first = false;
    int lo = class_item(r, &st);
    if (lo == -1) {
      r->bad = true;
    } else if (lo >= 0 && r->i + 1 < r->n && r->s[r->i] == '-' && r->s[r->i + 1] != ']') {
      r->i++;
      int hi = class_item(r, &st);
      if (hi < lo)
        r->bad = true;
      else
        set_range(&st, (unsigned)lo, (unsigned)hi);
    } else if (lo >= 0) {
      set_add(&st, (unsigned)lo);
    }
  }
  if (r->i >= r->n || (st.w[0] == 0 && st.w[1] == 0))
    r->bad = true;
  r->i++;
  r->bytewise |= neg;
  if (!r->bad)
    emit_set(r, &st, neg);
}

static void literal(re_t *r, int c)
{
  if (c <= 0) {
    r->bad = true;
    return;
  }
  if (strchr(RE_SPECIAL, c) != NULL)
    put(r, '\\');
  put(r, (char)c);
}

static void escape(re_t *r)
{
  char c = r->i < r->n ? r->s[r->i] : '\0';
  set_t st = {{0, 0}};
  if (c == 'A' || c == 'z') {
    r->i++;
    put(r, c == 'A' ? '^' : '$');
    r->atom = false;
    r->empty = false;
    return;
  }
  if (perl_class(c, &st)) {
    r->i++;
    r->bytewise |= isupper((unsigned char)c) != 0;
    emit_set(r, &st, false);
  } else {
    literal(r, escaped_char(r));
  }
  r->atom = true;
}

/* Decimal digits at *i, saturated past 1000 (RE2's limit). */
static long number(const re_t *r, size_t *i)
{
  long v = 0;
  for (; *i < r->n && isdigit((unsigned char)r->s[*i]); (*i)++)
    v = v > 1000 ? v : v * 10 + (r->s[*i] - '0');
  return v;
}

/* {n}, {n,}, {n,m} at r->i (just after '{'); false (nothing consumed) when not a repeat. */
static bool repeat(re_t *r)
{
  size_t i = r->i;
  long lo, hi = -1;
  if (i >= r->n || !isdigit((unsigned char)r->s[i]))
    return false;
  lo = number(r, &i);
  if (i < r->n && r->s[i] == ',') {
    i++;
    if (i < r->n && isdigit((unsigned char)r->s[i]))
      hi = number(r, &i);
  } else {
    hi = lo;
  }
  if (i >= r->n || r->s[i] != '}')
    return false;
  /* A count on a group that holds counts multiplies the automaton glibc builds: refused. */
  r->count_total += hi > lo ? hi : lo;
  if (!r->atom || r->atom_counted || lo > 1000 || hi > 1000 || (hi >= 0 && hi < lo) ||
      r->count_total > RE_COUNT_MAX)
    r->bad = true;
  r->counted[r->depth] = true;
  put(r, '{');
  for (size_t k = r->i; k < i; k++)
    put(r, r->s[k]);
  put(r, '}');
  r->i = i + 1;
  return true;
}

static void quantifier(re_t *r, char c)
{
  if (!r->atom) {
    r->bad = true;
    return;
  }
  put(r, c);
}

static void group(re_t *r)
{
  if (r->i < r->n && r->s[r->i] == '?') {
    const char *rest = r->s + r->i + 1;
    size_t left = r->n - r->i - 1;
    if (left >= 1 && rest[0] == ':') {
      r->i += 2;
    } else if ((left >= 2 && rest[0] == 'P' && rest[1] == '<') || (left >= 1 && rest[0] == '<')) {
      const char *gt = memchr(rest, '>', left);
      if (gt == NULL) {
        r->bad = true;
        return;
      }
      r->i = (size_t)(gt + 1 - r->s);
    } else {
      r->bad = true;
      return;
    }
  }
  put(r, '(');
  if (++r->depth > RE_DEPTH) {
    r->bad = true;
    return;
  }
  r->counted[r->depth] = false;
  r->atom = false;
  r->empty = true;
}

static void branch_end(re_t *r, char c)
{
  if (r->empty || (c == ')' && r->depth == 0)) {
    r->bad = true;
    return;
  }
  put(r, c);
  if (c == ')') {
    r->atom_counted = r->counted[r->depth];
    r->depth--;
    r->counted[r->depth] |= r->atom_counted;
  }
  r->atom = c == ')';
  r->empty = c == '|';
}

static void step(re_t *r)
{
  char c = r->s[r->i++];
  bool was_atom = r->atom;
  if ((unsigned char)c >= 0x80 || c == '\0') {
    r->bad = true;
    return;
  }
  r->atom = true;
  if (c != '*' && c != '+' && c != '?' && c != '{')
    r->atom_counted = false;
  switch (c) {
  case '\\': escape(r); break;
  case '[': parse_class(r); break;
  case '.':
    puts_(r, "[^\n]");
    r->bytewise = true;
    break;
  case '(': group(r); return;
  case ')':
  case '|': branch_end(r, c); return;
  case '^':
  case '$':
    put(r, c);
    r->atom = false;
    break;
  case '*':
  case '+':
  case '?':
    r->atom = was_atom;
    quantifier(r, c);
    r->atom = false;
    if (r->i < r->n && r->s[r->i] == '?')
      r->i++; /* lazy: the same match/no-match answer */
    return;
  case '{':
    r->atom = was_atom;
    if (repeat(r)) {
      r->atom = false;
      if (r->i < r->n && r->s[r->i] == '?')
        r->i++;
      return;
    }
    r->atom = true;
    puts_(r, "\\{");
    break;
  default: literal(r, c);
  }
  r->empty = false;
}

void sf__cel_re_compile(cel_re_t *out, const char *pat, size_t len, bool positions)
{
  re_t r;
  memset(&r, 0, sizeof r);
  r.s = pat;
  r.n = len;
  r.empty = true;
  if (len >= 4 && memcmp(pat, "(?i)", 4) == 0) {
    r.icase = true;
    r.i = 4;
  }
  put(&r, '\0');
  r.len = 0;
  while (!r.bad && r.i < r.n)
    step(&r);
  if (r.len == 0)
    puts_(&r, "^"); /* the empty pattern matches every text */
  else if (r.empty || r.depth != 0)
    r.bad = true;
  memset(out, 0, sizeof *out);
  out->bytewise = r.bytewise;
  if (!r.bad)
    out->ok = regcomp(&out->re, r.out,
                      REG_EXTENDED | (positions ? 0 : REG_NOSUB) | (r.icase ? REG_ICASE : 0)) == 0;
  free(r.out);
}
