/*
 * Allocated claims and DeviceTaintRules in the index.
 *
 * A claim with status.allocation is the API server's truth: it is recorded
 * as a forced allocation of holder "namespace/name" on the allocation's node
 * (its nodeSelector, else the node of its first device), with the
 * consumedCapacity of each shared device; a result without shareID holds
 * its shared device whole (sf_pick_t.whole: nothing else may take it).
 * Devices not published (yet) are left out and picked up when their pool
 * republishes, which re-records every claim. Admin-access results consume nothing, as in DRA.
 */
#include <stdio.h>
#include <string.h>
#include "cluster_int.h"

#define KEY_MAX 512

void sf__claim_unrecord(sf_cluster_t *c, const sf_meta_t *m)
{
  char key[KEY_MAX];
  sf_alloc_id a = sf_index_alloc_find(c->idx, sf__obj_key(m, key, sizeof key));
  if (a >= 0)
    sf_index_alloc_remove(c->idx, a);
}

/* Adds result r's consumption on shared device `dev` into `into` (ncaps entries). */
static void consume(const sf_cluster_t *c, sf_dev_id dev, const sf_dresult_t *r, sf_milli_t *into)
{
  char buf[KEY_MAX];
  for (size_t k = 0; k < r->nconsumed; k++) {
    int i = sf_index_dev_cap_find(c->idx, dev,
                                  sf__qualify(r->driver, r->consumed[k].name, buf, sizeof buf));
    if (i >= 0)
      into[i] += r->consumed[k].value;
  }
}

/* Picks of the claim's results on one node; *node is chosen when < 0. Returns the count. */
static size_t picks_of(const sf_cluster_t *c, const sf_rclaim_t *cl, sf_node_id *node,
                       sf_pick_t *picks)
{
  size_t n = 0;
  for (size_t i = 0; i < cl->nresults; i++) {
    const sf_dresult_t *r = &cl->results[i];
    sf_dev_id dev = sf_index_dev_find(c->idx, r->driver, r->pool, r->device);
    if (r->admin_access || dev < 0 || !sf_index_dev_live(c->idx, dev))
      continue;
    if (*node < 0)
      *node = sf_index_dev_node(c->idx, dev);
    if (sf_index_dev_node(c->idx, dev) != *node)
      continue;
    size_t k = 0;
    while (k < n && picks[k].dev != dev)
      k++;
    bool shared = sf_index_dev_shared(c->idx, dev);
    if (k == n) {
      picks[n].dev = dev;
      picks[n++].consumed = shared
                                ? sf_xcalloc(sf_index_dev_ncaps(c->idx, dev) + 1, sizeof(sf_milli_t))
                                : NULL;
    }
    /* A result without a shareID holds a shared device exclusively: DRA counts it among the
     * allocated devices, not the shares, so nothing else may be placed on it, whether or not
     * the device publishes capacities. */
    if (shared && !r->share_id)
      picks[k].whole = true;
    else if (shared)
      consume(c, dev, r, (sf_milli_t *)(uintptr_t)picks[k].consumed);
  }
  return n;
}

void sf__claim_record(sf_cluster_t *c, const sf_rclaim_t *cl)
{
  char key[KEY_MAX];
  sf__claim_unrecord(c, &cl->meta);
  if (!cl->allocated || cl->nresults == 0)
    return;
  sf_node_id node = cl->alloc_node ? sf_index_node_find(c->idx, cl->alloc_node) : -1;
  if (cl->alloc_node && node < 0)
    return; /* the node publishes nothing (yet) */
  sf_pick_t *picks = sf_xcalloc(cl->nresults, sizeof(*picks));
  size_t n = picks_of(c, cl, &node, picks);
  sf_alloc_id a;
  if (n > 0)
    sf_index_alloc_add(c->idx, sf__obj_key(&cl->meta, key, sizeof key), node, 0, 0, picks, n,
                       SF_ALLOC_FORCE, &a);
  for (size_t i = 0; i < n; i++)
    free((void *)(uintptr_t)picks[i].consumed);
  free(picks);
}

void sf__claims_unrecord_all(sf_cluster_t *c)
{
  const store_t *s = &c->stores[SF_KIND_RESOURCE_CLAIM];
  for (size_t i = 0; i < s->n; i++)
    sf__claim_unrecord(c, &s->objs[i]->u.meta);
}

void sf__claims_record_all(sf_cluster_t *c)
{
  const store_t *s = &c->stores[SF_KIND_RESOURCE_CLAIM];
  for (size_t i = 0; i < s->n; i++)
    sf__claim_record(c, &s->objs[i]->u.claim);
}

/* ---- the claims of each pool ---- */

/* Index of the pool's claim set (created when `create`), or -1. */
static int32_t cset_of(sf_cluster_t *c, const char *driver, const char *pool, bool create)
{
  char pk[KEY_MAX];
  size_t len = sf__pool_keylen(driver, pool, pk, sizeof pk);
  int32_t k = sf_map_get(&c->cset_keys, pk, len);
  if (k >= 0 || !create)
    return k;
  sf_xgrow(&c->csets, &c->capcsets, c->ncsets + 1, sizeof(*c->csets));
  c->csets[c->ncsets] = (cset_t){NULL, 0, 0};
  sf_map_put(&c->cset_keys, pk, len, (int32_t)c->ncsets);
  return (int32_t)c->ncsets++;
}

