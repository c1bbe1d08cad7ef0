/*
 * Allocated claims and DeviceTaintRules in the index.
 *
 * A claim with status.allocation is the API server's truth: it is recorded
 * as a forced allocation of holder "namespace/name" on the allocation's node
 * (its nodeSelector, else the node of its first device), with the
 * consumedCapacity of each shared device. Devices not published (yet) are
 * left out and picked up when their pool republishes, which re-records
 * every claim. Admin-access results consume nothing, as in DRA.
 */
#include <stdio.h>
#include <string.h>
#include "cluster_int.h"

#define KEY_MAX 512

void sf__claim_unrecord(sf_cluster_t *c, const sf_meta_t *m) {
  char key[KEY_MAX];
  sf_alloc_id a = sf_index_alloc_find(c->idx, sf__obj_key(m, key, sizeof key));
  if (a >= 0) sf_index_alloc_remove(c->idx, a);
}

/* Adds result r's consumption on shared device `dev` into `into` (ncaps entries). */
static void consume(const sf_cluster_t *c, sf_dev_id dev, const sf_dresult_t *r, sf_milli_t *into) {
  char buf[KEY_MAX];
  for (size_t k = 0; k < r->nconsumed; k++) {
    int i = sf_index_dev_cap_find(c->idx, dev,
                                  sf__qualify(r->driver, r->consumed[k].name, buf, sizeof buf));
    if (i >= 0) into[i] += r->consumed[k].value;
  }
}

/* Picks of the claim's results on one node; *node is chosen when < 0. Returns the count. */
static size_t picks_of(const sf_cluster_t *c, const sf_rclaim_t *cl, sf_node_id *node,
                       sf_pick_t *picks) {
  size_t n = 0;
  for (size_t i = 0; i < cl->nresults; i++) {
    const sf_dresult_t *r = &cl->results[i];
    sf_dev_id dev = sf_index_dev_find(c->idx, r->driver, r->pool, r->device);
    if (r->admin_access || dev < 0 || !sf_index_dev_live(c->idx, dev)) continue;
    if (*node < 0) *node = sf_index_dev_node(c->idx, dev);
    if (sf_index_dev_node(c->idx, dev) != *node) continue;
    size_t k = 0;
    while (k < n && picks[k].dev != dev) k++;
    bool shared = sf_index_dev_shared(c->idx, dev);
    if (k == n) {
      picks[n].dev = dev;
      picks[n++].consumed =
          shared ? sf_xcalloc(sf_index_dev_ncaps(c->idx, dev) + 1, sizeof(sf_milli_t)) : NULL;
    }
    if (shared) consume(c, dev, r, (sf_milli_t *)(uintptr_t)picks[k].consumed);
  }
  return n;
}

void sf__claim_record(sf_cluster_t *c, const sf_rclaim_t *cl) {
  char key[KEY_MAX];
  sf__claim_unrecord(c, &cl->meta);
  if (!cl->allocated || cl->nresults == 0) return;
  sf_node_id node = cl->alloc_node ? sf_index_node_find(c->idx, cl->alloc_node) : -1;
  if (cl->alloc_node && node < 0) return;  /* the node publishes nothing (yet) */
  sf_pick_t *picks = sf_xcalloc(cl->nresults, sizeof(*picks));
  size_t n = picks_of(c, cl, &node, picks);
  sf_alloc_id a;
  if (n > 0)
    sf_index_alloc_add(c->idx, sf__obj_key(&cl->meta, key, sizeof key), node, 0, 0, picks, n,
                       SF_ALLOC_FORCE, &a);
  for (size_t i = 0; i < n; i++) free((void *)(uintptr_t)picks[i].consumed);
  free(picks);
}

void sf__claims_unrecord_all(sf_cluster_t *c) {
  const store_t *s = &c->stores[SF_KIND_RESOURCE_CLAIM];
  for (size_t i = 0; i < s->n; i++) sf__claim_unrecord(c, &s->objs[i]->u.meta);
}

void sf__claims_record_all(sf_cluster_t *c) {
  const store_t *s = &c->stores[SF_KIND_RESOURCE_CLAIM];
  for (size_t i = 0; i < s->n; i++) sf__claim_record(c, &s->objs[i]->u.claim);
}

static void pool_key(const char *driver, const char *pool, char *buf, size_t len) {
  snprintf(buf, len, "%s\x1f%s", driver, pool);
}

void sf__claim_pools(sf_cluster_t *c, const sf_object_t *o, bool add) {
  const sf_rclaim_t *cl = &o->u.claim;
  char key[512], pk[512];
  sf__obj_key(&cl->meta, key, sizeof key);
  for (size_t i = 0; cl->allocated && i < cl->nresults; i++) {
    pool_key(cl->results[i].driver, cl->results[i].pool, pk, sizeof pk);
    json_t *set = json_object_get(c->claim_pools, pk);
    if (add) {
      if (!set) json_object_set_new(c->claim_pools, pk, set = json_object());
      json_object_set_new(set, key, json_true());
    } else if (set) {
      json_object_del(set, key);  /* an empty set stays: pools are few, and churn costs */
    }
  }
}

/* Unrecords (record false) or records every claim allocated on the slice's pool. */
static void claims_on_pool(sf_cluster_t *c, const sf_slice_t *sl, bool record) {
  char pk[512];
  const char *key;
  json_t *v;
  pool_key(sl->driver, sl->pool, pk, sizeof pk);
  json_object_foreach(json_object_get(c->claim_pools, pk), key, v) {
    const sf_object_t *o = sf__store_get(&c->stores[SF_KIND_RESOURCE_CLAIM], key);
    if (!o) continue;
    if (record) sf__claim_record(c, &o->u.claim);
    else sf__claim_unrecord(c, &o->u.meta);
  }
}

void sf__claims_unrecord_pool(sf_cluster_t *c, const sf_slice_t *sl) { claims_on_pool(c, sl, false); }
void sf__claims_record_pool(sf_cluster_t *c, const sf_slice_t *sl) { claims_on_pool(c, sl, true); }

static bool eq_or_any(const char *want, const char *have) { return !want || !*want || !strcmp(want, have); }

void sf__rule_apply(sf_cluster_t *c, const sf_taint_rule_t *r) {
  sf_index_taint_rule_clear(c->idx, r->meta.name);
  /* A taint on devices slicefit cannot pick out is left off: a wrong taint would turn a
   * node down for sure, a missing one only lets the in-tree plugin decide. */
  if (r->by_class) return;
  for (sf_dev_id d = 0; d < sf_index_dev_end(c->idx); d++) {
    if (!sf_index_dev_live(c->idx, d)) continue;
    if (!eq_or_any(r->driver, sf_index_dev_driver(c->idx, d)) ||
        !eq_or_any(r->pool, sf_index_dev_pool(c->idx, d)) ||
        !eq_or_any(r->device, sf_index_dev_name(c->idx, d)))
      continue;
    sf_index_taint_rule_add(c->idx, r->meta.name, d, &r->taint);
  }
}

void sf__rules_apply_all(sf_cluster_t *c) {
  const store_t *s = &c->stores[SF_KIND_DEVICE_TAINT_RULE];
  for (size_t i = 0; i < s->n; i++) sf__rule_apply(c, &s->objs[i]->u.rule);
}
