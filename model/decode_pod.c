/*
 * core/v1 Pod and Node: the few fields slicefit needs. A pod's claims
 * (spec.resourceClaims and their generated names in status), its
 * containers' claim references and extended-resource requests, its CPU and
 * memory requests as kube-scheduler sums them, whether it has ended,
 * whether a controller owns it and when it was created; a
 * node's name, labels and allocatable amounts.
 */
#include <string.h>
#include "decode_int.h"

static size_t arr_len(const json_t *obj, const char *key)
{
  return json_array_size(json_object_get(obj, key));
}

static int pod_claim(dctx_t *d, const json_t *e, void *out)
{
  sf_pod_claim_t *o = out;
  int r;
  if ((r = sf__dfields(d, e,
                       (const dfield_t[]){DSTR_REQ("name", &o->name),
                                          DSTR("resourceClaimName", &o->claim_name),
                                          DSTR("resourceClaimTemplateName", &o->template_name),
                                          DEND})) < 0)
    return r;
  if (o->claim_name && !*o->claim_name)
    o->claim_name = NULL;
  if (o->template_name && !*o->template_name)
    o->template_name = NULL;
  if (!o->claim_name && !o->template_name)
    return sf__dfail(d, "one of resourceClaimName or resourceClaimTemplateName is required");
  return 1;
}

static int ctr_claim(dctx_t *d, const json_t *e, void *out)
{
  sf_ctr_claim_t *o = out;
  return sf__dfields(d, e,
                     (const dfield_t[]){DSTR_REQ("name", &o->name), DSTR("request", &o->request),
                                        DEND});
}

/* Extended resources: names with a '/'; a request wins over its limit. */
static int ext_resources(dctx_t *d, const json_t *res, const sf_cap_request_t *req, size_t nreq,
                         sf_container_t *c)
{
  sf_cap_request_t *lim = NULL;
  size_t nlim = 0;
  int r;
  if ((r = sf__dqmap(d, res, "limits", &lim, &nlim)) < 0)
    return r;
  c->ext = sf__arena_alloc(d->a, (nreq + nlim) * sizeof(*c->ext));
  for (size_t i = 0; i < nreq; i++)
    if (strchr(req[i].name, '/'))
      c->ext[c->next++] = req[i];
  for (size_t i = 0; i < nlim; i++) {
    bool dup = false;
    for (size_t k = 0; k < nreq; k++)
      dup |= !strcmp(req[k].name, lim[i].name);
    if (!dup && strchr(lim[i].name, '/'))
      c->ext[c->next++] = lim[i];
  }
  return 1;
}

/*
 * CPU (milli-cores) and memory (bytes, rounded up as Quantity.Value does) of
 * a requests map. The API server rejects negative requests; a decoder that
 * met one anyway says so rather than let it free CPU on a node.
 */
static int cpu_mem(dctx_t *d, const char *key, const sf_cap_request_t *q, size_t n, int64_t *cpu,
                   int64_t *mem)
{
  for (size_t i = 0; i < n; i++) {
    bool is_cpu = !strcmp(q[i].name, "cpu"), is_mem = !strcmp(q[i].name, "memory");
    if (!is_cpu && !is_mem)
      continue;
    if (q[i].value < 0) {
      size_t at = sf__dpush(d, key);
      sf__dpush(d, q[i].name);
      int r = sf__dfail(d, "must not be negative");
      sf__dpop(d, at);
      return r;
    }
    if (is_cpu)
      *cpu = q[i].value;
    else
      *mem = q[i].value / 1000 + (q[i].value % 1000 != 0);
  }
  return 1;
}

static int container(dctx_t *d, const json_t *e, sf_container_t *o)
{
  const json_t *res;
  const char *restart = NULL;
  sf_cap_request_t *req = NULL;
  size_t nreq = 0;
  int r;
  if ((r = sf__dstr_req(d, e, "name", &o->name)) < 0)
    return r;
  if (o->init && (r = sf__dstr(d, e, "restartPolicy", &restart)) < 0)
    return r;
  o->sidecar = restart && !strcmp(restart, "Always");
  if ((r = sf__dobj(d, e, "resources", &res)) < 0 || !res)
    return r;
  size_t at = sf__dpush(d, "resources");
  o->claims = sf__arena_alloc(d->a, arr_len(res, "claims") * sizeof(*o->claims));
  if ((r = sf__deach(d, res, "claims", sizeof(*o->claims), ctr_claim, (char *)o->claims,
                     &o->nclaims)) < 0)
    return r;
  if ((r = sf__dqmap(d, res, "requests", &req, &nreq)) < 0)
    return r;
  if ((r = cpu_mem(d, "requests", req, nreq, &o->cpu_milli, &o->mem_bytes)) < 0)
    return r;
  if ((r = ext_resources(d, res, req, nreq, o)) < 0)
    return r;
  sf__dpop(d, at);
  return 1;
}

