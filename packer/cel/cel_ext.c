/*
 * The extension libraries of the Kubernetes base CEL environment that DRA
 * selectors see (the versions are in cel_parse.c's table): cel-go's strings
 * extension at version 2 (charAt, indexOf, lastIndexOf, join, replace,
 * split, substring, trim, format, strings.quote), ext.Sets, the Kubernetes
 * lists library (isSorted, sum, min, max, indexOf, lastIndexOf), the
 * Kubernetes regex library (find, findAll) and cel-go's lists extension at
 * version 3 (slice, flatten, distinct, reverse, sort, first, last,
 * lists.range).
 *
 * Strings are UTF-8 and indexed by code point, as cel-go's []rune; offsets
 * and counts follow cel-go's functions exactly, errors included (an offset
 * out of range, a substring range backwards, a negative slice). Results are
 * built in the evaluation's scratch and arena; exhausting them is UNKNOWN,
 * which also bounds the work of sort() and distinct() in one evaluation.
 * Where slicefit's answer could differ from Go's (a format clause of a
 * double, find() of a pattern whose leftmost-first and leftmost-longest
 * matches can differ, a findAll() with empty matches, sorting NaN), the
 * result is UNKNOWN, never a guess.
 */
#include <stdio.h>
#include <string.h>
#include "cel_int.h"

static cel_val_t overload(uint32_t n)
{
  return sf__cel_err(n, "no such overload");
}

static cel_val_t scratch_full(uint32_t n)
{
  return sf__cel_unk(n, "string scratch space exhausted");
}

static cel_val_t list_val(const cel_val_t *l, size_t n)
{
  cel_val_t r = {.t = V_LIST, .n = (uint32_t)n, .v.l = l};
  return r;
}

/* ---- UTF-8, as Go decodes it ---- */

/* The code point at s[0..n) and its length in *len; -1 (length 1) for an invalid byte, as Go. */
static int32_t rune_at(const unsigned char *s, size_t n, size_t *len)
{
  static const unsigned char lo[] = {0x80, 0xA0, 0x80, 0x90, 0x80, 0x80},
                             hi[] = {0xBF, 0xBF, 0x9F, 0xBF, 0x8F, 0xBF};
  *len = 1;
  if (s[0] < 0x80)
    return s[0];
  size_t need = s[0] >= 0xF0 ? 4 : s[0] >= 0xE0 ? 3 : 2;
  if (s[0] < 0xC2 || s[0] > 0xF4 || n < need)
    return -1;
  /* The second byte's range depends on the first (no overlong form, surrogate or > U+10FFFF). */
  int k = s[0] == 0xE0 ? 1 : s[0] == 0xED ? 2 : s[0] == 0xF0 ? 3 : s[0] == 0xF4 ? 4 : 0;
  if (s[1] < lo[k] || s[1] > hi[k])
    return -1;
  int32_t cp = s[0] & (need == 2 ? 0x1F : need == 3 ? 0x0F : 0x07);
  for (size_t i = 1; i < need; i++) {
    if ((s[i] & 0xC0) != 0x80)
      return -1;
    cp = (cp << 6) | (s[i] & 0x3F);
  }
  *len = need;
  return cp;
}

int32_t sf__cel_rune_at(const unsigned char *s, size_t n, size_t *len)
{
  return rune_at(s, n, len);
}

/* How many runes (Go's count: an invalid byte is one) s holds. */
static int64_t nrunes(const char *s, size_t n)
{
  int64_t k = 0;
  for (size_t i = 0, len; i < n; i += len, k++)
    rune_at((const unsigned char *)s + i, n - i, &len);
  return k;
}

/* The byte offset of rune r of s (r <= its rune count). */
static size_t rune_off(const char *s, size_t n, int64_t r)
{
  size_t i = 0, len;
  for (; r > 0 && i < n; r--, i += len)
    rune_at((const unsigned char *)s + i, n - i, &len);
  return i;
}

static cel_val_t copy_str(cel_ctx_t *c, uint32_t n, const char *s, size_t len)
{
  char *o = sf__cel_scratch(c, len);
  if (o == NULL)
    return scratch_full(n);
  memcpy(o, s, len);
  return sf__cel_str(o, len);
}

/* ---- the strings extension ---- */

/* A string built in the scratch space past its reserved part; reserved once complete. */
typedef struct {
  char *o;
  size_t len, room;
} sbuf_t;

static bool put(sbuf_t *b, const char *s, size_t n)
{
  if (b->len + n >= b->room)
    return false;
  memcpy(b->o + b->len, s, n);
  b->len += n;
  return true;
}

static cel_val_t char_at(cel_ctx_t *c, uint32_t n, const cel_val_t *s, int64_t i)
{
  if (i < 0 || i > nrunes(s->v.s, s->n))
    return sf__cel_err(n, "index out of range");
  size_t at = rune_off(s->v.s, s->n, i), len = 0;
  if (at < s->n)
    rune_at((const unsigned char *)s->v.s + at, s->n - at, &len);
  return copy_str(c, n, s->v.s + at, len);
}

