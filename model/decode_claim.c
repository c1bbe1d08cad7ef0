/*
 * ResourceClaim, ResourceClaimTemplate, DeviceClass and DeviceTaintRule
 * (resource.k8s.io/v1): requests (exactly / firstAvailable), constraints,
 * the allocation in status, class selectors and taint rules.
 *
 * Opaque config is ignored: drivers read it, allocation does not.
 */
#include <string.h>
#include "decode_int.h"

#define COUNT_MAX (1LL << 20)

static int toleration(dctx_t *d, const json_t *t, sf_toleration_t *o, bool *unknown_op)
{
  const char *op = NULL, *eff = NULL;
  int r;
  if (!json_is_object(t))
    return sf__dfail(d, "expected an object");
  o->value = "";
  if ((r = sf__dfields(d, t,
                       (const dfield_t[]){DSTR("key", &o->key), DSTR("operator", &op),
                                          DSTR("value", &o->value), DSTR("effect", &eff), DEND})) < 0)
    return r;
  o->exists = op && !strcmp(op, "Exists");
  /* An operator Kubernetes does not know tolerates nothing. */
  if (op && *op && !o->exists && strcmp(op, "Equal"))
    *unknown_op = true;
  o->any_effect = !eff || !*eff;
  o->effect = sf__deffect(eff);
  return 1;
}

static int tolerations(dctx_t *d, const json_t *req, sf_dreq_t *o)
{
  const json_t *arr;
  size_t n;
  int r = sf__darr(d, req, "tolerations", &arr, &n);
  if (r <= 0)
    return r;
  size_t at = sf__dpush(d, "tolerations");
  o->tols = sf__arena_alloc(d->a, n * sizeof(*o->tols));
  for (size_t i = 0; i < n; i++) {
    bool unknown = false;
    size_t ati = sf__dpush_i(d, i);
    if ((r = toleration(d, json_array_get(arr, i), &o->tols[o->ntols], &unknown)) < 0)
      return r;
    o->tol_unknown_op |= unknown;
    o->ntols += !unknown;
    sf__dpop(d, ati);
  }
  sf__dpop(d, at);
  return 1;
}

static int alloc_mode(dctx_t *d, const json_t *req, sf_dreq_t *o)
{
  int r;
  o->mode_text = "ExactCount";
  if ((r = sf__dstr(d, req, "allocationMode", &o->mode_text)) < 0)
    return r;
  o->mode = !strcmp(o->mode_text, "ExactCount") || !*o->mode_text ? SF_MODE_EXACT
            : !strcmp(o->mode_text, "All")                        ? SF_MODE_ALL
                                                                  : SF_MODE_UNKNOWN;
  o->count = 1;
  if ((r = sf__dint(d, req, "count", &o->count)) < 0)
    return r;
  if (o->mode == SF_MODE_EXACT && (o->count < 1 || o->count > COUNT_MAX)) {
    sf__dpush(d, "count");
    return sf__dfail(d, "%lld is not a device count (1..%lld)", (long long)o->count, COUNT_MAX);
  }
  return 1;
}

/* The fields an "exactly" request and a firstAvailable subrequest share. */
static int request_body(dctx_t *d, const json_t *req, sf_dreq_t *o)
{
  const json_t *cap;
  int r;
  if (!json_is_object(req))
    return sf__dfail(d, "expected an object");
  /* A request without a class is a request type of a later release: kept, the plan refuses it. */
  if ((r = sf__dstr(d, req, "deviceClassName", &o->class_name)) < 0)
    return r;
  if (!o->class_name)
    o->class_name = "";
  if ((r = sf__dselectors(d, req, "selectors", &o->selectors, &o->nselectors)) < 0)
    return r;
  if ((r = alloc_mode(d, req, o)) < 0)
    return r;
  if ((r = sf__dbool(d, req, "adminAccess", &o->admin_access)) < 0)
    return r;
  if ((r = tolerations(d, req, o)) < 0)
    return r;
  if ((r = sf__dobj(d, req, "capacity", &cap)) < 0)
    return r;
  if (cap) {
    size_t at = sf__dpush(d, "capacity");
    if ((r = sf__dqmap(d, cap, "requests", &o->caps, &o->ncaps)) < 0)
      return r;
    for (size_t i = 0; i < o->ncaps; i++)
      if (o->caps[i].value < 0) {
        sf__dpush(d, "requests");
        sf__dpush(d, o->caps[i].name);
        return sf__dfail(d, "is negative");
      }
    sf__dpop(d, at);
  }
  return 1;
}

