/*
 * ResourceSlice (resource.k8s.io/v1) into sf_slice_t: the pool, the node
 * selection, devices with qualified attributes and capacities, request
 * policies, counters and taints.
 *
 * Lenient where the API server is strict and the upstream round-trip data
 * sets mutually exclusive fields together: the first node selection in the
 * order nodeName, allNodes, nodeSelector, perDeviceNodeSelection wins; of an
 * attribute's values the first of int, bool, string, version wins (list
 * values, an alpha feature, leave the attribute out); validValues win over
 * validRange.
 */
#include <stdio.h>
#include <string.h>
#include "decode_int.h"

#define DEVICE_FIELDS_MAX SF_DEVICE_FIELDS_MAX

/* "name" in the driver's domain unless it already has one. */
static int qualify(dctx_t *d, const char *driver, const char *name, const char **out)
{
  const char *sl = strchr(name, '/');
  if (!*name)
    return sf__dfail(d, "empty name");
  if (sl && (sl == name || !sl[1] || strchr(sl + 1, '/')))
    return sf__dfail(d, "'%s' is not a qualified name", name);
  if (sl) {
    *out = name;
    return 1;
  }
  size_t len = strlen(name);
  unsigned h = (unsigned)(len * 31 + (unsigned char)name[0] * 7 + (unsigned char)name[len - 1]) & 63;
  if (!d->qname[h] || strcmp(d->qname[h], name)) {
    d->qname[h] = name;
    d->qval[h] = sf__arena_join(d->a, driver, name);
  }
  *out = d->qval[h];
  return 1;
}

/* Rank of an attribute value key: the lower wins when several are set (0: not a value). */
static int value_rank(const char *k)
{
  switch (k[0]) { /* one comparison per key: attributes are most of a slice */
  case 'i': return strcmp(k, "int") ? 0 : 1;
  case 'b': return strcmp(k, "bool") ? 0 : 2;
  case 's': return strcmp(k, "string") ? 0 : 3;
  case 'v': return strcmp(k, "version") ? 0 : 4;
  default: return 0;
  }
}

/*
 * A list-type attribute (DRAListTypeAttributes: ints, bools, strings, versions) as SF_ATTR_LIST:
 * its elements "i:1", "b:1", "s:text", "v:1.2.3" joined by '\x1e'. Returns 1, or 0 (left out,
 * so constraints on it cannot be met) for an empty list or elements of the wrong type.
 */
static int attr_list(dctx_t *d, const char *key, const json_t *arr, sf_attr_t *a)
{
  char tag = key[0] == 'i' ? 'i' : key[0] == 'b' ? 'b' : key[0] == 's' ? 's' : 'v';
  size_t i, len = 1;
  const json_t *e;
  if (!json_is_array(arr) || json_array_size(arr) == 0)
    return 0;
  json_array_foreach(arr, i, e)
  {
    bool ok = tag == 'i' ? json_is_integer(e) : tag == 'b' ? json_is_boolean(e) : json_is_string(e);
    if (!ok)
      return 0;
    len += 24 + (json_is_string(e) ? strlen(json_string_value(e)) : 0);
  }
  char *buf = sf__arena_alloc(d->a, len), *at = buf;
  json_array_foreach(arr, i, e)
  {
    size_t room = len - (size_t)(at - buf);
    int n = tag == 'i'
                ? snprintf(at, room, "%si:%lld", i ? "\x1e" : "", (long long)json_integer_value(e))
            : tag == 'b' ? snprintf(at, room, "%sb:%d", i ? "\x1e" : "", json_is_true(e) ? 1 : 0)
                         : snprintf(at, room, "%s%c:%s", i ? "\x1e" : "", tag, json_string_value(e));
    at += n;
  }
  a->type = SF_ATTR_LIST;
  a->s = buf;
  return 1;
}

/* One attribute value: returns 1 when set (SF_ATTR_UNKNOWN when it has no value slicefit can
 * read), 0 when it has only an empty or unreadable list. */
