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
#include <stdarg.h>
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
    if (idx->devs[i].used) {
      dev_free_parts(&idx->devs[i]);
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
  sf_map_dispose(&idx->strings);
  sf_map_dispose(&idx->node_by_name);
  sf_map_dispose(&idx->dev_by_key);
  sf_map_dispose(&idx->alloc_by_holder);
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

static void mirror_unlink(sf_index_t *idx, sf_node_id node, sf_dev_id d, bool reorder);

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
    n->name = istr(idx, spec->name);
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
  while (n->nmdevs > 0)
    mirror_unlink(idx, node, n->mdevs[n->nmdevs - 1], false);
  sf_map_del(&idx->node_by_name, n->name, strlen(n->name));
  free(n->devs);
  free(n->pools);
  free(n->mdevs);
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
  return k == 0 ? -1 : sf_map_get(&idx->dev_by_key, key, k);
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
      if (name_is(d->attrs[a].name, idx->model_attr) && d->attrs[a].s != NULL &&
          d->attrs[a].type != SF_ATTR_LIST)
        d->model = sf_index_lookup(idx, d->attrs[a].s);
    d->model_bit = sf__index_model_bit(idx, d->model);
    idx->model_devs[d->model_bit]++;
    idx->model_rep[d->model_bit] = n->devs[k];
  }
  /* Islands from an attribute: equal values share an island. A device that several nodes
   * offer (network-attached) is its own island: it is no node's NVLink peer. */
  for (size_t k = 0; k < n->ndevs && idx->island_attr[0]; k++) {
    sf__dev_t *d = &idx->devs[n->devs[k]];
    const sf_attr_t *a = attr_named(d, idx->island_attr);
    if (a == NULL || a->type == SF_ATTR_UNKNOWN || d->island >= 0 || d->nmirrors > 0)
      continue;
    d->island = next_island;
    for (size_t j = k + 1; j < n->ndevs; j++) {
      const sf_attr_t *b = attr_named(&idx->devs[n->devs[j]], idx->island_attr);
      if (b != NULL && idx->devs[n->devs[j]].nmirrors == 0 && b->type == a->type && b->i == a->i &&
          b->s == a->s)
        idx->devs[n->devs[j]].island = next_island;
    }
    next_island++;
  }
  /* Islands from the map: groups of SIZE devices of a model, in device order. */
  for (size_t k = 0; k < n->ndevs && idx->nrules; k++) {
    sf__dev_t *d = &idx->devs[n->devs[k]];
    if (d->island >= 0 || d->model == 0 || d->nmirrors > 0)
      continue;
    const sf_island_rule_t *r = island_rule(idx, n, sf_index_str(idx, d->model));
    if (r == NULL)
      continue;
    uint32_t in = 0;
    for (size_t j = k; j < n->ndevs && in < r->size; j++) {
      sf__dev_t *e = &idx->devs[n->devs[j]];
      if (e->island < 0 && e->model == d->model && e->nmirrors == 0) {
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
      if (d->counters[c].value < 0 || counter_find(cs, ncs, d->counters[c].set, d->counters[c].counter) < 0)
        err = SF_EINVAL;
    for (size_t a = 0; a < d->nattrs && err == 0; a++)
      if (d->attrs[a].name == NULL || ((d->attrs[a].type == SF_ATTR_STRING ||
                                        d->attrs[a].type == SF_ATTR_VERSION ||
                                        d->attrs[a].type == SF_ATTR_LIST) && d->attrs[a].s == NULL))
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
        if (al->picks[k].whole)
          nc[c] = dv->caps[c].value;  /* held whole: all of a new capacity too */
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

/* A pool's sort key, copied out so that the comparator needs no context (qsort has no
 * argument for one, and a file static would make two indexes on two threads race). */
typedef struct {
  const char *driver, *name;
  int32_t pool;
  uint32_t pos;  /* the place before sorting: equal keys keep their order */
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
static void node_reorder(sf_index_t *idx, sf_node_id node)
{
  sf__node_t *n = &idx->nodes[node];
  pools_sort(idx, n->pools, n->npools);  /* a node may only mirror devices: no pools of its own */
  int32_t *order = n->pools;
  size_t norder = n->npools;
  if (n->nmdevs > 0) {  /* the mirrored devices' pools take their place among the node's own */
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
  derive_node(idx, node);
}

/* ---- mirrored devices ---- */

/* Takes d off `node`'s mirrored devices (and `node` off d's mirrors). */
static void mirror_unlink(sf_index_t *idx, sf_node_id node, sf_dev_id d, bool reorder)
{
  sf__node_t *n = &idx->nodes[node];
  sf__dev_t *dv = &idx->devs[d];
  for (size_t k = 0; k < n->nmdevs; k++)
    if (n->mdevs[k] == d) {
      memmove(n->mdevs + k, n->mdevs + k + 1, (n->nmdevs - k - 1) * sizeof(*n->mdevs));
      n->nmdevs--;
      break;
    }
  for (uint32_t k = 0; k < dv->nmirrors; k++)
    if (dv->mirrors[k] == node) {
      dv->mirrors[k] = dv->mirrors[--dv->nmirrors];
      break;
    }
  if (reorder)
    node_reorder(idx, node);
}

/* Every node that offers d learns that its state moved. */
static void dev_nodes_touch(sf_index_t *idx, const sf__dev_t *dv)
{
  idx->nodes[dv->node].version = ++idx->stamp;
  for (uint32_t k = 0; k < dv->nmirrors; k++)
    idx->nodes[dv->mirrors[k]].version = ++idx->stamp;
}

int sf_index_mirror_set(sf_index_t *idx, sf_node_id node, const char *driver, const char *pool,
                        const char *const *names, size_t n)
{
  if (!sf_index_node_live(idx, node) || driver == NULL || pool == NULL || (n > 0 && names == NULL))
    return SF_EINVAL;
  sf__node_t *nd = &idx->nodes[node];
  for (size_t k = nd->nmdevs; k-- > 0;) {
    const sf__dev_t *dv = &idx->devs[nd->mdevs[k]];
    if (strcmp(dv->driver, driver) == 0 && strcmp(dv->poolname, pool) == 0)
      mirror_unlink(idx, node, nd->mdevs[k], false);
  }
  for (size_t i = 0; i < n; i++) {
    sf_dev_id d = sf_index_dev_find(idx, driver, pool, names[i]);
    if (d < 0 || !sf_index_dev_live(idx, d) || idx->devs[d].node == node)
      continue;
    sf__dev_t *dv = &idx->devs[d];
    bool have = false;
    for (uint32_t k = 0; k < dv->nmirrors && !have; k++)
      have = dv->mirrors[k] == node;
    if (have)
      continue;
    uint32_t cap = dv->nmirrors;  /* exact-size growth: most devices are offered by few nodes */
    dv->mirrors = sf_xrealloc(dv->mirrors, (cap + 1) * sizeof(*dv->mirrors));
    dv->mirrors[dv->nmirrors++] = node;
    GROW(nd->mdevs, nd->mdevcap, nd->nmdevs + 1);
    nd->mdevs[nd->nmdevs++] = d;
  }
  node_reorder(idx, node);
  return 0;
}

static void dev_release(sf_index_t *idx, sf_dev_id d)
{
  sf__dev_t *dv = &idx->devs[d];
  while (dv->nmirrors > 0)
    mirror_unlink(idx, dv->mirrors[dv->nmirrors - 1], d, true);
  free(dv->mirrors);  /* not a part of the spec: dev_fill keeps it */
  char key[1024];
  size_t k = dev_key(key, sizeof(key), dv->driver, dv->poolname, dv->name);
  sf_map_del(&idx->dev_by_key, key, k);
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
  int err = pool_check(devs, ndevs, counters, ncounters, idx->hash_seed);
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
      idx->devs[pl->devs[k]].ncuses = 0;  /* their counter sets are republished anew */
  pool_recount(idx, pl);
  node_reorder(idx, node);
  /* Nodes that mirror devices of the pool see them change (or retire) too. */
  for (uint32_t k = 0; k < pl->ndevs; k++) {
    const sf__dev_t *dv = &idx->devs[pl->devs[k]];
    for (uint32_t m = 0; m < dv->nmirrors; m++)
      if (idx->nodes[dv->mirrors[m]].version != idx->stamp)
        node_reorder(idx, dv->mirrors[m]);
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
  dev_nodes_touch(idx, dv);
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
      dev_nodes_touch(idx, dv);
    }
  }
}

/* ---- allocations ---- */

sf_alloc_id sf_index_alloc_find(const sf_index_t *idx, const char *holder)
{
  return sf_map_get(&idx->alloc_by_holder, holder, strlen(holder));
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

/* Is device d offered on `node` (homed or mirrored there)? */
static bool dev_on(const sf_index_t *idx, sf_dev_id d, sf_node_id node)
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
      dev_nodes_touch(idx, dv);
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
  sf_map_del(&idx->alloc_by_holder, a->holder, strlen(a->holder));
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
    if (!dev_on(idx, picks[k].dev, node))
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
      dv->retired = false;  /* dev_drop frees it now */
      dev_drop(idx, d, dv->pool < 0);
    }
  }
  alloc_release(idx, id);
  return 0;
}

/* ---- checks ---- */

/*
 * sf_index_validate recomputes, from the live allocations alone, what the
 * index keeps incrementally (free capacities, free counters, holders, a
 * node's cpu and memory, the live count) and compares. One checker per
 * invariant family; each fails through fail(), which writes the reason.
 */
typedef struct {
  size_t *capoff, *cntoff;       /* per device / pool: its first entry in capfree / cntfree */
  sf_milli_t *capfree, *cntfree; /* free amounts expected from the allocations */
  uint32_t *holders, *wholes;    /* per device */
  int64_t *cpu, *mem;            /* per node */
  size_t live;                   /* live allocations */
  char *err;                     /* the caller's buffer, or NULL */
  size_t errlen;
} recount_t;

__attribute__((format(printf, 2, 3))) static int fail(const recount_t *r, const char *fmt, ...)
{
  if (r->err != NULL && r->errlen > 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err, r->errlen, fmt, ap);
    va_end(ap);
  }
  return SF_EINVAL;
}

/* Lays out the expected free amounts, starting from every capacity and counter whole. */
static void recount_init(recount_t *r, const sf_index_t *idx, char *err, size_t errlen)
{
  size_t ncap = 0, ncnt = 0;
  *r = (recount_t){.err = err, .errlen = errlen};
  r->capoff = sf_xcalloc(idx->ndevs + 1, sizeof(*r->capoff));
  r->cntoff = sf_xcalloc(idx->npools + 1, sizeof(*r->cntoff));
  r->holders = sf_xcalloc(idx->ndevs + 1, sizeof(*r->holders));
  r->wholes = sf_xcalloc(idx->ndevs + 1, sizeof(*r->wholes));
  r->cpu = sf_xcalloc(idx->nnodes + 1, sizeof(*r->cpu));
  r->mem = sf_xcalloc(idx->nnodes + 1, sizeof(*r->mem));
  for (size_t d = 0; d < idx->ndevs; d++) {
    r->capoff[d] = ncap;
    ncap += idx->devs[d].used ? idx->devs[d].ncaps : 0;
  }
  for (size_t p = 0; p < idx->npools; p++) {
    r->cntoff[p] = ncnt;
    ncnt += idx->pools[p].used ? idx->pools[p].ncounters : 0;
  }
  r->capfree = sf_xcalloc(ncap + 1, sizeof(*r->capfree));
  r->cntfree = sf_xcalloc(ncnt + 1, sizeof(*r->cntfree));
  for (size_t d = 0; d < idx->ndevs; d++)
    for (uint32_t c = 0; idx->devs[d].used && c < idx->devs[d].ncaps; c++)
      r->capfree[r->capoff[d] + c] = idx->devs[d].caps[c].value;
  for (size_t p = 0; p < idx->npools; p++)
    for (uint32_t c = 0; idx->pools[p].used && c < idx->pools[p].ncounters; c++)
      r->cntfree[r->cntoff[p] + c] = idx->pools[p].counters[c].value;
}

static void recount_dispose(recount_t *r)
{
  free(r->capoff);
  free(r->cntoff);
  free(r->holders);
  free(r->wholes);
  free(r->cpu);
  free(r->mem);
  free(r->capfree);
  free(r->cntfree);
}

/* Allocations sit on live nodes and hold live devices of that node; adds up what they take. */
static int check_allocs(const sf_index_t *idx, recount_t *r)
{
  for (size_t i = 0; i < idx->nallocs; i++) {
    const sf__alloc_t *a = &idx->allocs[i];
    if (!a->used)
      continue;
    r->live++;
    if (!sf_index_node_live(idx, a->node))
      return fail(r, "allocation %s on a dead node", a->holder);
    r->cpu[a->node] += a->cpu;
    r->mem[a->node] += a->mem;
    for (size_t k = 0; k < a->npicks; k++) {
      sf_dev_id d = a->picks[k].dev;
      const sf__dev_t *dv = &idx->devs[d];
      if (!dv->used || !dev_on(idx, d, a->node))
        return fail(r, "allocation %s holds a bad device", a->holder);
      r->holders[d]++;
      r->wholes[d] += a->picks[k].whole;
      for (uint32_t c = 0; c < dv->ncaps; c++)
        r->capfree[r->capoff[d] + c] -= dv->shared ? a->picks[k].consumed[c] : dv->caps[c].value;
    }
  }
  return 0;
}

/* Each device's holders and free capacities match; a retired device is still held. Adds up
 * the counters that held devices consume. */
static int check_devices(const sf_index_t *idx, recount_t *r)
{
  for (size_t d = 0; d < idx->ndevs; d++) {
    const sf__dev_t *dv = &idx->devs[d];
    if (!dv->used)
      continue;
    if (r->holders[d] != dv->holders)
      return fail(r, "device %s: %u holders counted, %u kept", dv->name, r->holders[d], dv->holders);
    if (r->wholes[d] != dv->wholes)
      return fail(r, "device %s: %u whole holds counted, %u kept", dv->name, r->wholes[d], dv->wholes);
    if (dv->retired && dv->holders == 0)
      return fail(r, "device %s retired with no holder", dv->name);
    for (uint32_t c = 0; c < dv->ncaps; c++)
      if (r->capfree[r->capoff[d] + c] != dv->caps[c].free)
        return fail(r, "device %s capacity %s: free %lld, expected %lld", dv->name, dv->caps[c].name,
                    (long long)dv->caps[c].free, (long long)r->capfree[r->capoff[d] + c]);
    for (uint32_t u = 0; dv->pool >= 0 && dv->holders > 0 && u < dv->ncuses; u++)
      r->cntfree[r->cntoff[dv->pool] + dv->cuses[u].counter] -= dv->cuses[u].value;
  }
  return 0;
}

/* Each pool's shared counters have the free amount their held devices leave. */
static int check_counters(const sf_index_t *idx, const recount_t *r)
{
  for (size_t p = 0; p < idx->npools; p++) {
    const sf__pool_t *pl = &idx->pools[p];
    for (uint32_t c = 0; pl->used && c < pl->ncounters; c++)
      if (r->cntfree[r->cntoff[p] + c] != pl->counters[c].free)
        return fail(r, "pool %s counter %s/%s: free %lld, expected %lld", pl->name, pl->counters[c].set,
                    pl->counters[c].name, (long long)pl->counters[c].free,
                    (long long)r->cntfree[r->cntoff[p] + c]);
  }
  return 0;
}

/* Each node's cpu and memory in use are its allocations' sums, and the live count is right. */
static int check_nodes(const sf_index_t *idx, const recount_t *r)
{
  for (size_t n = 0; n < idx->nnodes; n++)
    if (idx->nodes[n].used && (r->cpu[n] != idx->nodes[n].cpu_used || r->mem[n] != idx->nodes[n].mem_used))
      return fail(r, "node %s: cpu/memory used disagrees with allocations", idx->nodes[n].name);
  if (r->live != idx->live_allocs)
    return fail(r, "%zu live allocations, %zu counted", r->live, idx->live_allocs);
  return 0;
}

int sf_index_validate(const sf_index_t *idx, char *err, size_t errlen)
{
  recount_t r;
  recount_init(&r, idx, err, errlen);
  int rc = check_allocs(idx, &r);
  if (rc == 0)
    rc = check_devices(idx, &r);
  if (rc == 0)
    rc = check_counters(idx, &r);
  if (rc == 0)
    rc = check_nodes(idx, &r);
  recount_dispose(&r);
  return rc;
}

size_t sf_index_mem_bytes(const sf_index_t *idx)
{
  size_t b = sizeof(*idx) + idx->strcap * sizeof(char *) + idx->nodecap * sizeof(sf__node_t) +
             idx->poolcap * sizeof(sf__pool_t) + idx->devcap * sizeof(sf__dev_t) +
             idx->alloccap * sizeof(sf__alloc_t) +
             (idx->strings.cap + idx->node_by_name.cap + idx->dev_by_key.cap + idx->alloc_by_holder.cap) *
                 sizeof(sf_map_slot_t);
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



/* ---- list-type attributes (DRAListTypeAttributes) in constraints ---- */

/* The k-th element of attribute a as "T:text" into buf; false past the last. */
static bool attr_elem(const sf_attr_t *a, size_t k, char *buf, size_t len)
{
  static const char tag[] = {0, 'i', 'b', 's', 'v'};
  if (a->type == SF_ATTR_UNKNOWN)
    return false;
  if (a->type != SF_ATTR_LIST) {
    if (k > 0)
      return false;
    if (a->type == SF_ATTR_INT || a->type == SF_ATTR_BOOL)
      snprintf(buf, len, "%c:%lld", tag[a->type], (long long)a->i);
    else
      snprintf(buf, len, "%c:%s", tag[a->type], a->s ? a->s : "");
    return true;
  }
  const char *e = a->s;
  for (size_t i = 0; i < k && e != NULL; i++) {
    e = strchr(e, '\x1e');
    e = e ? e + 1 : NULL;
  }
  if (e == NULL || *e == '\0')
    return false;
  size_t n = strcspn(e, "\x1e");
  if (n >= len)
    n = len - 1;
  memcpy(buf, e, n);
  buf[n] = '\0';
  return true;
}

static bool attr_has(const sf_attr_t *a, const char *elem)
{
  char buf[SF__ELEM_MAX];
  for (size_t k = 0; attr_elem(a, k, buf, sizeof(buf)); k++)
    if (strcmp(buf, elem) == 0)
      return true;
  return false;
}

bool sf__attrs_match(const sf_attr_t *const *vals, uint32_t n, const sf_attr_t *a)
{
  char buf[SF__ELEM_MAX];
  for (size_t k = 0; attr_elem(a, k, buf, sizeof(buf)); k++) {
    bool all = true;
    for (uint32_t j = 0; j < n && all; j++)
      all = attr_has(vals[j], buf);
    if (all)
      return true;
  }
  return false;
}

bool sf__attrs_distinct(const sf_attr_t *const *vals, uint32_t n, const sf_attr_t *a)
{
  char buf[SF__ELEM_MAX];
  for (size_t k = 0; attr_elem(a, k, buf, sizeof(buf)); k++)
    for (uint32_t j = 0; j < n; j++)
      if (attr_has(vals[j], buf))
        return false;
  return true;
}