static int first_available(dctx_t *d, const json_t *arr, sf_dreq_t *o)
{
  size_t at = sf__dpush(d, "firstAvailable");
  o->nalts = json_array_size(arr);
  if (o->nalts == 0)
    return sf__dfail(d, "is empty");
  o->alts = sf__arena_alloc(d->a, o->nalts * sizeof(*o->alts));
  for (size_t i = 0; i < o->nalts; i++) {
    const json_t *e = json_array_get(arr, i);
    int r;
    size_t ati = sf__dpush_i(d, i);
    if ((r = request_body(d, e, &o->alts[i])) < 0)
      return r;
    if ((r = sf__dstr_req(d, e, "name", &o->alts[i].name)) < 0)
      return r;
    sf__dpop(d, ati);
  }
  sf__dpop(d, at);
  return 1;
}

static int request(dctx_t *d, const json_t *req, sf_dreq_t *o)
{
  const json_t *ex, *fa;
  size_t n;
  int r;
  if (!json_is_object(req))
    return sf__dfail(d, "expected an object");
  if ((r = sf__dstr_req(d, req, "name", &o->name)) < 0)
    return r;
  if ((r = sf__dobj(d, req, "exactly", &ex)) < 0)
    return r;
  if ((r = sf__darr(d, req, "firstAvailable", &fa, &n)) < 0)
    return r;
  if (ex) {
    size_t at = sf__dpush(d, "exactly");
    if ((r = request_body(d, ex, o)) < 0)
      return r;
    sf__dpop(d, at);
    return 1;
  }
  if (fa)
    return first_available(d, fa, o);
  return sf__dfail(d, "one of exactly or firstAvailable is required");
}

static int constraint(dctx_t *d, const json_t *c, sf_dcons_t *o)
{
  int r;
  if (!json_is_object(c))
    return sf__dfail(d, "expected an object");
  if ((r = sf__dstrs(d, c, "requests", &o->reqs, &o->nreqs)) < 0)
    return r;
  return sf__dfields(d, c,
                     (const dfield_t[]){DSTR("matchAttribute", &o->match),
                                        DSTR("distinctAttribute", &o->distinct), DEND});
}

static int request_elem(dctx_t *d, const json_t *e, void *o)
{
  return request(d, e, o);
}
static int constraint_elem(dctx_t *d, const json_t *e, void *o)
{
  return constraint(d, e, o);
}

static int claim_devices(dctx_t *d, const json_t *dev, void *out)
{
  sf_claim_spec_t *o = out;
  int r;
  if ((r = sf__darray(d, dev, "requests", sizeof(sf_dreq_t), request_elem, (void **)&o->reqs,
                      &o->nreqs)) < 0)
    return r;
  return sf__darray(d, dev, "constraints", sizeof(sf_dcons_t), constraint_elem, (void **)&o->cons,
                    &o->ncons);
}

/* A ResourceClaimSpec: {"devices": {"requests": [...], "constraints": [...]}}. */
static int claim_spec(dctx_t *d, const json_t *spec, void *out)
{
  return sf__dsub(d, spec, "devices", claim_devices, out);
}

static int result(dctx_t *d, const json_t *e, void *out)
{
  sf_dresult_t *o = out;
  int r;
  if (!json_is_object(e))
    return sf__dfail(d, "expected an object");
  if ((r = sf__dfields(d, e,
                       (const dfield_t[]){DSTR_REQ("request", &o->request),
                                          DSTR_REQ("driver", &o->driver), DSTR_REQ("pool", &o->pool),
                                          DSTR_REQ("device", &o->device),
                                          DSTR("shareID", &o->share_id),
                                          DBOOL("adminAccess", &o->admin_access), DEND})) < 0)
    return r;
  return sf__dqmap(d, e, "consumedCapacity", &o->consumed, &o->nconsumed);
}

