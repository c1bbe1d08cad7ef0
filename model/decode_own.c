/*
 * A decoded ResourceSlice made independent of its JSON. The decoder borrows
 * a slice's strings from the jansson tree, which takes about ten times the
 * text it was read from: at 10,000 nodes the trees were most of the
 * daemon's memory. Here every string the slice points at is copied into its
 * arena (repeated strings once: a slice's devices repeat their attribute
 * values), and the tree is replaced by the few members the pools still read
 * as JSON (node selectors and counter sets, cluster_pool.c), or by nothing.
 */
#include <stddef.h>
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

/* The string members of an array's elements: at most two, at these offsets (0 when unused). */
typedef struct {
  size_t size, first, second;
} strings_t;

static const strings_t attr_strings = {sizeof(sf_attr_t), offsetof(sf_attr_t, name),
                                       offsetof(sf_attr_t, s)};
static const strings_t cap_strings = {sizeof(sf_capacity_t), offsetof(sf_capacity_t, name), 0};
static const strings_t use_strings = {sizeof(sf_counter_use_t), offsetof(sf_counter_use_t, set),
                                      offsetof(sf_counter_use_t, counter)};
static const strings_t taint_strings = {sizeof(sf_taint_t), offsetof(sf_taint_t, key),
                                        offsetof(sf_taint_t, value)};
static const strings_t counter_strings = {sizeof(sf_counter_t), offsetof(sf_counter_t, set),
                                          offsetof(sf_counter_t, counter)};

/* Keeps the string members `m` of each of the `n` elements at `base`, element by element. */
static void own_array(own_t *k, const void *base, size_t n, const strings_t *m)
{
  char *p = (char *)(uintptr_t)base;
  for (size_t i = 0; i < n; i++, p += m->size) {
    const char **first = (const char **)(void *)(p + m->first);
    *first = keep(k, *first);
    if (m->second) {
      const char **second = (const char **)(void *)(p + m->second);
      *second = keep(k, *second);
    }
  }
}

static void own_device(own_t *k, sf_device_spec_t *dev)
{
  dev->name = keep(k, dev->name);
  own_array(k, dev->attrs, dev->nattrs, &attr_strings);
  own_array(k, dev->caps, dev->ncaps, &cap_strings);
  own_array(k, dev->counters, dev->ncounters, &use_strings);
  own_array(k, dev->taints, dev->ntaints, &taint_strings);
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
  own_array(k, s->counters, s->ncounters, &counter_strings);
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
