/*
 * The packer's demand module: one call's requests flattened, their
 * (request, firstAvailable alternative) slots with the selectors' caches,
 * the claims' constraints, and the models the demand can use. Private to
 * packer/.
 */
#ifndef SF_PACKER_PK_DEMAND_H
#define SF_PACKER_PK_DEMAND_H

#include "index_int.h"
#include "slicefit/packer.h"

#define MAXCAPS 32 /* DRA: attributes + capacities per device <= 32 */
/* Grows arr to hold `need` entries; the common case, room already, costs one compare. */
#define GROW(arr, cap, need)                            \
  do {                                                  \
    if ((need) > (cap))                                 \
      sf_xgrow(&(arr), &(cap), (need), sizeof(*(arr))); \
  } while (0)
#define SF_HOT static inline __attribute__((always_inline))

/* One flattened request. */
typedef struct {
  uint32_t claim, req;
  const sf_request_t *top;
  uint32_t slot;   /* its first slot; alternative a is slot + a */
  uint32_t nslots; /* 1, or its alternatives */
} freq_t;

/* One (request, alternative): what a device is matched against. */
typedef struct {
  uint32_t r;  /* flattened request */
  int32_t alt; /* -1: the request itself */
  const sf_request_t *s;
  const char **capnames; /* interned names of s's capacity requests (NULL: no device has it) */
  uint8_t **selc;        /* per selector: the index's per-device answers, or NULL (not cacheable) */
} slot_t;

/* A constraint being checked during the search. */
typedef struct {
  uint32_t claim;
  const sf_constraint_t *c;
  const char *attr; /* interned; NULL when no device has it */
  uint32_t n;       /* values pushed */
  const sf_attr_t *vals[64];
  uint32_t lists; /* how many of vals are list-type attributes */
  int32_t isl;
} cstate_t;

typedef struct {
  const sf_demand_t *dem;
  freq_t *fr;
  size_t nfr, frcap;
  slot_t *slot;
  size_t nslot, slotcap;
  const char **names;
  size_t nnames, namecap; /* slots' capnames */
  uint8_t **selc;
  size_t nselc, selccap; /* slots' selector caches */
  cstate_t *cs;
  size_t ncs, cscap;
  uint64_t models; /* model bits a device of which the first request can take */
  bool flexible;   /* two or more models: scarce ones are worth keeping */
} pk_demand_t;

/* Flattens `d` (borrowed until the next call) against idx. */
void sf__demand_prepare(sf_packer_t *p, sf_index_t *idx, const sf_demand_t *d);
/* Resolves every slot's selector caches (after anything that may drop them). */
void sf__demand_resolve(sf_packer_t *p);
/* Does device d match every selector of slot sl? UNKNOWN when one cannot tell. */
static inline sf_match_t sf__demand_match(sf_index_t *idx, const slot_t *sl, sf_dev_id d)
{
  const sf_request_t *s = sl->s;
  for (size_t i = 0; i < s->nselectors; i++) {
    const sf_selector_t *sel = &s->selectors[i];
    uint8_t *r = sl->selc[i];
    sf_match_t m;
    if (r != NULL) {
      if (r[d] == 0)
        r[d] = (uint8_t)(1 + sel->fn(sel->ctx, idx, d));
      m = (sf_match_t)(r[d] - 1);
    } else {
      m = sel->fn(sel->ctx, idx, d);
    }
    if (m != SF_MATCH_YES)
      return m;
  }
  return SF_MATCH_YES;
}
/* Does constraint c apply to request req (alternative alt)? */
bool sf__demand_refers(const sf_constraint_t *c, uint32_t req, int32_t alt);
/* The demand's own shapes (one per flattened request; CPU on the first); models 0 = any. */
size_t sf__demand_shapes(const sf_packer_t *p, uint64_t models, sf__shape_t *out, size_t max);
/* The slot of request r's first alternative. */
static inline slot_t *sf__demand_first(const pk_demand_t *d, size_t r)
{
  return &d->slot[d->fr[r].slot];
}
void sf__demand_dispose(pk_demand_t *d);

#endif
