/*
 * slicefit index: the device-capacity model of a cluster.
 *
 * Nodes hold devices; devices belong to a (driver, pool) as DRA publishes
 * them; pools may publish shared counter sets (partitionable devices).
 * Allocations record which holder (a ResourceClaim, or a pod in the replay)
 * holds which devices and how much of each capacity it consumes.
 *
 * The index is mutated by one owner (the libuv loop, or the replay's main)
 * and is not thread-safe. It copies every string it is given; it keeps no
 * pointer it was lent. Ids (sf_node_id, sf_dev_id, sf_alloc_id) are dense
 * small integers, valid until the object is removed, and may be reused after.
 *
 * Pure: no I/O, no clock.
 */
#ifndef SLICEFIT_INDEX_H
#define SLICEFIT_INDEX_H

#include <stdbool.h>
#include "slicefit/common.h"

typedef struct sf_index sf_index_t;
typedef struct sf_policy sf_policy_t;
typedef int32_t sf_node_id;
typedef int32_t sf_dev_id;
typedef int32_t sf_alloc_id;
typedef uint32_t sf_str_id; /* an interned string; 0 is the empty string */

typedef enum {
  SF_ATTR_INT = 1,
  SF_ATTR_BOOL,
  SF_ATTR_STRING,
  SF_ATTR_VERSION, /* a semantic version, kept as its text and its parsed parts */
  SF_ATTR_LIST,    /* DRAListTypeAttributes (ints, bools, strings, versions): `s` holds the
                      elements, each "i:", "b:", "s:" or "v:" and its text, separated by '\x1e' */
  SF_ATTR_UNKNOWN  /* present, but with no value slicefit can read (none, or a kind it does not
                      know): a selector or constraint that reads it answers unsure */
} sf_attr_type_t;

/* A device attribute. `name` is the fully qualified name ("domain/id"). */
typedef struct {
  const char *name;
  sf_attr_type_t type;
  int64_t i;     /* SF_ATTR_INT; SF_ATTR_BOOL as 0/1 */
  const char *s; /* SF_ATTR_STRING, SF_ATTR_VERSION (text), SF_ATTR_LIST (elements) */
} sf_attr_t;

/* How requests for a consumable capacity are rounded (KEP-5075). */
typedef struct {
  bool has_default;
  sf_milli_t def;
  /* Either valid values (ascending) ... */
  const sf_milli_t *valid;
  size_t nvalid;
  /* ... or a range; step 0 means any value, max 0 means no upper bound. */
  bool has_range;
  sf_milli_t min, step, max;
} sf_request_policy_t;

typedef struct {
  const char *name; /* fully qualified */
  sf_milli_t value;
  bool has_policy;
  sf_request_policy_t policy; /* borrowed arrays; the index copies them */
} sf_capacity_t;

/* A counter consumed from a shared counter set of the same pool. */
typedef struct {
  const char *set;     /* counter set name */
  const char *counter; /* counter name within the set */
  sf_milli_t value;
} sf_counter_use_t;

typedef enum { SF_TAINT_NONE = 0, SF_TAINT_NOSCHEDULE, SF_TAINT_NOEXECUTE } sf_taint_effect_t;

typedef struct {
  const char *key, *value;
  sf_taint_effect_t effect;
} sf_taint_t;

#define SF_DEVICE_FIELDS_MAX 32 /* DRA: attributes + capacities per device */

typedef struct {
  const char *name; /* device name, unique within the pool */
  const sf_attr_t *attrs;
  size_t nattrs;
  const sf_capacity_t *caps;
  size_t ncaps;
  const sf_counter_use_t *counters;
  size_t ncounters;
  const sf_taint_t *taints;
  size_t ntaints;
  bool allow_multiple; /* allowMultipleAllocations: a shared device */
} sf_device_spec_t;

typedef struct {
  const char *set; /* counter set name */
  const char *counter;
  sf_milli_t value;
} sf_counter_t;

typedef struct {
  const char *name;
  int64_t cpu_milli; /* allocatable CPU; 0 = not tracked (no CPU check) */
  int64_t mem_bytes; /* allocatable memory; 0 = not tracked */
} sf_node_spec_t;

/* One device taken by an allocation, and what it consumes. */
typedef struct {
  sf_dev_id dev;
  /*
   * For a shared device: consumed amount per capacity, in the device's
   * capacity order (sf_index_dev_ncaps entries); NULL consumes nothing.
   * Ignored for an exclusive device, which is taken whole.
   */
  const sf_milli_t *consumed;
  /*
   * A shared device held exclusively (DRA: a result without shareID, which
   * the allocator counts among allocated devices, not shares): nothing else
   * may take it, and it consumes all of every capacity (consumed ignored).
   */
  bool whole;
} sf_pick_t;

#define SF_ALLOC_FORCE 1u /* record even if it overcommits (the API server is the truth) */

/* ---- lifecycle ---- */

/**
 * New empty index whose name maps hash under `hash_seed` (slicefit/map.h):
 * random where names come from the API server. Cost: O(1).
 */
