/*
 * Pools, allocated claims and taint rules: how stored objects become index
 * state.
 *
 * A pool (driver, pool name) is the set of stored slices naming it. It is
 * published node by node, each node getting what the in-tree allocator sees
 * from it (see "publishing a pool" below): the nodes a pool may reach are
 * those its slices and devices name, and every known Node when a slice or
 * device reaches nodes by selector or allNodes (without Nodes, such devices
 * reach no node and the pool counts as skipped in /debug/state). A device
 * that reaches several nodes is published on each of them.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "slicefit/log.h"
#include "decode_int.h"
#include "cluster_int.h"

#define KEY_MAX 512

const char *sf__qualify(const char *driver, const char *name, char *buf, size_t len)
{
  if (strchr(name, '/'))
    return name;
  snprintf(buf, len, "%s/%s", driver, name);
  return buf;
}

/* ---- pool membership ---- */

size_t sf__pool_keylen(const char *driver, const char *pool, char *buf, size_t len)
{
  int n = snprintf(buf, len, "%s\x1f%s", driver, pool);
  return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
}

static pool_t *pool_get(sf_cluster_t *c, const char *driver, const char *name, bool create)
{
  char key[KEY_MAX];
  size_t klen = sf__pool_keylen(driver, name, key, sizeof key);
  int32_t v = sf_map_get(&c->pool_keys, key, klen);
  if (v >= 0)
    return c->pools[v];
  if (!create)
    return NULL;
  pool_t *p = sf_xcalloc(1, sizeof(*p));
  p->driver = sf_xstrdup(driver);
  p->name = sf_xstrdup(name);
  sf_xgrow(&c->pools, &c->cappools, c->npools + 1, sizeof(*c->pools));
  sf_map_put(&c->pool_keys, key, klen, (int32_t)c->npools);
  c->pools[c->npools++] = p;
  return p;
}

/* Slices of one pool in name order (names are unique among stored slices). */
void sf__pool_add_slice(sf_cluster_t *c, sf_object_t *o)
{
  pool_t *p = pool_get(c, o->u.slice.driver, o->u.slice.pool, true);
  sf_xgrow(&p->slices, &p->capslices, p->nslices + 1, sizeof(*p->slices));
  size_t i = p->nslices++;
  for (; i > 0 && strcmp(p->slices[i - 1]->u.meta.name, o->u.meta.name) > 0; i--)
    p->slices[i] = p->slices[i - 1];
  p->slices[i] = o;
}

void sf__pool_del_slice(sf_cluster_t *c, sf_object_t *o)
{
  pool_t *p = pool_get(c, o->u.slice.driver, o->u.slice.pool, false);
  if (sf__slice_restore(c, o))
    sf__slice_compact(o, false);
  for (size_t i = 0; p && i < p->nslices; i++)
    if (p->slices[i] == o) {
      memmove(p->slices + i, p->slices + i + 1, (p->nslices - i - 1) * sizeof(*p->slices));
      p->nslices--;
      return;
    }
}

/* ---- how many pools list each node ---- */

static json_int_t node_refs(sf_cluster_t *c, const char *node)
{
  return json_integer_value(json_object_get(c->node_refs, node));
}

static void node_ref(sf_cluster_t *c, const char *node, int delta)
{
  json_int_t n = node_refs(c, node) + delta;
  if (n > 0)
    json_object_set_new(c->node_refs, node, json_integer(n));
  else
    json_object_del(c->node_refs, node);
}

/* Forgets the pool's nodes, taking them off the counts (c NULL: the whole cluster goes). */
static void free_nodes(sf_cluster_t *c, pool_t *p)
{
  for (size_t i = 0; i < p->nnodes; i++) {
    if (c)
      node_ref(c, p->nodes[i], -1);
    free(p->nodes[i]);
  }
  free(p->nodes);
  p->nodes = NULL;
  p->nnodes = 0;
}