/* Does sub occur in s at byte `at`? */
static bool occurs(const cel_val_t *s, size_t at, const cel_val_t *sub)
{
  return at + sub->n <= s->n && memcmp(s->v.s + at, sub->v.s, sub->n) == 0;
}

/*
 * indexOf and lastIndexOf, cel-go's way: an empty substring answers the
 * offset unchecked; otherwise an offset outside [0, runes) is an error (so
 * is any search in an empty string), and lastIndexOf starts no later than
 * the last place the substring fits. One pass over the bytes, counting
 * runes; lastIndexOf keeps the last match at or before the offset.
 */
static cel_val_t index_of(uint32_t n, const cel_val_t *s, const cel_val_t *sub, int64_t off,
                          bool last)
{
  int64_t runes = nrunes(s->v.s, s->n), subr = nrunes(sub->v.s, sub->n), found = -1;
  if (sub->n == 0)
    return sf__cel_int(off);
  if (off < 0 || off >= runes)
    return sf__cel_err(n, "index out of range");
  if (last && off > runes - subr)
    off = runes - subr;
  size_t at = 0, len;
  for (int64_t r = 0; r <= runes - subr && (!last || r <= off); r++, at += len) {
    if (r >= (last ? 0 : off) && occurs(s, at, sub)) {
      found = r;
      if (!last)
        break;
    }
    rune_at((const unsigned char *)s->v.s + at, s->n - at, &len);
  }
  return sf__cel_int(found);
}

static cel_val_t substring(cel_ctx_t *c, uint32_t n, const cel_val_t *s, int64_t from, int64_t to)
{
  int64_t runes = nrunes(s->v.s, s->n);
  if (from > to)
    return sf__cel_err(n, "invalid substring range");
  if (from < 0 || from > runes || to < 0 || to > runes)
    return sf__cel_err(n, "index out of range");
  size_t a = rune_off(s->v.s, s->n, from), b = rune_off(s->v.s, s->n, to);
  return copy_str(c, n, s->v.s + a, b - a);
}

/* Go's unicode.IsSpace. */
static bool is_space(int32_t r)
{
  return (r >= 0x09 && r <= 0x0D) || r == ' ' || r == 0x85 || r == 0xA0 || r == 0x1680 ||
         (r >= 0x2000 && r <= 0x200A) || r == 0x2028 || r == 0x2029 || r == 0x202F || r == 0x205F ||
         r == 0x3000;
}

static cel_val_t trim(cel_ctx_t *c, uint32_t n, const cel_val_t *s)
{
  const unsigned char *u = (const unsigned char *)s->v.s;
  size_t a = 0, b = s->n, len;
  while (a < b && is_space(rune_at(u + a, b - a, &len)))
    a += len;
  while (b > a) {
    size_t start = b - 1;
    while (start > a && (u[start] & 0xC0) == 0x80 && b - start < 4)
      start--;
    if (!is_space(rune_at(u + start, b - start, &len)) || start + len != b)
      break;
    b = start;
  }
  return copy_str(c, n, s->v.s + a, b - a);
}

/* Where the next match of sep is at or after byte `from`: Go's rules, an empty sep matching after each rune. */
static size_t next_sep(const cel_val_t *s, const cel_val_t *sep, size_t from)
{
  size_t len;
  if (sep->n == 0) {
    if (from >= s->n)
      return SIZE_MAX;
    rune_at((const unsigned char *)s->v.s + from, s->n - from, &len);
    return from + len;
  }
  for (size_t i = from; i + sep->n <= s->n; i++)
    if (occurs(s, i, sep))
      return i;
  return SIZE_MAX;
}

/* strings.SplitN(s, sep, limit): limit 0 gives [], a negative one no limit. */
static cel_val_t split(cel_ctx_t *c, uint32_t n, const cel_val_t *s, const cel_val_t *sep,
                       int64_t limit)
{
  size_t count = 0, from = 0, at;
  cel_val_t *l = sf__cel_reserve(c, 0);
  if (limit == 0)
    return list_val(l, 0);
  /* Splitting "" by "" gives [], by anything else [""]. */
  if (sep->n == 0 && s->n == 0)
    return list_val(l, 0);
  while ((limit < 0 || (int64_t)count + 1 < limit) && (at = next_sep(s, sep, from)) != SIZE_MAX &&
         (sep->n > 0 || at < s->n)) {
    if (sf__cel_reserve(c, 1) == NULL)
      return sf__cel_unk(n, "list arena exhausted");
    l[count] = copy_str(c, n, s->v.s + from, at - from);
    if (BAD(l[count++]))
      return l[count - 1];
    from = at + sep->n;
  }
  if (sf__cel_reserve(c, 1) == NULL)
    return sf__cel_unk(n, "list arena exhausted");
  l[count] = copy_str(c, n, s->v.s + from, s->n - from);
  return BAD(l[count]) ? l[count] : list_val(l, count + 1);
}

