/*
 * The device-capacity index (layout and invariants in index_int.h).
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
#include <stdint.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "index_int.h"

/* free() for pointers the public structs declare const. */
static void cfree(const void *p)
{
  free((void *)(uintptr_t)p);
}

#define GROW(arr, cap, need) sf_xgrow(&(arr), &(cap), (need), sizeof(*(arr)))

/* ---- strings ---- */

sf_str_id sf_index_intern(sf_index_t *idx, const char *s)
{
  size_t n = strlen(s);
  if (n == 0)
    return 0;
  int32_t id = sf__map_get(&idx->strings, s, n);
  if (id >= 0)
    return (sf_str_id)id;
  GROW(idx->strs, idx->strcap, idx->nstrs + 1);
  sf__map_put(&idx->strings, s, n, (int32_t)idx->nstrs);
  idx->strs[idx->nstrs] = sf__map_key(&idx->strings, s, n);
  idx->heap += n + 1 + 32;
  return (sf_str_id)idx->nstrs++;
}

sf_str_id sf_index_lookup(const sf_index_t *idx, const char *s)
{
  int32_t id = sf__map_get(&idx->strings, s, strlen(s));
  return id < 0 ? 0 : (sf_str_id)id;
}

const char *sf_index_str(const sf_index_t *idx, sf_str_id id)
{
  return id < idx->nstrs ? idx->strs[id] : "";
}

static const char *istr(sf_index_t *idx, const char *s)
{
  if (s == NULL)
    return "";
  sf_str_id id = sf_index_intern(idx, s);  /* may grow strs: index after */
  return idx->strs[id];
}

/* ---- lifecycle ---- */

sf_index_t *sf_index_create(void)
{
  static _Atomic uint64_t serials;
  sf_index_t *idx = sf_xcalloc(1, sizeof(*idx));
  idx->serial = atomic_fetch_add(&serials, 1) + 1;
  sf__map_init(&idx->strings);
  sf__map_init(&idx->node_by_name);
  sf__map_init(&idx->dev_by_key);
  sf__map_init(&idx->alloc_by_holder);
  GROW(idx->strs, idx->strcap, 1);
  idx->strs[0] = "";
  idx->nstrs = 1;
  memcpy(idx->capacity, "memory", 7);
  memcpy(idx->model_attr, "productName", 12);
  return idx;
}

static void dev_free_parts(sf__dev_t *d)
{
  for (uint32_t i = 0; i < d->ncaps; i++)
    cfree(d->caps[i].policy.valid);
  free(d->attrs);
  free(d->caps);
  free(d->cuses);
  free(d->taints);
}

static void alloc_free_parts(sf__alloc_t *a)
{
  for (size_t k = 0; k < a->npicks; k++) {
    cfree(a->picks[k].consumed);
    free(a->cnames[k]);
  }
  free(a->holder);
  free(a->picks);
  free(a->cnames);
  free(a->ncons);
}

void sf_index_destroy(sf_index_t *idx)
{
  if (idx == NULL)
    return;
  for (size_t i = 0; i < idx->ndevs; i++)
    if (idx->devs[i].used)
      dev_free_parts(&idx->devs[i]);
  for (size_t i = 0; i < idx->npools; i++) {
    free(idx->pools[i].counters);
    free(idx->pools[i].devs);
  }
  for (size_t i = 0; i < idx->nnodes; i++) {
    free(idx->nodes[i].devs);
    free(idx->nodes[i].pools);
  }
  for (size_t i = 0; i < idx->nallocs; i++)
    if (idx->allocs[i].used)
      alloc_free_parts(&idx->allocs[i]);
  for (size_t i = 0; i < idx->ncaches; i++)
    free(idx->caches[i].res);
  free(idx->caches);
  free(idx->rules);
  free(idx->nodes);
  free(idx->pools);
  free(idx->devs);
  free(idx->allocs);
  free(idx->free_nodes);
  free(idx->free_pools);
  free(idx->free_devs);
  free(idx->free_allocs);
  free(idx->strs);
  sf__map_dispose(&idx->strings);
  sf__map_dispose(&idx->node_by_name);
  sf__map_dispose(&idx->dev_by_key);
  sf__map_dispose(&idx->alloc_by_holder);
  free(idx);
}

/* Slot allocation from a dense array with a free list. */
#define TAKE_SLOT(idx, arr, n, cap, fl, nfl, flcap, out)                        \
  do {                                                                         \
    if ((idx)->nfl > 0) {                                                      \
      (out) = (idx)->fl[--(idx)->nfl];                                         \
    } else {                                                                   \
      GROW((idx)->arr, (idx)->cap, (idx)->n + 1);                              \
      (out) = (int32_t)(idx)->n++;                                             \
    }                                                                          \
    memset(&(idx)->arr[(out)], 0, sizeof((idx)->arr[0]));                      \
  } while (0)
#define GIVE_SLOT(idx, fl, nfl, flcap, id)                                     \
  do {                                                                         \
    GROW((idx)->fl, (idx)->flcap, (idx)->nfl + 1);                             \
    (idx)->fl[(idx)->nfl++] = (id);                                            \
  } while (0)