static void pool_free(sf_cluster_t *c, pool_t *p)
{
  free_nodes(c, p);
  for (size_t i = 0; i < p->ninvalid_nodes; i++)
    free(p->invalid_nodes[i]);
  free(p->invalid_nodes);
  for (size_t i = 0; i < p->nincomplete_nodes; i++)
    free(p->incomplete_nodes[i]);
  free(p->incomplete_nodes);
  free(p->invalid);
  free(p->slices);
  free(p->driver);
  free(p->name);
  free(p);
}

void sf__pools_free(sf_cluster_t *c)
{
  for (size_t i = 0; i < c->npools; i++)
    pool_free(NULL, c->pools[i]);
  json_object_clear(c->node_refs);
  free(c->pools);
  c->pools = NULL;
  c->npools = c->cappools = 0;
}

/* ---- publishing a pool, node by node ---- */

/*
 * What the in-tree allocator sees of a pool from one node (GatherPools): the
 * slices relevant to the node (its nodeName, allNodes, a nodeSelector that
 * selects it, a per-device selection reaching it, and every slice with
 * shared counters), of their newest generation. The pool is complete when
 * that generation has resourceSliceCount slices; when the node's own slices
 * fall short, all slices of the pool decide: a newer generation anywhere
 * makes the node's view obsolete (nothing), too few slices incomplete
 * (nothing). A complete view is invalid when two of its devices share a
 * name, two counter sets share a name, or a device (of any slice of the
 * generation) consumes a counter set or counter the pool does not have.
 */

typedef enum { VIEW_NONE = 0, VIEW_OK, VIEW_INVALID, VIEW_INCOMPLETE } view_t;

/* The devices and counters of a pool that land on one node. */
typedef struct {
  sf_device_spec_t *devs;
  size_t ndevs, capdevs;
  sf_counter_t *ctrs;
  size_t nctrs, capctrs;
  const sf_slice_t **in;
  size_t nin, capin; /* the view's slices */
  const sf_slice_t **rest;
  size_t nrest, caprest; /* its generation's slices not reaching the node */
} node_set_t;

static void ns_free(node_set_t *ns)
{
  free(ns->devs);
  free(ns->ctrs);
  free(ns->in);
  free(ns->rest);
  memset(ns, 0, sizeof *ns);
}

static const json_t *spec_of(const sf_object_t *o)
{
  return json_object_get(o->json, "spec");
}

/* Does device i of slice o reach `node` (cn: its Node, or NULL when unknown)? */
static bool dev_reaches(const sf_object_t *o, size_t i, const char *node, const cnode_t *cn)
{
  const sf_slice_t *s = &o->u.slice;
  switch (s->dev_nodesel[i]) {
  case SF_NODESEL_NAME: return !strcmp(s->dev_node[i], node);
  case SF_NODESEL_ALL: return true;
  case SF_NODESEL_SELECTOR:
    return sf__nodesel_match(json_object_get(json_array_get(json_object_get(spec_of(o), "devices"),
                                                            i),
                                             "nodeSelector"),
                             cn);
  default: return false;
  }
}

static bool relevant(const sf_object_t *o, const char *node, const cnode_t *cn)
{
  const sf_slice_t *s = &o->u.slice;
  if (s->ncounters > 0 || json_array_size(json_object_get(spec_of(o), "sharedCounters")) > 0)
    return true;
  switch (s->nodesel) {
  case SF_NODESEL_NAME: return !strcmp(s->node, node);
  case SF_NODESEL_ALL: return true;
  case SF_NODESEL_SELECTOR: return sf__nodesel_match(json_object_get(spec_of(o), "nodeSelector"), cn);
  case SF_NODESEL_PER_DEVICE:
    for (size_t i = 0; i < s->ndevs; i++)
      if (dev_reaches(o, i, node, cn))
        return true;
    return false;
  default: return false;
  }
}

static bool counter_slice(const sf_object_t *o)
{
  return json_array_size(json_object_get(spec_of(o), "sharedCounters")) > 0;
}

static void push(const sf_slice_t ***v, size_t *n, size_t *cap, const sf_slice_t *s)
{
  sf_xgrow(v, cap, *n + 1, sizeof(**v));
  (*v)[(*n)++] = s;
}

