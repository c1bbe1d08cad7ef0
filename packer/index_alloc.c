/*
 * Allocations: a holder's picks of devices on one node, with what each
 * shared device's pick consumes. Adding one applies its consumption (node
 * CPU and memory, device holders and free capacities, shared counters when
 * a device's first holder comes or last goes) and takes it back whole when
 * it would overcommit, unless forced; removing one frees the retired
 * devices it was the last to hold.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include "index_priv.h"

void sf__index_alloc_free_parts(sf__alloc_t *a)
{
  for (size_t k = 0; k < a->npicks; k++) {
    sf__cfree(a->picks[k].consumed);
    free(a->cnames[k]);
  }
  free(a->holder);
  free(a->picks);
  free(a->cnames);
  free(a->ncons);
}

sf_alloc_id sf_index_alloc_find(const sf_index_t *idx, const char *holder)
{
  return sf_map_get(&idx->alloc_by_holder, holder, strlen(holder));
}

size_t sf_index_alloc_count(const sf_index_t *idx)
{
  return idx->live_allocs;
}

sf_node_id sf_index_alloc_node(const sf_index_t *idx, sf_alloc_id a)
{
  return (a >= 0 && (size_t)a < idx->nallocs && idx->allocs[a].used) ? idx->allocs[a].node : -1;
}

const sf_pick_t *sf_index_alloc_picks(const sf_index_t *idx, sf_alloc_id a, size_t *n)
{
  if (a < 0 || (size_t)a >= idx->nallocs || !idx->allocs[a].used) {
    *n = 0;
    return NULL;
  }
  *n = idx->allocs[a].npicks;
  return idx->allocs[a].picks;
}

sf_alloc_id sf_index_alloc_end(const sf_index_t *idx)
{
  return (sf_alloc_id)idx->nallocs;
}

const char *sf_index_alloc_holder(const sf_index_t *idx, sf_alloc_id a)
{
  return (a >= 0 && (size_t)a < idx->nallocs && idx->allocs[a].used) ? idx->allocs[a].holder : NULL;
}

/* A pick's share of its device in milli-devices: its primary capacity's share, else all of it. */
static int64_t pick_milli(const sf_index_t *idx, const sf_pick_t *pk)
{
  const sf__dev_t *dv = &idx->devs[pk->dev];
  if (!dv->shared || pk->whole || dv->primary < 0 || pk->consumed == NULL)
    return 1000;
  sf_milli_t value = dv->caps[dv->primary].value, used = pk->consumed[dv->primary];
  if (value <= 0 || used >= value)
    return 1000;
  if (used <= 0)
    return 0;
  /* used < value here; past 9.2e15 milli-units scale the value down instead. */
  return used > INT64_MAX / 1000 ? used / (value / 1000) : used * 1000 / value;
}

int64_t sf_index_alloc_device_milli(const sf_index_t *idx, sf_alloc_id a)
{
  size_t n;
  const sf_pick_t *picks = sf_index_alloc_picks(idx, a, &n);
  int64_t total = 0;
  for (size_t k = 0; k < n; k++)
    total += pick_milli(idx, &picks[k]);
  return total;
}

/* Is device d offered on `node` (homed or mirrored there)? */
bool sf__index_dev_on(const sf_index_t *idx, sf_dev_id d, sf_node_id node)
{
  const sf__dev_t *dv = &idx->devs[d];
  if (dv->node == node)
    return true;
  for (uint32_t k = 0; k < dv->nmirrors; k++)
    if (dv->mirrors[k] == node)
      return true;
  return false;
}

/* Applies (sign +1) or takes back (sign -1) an allocation's consumption. */
static void alloc_apply(sf_index_t *idx, const sf__alloc_t *a, int sign)
{
  sf__node_t *n = &idx->nodes[a->node];
  n->cpu_used += sign * a->cpu;
  n->mem_used += sign * a->mem;
  n->nallocs = (uint32_t)((int64_t)n->nallocs + sign);
  n->version = ++idx->stamp;
  for (size_t k = 0; k < a->npicks; k++) {
    sf__dev_t *dv = &idx->devs[a->picks[k].dev];
    bool first = sign > 0 && dv->holders == 0;
    dv->holders = (uint32_t)((int64_t)dv->holders + sign);
    if (a->picks[k].whole)
      dv->wholes = (uint32_t)((int64_t)dv->wholes + sign);
    bool last = sign < 0 && dv->holders == 0;
    for (uint32_t c = 0; c < dv->ncaps; c++)
      dv->caps[c].free -= sign * (dv->shared ? a->picks[k].consumed[c] : dv->caps[c].value);
    if (dv->nmirrors > 0)
      sf__index_dev_nodes_touch(idx, dv);
    if ((first || last) && dv->pool >= 0) {
      sf__pool_t *p = &idx->pools[dv->pool];
      for (uint32_t u = 0; u < dv->ncuses; u++)
        p->counters[dv->cuses[u].counter].free -= sign * dv->cuses[u].value;
    }
  }
}

