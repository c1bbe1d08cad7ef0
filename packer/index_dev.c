/*
 * Reading the index's devices: found by (driver, pool, name), and every
 * public accessor of one device's record. An id that is out of range or
 * freed reads as absent (NULL, 0 or -1); a retired device is still read but
 * is not live.
 */
#include <stdint.h>
#include <string.h>
#include "index_priv.h"

size_t sf__index_dev_key(char *buf, size_t len, const char *driver, const char *pool,
                         const char *name)
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
  size_t k = sf__index_dev_key(key, sizeof(key), driver, pool, name);
  return k == 0 ? -1 : sf_map_get(&idx->dev_by_key, key, k);
}

/* ---- device accessors ---- */

const sf__dev_t *sf__index_dev_at(const sf_index_t *idx, sf_dev_id d)
{
  return (d >= 0 && (size_t)d < idx->ndevs && idx->devs[d].used) ? &idx->devs[d] : NULL;
}

sf_dev_id sf_index_dev_end(const sf_index_t *idx)
{
  return (sf_dev_id)idx->ndevs;
}

bool sf_index_dev_live(const sf_index_t *idx, sf_dev_id d)
{
  const sf__dev_t *dv = sf__index_dev_at(idx, d);
  return dv != NULL && !dv->retired;
}

sf_node_id sf_index_dev_node(const sf_index_t *idx, sf_dev_id d)
{
  const sf__dev_t *dv = sf__index_dev_at(idx, d);
  return dv ? dv->node : -1;
}

const char *sf_index_dev_name(const sf_index_t *idx, sf_dev_id d)
{
  const sf__dev_t *dv = sf__index_dev_at(idx, d);
  return dv ? dv->name : NULL;
}

const char *sf_index_dev_driver(const sf_index_t *idx, sf_dev_id d)
{
  const sf__dev_t *dv = sf__index_dev_at(idx, d);
  return dv ? dv->driver : NULL;
}

const char *sf_index_dev_pool(const sf_index_t *idx, sf_dev_id d)
{
  const sf__dev_t *dv = sf__index_dev_at(idx, d);
  return dv ? dv->poolname : NULL;
}

bool sf_index_dev_shared(const sf_index_t *idx, sf_dev_id d)
{
  const sf__dev_t *dv = sf__index_dev_at(idx, d);
  return dv != NULL && dv->shared;
}

const sf_attr_t *sf_index_dev_attr(const sf_index_t *idx, sf_dev_id d, const char *name)
{
  const sf__dev_t *dv = sf__index_dev_at(idx, d);
  if (dv == NULL)
    return NULL;
  for (uint32_t i = 0; i < dv->nattrs; i++)
    if (strcmp(dv->attrs[i].name, name) == 0)
      return &dv->attrs[i];
  return NULL;
}

size_t sf_index_dev_nattrs(const sf_index_t *idx, sf_dev_id d)
{
  const sf__dev_t *dv = sf__index_dev_at(idx, d);
  return dv ? dv->nattrs : 0;
}

const sf_attr_t *sf_index_dev_attr_at(const sf_index_t *idx, sf_dev_id d, size_t i)
{
  const sf__dev_t *dv = sf__index_dev_at(idx, d);
  return (dv && i < dv->nattrs) ? &dv->attrs[i] : NULL;
}

size_t sf_index_dev_ncaps(const sf_index_t *idx, sf_dev_id d)
{
  const sf__dev_t *dv = sf__index_dev_at(idx, d);
  return dv ? dv->ncaps : 0;
}

const char *sf_index_dev_cap(const sf_index_t *idx, sf_dev_id d, size_t i, sf_milli_t *value,
                             sf_milli_t *free_amount)
{
  const sf__dev_t *dv = sf__index_dev_at(idx, d);
  if (dv == NULL || i >= dv->ncaps)
    return NULL;
  if (value)
    *value = dv->caps[i].value;
  if (free_amount)
    *free_amount = dv->caps[i].free;
  return dv->caps[i].name;
}

int sf_index_dev_cap_find(const sf_index_t *idx, sf_dev_id d, const char *name)
{
  const sf__dev_t *dv = sf__index_dev_at(idx, d);
  for (uint32_t i = 0; dv && i < dv->ncaps; i++)
    if (strcmp(dv->caps[i].name, name) == 0)
      return (int)i;
  return -1;
}

uint32_t sf_index_dev_holders(const sf_index_t *idx, sf_dev_id d)
{
  const sf__dev_t *dv = sf__index_dev_at(idx, d);
  return dv ? dv->holders : 0;
}

size_t sf_index_dev_ntaints(const sf_index_t *idx, sf_dev_id d)
{
  const sf__dev_t *dv = sf__index_dev_at(idx, d);
  return dv ? dv->ntaints : 0;
}

const sf_taint_t *sf_index_dev_taint(const sf_index_t *idx, sf_dev_id d, size_t i)
{
  const sf__dev_t *dv = sf__index_dev_at(idx, d);
  return (dv && i < dv->ntaints) ? &dv->taints[i].t : NULL;
}

int32_t sf_index_dev_island(const sf_index_t *idx, sf_dev_id d)
{
  const sf__dev_t *dv = sf__index_dev_at(idx, d);
  return dv ? dv->island : -1;
}

sf_str_id sf_index_dev_model(const sf_index_t *idx, sf_dev_id d)
{
  const sf__dev_t *dv = sf__index_dev_at(idx, d);
  return dv ? dv->model : 0;
}

int32_t sf_index_dev_free_permille(const sf_index_t *idx, sf_dev_id d)
{
  const sf__dev_t *dv = sf__index_dev_at(idx, d);
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