/* ---- nodes ---- */

sf_node_id sf_index_node_find(const sf_index_t *idx, const char *name)
{
  return sf__map_get(&idx->node_by_name, name, strlen(name));
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
    n->name = istr(idx, spec->name);
    n->order = 1469598103934665603ull;
    for (const unsigned char *c = (const unsigned char *)spec->name; *c; c++)
      n->order = (n->order ^ *c) * 1099511628211ull;
    sf__map_put(&idx->node_by_name, spec->name, strlen(spec->name), id);
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
  if (cpu_alloc) *cpu_alloc = n->cpu_alloc;
  if (cpu_used) *cpu_used = n->cpu_used;
  if (mem_alloc) *mem_alloc = n->mem_alloc;
  if (mem_used) *mem_used = n->mem_used;
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
  sf__map_del(&idx->node_by_name, n->name, strlen(n->name));
  free(n->devs);
  free(n->pools);
  memset(n, 0, sizeof(*n));
  GIVE_SLOT(idx, free_nodes, nfree_nodes, fn_cap, node);
  idx->live_nodes--;
  return 0;
}

/* ---- devices: keys, derived facts, selector caches ---- */

static size_t dev_key(char *buf, size_t len, const char *driver, const char *pool, const char *name)
{
  size_t a = strlen(driver), b = strlen(pool), c = strlen(name);
  if (a + b + c + 3 > len)
    return 0;
  memcpy(buf, driver, a);
  buf[a] = '\0';
  memcpy(buf + a + 1, pool, b);
  buf[a + 1 + b] = '\0';
  memcpy(buf + a + b + 2, name, c);
  return a + b + c + 2;
}

sf_dev_id sf_index_dev_find(const sf_index_t *idx, const char *driver, const char *pool,
                            const char *name)
{
  char key[1024];
  size_t k = dev_key(key, sizeof(key), driver, pool, name);
  return k == 0 ? -1 : sf__map_get(&idx->dev_by_key, key, k);
}

void sf__index_dev_touched(sf_index_t *idx, sf_dev_id d)
{
  for (size_t i = 0; i < idx->ncaches; i++)
    if ((size_t)d < idx->caches[i].cap)
      idx->caches[i].res[d] = 0;
}

/* Does the qualified `full` name have the id part (or the whole name) `want`? */
static bool name_is(const char *full, const char *want)
{
  if (want[0] == '\0')
    return false;
  if (strcmp(full, want) == 0)
    return true;
  const char *slash = strrchr(full, '/');
  return slash != NULL && strchr(want, '/') == NULL && strcmp(slash + 1, want) == 0;
}

static const sf_attr_t *attr_named(const sf__dev_t *d, const char *want)
{
  for (uint32_t a = 0; a < d->nattrs; a++)
    if (name_is(d->attrs[a].name, want))
      return &d->attrs[a];
  return NULL;
}

uint8_t sf__index_model_bit(sf_index_t *idx, sf_str_id model)
{
  if (model == 0)
    return SF__MODELS;
  for (uint32_t i = 0; i < idx->nmodels; i++)
    if (idx->model_ids[i] == model)
      return (uint8_t)i;
  if (idx->nmodels >= SF__MODELS)
    return SF__MODELS;
  idx->model_ids[idx->nmodels] = model;
  return (uint8_t)idx->nmodels++;
}

static bool ci_contains(const char *hay, const char *needle)
{
  size_t n = strlen(needle);
  for (; *hay; hay++)
    if (strncasecmp(hay, needle, n) == 0)
      return true;
  return false;
}

static const sf_island_rule_t *island_rule(const sf_index_t *idx, const sf__node_t *n,
                                           const char *model)
{
  for (size_t i = 0; i < idx->nrules; i++) {
    const sf_island_rule_t *r = &idx->rules[i];
    if (strncmp(n->name, r->node_prefix, strlen(r->node_prefix)) == 0 && ci_contains(model, r->model))
      return r;
  }
  return NULL;
}

