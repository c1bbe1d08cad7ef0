/*
 * The selector caches: per cacheable selector (its cache_key), its answer
 * for each device id, asked once. A device's answers are forgotten when it
 * changes; at most 256 caches are kept, then all are dropped at once
 * (cache_gen moves).
 */
#include <stdlib.h>
#include <string.h>
#include "index_priv.h"

void sf__index_dev_touched(sf_index_t *idx, sf_dev_id d)
{
  for (size_t i = 0; i < idx->ncaches; i++)
    if ((size_t)d < idx->caches[i].cap)
      idx->caches[i].res[d] = 0;
}

/* The cache of one selector, created on first use and sized for every device id. */
static sf__selcache_t *selcache(sf_index_t *idx, const sf_selector_t *sel)
{
  sf__selcache_t *c = NULL;
  for (size_t i = 0; i < idx->ncaches; i++)
    if (idx->caches[i].key == sel->cache_key)
      return &idx->caches[i];
  if (idx->ncaches >= 256) { /* bounded: drop all and start again */
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