/* strings.Replace(s, old, new, limit): a negative limit replaces all; an empty old matches around each rune. */
static cel_val_t replace(cel_ctx_t *c, uint32_t n, const cel_val_t *a, int64_t limit)
{
  const cel_val_t *s = &a[0], *old = &a[1], *rep = &a[2];
  sbuf_t b = {c->scratch + c->nscratch, 0, CEL_SCRATCH - c->nscratch};
  size_t from = 0, search = 0, at, len;
  for (int64_t k = 0; limit < 0 || k < limit; k++) {
    if (old->n > 0) {
      if ((at = next_sep(s, old, search)) == SIZE_MAX)
        break;
    } else if (k == 0) {
      at = 0;
    } else {
      if (search >= s->n)
        break;
      rune_at((const unsigned char *)s->v.s + search, s->n - search, &len);
      at = search + len;
    }
    if (!put(&b, s->v.s + from, at - from) || !put(&b, rep->v.s, rep->n))
      return scratch_full(n);
    from = at + old->n;
    search = old->n > 0 ? from : at;
  }
  if (!put(&b, s->v.s + from, s->n - from) || sf__cel_scratch(c, b.len) == NULL)
    return scratch_full(n);
  return sf__cel_str(b.o, b.len);
}

static cel_val_t join(cel_ctx_t *c, uint32_t n, const cel_val_t *l, const cel_val_t *sep)
{
  size_t len = 0;
  for (uint32_t i = 0; i < l->n; i++) {
    if (l->v.l[i].t != V_STR || l->v.l[i].flags & CV_OPT)
      return sf__cel_err(n, "join: the list holds a value that is not a string");
    len += l->v.l[i].n + (i > 0 && sep ? sep->n : 0);
  }
  char *o = sf__cel_scratch(c, len);
  if (o == NULL)
    return scratch_full(n);
  size_t at = 0;
  for (uint32_t i = 0; i < l->n; i++) {
    if (i > 0 && sep != NULL) {
      memcpy(o + at, sep->v.s, sep->n);
      at += sep->n;
    }
    memcpy(o + at, l->v.l[i].v.s, l->v.l[i].n);
    at += l->v.l[i].n;
  }
  return sf__cel_str(o, len);
}

/* strings.quote: double quotes, CEL's escapes, and U+FFFD for each invalid byte. */
static cel_val_t quote(cel_ctx_t *c, uint32_t n, const cel_val_t *s)
{
  static const char esc[] = "\a\b\f\n\r\t\v\\\"", letter[] = "abfnrtv\\\"";
  char *o = c->scratch + c->nscratch;
  size_t room = CEL_SCRATCH - c->nscratch, len = 0, rl;
  o[len++] = '"';
  for (size_t i = 0; i < s->n && len + 4 < room; i += rl) {
    int32_t r = rune_at((const unsigned char *)s->v.s + i, s->n - i, &rl);
    const char *e = r > 0 && r < 0x80 ? strchr(esc, (char)r) : NULL;
    if (e != NULL) {
      o[len++] = '\\';
      o[len++] = letter[e - esc];
    } else if (r < 0) {
      memcpy(o + len, "\xEF\xBF\xBD", 3);
      len += 3;
    } else {
      memcpy(o + len, s->v.s + i, rl);
      len += rl;
    }
  }
  if (len + 2 >= room)
    return scratch_full(n);
  o[len++] = '"';
  return sf__cel_scratch(c, len) == NULL ? scratch_full(n) : sf__cel_str(o, len);
}

/* ---- format ---- */

/* An integer (int or uint) in base 2, 8, 10 or 16, as Go's %b %o %d %x %X print it. */
static bool put_int(sbuf_t *b, const cel_val_t *v, unsigned base, bool upper)
{
  const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  char tmp[72];
  size_t k = sizeof tmp;
  bool neg = v->t == V_INT && v->v.i < 0;
  uint64_t u = v->t == V_UINT ? v->v.u : neg ? 0 - (uint64_t)v->v.i : (uint64_t)v->v.i;
  do {
    tmp[--k] = digits[u % base];
    u /= base;
  } while (u > 0);
  if (neg)
    tmp[--k] = '-';
  return put(b, tmp + k, sizeof tmp - k);
}

/* %f and %e of NaN and the infinities, which cel-go also takes as the strings "NaN", "Infinity", "-Infinity". */
static bool float_word(const cel_val_t *v)
{
  return v->t == V_STR && ((v->n == 3 && memcmp(v->v.s, "NaN", 3) == 0) ||
                           (v->n == 8 && memcmp(v->v.s, "Infinity", 8) == 0) ||
                           (v->n == 9 && memcmp(v->v.s, "-Infinity", 9) == 0));
}

/* A double for %s or %f (cel_fmt.c); 1 done, -1 unknown. */
static int put_double(sbuf_t *b, char verb, int prec, double x)
{
  char tmp[64];
  long len = sf__cel_fmt_double(verb, prec, x, tmp, sizeof tmp);
  return len >= 0 && put(b, tmp, (size_t)len) ? 1 : -1;
}

/*
 * One clause (the letter after '%', prec the precision or -1) with its
 * argument; 1 done, 0 a CEL error, -1 unknown.
 */
