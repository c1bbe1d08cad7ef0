/*
 * Private to the index's own files (index*.c): which file keeps which part
 * of struct sf_index (index_int.h), and the helpers they share. The rest of
 * packer/ reads the index through index_int.h and the public API only.
 *
 *   index.c           the index as a whole: create/destroy, hash_seed, serial,
 *                     the interned strings (strings, strs), heap, mem_bytes
 *   index_node.c      nodes, node_by_name, live_nodes, free_nodes; a node's
 *                     device order (nodes[].devs) rebuilt from its pools
 *   index_pool.c      pools, devs and dev_by_key: a pool's devices published,
 *                     filled, retired and freed; counters recounted
 *   index_mirror.c    devs[].mirrors and nodes[].mdevs, both ways
 *   index_dev.c       reads devs[] (public accessors, find by key)
 *   index_taint.c     the taint rules' entries in devs[].taints
 *   index_alloc.c     allocs, alloc_by_holder, live_allocs, and what they
 *                     consume: node cpu/mem used, holders, free capacities
 *                     and counters
 *   index_policy.c    capacity, model_attr, island_attr, rules; the models
 *                     (model_ids, model_devs, model_rep); per device primary,
 *                     model, model_bit, island, counted
 *   index_selcache.c  caches, cache_gen
 *   index_validate.c  reads everything, changes nothing
 *   mix.c             mix
 *
 * Every change of a node's state moves its version (a fresh stamp).
 */
#ifndef SF_PACKER_INDEX_PRIV_H
#define SF_PACKER_INDEX_PRIV_H

#include <string.h>
#include "index_int.h"

#define GROW(arr, cap, need) sf_xgrow(&(arr), &(cap), (need), sizeof(*(arr)))

/* Slot allocation from a dense array with a free list. */
#define TAKE_SLOT(idx, arr, n, cap, fl, nfl, flcap, out)  \
  do {                                                    \
    if ((idx)->nfl > 0) {                                 \
      (out) = (idx)->fl[--(idx)->nfl];                    \
    } else {                                              \
      GROW((idx)->arr, (idx)->cap, (idx)->n + 1);         \
      (out) = (int32_t)(idx)->n++;                        \
    }                                                     \
    memset(&(idx)->arr[(out)], 0, sizeof((idx)->arr[0])); \
  } while (0)
#define GIVE_SLOT(idx, fl, nfl, flcap, id)         \
  do {                                             \
    GROW((idx)->fl, (idx)->flcap, (idx)->nfl + 1); \
    (idx)->fl[(idx)->nfl++] = (id);                \
  } while (0)

/* index.c */
/* free() for pointers the public structs declare const. */
void sf__cfree(const void *p);
/* s interned (NULL reads as ""); borrowed until the index is destroyed. */
const char *sf__index_istr(sf_index_t *idx, const char *s);

/* index_node.c */
/* Rebuilds the node's device order, then re-derives its policy facts (moves its version). */
void sf__index_node_reorder(sf_index_t *idx, sf_node_id node);

/* index_pool.c */
/* Frees what a device record owns (attributes, capacities and their policies, counter uses,
 * taints), not its mirrors. */
void sf__index_dev_free_parts(sf__dev_t *d);
/* Drops a device from its pool: freed now, or retired until its last allocation goes. */
void sf__index_dev_drop(sf_index_t *idx, sf_dev_id d, bool keep_in_pool);

/* index_mirror.c */
/* Takes d off `node`'s mirrored devices (and `node` off d's mirrors); reorders the node if asked. */
void sf__index_mirror_unlink(sf_index_t *idx, sf_node_id node, sf_dev_id d, bool reorder);
/* Every node that offers d learns that its state moved. */
void sf__index_dev_nodes_touch(sf_index_t *idx, const sf__dev_t *dv);

/* index_dev.c */
/* The key of dev_by_key ("driver\0pool\0name") into buf, its length; 0 when it does not fit. */
size_t sf__index_dev_key(char *buf, size_t len, const char *driver, const char *pool,
                         const char *name);
/* Device d's record, NULL when out of range or freed (a retired device is returned). */
const sf__dev_t *sf__index_dev_at(const sf_index_t *idx, sf_dev_id d);

/* index_alloc.c */
/* Frees what an allocation record owns. */
void sf__index_alloc_free_parts(sf__alloc_t *a);
/* Is device d offered on `node` (homed or mirrored there)? */
bool sf__index_dev_on(const sf_index_t *idx, sf_dev_id d, sf_node_id node);
/*
 * Sets a live allocation aside (on) or back (off): its consumption leaves or
 * returns, while the record, its holder and its id stay. The defrag planner's
 * trials; the index validates again only once every allocation is back.
 */
void sf__index_alloc_suspend(sf_index_t *idx, sf_alloc_id a, bool on);
/* An allocation's CPU and memory, and per pick the capacity names of its consumed entries
 * (borrowed until it is removed). */
void sf__index_alloc_usage(const sf_index_t *idx, sf_alloc_id a, int64_t *cpu_milli,
                           int64_t *mem_bytes, const char ****cnames, const uint32_t **ncons);

/* index_policy.c */
/* Recomputes model, primary capacity and islands for every device of a node. */
void sf__index_derive_node(sf_index_t *idx, sf_node_id node);

/* Takes the first v out of a[0..*n), keeping the order of the rest; false if absent. */
static inline bool sf__i32_remove(int32_t *a, size_t *n, int32_t v)
{
  for (size_t k = 0; k < *n; k++)
    if (a[k] == v) {
      memmove(a + k, a + k + 1, (*n - k - 1) * sizeof(*a));
      (*n)--;
      return true;
    }
  return false;
}

#endif