/* The node's slices: ns->in (and ns->rest); VIEW_NONE when obsolete or empty, VIEW_INCOMPLETE. */
static view_t gather_slices(const pool_t *p, const char *node, const cnode_t *cn, node_set_t *ns)
{
  int64_t gen = -1, count = 0;
  size_t nrel = 0;
  for (size_t k = 0; k < p->nslices; k++)
    if (relevant(p->slices[k], node, cn) && p->slices[k]->u.slice.generation > gen)
      gen = p->slices[k]->u.slice.generation;
  if (gen < 0)
    return VIEW_NONE;
  for (size_t k = 0; k < p->nslices; k++) {
    const sf_slice_t *s = &p->slices[k]->u.slice;
    if (s->generation != gen)
      continue;
    if (relevant(p->slices[k], node, cn)) {
      if (nrel++ == 0)
        count = s->slice_count;
      push(&ns->in, &ns->nin, &ns->capin, s);
    } else {
      push(&ns->rest, &ns->nrest, &ns->caprest, s);
    }
  }
  if ((int64_t)nrel == count) {
    ns->nrest = 0;
    return VIEW_OK;
  }
  for (size_t k = 0; k < p->nslices; k++)
    if (p->slices[k]->u.slice.generation > gen)
      return VIEW_NONE; /* obsolete for this node */
  return (int64_t)(ns->nin + ns->nrest) == count ? VIEW_OK : VIEW_INCOMPLETE;
}

static const sf_object_t *obj_of(const pool_t *p, const sf_slice_t *s)
{
  for (size_t k = 0; k < p->nslices; k++)
    if (&p->slices[k]->u.slice == s)
      return p->slices[k];
  return NULL;
}

/* Checks names and counter references of the view; NULL or why it is invalid (in buf). */
static const char *validate(const pool_t *p, const node_set_t *ns, uint64_t seed, char *buf,
                            size_t len)
{
  sf_map_t devs, sets;
  const char *why = NULL;
  sf_map_init(&devs, seed);
  sf_map_init(&sets, seed);
  for (size_t k = 0; k < ns->nin && !why; k++) {
    const sf_object_t *o = obj_of(p, ns->in[k]);
    size_t i;
    const json_t *cs;
    if (!counter_slice(o)) {
      for (i = 0; i < ns->in[k]->ndevs && !why; i++) {
        const char *name = ns->in[k]->devs[i].name;
        if (sf_map_get(&devs, name, strlen(name)) >= 0)
          why = (snprintf(buf, len, "duplicate device name %s", name), buf);
        sf_map_put(&devs, name, strlen(name), 1);
      }
      continue;
    }
    json_array_foreach(json_object_get(spec_of(o), "sharedCounters"), i, cs)
    {
      const char *name = json_string_value(json_object_get(cs, "name"));
      if (!name || why)
        continue;
      if (sf_map_get(&sets, name, strlen(name)) >= 0)
        why = (snprintf(buf, len, "duplicate counter set name %s", name), buf);
      sf_map_put(&sets, name, strlen(name), (int32_t)k);
    }
  }
  for (size_t k = 0; k < ns->nin + ns->nrest && !why; k++) {
    const sf_slice_t *s = k < ns->nin ? ns->in[k] : ns->rest[k - ns->nin];
    const json_t *devices = json_object_get(spec_of(obj_of(p, s)), "devices"), *d;
    size_t i;
    json_array_foreach(devices, i, d)
    {
      size_t u;
      const json_t *use;
      json_array_foreach(json_object_get(d, "consumesCounters"), u, use)
      {
        const char *set = json_string_value(json_object_get(use, "counterSet"));
        int32_t at = set ? sf_map_get(&sets, set, strlen(set)) : -1;
        if (at < 0) {
          if (!why)
            why = (snprintf(buf, len, "counter set %s not found", set ? set : ""), buf);
          continue;
        }
        const json_t *have = NULL, *c2;
        size_t j;
        json_array_foreach(json_object_get(spec_of(obj_of(p, ns->in[at])), "sharedCounters"), j,
                           c2) if (json_is_string(json_object_get(c2, "name")) &&
                                   !strcmp(json_string_value(json_object_get(c2, "name")), set))
            have = json_object_get(c2, "counters");
        const char *cname;
        const json_t *cv;
        json_object_foreach((json_t *)(uintptr_t)json_object_get(use, "counters"), cname, cv)
        {
          if (!json_object_get(have, cname) && !why)
            why = (snprintf(buf, len, "counter %s not found in counter set %s", cname, set), buf);
        }
      }
    }
  }
  sf_map_dispose(&devs);
  sf_map_dispose(&sets);
  return why;
}

