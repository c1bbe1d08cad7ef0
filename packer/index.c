/*
 * The device-capacity index (layout and invariants in index_int.h; which
 * file keeps which part of it in index_priv.h). This file holds the index
 * as a whole: creating and destroying it, the interned strings, and its
 * memory accounting.
 *
 * Objects live in dense arrays with free lists, so ids are small integers
 * the packer can use to index side tables. Strings are interned once and
 * never freed before the index, so interned pointers compare by identity.
 * Every mutation keeps free amounts exact and cheap to update: adding or
 * removing an allocation costs O(picks × capacities); replacing a pool
 * costs O(devices of its node). Input here comes from the decoders and is
 * already typed, but it is still untrusted: duplicate names, dangling
 * counter references and bad request policies are rejected before anything
 * changes.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "index_priv.h"

/* free() for pointers the public structs declare const. */
void sf__cfree(const void *p)
{
  free((void *)(uintptr_t)p);
}

/* ---- strings ---- */

sf_str_id sf_index_intern(sf_index_t *idx, const char *s)
{
  size_t n = strlen(s);
  if (n == 0)
    return 0;
  int32_t id = sf_map_get(&idx->strings, s, n);
  if (id >= 0)
    return (sf_str_id)id;
  GROW(idx->strs, idx->strcap, idx->nstrs + 1);
  sf_map_put(&idx->strings, s, n, (int32_t)idx->nstrs);
  idx->strs[idx->nstrs] = sf_map_key(&idx->strings, s, n);
  idx->heap += n + 1 + 32;
  return (sf_str_id)idx->nstrs++;
}

sf_str_id sf_index_lookup(const sf_index_t *idx, const char *s)
{
  int32_t id = sf_map_get(&idx->strings, s, strlen(s));
  return id < 0 ? 0 : (sf_str_id)id;
}

const char *sf_index_str(const sf_index_t *idx, sf_str_id id)
{
  return id < idx->nstrs ? idx->strs[id] : "";
}

const char *sf__index_istr(sf_index_t *idx, const char *s)
{
  if (s == NULL)
    return "";
  sf_str_id id = sf_index_intern(idx, s); /* may grow strs: index after */
  return idx->strs[id];
}

/* ---- lifecycle ---- */

sf_index_t *sf_index_create(void)
{
  return sf_index_create_seeded(0);
}

sf_index_t *sf_index_create_seeded(uint64_t hash_seed)
{
  static _Atomic uint64_t serials;
  sf_index_t *idx = sf_xcalloc(1, sizeof(*idx));
  idx->serial = atomic_fetch_add(&serials, 1) + 1;
  idx->hash_seed = hash_seed;
  sf_map_init(&idx->strings, hash_seed);
  sf_map_init(&idx->node_by_name, hash_seed);
  sf_map_init(&idx->dev_by_key, hash_seed);
  sf_map_init(&idx->alloc_by_holder, hash_seed);
  GROW(idx->strs, idx->strcap, 1);
  idx->strs[0] = "";
  idx->nstrs = 1;
  memcpy(idx->capacity, "memory", 7);
  memcpy(idx->model_attr, "productName", 12);
  return idx;
}

void sf_index_destroy(sf_index_t *idx)
{
  if (idx == NULL)
    return;
  for (size_t i = 0; i < idx->ndevs; i++)
    if (idx->devs[i].used) {
      sf__index_dev_free_parts(&idx->devs[i]);
      free(idx->devs[i].mirrors);
    }
  for (size_t i = 0; i < idx->npools; i++) {
    free(idx->pools[i].counters);
    free(idx->pools[i].devs);
  }
  for (size_t i = 0; i < idx->nnodes; i++) {
    free(idx->nodes[i].devs);
    free(idx->nodes[i].pools);
    free(idx->nodes[i].mdevs);
  }
  for (size_t i = 0; i < idx->nallocs; i++)
    if (idx->allocs[i].used)
      sf__index_alloc_free_parts(&idx->allocs[i]);
  for (size_t i = 0; i < idx->ncaches; i++)
    free(idx->caches[i].res);
  SF__FREE_ALL(idx->caches, idx->rules, idx->nodes, idx->pools, idx->devs, idx->allocs,
               idx->free_nodes, idx->free_pools, idx->free_devs, idx->free_allocs, idx->strs);
  sf_map_dispose(&idx->strings);
  sf_map_dispose(&idx->node_by_name);
  sf_map_dispose(&idx->dev_by_key);
  sf_map_dispose(&idx->alloc_by_holder);
  free(idx);
}

size_t sf_index_mem_bytes(const sf_index_t *idx)
{
  size_t b = sizeof(*idx) + idx->strcap * sizeof(char *) + idx->nodecap * sizeof(sf__node_t) +
             idx->poolcap * sizeof(sf__pool_t) + idx->devcap * sizeof(sf__dev_t) +
             idx->alloccap * sizeof(sf__alloc_t) +
             (idx->strings.cap + idx->node_by_name.cap + idx->dev_by_key.cap +
              idx->alloc_by_holder.cap) *
                 sizeof(sf_map_slot_t);
  for (size_t d = 0; d < idx->ndevs; d++) {
    const sf__dev_t *dv = &idx->devs[d];
    b += dv->nattrs * sizeof(sf_attr_t) + dv->ncaps * sizeof(sf__cap_t) +
         dv->ncuses * sizeof(sf__cuse_t) + dv->ntaints * sizeof(sf__taint_t);
  }
  for (size_t a = 0; a < idx->nallocs; a++) {
    const sf__alloc_t *al = &idx->allocs[a];
    b += al->used ? strlen(al->holder) + 1 + al->npicks * (sizeof(sf_pick_t) + sizeof(void *) + 4)
                  : 0;
    for (size_t k = 0; al->used && k < al->npicks; k++)
      b += al->ncons[k] * (sizeof(sf_milli_t) + sizeof(char *));
  }
  for (size_t n = 0; n < idx->nnodes; n++)
    b += idx->nodes[n].devcap * sizeof(sf_dev_id) + idx->nodes[n].poolcap * sizeof(int32_t);
  for (size_t i = 0; i < idx->ncaches; i++)
    b += idx->caches[i].cap;
  return b + idx->heap;
}