static int clause(sbuf_t *b, char verb, int prec, const cel_val_t *v)
{
  bool integer = v->t == V_INT || v->t == V_UINT;
  if (v->flags & CV_OPT || v->t == V_NONE || v->t > V_LIST)
    return -1;
  switch (verb) {
  case 's':
    if (v->t == V_STR)
      return put(b, v->v.s, v->n) ? 1 : -1;
    if (v->t == V_BOOL)
      return put(b, v->v.b ? "true" : "false", v->v.b ? 4 : 5) ? 1 : -1;
    if (v->t == V_NULL)
      return put(b, "null", 4) ? 1 : -1;
    if (integer)
      return put_int(b, v, 10, false) ? 1 : -1;
    if (v->t == V_DOUBLE)
      return put_double(b, 's', 0, v->v.d);
    return -1; /* lists: Go's quoting */
  case 'd': return integer ? (put_int(b, v, 10, false) ? 1 : -1) : 0;
  case 'o': return integer ? (put_int(b, v, 8, false) ? 1 : -1) : 0;
  case 'b':
    if (v->t == V_BOOL)
      return put(b, v->v.b ? "1" : "0", 1) ? 1 : -1;
    return integer ? (put_int(b, v, 2, false) ? 1 : -1) : 0;
  case 'x':
  case 'X':
    if (integer)
      return put_int(b, v, 16, verb == 'X') ? 1 : -1;
    if (v->t != V_STR)
      return 0;
    for (uint32_t i = 0; i < v->n; i++) {
      cel_val_t byte = {.t = V_UINT, .v.u = (unsigned char)v->v.s[i]};
      if ((byte.v.u < 16 && !put(b, "0", 1)) || !put_int(b, &byte, 16, verb == 'X'))
        return -1;
    }
    return 1;
  case 'f':
  case 'e':
    if (v->t == V_DOUBLE && verb == 'f')
      return put_double(b, 'f', prec < 0 ? 6 : prec, v->v.d);
    return v->t == V_DOUBLE || float_word(v) ? -1 : 0; /* %e: x/text's notation varies */
  default: return -1;
  }
}

static cel_val_t format(cel_ctx_t *c, uint32_t n, const cel_val_t *f, const cel_val_t *args)
{
  sbuf_t b = {c->scratch + c->nscratch, 0, CEL_SCRATCH - c->nscratch};
  uint32_t next = 0;
  for (uint32_t i = 0; i < f->n; i++) {
    if (f->v.s[i] != '%') {
      if (!put(&b, f->v.s + i, 1))
        return scratch_full(n);
      continue;
    }
    if (++i >= f->n)
      return sf__cel_err(n, "format: unterminated clause");
    if (f->v.s[i] == '%') {
      if (!put(&b, "%", 1))
        return scratch_full(n);
      continue;
    }
    /* A precision: digits after '.', taken by every clause and used by %f and %e only. */
    int prec = -1, digits = 0;
    if (f->v.s[i] == '.') {
      for (prec = 0; i + 1 < f->n && f->v.s[i + 1] >= '0' && f->v.s[i + 1] <= '9'; i++, digits++)
        prec = digits < 9 ? prec * 10 + (f->v.s[i + 1] - '0') : prec;
      if (++i >= f->n || digits == 0)
        return sf__cel_err(n, "format: precision without digits or clause");
      if (digits > 9)
        return sf__cel_unk(n, "format precision past nine digits");
    }
    if (f->v.s[i] == '\0' || strchr("sdobxXfe", f->v.s[i]) == NULL)
      return sf__cel_err(n, "format: unrecognized formatting clause");
    if (next >= args->n)
      return sf__cel_err(n, "format: more clauses than arguments");
    int r = clause(&b, f->v.s[i], prec, &args->v.l[next++]);
    if (r <= 0)
      return r == 0 ? sf__cel_err(n, "format: the clause does not take the argument's type")
                    : sf__cel_unk(n, "format clause slicefit does not print as Go does");
  }
  /* cel-go rejects unused arguments at compile time when both are literals: not certain here. */
  if (next < args->n)
    return sf__cel_unk(n, "format() leaves arguments unused");
  if (sf__cel_scratch(c, b.len) == NULL)
    return scratch_full(n);
  return sf__cel_str(b.o, b.len);
}

/* ---- regular expressions: find and findAll ---- */

/*
 * Go's regexp reports the leftmost-first match, POSIX regexec the
 * leftmost-longest. They agree when the pattern has no alternation and at
 * most one quantifier: the start is the same leftmost one, and with one
 * greedy quantifier over fixed-width atoms a longer repetition is both the
 * first one tried and the longer match.
 */
static bool first_is_longest(const char *p, size_t n)
{
  int quant = 0;
  bool cls = false;
  for (size_t i = 0; i < n; i++) {
    if (p[i] == '\\') {
      i++;
    } else if (cls) {
      cls = p[i] != ']';
    } else if (p[i] == '[') {
      cls = true;
      i += i + 1 < n && p[i + 1] == '^';
      i += i + 1 < n && p[i + 1] == ']';
    } else if (p[i] == '|') {
      return false;
    } else {
      quant += p[i] == '*' || p[i] == '+' || p[i] == '?' || p[i] == '{';
    }
  }
  return quant <= 1;
}