/* Would the allocation just applied overcommit anything? */
static bool alloc_over(const sf_index_t *idx, const sf__alloc_t *a)
{
  const sf__node_t *n = &idx->nodes[a->node];
  if ((n->cpu_alloc > 0 && n->cpu_used > n->cpu_alloc) ||
      (n->mem_alloc > 0 && n->mem_used > n->mem_alloc))
    return true;
  for (size_t k = 0; k < a->npicks; k++) {
    const sf__dev_t *dv = &idx->devs[a->picks[k].dev];
    if (!dv->shared && dv->holders > 1)
      return true;
    for (uint32_t c = 0; c < dv->ncaps; c++)
      if (dv->caps[c].free < 0)
        return true;
    if (dv->pool >= 0) {
      const sf__pool_t *p = &idx->pools[dv->pool];
      for (uint32_t u = 0; u < dv->ncuses; u++)
        if (p->counters[dv->cuses[u].counter].free < 0)
          return true;
    }
  }
  return false;
}

static void alloc_release(sf_index_t *idx, sf_alloc_id id)
{
  sf__alloc_t *a = &idx->allocs[id];
  sf_map_del(&idx->alloc_by_holder, a->holder, strlen(a->holder));
  sf__index_alloc_free_parts(a);
  memset(a, 0, sizeof(*a));
  GIVE_SLOT(idx, free_allocs, nfree_allocs, fa_cap, id);
  idx->live_allocs--;
}

int sf_index_alloc_add(sf_index_t *idx, const char *holder, sf_node_id node, int64_t cpu_milli,
                       int64_t mem_bytes, const sf_pick_t *picks, size_t npicks, unsigned flags,
                       sf_alloc_id *out)
{
  if (holder == NULL || holder[0] == '\0' || !sf_index_node_live(idx, node) || cpu_milli < 0 ||
      mem_bytes < 0 || (npicks > 0 && picks == NULL))
    return SF_EINVAL;
  if (sf_index_alloc_find(idx, holder) >= 0)
    return SF_EEXIST;
  for (size_t k = 0; k < npicks; k++) {
    if (!sf_index_dev_live(idx, picks[k].dev))
      return SF_ENOENT;
    if (!sf__index_dev_on(idx, picks[k].dev, node))
      return SF_EINVAL;
  }
  sf_alloc_id id;
  TAKE_SLOT(idx, allocs, nallocs, alloccap, free_allocs, nfree_allocs, fa_cap, id);
  sf__alloc_t *a = &idx->allocs[id];
  a->used = true;
  a->holder = sf_xstrdup(holder);
  a->node = node;
  a->cpu = cpu_milli;
  a->mem = mem_bytes;
  a->npicks = npicks;
  a->picks = sf_xcalloc(npicks, sizeof(*a->picks));
  a->cnames = sf_xcalloc(npicks, sizeof(*a->cnames));
  a->ncons = sf_xcalloc(npicks, sizeof(*a->ncons));
  for (size_t k = 0; k < npicks; k++) {
    const sf__dev_t *dv = &idx->devs[picks[k].dev];
    sf_milli_t *c = sf_xcalloc(dv->ncaps, sizeof(*c));
    a->cnames[k] = sf_xcalloc(dv->ncaps, sizeof(**a->cnames));
    for (uint32_t j = 0; j < dv->ncaps; j++) {
      c[j] = !dv->shared                 ? 0
             : picks[k].whole            ? dv->caps[j].value
             : picks[k].consumed != NULL ? picks[k].consumed[j]
                                         : 0;
      a->cnames[k][j] = dv->caps[j].name;
    }
    a->ncons[k] = dv->ncaps;
    a->picks[k] = (sf_pick_t){picks[k].dev, c, picks[k].whole};
  }
  sf_map_put(&idx->alloc_by_holder, holder, strlen(holder), id);
  idx->live_allocs++;
  alloc_apply(idx, a, +1);
  if (!(flags & SF_ALLOC_FORCE) && alloc_over(idx, a)) {
    alloc_apply(idx, a, -1);
    alloc_release(idx, id);
    return SF_ENOSPC;
  }
  if (out)
    *out = id;
  return 0;
}

int sf_index_alloc_remove(sf_index_t *idx, sf_alloc_id id)
{
  if (id < 0 || (size_t)id >= idx->nallocs || !idx->allocs[id].used)
    return SF_ENOENT;
  sf__alloc_t *a = &idx->allocs[id];
  alloc_apply(idx, a, -1);
  for (size_t k = 0; k < a->npicks; k++) {
    sf_dev_id d = a->picks[k].dev;
    sf__dev_t *dv = &idx->devs[d];
    if (dv->retired && dv->holders == 0) {
      dv->retired = false; /* sf__index_dev_drop frees it now */
      sf__index_dev_drop(idx, d, dv->pool < 0);
    }
  }
  alloc_release(idx, id);
  return 0;
}

void sf__index_alloc_suspend(sf_index_t *idx, sf_alloc_id id, bool on)
{
  assert(id >= 0 && (size_t)id < idx->nallocs && idx->allocs[id].used);
  alloc_apply(idx, &idx->allocs[id], on ? -1 : +1);
}

void sf__index_alloc_usage(const sf_index_t *idx, sf_alloc_id id, int64_t *cpu_milli,
                           int64_t *mem_bytes, const char ****cnames, const uint32_t **ncons)
{
  const sf__alloc_t *a = &idx->allocs[id];
  *cpu_milli = a->cpu;
  *mem_bytes = a->mem;
  *cnames = a->cnames;
  *ncons = a->ncons;
}
