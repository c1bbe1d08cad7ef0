/*
 * Pools, allocated claims and taint rules: how stored objects become index
 * state.
 *
 * A pool (driver, pool name) is the set of stored slices naming it. Only the
 * slices of its newest generation count; when fewer of them are present
 * than their resourceSliceCount the pool is incomplete and publishes no
 * device. Devices are published per node: the slice's nodeName, or each
 * device's own nodeName under perDeviceNodeSelection. Devices that are not
 * local to one node (allNodes, nodeSelector) cannot be placed by a per-node
 * index and are counted as skipped.
 *
 * The result depends on the set of stored slices only, never on the order
 * they came in: a pool's slices are kept in name order (so its devices are
 * too), and a node leaves the index only when no pool is published on it
 * any more (c->node_refs counts the pools listing each node), not when the
 * pool that happened to go last had the node's devices.
 */
#include <stdio.h>
#include <string.h>
#include "cluster_int.h"

#define KEY_MAX 512

const char *sf__qualify(const char *driver, const char *name, char *buf, size_t len) {
  if (strchr(name, '/')) return name;
  snprintf(buf, len, "%s/%s", driver, name);
  return buf;
}

/* ---- pool membership ---- */

size_t sf__pool_keylen(const char *driver, const char *pool, char *buf, size_t len) {
  int n = snprintf(buf, len, "%s\x1f%s", driver, pool);
  return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
}

static pool_t *pool_get(sf_cluster_t *c, const char *driver, const char *name, bool create) {
  char key[KEY_MAX];
  size_t klen = sf__pool_keylen(driver, name, key, sizeof key);
  int32_t v = sf_map_get(&c->pool_keys, key, klen);
  if (v >= 0) return c->pools[v];
  if (!create) return NULL;
  pool_t *p = sf_xcalloc(1, sizeof(*p));
  p->driver = sf_xstrdup(driver);
  p->name = sf_xstrdup(name);
  sf_xgrow(&c->pools, &c->cappools, c->npools + 1, sizeof(*c->pools));
  sf_map_put(&c->pool_keys, key, klen, (int32_t)c->npools);
  c->pools[c->npools++] = p;
  return p;
}

/* Slices of one pool in name order (names are unique among stored slices). */
void sf__pool_add_slice(sf_cluster_t *c, sf_object_t *o) {
  pool_t *p = pool_get(c, o->u.slice.driver, o->u.slice.pool, true);
  sf_xgrow(&p->slices, &p->capslices, p->nslices + 1, sizeof(*p->slices));
  size_t i = p->nslices++;
  for (; i > 0 && strcmp(p->slices[i - 1]->u.meta.name, o->u.meta.name) > 0; i--)
    p->slices[i] = p->slices[i - 1];
  p->slices[i] = o;
}

void sf__pool_del_slice(sf_cluster_t *c, sf_object_t *o) {
  pool_t *p = pool_get(c, o->u.slice.driver, o->u.slice.pool, false);
  for (size_t i = 0; p && i < p->nslices; i++)
    if (p->slices[i] == o) {
      memmove(p->slices + i, p->slices + i + 1, (p->nslices - i - 1) * sizeof(*p->slices));
      p->nslices--;
      return;
    }
}

/* ---- how many pools list each node ---- */

static json_int_t node_refs(sf_cluster_t *c, const char *node) {
  return json_integer_value(json_object_get(c->node_refs, node));
}

static void node_ref(sf_cluster_t *c, const char *node, int delta) {
  json_int_t n = node_refs(c, node) + delta;
  if (n > 0) json_object_set_new(c->node_refs, node, json_integer(n));
  else json_object_del(c->node_refs, node);
}

static void free_nodes(sf_cluster_t *c, pool_t *p) {
  for (size_t i = 0; i < p->nnodes; i++) {
    if (c) node_ref(c, p->nodes[i], -1);
    free(p->nodes[i]);
  }
  free(p->nodes);
  p->nodes = NULL;
  p->nnodes = 0;
}

static void pool_free(sf_cluster_t *c, pool_t *p) {
  free_nodes(c, p);
  free(p->slices);
  free(p->driver);
  free(p->name);
  free(p);
}

void sf__pools_free(sf_cluster_t *c) {
  for (size_t i = 0; i < c->npools; i++) pool_free(NULL, c->pools[i]);
  json_object_clear(c->node_refs);
  free(c->pools);
  c->pools = NULL;
  c->npools = c->cappools = 0;
}

/* ---- publishing a pool ---- */

/* The devices and counters of the pool's counting slices that land on `node`. */
typedef struct {
  sf_device_spec_t *devs; size_t ndevs, capdevs;
  sf_counter_t *ctrs; size_t nctrs, capctrs;
} node_set_t;

static bool counts(const pool_t *p, const sf_slice_t *s) { return s->generation == p->generation; }

/* The node of device i of slice s, or NULL when it is not local to one node. */
static const char *dev_node(const sf_slice_t *s, size_t i) {
  if (s->nodesel == SF_NODESEL_NAME) return s->node;
  if (s->nodesel == SF_NODESEL_PER_DEVICE && s->dev_nodesel[i] == SF_NODESEL_NAME)
    return s->dev_node[i];
  return NULL;
}

