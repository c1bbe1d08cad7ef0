/*
 * The packer's fast path: for a call of one request, of one device or of
 * N devices in one island, on a plain node, the search needs no budget,
 * and the node's verdict is remembered with the call's signature for the
 * next call alike in all but names. Private to packer/.
 */
#ifndef SF_PACKER_PK_FAST_H
#define SF_PACKER_PK_FAST_H

#include "pk_search.h"

enum { FAST_NONE = 0, FAST_SIMPLE, FAST_ISLAND };

/*
 * A node's remembered verdicts: FMEMO_WAYS of them, under as many calls'
 * signatures, so that the pods of two workloads in turn each find their
 * own (kube-scheduler interleaves the pods of the workloads it has queued).
 * The least recently used is the one replaced.
 */
enum { FMEMO_WAYS = 2 };

/* One remembered verdict. */
typedef struct {
  uint64_t version; /* the node version it holds for */
  uint64_t sig;     /* the call's signature; 0: none */
  uint64_t psig;    /* the placement's signature (pk_fast_t.psig); 0: none */
  uint8_t fit;
  uint32_t used; /* pk_fast_t.clock when last stored or served */
  double raw;    /* FIT, with the verdict's cost and sensitivities */
  double cost, sens[SF_DRIFT_TERMS + 1];
  uint32_t pk; /* FIT under psig: the device first fit took, and what it takes of it */
  sf_milli_t puse;
  stats_t st; /* NO: what the reason is made from */
  uint32_t n, clen, largest;
} fmemo_t;

/*
 * A node whose remembered verdict may serve nodes alike: by the high half of
 * the hash of its state and selectors' answers (the low half chose the
 * entry). Only a hint: what it points at is checked in full before use.
 */
typedef struct {
  uint32_t tag;
  sf_node_id node; /* -1: none */
} falike_t;

typedef struct {
  /*
   * Both true from sf_packer_create; the tests clear them to compare the
   * paths (the same answers either way). alike: on the fast path, a node
   * whose summary equals, device by device, that of a node whose
   * remembered verdict holds for this call, with the request's selectors
   * answering alike on its devices, takes that verdict, scored with its own
   * place in the node order (`shared` counts them per call).
   */
  bool on;
  bool alike;
  int kind;
  uint64_t sig; /* what a node's verdict depends on besides the node; 0: no memo */
  /*
   * What its placement depends on besides the node, when that is less: one
   * device by first fit, which neither the scoring nor the pod's CPU
   * chooses (the node's CPU is checked before). 0: none.
   */
  uint64_t psig;
  uint64_t selsig; /* the request's selectors (hnode_t selbits); 0: none */
  bool evaluating; /* in sf_packer_evaluate, where verdicts may come from the memo */
  bool replayed;   /* the last node's own remembered verdict served (the next one's likely will) */
  fmemo_t *memo;   /* FMEMO_WAYS per node, node by node */
  size_t memocap;  /* nodes */
  uint32_t clock;  /* calls prepared, for fmemo_t.used */
  falike_t *lk;
  size_t lkcap;  /* a power of two: half the index's nodes, 64 to 8,192 */
  size_t shared; /* verdicts of this call taken from a node alike */
  size_t served; /* verdicts of this call taken from the node's own memo */
} pk_fast_t;

/* Which fast path serves this call, if any, and its signature. */
void sf__fast_prepare(sf_packer_t *p);
/*
 * Brings into cache the table entry node's verdict would be looked up in
 * (the table is read at random, one node in two misses the cache without),
 * when its key is known already; a hint with no effect on any answer.
 */
void sf__fast_prefetch(const sf_packer_t *p, sf_node_id node);
/* Filters and scores one node on the fast path; false, having done nothing, when it cannot serve it. */
bool sf__fast_eval(sf_packer_t *p, sf_node_id node, sf_verdict_t *v);

#endif