/* Recomputes model, primary capacity and islands for every device of a node. */
static void derive_node(sf_index_t *idx, sf_node_id node)
{
  sf__node_t *n = &idx->nodes[node];
  int16_t next_island = 0;
  for (size_t k = 0; k < n->ndevs; k++) {
    sf__dev_t *d = &idx->devs[n->devs[k]];
    d->primary = -1;
    for (uint32_t c = 0; c < d->ncaps && d->primary < 0; c++)
      if (name_is(d->caps[c].name, idx->capacity))
        d->primary = (int16_t)c;
    if (d->counted)
      idx->model_devs[d->model_bit]--;
    d->counted = true;
    d->model = 0;
    d->island = -1;
    for (uint32_t a = 0; a < d->nattrs; a++)
      if (name_is(d->attrs[a].name, idx->model_attr) && d->attrs[a].s != NULL)
        d->model = sf_index_lookup(idx, d->attrs[a].s);
    d->model_bit = sf__index_model_bit(idx, d->model);
    idx->model_devs[d->model_bit]++;
    idx->model_rep[d->model_bit] = n->devs[k];
  }
  /* Islands from an attribute: equal values share an island. */
  for (size_t k = 0; k < n->ndevs && idx->island_attr[0]; k++) {
    sf__dev_t *d = &idx->devs[n->devs[k]];
    const sf_attr_t *a = attr_named(d, idx->island_attr);
    if (a == NULL || d->island >= 0)
      continue;
    d->island = next_island;
    for (size_t j = k + 1; j < n->ndevs; j++) {
      const sf_attr_t *b = attr_named(&idx->devs[n->devs[j]], idx->island_attr);
      if (b != NULL && b->type == a->type && b->i == a->i && b->s == a->s)
        idx->devs[n->devs[j]].island = next_island;
    }
    next_island++;
  }
  /* Islands from the map: groups of SIZE devices of a model, in device order. */
  for (size_t k = 0; k < n->ndevs && idx->nrules; k++) {
    sf__dev_t *d = &idx->devs[n->devs[k]];
    if (d->island >= 0 || d->model == 0)
      continue;
    const sf_island_rule_t *r = island_rule(idx, n, sf_index_str(idx, d->model));
    if (r == NULL)
      continue;
    uint32_t in = 0;
    for (size_t j = k; j < n->ndevs && in < r->size; j++) {
      sf__dev_t *e = &idx->devs[n->devs[j]];
      if (e->island < 0 && e->model == d->model) {
        e->island = next_island;
        in++;
      }
    }
    next_island++;
  }
  n->version = ++idx->stamp;
}

void sf_index_apply_policy(sf_index_t *idx, const sf_policy_t *pol)
{
  memcpy(idx->capacity, pol->capacity, sizeof(idx->capacity));
  memcpy(idx->model_attr, pol->model_attribute, sizeof(idx->model_attr));
  memcpy(idx->island_attr, pol->island_attribute, sizeof(idx->island_attr));
  free(idx->rules);
  idx->rules = NULL;
  idx->nrules = pol->nisland_rules;
  if (idx->nrules) {
    idx->rules = sf_xmalloc(idx->nrules * sizeof(*idx->rules));
    memcpy(idx->rules, pol->island_rules, idx->nrules * sizeof(*idx->rules));
  }
  for (sf_node_id i = 0; i < (sf_node_id)idx->nnodes; i++)
    if (idx->nodes[i].used)
      derive_node(idx, i);
}

/* The cache of one selector, created on first use and sized for every device id. */
static sf__selcache_t *selcache(sf_index_t *idx, const sf_selector_t *sel)
{
  sf__selcache_t *c = NULL;
  for (size_t i = 0; i < idx->ncaches; i++)
    if (idx->caches[i].key == sel->cache_key)
      return &idx->caches[i];
  if (idx->ncaches >= 256) {  /* bounded: drop all and start again */
    for (size_t i = 0; i < idx->ncaches; i++)
      free(idx->caches[i].res);
    idx->ncaches = 0;
    idx->cache_gen++;
  }
  GROW(idx->caches, idx->cachecap, idx->ncaches + 1);
  c = &idx->caches[idx->ncaches++];
  memset(c, 0, sizeof(*c));
  c->key = sel->cache_key;
  return c;
}

static void selcache_fit(sf__selcache_t *c, size_t n)
{
  if (n <= c->cap)
    return;
  c->res = sf_xrealloc(c->res, n);
  memset(c->res + c->cap, 0, n - c->cap);
  c->cap = n;
}

uint8_t *sf__index_selcache(sf_index_t *idx, const sf_selector_t *sel)
{
  if (sel->cache_key == 0)
    return NULL;
  sf__selcache_t *c = selcache(idx, sel);
  selcache_fit(c, idx->devcap > idx->ndevs ? idx->devcap : idx->ndevs);
  return c->res;
}

sf_match_t sf__index_select(sf_index_t *idx, const sf_selector_t *sel, sf_dev_id d)
{
  if (sel->cache_key == 0)
    return sel->fn(sel->ctx, idx, d);
  sf__selcache_t *c = selcache(idx, sel);
  if ((size_t)d >= c->cap)
    selcache_fit(c, idx->devcap > (size_t)d ? idx->devcap : (size_t)d + 1);
  if (c->res[d] == 0)
    c->res[d] = (uint8_t)(1 + sel->fn(sel->ctx, idx, d));
  return (sf_match_t)(c->res[d] - 1);
}

/* ---- pools ---- */