/* Distinct nodes the pool's counting slices publish devices (or counters) on, newly allocated. */
static void pool_nodes(const sf_cluster_t *c, pool_t *p, char ***out, size_t *n) {
  sf_map_t seen;
  sf_map_init(&seen, c->hash_seed);
  size_t cap = 0;
  *out = NULL;
  *n = 0;
  p->skipped = 0;
  for (size_t k = 0; k < p->nslices; k++) {
    const sf_slice_t *s = &p->slices[k]->u.slice;
    if (!counts(p, s)) continue;
    for (size_t i = 0; i < s->ndevs || (i == 0 && s->nodesel == SF_NODESEL_NAME); i++) {
      const char *node = dev_node(s, i);
      if (!node) {
        p->skipped += i < s->ndevs;
        continue;
      }
      if (!sf_map_put(&seen, node, strlen(node), 1)) continue;
      sf_xgrow(out, &cap, *n + 1, sizeof(**out));
      (*out)[(*n)++] = sf_xstrdup(node);
    }
  }
  sf_map_dispose(&seen);
}

static void gather(const pool_t *p, const char *node, node_set_t *ns) {
  for (size_t k = 0; k < p->nslices; k++) {
    const sf_slice_t *s = &p->slices[k]->u.slice;
    if (!counts(p, s)) continue;
    for (size_t i = 0; i < s->ndevs; i++) {
      const char *dn = dev_node(s, i);
      if (!dn || strcmp(dn, node)) continue;
      sf_xgrow(&ns->devs, &ns->capdevs, ns->ndevs + 1, sizeof(*ns->devs));
      ns->devs[ns->ndevs++] = s->devs[i];
    }
    /* Counter sets are pool-wide: every node of the pool sees them. */
    if (s->ncounters == 0) continue;
    sf_xgrow(&ns->ctrs, &ns->capctrs, ns->nctrs + s->ncounters, sizeof(*ns->ctrs));
    memcpy(ns->ctrs + ns->nctrs, s->counters, s->ncounters * sizeof(*ns->ctrs));
    ns->nctrs += s->ncounters;
  }
}

static int publish(sf_cluster_t *c, pool_t *p, const char *node, char *err, size_t errlen) {
  node_set_t ns = {0};
  sf_node_id id;
  sf_node_spec_t spec = {.name = node};
  gather(p, node, &ns);
  if (sf_index_node_find(c->idx, node) < 0) sf_index_node_upsert(c->idx, &spec, &id);
  id = sf_index_node_find(c->idx, node);
  int r = sf_index_pool_set(c->idx, id, p->driver, p->name, ns.devs, ns.ndevs, ns.ctrs, ns.nctrs);
  if (r < 0 && err && errlen)
    snprintf(err, errlen, "pool %s/%s on node %s: %s (%s)", p->driver, p->name, node,
             r == SF_E2BIG ? "a device has too many attributes and capacities"
                           : "duplicate device names, an unknown counter set or a bad request policy",
             sf_strerror(r));
  free(ns.devs);
  free(ns.ctrs);
  return r;
}

static bool has_node(char **nodes, size_t n, const char *node) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(nodes[i], node)) return true;
  return false;
}

/*
 * Takes the pool off `node`, and the node itself once no other pool lists it
 * (a pool that publishes no device on it still keeps it).
 */
static void unpublish(sf_cluster_t *c, const pool_t *p, const char *node) {
  sf_node_id id = sf_index_node_find(c->idx, node);
  size_t ndev = 0;
  if (id < 0) return;
  sf_index_pool_remove(c->idx, id, p->driver, p->name);
  sf_index_node_devices(c->idx, id, &ndev);
  if (ndev == 0 && node_refs(c, node) <= 1)
    sf_index_node_remove(c->idx, id);  /* SF_EBUSY while allocated: kept */
}

static void pool_state(pool_t *p) {
  size_t have = 0;
  int64_t need = 0;
  p->generation = -1;
  for (size_t k = 0; k < p->nslices; k++)
    if (p->slices[k]->u.slice.generation > p->generation)
      p->generation = p->slices[k]->u.slice.generation;
  for (size_t k = 0; k < p->nslices; k++) {
    const sf_slice_t *s = &p->slices[k]->u.slice;
    if (!counts(p, s)) continue;
    have++;
    if (s->slice_count > need) need = s->slice_count;
  }
  p->complete = p->nslices > 0 && (int64_t)have >= need;
}

static int pool_sync(sf_cluster_t *c, pool_t *p, char *err, size_t errlen) {
  char **nodes = NULL;
  size_t n = 0, cap;
  int r = 0;
  pool_state(p);
  if (p->complete) pool_nodes(c, p, &nodes, &n);
  cap = n;
  for (size_t i = 0; i < n && r == 0; i++) r = publish(c, p, nodes[i], err, errlen);
  for (size_t i = 0; i < p->nnodes; i++) {
    if (has_node(nodes, n, p->nodes[i])) continue;
    if (r == 0) {
      unpublish(c, p, p->nodes[i]);
      continue;
    }
    /* Failed: old nodes stay published and listed, so that the caller's undo (another sync
     * over the previous slices) finds every node this attempt touched. */
    sf_xgrow(&nodes, &cap, n + 1, sizeof(*nodes));
    nodes[n++] = sf_xstrdup(p->nodes[i]);
  }
  free_nodes(c, p);
  p->nodes = nodes;
  p->nnodes = n;
  for (size_t i = 0; i < n; i++) node_ref(c, nodes[i], +1);
  return r;
}

int sf__pool_sync(sf_cluster_t *c, const sf_slice_t *s, char *err, size_t errlen) {
  pool_t *p = pool_get(c, s->driver, s->pool, false);
  return p ? pool_sync(c, p, err, errlen) : 0;
}

int sf__pools_sync_all(sf_cluster_t *c, char *err, size_t errlen) {
  int r = 0;
  for (size_t i = 0; i < c->npools; i++) {
    int e = pool_sync(c, c->pools[i], r < 0 ? NULL : err, errlen);
    if (r == 0) r = e;
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