/*
 * The devices (those reaching the node) and counters of the view. A device with binding
 * conditions is left out where the cluster's allocator cannot select it (DRADeviceBindingConditions
 * off: the allocator's isSelectable answers false), as if it were not published.
 */
static void gather(const pool_t *p, const char *node, const cnode_t *cn, bool binding, node_set_t *ns)
{
  for (size_t k = 0; k < ns->nin; k++) {
    const sf_slice_t *s = ns->in[k];
    const sf_object_t *o = obj_of(p, s);
    if (counter_slice(o)) {
      sf_xgrow(&ns->ctrs, &ns->capctrs, ns->nctrs + s->ncounters + 1, sizeof(*ns->ctrs));
      memcpy(ns->ctrs + ns->nctrs, s->counters, s->ncounters * sizeof(*ns->ctrs));
      ns->nctrs += s->ncounters;
      continue;
    }
    for (size_t i = 0; i < s->ndevs; i++) {
      if (s->nodesel == SF_NODESEL_PER_DEVICE && !dev_reaches(o, i, node, cn))
        continue;
      if (s->dev_binding[i] && !binding)
        continue;
      sf_xgrow(&ns->devs, &ns->capdevs, ns->ndevs + 1, sizeof(*ns->devs));
      ns->devs[ns->ndevs++] = s->devs[i];
    }
  }
}

/* Remembers that the pool is invalid for `node`, and why; logs it the first time. */
static void mark_invalid(sf_cluster_t *c, pool_t *p, const char *node, const char *why)
{
  if (!p->invalid || strcmp(p->invalid, why)) {
    sf_log_warn("resource pool invalid, it offers no device", "pool=%s/%s node=%s reason=\"%s\"",
                p->driver, p->name, node, why);
    if (!p->invalid)
      c->ninvalid++;
    free(p->invalid);
    p->invalid = sf_xstrdup(why);
  }
  sf_xgrow(&p->invalid_nodes, &p->capinvalid, p->ninvalid_nodes + 1, sizeof(char *));
  p->invalid_nodes[p->ninvalid_nodes++] = sf_xstrdup(node);
}

static int publish(sf_cluster_t *c, pool_t *p, const char *node, node_set_t *ns)
{
  sf_node_id id;
  sf_node_spec_t spec = {.name = node};
  if (sf_index_node_find(c->idx, node) < 0) {
    sf_index_node_upsert(c->idx, &spec, &id);
    sf__host_sync(c, node); /* its Node's CPU and memory, and its pods' */
  }
  id = sf_index_node_find(c->idx, node);
  return sf_index_pool_set(c->idx, id, p->driver, p->name, ns->devs, ns->ndevs, ns->ctrs, ns->nctrs);
}

/* What the node sees of the pool, gathered into ns; VIEW_INVALID records why, VIEW_INCOMPLETE
 * that it is (allocation mode All cannot be judged on such a node). */
static view_t view_node(sf_cluster_t *c, pool_t *p, const char *node, node_set_t *ns)
{
  const cnode_t *cn = sf__node_get(c, node);
  char buf[SF_REASON_MAX];
  view_t v = gather_slices(p, node, cn, ns);
  if (v == VIEW_INCOMPLETE) {
    sf_xgrow(&p->incomplete_nodes, &p->capincomplete, p->nincomplete_nodes + 1, sizeof(char *));
    p->incomplete_nodes[p->nincomplete_nodes++] = sf_xstrdup(node);
  }
  const char *why = v == VIEW_OK ? validate(p, ns, c->hash_seed, buf, sizeof buf) : NULL;
  if (why) {
    mark_invalid(c, p, node, why);
    return VIEW_INVALID;
  }
  if (v == VIEW_OK)
    gather(p, node, cn, sf__gate_binding_conditions(c), ns);
  return v;
}