static cplace_t *place_in(const slot_ext_t *e, uint32_t set)
{
  for (uint32_t i = 0; i < e->n; i++)
    if (e->places[i].set == set)
      return &e->places[i];
  return NULL;
}

void sf__claim_pools_add(sf_cluster_t *c, size_t slot)
{
  store_t *s = &c->stores[SF_KIND_RESOURCE_CLAIM];
  const sf_rclaim_t *cl = &s->objs[slot]->u.claim;
  slot_ext_t *e = &s->ext[slot];
  free(e->places);
  e->places = NULL;
  e->n = 0;
  if (!cl->allocated || cl->nresults == 0)
    return;
  e->places = sf_xmalloc(cl->nresults * sizeof(*e->places));
  for (size_t i = 0; i < cl->nresults; i++) {
    uint32_t k = (uint32_t)cset_of(c, cl->results[i].driver, cl->results[i].pool, true);
    if (place_in(e, k))
      continue; /* two results on one pool: one place */
    cset_t *set = &c->csets[k];
    sf_xgrow(&set->slots, &set->cap, set->n + 1, sizeof(*set->slots));
    e->places[e->n++] = (cplace_t){k, (uint32_t)set->n};
    set->slots[set->n++] = (uint32_t)slot;
  }
}

void sf__claim_pools_del(sf_cluster_t *c, size_t slot)
{
  store_t *s = &c->stores[SF_KIND_RESOURCE_CLAIM];
  slot_ext_t *e = &s->ext[slot];
  for (uint32_t i = 0; i < e->n; i++) {
    cplace_t p = e->places[i];
    cset_t *set = &c->csets[p.set];
    uint32_t last = set->slots[--set->n];
    if (p.pos == set->n)
      continue;
    set->slots[p.pos] = last; /* the set's last claim fills the hole */
    place_in(&s->ext[last], p.set)->pos = p.pos;
  }
  free(e->places);
  e->places = NULL;
  e->n = 0;
}

void sf__claim_pools_moved(sf_cluster_t *c, size_t slot)
{
  const slot_ext_t *e = &c->stores[SF_KIND_RESOURCE_CLAIM].ext[slot];
  for (uint32_t i = 0; i < e->n; i++)
    c->csets[e->places[i].set].slots[e->places[i].pos] = (uint32_t)slot;
}

void sf__claim_pools_reset(sf_cluster_t *c)
{
  for (size_t i = 0; i < c->ncsets; i++)
    c->csets[i].n = 0;
}

void sf__claim_pools_free(sf_cluster_t *c)
{
  for (size_t i = 0; i < c->ncsets; i++)
    free(c->csets[i].slots);
  free(c->csets);
  sf_map_dispose(&c->cset_keys);
}

/* Unrecords (record false) or records every claim allocated on the slice's pool. */
static void claims_on_pool(sf_cluster_t *c, const sf_slice_t *sl, bool record)
{
  int32_t k = cset_of(c, sl->driver, sl->pool, false);
  if (k < 0)
    return;
  const store_t *s = &c->stores[SF_KIND_RESOURCE_CLAIM];
  const cset_t *set = &c->csets[k];
  for (size_t i = 0; i < set->n; i++) {
    const sf_object_t *o = s->objs[set->slots[i]];
    if (record)
      sf__claim_record(c, &o->u.claim);
    else
      sf__claim_unrecord(c, &o->u.meta);
  }
}

void sf__claims_unrecord_pool(sf_cluster_t *c, const sf_slice_t *sl)
{
  claims_on_pool(c, sl, false);
}
void sf__claims_record_pool(sf_cluster_t *c, const sf_slice_t *sl)
{
  claims_on_pool(c, sl, true);
}

static bool eq_or_any(const char *want, const char *have)
{
  return !want || !*want || !strcmp(want, have);
}

void sf__rule_apply(sf_cluster_t *c, const sf_taint_rule_t *r)
{
  sf_index_taint_rule_clear(c->idx, r->meta.name);
  /* A taint on devices slicefit cannot pick out is left off: a wrong taint would turn a
   * node down for sure, a missing one only lets the in-tree plugin decide. */
  if (r->by_class)
    return;
  for (sf_dev_id d = 0; d < sf_index_dev_end(c->idx); d++) {
    if (!sf_index_dev_live(c->idx, d))
      continue;
    if (!eq_or_any(r->driver, sf_index_dev_driver(c->idx, d)) ||
        !eq_or_any(r->pool, sf_index_dev_pool(c->idx, d)) ||
        !eq_or_any(r->device, sf_index_dev_name(c->idx, d)))
      continue;
    sf_index_taint_rule_add(c->idx, r->meta.name, d, &r->taint);
  }
}

void sf__rules_apply_all(sf_cluster_t *c)
{
  const store_t *s = &c->stores[SF_KIND_DEVICE_TAINT_RULE];
  for (size_t i = 0; i < s->n; i++)
    sf__rule_apply(c, &s->objs[i]->u.rule);
}
