/*
 * The Nodes the cluster knows: name, labels and allocatable CPU and memory
 * (which the index's nodes carry, for the FGD rule that a node short of CPU
 * strands its GPUs), and for two questions the in-tree allocator asks of a node: which ResourceSlices reach it (a slice's
 * or a device's nodeSelector, allNodes) and whether the node exists at all
 * (a node in the Node list that no complete pool reaches cannot take a
 * claim; a name absent from the list stays unsure).
 *
 * A Node object is large (status, images) and changes every few seconds
 * (heartbeats); the cluster keeps none of it but a copy of the name, the
 * labels and two integers, and an update that leaves them as they were costs
 * a compare.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cluster_int.h"

static void ext_free(cnode_t *n)
{
  for (size_t i = 0; i < n->next; i++)
    free(n->ext[i]);
  free(n->ext);
  n->ext = NULL;
  n->next = 0;
}

static void cnode_free(cnode_t *n)
{
  for (size_t i = 0; i < n->nlabels; i++) {
    free(n->keys[i]);
    free(n->vals[i]);
  }
  free(n->keys);
  free(n->vals);
  free(n->name);
  ext_free(n);
}

bool sf__node_has_ext(const cnode_t *n, const char *res)
{
  for (size_t i = 0; n && i < n->next; i++)
    if (!strcmp(n->ext[i], res))
      return true;
  return false;
}

/* The extended resources of o's allocatable, as n keeps them; a heartbeat that leaves them as
 * they were costs a compare. */
static void ext_set(cnode_t *n, const sf_node_t *o)
{
  size_t m = 0;
  bool same = true;
  for (size_t i = 0; i < o->nalloc; i++)
    if (strchr(o->alloc[i].name, '/')) {
      same = same && m < n->next && !strcmp(n->ext[m], o->alloc[i].name);
      m++;
    }
  if (same && m == n->next)
    return;
  ext_free(n);
  n->ext = sf_xcalloc(m + 1, sizeof(*n->ext));
  for (size_t i = 0; i < o->nalloc; i++)
    if (strchr(o->alloc[i].name, '/'))
      n->ext[n->next++] = sf_xstrdup(o->alloc[i].name);
}

const cnode_t *sf__node_get(const sf_cluster_t *c, const char *name)
{
  int32_t i = sf_map_get(&c->node_keys, name, strlen(name));
  return i >= 0 ? &c->cnodes[i] : NULL;
}

static bool same_labels(const cnode_t *n, const sf_node_t *o)
{
  if (n->nlabels != o->nlabels)
    return false;
  for (size_t i = 0; i < o->nlabels; i++) {
    const char *v = sf__node_label(n, o->labels[i].key);
    if (!v || strcmp(v, o->labels[i].value))
      return false;
  }
  return true;
}

const char *sf__node_label(const cnode_t *n, const char *key)
{
  for (size_t i = 0; i < n->nlabels; i++)
    if (!strcmp(n->keys[i], key))
      return n->vals[i];
  return NULL;
}

const char *sf_cluster_node_label(const sf_cluster_t *c, const char *node, const char *key)
{
  const cnode_t *n = sf__node_get(c, node);
  return n ? sf__node_label(n, key) : NULL;
}

bool sf__node_set(sf_cluster_t *c, const sf_node_t *o)
{
  const char *name = o->meta.name;
  int32_t i = sf_map_get(&c->node_keys, name, strlen(name));
  char **ext_kept = NULL;
  size_t next_kept = 0;
  c->nodes_tracked = true;
  bool alloc = i < 0 || c->cnodes[i].cpu_milli != o->cpu_milli ||
               c->cnodes[i].mem_bytes != o->mem_bytes;
  if (i >= 0 && alloc) {
    c->cnodes[i].cpu_milli = o->cpu_milli;
    c->cnodes[i].mem_bytes = o->mem_bytes;
    sf__host_sync(c, name);
  }
  if (i >= 0)
    ext_set(&c->cnodes[i], o);
  if (i >= 0 && same_labels(&c->cnodes[i], o))
    return false;
  if (i < 0) {
    sf_xgrow(&c->cnodes, &c->capcnodes, c->ncnodes + 1, sizeof(*c->cnodes));
    i = (int32_t)c->ncnodes++;
    sf_map_put(&c->node_keys, name, strlen(name), i);
  } else {
    ext_kept = c->cnodes[i].ext;
    next_kept = c->cnodes[i].next;
    c->cnodes[i].ext = NULL;
    c->cnodes[i].next = 0;
    cnode_free(&c->cnodes[i]);
  }
  cnode_t *n = &c->cnodes[i];
  memset(n, 0, sizeof *n);
  n->ext = ext_kept;
  n->next = next_kept;
  if (!ext_kept)
    ext_set(n, o);
  n->name = sf_xstrdup(name);
  n->keys = sf_xcalloc(o->nlabels + 1, sizeof(*n->keys));
  n->vals = sf_xcalloc(o->nlabels + 1, sizeof(*n->vals));
  for (size_t k = 0; k < o->nlabels; k++) {
    n->keys[k] = sf_xstrdup(o->labels[k].key);
    n->vals[k] = sf_xstrdup(o->labels[k].value);
  }
  n->nlabels = o->nlabels;
  n->cpu_milli = o->cpu_milli;
  n->mem_bytes = o->mem_bytes;
  if (alloc)
    sf__host_sync(c, name);
  return true;
}