static int reserved(dctx_t *d, const json_t *e, void *out)
{
  sf_dref_t *o = out;
  if (!json_is_object(e))
    return sf__dfail(d, "expected an object");
  o->api_group = o->resource = o->uid = "";
  return sf__dfields(d, e,
                     (const dfield_t[]){DSTR("apiGroup", &o->api_group),
                                        DSTR("resource", &o->resource), DSTR_REQ("name", &o->name),
                                        DSTR("uid", &o->uid), DEND});
}

/* The node of a node-local allocation: matchFields metadata.name In [node]. */
static const char *selector_node(const json_t *ns)
{
  const json_t *terms = json_object_get(ns, "nodeSelectorTerms"), *t, *f;
  size_t i, k;
  json_array_foreach(terms, i, t)
  {
    json_array_foreach(json_object_get(t, "matchFields"), k, f)
    {
      const json_t *vals = json_object_get(f, "values");
      if (json_is_string(json_object_get(f, "key")) &&
          !strcmp(json_string_value(json_object_get(f, "key")), "metadata.name") &&
          json_is_array(vals) && json_array_size(vals) == 1 &&
          json_is_string(json_array_get(vals, 0)))
        return json_string_value(json_array_get(vals, 0));
    }
  }
  return NULL;
}

static int alloc_results(dctx_t *d, const json_t *dev, void *out)
{
  sf_rclaim_t *c = out;
  return sf__darray(d, dev, "results", sizeof(sf_dresult_t), result, (void **)&c->results,
                    &c->nresults);
}

static int allocation(dctx_t *d, const json_t *al, void *out)
{
  sf_rclaim_t *c = out;
  const json_t *ns;
  int r;
  c->allocated = true;
  if ((r = sf__dsub(d, al, "devices", alloc_results, c)) < 0)
    return r;
  if ((r = sf__dobj(d, al, "nodeSelector", &ns)) < 0)
    return r;
  if (ns)
    c->alloc_node = selector_node(ns);
  return 1;
}

static int claim_status(dctx_t *d, const json_t *st, void *out)
{
  sf_rclaim_t *c = out;
  int r;
  if ((r = sf__dsub(d, st, "allocation", allocation, c)) < 0)
    return r;
  return sf__darray(d, st, "reservedFor", sizeof(sf_dref_t), reserved, (void **)&c->reserved,
                    &c->nreserved);
}

int sf__decode_claim(dctx_t *d, const json_t *j, sf_rclaim_t *c)
{
  int r;
  if ((r = sf__dsub(d, j, "spec", claim_spec, &c->spec)) < 0)
    return r;
  return sf__dsub(d, j, "status", claim_status, c);
}

/* A template's spec: {"spec": ResourceClaimSpec}. */
static int template_spec(dctx_t *d, const json_t *spec, void *out)
{
  return sf__dsub(d, spec, "spec", claim_spec, out);
}

int sf__decode_template(dctx_t *d, const json_t *j, sf_claim_template_t *t)
{
  return sf__dsub(d, j, "spec", template_spec, &t->spec);
}

static int class_spec(dctx_t *d, const json_t *spec, void *out)
{
  sf_device_class_t *c = out;
  int r;
  if ((r = sf__dselectors(d, spec, "selectors", &c->selectors, &c->nselectors)) < 0)
    return r;
  if ((r = sf__dstr(d, spec, "extendedResourceName", &c->ext_resource)) < 0)
    return r;
  if (c->ext_resource && !*c->ext_resource)
    c->ext_resource = NULL;
  return 1;
}

int sf__decode_class(dctx_t *d, const json_t *j, sf_device_class_t *c)
{
  int r;
  size_t at = sf__dpush(d, "metadata");
  if ((r = sf__dstr(d, json_object_get(j, "metadata"), "creationTimestamp", &c->created)) < 0)
    return r;
  sf__dpop(d, at);
  if (!c->created)
    c->created = "";
  return sf__dsub(d, j, "spec", class_spec, c);
}