static const char *publish_error(int r)
{
  return r == SF_E2BIG ? "a device has too many attributes and capacities"
                       : "a bad request policy or counter reference";
}

/* The pool on one node, its devices homed there: VIEW_OK when it published there. */
static view_t sync_node(sf_cluster_t *c, pool_t *p, const char *node)
{
  node_set_t ns = {0};
  view_t v = view_node(c, p, node, &ns);
  int r = v == VIEW_OK ? publish(c, p, node, &ns) : 0;
  if (r < 0) {
    mark_invalid(c, p, node, publish_error(r));
    v = VIEW_INVALID;
  }
  ns_free(&ns);
  return v;
}

static bool has_node(char **nodes, size_t n, const char *node)
{
  for (size_t i = 0; i < n; i++)
    if (!strcmp(nodes[i], node))
      return true;
  return false;
}

static void add_name(char ***v, size_t *n, size_t *cap, const char *name)
{
  if (has_node(*v, *n, name))
    return;
  sf_xgrow(v, cap, *n + 1, sizeof(**v));
  (*v)[(*n)++] = sf_xstrdup(name);
}

/* Nodes the pool may reach: those its slices and devices name, and every known Node when a
 * slice or device reaches nodes by selector or allNodes. */
static void candidates(const sf_cluster_t *c, pool_t *p, char ***out, size_t *n)
{
  size_t cap = 0;
  *out = NULL;
  *n = 0;
  const char *first = NULL;
  bool counters = false;
  p->reaches_many = p->spans = false;
  for (size_t k = 0; k < p->nslices; k++) {
    const sf_slice_t *s = &p->slices[k]->u.slice;
    counters |= counter_slice(p->slices[k]);
    if (s->nodesel == SF_NODESEL_NAME && s->ndevs > 0 && !counter_slice(p->slices[k])) {
      if (first && strcmp(first, s->node))
        p->spans = true;
      first = s->node;
    }
    if (s->nodesel == SF_NODESEL_NAME)
      add_name(out, n, &cap, s->node);
    else if (s->nodesel != SF_NODESEL_PER_DEVICE)
      p->reaches_many = true;
    for (size_t i = 0; s->nodesel == SF_NODESEL_PER_DEVICE && i < s->ndevs; i++) {
      if (s->dev_nodesel[i] == SF_NODESEL_NAME)
        add_name(out, n, &cap, s->dev_node[i]);
      else
        p->reaches_many = true;
    }
  }
  for (size_t i = 0; p->reaches_many && i < c->ncnodes; i++)
    add_name(out, n, &cap, c->cnodes[i].name);
  p->spans = p->reaches_many || (p->spans && counters);
}

/* The node that holds the devices of a pool that several nodes reach ("@driver/pool": no Node
 * is named so), in buf. */
static const char *home_of(const pool_t *p, char *buf, size_t len)
{
  snprintf(buf, len, "@%s/%s", p->driver, p->name);
  return buf;
}

/*
 * A pool whose devices several nodes reach (selectors, allNodes, or counters shared by devices
 * of different nodes): each device is published once, on the pool's home node, and mirrored
 * onto every node whose view holds it, so that one allocation counts for all of them.
 */