/* The match of re in s from byte `from`: 1 (*so, *eo absolute), 0 none, -1 unknown. */
static int search(const cel_re_t *re, const cel_val_t *s, size_t from, size_t *so, size_t *eo)
{
  regmatch_t m;
  int flags = from > 0 ? REG_NOTBOL : 0;
  if (regexec(&re->re, s->v.s + from, 1, &m, flags) != 0)
    return 0;
  *so = from + (size_t)m.rm_so;
  *eo = from + (size_t)m.rm_eo;
  return 1;
}

/* Is the text one a POSIX match over it is also RE2's? (The checks of matches()). */
static const char *unsafe_text(const cel_re_t *re, const cel_val_t *s)
{
  bool wide = false;
  if (!re->ok)
    return "regular expression not supported by the POSIX translation";
  if (memchr(s->v.s, '\0', s->n) != NULL)
    return "regular expression on a string holding NUL";
  for (uint32_t i = 0; i < s->n; i++)
    wide |= (unsigned char)s->v.s[i] >= 0x80;
  return re->bytewise && wide ? "'.' or a negated class on non-ASCII text" : NULL;
}

static cel_val_t find(cel_ctx_t *c, uint32_t n, const cel_val_t *a, uint32_t na, int fn)
{
  cel_re_t dyn, *re = sf__cel_regex(c, n, &a[1], &dyn);
  const char *why = unsafe_text(re, &a[0]);
  cel_val_t r;
  int64_t limit = fn == FN_FINDALL && na == 3 ? a[2].v.i : -1;
  size_t so, eo, from = 0, count = 0;
  cel_val_t *l = sf__cel_reserve(c, 0);
  if (why != NULL || !first_is_longest(a[1].v.s, a[1].n)) {
    r = sf__cel_unk(n,
                    why ? why : "find() of a pattern where RE2 and POSIX may pick different matches");
  } else if (fn == FN_FIND) {
    r = search(re, &a[0], 0, &so, &eo) ? copy_str(c, n, a[0].v.s + so, eo - so) : sf__cel_str("", 0);
  } else {
    r = list_val(l, 0);
    while ((limit < 0 || (int64_t)count < limit) && from <= a[0].n &&
           search(re, &a[0], from, &so, &eo)) {
      if (eo == so) {
        r = sf__cel_unk(n, "findAll() of a pattern matching the empty string");
        break;
      }
      if (sf__cel_reserve(c, 1) == NULL) {
        r = sf__cel_unk(n, "list arena exhausted");
        break;
      }
      l[count] = copy_str(c, n, a[0].v.s + so, eo - so);
      r = BAD(l[count]) ? l[count] : list_val(l, count + 1);
      if (BAD(l[count++]))
        break;
      from = eo;
    }
  }
  if (re == &dyn && dyn.ok)
    regfree(&dyn.re);
  return r;
}

/* ---- lists ---- */

/* Is v one of l's elements? BOOL, or the first ERR/UNK met. */
static cel_val_t has_elem(uint32_t n, const cel_val_t *l, const cel_val_t *v)
{
  cel_val_t bad = sf__cel_bool(false);
  for (uint32_t i = 0; i < l->n; i++) {
    cel_val_t e = sf__cel_eq(n, &l->v.l[i], v);
    if (e.t == V_BOOL && e.v.b)
      return e;
    if (BAD(e) && bad.t != V_UNK)
      bad = e;
  }
  return bad;
}

/* sets.contains(a, b): every element of b is in a. intersects: some is. */
static cel_val_t sets(uint32_t n, int fn, const cel_val_t *a, const cel_val_t *b)
{
  if (fn == FN_SETS_EQUIVALENT) {
    cel_val_t x = sets(n, FN_SETS_CONTAINS, a, b);
    return x.t == V_BOOL && x.v.b ? sets(n, FN_SETS_CONTAINS, b, a) : x;
  }
  bool all = fn == FN_SETS_CONTAINS;
  for (uint32_t i = 0; i < b->n; i++) {
    cel_val_t e = has_elem(n, a, &b->v.l[i]);
    if (BAD(e))
      return e;
    if (e.v.b != all)
      return e;
  }
  return sf__cel_bool(all);
}

static cel_val_t index_in_list(uint32_t n, const cel_val_t *l, const cel_val_t *v, bool last)
{
  for (uint32_t k = 0; k < l->n; k++) {
    uint32_t i = last ? l->n - 1 - k : k;
    cel_val_t e = sf__cel_eq(n, &l->v.l[i], v);
    if (BAD(e))
      return e;
    if (e.v.b)
      return sf__cel_int(i);
  }
  return sf__cel_int(-1);
}

