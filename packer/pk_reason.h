/*
 * The packer's reasons: one sentence for a node that does not fit, from
 * the candidate statistics of the search. Sentences are formatted once per
 * call and kind (the failing nodes of one call mostly fail alike).
 * Private to packer/.
 */
#ifndef SF_PACKER_PK_REASON_H
#define SF_PACKER_PK_REASON_H

#include "pk_search.h"

/* The kinds of sentence are the public reason codes (slicefit/packer.h). */
enum {
  R_NODEVS = SF_REASON_NO_DEVICES,
  R_NOMATCH = SF_REASON_NO_MATCH,
  R_TAINT = SF_REASON_TAINT,
  R_NOCAP = SF_REASON_NO_CAPACITY,
  R_SHORT = SF_REASON_CAPACITY_SHORT,
  R_SHARERS = SF_REASON_SHARERS,
  R_COUNTERS = SF_REASON_COUNTERS,
  R_FREE = SF_REASON_DEVICE_COUNT,
  R_ISLAND = SF_REASON_ISLAND,
  R_LIMIT = SF_REASON_CLAIM_LIMIT,
  R_UNKNOWN = SF_REASON_SELECTOR,
  R_CONSTRAINT = SF_REASON_CONSTRAINT,
  R_TOGETHER = SF_REASON_TOGETHER,
  R_BUDGET = SF_REASON_SEARCH_BUDGET,
  R_CPU = SF_REASON_NODE_CPU,
  R_MEMORY = SF_REASON_NODE_MEMORY
};

#define NSAY 16
typedef struct {
  uint64_t stamp;
  int kind;
  size_t r;
  int64_t a, b, c;
  char text[SF_REASON_MAX];
} say_t;

typedef struct {
  say_t says[NSAY];
  size_t nsay;
  bool off; /* callers that read no reason: verdicts only, nothing formatted */
  int last; /* the kind of the reason said last (set even when off): the verdict's code */
} pk_reason_t;

/* Records `kind` as the reason of the node being judged (for sentences made without say). */
void sf__reason_mark(sf_packer_t *p, int kind);

/* Writes reason `kind` about request r with numbers a, b, c (memoised for the call). */
void sf__reason_say(sf_packer_t *p, int kind, size_t r, int64_t a, int64_t b, int64_t c, char *out,
                    size_t len);
/*
 * Explains why request r (its first alternative) cannot be placed, from its
 * statistics, the node's device count and its candidate count. False if
 * the request alone could be.
 */
bool sf__reason_request(sf_packer_t *p, size_t r, const stats_t *st, size_t ndevs, size_t clen,
                        char *out, size_t len);
/* Fills v (NO or UNSURE) for a search that ended with rc on the current node. */
void sf__reason_fail(sf_packer_t *p, int rc, sf_verdict_t *v);

#endif