static int attr_value(dctx_t *d, const json_t *v, sf_attr_t *a)
{
  const char *k, *best = NULL, *list = NULL;
  json_t *e, *bv = NULL, *lv = NULL;
  bool lists = false;
  int rank = 5;
  if (!json_is_object(v))
    return sf__dfail(d, "expected an object, got another type");
  /* One pass over the (usually single) keys instead of a lookup per type; the winner is then
   * read with its type checked. */
  json_object_foreach(unconst(v), k, e)
  {
    int rk = value_rank(k);
    if (!rk && (!strcmp(k, "ints") || !strcmp(k, "bools") || !strcmp(k, "strings") ||
                !strcmp(k, "versions"))) {
      lists = true;
      list = k;
      lv = e;
    } else if (rk && rk < rank && !json_is_null(e)) { /* a key of no known kind is no value */
      rank = rk;
      best = k;
      bv = e;
    }
  }
  if (!best && lists)
    return attr_list(d, list, lv, a);
  if (!best) { /* what the decoder cannot read makes the reader unsure, never a no */
    a->type = SF_ATTR_UNKNOWN;
    return 1;
  }
  static const sf_attr_type_t types[] = {0, SF_ATTR_INT, SF_ATTR_BOOL, SF_ATTR_STRING,
                                         SF_ATTR_VERSION};
  static const char *const wants[] = {"", "an integer", "a boolean", "a string", "a string"};
  bool ok = rank == 1 ? json_is_integer(bv) : rank == 2 ? json_is_boolean(bv) : json_is_string(bv);
  if (!ok) {
    sf__dpush(d, best);
    return sf__dfail(d, "expected %s, got %s", wants[rank], sf__dtype_name(bv));
  }
  a->type = types[rank];
  if (rank == 1)
    a->i = (int64_t)json_integer_value(bv);
  else if (rank == 2)
    a->i = json_is_true(bv);
  else
    a->s = json_string_value(bv);
  return 1;
}

/* One attribute; `driver` qualifies its name. */
static int attribute(dctx_t *d, const void *driver, const char *k, const json_t *e, void *out)
{
  sf_attr_t *a = out;
  int r = qualify(d, driver, k, &a->name);
  return r < 0 ? r : attr_value(d, e, a);
}

static int valid_values(dctx_t *d, const json_t *pol, sf_request_policy_t *p)
{
  const json_t *arr;
  size_t n;
  int r = sf__darr(d, pol, "validValues", &arr, &n);
  if (r <= 0 || n == 0)
    return r;
  size_t at = sf__dpush(d, "validValues");
  sf_milli_t *v = sf__arena_alloc(d->a, n * sizeof(*v));
  for (size_t i = 0; i < n; i++) {
    size_t ati = sf__dpush_i(d, i);
    if ((r = sf__dqty_val(d, json_array_get(arr, i), &v[i])) <= 0)
      return r < 0 ? r : sf__dfail(d, "is null");
    if (v[i] < 0)
      return sf__dfail(d, "is negative");
    if (i > 0 && v[i] <= v[i - 1])
      return sf__dfail(d, "values are not strictly ascending");
    sf__dpop(d, ati);
  }
  sf__dpop(d, at);
  p->valid = v;
  p->nvalid = n;
  return 1;
}

static int valid_range(dctx_t *d, const json_t *rg, void *out)
{
  sf_request_policy_t *p = out;
  int r;
  if ((r = sf__dfields(d, rg,
                       (const dfield_t[]){DQTY("min", &p->min), DQTY("step", &p->step),
                                          DQTY("max", &p->max), DEND})) < 0)
    return r;
  if (p->min < 0 || p->step < 0 || p->max < 0)
    return sf__dfail(d, "bounds must not be negative");
  if (p->max > 0 && p->max < p->min)
    return sf__dfail(d, "max is below min");
  p->has_range = true;
  return 1;
}

static int request_policy(dctx_t *d, const json_t *pol, void *out)
{
  sf_capacity_t *c = out;
  sf_request_policy_t *p = &c->policy;
  int r;
  if ((r = sf__dqty(d, pol, "default", &p->def)) < 0)
    return r;
  p->has_default = r > 0;
  if (p->has_default && p->def < 0) {
    sf__dpush(d, "default");
    return sf__dfail(d, "is negative");
  }
  if ((r = valid_values(d, pol, p)) < 0)
    return r;
  if (p->nvalid == 0 && (r = sf__dsub(d, pol, "validRange", valid_range, p)) < 0)
    return r;
  c->has_policy = true;
  return 1;
}

