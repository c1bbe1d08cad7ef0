/*
 * The device as CEL sees it (cel.c): `device` with its fields, and
 * device.attributes and device.capacity as maps from a domain to a map of
 * that domain's names, read from the index's device record on every
 * sf__cel_lookup. A qualified name "domain/id" is in domain "domain"; an
 * unqualified one is in none.
 */
#include <string.h>
#include "cel_int.h"

/* Domain (ATTRS/CAPS) of a qualified name "domain/id", as its length; -1 when unqualified. */
static int domain_len(const char *name)
{
  const char *slash = strrchr(name, '/');
  return slash ? (int)(slash - name) : -1;
}

bool sf__cel_in_domain(const char *name, const char *dom, uint32_t dn)
{
  return domain_len(name) == (int)dn && memcmp(name, dom, dn) == 0;
}

const char *sf__cel_field_name(const cel_ctx_t *c, bool attrs, size_t i)
{
  if (attrs) {
    const sf_attr_t *a = sf_index_dev_attr_at(c->idx, c->dev, i);
    return a ? a->name : NULL;
  }
  return i < sf_index_dev_ncaps(c->idx, c->dev) ? sf_index_dev_cap(c->idx, c->dev, i, NULL, NULL)
                                                : NULL;
}

size_t sf__cel_nfields(const cel_ctx_t *c, bool attrs)
{
  return attrs ? sf_index_dev_nattrs(c->idx, c->dev) : sf_index_dev_ncaps(c->idx, c->dev);
}

/* Whether any attribute (capacity) lives in the domain `key`. */
bool sf__cel_has_domain(const cel_ctx_t *c, bool attrs, const char *key, size_t kn)
{
  size_t nf = sf__cel_nfields(c, attrs);
  for (size_t i = 0; i < nf; i++)
    if (sf__cel_in_domain(sf__cel_field_name(c, attrs, i), key, (uint32_t)kn))
      return true;
  return false;
}

/* Number of distinct domains among the attributes (capacities). */
static int64_t ndomains(const cel_ctx_t *c, bool attrs)
{
  size_t nf = sf__cel_nfields(c, attrs);
  int64_t count = 0;
  for (size_t i = 0; i < nf; i++) {
    const char *ni = sf__cel_field_name(c, attrs, i);
    int di = domain_len(ni);
    size_t j = 0;
    while (j < i &&
           !(di >= 0 && sf__cel_in_domain(sf__cel_field_name(c, attrs, j), ni, (uint32_t)di)))
      j++;
    count += j == i && di >= 0;
  }
  return count;
}

int64_t sf__cel_ndomain_fields(const cel_ctx_t *c, bool attrs, const cel_val_t *dom)
{
  size_t nf = sf__cel_nfields(c, attrs);
  int64_t count = 0;
  for (size_t i = 0; i < nf; i++)
    count += sf__cel_in_domain(sf__cel_field_name(c, attrs, i), dom->v.s, dom->n);
  return count;
}

bool sf__cel_map_size(const cel_ctx_t *c, const cel_val_t *m, int64_t *out)
{
  if (m->t == V_ATTRS || m->t == V_CAPS)
    *out = ndomains(c, m->t == V_ATTRS);
  else if (m->t == V_ADOM || m->t == V_CDOM)
    *out = sf__cel_ndomain_fields(c, m->t == V_ADOM, m);
  else if (m->t == V_QUERY)
    *out = sf__cel_query_size(m);
  else if (m->t == V_MAP)
    *out = m->n;
  else
    return false;
  return true;
}

static int device_field(const char *key, size_t kn, cel_val_t *out, const cel_ctx_t *c)
{
  static const char *const names[] = {"driver", "attributes", "capacity", "allowMultipleAllocations"};
  size_t k = 0;
  while (k < 4 && !(strlen(names[k]) == kn && memcmp(names[k], key, kn) == 0))
    k++;
  memset(out, 0, sizeof *out);
  if (k == 0) {
    out->t = V_STR;
    out->v.s = sf_index_dev_driver(c->idx, c->dev);
    out->n = (uint32_t)strlen(out->v.s);
  } else if (k < 3) {
    out->t = k == 1 ? V_ATTRS : V_CAPS;
  } else if (k == 3) {
    *out = sf__cel_bool(sf_index_dev_shared(c->idx, c->dev));
  }
  return k < 4;
}

/*
 * Looks `key` up in a map-like value: 1 found (*out), 0 missing, -1 when
 * the value has no fields (*out an error).
 */
int sf__cel_lookup(cel_ctx_t *c, uint32_t n, const cel_val_t *m, const char *key, size_t kn,
                   cel_val_t *out)
{
  switch (m->t) {
  case V_DEVICE: return device_field(key, kn, out, c);
  case V_ATTRS:
  case V_CAPS:
    /* An unknown domain is an empty map, as DRA specifies. */
    memset(out, 0, sizeof *out);
    out->t = m->t == V_ATTRS ? V_ADOM : V_CDOM;
    out->v.s = key;
    out->n = (uint32_t)kn;
    return 1;
  case V_ADOM:
  case V_CDOM: return sf__cel_dev_field(c, n, m->t == V_ADOM, m, key, kn, out);
  default:
    if (m->t == V_QUERY)
      return sf__cel_query_lookup(c, n, m, key, kn, out);
    if (m->t == V_MAP)
      return sf__cel_map_get_field(m, n, key, kn, out);
    *out = sf__cel_err(n, "no such overload: field selection");
    return -1;
  }
}

void sf__cel_field_value(cel_ctx_t *c, uint32_t n, bool attrs, size_t i, cel_val_t *out)
{
  memset(out, 0, sizeof *out);
  if (!attrs) {
    out->t = V_QTY;
    sf_index_dev_cap(c->idx, c->dev, i, &out->v.q, NULL);
    return;
  }
  const sf_attr_t *a = sf_index_dev_attr_at(c->idx, c->dev, i);
  if (a->type == SF_ATTR_INT || a->type == SF_ATTR_BOOL) {
    *out = a->type == SF_ATTR_INT ? sf__cel_int(a->i) : sf__cel_bool(a->i != 0);
  } else if (a->type == SF_ATTR_LIST) {
    *out = sf__cel_unk(n, "list-type attributes are not supported in expressions");
  } else if (a->type == SF_ATTR_UNKNOWN) {
    *out = sf__cel_unk(n, "the device's attribute has no value slicefit can read");
  } else {
    out->t = a->type == SF_ATTR_STRING ? V_STR : V_SEMVER;
    out->v.s = a->s;
    out->n = (uint32_t)strlen(a->s);
    if (out->t == V_SEMVER && sf__cel_semver(out->v.s, out->n, NULL) != 0)
      *out = sf__cel_unk(n, "the device's version attribute is not a semantic version");
  }
}

int sf__cel_dev_field(cel_ctx_t *c, uint32_t n, bool attrs, const cel_val_t *dom, const char *key,
                      size_t kn, cel_val_t *out)
{
  size_t nf = sf__cel_nfields(c, attrs);
  memset(out, 0, sizeof *out);
  for (size_t i = 0; i < nf; i++) {
    const char *name = sf__cel_field_name(c, attrs, i);
    if (!sf__cel_in_domain(name, dom->v.s, dom->n) || strlen(name + dom->n + 1) != kn ||
        memcmp(name + dom->n + 1, key, kn) != 0)
      continue;
    sf__cel_field_value(c, n, attrs, i, out);
    return 1;
  }
  return 0;
}