sf_index_t *sf_index_create_seeded(uint64_t hash_seed);
/** The same with seed 0, for trusted input (tests, benchmarks, a replayed trace). */
sf_index_t *sf_index_create(void);
/** Frees the index and everything in it; accepts NULL. */
void sf_index_destroy(sf_index_t *idx);

/* ---- strings ---- */

/** Interns `s` (borrowed) and returns its id; the same text always gives the same id. */
sf_str_id sf_index_intern(sf_index_t *idx, const char *s);
/** Looks `s` up without interning; 0 when it was never interned (or is ""). */
sf_str_id sf_index_lookup(const sf_index_t *idx, const char *s);
/** Text of an interned string (borrowed; valid for the index's life). */
const char *sf_index_str(const sf_index_t *idx, sf_str_id id);

/* ---- nodes ---- */

/** Adds a node or updates its allocatable amounts. *out gets its id. */
int sf_index_node_upsert(sf_index_t *idx, const sf_node_spec_t *spec, sf_node_id *out);
/** Id of a node by name, or -1. Cost: O(1) expected. */
sf_node_id sf_index_node_find(const sf_index_t *idx, const char *name);
/**
 * Removes a node, its pools and devices. Fails with SF_EBUSY while any
 * allocation holds one of its devices or CPU/memory on it.
 */
int sf_index_node_remove(sf_index_t *idx, sf_node_id node);
/** One past the highest node id in use (ids below may be free: check sf_index_node_live). */
sf_node_id sf_index_node_end(const sf_index_t *idx);
bool sf_index_node_live(const sf_index_t *idx, sf_node_id node);
const char *sf_index_node_name(const sf_index_t *idx, sf_node_id node);
size_t sf_index_node_count(const sf_index_t *idx);
/** The node's devices in the in-tree allocator's order (pools by driver then name, devices as published). */
const sf_dev_id *sf_index_node_devices(const sf_index_t *idx, sf_node_id node, size_t *n);
void sf_index_node_cpu_mem(const sf_index_t *idx, sf_node_id node, int64_t *cpu_alloc,
                           int64_t *cpu_used, int64_t *mem_alloc, int64_t *mem_used);

/* ---- pools ---- */

/**
 * Replaces the devices and counter sets that (driver, pool) publishes on
 * `node` with the given ones. A device whose name is kept keeps its id and
 * the allocations on it; a removed device that is still allocated is retired
 * (never offered again) and freed with its last allocation. Errors:
 * SF_EINVAL for a duplicate device name, a consumed counter set that the pool
 * does not publish, or a bad request policy; SF_E2BIG for a device with
 * more than SF_DEVICE_FIELDS_MAX attributes and capacities together. The
 * index is then unchanged.
 * Cost: O(devices of the node).
 */
int sf_index_pool_set(sf_index_t *idx, sf_node_id node, const char *driver, const char *pool,
                      const sf_device_spec_t *devs, size_t ndevs, const sf_counter_t *counters,
                      size_t ncounters);
/** Removes the pool (same rules for allocated devices). SF_ENOENT if absent. */
int sf_index_pool_remove(sf_index_t *idx, sf_node_id node, const char *driver, const char *pool);

/**
 * Offers the named devices of (driver, pool), published on another node (their
 * home), on `node` too, replacing what `node` mirrored of that pool before
 * (n 0: nothing any more). One device, one set of holders, capacities and
 * counters, seen from every node that can reach it (network-attached
 * devices, allNodes, nodeSelector): an allocation through any of them
 * counts for all. Names not published, and devices homed on `node`, are
 * skipped. A mirrored device is its own island. SF_EINVAL for a dead node.
 * Cost: O(devices of the node + n).
 */
int sf_index_mirror_set(sf_index_t *idx, sf_node_id node, const char *driver, const char *pool,
                        const char *const *names, size_t n);

/* ---- devices ---- */

sf_dev_id sf_index_dev_find(const sf_index_t *idx, const char *driver, const char *pool,
                            const char *name);
sf_dev_id sf_index_dev_end(const sf_index_t *idx);
bool sf_index_dev_live(const sf_index_t *idx, sf_dev_id dev); /* present and not retired */
sf_node_id sf_index_dev_node(const sf_index_t *idx, sf_dev_id dev);
const char *sf_index_dev_name(const sf_index_t *idx, sf_dev_id dev);
const char *sf_index_dev_driver(const sf_index_t *idx, sf_dev_id dev);
const char *sf_index_dev_pool(const sf_index_t *idx, sf_dev_id dev);
bool sf_index_dev_shared(const sf_index_t *idx, sf_dev_id dev);
/** Attribute by fully qualified name, or NULL (borrowed, valid until the device changes). */
const sf_attr_t *sf_index_dev_attr(const sf_index_t *idx, sf_dev_id dev, const char *name);
size_t sf_index_dev_nattrs(const sf_index_t *idx, sf_dev_id dev);
const sf_attr_t *sf_index_dev_attr_at(const sf_index_t *idx, sf_dev_id dev, size_t i);
size_t sf_index_dev_ncaps(const sf_index_t *idx, sf_dev_id dev);
/** Capacity i: its name, total and free amount (free may be < 0 after a forced allocation). */
const char *sf_index_dev_cap(const sf_index_t *idx, sf_dev_id dev, size_t i, sf_milli_t *value,
                             sf_milli_t *free_amount);