/* Order of two elements for sort, isSorted, min and max: -1/0/1, or *bad set. */
static int order(uint32_t n, const cel_val_t *x, const cel_val_t *y, cel_val_t *bad)
{
  int o = sf__cel_order(x, y);
  if (o == 3)
    *bad = sf__cel_err(n, "no such overload: the list's elements are not comparable");
  else if (o == 2)
    *bad = sf__cel_unk(n, "NaN in an ordered list");
  return o == 2 || o == 3 ? 0 : o;
}

static cel_val_t is_sorted(uint32_t n, const cel_val_t *l)
{
  cel_val_t bad = {.t = V_NULL};
  for (uint32_t i = 1; i < l->n; i++) {
    int o = order(n, &l->v.l[i - 1], &l->v.l[i], &bad);
    if (BAD(bad))
      return bad;
    if (o > 0)
      return sf__cel_bool(false);
  }
  return sf__cel_bool(true);
}

static cel_val_t min_max(uint32_t n, const cel_val_t *l, bool max)
{
  cel_val_t bad = {.t = V_NULL};
  if (l->n == 0)
    return sf__cel_err(n, max ? "max called on empty list" : "min called on empty list");
  const cel_val_t *best = &l->v.l[0];
  for (uint32_t i = 1; i < l->n; i++) {
    int o = order(n, &l->v.l[i], best, &bad);
    if (BAD(bad))
      return bad;
    if (max ? o > 0 : o < 0)
      best = &l->v.l[i];
  }
  return *best;
}

/* sum() of ints, uints or doubles; a list mixing them is not certain (overload choice), so UNKNOWN. */
static cel_val_t sum(uint32_t n, const cel_val_t *l)
{
  cel_val_t acc = sf__cel_int(0);
  for (uint32_t i = 0; i < l->n; i++) {
    const cel_val_t *x = &l->v.l[i];
    bool over = false;
    if (x->flags & CV_OPT || (x->t != V_INT && x->t != V_UINT && x->t != V_DOUBLE))
      return sf__cel_err(n, "no such overload: sum of a value that is not a number");
    if (i == 0) {
      acc = *x;
      continue;
    }
    if (x->t != acc.t)
      return sf__cel_unk(n, "sum() of a list mixing number types");
    if (x->t == V_INT)
      over = __builtin_add_overflow(acc.v.i, x->v.i, &acc.v.i);
    else if (x->t == V_UINT)
      over = __builtin_add_overflow(acc.v.u, x->v.u, &acc.v.u);
    else
      acc.v.d += x->v.d;
    if (over)
      return sf__cel_err(n, x->t == V_INT ? "integer overflow" : "unsigned integer overflow");
  }
  return acc;
}

static cel_val_t slice(uint32_t n, const cel_val_t *l, int64_t from, int64_t to)
{
  if (from < 0 || to < 0)
    return sf__cel_err(n, "cannot slice: negative indexes not supported");
  if (from > to)
    return sf__cel_err(n, "cannot slice: start index must be less than or equal to end index");
  if (to > l->n)
    return sf__cel_err(n, "cannot slice: end index past the list's length");
  return list_val(l->v.l + from, (size_t)(to - from));
}

/* Appends x's elements, flattened `depth` more levels, to the arena after *count. */
static bool flatten_into(cel_ctx_t *c, const cel_val_t *x, int64_t depth, cel_val_t *out,
                         size_t *count)
{
  for (uint32_t i = 0; i < x->n; i++) {
    const cel_val_t *e = &x->v.l[i];
    if (e->t == V_LIST && !(e->flags & CV_OPT) && depth > 0) {
      if (!flatten_into(c, e, depth - 1, out, count))
        return false;
      continue;
    }
    if (sf__cel_reserve(c, 1) == NULL)
      return false;
    out[(*count)++] = *e;
  }
  return true;
}

static cel_val_t flatten(cel_ctx_t *c, uint32_t n, const cel_val_t *l, int64_t depth)
{
  if (depth < 0)
    return sf__cel_err(n, "level must be non-negative");
  cel_val_t *out = sf__cel_reserve(c, 0);
  size_t count = 0;
  /* Nesting is bounded by the expression's depth, so the recursion is too. */
  if (depth > CEL_DEPTH_MAX)
    depth = CEL_DEPTH_MAX;
  return flatten_into(c, l, depth, out, &count) ? list_val(out, count)
                                                : sf__cel_unk(n, "list arena exhausted");
}

static cel_val_t distinct(cel_ctx_t *c, uint32_t n, const cel_val_t *l)
{
  cel_val_t *out = sf__cel_reserve(c, l->n);
  if (out == NULL)
    return sf__cel_unk(n, "list arena exhausted");
  size_t count = 0;
  for (uint32_t i = 0; i < l->n; i++) {
    cel_val_t seen = has_elem(n, &(cel_val_t){.t = V_LIST, .n = (uint32_t)count, .v.l = out},
                              &l->v.l[i]);
    if (BAD(seen))
      return seen;
    if (!seen.v.b)
      out[count++] = l->v.l[i];
  }
  return list_val(out, count);
}

