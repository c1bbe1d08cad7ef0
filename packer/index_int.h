/*
 * The index's data layout, shared by the index's files (index*.c, which
 * maintain it; index_priv.h says which file keeps which part) and the
 * packer's (which read it on the hot path). Not a public header.
 *
 *   nodes[]  ── devs (ids, in the in-tree allocator's order), pools (ids), mirrored
 *               devices (ids of devices homed on another node that this node also offers)
 *   pools[]  ── (driver, pool) on one node; its shared counter sets
 *   devs[]   ── attributes, capacities (value, free), counter uses, taints,
 *               holders, and policy-derived facts (model bit, island, primary
 *               capacity)
 *   allocs[] ── holder, node, CPU/memory, picks with consumed amounts
 *
 * Invariants (checked by sf_index_validate):
 *   cap.free == cap.value - Σ consumed by live allocations (shared devices);
 *   exclusive devices have holders <= 1 unless forced, and then free == 0;
 *   wholes == the picks of live allocations that hold the device whole;
 *   counter.free == counter.value - Σ uses of devices with holders > 0;
 *   node cpu_used/mem_used == Σ allocations on the node;
 *   d is in nodes[m].mdevs exactly when m is in devs[d].mirrors.
 */
#ifndef SF_PACKER_INDEX_INT_H
#define SF_PACKER_INDEX_INT_H

#include "slicefit/index.h"
#include "slicefit/demand.h"
#include "slicefit/policy.h"
#include "slicefit/map.h"

#include "util.h"

typedef struct {
  const char *name; /* interned, fully qualified */
  sf_milli_t value, free;
  bool has_policy;
  sf_request_policy_t policy; /* valid[] owned */
} sf__cap_t;

typedef struct {
  uint32_t counter; /* index into the pool's counters */
  sf_milli_t value;
} sf__cuse_t;

typedef struct {
  const char *set, *name; /* interned */
  sf_milli_t value, free;
} sf__counter_t;

typedef struct {
  sf_str_id rule; /* 0: from the slice */
  sf_taint_t t;   /* strings interned */
} sf__taint_t;

typedef struct {
  sf_node_id node;
  int32_t pool;
  const char *driver, *poolname, *name; /* interned */
  sf_attr_t *attrs;
  uint32_t nattrs;
  sf__cap_t *caps;
  uint32_t ncaps;
  sf__cuse_t *cuses;
  uint32_t ncuses;
  sf__taint_t *taints;
  uint32_t ntaints;
  uint32_t holders;
  uint32_t wholes; /* holders that took a shared device whole (sf_pick_t.whole) */
  sf_node_id *mirrors;
  uint32_t nmirrors; /* other nodes that offer this device too */
  bool used, shared, retired;
  bool counted; /* counted in model_devs */
  /* derived from the policy */
  int16_t primary;   /* capacity index measuring the share, or -1 */
  int16_t island;    /* node-local island, or -1 */
  uint8_t model_bit; /* 0..63; 63 = no model or overflow */
  sf_str_id model;
} sf__dev_t;

typedef struct {
  bool used;
  sf_node_id node;
  const char *driver, *name; /* interned */
  sf__counter_t *counters;
  uint32_t ncounters;
  sf_dev_id *devs;
  uint32_t ndevs;
} sf__pool_t;

typedef struct {
  bool used;
  const char *name; /* interned */
  int64_t cpu_alloc, cpu_used, mem_alloc, mem_used;
  sf_dev_id *devs;
  size_t ndevs, devcap;
  int32_t *pools;
  size_t npools, poolcap;
  sf_dev_id *mdevs;
  size_t nmdevs, mdevcap; /* devices of other nodes offered here too */
  uint32_t nallocs;       /* allocations placed on the node */
  uint64_t version;       /* a fresh index-wide stamp on every change of the node's state */
  uint64_t order;         /* a hash of the name: an order of nodes every replica agrees on */
} sf__node_t;

typedef struct {
  bool used;
  char *holder;
  sf_node_id node;
  int64_t cpu, mem;
  sf_pick_t *picks;
  size_t npicks;        /* picks[k].consumed owned (shared devices) */
  const char ***cnames; /* per pick: the capacity name of each consumed entry */
  uint32_t *ncons;      /* per pick: entries in consumed/cnames */
} sf__alloc_t;

/* A learned shape of the workload (FGD's typical pod, learned online); weight = how many present. */
typedef struct {
  int64_t cpu_milli;
  sf_milli_t amount; /* 0 = whole devices */
  uint32_t count;
  bool island;
  uint64_t models; /* model bits; 0 = any */
  double weight;
} sf__shape_t;

#define SF__MIX_MAX 128
#define SF__CHURN_WINDOW 256u

