/*
 * Doubles as format() prints them in the Kubernetes base environment (the
 * strings extension at version 2, cel-go's first formatter, locale en_US):
 *
 * - %s prints a double as Go's fmt "%g" does (Double's conversion to
 *   string): the shortest digits that read back as the same double, in
 *   exponent form ("1e+06", "1.5e-07") when the decimal exponent is below -4
 *   or at least 6, else plainly ("56.8", "123456").
 * - %f and %.Nf print through golang.org/x/text's message printer with en_US
 *   conventions. Where that printer and plain C formatting could differ the
 *   answer is unknown: a value of 1000 or more (the locale groups thousands),
 *   NaN and the infinities (printed "NaN", "∞"), a negative value that rounds
 *   to zero, a precision past 15, and a value whose shortest decimal is
 *   exactly half-way at the last printed digit (x/text may round the decimal
 *   half-to-even where C rounds the binary value). Elsewhere both round to
 *   the nearest decimal and agree.
 * - %e is unknown. cel-go hands the clause to x/text's printer with the
 *   precision as a width ("%6e"), which prints six decimals and a
 *   superscript exponent, "1.052033 × 10⁰³"; x/text's commit 221d88c
 *   (golang/go#71428, January 2025) dropped the narrow no-break spaces
 *   around the ×, and which side of it an API server was built on is not
 *   fixed by its minor version (patch releases move x/text).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h> /* strtod */
#include <string.h>
#include "cel_int.h"

/*
 * The shortest decimal digits of finite x that read back as x: digits into d
 * (no sign, no point, at most 17), their count in *nd, and the decimal
 * exponent of the first digit in *exp (x = 0.d * 10^(exp + 1)).
 */
static void shortest(double x, char d[18], int *nd, int *exp)
{
  char buf[40];
  for (int p = 0; p < 17; p++) {
    snprintf(buf, sizeof buf, "%.*e", p, x);
    if (strtod(buf, NULL) == x)
      break;
  }
  const char *s = buf + (buf[0] == '-');
  int n = 0;
  for (; *s != 'e'; s++)
    if (*s != '.')
      d[n++] = *s;
  d[n] = '\0';
  *nd = n;
  int e = 0;
  for (const char *q = s + 2; *q; q++)
    e = e * 10 + (*q - '0');
  *exp = s[1] == '-' ? -e : e;
}

long sf__cel_fmt_double(char verb, int prec, double x, char *o, size_t room)
{
  if (!isfinite(x) || room < 64)
    return -1;
  char d[18];
  int nd, exp;
  shortest(x, d, &nd, &exp);
  if (verb == 's') {
    if (exp < -4 || exp >= 6)
      return snprintf(o, room, "%.*e", nd - 1, x);
    size_t len = 0;
    if (signbit(x))
      o[len++] = '-';
    int dp = exp + 1; /* digits before the point */
    if (dp <= 0) {
      o[len++] = '0';
      o[len++] = '.';
      for (int i = 0; i < -dp; i++)
        o[len++] = '0';
      memcpy(o + len, d, (size_t)nd);
      len += (size_t)nd;
    } else {
      for (int i = 0; i < dp; i++)
        o[len++] = i < nd ? d[i] : '0';
      if (nd > dp) {
        o[len++] = '.';
        memcpy(o + len, d + dp, (size_t)(nd - dp));
        len += (size_t)(nd - dp);
      }
    }
    o[len] = '\0';
    return (long)len;
  }
  if (verb != 'f' || prec < 0 || prec > 15 || fabs(x) >= 1000)
    return -1;
  /* Half-way in decimal: the shortest digits end in a 5 just past the last printed one. */
  if (x != 0 && nd - (exp + 1) == prec + 1 && d[nd - 1] == '5')
    return -1;
  int len = snprintf(o, room, "%.*f", prec, x);
  if (o[0] == '-' && strspn(o + 1, "0.") == (size_t)len - 1)
    return -1; /* "-0.00": x/text's sign of a negative zero is not known */
  return len;
}
