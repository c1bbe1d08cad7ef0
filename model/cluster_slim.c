/*
 * Stored slices without the attributes the index already holds.
 *
 * A pool is republished from its stored slices (cluster_pool.c), so the
 * cluster keeps every slice; but once published, a device's attributes (a
 * slice of 8 GPUs: 80 of them, most of the slice's memory) are also in the
 * index, copied as they were given. A slice is "slim" when each of its
 * devices is published in the index, live, under (driver, pool, name) with
 * exactly the slice's attributes, and the slice has let its own copies go.
 *
 * Invariant: a slim slice's devices in the index hold its attributes. Only a
 * republish of the slice's pool can change or remove them (no other code
 * sets or removes pools or nodes in the index), and every republish first
 * gives the pool's slim slices their attributes back (sf__slice_restore),
 * as does a slice before it leaves its pool; after the republish the slices
 * whose devices the index holds as they are go slim again (sf__slice_slim).
 * A slice whose devices are not all published (an incomplete or invalid
 * pool, a device the allocator cannot select) keeps its attributes.
 */
#include <assert.h>
#include <string.h>
#include "decode_int.h"
#include "cluster_int.h"

static bool attr_same(const sf_attr_t *a, const sf_attr_t *b)
{
  return !strcmp(a->name, b->name) && a->type == b->type && a->i == b->i &&
         (a->s == b->s || (a->s && b->s && !strcmp(a->s, b->s)));
}

/* The live index device holding slice device `dev` of (driver, pool), or -1. */
static sf_dev_id published(const sf_index_t *idx, const sf_slice_t *s, const sf_device_spec_t *dev)
{
  sf_dev_id id = sf_index_dev_find(idx, s->driver, s->pool, dev->name);
  return id >= 0 && sf_index_dev_live(idx, id) ? id : -1;
}

/* Does the index hold the device's attributes as the slice has them? */
static bool held(const sf_index_t *idx, const sf_slice_t *s, const sf_device_spec_t *dev)
{
  sf_dev_id id = published(idx, s, dev);
  if (id < 0 || sf_index_dev_nattrs(idx, id) != dev->nattrs)
    return false;
  for (size_t i = 0; i < dev->nattrs; i++)
    if (!attr_same(sf_index_dev_attr_at(idx, id, i), &dev->attrs[i]))
      return false;
  return true;
}

bool sf__slice_restore(sf_cluster_t *c, sf_object_t *o)
{
  sf_slice_t *s = &o->u.slice;
  if (!s->slim)
    return false;
  for (size_t k = 0; k < s->ndevs; k++) {
    sf_device_spec_t *dev = &s->devs[k];
    sf_dev_id id = published(c->idx, s, dev);
    assert(id >= 0); /* the invariant above */
    size_t n = id >= 0 ? sf_index_dev_nattrs(c->idx, id) : 0;
    sf_attr_t *attrs = sf__arena_alloc(o->arena, n * sizeof(*attrs));
    /* The strings are the index's interned ones, valid for its life: sf__slice_slim or
     * sf__slice_compact copies them before the slice keeps them longer than a republish. */
    for (size_t i = 0; i < n; i++)
      attrs[i] = *sf_index_dev_attr_at(c->idx, id, i);
    dev->attrs = attrs;
    dev->nattrs = n;
  }
  s->slim = false;
  return true;
}

void sf__slice_slim(sf_cluster_t *c, sf_object_t *o, bool restored)
{
  sf_slice_t *s = &o->u.slice;
  bool all = s->ndevs > 0 && !s->slim;
  for (size_t k = 0; all && k < s->ndevs; k++)
    all = held(c->idx, s, &s->devs[k]);
  if (all || restored)
    sf__slice_compact(o, all);
}
