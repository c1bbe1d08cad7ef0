/*
 * The filter verdicts' counts by outcome and reason class (extender/metrics.c),
 * without a server: a sentence met earlier in the call is counted in the
 * class it was given then, and that is always the class it has.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include "../../extender/ext_int.h"

static void verdict(sf_verdict_t *v, sf_fit_t fit, const char *reason)
{
  memset(v, 0, sizeof(*v));
  v->fit = fit;
  snprintf(v->reason, sizeof(v->reason), "%s", reason);
}

/* Counted one by one, each sentence classified afresh: what the counts must equal. */
static void count_plainly(uint64_t (*tab)[SF__NREASON + 1], const sf_verdict_t *v, size_t n,
                          size_t counts[3])
{
  for (size_t i = 0; i < n; i++) {
    tab[v[i].fit][sf__reason_class(&v[i])]++;
    counts[v[i].fit]++;
  }
}

Test(metrics, repeated_sentences_keep_their_class)
{
  static const char *const said[] = {
      "request gpu of claim tenants/a needs 6Gi of memory; the most free on a matching device is 2Gi",
      "no device on the node matches request gpu of claim tenants/a",
      "node has no DRA devices for claim tenants/a",
      "matching devices already have 4 sharers (policy max_sharers)",
      "needs 4 GPUs in one NVLink island; the largest free island has 2",
      "needs 2000m CPU; 1000m is free",
      "request gpu of claim tenants/a does not tolerate taint k=v:NoSchedule on 1 matching device(s)",
      "a sentence of no class",
      "the selector cannot be evaluated here",
      "request gpu of claim tenants/a needs 6Gi of memory; the most free on a matching device is 3Gi",
      "request gpu of claim tenants/a: the shared counters of the partitionable devices are used up",
  };
  const size_t nsaid = sizeof(said) / sizeof(said[0]);
  /* More distinct sentences than are remembered, in an order that revisits old ones. */
  enum { N = 600 };
  static sf_verdict_t v[N];
  unsigned x = 12345;
  for (size_t i = 0; i < N; i++) {
    x = x * 1103515245u + 12345u;
    size_t pick = (x >> 16) % (nsaid + 2);
    if (pick >= nsaid)
      verdict(&v[i], SF_FIT_YES, "");
    else
      verdict(&v[i], (x >> 8) % 5 == 0 ? SF_FIT_UNSURE : SF_FIT_NO, said[pick]);
  }
  uint64_t got[3][SF__NREASON + 1] = {{0}}, want[3][SF__NREASON + 1] = {{0}};
  size_t gc[3] = {0, 0, 0}, wc[3] = {0, 0, 0};
  sf__verdicts_count(got, v, N, gc);
  count_plainly(want, v, N, wc);
  for (int f = 0; f < 3; f++) {
    cr_assert_eq(gc[f], wc[f], "outcome %d", f);
    for (size_t c = 0; c <= SF__NREASON; c++)
      cr_assert_eq(got[f][c], want[f][c], "outcome %d class %zu: %llu, afresh %llu", f, c,
                   (unsigned long long)got[f][c], (unsigned long long)want[f][c]);
  }
  /* Every class the sentences name was reached, "other" included, and fit has no reason. */
  size_t classes = 0;
  for (size_t c = 1; c <= SF__NREASON; c++)
    classes += (got[SF_FIT_NO][c] + got[SF_FIT_UNSURE][c]) > 0;
  cr_assert_geq(classes, 9, "only %zu classes seen", classes);
  cr_assert_eq(got[SF_FIT_YES][0], gc[SF_FIT_YES]);
}