static int32_t pool_find(const sf_index_t *idx, sf_node_id node, const char *driver,
                         const char *pool)
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
static int pool_check(const sf_device_spec_t *devs, size_t ndevs, const sf_counter_t *cs, size_t ncs)
{
  int err = 0;
  sf__map_t names;
  sf__map_init(&names);
  for (size_t i = 0; i < ncs && err == 0; i++)
    if (cs[i].set == NULL || cs[i].counter == NULL || cs[i].value < 0 ||
        counter_find(cs, i, cs[i].set, cs[i].counter) >= 0)
      err = SF_EINVAL;
  for (size_t i = 0; i < ndevs && err == 0; i++) {
    const sf_device_spec_t *d = &devs[i];
    if (d->name == NULL || d->name[0] == '\0' || sf__map_get(&names, d->name, strlen(d->name)) >= 0) {
      err = SF_EINVAL;
      break;
    }
    sf__map_put(&names, d->name, strlen(d->name), 1);
    /* DRA allows at most 32 attributes and capacities per device. */
    if (d->nattrs + d->ncaps > SF_DEVICE_FIELDS_MAX || d->ncounters > SF_DEVICE_FIELDS_MAX) {
      err = SF_E2BIG;
      break;
    }
    for (size_t c = 0; c < d->ncaps && err == 0; c++)
      if (d->caps[c].name == NULL || !policy_ok(&d->caps[c]))
        err = SF_EINVAL;
    for (size_t c = 0; c < d->ncounters && err == 0; c++)
      if (d->counters[c].value < 0 || counter_find(cs, ncs, d->counters[c].set, d->counters[c].counter) < 0)
        err = SF_EINVAL;
    for (size_t a = 0; a < d->nattrs && err == 0; a++)
      if (d->attrs[a].name == NULL || ((d->attrs[a].type == SF_ATTR_STRING ||
                                        d->attrs[a].type == SF_ATTR_VERSION) && d->attrs[a].s == NULL))
        err = SF_EINVAL;
  }
  sf__map_dispose(&names);
  return err;
}

/* Same capacity names in the same order: consumed arrays stay aligned. */
static bool caps_same_layout(const sf__dev_t *d, const sf_device_spec_t *s, sf_index_t *idx)
{
  if (d->ncaps != s->ncaps)
    return false;
  for (uint32_t i = 0; i < d->ncaps; i++)
    if (d->caps[i].name != istr(idx, s->caps[i].name))
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
  dev_free_parts(d);
  d->nattrs = (uint32_t)s->nattrs;
  d->attrs = sf_xcalloc(s->nattrs, sizeof(*d->attrs));
  for (size_t i = 0; i < s->nattrs; i++) {
    d->attrs[i] = s->attrs[i];
    d->attrs[i].name = istr(idx, s->attrs[i].name);
    d->attrs[i].s = s->attrs[i].s ? istr(idx, s->attrs[i].s) : NULL;
  }
  d->ncaps = (uint32_t)s->ncaps;
  d->caps = sf_xcalloc(s->ncaps, sizeof(*d->caps));
  for (size_t i = 0; i < s->ncaps; i++) {
    sf__cap_t *c = &d->caps[i];
    c->name = istr(idx, s->caps[i].name);
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
    d->taints[i].t = (sf_taint_t){istr(idx, s->taints[i].key), istr(idx, s->taints[i].value),
                                  s->taints[i].effect};
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
        dv->caps[c].free -= nc[c];
      }
      cfree(al->picks[k].consumed);
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

/* qsort has no context argument; the index has one owner, so a file static is safe. */
static const sf_index_t *sort_idx;
static int pool_cmp(const void *a, const void *b)
{
  const sf__pool_t *x = &sort_idx->pools[*(const int32_t *)a];
  const sf__pool_t *y = &sort_idx->pools[*(const int32_t *)b];
  int c = strcmp(x->driver, y->driver);
  return c ? c : strcmp(x->name, y->name);
}

/* Rebuilds the node's device order: pools by driver then name, devices as published. */
static void node_reorder(sf_index_t *idx, sf_node_id node)
{
  sf__node_t *n = &idx->nodes[node];
  sort_idx = idx;
  qsort(n->pools, n->npools, sizeof(*n->pools), pool_cmp);
  n->ndevs = 0;
  for (size_t i = 0; i < n->npools; i++) {
    sf__pool_t *p = &idx->pools[n->pools[i]];
    for (uint32_t k = 0; k < p->ndevs; k++) {
      if (idx->devs[p->devs[k]].retired)
        continue;
      GROW(n->devs, n->devcap, n->ndevs + 1);
      n->devs[n->ndevs++] = p->devs[k];
    }
  }
  derive_node(idx, node);
}

static void dev_release(sf_index_t *idx, sf_dev_id d)
{
  sf__dev_t *dv = &idx->devs[d];
  char key[1024];
  size_t k = dev_key(key, sizeof(key), dv->driver, dv->poolname, dv->name);
  sf__map_del(&idx->dev_by_key, key, k);
  if (dv->counted)
    idx->model_devs[dv->model_bit]--;
  dev_free_parts(dv);
  memset(dv, 0, sizeof(*dv));
  sf__index_dev_touched(idx, d);
  GIVE_SLOT(idx, free_devs, nfree_devs, fd_cap, d);
}

/* Drops a device from its pool: freed now, or retired until its last allocation goes. */
static void dev_drop(sf_index_t *idx, sf_dev_id d, bool keep_in_pool)
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
  dv->driver = istr(idx, driver);
  dv->poolname = istr(idx, poolname);
  dv->name = istr(idx, name);
  dv->model_bit = SF__MODELS;
  char key[1024];
  size_t k = dev_key(key, sizeof(key), driver, poolname, name);
  sf__map_put(&idx->dev_by_key, key, k, d);
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
  idx->pools[p].driver = istr(idx, driver);
  idx->pools[p].name = istr(idx, pool);
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
  int err = pool_check(devs, ndevs, counters, ncounters);
  for (size_t i = 0; i < ndevs && err == 0; i++) {
    if (dev_key(key, sizeof(key), driver, pool, devs[i].name) == 0)
      return SF_EINVAL;
    sf_dev_id d = sf_index_dev_find(idx, driver, pool, devs[i].name);
    if (d >= 0 && idx->devs[d].node != node && idx->devs[d].holders > 0)
      err = SF_EBUSY;  /* the pool moved to another node while allocated */
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
      dev_drop(idx, pl->devs[k], false);
  }
  free(pl->counters);
  pl->ncounters = (uint32_t)ncounters;
  pl->counters = sf_xcalloc(ncounters, sizeof(*pl->counters));
  for (size_t i = 0; i < ncounters; i++)
    pl->counters[i] = (sf__counter_t){istr(idx, counters[i].set), istr(idx, counters[i].counter),
                                      counters[i].value, counters[i].value};
  sf_dev_id *order = sf_xmalloc((ndevs + pl->ndevs + 1) * sizeof(*order));
  size_t norder = 0;
  for (size_t i = 0; i < ndevs; i++) {
    sf_dev_id d = sf_index_dev_find(idx, driver, pool, devs[i].name);
    if (d >= 0 && idx->devs[d].node != node) {
      dev_drop(idx, d, false);  /* published by another node before; free there */
      d = -1;
    }
    if (d < 0)
      d = dev_new(idx, node, p, driver, pool, devs[i].name);
    sf__dev_t *dv = &idx->devs[d];
    bool same = caps_same_layout(dv, &devs[i], idx);
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
      idx->devs[pl->devs[k]].ncuses = 0;  /* their counter sets are republished anew */
  pool_recount(idx, pl);
  node_reorder(idx, node);
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
    dev_drop(idx, pl->devs[k], true);
  }
  free(pl->counters);
  free(pl->devs);
  memset(pl, 0, sizeof(*pl));
  sf__node_t *n = &idx->nodes[node];
  for (size_t i = 0; i < n->npools; i++)
    if (n->pools[i] == p) {
      memmove(n->pools + i, n->pools + i + 1, (n->npools - i - 1) * sizeof(*n->pools));
      n->npools--;
      break;
    }
  GIVE_SLOT(idx, free_pools, nfree_pools, fp_cap, p);
  node_reorder(idx, node);
  return 0;
}