/*
 * The learned workload mix's storage: the multiset of the present demands'
 * shapes (weight = how many), in one canonical order. mix.c keeps it.
 */
typedef struct {
  sf__shape_t s[SF__MIX_MAX];
  size_t n;
  uint64_t version; /* moves with every change of the mix scoring reads */
  bool held;        /* scoring reads pub, moved to s by sf_mix_publish */
  sf__shape_t pub[SF__MIX_MAX];
  size_t npub;
  /* the last SF__CHURN_WINDOW bindings and departures told (sf_mix_churn): bit set = departure */
  uint64_t churn_bits[SF__CHURN_WINDOW / 64];
  uint32_t churn_seen, churn_departed; /* events told (up to the window), departures among them */
  uint32_t churn_next;                 /* the bit the next event takes */
  bool filling;                        /* !sf_mix_churning */
} sf__mix_t;
#define SF__MODELS 63 /* model bits 0..62; bit 63 = other */

typedef struct {
  uint64_t key;
  uint8_t *res; /* per device: 0 unknown-yet, 1+sf_match_t */
  size_t cap;
} sf__selcache_t;

struct sf_index {
  uint64_t hash_seed; /* of every map below (names come from the API server) */
  /* strings */
  sf_map_t strings;
  const char **strs;
  size_t nstrs, strcap;
  /* objects */
  sf_map_t node_by_name, dev_by_key, alloc_by_holder;
  sf__node_t *nodes;
  size_t nnodes, nodecap, live_nodes;
  sf__pool_t *pools;
  size_t npools, poolcap;
  sf__dev_t *devs;
  size_t ndevs, devcap;
  sf__alloc_t *allocs;
  size_t nallocs, alloccap, live_allocs;
  int32_t *free_nodes, *free_pools, *free_devs, *free_allocs;
  size_t nfree_nodes, nfree_pools, nfree_devs, nfree_allocs;
  size_t fn_cap, fp_cap, fd_cap, fa_cap;
  /* policy-derived settings */
  char capacity[SF_POLICY_NAME_MAX], model_attr[SF_POLICY_NAME_MAX], island_attr[SF_POLICY_NAME_MAX];
  sf_island_rule_t *rules;
  size_t nrules;
  /* models */
  sf_str_id model_ids[SF__MODELS];
  uint32_t nmodels;
  uint32_t model_devs[SF__MODELS + 1];
  sf_dev_id model_rep[SF__MODELS + 1]; /* a device of each model (checked on use) */
  /* selector caches */
  sf__selcache_t *caches;
  size_t ncaches, cachecap;
  sf__mix_t mix;      /* the learned workload mix (mix.c) */
  size_t heap;        /* rough bytes held, for sf_index_mem_bytes */
  uint64_t serial;    /* unique per index in the process: caches outside it key on it */
  uint64_t stamp;     /* last node version handed out; versions only grow */
  uint64_t cache_gen; /* bumped when the selector caches are dropped */
};

/* For packer.c */
void sf__index_dev_touched(sf_index_t *idx, sf_dev_id d);
uint8_t sf__index_model_bit(sf_index_t *idx, sf_str_id model);
/* A device of model bit b in the index (model_rep, found again when it is stale); -1: none. */
sf_dev_id sf__index_model_dev(sf_index_t *idx, uint32_t b);
sf_match_t sf__index_select(sf_index_t *idx, const sf_selector_t *sel, sf_dev_id d);
/*
 * The selector's per-device answers (0: not asked yet, else 1 + sf_match_t),
 * sized for every device id; NULL when the selector is not cacheable. Valid
 * until cache_gen changes or a device is added.
 */
uint8_t *sf__index_selcache(sf_index_t *idx, const sf_selector_t *sel);
/* Adds (sign +1) or takes back (-1) one present demand's shape in the learned mix (mix.c). */
void sf__mix_observe(sf__mix_t *m, const sf__shape_t *s, int sign);
/* The learned mix scoring reads (the published one while held; borrowed until the next change), n shapes. */
const sf__shape_t *sf__mix_read(const sf_index_t *idx, size_t *n);

/*
 * matchAttribute and distinctAttribute over list-type attributes (a scalar is a list of one):
 * do `a` and every one of vals[0..n) share an element? Is `a` disjoint from each of them?
 * Elements compare by type and text ("i:1" is not "s:1"). Cost: O(elements² × n).
 */
#define SF__ELEM_MAX 128
bool sf__attrs_match(const sf_attr_t *const *vals, uint32_t n, const sf_attr_t *a);
bool sf__attrs_distinct(const sf_attr_t *const *vals, uint32_t n, const sf_attr_t *a);

#endif