static void sync_spanning(sf_cluster_t *c, pool_t *p, char **cand, size_t ncand, char ***nodes,
                          size_t *n, size_t *cap)
{
  node_set_t *views = sf_xcalloc(ncand + 1, sizeof(*views)), all = {0};
  view_t *v = sf_xcalloc(ncand + 1, sizeof(*v));
  sf_map_t seen;
  char home[KEY_MAX];
  sf_map_init(&seen, c->hash_seed);
  for (size_t i = 0; i < ncand; i++) {
    v[i] = view_node(c, p, cand[i], &views[i]);
    for (size_t k = 0; v[i] == VIEW_OK && k < views[i].ndevs; k++) {
      const char *name = views[i].devs[k].name;
      if (sf_map_get(&seen, name, strlen(name)) >= 0)
        continue;
      sf_map_put(&seen, name, strlen(name), 1);
      sf_xgrow(&all.devs, &all.capdevs, all.ndevs + 1, sizeof(*all.devs));
      all.devs[all.ndevs++] = views[i].devs[k];
    }
    if (v[i] == VIEW_OK && all.nctrs == 0 && views[i].nctrs > 0) {
      all.ctrs = sf_xmalloc(views[i].nctrs * sizeof(*all.ctrs));
      memcpy(all.ctrs, views[i].ctrs, views[i].nctrs * sizeof(*all.ctrs));
      all.nctrs = all.capctrs = views[i].nctrs;
    }
  }
  int r = all.ndevs > 0 ? publish(c, p, home_of(p, home, sizeof home), &all) : 0;
  if (all.ndevs > 0 && r == 0)
    add_name(nodes, n, cap, home);
  for (size_t i = 0; i < ncand; i++) {
    if (v[i] != VIEW_OK)
      continue;
    if (r < 0) {
      mark_invalid(c, p, cand[i], publish_error(r));
      continue;
    }
    const char **names = sf_xmalloc((views[i].ndevs + 1) * sizeof(*names));
    for (size_t k = 0; k < views[i].ndevs; k++)
      names[k] = views[i].devs[k].name;
    sf_node_id id = sf_index_node_find(c->idx, cand[i]);
    sf_node_spec_t spec = {.name = cand[i]};
    if (id < 0) {
      sf_index_node_upsert(c->idx, &spec, &id);
      sf__host_sync(c, cand[i]);
    }
    sf_index_mirror_set(c->idx, id, p->driver, p->name, names, views[i].ndevs);
    free(names);
    add_name(nodes, n, cap, cand[i]);
  }
  for (size_t i = 0; i < ncand; i++)
    ns_free(&views[i]);
  ns_free(&all);
  free(views);
  free(v);
  sf_map_dispose(&seen);
}

/*
 * Takes the pool off `node`, and the node itself once it publishes nothing
 * and no other pool lists it (the index must not depend on the order pools
 * came and went in).
 */
static void unpublish(sf_cluster_t *c, const pool_t *p, const char *node)
{
  sf_node_id id = sf_index_node_find(c->idx, node);
  size_t ndev = 0;
  if (id < 0)
    return;
  sf_index_pool_remove(c->idx, id, p->driver, p->name);
  sf_index_mirror_set(c->idx, id, p->driver, p->name, NULL, 0);
  sf_index_node_devices(c->idx, id, &ndev);
  if (ndev == 0 && node_refs(c, node) <= 1) {
    /* The pods' CPU would keep the node; it comes back with the node's first device. */
    sf__host_unrecord(c, node);
    if (sf_index_node_remove(c->idx, id) < 0)
      sf__host_sync(c, node); /* SF_EBUSY while claimed: kept */
    else
      c->node_removals++; /* the id may now name another node */
  }
}

/* The pool as a whole (its newest generation anywhere), for /debug/state. */
static void pool_state(pool_t *p)
{
  size_t have = 0;
  int64_t need = 0;
  p->generation = -1;
  for (size_t k = 0; k < p->nslices; k++)
    if (p->slices[k]->u.slice.generation > p->generation)
      p->generation = p->slices[k]->u.slice.generation;
  for (size_t k = 0; k < p->nslices; k++) {
    const sf_slice_t *s = &p->slices[k]->u.slice;
    if (s->generation != p->generation)
      continue;
    have++;
    if (s->slice_count > need)
      need = s->slice_count;
  }
  p->complete = p->nslices > 0 && (int64_t)have == need;
}

static void clear_invalid(pool_t *p)
{
  for (size_t i = 0; i < p->ninvalid_nodes; i++)
    free(p->invalid_nodes[i]);
  free(p->invalid_nodes);
  p->invalid_nodes = NULL;
  p->ninvalid_nodes = p->capinvalid = 0;
  for (size_t i = 0; i < p->nincomplete_nodes; i++)
    free(p->incomplete_nodes[i]);
  free(p->incomplete_nodes);
  p->incomplete_nodes = NULL;
  p->nincomplete_nodes = p->capincomplete = 0;
}