/* ---- device accessors ---- */

static const sf__dev_t *dev_at(const sf_index_t *idx, sf_dev_id d)
{
  return (d >= 0 && (size_t)d < idx->ndevs && idx->devs[d].used) ? &idx->devs[d] : NULL;
}

sf_dev_id sf_index_dev_end(const sf_index_t *idx) { return (sf_dev_id)idx->ndevs; }

bool sf_index_dev_live(const sf_index_t *idx, sf_dev_id d)
{
  const sf__dev_t *dv = dev_at(idx, d);
  return dv != NULL && !dv->retired;
}

sf_node_id sf_index_dev_node(const sf_index_t *idx, sf_dev_id d)
{
  const sf__dev_t *dv = dev_at(idx, d);
  return dv ? dv->node : -1;
}

const char *sf_index_dev_name(const sf_index_t *idx, sf_dev_id d)
{
  const sf__dev_t *dv = dev_at(idx, d);
  return dv ? dv->name : NULL;
}

const char *sf_index_dev_driver(const sf_index_t *idx, sf_dev_id d)
{
  const sf__dev_t *dv = dev_at(idx, d);
  return dv ? dv->driver : NULL;
}

const char *sf_index_dev_pool(const sf_index_t *idx, sf_dev_id d)
{
  const sf__dev_t *dv = dev_at(idx, d);
  return dv ? dv->poolname : NULL;
}

bool sf_index_dev_shared(const sf_index_t *idx, sf_dev_id d)
{
  const sf__dev_t *dv = dev_at(idx, d);
  return dv != NULL && dv->shared;
}

const sf_attr_t *sf_index_dev_attr(const sf_index_t *idx, sf_dev_id d, const char *name)
{
  const sf__dev_t *dv = dev_at(idx, d);
  if (dv == NULL)
    return NULL;
  for (uint32_t i = 0; i < dv->nattrs; i++)
    if (strcmp(dv->attrs[i].name, name) == 0)
      return &dv->attrs[i];
  return NULL;
}

size_t sf_index_dev_nattrs(const sf_index_t *idx, sf_dev_id d)
{
  const sf__dev_t *dv = dev_at(idx, d);
  return dv ? dv->nattrs : 0;
}

const sf_attr_t *sf_index_dev_attr_at(const sf_index_t *idx, sf_dev_id d, size_t i)
{
  const sf__dev_t *dv = dev_at(idx, d);
  return (dv && i < dv->nattrs) ? &dv->attrs[i] : NULL;
}

size_t sf_index_dev_ncaps(const sf_index_t *idx, sf_dev_id d)
{
  const sf__dev_t *dv = dev_at(idx, d);
  return dv ? dv->ncaps : 0;
}

