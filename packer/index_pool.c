/*
 * A node's published pools (a ResourceSlice's driver and pool) and their
 * devices: checked whole before anything changes, then applied. Devices
 * that are republished keep what their allocations consume (re-matched by
 * capacity name when the layout changed); devices that are not are freed,
 * or retired until their last allocation goes. Shared counters are
 * recounted from the held devices, and the node (and every node mirroring
 * one of the pool's devices) gets its device order rebuilt.
 */
#include <stdlib.h>
#include <string.h>
#include "index_priv.h"

void sf__index_dev_free_parts(sf__dev_t *d)
{
  for (uint32_t i = 0; i < d->ncaps; i++)
    sf__cfree(d->caps[i].policy.valid);
  free(d->attrs);
  free(d->caps);
  free(d->cuses);
  free(d->taints);
}

static int32_t pool_find(const sf_index_t *idx, sf_node_id node, const char *driver, const char *pool)
{
  const sf__node_t *n = &idx->nodes[node];
  for (size_t i = 0; i < n->npools; i++) {
    const sf__pool_t *p = &idx->pools[n->pools[i]];
    if (strcmp(p->driver, driver) == 0 && strcmp(p->name, pool) == 0)
      return n->pools[i];
  }
  return -1;
}

static bool policy_ok(const sf_capacity_t *c)
{
  if (c->value < 0)
    return false;
  if (!c->has_policy)
    return true;
  const sf_request_policy_t *p = &c->policy;
  for (size_t i = 0; i < p->nvalid; i++)
    if (p->valid[i] < 0 || (i > 0 && p->valid[i] <= p->valid[i - 1]))
      return false;
  if (p->nvalid > 0 && p->has_range)
    return false;
  if (p->has_range && (p->min < 0 || p->step < 0 || (p->max > 0 && p->max < p->min)))
    return false;
  return !(p->has_default && p->def < 0);
}

static int32_t counter_find(const sf_counter_t *cs, size_t n, const char *set, const char *name)
{
  for (size_t i = 0; i < n; i++)
    if (strcmp(cs[i].set, set) == 0 && strcmp(cs[i].counter, name) == 0)
      return (int32_t)i;
  return -1;
}

/* Everything sf_index_pool_set rejects, checked before anything changes. */
static int pool_check(const sf_device_spec_t *devs, size_t ndevs, const sf_counter_t *cs, size_t ncs,
                      uint64_t hash_seed)
{
  int err = 0;
  sf_map_t names;
  sf_map_init(&names, hash_seed);
  for (size_t i = 0; i < ncs && err == 0; i++)
    if (cs[i].set == NULL || cs[i].counter == NULL || cs[i].value < 0 ||
        counter_find(cs, i, cs[i].set, cs[i].counter) >= 0)
      err = SF_EINVAL;
  for (size_t i = 0; i < ndevs && err == 0; i++) {
    const sf_device_spec_t *d = &devs[i];
    if (d->name == NULL || d->name[0] == '\0' || sf_map_get(&names, d->name, strlen(d->name)) >= 0) {
      err = SF_EINVAL;
      break;
    }
    sf_map_put(&names, d->name, strlen(d->name), 1);
    /* DRA allows at most 32 attributes and capacities per device. */
    if (d->nattrs + d->ncaps > SF_DEVICE_FIELDS_MAX || d->ncounters > SF_DEVICE_FIELDS_MAX) {
      err = SF_E2BIG;
      break;
    }
    for (size_t c = 0; c < d->ncaps && err == 0; c++)
      if (d->caps[c].name == NULL || !policy_ok(&d->caps[c]))
        err = SF_EINVAL;
    for (size_t c = 0; c < d->ncounters && err == 0; c++)
      if (d->counters[c].value < 0 ||
          counter_find(cs, ncs, d->counters[c].set, d->counters[c].counter) < 0)
        err = SF_EINVAL;
    for (size_t a = 0; a < d->nattrs && err == 0; a++)
      if (d->attrs[a].name == NULL ||
          ((d->attrs[a].type == SF_ATTR_STRING || d->attrs[a].type == SF_ATTR_VERSION ||
            d->attrs[a].type == SF_ATTR_LIST) &&
           d->attrs[a].s == NULL))
        err = SF_EINVAL;
  }
  sf_map_dispose(&names);
  return err;
}

/* Same capacity names in the same order: consumed arrays stay aligned. */
static bool caps_same_layout(const sf__dev_t *d, const sf_device_spec_t *s, sf_index_t *idx)
{
  if (d->ncaps != s->ncaps)
    return false;
  for (uint32_t i = 0; i < d->ncaps; i++)
    if (d->caps[i].name != sf__index_istr(idx, s->caps[i].name))
      return false;
  return true;
}

