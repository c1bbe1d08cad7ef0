/*
 * The index's nodes: created or updated from the Node object, read, and
 * removed once nothing is allocated on them; and a node's device order,
 * rebuilt whenever its pools or mirrored devices change: pools (its own and
 * those it mirrors devices of) by driver then name, devices as published,
 * the in-tree allocator's order. Rebuilding it re-derives the node's policy
 * facts (index_policy.c) and moves its version.
 */
#include <stdlib.h>
#include <string.h>
#include "index_priv.h"

/* ---- nodes ---- */

sf_node_id sf_index_node_find(const sf_index_t *idx, const char *name)
{
  return sf_map_get(&idx->node_by_name, name, strlen(name));
}

int sf_index_node_upsert(sf_index_t *idx, const sf_node_spec_t *spec, sf_node_id *out)
{
  if (spec == NULL || spec->name == NULL || spec->name[0] == '\0' || spec->cpu_milli < 0 ||
      spec->mem_bytes < 0)
    return SF_EINVAL;
  sf_node_id id = sf_index_node_find(idx, spec->name);
  if (id < 0) {
    TAKE_SLOT(idx, nodes, nnodes, nodecap, free_nodes, nfree_nodes, fn_cap, id);
    sf__node_t *n = &idx->nodes[id];
    n->used = true;
    n->name = sf__index_istr(idx, spec->name);
    n->order = 1469598103934665603ull;
    for (const unsigned char *c = (const unsigned char *)spec->name; *c; c++)
      n->order = (n->order ^ *c) * 1099511628211ull;
    sf_map_put(&idx->node_by_name, spec->name, strlen(spec->name), id);
    idx->live_nodes++;
    idx->heap += sizeof(*n);
  }
  sf__node_t *n = &idx->nodes[id];
  n->cpu_alloc = spec->cpu_milli;
  n->mem_alloc = spec->mem_bytes;
  n->version = ++idx->stamp;
  if (out)
    *out = id;
  return 0;
}

bool sf_index_node_live(const sf_index_t *idx, sf_node_id node)
{
  return node >= 0 && (size_t)node < idx->nnodes && idx->nodes[node].used;
}

sf_node_id sf_index_node_end(const sf_index_t *idx)
{
  return (sf_node_id)idx->nnodes;
}

size_t sf_index_node_count(const sf_index_t *idx)
{
  return idx->live_nodes;
}

const char *sf_index_node_name(const sf_index_t *idx, sf_node_id node)
{
  return sf_index_node_live(idx, node) ? idx->nodes[node].name : NULL;
}

const sf_dev_id *sf_index_node_devices(const sf_index_t *idx, sf_node_id node, size_t *n)
{
  if (!sf_index_node_live(idx, node)) {
    *n = 0;
    return NULL;
  }
  *n = idx->nodes[node].ndevs;
  return idx->nodes[node].devs;
}

void sf_index_node_cpu_mem(const sf_index_t *idx, sf_node_id node, int64_t *cpu_alloc,
                           int64_t *cpu_used, int64_t *mem_alloc, int64_t *mem_used)
{
  const sf__node_t *n = &idx->nodes[node];
  if (cpu_alloc)
    *cpu_alloc = n->cpu_alloc;
  if (cpu_used)
    *cpu_used = n->cpu_used;
  if (mem_alloc)
    *mem_alloc = n->mem_alloc;
  if (mem_used)
    *mem_used = n->mem_used;
}

int sf_index_node_remove(sf_index_t *idx, sf_node_id node)
{
  if (!sf_index_node_live(idx, node))
    return SF_ENOENT;
  sf__node_t *n = &idx->nodes[node];
  if (n->nallocs > 0)
    return SF_EBUSY;
  while (n->npools > 0) {
    sf__pool_t *p = &idx->pools[n->pools[0]];
    sf_index_pool_remove(idx, node, p->driver, p->name);
  }
  while (n->nmdevs > 0)
    sf__index_mirror_unlink(idx, node, n->mdevs[n->nmdevs - 1], false);
  sf_map_del(&idx->node_by_name, n->name, strlen(n->name));
  free(n->devs);
  free(n->pools);
  free(n->mdevs);
  memset(n, 0, sizeof(*n));
  GIVE_SLOT(idx, free_nodes, nfree_nodes, fn_cap, node);
  idx->live_nodes--;
  return 0;
}