void sf__pools_unsettled(const sf_cluster_t *c, sf_map_t *out)
{
  for (size_t i = 0; i < c->npools; i++) {
    const pool_t *p = c->pools[i];
    for (size_t k = 0; k < p->ninvalid_nodes; k++)
      sf_map_put(out, p->invalid_nodes[k], strlen(p->invalid_nodes[k]), (int32_t)(2 * i + 1));
    for (size_t k = 0; k < p->nincomplete_nodes; k++)
      sf_map_put(out, p->incomplete_nodes[k], strlen(p->incomplete_nodes[k]), (int32_t)(2 * i));
  }
}

const char *sf__pool_name(const sf_cluster_t *c, size_t i, char *buf, size_t len)
{
  snprintf(buf, len, "%s/%s", c->pools[i]->driver, c->pools[i]->name);
  return buf;
}

static int pool_sync(sf_cluster_t *c, pool_t *p, char *err, size_t errlen)
{
  char **cand = NULL, **nodes = NULL;
  size_t ncand = 0, n = 0, cap = 0;
  bool *restored = sf_xcalloc(p->nslices + 1, sizeof(*restored));
  (void)err;
  (void)errlen;
  for (size_t k = 0; k < p->nslices; k++)
    restored[k] = sf__slice_restore(c, p->slices[k]);
  pool_state(p);
  clear_invalid(p);
  candidates(c, p, &cand, &ncand);
  if (p->spans)
    sync_spanning(c, p, cand, ncand, &nodes, &n, &cap);
  for (size_t i = 0; !p->spans && i < ncand; i++)
    if (sync_node(c, p, cand[i]) == VIEW_OK)
      add_name(&nodes, &n, &cap, cand[i]);
  for (size_t i = 0; i < p->nnodes; i++)
    if (!has_node(nodes, n, p->nodes[i]))
      unpublish(c, p, p->nodes[i]);
  if (p->ninvalid_nodes == 0 && p->invalid) { /* valid again everywhere */
    free(p->invalid);
    p->invalid = NULL;
    c->ninvalid--;
  }
  p->skipped = p->reaches_many && c->ncnodes == 0;
  for (size_t i = 0; i < ncand; i++)
    free(cand[i]);
  free(cand);
  free_nodes(c, p);
  p->nodes = nodes;
  p->nnodes = n;
  for (size_t i = 0; i < n; i++)
    node_ref(c, nodes[i], +1);
  for (size_t k = 0; k < p->nslices; k++)
    sf__slice_slim(c, p->slices[k], restored[k]);
  free(restored);
  return 0;
}

int sf__pool_sync(sf_cluster_t *c, const sf_slice_t *s, char *err, size_t errlen)
{
  pool_t *p = pool_get(c, s->driver, s->pool, false);
  return p ? pool_sync(c, p, err, errlen) : 0;
}

int sf__pools_sync_all(sf_cluster_t *c, char *err, size_t errlen)
{
  int r = 0;
  for (size_t i = 0; i < c->npools; i++) {
    int e = pool_sync(c, c->pools[i], r < 0 ? NULL : err, errlen);
    if (r == 0)
      r = e;
  }
  /* Pools without slices are gone from the index now: forget them. */
  size_t kept = 0;
  sf_map_clear(&c->pool_keys);
  for (size_t i = 0; i < c->npools; i++) {
    pool_t *p = c->pools[i];
    if (p->nslices == 0) {
      pool_free(c, p);
      continue;
    }
    char key[KEY_MAX];
    sf_map_put(&c->pool_keys, key, sf__pool_keylen(p->driver, p->name, key, sizeof key),
               (int32_t)kept);
    c->pools[kept++] = p;
  }
  c->npools = kept;
  return r;
}

void sf__pools_sync_reaching(sf_cluster_t *c)
{
  for (size_t i = 0; i < c->npools; i++) {
    pool_t *p = c->pools[i];
    if (!p->reaches_many || p->nslices == 0)
      continue;
    const sf_slice_t *s = &p->slices[0]->u.slice;
    sf__claims_unrecord_pool(c, s);
    pool_sync(c, p, NULL, 0);
    sf__claims_record_pool(c, s);
  }
  sf__rules_apply_all(c);
}