static cel_val_t reverse(cel_ctx_t *c, uint32_t n, const cel_val_t *l)
{
  cel_val_t *out = sf__cel_reserve(c, l->n);
  if (out == NULL)
    return sf__cel_unk(n, "list arena exhausted");
  for (uint32_t i = 0; i < l->n; i++)
    out[i] = l->v.l[l->n - 1 - i];
  return list_val(out, l->n);
}

/* sort(): elements of one comparable type (cel-go's rule), stable insertion sort. */
static cel_val_t sort(cel_ctx_t *c, uint32_t n, const cel_val_t *l)
{
  cel_val_t *out = sf__cel_reserve(c, l->n), bad = {.t = V_NULL};
  if (out == NULL)
    return sf__cel_unk(n, "list arena exhausted");
  for (uint32_t i = 0; i < l->n; i++) {
    cel_val_t x = l->v.l[i];
    if (x.t != l->v.l[0].t)
      return sf__cel_err(n, "list elements must have the same type");
    uint32_t j = i;
    while (j > 0 && order(n, &out[j - 1], &x, &bad) > 0)
      out[j] = out[j - 1], j--;
    if (BAD(bad))
      return bad;
    out[j] = x;
  }
  return list_val(out, l->n);
}

/*
 * Go's sort.Slice is an insertion sort up to 12 elements, stable as this
 * one is; past 12 (pdqsort) the order of elements with equal keys is its own.
 * Keys must share one type, as cel-go requires; the types other than int,
 * uint, double, bool and string are left unknown.
 */
cel_val_t sf__cel_sort_by(cel_ctx_t *c, uint32_t n, const cel_val_t *l, const cel_val_t *keys)
{
  if (l->t != V_LIST)
    return sf__cel_unk(n, "sortBy over a map is not supported");
  uint16_t perm[CEL_ARENA];
  cel_val_t bad = {.t = V_NULL};
  for (uint32_t i = 0; i < l->n; i++) {
    const cel_val_t *k = &keys[i];
    if (k->flags & CV_OPT || k->t == V_LIST)
      return sf__cel_err(n, "list elements must be comparable");
    if (k->t != V_INT && k->t != V_UINT && k->t != V_DOUBLE && k->t != V_BOOL && k->t != V_STR)
      return sf__cel_unk(n, "sortBy keys of this type are not supported");
    if (k->t != keys[0].t)
      return sf__cel_err(n, "list elements must have the same type");
    uint32_t j = i;
    while (j > 0 && order(n, &keys[perm[j - 1]], k, &bad) > 0)
      perm[j] = perm[j - 1], j--;
    if (BAD(bad))
      return bad;
    perm[j] = (uint16_t)i;
  }
  cel_val_t *out = sf__cel_reserve(c, l->n);
  if (out == NULL)
    return sf__cel_unk(n, "list arena exhausted");
  for (uint32_t i = 0; i < l->n; i++) {
    if (l->n > 12 && i > 0 && order(n, &keys[perm[i - 1]], &keys[perm[i]], &bad) == 0) {
      cel_val_t same = sf__cel_eq(n, &l->v.l[perm[i - 1]], &l->v.l[perm[i]]);
      if (same.t != V_BOOL || !same.v.b)
        return sf__cel_unk(n, "sortBy with equal keys past 12 elements: Go's order is its own");
    }
    out[i] = l->v.l[perm[i]];
  }
  return list_val(out, l->n);
}

static cel_val_t range(cel_ctx_t *c, uint32_t n, int64_t k)
{
  if (k <= 0)
    return list_val(sf__cel_reserve(c, 0), 0);
  cel_val_t *out = k > CEL_ARENA ? NULL : sf__cel_reserve(c, (size_t)k);
  if (out == NULL)
    return sf__cel_unk(n, "list arena exhausted");
  for (int64_t i = 0; i < k; i++)
    out[i] = sf__cel_int(i);
  return list_val(out, (size_t)k);
}

static cel_val_t end_elem(uint32_t n, const cel_val_t *l, bool last)
{
  cel_val_t none = {.t = V_NONE};
  if (l->n == 0)
    return none;
  cel_val_t r = l->v.l[last ? l->n - 1 : 0];
  if (r.flags & CV_OPT || r.t == V_NONE)
    return sf__cel_unk(n, "nested optionals are not supported");
  r.flags |= CV_OPT;
  return r;
}

/* ---- dispatch ---- */

/* Are the arguments from index 1 of the types `want` ("s" string, "i" int, "l" list)? */
static bool args_are(const cel_val_t *a, uint32_t na, const char *want)
{
  static const uint8_t type_of[] = {['s'] = V_STR, ['i'] = V_INT, ['l'] = V_LIST};
  for (uint32_t i = 1; i < na; i++)
    if (want[i - 1] == '\0' || a[i].t != type_of[(unsigned char)want[i - 1]])
      return false;
  return true;
}

/*
 * What Kubernetes' cost estimator charges at least for a string function:
 * a tenth of the target's length (twice that for replace and split), for
 * find and findAll times the pattern's quarter length; counted here as a
 * sixteenth. charAt, format and strings.quote have cel-go's nominal cost.
 */