static int init_ctr(dctx_t *d, const json_t *e, void *out)
{
  ((sf_container_t *)out)->init = true;
  return container(d, e, out);
}
static int main_ctr(dctx_t *d, const json_t *e, void *out)
{
  return container(d, e, out);
}

static int claim_status(dctx_t *d, const json_t *e, void *out)
{
  sf_claim_status_t *o = out;
  return sf__dfields(d, e,
                     (const dfield_t[]){DSTR_REQ("name", &o->name),
                                        DSTR("resourceClaimName", &o->claim_name), DEND});
}

static int ext_mapping(dctx_t *d, const json_t *e, void *out)
{
  sf_ext_mapping_t *o = out;
  return sf__dfields(d, e,
                     (const dfield_t[]){DSTR_REQ("containerName", &o->container),
                                        DSTR_REQ("resourceName", &o->resource),
                                        DSTR_REQ("requestName", &o->request), DEND});
}

/* Requests past this are no real pod's; summing them could overflow. */
#define REQ_MAX ((int64_t)1 << 60)

static int add(dctx_t *d, int64_t a, int64_t b, int64_t *out)
{
  if (a > REQ_MAX - b)
    return sf__dfail(d, "the pod's requests add up past %lld", (long long)REQ_MAX);
  *out = a + b;
  return 1;
}

/* PodRequests over the containers (the spec's; resize status is not read). */
static int aggregate(dctx_t *d, const sf_pod_t *p, int64_t *cpu, int64_t *mem)
{
  int64_t c = 0, m = 0, side_c = 0, side_m = 0, init_c = 0, init_m = 0, ic = 0, im = 0;
  int r;
  for (size_t i = 0; i < p->nctrs; i++) {
    const sf_container_t *k = &p->ctrs[i];
    if (!k->init || k->sidecar) {
      if ((r = add(d, c, k->cpu_milli, &c)) < 0 || (r = add(d, m, k->mem_bytes, &m)) < 0)
        return r;
    }
    if (!k->init)
      continue;
    if (k->sidecar) {
      if ((r = add(d, side_c, k->cpu_milli, &side_c)) < 0 ||
          (r = add(d, side_m, k->mem_bytes, &side_m)) < 0)
        return r;
      ic = side_c;
      im = side_m;
    } else if ((r = add(d, side_c, k->cpu_milli, &ic)) < 0 ||
               (r = add(d, side_m, k->mem_bytes, &im)) < 0) {
      return r;
    }
    init_c = ic > init_c ? ic : init_c;
    init_m = im > init_m ? im : init_m;
  }
  *cpu = c > init_c ? c : init_c;
  *mem = m > init_m ? m : init_m;
  return 1;
}

/* The pod's CPU and memory requests: containers, pod-level requests, overhead. */
static int pod_requests(dctx_t *d, const json_t *spec, sf_pod_t *p)
{
  const json_t *res;
  sf_cap_request_t *q = NULL;
  size_t nq = 0;
  int64_t oc = 0, om = 0;
  int r;
  if ((r = aggregate(d, p, &p->cpu_milli, &p->mem_bytes)) < 0)
    return r;
  if ((r = sf__dobj(d, spec, "resources", &res)) < 0)
    return r;
  if (res) {
    size_t at = sf__dpush(d, "resources");
    if ((r = sf__dqmap(d, res, "requests", &q, &nq)) < 0)
      return r;
    if ((r = cpu_mem(d, "requests", q, nq, &p->cpu_milli, &p->mem_bytes)) < 0)
      return r;
    sf__dpop(d, at);
  }
  q = NULL; /* an absent map leaves the pointers alone */
  nq = 0;
  if ((r = sf__dqmap(d, spec, "overhead", &q, &nq)) < 0)
    return r;
  if ((r = cpu_mem(d, "overhead", q, nq, &oc, &om)) < 0)
    return r;
  if ((r = add(d, p->cpu_milli, oc, &p->cpu_milli)) < 0)
    return r;
  return add(d, p->mem_bytes, om, &p->mem_bytes);
}