const char *sf_index_dev_cap(const sf_index_t *idx, sf_dev_id d, size_t i, sf_milli_t *value,
                             sf_milli_t *free_amount)
{
  const sf__dev_t *dv = dev_at(idx, d);
  if (dv == NULL || i >= dv->ncaps)
    return NULL;
  if (value) *value = dv->caps[i].value;
  if (free_amount) *free_amount = dv->caps[i].free;
  return dv->caps[i].name;
}

int sf_index_dev_cap_find(const sf_index_t *idx, sf_dev_id d, const char *name)
{
  const sf__dev_t *dv = dev_at(idx, d);
  for (uint32_t i = 0; dv && i < dv->ncaps; i++)
    if (strcmp(dv->caps[i].name, name) == 0)
      return (int)i;
  return -1;
}

uint32_t sf_index_dev_holders(const sf_index_t *idx, sf_dev_id d)
{
  const sf__dev_t *dv = dev_at(idx, d);
  return dv ? dv->holders : 0;
}

size_t sf_index_dev_ntaints(const sf_index_t *idx, sf_dev_id d)
{
  const sf__dev_t *dv = dev_at(idx, d);
  return dv ? dv->ntaints : 0;
}

const sf_taint_t *sf_index_dev_taint(const sf_index_t *idx, sf_dev_id d, size_t i)
{
  const sf__dev_t *dv = dev_at(idx, d);
  return (dv && i < dv->ntaints) ? &dv->taints[i].t : NULL;
}

int32_t sf_index_dev_island(const sf_index_t *idx, sf_dev_id d)
{
  const sf__dev_t *dv = dev_at(idx, d);
  return dv ? dv->island : -1;
}

sf_str_id sf_index_dev_model(const sf_index_t *idx, sf_dev_id d)
{
  const sf__dev_t *dv = dev_at(idx, d);
  return dv ? dv->model : 0;
}

int32_t sf_index_dev_free_permille(const sf_index_t *idx, sf_dev_id d)
{
  const sf__dev_t *dv = dev_at(idx, d);
  if (dv == NULL)
    return 0;
  if (dv->primary < 0 || !dv->shared)
    return dv->holders > 0 ? 0 : 1000;
  const sf__cap_t *c = &dv->caps[dv->primary];
  if (c->value <= 0 || c->free <= 0)
    return 0;
  if (c->free >= c->value)
    return 1000;
  /* free < value here, so free * 1000 overflows only for values past 9.2e15. */
  if (c->free > INT64_MAX / 1000)
    return (int32_t)(c->free / (c->value / 1000));
  return (int32_t)(c->free * 1000 / c->value);
}

/* ---- taint rules ---- */

int sf_index_taint_rule_add(sf_index_t *idx, const char *rule, sf_dev_id d, const sf_taint_t *t)
{
  if (dev_at(idx, d) == NULL || rule == NULL || rule[0] == '\0' || t == NULL || t->key == NULL)
    return SF_EINVAL;
  sf__dev_t *dv = &idx->devs[d];
  dv->taints = sf_xrealloc(dv->taints, (dv->ntaints + 1) * sizeof(*dv->taints));
  dv->taints[dv->ntaints++] = (sf__taint_t){sf_index_intern(idx, rule),
                                            {istr(idx, t->key), istr(idx, t->value), t->effect}};
  idx->nodes[dv->node].version = ++idx->stamp;
  return 0;
}

void sf_index_taint_rule_clear(sf_index_t *idx, const char *rule)
{
  sf_str_id r = sf_index_lookup(idx, rule);
  if (r == 0)
    return;
  for (size_t d = 0; d < idx->ndevs; d++) {
    sf__dev_t *dv = &idx->devs[d];
    uint32_t j = 0;
    for (uint32_t i = 0; dv->used && i < dv->ntaints; i++)
      if (dv->taints[i].rule != r)
        dv->taints[j++] = dv->taints[i];
    if (dv->used && j != dv->ntaints) {
      dv->ntaints = j;
      idx->nodes[dv->node].version = ++idx->stamp;
    }
  }
}

/* ---- allocations ---- */

sf_alloc_id sf_index_alloc_find(const sf_index_t *idx, const char *holder)
{
  return sf__map_get(&idx->alloc_by_holder, holder, strlen(holder));
}

size_t sf_index_alloc_count(const sf_index_t *idx) { return idx->live_allocs; }

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
    bool last = sign < 0 && dv->holders == 0;
    for (uint32_t c = 0; c < dv->ncaps; c++)
      dv->caps[c].free -= sign * (dv->shared ? a->picks[k].consumed[c] : dv->caps[c].value);
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
  if ((n->cpu_alloc > 0 && n->cpu_used > n->cpu_alloc) || (n->mem_alloc > 0 && n->mem_used > n->mem_alloc))
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
  sf__map_del(&idx->alloc_by_holder, a->holder, strlen(a->holder));
  alloc_free_parts(a);
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
    if (idx->devs[picks[k].dev].node != node)
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
      c[j] = (dv->shared && picks[k].consumed) ? picks[k].consumed[j] : 0;
      a->cnames[k][j] = dv->caps[j].name;
    }
    a->ncons[k] = dv->ncaps;
    a->picks[k] = (sf_pick_t){picks[k].dev, c};
  }
  sf__map_put(&idx->alloc_by_holder, holder, strlen(holder), id);
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
      dv->retired = false;  /* dev_drop frees it now */
      dev_drop(idx, d, dv->pool < 0);
    }
  }
  alloc_release(idx, id);
  return 0;
}

