/*
 * The two kinds that are many (ResourceSlice, ResourceClaim) made compact
 * and independent of their JSON once decoded.
 *
 * The decoder borrows a slice's strings from the jansson tree, which takes
 * about ten times the text it was read from, and builds both kinds in an
 * arena whose chunks double: a slice of 8 devices held 9.7 KiB in five
 * chunks, a claim a 1 KiB chunk of which it used about half. Here every
 * array and string the object points at is copied into one block of exactly
 * their size (arrays first, aligned, then the strings, repeated ones once: a
 * slice's devices repeat their attribute names and values), the arena is
 * replaced by that block, and a slice's tree by the few members the pools
 * still read as JSON (node selectors and counter sets, cluster_pool.c), or
 * by nothing.
 *
 * Two passes over the same members in the same order: the first adds up the
 * bytes (nothing is written), the second copies into the block and points
 * the copies' members at their own copies.
 */
#include <stddef.h>
#include <string.h>
#include "decode_int.h"

#define SEEN 64 /* strings remembered for sharing; a slice repeats few */
#define ALIGN 8 /* every array below holds pointers, 64-bit integers, enums or bools */

_Static_assert(_Alignof(sf_device_spec_t) <= ALIGN && _Alignof(sf_attr_t) <= ALIGN &&
                   _Alignof(sf_capacity_t) <= ALIGN && _Alignof(sf_dreq_t) <= ALIGN &&
                   _Alignof(sf_dresult_t) <= ALIGN && _Alignof(sf_dcons_t) <= ALIGN,
               "arrays are copied at 8-byte alignment");

typedef struct {
  bool slim;         /* a slice's device attributes are left out */
  char *arr, *str;   /* where the next array and string go; NULL while counting */
  size_t narr, nstr; /* bytes they take */
  const char *from[SEEN], *to[SEEN];
} own_t;

static const char *keep(own_t *k, const char *s)
{
  if (s == NULL)
    return s;
  size_t len = strlen(s);
  unsigned h = (unsigned)(len * 31 + (unsigned char)s[0] * 7 +
                          (len ? (unsigned char)s[len - 1] : 0)) %
               SEEN;
  if (k->from[h] && strcmp(k->from[h], s) == 0)
    return k->to[h];
  k->from[h] = s;
  if (k->str == NULL) {
    k->nstr += len + 1;
    return k->to[h] = s;
  }
  k->to[h] = memcpy(k->str, s, len + 1);
  k->str += len + 1;
  return k->to[h];
}

/* `n` elements of `size` bytes at `p`: counted, or copied (the copy returned). An empty array
 * keeps a non-NULL pointer when it had one. */
static void *keep_arr(own_t *k, const void *p, size_t n, size_t size)
{
  size_t bytes = (n * size + ALIGN - 1) / ALIGN * ALIGN;
  void *q = (void *)(uintptr_t)p;
  if (p == NULL)
    return NULL;
  if (k->arr == NULL) {
    k->narr += bytes;
    return q;
  }
  q = memcpy(k->arr, p, n * size);
  k->arr += bytes;
  return q;
}

/* The same for an array of strings, and each string. */
static const char **keep_strs(own_t *k, const char **v, size_t n)
{
  v = keep_arr(k, v, n, sizeof(*v));
  for (size_t i = 0; i < n; i++)
    v[i] = keep(k, v[i]);
  return v;
}

/* The string members of an array's elements: at most two, at these offsets (0 when unused). */
typedef struct {
  size_t size, first, second;
} strings_t;

static const strings_t attr_strings = {sizeof(sf_attr_t), offsetof(sf_attr_t, name),
                                       offsetof(sf_attr_t, s)};
static const strings_t use_strings = {sizeof(sf_counter_use_t), offsetof(sf_counter_use_t, set),
                                      offsetof(sf_counter_use_t, counter)};
static const strings_t taint_strings = {sizeof(sf_taint_t), offsetof(sf_taint_t, key),
                                        offsetof(sf_taint_t, value)};
static const strings_t counter_strings = {sizeof(sf_counter_t), offsetof(sf_counter_t, set),
                                          offsetof(sf_counter_t, counter)};
static const strings_t qty_strings = {sizeof(sf_cap_request_t), offsetof(sf_cap_request_t, name), 0};
static const strings_t tol_strings = {sizeof(sf_toleration_t), offsetof(sf_toleration_t, key),
                                      offsetof(sf_toleration_t, value)};

/* Keeps the `n` elements at `base` and the string members `m` of each; returns the kept array. */
static void *own_array(own_t *k, const void *base, size_t n, const strings_t *m)
{
  char *v = keep_arr(k, base, n, m->size), *p = v;
  for (size_t i = 0; i < n; i++, p += m->size) {
    const char **first = (const char **)(void *)(p + m->first);
    *first = keep(k, *first);
    if (m->second) {
      const char **second = (const char **)(void *)(p + m->second);
      *second = keep(k, *second);
    }
  }
  return v;
}