static int pod_spec(dctx_t *d, const json_t *spec, void *out)
{
  sf_pod_t *p = out;
  int r;
  if ((r = sf__dstr(d, spec, "nodeName", &p->node_name)) < 0)
    return r;
  if (p->node_name && !*p->node_name)
    p->node_name = NULL;
  p->claims = sf__arena_alloc(d->a, arr_len(spec, "resourceClaims") * sizeof(*p->claims));
  if ((r = sf__deach(d, spec, "resourceClaims", sizeof(*p->claims), pod_claim, (char *)p->claims,
                     &p->nclaims)) < 0)
    return r;
  size_t nc = arr_len(spec, "initContainers") + arr_len(spec, "containers");
  p->ctrs = sf__arena_alloc(d->a, nc * sizeof(*p->ctrs));
  if ((r = sf__deach(d, spec, "initContainers", sizeof(*p->ctrs), init_ctr, (char *)p->ctrs,
                     &p->nctrs)) < 0)
    return r;
  if ((r = sf__deach(d, spec, "containers", sizeof(*p->ctrs), main_ctr, (char *)p->ctrs, &p->nctrs)) <
      0)
    return r;
  return pod_requests(d, spec, p);
}

static int ext_status(dctx_t *d, const json_t *ext, void *out)
{
  sf_pod_t *p = out;
  int r;
  if ((r = sf__dstr(d, ext, "resourceClaimName", &p->ext_claim)) < 0)
    return r;
  p->ext_maps = sf__arena_alloc(d->a, arr_len(ext, "requestMappings") * sizeof(*p->ext_maps));
  return sf__deach(d, ext, "requestMappings", sizeof(*p->ext_maps), ext_mapping, (char *)p->ext_maps,
                   &p->next_maps);
}

static int pod_status(dctx_t *d, const json_t *st, void *out)
{
  sf_pod_t *p = out;
  const char *phase = NULL;
  int r;
  if ((r = sf__dstr(d, st, "phase", &phase)) < 0)
    return r;
  p->terminal = phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"));
  p->statuses = sf__arena_alloc(d->a, arr_len(st, "resourceClaimStatuses") * sizeof(*p->statuses));
  if ((r = sf__deach(d, st, "resourceClaimStatuses", sizeof(*p->statuses), claim_status,
                     (char *)p->statuses, &p->nstatuses)) < 0)
    return r;
  return sf__dsub(d, st, "extendedResourceClaimStatus", ext_status, p);
}

/* Who owns the pod and since when: read leniently (a field of the wrong type reads as absent). */
static void pod_meta(const json_t *j, sf_pod_t *p)
{
  const json_t *md = json_object_get(j, "metadata"), *r;
  size_t i;
  json_array_foreach(json_object_get(md, "ownerReferences"), i, r)
      p->controller |= json_is_true(json_object_get(r, "controller"));
  const json_t *t = json_object_get(md, "creationTimestamp");
  p->created = json_string_value(t); /* the object keeps its JSON while it lives */
}

int sf__decode_pod(dctx_t *d, const json_t *j, sf_pod_t *p)
{
  int r;
  pod_meta(j, p);
  if ((r = sf__dsub(d, j, "spec", pod_spec, p)) < 0)
    return r;
  return sf__dsub(d, j, "status", pod_status, p);
}

static int label(dctx_t *d, const void *ctx, const char *k, const json_t *v, void *out)
{
  (void)ctx;
  if (!json_is_string(v))
    return sf__dfail(d, "expected a string");
  *(sf_label_t *)out = (sf_label_t){k, json_string_value(v)};
  return 1;
}

int sf__decode_node(dctx_t *d, const json_t *j, sf_node_t *n)
{
  const json_t *md = json_object_get(j, "metadata"), *st;
  int r;
  size_t at = sf__dpush(d, "metadata");
  if ((r = sf__dmap(d, md, "labels", sizeof(sf_label_t), label, NULL, (void **)&n->labels,
                    &n->nlabels)) < 0)
    return r;
  sf__dpop(d, at);
  if ((r = sf__dobj(d, j, "status", &st)) < 0 || !st)
    return r;
  at = sf__dpush(d, "status");
  if ((r = sf__dqmap(d, st, "allocatable", &n->alloc, &n->nalloc)) < 0)
    return r;
  for (size_t i = 0; i < n->nalloc; i++) {
    if (!strcmp(n->alloc[i].name, "cpu"))
      n->cpu_milli = n->alloc[i].value;
    if (!strcmp(n->alloc[i].name, "memory"))
      n->mem_bytes = n->alloc[i].value / 1000;
  }
  sf__dpop(d, at);
  return 1;
}
