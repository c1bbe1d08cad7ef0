/* The packer-cel tests' table helpers (cel_cases.h). */
#include "cel_cases.h"
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

char cel_outcome(sf_cel_cache_t *cache, const sf_index_t *idx, const char *expr, sf_dev_id dev,
                 char *why, size_t whylen, bool split)
{
  const sf_cel_prog_t *p = sf_cel_compile(cache, expr);
  why[0] = '\0';
  sf_match_t m = sf_cel_eval(p, idx, dev, why, whylen);
  if (sf_cel_prog_error(p) != NULL) {
    cr_assert_eq(m, SF_MATCH_UNKNOWN);
    return !split || sf_cel_prog_invalid(p) ? 'C' : 'S';
  }
  if (m == SF_MATCH_YES)
    return 'Y';
  if (m == SF_MATCH_UNKNOWN)
    return 'U';
  return why[0] ? 'E' : 'N';
}

void cel_check(sf_cel_cache_t *cache, const sf_index_t *idx, const case_t *cs, size_t n,
               sf_dev_id dev, bool split)
{
  for (size_t i = 0; i < n; i++) {
    char why[256];
    char got = cel_outcome(cache, idx, cs[i].expr, dev, why, sizeof why, split);
    cr_expect_eq(got, cs[i].want, "%s: want %c, got %c (%s)", cs[i].expr, cs[i].want, got, why);
  }
}

char *cel_repeat(const char *head, const char *unit, int n, const char *tail)
{
  size_t len = strlen(head) + strlen(unit) * (size_t)n + strlen(tail) + 1;
  char *s = malloc(len);
  cr_assert_not_null(s);
  strcpy(s, head);
  for (int i = 0; i < n; i++)
    strcat(s, unit);
  strcat(s, tail);
  return s;
}