/* One capacity; `driver` qualifies its name. */
static int capacity(dctx_t *d, const void *driver, const char *k, const json_t *e, void *out)
{
  sf_capacity_t *c = out;
  int r;
  if ((r = qualify(d, driver, k, &c->name)) < 0)
    return r;
  if (!json_is_object(e))
    return sf__dfail(d, "expected an object");
  if ((r = sf__dqty(d, e, "value", &c->value)) < 0)
    return r;
  if (r == 0)
    return sf__dfail(d, "has no value");
  if (c->value < 0)
    return sf__dfail(d, "value is negative");
  if ((r = sf__dsub(d, e, "requestPolicy", request_policy, c)) < 0)
    return r;
  return 1;
}

/* {"name": {"value": q}, ...} of counter set `set`, appended to out[*n]. */
static int counter_map(dctx_t *d, const json_t *m, const char *set, sf_counter_t *out, size_t *n)
{
  const char *k;
  json_t *e;
  size_t at = sf__dpush(d, "counters");
  json_object_foreach(unconst(m), k, e)
  {
    size_t at2 = sf__dpush(d, k);
    int r;
    if (!json_is_object(e))
      return sf__dfail(d, "expected an object");
    if ((r = sf__dqty(d, e, "value", &out[*n].value)) < 0)
      return r;
    if (r == 0)
      return sf__dfail(d, "has no value");
    if (out[*n].value < 0)
      return sf__dfail(d, "value is negative");
    out[*n].set = set;
    out[(*n)++].counter = k;
    sf__dpop(d, at2);
  }
  sf__dpop(d, at);
  return 1;
}

/* sharedCounters (key "sharedCounters", set field "name") or consumesCounters ("counterSet"). */
static int counter_sets(dctx_t *d, const json_t *obj, const char *key, const char *setkey,
                        sf_counter_t **out, size_t *nout)
{
  const json_t *arr;
  size_t n, total = 0;
  int r = sf__darr(d, obj, key, &arr, &n);
  if (r <= 0)
    return r;
  size_t at = sf__dpush(d, key);
  for (size_t i = 0; i < n; i++) {
    const json_t *cs = json_object_get(json_array_get(arr, i), "counters");
    total += json_is_object(cs) ? json_object_size(cs) : 0;
  }
  sf_counter_t *v = sf__arena_alloc(d->a, total * sizeof(*v));
  *nout = 0;
  for (size_t i = 0; i < n; i++) {
    const json_t *e = json_array_get(arr, i), *m;
    const char *set;
    size_t ati = sf__dpush_i(d, i);
    if (!json_is_object(e))
      return sf__dfail(d, "expected an object");
    if ((r = sf__dstr_req(d, e, setkey, &set)) < 0)
      return r;
    if ((r = sf__dobj(d, e, "counters", &m)) < 0)
      return r;
    if (m && (r = counter_map(d, m, set, v, nout)) < 0)
      return r;
    sf__dpop(d, ati);
  }
  sf__dpop(d, at);
  *out = v;
  return 1;
}

/* nodeName | allNodes | nodeSelector (| perDeviceNodeSelection at slice level). */
static int node_selection(dctx_t *d, const json_t *o, bool slice, sf_nodesel_t *sel,
                          const char **node)
{
  bool b = false;
  const json_t *ns;
  int r;
  *sel = SF_NODESEL_NONE;
  if ((r = sf__dstr(d, o, "nodeName", node)) < 0)
    return r;
  if (r && **node)
    return (int)(*sel = SF_NODESEL_NAME);
  *node = NULL;
  if ((r = sf__dbool(d, o, "allNodes", &b)) < 0)
    return r;
  if (b)
    return (int)(*sel = SF_NODESEL_ALL);
  if ((r = sf__dobj(d, o, "nodeSelector", &ns)) < 0)
    return r;
  if (ns)
    return (int)(*sel = SF_NODESEL_SELECTOR);
  if (!slice)
    return 0;
  if ((r = sf__dbool(d, o, "perDeviceNodeSelection", &b)) < 0)
    return r;
  if (b)
    return (int)(*sel = SF_NODESEL_PER_DEVICE);
  return sf__dfail(d,
                   "one of nodeName, allNodes, nodeSelector or perDeviceNodeSelection is required");
}