static int device_selector(dctx_t *d, const json_t *sel, void *out)
{
  sf_taint_rule_t *t = out;
  /* A rule that selects by class or CEL is not evaluated: it taints nothing (cluster_alloc.c). */
  t->by_class = json_object_get(sel, "deviceClassName") || json_object_get(sel, "selectors");
  return sf__dfields(d, sel,
                     (const dfield_t[]){DSTR("driver", &t->driver), DSTR("pool", &t->pool),
                                        DSTR("device", &t->device), DEND});
}

static int rule_spec(dctx_t *d, const json_t *spec, void *out)
{
  sf_taint_rule_t *t = out;
  int r = sf__dsub(d, spec, "deviceSelector", device_selector, t);
  return r < 0 ? r : sf__dsub_req(d, spec, "taint", sf__dtaint, &t->taint);
}

int sf__decode_rule(dctx_t *d, const json_t *j, sf_taint_rule_t *t)
{
  return sf__dsub_req(d, j, "spec", rule_spec, t);
}

/* ---- comparing specs ---- */

/* Every field of these structs is compared: one added without its comparison fails here
 * (on LP64 targets), rather than making two different specs look equal. */
_Static_assert(sizeof(void *) != 8 || sizeof(sf_dreq_t) == 112, "spec_equal: compare every field");
_Static_assert(sizeof(void *) != 8 || sizeof(sf_dcons_t) == 32, "spec_equal: compare every field");
_Static_assert(sizeof(void *) != 8 || sizeof(sf_toleration_t) == 24,
               "spec_equal: compare every field");

static bool str_eq(const char *a, const char *b)
{
  return a == b || (a && b && !strcmp(a, b));
}

static bool strs_eq(const char *const *a, size_t na, const char *const *b, size_t nb)
{
  if (na != nb)
    return false;
  for (size_t i = 0; i < na; i++)
    if (!str_eq(a[i], b[i]))
      return false;
  return true;
}

static bool caps_eq(const sf_cap_request_t *a, const sf_cap_request_t *b, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (a[i].value != b[i].value || !str_eq(a[i].name, b[i].name))
      return false;
  return true;
}

static bool tols_eq(const sf_toleration_t *a, const sf_toleration_t *b, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (!str_eq(a[i].key, b[i].key) || !str_eq(a[i].value, b[i].value) ||
        a[i].exists != b[i].exists || a[i].any_effect != b[i].any_effect ||
        a[i].effect != b[i].effect)
      return false;
  return true;
}

static bool req_eq(const sf_dreq_t *a, const sf_dreq_t *b)
{
  if (!str_eq(a->name, b->name) || !str_eq(a->class_name, b->class_name) || a->mode != b->mode ||
      !str_eq(a->mode_text, b->mode_text) || a->count != b->count || a->ncaps != b->ncaps ||
      a->ntols != b->ntols || a->tol_unknown_op != b->tol_unknown_op ||
      a->admin_access != b->admin_access || a->nalts != b->nalts ||
      !strs_eq(a->selectors, a->nselectors, b->selectors, b->nselectors) ||
      !caps_eq(a->caps, b->caps, a->ncaps) || !tols_eq(a->tols, b->tols, a->ntols))
    return false;
  for (size_t i = 0; i < a->nalts; i++)
    if (!req_eq(&a->alts[i], &b->alts[i]))
      return false;
  return true;
}

bool sf__claim_spec_equal(const sf_claim_spec_t *a, const sf_claim_spec_t *b)
{
  if (a->nreqs != b->nreqs || a->ncons != b->ncons)
    return false;
  for (size_t i = 0; i < a->nreqs; i++)
    if (!req_eq(&a->reqs[i], &b->reqs[i]))
      return false;
  for (size_t i = 0; i < a->ncons; i++)
    if (!strs_eq(a->cons[i].reqs, a->cons[i].nreqs, b->cons[i].reqs, b->cons[i].nreqs) ||
        !str_eq(a->cons[i].match, b->cons[i].match) ||
        !str_eq(a->cons[i].distinct, b->cons[i].distinct))
      return false;
  return true;
}