/* ---- checks ---- */

#define WHY(...) do { if (why) snprintf(why, whylen, __VA_ARGS__); return SF_EINVAL; } while (0)

int sf_index_validate(const sf_index_t *idx, char *why, size_t whylen)
{
  sf_milli_t *capfree = NULL, *cntfree = NULL;
  size_t ncap = 0, ncnt = 0;
  int err = 0;
  /* Expected free amounts, laid out per device / per pool counter. */
  size_t *capoff = sf_xcalloc(idx->ndevs + 1, sizeof(*capoff));
  size_t *cntoff = sf_xcalloc(idx->npools + 1, sizeof(*cntoff));
  uint32_t *holders = sf_xcalloc(idx->ndevs + 1, sizeof(*holders));
  int64_t *cpu = sf_xcalloc(idx->nnodes + 1, sizeof(*cpu)), *mem = sf_xcalloc(idx->nnodes + 1, sizeof(*mem));
  for (size_t d = 0; d < idx->ndevs; d++) {
    capoff[d] = ncap;
    ncap += idx->devs[d].used ? idx->devs[d].ncaps : 0;
  }
  for (size_t p = 0; p < idx->npools; p++) {
    cntoff[p] = ncnt;
    ncnt += idx->pools[p].used ? idx->pools[p].ncounters : 0;
  }
  capfree = sf_xcalloc(ncap + 1, sizeof(*capfree));
  cntfree = sf_xcalloc(ncnt + 1, sizeof(*cntfree));
  for (size_t d = 0; d < idx->ndevs; d++)
    for (uint32_t c = 0; idx->devs[d].used && c < idx->devs[d].ncaps; c++)
      capfree[capoff[d] + c] = idx->devs[d].caps[c].value;
  for (size_t p = 0; p < idx->npools; p++)
    for (uint32_t c = 0; idx->pools[p].used && c < idx->pools[p].ncounters; c++)
      cntfree[cntoff[p] + c] = idx->pools[p].counters[c].value;
  size_t live = 0;
  for (size_t i = 0; i < idx->nallocs && err == 0; i++) {
    const sf__alloc_t *a = &idx->allocs[i];
    if (!a->used)
      continue;
    live++;
    if (!sf_index_node_live(idx, a->node)) {
      snprintf(why ? why : (char[1]){0}, why ? whylen : 1, "allocation %s on a dead node", a->holder);
      err = SF_EINVAL;
      break;
    }
    cpu[a->node] += a->cpu;
    mem[a->node] += a->mem;
    for (size_t k = 0; k < a->npicks; k++) {
      sf_dev_id d = a->picks[k].dev;
      const sf__dev_t *dv = &idx->devs[d];
      if (!dv->used || dv->node != a->node) {
        snprintf(why ? why : (char[1]){0}, why ? whylen : 1, "allocation %s holds a bad device", a->holder);
        err = SF_EINVAL;
        break;
      }
      holders[d]++;
      for (uint32_t c = 0; c < dv->ncaps; c++)
        capfree[capoff[d] + c] -= dv->shared ? a->picks[k].consumed[c] : dv->caps[c].value;
    }
  }
  for (size_t d = 0; d < idx->ndevs && err == 0; d++) {
    const sf__dev_t *dv = &idx->devs[d];
    if (!dv->used)
      continue;
    if (holders[d] != dv->holders) {
      snprintf(why ? why : (char[1]){0}, why ? whylen : 1, "device %s: %u holders counted, %u kept",
               dv->name, holders[d], dv->holders);
      err = SF_EINVAL;
    }
    if (dv->retired && dv->holders == 0) {
      snprintf(why ? why : (char[1]){0}, why ? whylen : 1, "device %s retired with no holder", dv->name);
      err = SF_EINVAL;
    }
    for (uint32_t c = 0; c < dv->ncaps && err == 0; c++)
      if (capfree[capoff[d] + c] != dv->caps[c].free) {
        snprintf(why ? why : (char[1]){0}, why ? whylen : 1, "device %s capacity %s: free %lld, expected %lld",
                 dv->name, dv->caps[c].name, (long long)dv->caps[c].free, (long long)capfree[capoff[d] + c]);
        err = SF_EINVAL;
      }
    for (uint32_t u = 0; dv->pool >= 0 && dv->holders > 0 && u < dv->ncuses; u++)
      cntfree[cntoff[dv->pool] + dv->cuses[u].counter] -= dv->cuses[u].value;
  }
  for (size_t p = 0; p < idx->npools && err == 0; p++)
    for (uint32_t c = 0; idx->pools[p].used && c < idx->pools[p].ncounters && err == 0; c++)
      if (cntfree[cntoff[p] + c] != idx->pools[p].counters[c].free) {
        snprintf(why ? why : (char[1]){0}, why ? whylen : 1, "pool %s counter %s/%s: free %lld, expected %lld",
                 idx->pools[p].name, idx->pools[p].counters[c].set, idx->pools[p].counters[c].name,
                 (long long)idx->pools[p].counters[c].free, (long long)cntfree[cntoff[p] + c]);
        err = SF_EINVAL;
      }
  for (size_t n = 0; n < idx->nnodes && err == 0; n++)
    if (idx->nodes[n].used && (cpu[n] != idx->nodes[n].cpu_used || mem[n] != idx->nodes[n].mem_used)) {
      snprintf(why ? why : (char[1]){0}, why ? whylen : 1, "node %s: cpu/memory used disagrees with allocations",
               idx->nodes[n].name);
      err = SF_EINVAL;
    }
  if (err == 0 && live != idx->live_allocs) {
    snprintf(why ? why : (char[1]){0}, why ? whylen : 1, "%zu live allocations, %zu counted", live, idx->live_allocs);
    err = SF_EINVAL;
  }
  free(capoff); free(cntoff); free(holders); free(cpu); free(mem); free(capfree); free(cntfree);
  return err;
}

