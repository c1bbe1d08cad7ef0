/*
 * core/v1 Pod and Node: the few fields slicefit needs. A pod's claims
 * (spec.resourceClaims and their generated names in status), its
 * containers' claim references and extended-resource requests; a node's
 * name, labels and allocatable amounts.
 */
#include <string.h>
#include "decode_int.h"

static size_t arr_len(const json_t *obj, const char *key) {
  return json_array_size(json_object_get(obj, key));
}

static int pod_claim(dctx_t *d, const json_t *e, void *out) {
  sf_pod_claim_t *o = out;
  int r;
  if ((r = sf__dstr_req(d, e, "name", &o->name)) < 0) return r;
  if ((r = sf__dstr(d, e, "resourceClaimName", &o->claim_name)) < 0) return r;
  if ((r = sf__dstr(d, e, "resourceClaimTemplateName", &o->template_name)) < 0) return r;
  if (o->claim_name && !*o->claim_name) o->claim_name = NULL;
  if (o->template_name && !*o->template_name) o->template_name = NULL;
  if (!o->claim_name && !o->template_name)
    return sf__dfail(d, "one of resourceClaimName or resourceClaimTemplateName is required");
  return 1;
}

static int ctr_claim(dctx_t *d, const json_t *e, void *out) {
  sf_ctr_claim_t *o = out;
  int r;
  if ((r = sf__dstr_req(d, e, "name", &o->name)) < 0) return r;
  if ((r = sf__dstr(d, e, "request", &o->request)) < 0) return r;
  return 1;
}

/* Extended resources: names with a '/'; a request wins over its limit. */
static int ext_resources(dctx_t *d, const json_t *res, sf_container_t *c) {
  sf_cap_request_t *req = NULL, *lim = NULL;
  size_t nreq = 0, nlim = 0;
  int r;
  if ((r = sf__dqmap(d, res, "requests", &req, &nreq)) < 0) return r;
  if ((r = sf__dqmap(d, res, "limits", &lim, &nlim)) < 0) return r;
  c->ext = sf__arena_alloc(d->a, (nreq + nlim) * sizeof(*c->ext));
  for (size_t i = 0; i < nreq; i++)
    if (strchr(req[i].name, '/')) c->ext[c->next++] = req[i];
  for (size_t i = 0; i < nlim; i++) {
    bool dup = false;
    for (size_t k = 0; k < nreq; k++) dup |= !strcmp(req[k].name, lim[i].name);
    if (!dup && strchr(lim[i].name, '/')) c->ext[c->next++] = lim[i];
  }
  return 1;
}

static int container(dctx_t *d, const json_t *e, sf_container_t *o) {
  const json_t *res;
  int r;
  if ((r = sf__dstr_req(d, e, "name", &o->name)) < 0) return r;
  if ((r = sf__dobj(d, e, "resources", &res)) < 0 || !res) return r;
  size_t at = sf__dpush(d, "resources");
  o->claims = sf__arena_alloc(d->a, arr_len(res, "claims") * sizeof(*o->claims));
  if ((r = sf__deach(d, res, "claims", sizeof(*o->claims), ctr_claim, (char *)o->claims,
                &o->nclaims)) < 0)
    return r;
  if ((r = ext_resources(d, res, o)) < 0) return r;
  sf__dpop(d, at);
  return 1;
}

static int init_ctr(dctx_t *d, const json_t *e, void *out) {
  ((sf_container_t *)out)->init = true;
  return container(d, e, out);
}
static int main_ctr(dctx_t *d, const json_t *e, void *out) { return container(d, e, out); }

static int claim_status(dctx_t *d, const json_t *e, void *out) {
  sf_claim_status_t *o = out;
  int r;
  if ((r = sf__dstr_req(d, e, "name", &o->name)) < 0) return r;
  if ((r = sf__dstr(d, e, "resourceClaimName", &o->claim_name)) < 0) return r;
  return 1;
}

static int ext_mapping(dctx_t *d, const json_t *e, void *out) {
  sf_ext_mapping_t *o = out;
  int r;
  if ((r = sf__dstr_req(d, e, "containerName", &o->container)) < 0) return r;
  if ((r = sf__dstr_req(d, e, "resourceName", &o->resource)) < 0) return r;
  if ((r = sf__dstr_req(d, e, "requestName", &o->request)) < 0) return r;
  return 1;
}

