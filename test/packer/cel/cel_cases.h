/*
 * Table-driven CEL cases shared by the packer-cel tests: an expression, the
 * answer expected on a device, and the helpers that compile, evaluate and
 * compare. Letters: Y match, N no match (false), E no match because of a
 * CEL runtime error (a reason is given), U unknown at run time, C does not
 * compile; with `split`, C only when DRA would refuse the expression
 * (sf_cel_prog_invalid) and S when slicefit merely does not evaluate it.
 */
#ifndef SF_TEST_CEL_CASES_H
#define SF_TEST_CEL_CASES_H

#include <stdbool.h>
#include <stddef.h>
#include "slicefit/cel.h"

typedef struct {
  const char *expr;
  char want;
} case_t;

/** The letter for `expr` (compiled into cache) on dev; `why` gets the reason. */
char cel_outcome(sf_cel_cache_t *cache, const sf_index_t *idx, const char *expr, sf_dev_id dev,
                 char *why, size_t whylen, bool split);
/** Expects each case's letter on dev. */
void cel_check(sf_cel_cache_t *cache, const sf_index_t *idx, const case_t *cs, size_t n,
               sf_dev_id dev, bool split);
/** head, then unit n times, then tail (new, the caller frees). */
char *cel_repeat(const char *head, const char *unit, int n, const char *tail);

#endif