static int device(dctx_t *d, const json_t *dev, sf_slice_t *s, size_t i)
{
  sf_device_spec_t *o = &s->devs[i];
  int r;
  sf_counter_t *uses = NULL;
  void *attrs = NULL, *caps = NULL, *taints = NULL;
  if (!json_is_object(dev))
    return sf__dfail(d, "expected an object");
  if ((r = sf__dstr_req(d, dev, "name", &o->name)) < 0)
    return r;
  if ((r = sf__dmap(d, dev, "attributes", sizeof(sf_attr_t), attribute, s->driver, &attrs,
                    &o->nattrs)) < 0)
    return r;
  if ((r = sf__dmap(d, dev, "capacity", sizeof(sf_capacity_t), capacity, s->driver, &caps,
                    &o->ncaps)) < 0)
    return r;
  o->attrs = attrs;
  o->caps = caps;
  if (o->nattrs + o->ncaps > DEVICE_FIELDS_MAX)
    return sf__dfail(d, "%zu attributes and capacities, more than %d", o->nattrs + o->ncaps,
                     DEVICE_FIELDS_MAX);
  if ((r = counter_sets(d, dev, "consumesCounters", "counterSet", &uses, &o->ncounters)) < 0)
    return r;
  sf_counter_use_t *cu = sf__arena_alloc(d->a, o->ncounters * sizeof(*cu));
  for (size_t k = 0; k < o->ncounters; k++)
    cu[k] = (sf_counter_use_t){uses[k].set, uses[k].counter, uses[k].value};
  o->counters = cu;
  if ((r = sf__darray(d, dev, "taints", sizeof(sf_taint_t), sf__dtaint, &taints, &o->ntaints)) < 0)
    return r;
  o->taints = taints;
  if ((r = sf__dbool(d, dev, "allowMultipleAllocations", &o->allow_multiple)) < 0)
    return r;
  if (s->nodesel == SF_NODESEL_PER_DEVICE &&
      (r = node_selection(d, dev, false, &s->dev_nodesel[i], &s->dev_node[i])) < 0)
    return r;
  const json_t *conds;
  size_t nconds = 0;
  if ((r = sf__darr(d, dev, "bindingConditions", &conds, &nconds)) < 0)
    return r;
  s->dev_binding[i] = nconds > 0;
  return 1;
}

static int devices(dctx_t *d, const json_t *spec, sf_slice_t *s)
{
  const json_t *arr;
  int r = sf__darr(d, spec, "devices", &arr, &s->ndevs);
  if (r <= 0)
    return r;
  size_t at = sf__dpush(d, "devices");
  s->devs = sf__arena_alloc(d->a, s->ndevs * sizeof(*s->devs));
  s->dev_nodesel = sf__arena_alloc(d->a, s->ndevs * sizeof(*s->dev_nodesel));
  s->dev_node = sf__arena_alloc(d->a, s->ndevs * sizeof(*s->dev_node));
  s->dev_binding = sf__arena_alloc(d->a, s->ndevs * sizeof(*s->dev_binding));
  for (size_t i = 0; i < s->ndevs; i++) {
    size_t ati = sf__dpush_i(d, i);
    if ((r = device(d, json_array_get(arr, i), s, i)) < 0)
      return r;
    sf__dpop(d, ati);
  }
  sf__dpop(d, at);
  return 1;
}

static int pool(dctx_t *d, const json_t *p, void *out)
{
  sf_slice_t *s = out;
  int r = sf__dfields(d, p,
                      (const dfield_t[]){DSTR_REQ("name", &s->pool),
                                         DINT("generation", &s->generation),
                                         DINT("resourceSliceCount", &s->slice_count), DEND});
  if (r < 0)
    return r;
  if (s->generation < 0) {
    sf__dpush(d, "generation");
    return sf__dfail(d, "%lld is negative", (long long)s->generation);
  }
  if (s->slice_count <= 0) {
    sf__dpush(d, "resourceSliceCount");
    return sf__dfail(d, "must be positive, got %lld", (long long)s->slice_count);
  }
  return 1;
}

static int slice_spec(dctx_t *d, const json_t *spec, void *out)
{
  sf_slice_t *s = out;
  int r;
  if ((r = sf__dstr_req(d, spec, "driver", &s->driver)) < 0)
    return r;
  if ((r = sf__dsub_req(d, spec, "pool", pool, s)) < 0)
    return r;
  if ((r = node_selection(d, spec, true, &s->nodesel, &s->node)) < 0)
    return r;
  if ((r = devices(d, spec, s)) < 0)
    return r;
  if ((r = counter_sets(d, spec, "sharedCounters", "name", &s->counters, &s->ncounters)) < 0)
    return r;
  return 1;
}

int sf__decode_slice(dctx_t *d, const json_t *j, sf_slice_t *s)
{
  return sf__dsub_req(d, j, "spec", slice_spec, s);
}