static void own_device(own_t *k, sf_device_spec_t *dev)
{
  dev->name = keep(k, dev->name);
  if (k->slim)
    dev->nattrs = 0;
  dev->attrs = k->slim ? NULL : own_array(k, dev->attrs, dev->nattrs, &attr_strings);
  sf_capacity_t *caps = keep_arr(k, dev->caps, dev->ncaps, sizeof(*caps));
  for (size_t i = 0; i < dev->ncaps; i++) {
    caps[i].name = keep(k, caps[i].name);
    caps[i].policy.valid = keep_arr(k, caps[i].policy.valid, caps[i].policy.nvalid,
                                    sizeof(*caps[i].policy.valid));
  }
  dev->caps = caps;
  dev->counters = own_array(k, dev->counters, dev->ncounters, &use_strings);
  dev->taints = own_array(k, dev->taints, dev->ntaints, &taint_strings);
}

static void own_meta(own_t *k, sf_meta_t *m)
{
  m->ns = keep(k, m->ns);
  m->name = keep(k, m->name);
  m->uid = keep(k, m->uid);
  m->rv = keep(k, m->rv);
}

static void own_slice(own_t *k, sf_slice_t *s)
{
  own_meta(k, &s->meta);
  s->driver = keep(k, s->driver);
  s->pool = keep(k, s->pool);
  s->node = keep(k, s->node);
  s->devs = keep_arr(k, s->devs, s->ndevs, sizeof(*s->devs));
  for (size_t i = 0; i < s->ndevs; i++)
    own_device(k, &s->devs[i]);
  s->dev_nodesel = keep_arr(k, s->dev_nodesel, s->ndevs, sizeof(*s->dev_nodesel));
  s->dev_node = keep_strs(k, s->dev_node, s->ndevs);
  s->dev_binding = keep_arr(k, s->dev_binding, s->ndevs, sizeof(*s->dev_binding));
  s->counters = own_array(k, s->counters, s->ncounters, &counter_strings);
}

static void own_req(own_t *k, sf_dreq_t *r)
{
  r->name = keep(k, r->name);
  r->class_name = keep(k, r->class_name);
  r->selectors = keep_strs(k, r->selectors, r->nselectors);
  r->mode_text = keep(k, r->mode_text);
  r->caps = own_array(k, r->caps, r->ncaps, &qty_strings);
  r->tols = own_array(k, r->tols, r->ntols, &tol_strings);
  r->alts = keep_arr(k, r->alts, r->nalts, sizeof(*r->alts));
  for (size_t i = 0; i < r->nalts; i++)
    own_req(k, &r->alts[i]);
}

static void own_claim(own_t *k, sf_rclaim_t *c)
{
  own_meta(k, &c->meta);
  c->spec.reqs = keep_arr(k, c->spec.reqs, c->spec.nreqs, sizeof(*c->spec.reqs));
  for (size_t i = 0; i < c->spec.nreqs; i++)
    own_req(k, &c->spec.reqs[i]);
  c->spec.cons = keep_arr(k, c->spec.cons, c->spec.ncons, sizeof(*c->spec.cons));
  for (size_t i = 0; i < c->spec.ncons; i++) {
    sf_dcons_t *o = &c->spec.cons[i];
    o->reqs = keep_strs(k, o->reqs, o->nreqs);
    o->match = keep(k, o->match);
    o->distinct = keep(k, o->distinct);
  }
  c->results = keep_arr(k, c->results, c->nresults, sizeof(*c->results));
  for (size_t i = 0; i < c->nresults; i++) {
    sf_dresult_t *r = &c->results[i];
    r->request = keep(k, r->request);
    r->driver = keep(k, r->driver);
    r->pool = keep(k, r->pool);
    r->device = keep(k, r->device);
    r->share_id = keep(k, r->share_id);
    r->consumed = own_array(k, r->consumed, r->nconsumed, &qty_strings);
  }
  c->alloc_node = keep(k, c->alloc_node);
  c->reserved = keep_arr(k, c->reserved, c->nreserved, sizeof(*c->reserved));
  for (size_t i = 0; i < c->nreserved; i++) {
    sf_dref_t *r = &c->reserved[i];
    r->api_group = keep(k, r->api_group);
    r->resource = keep(k, r->resource);
    r->name = keep(k, r->name);
    r->uid = keep(k, r->uid);
  }
}

static void own(own_t *k, sf_object_t *o)
{
  if (o->kind == SF_OBJ_RESOURCE_SLICE)
    own_slice(k, &o->u.slice);
  else
    own_claim(k, &o->u.claim);
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

/* Copies what `o` points at into one exact block that replaces its arena. */
static void compact(sf_object_t *o, bool slim)
{
  own_t count = {.slim = slim};
  own(&count, o); /* counting leaves every pointer as it was */
  sf_arena_t *a = sf__arena_create();
  own_t copy = {.slim = slim};
  copy.arr = sf__arena_alloc_exact(a, count.narr + count.nstr + 1);
  copy.str = copy.arr + count.narr;
  own(&copy, o);
  sf__arena_destroy(o->arena);
  o->arena = a;
}

void sf__object_compact(sf_object_t *o)
{
  if (o == NULL || (o->kind != SF_OBJ_RESOURCE_SLICE && o->kind != SF_OBJ_RESOURCE_CLAIM))
    return;
  compact(o, false);
  if (o->json) {
    json_t *small = pruned(o->json);
    json_decref(o->json);
    o->json = small;
  }
}

void sf__slice_compact(sf_object_t *o, bool slim)
{
  compact(o, slim);
  o->u.slice.slim = slim;
}