/* ---- the node's device order ---- */

/* A pool's sort key, copied out so that the comparator needs no context (qsort has no
 * argument for one, and a file static would make two indexes on two threads race). */
typedef struct {
  const char *driver, *name;
  int32_t pool;
  uint32_t pos; /* the place before sorting: equal keys keep their order */
} pool_key_t;

static int pool_cmp(const void *a, const void *b)
{
  const pool_key_t *x = a, *y = b;
  int c = strcmp(x->driver, y->driver);
  if (c == 0)
    c = strcmp(x->name, y->name);
  return c ? c : (x->pos > y->pos) - (x->pos < y->pos);
}

/* Sorts the node's pools by driver, then name. */
static void pools_sort(const sf_index_t *idx, int32_t *pools, size_t npools)
{
  if (npools < 2)
    return;
  pool_key_t *keys = sf_xmalloc(npools * sizeof(*keys));
  for (size_t i = 0; i < npools; i++) {
    const sf__pool_t *p = &idx->pools[pools[i]];
    keys[i] = (pool_key_t){p->driver, p->name, pools[i], (uint32_t)i};
  }
  qsort(keys, npools, sizeof(*keys), pool_cmp);
  for (size_t i = 0; i < npools; i++)
    pools[i] = keys[i].pool;
  free(keys);
}

/* Appends the node's mirrored devices of pool p, in the order they were mirrored. */
static void reorder_mirrors(sf_index_t *idx, sf__node_t *n, int32_t p)
{
  for (size_t k = 0; k < n->nmdevs; k++) {
    const sf__dev_t *dv = &idx->devs[n->mdevs[k]];
    if (dv->pool != p || dv->retired)
      continue;
    GROW(n->devs, n->devcap, n->ndevs + 1);
    n->devs[n->ndevs++] = n->mdevs[k];
  }
}

/* Rebuilds the node's device order: pools (its own and those it mirrors devices of) by driver
 * then name, devices as published. */
void sf__index_node_reorder(sf_index_t *idx, sf_node_id node)
{
  sf__node_t *n = &idx->nodes[node];
  pools_sort(idx, n->pools, n->npools); /* a node may only mirror devices: no pools of its own */
  int32_t *order = n->pools;
  size_t norder = n->npools;
  if (n->nmdevs > 0) { /* the mirrored devices' pools take their place among the node's own */
    order = sf_xmalloc((n->npools + n->nmdevs) * sizeof(*order));
    if (n->npools > 0)
      memcpy(order, n->pools, n->npools * sizeof(*order));
    for (size_t k = 0; k < n->nmdevs; k++) {
      int32_t p = idx->devs[n->mdevs[k]].pool;
      bool seen = p < 0;
      for (size_t i = n->npools; i < norder && !seen; i++)
        seen = order[i] == p;
      if (!seen)
        order[norder++] = p;
    }
    pools_sort(idx, order, norder);
  }
  n->ndevs = 0;
  for (size_t i = 0; i < norder; i++) {
    sf__pool_t *p = &idx->pools[order[i]];
    if (p->node != node) {
      reorder_mirrors(idx, n, order[i]);
      continue;
    }
    for (uint32_t k = 0; k < p->ndevs; k++) {
      if (idx->devs[p->devs[k]].retired)
        continue;
      GROW(n->devs, n->devcap, n->ndevs + 1);
      n->devs[n->ndevs++] = p->devs[k];
    }
  }
  if (order != n->pools)
    free(order);
  sf__index_derive_node(idx, node);
}