/* Fills a device's attributes, capacities, counter uses and slice taints from its spec. */
static void dev_fill(sf_index_t *idx, sf__dev_t *d, const sf_device_spec_t *s, const sf_counter_t *cs,
                     size_t ncs)
{
  sf__taint_t *rule_taints = NULL;
  uint32_t nrule = 0;
  for (uint32_t i = 0; i < d->ntaints; i++)
    if (d->taints[i].rule != 0) {
      rule_taints = sf_xrealloc(rule_taints, (nrule + 1) * sizeof(*rule_taints));
      rule_taints[nrule++] = d->taints[i];
    }
  sf__index_dev_free_parts(d);
  d->nattrs = (uint32_t)s->nattrs;
  d->attrs = sf_xcalloc(s->nattrs, sizeof(*d->attrs));
  for (size_t i = 0; i < s->nattrs; i++) {
    d->attrs[i] = s->attrs[i];
    d->attrs[i].name = sf__index_istr(idx, s->attrs[i].name);
    d->attrs[i].s = s->attrs[i].s ? sf__index_istr(idx, s->attrs[i].s) : NULL;
  }
  d->ncaps = (uint32_t)s->ncaps;
  d->caps = sf_xcalloc(s->ncaps, sizeof(*d->caps));
  for (size_t i = 0; i < s->ncaps; i++) {
    sf__cap_t *c = &d->caps[i];
    c->name = sf__index_istr(idx, s->caps[i].name);
    c->value = c->free = s->caps[i].value;
    c->has_policy = s->caps[i].has_policy;
    c->policy = s->caps[i].policy;
    if (c->policy.nvalid) {
      sf_milli_t *v = sf_xmalloc(c->policy.nvalid * sizeof(*v));
      memcpy(v, s->caps[i].policy.valid, c->policy.nvalid * sizeof(*v));
      c->policy.valid = v;
    } else {
      c->policy.valid = NULL;
    }
  }
  d->ncuses = (uint32_t)s->ncounters;
  d->cuses = sf_xcalloc(s->ncounters, sizeof(*d->cuses));
  for (size_t i = 0; i < s->ncounters; i++) {
    d->cuses[i].counter = (uint32_t)counter_find(cs, ncs, s->counters[i].set, s->counters[i].counter);
    d->cuses[i].value = s->counters[i].value;
  }
  d->ntaints = (uint32_t)s->ntaints + nrule;
  d->taints = sf_xcalloc(d->ntaints, sizeof(*d->taints));
  for (size_t i = 0; i < s->ntaints; i++)
    d->taints[i].t = (sf_taint_t){sf__index_istr(idx, s->taints[i].key),
                                  sf__index_istr(idx, s->taints[i].value), s->taints[i].effect};
  if (nrule)
    memcpy(d->taints + s->ntaints, rule_taints, nrule * sizeof(*rule_taints));
  free(rule_taints);
  d->shared = s->allow_multiple;
}

/*
 * Re-applies what the allocations on device d consume after its capacity
 * layout changed: each allocation's amounts are matched to the new
 * capacities by name (a capacity that disappeared is dropped, a new one
 * starts unconsumed).
 */
static void dev_reconsume(sf_index_t *idx, sf_dev_id d)
{
  sf__dev_t *dv = &idx->devs[d];
  for (uint32_t c = 0; c < dv->ncaps; c++)
    dv->caps[c].free = dv->caps[c].value;
  for (size_t a = 0; a < idx->nallocs && dv->holders > 0; a++) {
    sf__alloc_t *al = &idx->allocs[a];
    for (size_t k = 0; al->used && k < al->npicks; k++) {
      if (al->picks[k].dev != d)
        continue;
      if (!dv->shared) {
        for (uint32_t c = 0; c < dv->ncaps; c++)
          dv->caps[c].free -= dv->caps[c].value;
        continue;
      }
      sf_milli_t *nc = sf_xcalloc(dv->ncaps, sizeof(*nc));
      const char **nn = sf_xcalloc(dv->ncaps, sizeof(*nn));
      for (uint32_t c = 0; c < dv->ncaps; c++) {
        nn[c] = dv->caps[c].name;
        for (uint32_t j = 0; j < al->ncons[k]; j++)
          if (al->cnames[k][j] == dv->caps[c].name)
            nc[c] = al->picks[k].consumed[j];
        if (al->picks[k].whole)
          nc[c] = dv->caps[c].value; /* held whole: all of a new capacity too */
        dv->caps[c].free -= nc[c];
      }
      sf__cfree(al->picks[k].consumed);
      free(al->cnames[k]);
      al->picks[k].consumed = nc;
      al->cnames[k] = nn;
      al->ncons[k] = dv->ncaps;
    }
  }
}

