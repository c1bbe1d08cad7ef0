/*
 * The packer's node views: per node, a compact summary of its devices
 * (hdev_t, contiguous) rebuilt from the index when the node's version moves.
 * Feasibility and scoring read every node through it, so each rule exists
 * once; only what a summary does not hold (several capacities, taints,
 * counter uses) is read from the index's device record. Private to packer/.
 */
#ifndef SF_PACKER_PK_VIEW_H
#define SF_PACKER_PK_VIEW_H

#include <stddef.h>
#include <string.h>
#include "index_int.h"
#include "slicefit/packer.h"

#define HD_GPU 1u       /* counts in fragmentation */
#define HD_SHARED 2u    /* multi-allocatable */
#define HD_IDLE 4u      /* no holder */
#define HD_MEASURED 8u  /* shared with a primary capacity: a pick lowers its free share */
#define HD_TAINTED 16u  /* has taints: read them from the index */
#define HD_COUNTERS 32u /* uses shared counters */
#define HD_CAPS 64u     /* capacities not in one class: read them from the index */
#define HD_WHOLE 128u   /* shared, but held whole by a result without shareID: taken */

/*
 * Everything before `dev` is the device's state, with no padding (`spare`
 * is 0), so that two devices compare in one memcmp (sf__view_same_dev).
 */
typedef struct {
  sf_milli_t capfree; /* free amount of the only capacity (cls >= 0) */
  sf_milli_t fa;      /* free amount of the primary capacity; INT64_MAX: no primary, idle */
  sf_milli_t pval;    /* the primary capacity's value (0: none) */
  int32_t fp;         /* free share, per-mille */
  uint32_t holders;
  int32_t cls;    /* capacity class of the only capacity; -1: none, or HD_CAPS */
  int16_t island; /* -1: its own */
  int8_t prim;    /* primary capacity's index, or -1 */
  uint8_t ncaps;
  uint8_t nneed; /* entries its needs take in a candidate list: ncaps, at least 1 */
  uint8_t model_bit, fl, spare;
  sf_dev_id dev;
} hdev_t;
_Static_assert(offsetof(hdev_t, dev) == 44 && sizeof(hdev_t) == 48, "hdev_t: no padding");

/* A capacity class: devices whose only capacity has the same name, total and request policy. */
typedef struct {
  sf__cap_t cap; /* valid[] owned */
  bool shared;
} hcls_t;

/* One shape's FGD statistics on a node: Σ fp of GPUs too small, hosts, island counts. */
typedef struct {
  int64_t f; /* F_n(m): what the shape finds unusable on the node */
  int32_t small, nh;
  int32_t ub;             /* F_n(m)'s idle GPUs the free CPU cannot feed (score.c, unfed) */
  int16_t bi, bi2, argbi; /* best and second-best hosts in one island, and which island */
  int16_t ns1;            /* hosts in no island */
  int16_t ni;             /* hosts that are idle and hold one pod of the shape, no more */
} fstat_t;                /* 32 bytes: a node has far fewer than 32,768 devices */

#define NISL_IN 8 /* islands a summary holds without an allocation */

typedef struct {
  uint64_t version; /* node version it was built from; 0: never */
  hdev_t *d;
  uint32_t n, cap;
  int64_t fneed;       /* fs's free CPU that leaves no GPU unfed, before or after (score.c) */
  int64_t cpu_free;    /* -1: not tracked */
  int64_t total, used; /* Σ fp and Σ (1000 - fp) over GPUs */
  uint32_t ngpu;
  bool plain;      /* no taints, counters or extra capacities: the fast path may serve it */
  uint16_t *isize; /* per island: devices (owned past NISL_IN islands; see sf__view_isize) */
  uint8_t *iheld;  /* per island: 1 when a device of it has a holder */
  uint32_t nisl, islcap;
  uint16_t isize_in[NISL_IN];
  uint8_t iheld_in[NISL_IN];
  uint64_t shash;               /* hash of the state sf__view_same compares */
  uint64_t selsig, selbits;     /* the selectors selsig (pk_fast_t) answer selbits, 2 bits a device */
  uint64_t fversion, shapehash; /* fs is for this version and the mix's shapes */
  uint64_t mixhash;             /* fb is for this mix (shapes and weights) */
  double fb;                    /* F(before) = Σ q fs[i].f */
  fstat_t *fs;
  size_t fscap;
} hnode_t;

typedef struct {
  hnode_t *hn;
  size_t hncap;
  uint64_t serial; /* index the summaries describe */
  hcls_t *cls;
  size_t ncls, clscap;
} pk_view_t;

/* sf__view_node when the summary must be (re)built. */
hnode_t *sf__view_build(sf_packer_t *p, sf_node_id node);
/*
 * Are two nodes' summaries the same state, device by device in order, and
 * so, for any call, the same verdict but for their names and node order?
 * Plain nodes only (no device read from the index), as the fast path's.
 */
bool sf__view_same(const hnode_t *a, const hnode_t *b);
void sf__view_dispose(pk_view_t *v);

/* Free share in per-mille of `f` free out of `v`. */
static inline int32_t sf__permille(sf_milli_t f, sf_milli_t v)
{
  if (v <= 0 || f <= 0)
    return 0;
  if (f >= v)
    return 1000;
  return (int32_t)(f > INT64_MAX / 1000 ? f / (v / 1000) : f * 1000 / v);
}

/* Two devices in the same state: the same needs, availability and score, wherever they are. */
static inline bool sf__view_same_dev(const hdev_t *a, const hdev_t *b)
{
  return !(a->fl & HD_CAPS) && memcmp(a, b, offsetof(hdev_t, dev)) == 0;
}

/* Per island: its devices; and whether one of them has a holder. */
static inline const uint16_t *sf__view_isize(const hnode_t *h)
{
  return h->islcap > NISL_IN ? h->isize : h->isize_in;
}
static inline const uint8_t *sf__view_iheld(const hnode_t *h)
{
  return h->islcap > NISL_IN ? h->iheld : h->iheld_in;
}

/* Is island isl whole (two devices or more) and unheld? */
static inline bool sf__view_intact(const hnode_t *h, int32_t isl)
{
  return isl >= 0 && (uint32_t)isl < h->nisl && sf__view_isize(h)[isl] >= 2 &&
         !sf__view_iheld(h)[isl];
}

/* The node's summary, rebuilt when its version moved. Borrowed until the node changes. */
static inline hnode_t *sf__view_node(sf_packer_t *p, sf_node_id node, const sf_index_t *idx,
                                     pk_view_t *v)
{
  if (v->serial == idx->serial && (size_t)node < v->hncap &&
      v->hn[node].version == idx->nodes[node].version)
    return &v->hn[node];
  return sf__view_build(p, node);
}

#endif
