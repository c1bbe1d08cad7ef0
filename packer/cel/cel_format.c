/*
 * The Kubernetes format library (k8s.io/apiserver/pkg/cel/library/format.go,
 * in the base environment from 1.31): format.named(name) is an optional
 * format, format.dns1123Label() and the twelve others are formats, and
 * <format>.validate(s) is optional.none() when s is valid, else an optional
 * list of error messages.
 *
 * The rules are apimachinery's (k8s.io/apimachinery/pkg/util/validation):
 * a DNS-1123 label is [a-z0-9]([-a-z0-9]*[a-z0-9])? of at most 63 bytes, a
 * DNS-1123 subdomain dot-separated labels of at most 253 bytes, a DNS-1035
 * label a label that starts with a letter, a qualified name an optional
 * subdomain prefix and '/' before ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]
 * of at most 63 bytes, a label value the same name or empty. The prefix
 * forms first mask a trailing dash (the last two bytes become "a", as
 * apimachinery's maskTrailingDash does). uri is url.ParseRequestURI's
 * check (isURL), uuid kube-openapi's pattern (32 hex digits, a dash allowed
 * between the groups, any case), byte govalidator's base64 pattern. date and
 * datetime are kube-openapi strfmt's IsDate (Go's time.Parse with layout
 * "2006-01-02") and IsDateTime (a date, a 't', then a clock matched by a
 * pattern; not ParseDateTime's layouts), written out below.
 *
 * Each rule that fails adds one message, as upstream, so the list's size is
 * known; the messages' wording has changed between Kubernetes releases, so
 * each element is UNKNOWN and an expression that reads one is unsure, except
 * date's and datetime's, which format.go gives as the fixed texts
 * "invalid date" and "invalid datetime". A prefix form of the text "-" is
 * unsure (releases before the length guard in maskTrailingDash panicked on
 * it).
 *
 * Cost: validate() charges what Kubernetes' estimator does,
 * ceil((1 + len) / 10) * ceil(maxRegexSize / 4), with the library's regex
 * sizes (30, 60, 40, and for uuid its pattern's 70); uri, byte, date and
 * datetime charge the string factor alone (a lower bound).
 */
#include <assert.h>
#include <string.h>
#include "cel_int.h"

enum {
  F_LABEL,
  F_SUBDOMAIN,
  F_1035,
  F_QNAME,
  F_LABEL_PREFIX,
  F_SUBDOMAIN_PREFIX,
  F_1035_PREFIX,
  F_LABEL_VALUE,
  F_URI,
  F_UUID,
  F_BYTE,
  F_DATE,
  F_DATETIME,
  F__COUNT
};

/*
 * message: the one message upstream gives for an invalid string where it is
 * a fixed text (format.go's date and datetime entries), else NULL.
 */
static const struct {
  const char *name;
  uint8_t regex_size;
  const char *message;
} formats[F__COUNT] = {
    [F_LABEL] = {"dns1123Label", 30},
    [F_SUBDOMAIN] = {"dns1123Subdomain", 60},
    [F_1035] = {"dns1035Label", 30},
    [F_QNAME] = {"qualifiedName", 60},
    [F_LABEL_PREFIX] = {"dns1123LabelPrefix", 30},
    [F_SUBDOMAIN_PREFIX] = {"dns1123SubdomainPrefix", 60},
    [F_1035_PREFIX] = {"dns1035LabelPrefix", 30},
    [F_LABEL_VALUE] = {"labelValue", 40},
    [F_URI] = {"uri", 4},
    [F_UUID] = {"uuid", 70},
    [F_BYTE] = {"byte", 4},
    [F_DATE] = {"date", 4, "invalid date"},
    [F_DATETIME] = {"datetime", 4, "invalid datetime"},
};

int sf__cel_format_id(const char *name, size_t n)
{
  for (int k = 0; k < F__COUNT; k++)
    if (strlen(formats[k].name) == n && memcmp(formats[k].name, name, n) == 0)
      return k;
  return -1;
}