static void pool_recount(sf_index_t *idx, sf__pool_t *p)
{
  for (uint32_t i = 0; i < p->ncounters; i++)
    p->counters[i].free = p->counters[i].value;
  for (uint32_t k = 0; k < p->ndevs; k++) {
    const sf__dev_t *d = &idx->devs[p->devs[k]];
    for (uint32_t u = 0; d->holders > 0 && u < d->ncuses; u++)
      p->counters[d->cuses[u].counter].free -= d->cuses[u].value;
  }
}

static void dev_release(sf_index_t *idx, sf_dev_id d)
{
  sf__dev_t *dv = &idx->devs[d];
  while (dv->nmirrors > 0)
    sf__index_mirror_unlink(idx, dv->mirrors[dv->nmirrors - 1], d, true);
  free(dv->mirrors); /* not a part of the spec: dev_fill keeps it */
  char key[1024];
  size_t k = sf__index_dev_key(key, sizeof(key), dv->driver, dv->poolname, dv->name);
  sf_map_del(&idx->dev_by_key, key, k);
  if (dv->counted)
    idx->model_devs[dv->model_bit]--;
  sf__index_dev_free_parts(dv);
  memset(dv, 0, sizeof(*dv));
  sf__index_dev_touched(idx, d);
  GIVE_SLOT(idx, free_devs, nfree_devs, fd_cap, d);
}

/* Drops a device from its pool: freed now, or retired until its last allocation goes. */
void sf__index_dev_drop(sf_index_t *idx, sf_dev_id d, bool keep_in_pool)
{
  sf__dev_t *dv = &idx->devs[d];
  if (dv->holders > 0) {
    dv->retired = true;
    sf__index_dev_touched(idx, d);
    return;
  }
  if (!keep_in_pool && dv->pool >= 0) {
    sf__pool_t *p = &idx->pools[dv->pool];
    for (uint32_t k = 0; k < p->ndevs; k++)
      if (p->devs[k] == d) {
        memmove(p->devs + k, p->devs + k + 1, (p->ndevs - k - 1) * sizeof(*p->devs));
        p->ndevs--;
        break;
      }
  }
  dev_release(idx, d);
}

static sf_dev_id dev_new(sf_index_t *idx, sf_node_id node, int32_t pool, const char *driver,
                         const char *poolname, const char *name)
{
  sf_dev_id d;
  TAKE_SLOT(idx, devs, ndevs, devcap, free_devs, nfree_devs, fd_cap, d);
  sf__dev_t *dv = &idx->devs[d];
  dv->used = true;
  dv->node = node;
  dv->pool = pool;
  dv->driver = sf__index_istr(idx, driver);
  dv->poolname = sf__index_istr(idx, poolname);
  dv->name = sf__index_istr(idx, name);
  dv->model_bit = SF__MODELS;
  char key[1024];
  size_t k = sf__index_dev_key(key, sizeof(key), driver, poolname, name);
  sf_map_put(&idx->dev_by_key, key, k, d);
  sf__index_dev_touched(idx, d);
  idx->heap += sizeof(*dv);
  return d;
}

static int32_t pool_new(sf_index_t *idx, sf_node_id node, const char *driver, const char *pool)
{
  int32_t p;
  TAKE_SLOT(idx, pools, npools, poolcap, free_pools, nfree_pools, fp_cap, p);
  idx->pools[p].used = true;
  idx->pools[p].node = node;
  idx->pools[p].driver = sf__index_istr(idx, driver);
  idx->pools[p].name = sf__index_istr(idx, pool);
  sf__node_t *n = &idx->nodes[node];
  GROW(n->pools, n->poolcap, n->npools + 1);
  n->pools[n->npools++] = p;
  return p;
}

