/*
 * The packer's search: candidates of every slot on one node, their
 * availability against a tentative overlay of what earlier picks of the
 * same placement consumed, the packer's preference order, and the
 * placements: one device (every candidate scored), N devices of one island
 * (grouped by island, no budget), and the general depth-first search with
 * constraints under the policy's budget. Private to packer/.
 */
#ifndef SF_PACKER_PK_SEARCH_H
#define SF_PACKER_PK_SEARCH_H

#include "pk_demand.h"
#include "pk_score.h"
#include "pk_view.h"

enum {
  SEARCH_FAIL = 0,
  SEARCH_OK = 1,
  SEARCH_BUDGET = 2,
  SEARCH_LIMIT = 3 /* within the search only: a claim past DRA's limit of results */
};

/* A candidate device of one slot on the current node. */
typedef struct {
  uint32_t k;     /* index in the node's device list */
  uint32_t noff;  /* its needs in pk_search_t.needs (the device's capacities, at least one) */
  int16_t island; /* the device's, -1: its own */
  bool avail;     /* available with nothing tentative */
  bool blocked;   /* All only: a taint the request does not tolerate; never available */
} cand_t;

/* A candidate with its preference key, while sorting. */
typedef struct {
  int64_t key; /* the packer's preference, lower first */
  cand_t c;
} keyed_t;

/* Per-slot candidate statistics, for reasons. */
typedef struct {
  uint32_t match, unknown, tainted, shape, busy, short_cap, sharers, counters;
  /* The capacity found short first (interned, NULL: none), what a device would consume of it, and
   * the most free of it on a matching device. */
  const char *capname;
  sf_milli_t short_need, best_free;
  const sf__counter_t *counter; /* the shared counter found used up first */
  const sf_taint_t *taint;
  uint32_t navail;   /* candidates available with nothing tentative */
  uint32_t nblocked; /* candidates blocked by a taint (All keeps them in its set) */
} stats_t;

typedef struct {
  int32_t pool;
  uint32_t counter;
  sf_milli_t v;
} tcount_t;

/* Capacity rounding of one class for one slot, memoised for the call. */
typedef struct {
  uint64_t stamp;
  uint32_t slot;
  sf_milli_t need;
  bool ok;
} hmemo_t;

typedef struct {
  hnode_t *h; /* the node being searched */
  /* the tentative overlay */
  uint32_t *tcount;
  size_t tccap; /* tentative holders per node device */
  sf_milli_t *tcap;
  size_t tcapcap; /* tentative consumption [k*MAXCAPS + c] */
  tcount_t *tcnt;
  size_t ntcnt, tcntcap; /* tentative counter use */
  /* candidates, slot by slot */
  cand_t *cands;
  size_t ncands, candcap;
  sf_milli_t *needs;
  size_t nneeds, needcap;
  size_t *coff, *clen;
  size_t coffcap, clencap;
  stats_t *st;
  size_t stcap;
  keyed_t *keyed;
  size_t keyedcap; /* sorting scratch */
  hmemo_t *memo;
  size_t memocap; /* per capacity class */
  /* the placement */
  sf_result_t *res;
  size_t nres, rescap;
  sf_milli_t *rcons;
  size_t rconscap; /* consumed arrays of results [i*MAXCAPS] */
  uint32_t *rk;
  size_t rkcap; /* node device index of each result */
  pick_t *picks;
  size_t pickcap; /* the results, as the scoring kernel takes them */
  uint32_t *icnt;
  size_t icntcap; /* per island, scratch */
  size_t steps;
  bool unknown;             /* a selector could not tell, or a constraint (unknown_attr) */
  const char *unknown_attr; /* a constraint's attribute some device has with no readable value */
  bool taken;               /* the results are in the overlay (sf__search_end takes them back) */
} pk_search_t;

/* Starts a node: empty overlay, no candidates, no results. */
void sf__search_begin(sf_packer_t *p, hnode_t *h);
/* Takes back the overlay of the results, keeping the results themselves. */
void sf__search_end(sf_packer_t *p);
/*
 * Gathers slot's candidates on the node, in node order, with their needs,
 * availability and statistics; with `stop`, stops at the first available
 * one (first fit needs no more unless the node fails).
 */
void sf__search_gather(sf_packer_t *p, uint32_t slot, bool stop);
/* Every slot's candidates, each in the policy's order. */
void sf__search_gather_all(sf_packer_t *p);
/* Sorts slot's candidates in the packer's preference (device_choice packer only). */
void sf__search_order(sf_packer_t *p, uint32_t slot);
/*
 * Does a one-device placement take the device that scores best (device
 * choice packer under fgd, FGD's own pick of a GPU)? Otherwise it takes the
 * first in the packer's preference (packer under the other strategies) or
 * in node order (first fit): a pick that does not depend on the mix.
 */
bool sf__search_by_score(const sf_packer_t *p);
/* One device for slot 0: as sf__search_by_score says. Sets *raw. */
int sf__search_one(sf_packer_t *p, double *raw);
/*
 * `want` devices of slot 0 in one island (no other constraint, no counters
 * on the node). Nothing is searched after it, so its results are not put in
 * the overlay. O(candidates + islands).
 */
int sf__search_island(sf_packer_t *p, uint32_t want);
/*
 * How many devices slot needs on the node (All: each of its candidates), or
 * 0 when it cannot have them: no candidate, or fewer available than its count.
 */
uint32_t sf__search_want(const sf_packer_t *p, uint32_t slot);
/* The general search over every request and constraint, within the budget. */
int sf__search_all(sf_packer_t *p);
/* The largest number of slot's available candidates in one island (singletons count 1). */
uint32_t sf__search_largest(sf_packer_t *p, uint32_t slot);
/* Scores the placement in res[0..nres) on the current node. */
double sf__search_score(sf_packer_t *p);
void sf__search_dispose(pk_search_t *s);

#endif