static int pod_spec(dctx_t *d, const json_t *spec, sf_pod_t *p) {
  int r;
  if ((r = sf__dstr(d, spec, "nodeName", &p->node_name)) < 0) return r;
  if (p->node_name && !*p->node_name) p->node_name = NULL;
  p->claims = sf__arena_alloc(d->a, arr_len(spec, "resourceClaims") * sizeof(*p->claims));
  if ((r = sf__deach(d, spec, "resourceClaims", sizeof(*p->claims), pod_claim, (char *)p->claims,
                &p->nclaims)) < 0)
    return r;
  size_t nc = arr_len(spec, "initContainers") + arr_len(spec, "containers");
  p->ctrs = sf__arena_alloc(d->a, nc * sizeof(*p->ctrs));
  if ((r = sf__deach(d, spec, "initContainers", sizeof(*p->ctrs), init_ctr, (char *)p->ctrs,
                &p->nctrs)) < 0)
    return r;
  return sf__deach(d, spec, "containers", sizeof(*p->ctrs), main_ctr, (char *)p->ctrs, &p->nctrs);
}

static int pod_status(dctx_t *d, const json_t *st, sf_pod_t *p) {
  const json_t *ext;
  int r;
  p->statuses = sf__arena_alloc(d->a, arr_len(st, "resourceClaimStatuses") * sizeof(*p->statuses));
  if ((r = sf__deach(d, st, "resourceClaimStatuses", sizeof(*p->statuses), claim_status,
                (char *)p->statuses, &p->nstatuses)) < 0)
    return r;
  if ((r = sf__dobj(d, st, "extendedResourceClaimStatus", &ext)) < 0 || !ext) return r;
  size_t at = sf__dpush(d, "extendedResourceClaimStatus");
  if ((r = sf__dstr(d, ext, "resourceClaimName", &p->ext_claim)) < 0) return r;
  p->ext_maps = sf__arena_alloc(d->a, arr_len(ext, "requestMappings") * sizeof(*p->ext_maps));
  if ((r = sf__deach(d, ext, "requestMappings", sizeof(*p->ext_maps), ext_mapping, (char *)p->ext_maps,
                &p->next_maps)) < 0)
    return r;
  sf__dpop(d, at);
  return 1;
}

int sf__decode_pod(dctx_t *d, const json_t *j, sf_pod_t *p) {
  const json_t *spec, *st;
  int r;
  if ((r = sf__dobj(d, j, "spec", &spec)) < 0) return r;
  if (spec) {
    size_t at = sf__dpush(d, "spec");
    if ((r = pod_spec(d, spec, p)) < 0) return r;
    sf__dpop(d, at);
  }
  if ((r = sf__dobj(d, j, "status", &st)) < 0 || !st) return r;
  size_t at = sf__dpush(d, "status");
  if ((r = pod_status(d, st, p)) < 0) return r;
  sf__dpop(d, at);
  return 1;
}

static int labels(dctx_t *d, const json_t *md, sf_node_t *n) {
  const json_t *m;
  int r = sf__dobj(d, md, "labels", &m);
  if (r <= 0) return r;
  size_t at = sf__dpush(d, "labels");
  n->labels = sf__arena_alloc(d->a, json_object_size(m) * sizeof(*n->labels));
  const char *k;
  json_t *v;
  json_object_foreach(unconst(m), k, v) {
    if (!json_is_string(v)) {
      sf__dpush(d, k);
      return sf__dfail(d, "expected a string");
    }
    n->labels[n->nlabels++] = (sf_label_t){k, json_string_value(v)};
  }
  sf__dpop(d, at);
  return 1;
}

int sf__decode_node(dctx_t *d, const json_t *j, sf_node_t *n) {
  const json_t *md = json_object_get(j, "metadata"), *st;
  int r;
  size_t at = sf__dpush(d, "metadata");
  if ((r = labels(d, md, n)) < 0) return r;
  sf__dpop(d, at);
  if ((r = sf__dobj(d, j, "status", &st)) < 0 || !st) return r;
  at = sf__dpush(d, "status");
  if ((r = sf__dqmap(d, st, "allocatable", &n->alloc, &n->nalloc)) < 0) return r;
  for (size_t i = 0; i < n->nalloc; i++) {
    if (!strcmp(n->alloc[i].name, "cpu")) n->cpu_milli = n->alloc[i].value;
    if (!strcmp(n->alloc[i].name, "memory")) n->mem_bytes = n->alloc[i].value / 1000;
  }
  sf__dpop(d, at);
  return 1;
}