bool sf__node_del(sf_cluster_t *c, const char *name)
{
  int32_t i = sf_map_get(&c->node_keys, name, strlen(name));
  if (i < 0)
    return false;
  sf_map_del(&c->node_keys, name, strlen(name));
  char *gone = c->cnodes[i].name;
  c->cnodes[i].name = NULL;
  cnode_free(&c->cnodes[i]);
  if ((size_t)i != --c->ncnodes) {
    c->cnodes[i] = c->cnodes[c->ncnodes];
    const char *moved = c->cnodes[i].name;
    sf_map_put(&c->node_keys, moved, strlen(moved), i);
  }
  sf__host_sync(c, gone); /* no allocatable amounts known any more */
  free(gone);
  return true;
}

void sf__nodes_free(sf_cluster_t *c)
{
  for (size_t i = 0; i < c->ncnodes; i++)
    cnode_free(&c->cnodes[i]);
  free(c->cnodes);
  c->cnodes = NULL;
  c->ncnodes = c->capcnodes = 0;
  sf_map_dispose(&c->node_keys);
  sf_map_init(&c->node_keys, c->hash_seed);
}

/* ---- NodeSelector (core/v1), as nodeaffinity.NewNodeSelector evaluates it ---- */

static bool in_values(const json_t *vals, const char *v)
{
  size_t i;
  const json_t *x;
  json_array_foreach(vals, i,
                     x) if (json_is_string(x) && !strcmp(json_string_value(x), v)) return true;
  return false;
}

static bool int_of(const char *s, long long *out)
{
  char *end;
  if (!s || !*s)
    return false;
  *out = strtoll(s, &end, 10);
  return *end == '\0';
}

/* One requirement on `have` (NULL: the key is absent). */
static bool requirement(const json_t *r, const char *have)
{
  const char *op = json_string_value(json_object_get(r, "operator"));
  const json_t *vals = json_object_get(r, "values");
  long long a, b;
  if (!op)
    return false;
  if (!strcmp(op, "In"))
    return have && in_values(vals, have);
  if (!strcmp(op, "NotIn"))
    return !have || !in_values(vals, have);
  if (!strcmp(op, "Exists"))
    return have != NULL;
  if (!strcmp(op, "DoesNotExist"))
    return have == NULL;
  if (!strcmp(op, "Gt") || !strcmp(op, "Lt")) {
    if (!int_of(have, &a) || json_array_size(vals) != 1 ||
        !int_of(json_string_value(json_array_get(vals, 0)), &b))
      return false;
    return !strcmp(op, "Gt") ? a > b : a < b;
  }
  return false;
}

/* A term matches when all its requirements do; an empty term matches nothing. */
static bool term(const json_t *t, const cnode_t *n)
{
  const json_t *exprs = json_object_get(t, "matchExpressions"),
               *fields = json_object_get(t, "matchFields");
  size_t i, total = json_array_size(exprs) + json_array_size(fields);
  const json_t *r;
  if (total == 0)
    return false;
  json_array_foreach(exprs, i, r)
  {
    const char *key = json_string_value(json_object_get(r, "key"));
    if (!requirement(r, key ? sf__node_label(n, key) : NULL))
      return false;
  }
  json_array_foreach(fields, i, r)
  {
    const char *key = json_string_value(json_object_get(r, "key"));
    if (!key || strcmp(key, "metadata.name") || !requirement(r, n->name))
      return false;
  }
  return true;
}

bool sf__nodesel_match(const json_t *sel, const cnode_t *n)
{
  size_t i;
  const json_t *t;
  if (!n)
    return false;
  json_array_foreach(json_object_get(sel, "nodeSelectorTerms"), i, t) if (term(t, n)) return true;
  return false;
}