static uint32_t traversal(int fn, const cel_val_t *a)
{
  switch (fn) {
  case FN_INDEXOF:
  case FN_LASTINDEXOF:
  case FN_SUBSTRING:
  case FN_TRIM:
  case FN_REPLACE:
  case FN_SPLIT: return a[0].n / 16;
  case FN_FIND:
  case FN_FINDALL: return a[1].t == V_STR && a[1].n > 0 ? a[0].n / 16 : 0;
  default: return 0;
  }
}

static cel_val_t string_ext(cel_ctx_t *c, uint32_t n, int fn, const cel_val_t *a, uint32_t na)
{
  c->steps += traversal(fn, a);
  switch (fn) {
  case FN_CHARAT: return args_are(a, na, "i") ? char_at(c, n, &a[0], a[1].v.i) : overload(n);
  case FN_INDEXOF:
  case FN_LASTINDEXOF:
    if (!args_are(a, na, "si"))
      return overload(n);
    return index_of(n, &a[0], &a[1],
                    na == 3 ? a[2].v.i
                    : fn == FN_LASTINDEXOF
                        ? (a[1].n == 0 ? nrunes(a[0].v.s, a[0].n) : nrunes(a[0].v.s, a[0].n) - 1)
                        : 0,
                    fn == FN_LASTINDEXOF);
  case FN_REPLACE:
    return args_are(a, na, "ssi") ? replace(c, n, a, na == 4 ? a[3].v.i : -1) : overload(n);
  case FN_SPLIT:
    return args_are(a, na, "si") ? split(c, n, &a[0], &a[1], na == 3 ? a[2].v.i : -1) : overload(n);
  case FN_SUBSTRING:
    if (!args_are(a, na, "ii"))
      return overload(n);
    return substring(c, n, &a[0], a[1].v.i, na == 3 ? a[2].v.i : nrunes(a[0].v.s, a[0].n));
  case FN_TRIM: return trim(c, n, &a[0]);
  case FN_QUOTE: return quote(c, n, &a[0]);
  case FN_FORMAT: return args_are(a, na, "l") ? format(c, n, &a[0], &a[1]) : overload(n);
  case FN_FIND:
  case FN_FINDALL: return args_are(a, na, "si") ? find(c, n, a, na, fn) : overload(n);
  default: return overload(n);
  }
}

/* The first UNKNOWN element of l (format validate()'s messages), or NULL. */
static const cel_val_t *unknown_elem(const cel_val_t *l)
{
  for (uint32_t i = 0; i < l->n; i++)
    if (l->v.l[i].t == V_UNK)
      return &l->v.l[i];
  return NULL;
}

static cel_val_t list_ext(cel_ctx_t *c, uint32_t n, int fn, const cel_val_t *a, uint32_t na)
{
  const cel_val_t *l = &a[0], *unk;
  /* The functions that read their elements' values, rather than compare or copy them. */
  bool reads = fn == FN_JOIN || fn == FN_ISSORTED || fn == FN_SUM || fn == FN_MIN || fn == FN_MAX ||
               fn == FN_SORT;
  if (reads && (unk = unknown_elem(l)) != NULL)
    return *unk;
  switch (fn) {
  case FN_JOIN: return args_are(a, na, "s") ? join(c, n, l, na == 2 ? &a[1] : NULL) : overload(n);
  case FN_SETS_CONTAINS:
  case FN_SETS_EQUIVALENT:
  case FN_SETS_INTERSECTS: return args_are(a, na, "l") ? sets(n, fn, l, &a[1]) : overload(n);
  case FN_INDEXOF:
  case FN_LASTINDEXOF:
    return na == 2 ? index_in_list(n, l, &a[1], fn == FN_LASTINDEXOF) : overload(n);
  case FN_ISSORTED: return is_sorted(n, l);
  case FN_SUM: return sum(n, l);
  case FN_MIN:
  case FN_MAX: return min_max(n, l, fn == FN_MAX);
  case FN_SLICE: return args_are(a, na, "ii") ? slice(n, l, a[1].v.i, a[2].v.i) : overload(n);
  case FN_FLATTEN:
    return args_are(a, na, "i") ? flatten(c, n, l, na == 2 ? a[1].v.i : 1) : overload(n);
  case FN_DISTINCT: return distinct(c, n, l);
  case FN_REVERSE: return reverse(c, n, l);
  case FN_SORT: return sort(c, n, l);
  case FN_FIRST:
  case FN_LAST: return end_elem(n, l, fn == FN_LAST);
  default: return overload(n);
  }
}

cel_val_t sf__cel_ext_call(cel_ctx_t *c, uint32_t n, int fn, const cel_val_t *a, uint32_t na)
{
  if (fn == FN_RANGE)
    return a[0].t == V_INT ? range(c, n, a[0].v.i) : overload(n);
  if (a[0].t == V_STR)
    return string_ext(c, n, fn, a, na);
  if (a[0].t == V_LIST)
    return list_ext(c, n, fn, a, na);
  return overload(n);
}
