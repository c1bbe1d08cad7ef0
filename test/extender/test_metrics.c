/*
 * The filter verdicts' counts by outcome and reason class (extender/metrics.c),
 * without a server: each verdict is counted under the class named by the
 * reason code the packer made its sentence from, whatever the sentence says.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include "../../extender/ext_int.h"

static void verdict(sf_verdict_t *v, sf_fit_t fit, sf_reason_code_t code, const char *reason)
{
  memset(v, 0, sizeof(*v));
  v->fit = fit;
  v->code = code;
  snprintf(v->reason, sizeof(v->reason), "%s", reason);
}

/* Every code lands in its own class, under its own label; none in "other". */
Test(metrics, every_reason_code_lands_in_its_class)
{
  enum { N = 2 * SF_REASON_COUNT };
  sf_verdict_t v[N];
  for (int c = 0; c < SF_REASON_COUNT; c++) {
    sf_fit_t fit = c == SF_REASON_NONE ? SF_FIT_YES : SF_FIT_NO;
    /* The same sentence for every code: the class comes from the code alone. */
    verdict(&v[2 * c], fit, (sf_reason_code_t)c, "needs 6Gi of memory; the most free is 4Gi");
    verdict(&v[2 * c + 1], c == SF_REASON_NONE ? SF_FIT_YES : SF_FIT_UNSURE, (sf_reason_code_t)c, "");
  }
  uint64_t tab[3][SF__NREASON + 1] = {{0}};
  size_t counts[3] = {0, 0, 0};
  sf__verdicts_count(tab, v, N, counts);
  cr_assert_eq(counts[SF_FIT_YES], 2);
  cr_assert_eq(counts[SF_FIT_NO], SF_REASON_COUNT - 1);
  cr_assert_eq(tab[SF_FIT_YES][0], 2);
  for (int c = 1; c < SF_REASON_COUNT; c++) {
    cr_assert_eq(sf__reason_class(&v[2 * c]), (size_t)c);
    cr_assert_eq(tab[SF_FIT_NO][c], 1, "code %s", sf_reason_code_name((sf_reason_code_t)c));
    cr_assert_eq(tab[SF_FIT_UNSURE][c], 1);
  }
  cr_assert_eq(tab[SF_FIT_NO][SF__NREASON], 0, "a coded reason was counted as other");
  sf__buf_t b = {0};
  sf__metrics_verdicts(&b, (const uint64_t(*)[SF__NREASON + 1]) tab);
  for (int c = 1; c < SF_REASON_COUNT; c++) {
    char line[160];
    snprintf(line, sizeof line, "slicefit_filter_verdicts_total{outcome=\"no\",reason=\"%s\"} 1\n",
             sf_reason_code_name((sf_reason_code_t)c));
    cr_assert(strstr(b.p, line), "no line %s in:\n%s", line, b.p);
  }
  cr_assert(strstr(b.p, "{outcome=\"no\",reason=\"other\"} 0\n"), "%s", b.p);
  cr_assert(strstr(b.p, "{outcome=\"fit\",reason=\"none\"} 2\n"), "%s", b.p);
  sf__buf_dispose(&b);
}

/* A NO verdict without a code (never made by the packer) is "other", not a guess from its text. */
Test(metrics, uncoded_verdict_is_other)
{
  sf_verdict_t v;
  verdict(&v, SF_FIT_NO, SF_REASON_NONE, "matching devices already have 4 sharers");
  cr_assert_eq(sf__reason_class(&v), SF__NREASON);
  verdict(&v, SF_FIT_NO, SF_REASON_COUNT, "x");
  cr_assert_eq(sf__reason_class(&v), SF__NREASON);
}
