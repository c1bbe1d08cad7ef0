/*
 * A decoded ResourceSlice made independent of its JSON. The decoder borrows
 * a slice's strings from the jansson tree, which takes about ten times the
 * text it was read from: at 10,000 nodes the trees were most of the
 * daemon's memory. Here every string the slice points at is copied into its
 * arena (repeated strings once: a slice's devices repeat their attribute
 * values), and the tree is replaced by the few members the pools still read
 * as JSON (node selectors and counter sets, cluster_pool.c), or by nothing.
 */
#include <string.h>
#include "decode_int.h"

#define SEEN 64 /* strings remembered for sharing; a slice repeats few */

/*
 * Two passes over the same strings in the same order: the first adds up the
 * bytes (w NULL), the second copies them into one block of exactly that
 * size, so the slice's arena grows by what it keeps and no more. Strings
 * already in the arena (qualified names) stay where they are.
 */
typedef struct {
  sf_arena_t *a;
  char *w;     /* where the next copy goes; NULL while counting */
  size_t need; /* bytes the copies take */
  const char *from[SEEN], *to[SEEN];
} own_t;

static const char *keep(own_t *k, const char *s)
{
  if (s == NULL || sf__arena_owns(k->a, s))
    return s;
  size_t len = strlen(s);
  unsigned h = (unsigned)(len * 31 + (unsigned char)s[0] * 7 +
                          (len ? (unsigned char)s[len - 1] : 0)) %
               SEEN;
  if (k->from[h] && strcmp(k->from[h], s) == 0)
    return k->to[h];
  k->from[h] = s;
  if (k->w == NULL) {
    k->need += len + 1;
    return k->to[h] = s;
  }
  k->to[h] = memcpy(k->w, s, len + 1);
  k->w += len + 1;
  return k->to[h];
}

static void own_device(own_t *k, sf_device_spec_t *dev)
{
  dev->name = keep(k, dev->name);
  for (size_t i = 0; i < dev->nattrs; i++) {
    sf_attr_t *at = (sf_attr_t *)(uintptr_t)&dev->attrs[i];
    at->name = keep(k, at->name);
    at->s = keep(k, at->s);
  }
  for (size_t i = 0; i < dev->ncaps; i++) {
    sf_capacity_t *c = (sf_capacity_t *)(uintptr_t)&dev->caps[i];
    c->name = keep(k, c->name);
  }
  for (size_t i = 0; i < dev->ncounters; i++) {
    sf_counter_use_t *u = (sf_counter_use_t *)(uintptr_t)&dev->counters[i];
    u->set = keep(k, u->set);
    u->counter = keep(k, u->counter);
  }
  for (size_t i = 0; i < dev->ntaints; i++) {
    sf_taint_t *t = (sf_taint_t *)(uintptr_t)&dev->taints[i];
    t->key = keep(k, t->key);
    t->value = keep(k, t->value);
  }
}

/* Sets key of `to` to a copy of the member of `from`, when present; true if it was. */
static bool copy_member(json_t *to, const json_t *from, const char *key)
{
  json_t *v = json_object_get(from, key);
  if (v == NULL)
    return false;
  json_object_set_new(to, key, json_deep_copy(v));
  return true;
}

/*
 * {"spec": {nodeSelector, sharedCounters, devices: [{nodeSelector,
 * consumesCounters}, ...]}} with only the members present, or NULL when none
 * is: what cluster_pool.c reads from a slice's JSON.
 */
static json_t *pruned(const json_t *j)
{
  const json_t *spec = json_object_get(j, "spec"), *devs = json_object_get(spec, "devices");
  json_t *out = json_object(), *dv = json_array();
  bool any = copy_member(out, spec, "nodeSelector");
  any |= copy_member(out, spec, "sharedCounters");
  bool devany = false;
  for (size_t i = 0; i < json_array_size(devs); i++) {
    json_t *e = json_object();
    devany |= copy_member(e, json_array_get(devs, i), "nodeSelector");
    devany |= copy_member(e, json_array_get(devs, i), "consumesCounters");
    json_array_append_new(dv, e);
  }
  if (devany)
    json_object_set(out, "devices", dv);
  json_decref(dv);
  if (!any && !devany) {
    json_decref(out);
    return NULL;
  }
  json_t *wrap = json_object();
  json_object_set_new(wrap, "spec", out);
  return wrap;
}

static void own_slice(own_t *k, sf_slice_t *s)
{
  s->meta.ns = keep(k, s->meta.ns);
  s->meta.name = keep(k, s->meta.name);
  s->meta.uid = keep(k, s->meta.uid);
  s->meta.rv = keep(k, s->meta.rv);
  s->driver = keep(k, s->driver);
  s->pool = keep(k, s->pool);
  s->node = keep(k, s->node);
  for (size_t i = 0; i < s->ndevs; i++) {
    own_device(k, &s->devs[i]);
    s->dev_node[i] = keep(k, s->dev_node[i]);
  }
  for (size_t i = 0; i < s->ncounters; i++) {
    s->counters[i].set = keep(k, s->counters[i].set);
    s->counters[i].counter = keep(k, s->counters[i].counter);
  }
}

void sf__slice_detach(sf_object_t *o)
{
  if (o == NULL || o->kind != SF_OBJ_RESOURCE_SLICE || o->json == NULL)
    return;
  own_t count = {.a = o->arena};
  sf_slice_t *s = &o->u.slice;
  own_slice(&count, s); /* counting leaves every pointer as it was */
  if (count.need) {
    own_t copy = {.a = o->arena};
    copy.w = sf__arena_alloc_exact(o->arena, count.need);
    own_slice(&copy, s);
  }
  json_t *small = pruned(o->json);
  json_decref(o->json);
  o->json = small;
}