int sf_index_pool_set(sf_index_t *idx, sf_node_id node, const char *driver, const char *pool,
                      const sf_device_spec_t *devs, size_t ndevs, const sf_counter_t *counters,
                      size_t ncounters)
{
  char key[1024];
  if (!sf_index_node_live(idx, node) || driver == NULL || pool == NULL || driver[0] == '\0' ||
      (ndevs > 0 && devs == NULL) || (ncounters > 0 && counters == NULL))
    return SF_EINVAL;
  int err = pool_check(devs, ndevs, counters, ncounters, idx->hash_seed);
  for (size_t i = 0; i < ndevs && err == 0; i++) {
    if (sf__index_dev_key(key, sizeof(key), driver, pool, devs[i].name) == 0)
      return SF_EINVAL;
    sf_dev_id d = sf_index_dev_find(idx, driver, pool, devs[i].name);
    if (d >= 0 && idx->devs[d].node != node && idx->devs[d].holders > 0)
      err = SF_EBUSY; /* the pool moved to another node while allocated */
  }
  if (err)
    return err;
  int32_t p = pool_find(idx, node, driver, pool);
  if (p < 0)
    p = pool_new(idx, node, driver, pool);
  sf__pool_t *pl = &idx->pools[p];
  /* Old devices that are not republished go first. */
  for (uint32_t k = pl->ndevs; k-- > 0;) {
    sf__dev_t *dv = &idx->devs[pl->devs[k]];
    bool kept = false;
    for (size_t i = 0; i < ndevs && !kept; i++)
      kept = strcmp(dv->name, devs[i].name) == 0;
    if (!kept && !dv->retired)
      sf__index_dev_drop(idx, pl->devs[k], false);
  }
  free(pl->counters);
  pl->ncounters = (uint32_t)ncounters;
  pl->counters = sf_xcalloc(ncounters, sizeof(*pl->counters));
  for (size_t i = 0; i < ncounters; i++)
    pl->counters[i] = (sf__counter_t){sf__index_istr(idx, counters[i].set),
                                      sf__index_istr(idx, counters[i].counter), counters[i].value,
                                      counters[i].value};
  sf_dev_id *order = sf_xmalloc((ndevs + pl->ndevs + 1) * sizeof(*order));
  size_t norder = 0;
  for (size_t i = 0; i < ndevs; i++) {
    sf_dev_id d = sf_index_dev_find(idx, driver, pool, devs[i].name);
    if (d >= 0 && idx->devs[d].node != node) {
      sf__index_dev_drop(idx, d, false); /* published by another node before; free there */
      d = -1;
    }
    if (d < 0)
      d = dev_new(idx, node, p, driver, pool, devs[i].name);
    sf__dev_t *dv = &idx->devs[d];
    /* Held whole, a device takes all of its new amounts too: re-applied, not carried over. */
    bool same = caps_same_layout(dv, &devs[i], idx) && dv->wholes == 0;
    sf_milli_t used[SF_DEVICE_FIELDS_MAX] = {0};
    for (uint32_t c = 0; same && c < dv->ncaps; c++)
      used[c] = dv->caps[c].value - dv->caps[c].free;
    dv->retired = false;
    dev_fill(idx, dv, &devs[i], counters, ncounters);
    if (same)
      for (uint32_t c = 0; c < dv->ncaps; c++)
        dv->caps[c].free -= used[c];
    else
      dev_reconsume(idx, d);
    sf__index_dev_touched(idx, d);
    order[norder++] = d;
  }
  /* Retired devices stay in the pool (after the live ones) for counter accounting. */
  for (uint32_t k = 0; k < pl->ndevs; k++)
    if (idx->devs[pl->devs[k]].retired)
      order[norder++] = pl->devs[k];
  free(pl->devs);
  pl->devs = order;
  pl->ndevs = (uint32_t)norder;
  for (uint32_t k = 0; k < pl->ndevs; k++)
    if (idx->devs[pl->devs[k]].retired)
      idx->devs[pl->devs[k]].ncuses = 0; /* their counter sets are republished anew */
  pool_recount(idx, pl);
  sf__index_node_reorder(idx, node);
  /* Nodes that mirror devices of the pool see them change (or retire) too. */
  for (uint32_t k = 0; k < pl->ndevs; k++) {
    const sf__dev_t *dv = &idx->devs[pl->devs[k]];
    for (uint32_t m = 0; m < dv->nmirrors; m++)
      if (idx->nodes[dv->mirrors[m]].version != idx->stamp)
        sf__index_node_reorder(idx, dv->mirrors[m]);
  }
  return 0;
}

int sf_index_pool_remove(sf_index_t *idx, sf_node_id node, const char *driver, const char *pool)
{
  if (!sf_index_node_live(idx, node))
    return SF_ENOENT;
  int32_t p = pool_find(idx, node, driver, pool);
  if (p < 0)
    return SF_ENOENT;
  sf__pool_t *pl = &idx->pools[p];
  for (uint32_t k = 0; k < pl->ndevs; k++) {
    sf__dev_t *dv = &idx->devs[pl->devs[k]];
    dv->pool = -1;
    dv->ncuses = 0;
    sf__index_dev_drop(idx, pl->devs[k], true);
  }
  free(pl->counters);
  free(pl->devs);
  memset(pl, 0, sizeof(*pl));
  sf__node_t *n = &idx->nodes[node];
  sf__i32_remove(n->pools, &n->npools, p);
  GIVE_SLOT(idx, free_pools, nfree_pools, fp_cap, p);
  sf__index_node_reorder(idx, node);
  return 0;
}