/** Index of a capacity by fully qualified name, or -1. */
int sf_index_dev_cap_find(const sf_index_t *idx, sf_dev_id dev, const char *name);
/** Number of allocations holding the device. */
uint32_t sf_index_dev_holders(const sf_index_t *idx, sf_dev_id dev);
size_t sf_index_dev_ntaints(const sf_index_t *idx, sf_dev_id dev);
const sf_taint_t *sf_index_dev_taint(const sf_index_t *idx, sf_dev_id dev, size_t i);
/** Island id (devices joined by NVLink share one); -1 = the device is its own island. */
int32_t sf_index_dev_island(const sf_index_t *idx, sf_dev_id dev);
/** The device's model (the policy's model attribute), or 0 when it has none. */
sf_str_id sf_index_dev_model(const sf_index_t *idx, sf_dev_id dev);
/** Whole-device free share in per-mille of its primary capacity (1000 = idle). */
int32_t sf_index_dev_free_permille(const sf_index_t *idx, sf_dev_id dev);

/**
 * Adds a taint to a device from outside its slice (a DeviceTaintRule), keyed
 * by `rule` so that sf_index_taint_rule_clear can take it back. Cost: O(1).
 */
int sf_index_taint_rule_add(sf_index_t *idx, const char *rule, sf_dev_id dev, const sf_taint_t *t);
/** Removes every taint the rule added. */
void sf_index_taint_rule_clear(sf_index_t *idx, const char *rule);

/* ---- policy-derived device facts ---- */

/**
 * Applies the policy's model attribute, island source and primary capacity
 * to every device (recomputed as pools change). The index keeps a copy of
 * the few fields it needs. Cost: O(devices).
 */
void sf_index_apply_policy(sf_index_t *idx, const sf_policy_t *pol);

/* ---- allocations ---- */

/**
 * Records that `holder` (borrowed key, e.g. "namespace/claim") holds the
 * picked devices and `cpu_milli`/`mem_bytes` on `node`. Each device must be
 * on `node` (homed there or mirrored to it). Without SF_ALLOC_FORCE the call fails with SF_ENOSPC, changing
 * nothing, if a capacity, counter, exclusive device or the node's CPU/memory
 * would be overcommitted; with it the allocation is recorded regardless
 * (free amounts go negative and the device is offered no more). SF_EEXIST
 * when the holder already has an allocation, SF_ENOENT for an unknown device.
 * Cost: O(picks × capacities).
 */
int sf_index_alloc_add(sf_index_t *idx, const char *holder, sf_node_id node, int64_t cpu_milli,
                       int64_t mem_bytes, const sf_pick_t *picks, size_t npicks, unsigned flags,
                       sf_alloc_id *out);
/** Removes an allocation and returns exactly what it consumed. */
int sf_index_alloc_remove(sf_index_t *idx, sf_alloc_id a);
/** The allocation of a holder, or -1. */
sf_alloc_id sf_index_alloc_find(const sf_index_t *idx, const char *holder);
size_t sf_index_alloc_count(const sf_index_t *idx);
sf_node_id sf_index_alloc_node(const sf_index_t *idx, sf_alloc_id a);
/** One past the highest allocation id; ids below it may be free (sf_index_alloc_holder NULL). */
sf_alloc_id sf_index_alloc_end(const sf_index_t *idx);
/** The allocation's holder (borrowed), or NULL for a free id. */
const char *sf_index_alloc_holder(const sf_index_t *idx, sf_alloc_id a);
/**
 * The devices the allocation holds, in milli-devices: 1000 for each device
 * held whole, a shared device's pick by its share of the device's primary
 * capacity (4Gi of a 20Gi card: 200). Cost: O(picks).
 */
int64_t sf_index_alloc_device_milli(const sf_index_t *idx, sf_alloc_id a);
/** The allocation's devices (borrowed; valid until the allocation is removed). */
const sf_pick_t *sf_index_alloc_picks(const sf_index_t *idx, sf_alloc_id a, size_t *n);

/* ---- checks ---- */

/**
 * Recomputes every free amount, counter and holder count from the
 * allocations and compares with the maintained ones. Returns 0 or
 * SF_EINVAL with a description in `err` (may be NULL). Cost: O(everything);
 * tests and fuzzers call it after every mutation.
 */
int sf_index_validate(const sf_index_t *idx, char *err, size_t errlen);

/** Bytes the index holds on the heap (its own accounting). */
size_t sf_index_mem_bytes(const sf_index_t *idx);

#endif