size_t sf_index_mem_bytes(const sf_index_t *idx)
{
  size_t b = sizeof(*idx) + idx->strcap * sizeof(char *) + idx->nodecap * sizeof(sf__node_t) +
             idx->poolcap * sizeof(sf__pool_t) + idx->devcap * sizeof(sf__dev_t) +
             idx->alloccap * sizeof(sf__alloc_t) +
             (idx->strings.cap + idx->node_by_name.cap + idx->dev_by_key.cap + idx->alloc_by_holder.cap) *
                 sizeof(sf__map_slot_t);
  for (size_t d = 0; d < idx->ndevs; d++) {
    const sf__dev_t *dv = &idx->devs[d];
    b += dv->nattrs * sizeof(sf_attr_t) + dv->ncaps * sizeof(sf__cap_t) + dv->ncuses * sizeof(sf__cuse_t) +
         dv->ntaints * sizeof(sf__taint_t);
  }
  for (size_t a = 0; a < idx->nallocs; a++) {
    const sf__alloc_t *al = &idx->allocs[a];
    b += al->used ? strlen(al->holder) + 1 + al->npicks * (sizeof(sf_pick_t) + sizeof(void *) + 4) : 0;
    for (size_t k = 0; al->used && k < al->npicks; k++)
      b += al->ncons[k] * (sizeof(sf_milli_t) + sizeof(char *));
  }
  for (size_t n = 0; n < idx->nnodes; n++)
    b += idx->nodes[n].devcap * sizeof(sf_dev_id) + idx->nodes[n].poolcap * sizeof(int32_t);
  for (size_t i = 0; i < idx->ncaches; i++)
    b += idx->caches[i].cap;
  return b + idx->heap;
}

/* ---- learned workload mix ---- */

void sf_index_mix_clear(sf_index_t *idx)
{
  idx->nmix = 0;
  if (!idx->mix_held)
    idx->mix_version++;
}

const sf__shape_t *sf__index_mix(const sf_index_t *idx, size_t *n)
{
  *n = idx->mix_held ? idx->npub : idx->nmix;
  return idx->mix_held ? idx->pub : idx->mix;
}

void sf_index_mix_publish(sf_index_t *idx)
{
  memcpy(idx->pub, idx->mix, idx->nmix * sizeof(*idx->pub));
  idx->npub = idx->nmix;
  idx->mix_version++;
}

void sf_index_mix_hold(sf_index_t *idx, bool on)
{
  if (on && !idx->mix_held)
    sf_index_mix_publish(idx);
  if (!on && idx->mix_held)
    idx->mix_version++;
  idx->mix_held = on;
}

static int shape_cmp(const sf__shape_t *a, const sf__shape_t *b)
{
#define CMP(f) if (a->f != b->f) return a->f < b->f ? -1 : 1
  CMP(cpu_milli);
  CMP(amount);
  CMP(count);
  CMP(island);
  CMP(models);
#undef CMP
  return 0;
}

void sf__index_observe(sf_index_t *idx, const sf__shape_t *s, int sign)
{
  /* The mix is a multiset of the present demands' shapes, kept in one canonical order, so
   * that it depends on which demands are present and not on the order they came in. */
  size_t i = 0;
  int c = 1;
  while (i < idx->nmix && (c = shape_cmp(&idx->mix[i], s)) < 0)
    i++;
  if (i < idx->nmix && c == 0) {
    idx->mix[i].weight += sign;
    if (idx->mix[i].weight <= 0.0) {
      memmove(&idx->mix[i], &idx->mix[i + 1], (idx->nmix - i - 1) * sizeof(*idx->mix));
      idx->nmix--;
    }
  } else if (sign > 0 && idx->nmix < SF__MIX_MAX) {
    memmove(&idx->mix[i + 1], &idx->mix[i], (idx->nmix - i) * sizeof(*idx->mix));
    idx->mix[i] = *s;
    idx->mix[i].weight = sign;
    idx->nmix++;
  } else {
    return;  /* a shape past SF__MIX_MAX is not tracked; an absent one cannot leave */
  }
  idx->mix_obs++;
  if (!idx->mix_held)
    idx->mix_version++;
}