static bool lower_alnum(char c)
{
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool alnum(char c)
{
  return lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* [a-z0-9]([-a-z0-9]*[a-z0-9])? (letter_first: [a-z] first, DNS-1035). */
static bool label(const char *s, size_t n, bool letter_first)
{
  if (n == 0 || !lower_alnum(s[0]) || (letter_first && s[0] <= '9') || !lower_alnum(s[n - 1]))
    return false;
  for (size_t i = 1; i + 1 < n; i++)
    if (!lower_alnum(s[i]) && s[i] != '-')
      return false;
  return true;
}

static bool subdomain(const char *s, size_t n)
{
  size_t start = 0;
  for (size_t i = 0; i <= n; i++) {
    if (i < n && s[i] != '.')
      continue;
    if (!label(s + start, i - start, false))
      return false;
    start = i + 1;
  }
  return true;
}

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9] */
static bool qname(const char *s, size_t n)
{
  if (n == 0 || !alnum(s[0]) || !alnum(s[n - 1]))
    return false;
  for (size_t i = 1; i + 1 < n; i++)
    if (!alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
      return false;
  return true;
}

/* apimachinery's IsQualifiedName: how many messages it returns. */
static int qualified_name_errors(const char *s, size_t n)
{
  const char *slash = memchr(s, '/', n);
  int errs = 0;
  if (slash != NULL) {
    size_t pn = (size_t)(slash - s);
    if (memchr(slash + 1, '/', n - pn - 1) != NULL)
      return 1; /* more than one '/': one message, nothing else checked */
    if (pn == 0)
      errs++;
    else
      errs += (pn > 253) + !subdomain(s, pn);
    s = slash + 1;
    n -= pn + 1;
  }
  return errs + (n == 0) + (n > 63) + !qname(s, n);
}

static bool hex(char c)
{
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* (?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$ */
static bool uuid(const char *s, size_t n)
{
  static const uint8_t groups[] = {8, 4, 4, 4, 12};
  size_t i = 0;
  for (size_t g = 0; g < sizeof groups; g++) {
    if (g > 0 && i < n && s[i] == '-')
      i++;
    for (uint8_t k = 0; k < groups[g]; k++, i++)
      if (i >= n || !hex(s[i]))
        return false;
  }
  return i == n;
}

/* Groups of four of [A-Za-z0-9+/], the last one ending in "==" or "=" or neither; not empty. */
static bool base64(const char *s, size_t n)
{
  size_t pad = 0;
  while (pad < n && pad < 3 && s[n - 1 - pad] == '=')
    pad++;
  if (n == 0 || n % 4 != 0 || pad > 2)
    return false;
  for (size_t i = 0; i < n - pad; i++)
    if (!alnum(s[i]) && s[i] != '+' && s[i] != '/')
      return false;
  return true;
}

/* ---- date and datetime (kube-openapi strfmt's IsDate and IsDateTime) ---- */

static bool digit(char c)
{
  return c >= '0' && c <= '9';
}

/* The two digits at s[0..2) as a number, or -1. */
static int two_digits(const char *s)
{
  return digit(s[0]) && digit(s[1]) ? (s[0] - '0') * 10 + (s[1] - '0') : -1;
}

/* Gregorian, as Go's time package counts days: year 0 is a leap year. */
static int days_in(int month, int year)
{
  static const uint8_t days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
  return days[month - 1] + (month == 2 && leap);
}

/*
 * time.Parse("2006-01-02", s): "2006" takes exactly four digits, "01" and
 * "02" exactly two (getnum with fixed width), text after the day is an
 * error, the month is 1..12 and the day 1..the month's length.
 */
static bool date(const char *s, size_t n)
{
  if (n != 10 || s[4] != '-' || s[7] != '-')
    return false;
  int hi = two_digits(s), lo = two_digits(s + 2), month = two_digits(s + 5), day = two_digits(s + 8);
  if (hi < 0 || lo < 0 || month < 1 || month > 12 || day < 1)
    return false;
  return day <= days_in(month, hi * 100 + lo);
}

static bool is_t(char c)
{
  return c == 't' || c == 'T';
}

/*
 * The time after the 't', lowercased as IsDateTime reads it, matched
 * against ^HH:MM:SS(.[0-9]+)?(z|[+-]HH:MM)$ with HH <= 23, MM <= 59 and
 * SS <= 59 compared as text; the zone's digits are not range-checked. The
 * regexp's '.' is one rune (an invalid byte is one, as Go decodes UTF-8)
 * other than a newline, so "10:00:00,5z" and "10:00:0012z" match too.
 * Lowercasing changes no byte the pattern tests except 'Z', and keeps the
 * number of runes.
 */
static bool clock(const char *s, size_t n)
{
  if (n < 9 || s[2] != ':' || s[5] != ':')
    return false;
  int h = two_digits(s), m = two_digits(s + 3), sec = two_digits(s + 6);
  if (h < 0 || h > 23 || m < 0 || m > 59 || sec < 0 || sec > 59)
    return false;
  size_t zone;
  if (s[n - 1] == 'z' || s[n - 1] == 'Z')
    zone = 1;
  else if (n >= 14 && (s[n - 6] == '+' || s[n - 6] == '-') && two_digits(s + n - 5) >= 0 &&
           s[n - 3] == ':' && two_digits(s + n - 2) >= 0)
    zone = 6;
  else
    return false;
  const char *frac = s + 8;
  size_t fn = n - zone - 8, len;
  if (fn == 0)
    return true;
  if (frac[0] == '\n')
    return false;
  /* Digits and zones are ASCII, so a rune cannot run past the fraction. */
  sf__cel_rune_at((const unsigned char *)frac, fn, &len);
  if (len >= fn)
    return false;
  for (size_t i = len; i < fn; i++)
    if (!digit(frac[i]))
      return false;
  return true;
}

/*
 * IsDateTime: at least 4 bytes; split at every 't' or 'T' (the text is
 * lowercased first), the part before the first must be a date and the part
 * between the first and the second (or the end) a clock; any further parts
 * are never read, so "2024-01-01T10:00:00ZTanything" is valid.
 */
static bool datetime(const char *s, size_t n)
{
  if (n < 4)
    return false;
  const char *t = s;
  while (t < s + n && !is_t(*t))
    t++;
  if (t == s + n || !date(s, (size_t)(t - s)))
    return false;
  const char *end = ++t;
  while (end < s + n && !is_t(*end))
    end++;
  return clock(t, (size_t)(end - t));
}

/* How many messages the format's rules give for s[0..n); -1 unknown. */
static int errors(cel_ctx_t *c, uint32_t node, int f, const cel_val_t *s, cel_val_t *bad)
{
  const char *t = s->v.s;
  size_t n = s->n;
  if (f == F_LABEL_PREFIX || f == F_SUBDOMAIN_PREFIX || f == F_1035_PREFIX) {
    if (n == 1 && t[0] == '-') {
      *bad = sf__cel_unk(node, "a prefix format of \"-\": Kubernetes releases differ");
      return -1;
    }
    if (n > 1 && t[n - 1] == '-') {
      char *masked = sf__cel_scratch(c, n - 1);
      if (masked == NULL) {
        *bad = sf__cel_unk(node, "string scratch space exhausted");
        return -1;
      }
      memcpy(masked, t, n - 2);
      masked[n - 2] = 'a';
      t = masked;
      n--;
    }
    f = f == F_LABEL_PREFIX ? F_LABEL : f == F_SUBDOMAIN_PREFIX ? F_SUBDOMAIN : F_1035;
  }
  switch (f) {
  case F_LABEL:
  case F_1035: return (n > 63) + !label(t, n, f == F_1035);
  case F_SUBDOMAIN: return (n > 253) + !subdomain(t, n);
  case F_QNAME: return qualified_name_errors(t, n);
  case F_LABEL_VALUE: return (n > 63) + (n > 0 && !qname(t, n));
  case F_UUID: return !uuid(t, n);
  case F_BYTE: return !base64(t, n);
  case F_URI: {
    cel_val_t ok = sf__cel_url_call(c, node, FN_ISURL, s, 1);
    if (BAD(ok)) {
      *bad = ok;
      return -1;
    }
    return !ok.v.b;
  }
  case F_DATE: return !date(t, n);
  case F_DATETIME: return !datetime(t, n);
  default: assert(0 && "unknown format"); return -1;
  }
}

static cel_val_t validate(cel_ctx_t *c, uint32_t node, int f, const cel_val_t *s)
{
  cel_val_t bad;
  c->steps += (uint32_t)(((s->n + 1) + 9) / 10) * (uint32_t)((formats[f].regex_size + 3) / 4);
  int errs = errors(c, node, f, s, &bad);
  if (errs < 0)
    return bad;
  if (errs == 0) {
    cel_val_t none = {.t = V_NONE};
    return none;
  }
  cel_val_t *l = sf__cel_reserve(c, (size_t)errs);
  if (l == NULL)
    return sf__cel_unk(node, "list arena exhausted");
  const char *m = formats[f].message;
  for (int i = 0; i < errs; i++)
    l[i] = m != NULL
               ? sf__cel_str(m, strlen(m))
               : sf__cel_unk(node, "the text of format messages differs between Kubernetes releases");
  cel_val_t r = {.t = V_LIST, .flags = CV_OPT, .n = (uint32_t)errs, .v.l = l};
  return r;
}

cel_val_t sf__cel_format_call(cel_ctx_t *c, uint32_t node, int fn, const cel_val_t *a, uint32_t na)
{
  cel_val_t f = {.t = V_FORMAT};
  if (fn == FN_FMT_CONST) {
    f.v.i = c->p->nodes[node].v.i;
    return f;
  }
  if (fn == FN_FMT_NAMED) {
    if (na != 1 || a[0].t != V_STR)
      return sf__cel_err(node, "no such overload");
    f.v.i = sf__cel_format_id(a[0].v.s, a[0].n);
    cel_val_t none = {.t = V_NONE};
    return f.v.i < 0 ? none : (f.flags = CV_OPT, f);
  }
  if (na != 2 || a[0].t != V_FORMAT || a[1].t != V_STR)
    return sf__cel_err(node, "no such overload");
  return validate(c, node, (int)a[0].v.i, &a[1]);
}
