/*
 * One pod's demand: its claims resolved against the cluster, turned into
 * the core's sf_demand_t, and evaluated over node names.
 *
 * Claims already allocated pin the pod to their node; unallocated ones
 * become requests whose selectors are the class's and the request's CEL
 * programs. Whatever slicefit cannot resolve yet (a claim not created, a
 * class not seen, an allocation mode it does not know) makes the plan
 * unsure: every node passes and the in-tree DRA plugin judges.
 *
 * A plan borrows from the cluster's objects: it is valid until the cluster
 * next changes.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <math.h>
#include <string.h>
#include "slicefit/mix.h"
#include "decode_int.h"
#include "cluster_int.h"
#include "slicefit/cluster_defrag.h"

#define KEY_MAX 512
#define EXT_PREFIX "deviceclass.resource.kubernetes.io/"

struct sf_pod_plan {
  sf_arena_t *a;
  sf_object_t *pod;
  bool unsure, conflict, failed;
  bool cpu_only;                /* no claim, some CPU or memory, and the policy scores such pods */
  char why[SF_REASON_MAX];      /* unsure or conflict */
  char fail_why[SF_REASON_MAX]; /* failed: why DRA fails a claim of the pod */
  char all_who[SF_REASON_MAX];  /* "claim C, request R" of the first All request, or "" */
  const char *pin;              /* node every claim allocated so far is on */
  char pin_why[SF_REASON_MAX];
  sf_claim_t *claims;
  size_t nclaims, capclaims;
  sf_map_t seen; /* claim keys already planned */
  sf_demand_t demand;
  sf_cel_cache_t *cel;         /* borrowed: where progs go back */
  const sf_cel_prog_t **progs; /* references held by the selectors */
  size_t nprogs, capprogs;
  const char **ext_res; /* per request of the implicit claim (the last one): its resource */
  size_t next_res;      /* requests of the implicit claim; 0: none */
  bool ext_failed;      /* `failed` comes from the implicit claim alone (its class) */
};

/* A reason sentence, cut to the verdict's size (names can be long). */
static void say(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *buf, size_t len, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, len, fmt, ap);
  va_end(ap);
}

/* Sets *flag; the reason in buf is that of the first time it was set. */
static void mark(bool *flag, char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void mark(bool *flag, char *buf, size_t len, const char *fmt, ...)
{
  if (!*flag) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
  }
  *flag = true;
}

#define unsure(p, ...) mark(&(p)->unsure, (p)->why, sizeof(p)->why, __VA_ARGS__)
/* A claim DRA itself fails (an unknown class, invalid CEL, too many results): NO on every node. */
#define fail(p, ...) mark(&(p)->failed, (p)->fail_why, sizeof(p)->fail_why, __VA_ARGS__)

static void pin(sf_pod_plan_t *p, const char *node, const char *claim)
{
  if (!p->pin) {
    p->pin = node;
    say(p->pin_why, sizeof p->pin_why, "claim %s is allocated on node %s", claim, node);
  } else if (strcmp(p->pin, node) && !p->conflict) {
    p->conflict = true;
    say(p->why, sizeof p->why, "claims pin the pod to two nodes, %s and %s", p->pin, node);
  }
}

/* ---- requests ---- */

/* The driver an unqualified capacity name of `cls`'s requests belongs to: the one its selectors
 * name in quotes (CEL takes 'single' and "double" alike). */
static const char *class_driver(const sf_cluster_t *c, const sf_device_class_t *cls)
{
  char single[KEY_MAX], dbl[KEY_MAX];
  for (size_t i = 0; i < c->npools; i++) {
    snprintf(single, sizeof single, "'%s'", c->pools[i]->driver);
    snprintf(dbl, sizeof dbl, "\"%s\"", c->pools[i]->driver);
    for (size_t k = 0; k < cls->nselectors; k++)
      if (strstr(cls->selectors[k], single) || strstr(cls->selectors[k], dbl))
        return c->pools[i]->driver;
  }
  return c->npools ? c->pools[0]->driver : "";
}

static void caps(sf_cluster_t *c, sf_pod_plan_t *p, const sf_device_class_t *cls, const sf_dreq_t *d,
                 sf_request_t *out)
{
  sf_cap_request_t *v = sf__arena_alloc(p->a, d->ncaps * sizeof(*v));
  for (size_t i = 0; i < d->ncaps; i++) {
    v[i].value = d->caps[i].value;
    v[i].name = strchr(d->caps[i].name, '/')
                    ? d->caps[i].name
                    : sf__arena_join(p->a, class_driver(c, cls), d->caps[i].name);
  }
  out->caps = v;
  out->ncaps = d->ncaps;
}

static void selectors(sf_cluster_t *c, sf_pod_plan_t *p, const char **cs, size_t ncs, const char **rs,
                      size_t nrs, sf_request_t *out)
{
  sf_selector_t *v = sf__arena_alloc(p->a, (ncs + nrs) * sizeof(*v));
  for (size_t i = 0; i < ncs + nrs; i++) {
    const char *text = i < ncs ? cs[i] : rs[i - ncs];
    const sf_cel_prog_t *prog = sf__compile(c, text);
    sf_xgrow(&p->progs, &p->capprogs, p->nprogs + 1, sizeof(*p->progs));
    p->progs[p->nprogs++] = prog;
    p->cel = c->cel;
    sf_cel_selector(prog, &v[i]);
    if (!*text)
      fail(p, "CEL expression empty (unsupported selector type?)");
    else if (sf_cel_prog_invalid(prog))
      fail(p, "selector %s: %s", text, sf_cel_prog_error(prog));
  }
  out->selectors = v;
  out->nselectors = ncs + nrs;
}

static void request_body(sf_cluster_t *c, sf_pod_plan_t *p, const sf_dreq_t *d, sf_request_t *out)
{
  const sf_object_t *co = sf__store_get(&c->stores[SF_KIND_DEVICE_CLASS], d->class_name);
  out->name = d->name;
  /* What DRA refuses outright fails the claim on every node, as upstream's allocator does. */
  if (!*d->class_name) {
    fail(p, "request %s: missing device class name (unsupported request type?)", d->name);
    return;
  }
  if (!co) {
    fail(p, "request %s: could not retrieve device class %s", d->name, d->class_name);
    return;
  }
  if (d->mode == SF_MODE_UNKNOWN) {
    fail(p, "request %s: unsupported count mode %s", d->name, d->mode_text);
    return;
  }
  const sf_device_class_t *cls = &co->u.dclass;
  selectors(c, p, cls->selectors, cls->nselectors, d->selectors, d->nselectors, out);
  out->all = d->mode == SF_MODE_ALL;
  out->count = (uint32_t)d->count;
  caps(c, p, cls, d, out);
  out->tols = d->tols;
  out->ntols = d->ntols;
  out->admin = d->admin_access;
}

static void request(sf_cluster_t *c, sf_pod_plan_t *p, const sf_dreq_t *d, sf_request_t *out)
{
  if (d->nalts == 0) {
    request_body(c, p, d, out);
    return;
  }
  sf_request_t *alts = sf__arena_alloc(p->a, d->nalts * sizeof(*alts));
  for (size_t i = 0; i < d->nalts; i++)
    request_body(c, p, &d->alts[i], &alts[i]);
  out->name = d->name;
  out->alts = alts;
  out->nalts = d->nalts;
}

/* ---- constraints ---- */

static bool find_ref(const sf_claim_spec_t *s, const char *ref, sf_ref_t *out)
{
  const char *sl = strchr(ref, '/');
  size_t len = sl ? (size_t)(sl - ref) : strlen(ref);
  for (size_t i = 0; i < s->nreqs; i++) {
    if (strlen(s->reqs[i].name) != len || strncmp(s->reqs[i].name, ref, len))
      continue;
    out->req = (uint32_t)i;
    out->alt = -1;
    for (size_t k = 0; sl && k < s->reqs[i].nalts; k++)
      if (!strcmp(s->reqs[i].alts[k].name, sl + 1))
        out->alt = (int32_t)k;
    return !sl || out->alt >= 0;
  }
  return false;
}

static void constraint(sf_pod_plan_t *p, const sf_claim_spec_t *s, const sf_dcons_t *d,
                       const char *attr, sf_constraint_kind_t kind, sf_constraint_t *out)
{
  sf_ref_t *refs = sf__arena_alloc(p->a, d->nreqs * sizeof(*refs));
  for (size_t i = 0; i < d->nreqs; i++)
    if (!find_ref(s, d->reqs[i], &refs[i]))
      unsure(p, "a constraint names request %s, which the claim does not have", d->reqs[i]);
  if (!strchr(attr, '/'))
    unsure(p, "constraint attribute %s is not fully qualified", attr);
  *out = (sf_constraint_t){.kind = kind, .attr = attr, .refs = refs, .nrefs = d->nreqs};
}

static void constraints(sf_pod_plan_t *p, const sf_claim_spec_t *s, sf_claim_t *cl)
{
  sf_constraint_t *v = sf__arena_alloc(p->a, 2 * s->ncons * sizeof(*v));
  size_t n = 0;
  for (size_t i = 0; i < s->ncons; i++) {
    if (!s->cons[i].match && !s->cons[i].distinct)
      fail(p, "empty constraint (unsupported constraint type?)");
    if (s->cons[i].match)
      constraint(p, s, &s->cons[i], s->cons[i].match, SF_CONSTRAINT_MATCH, &v[n++]);
    if (s->cons[i].distinct)
      constraint(p, s, &s->cons[i], s->cons[i].distinct, SF_CONSTRAINT_DISTINCT, &v[n++]);
  }
  cl->cons = v;
  cl->ncons = n;
}

/* ---- claims ---- */

static sf_claim_t *new_claim(sf_pod_plan_t *p, const char *name)
{
  sf_xgrow(&p->claims, &p->capclaims, p->nclaims + 1, sizeof(*p->claims));
  sf_claim_t *cl = &p->claims[p->nclaims++];
  memset(cl, 0, sizeof *cl);
  size_t len = strlen(name) + 1;
  cl->name = memcpy(sf__arena_alloc(p->a, len), name, len);
  return cl;
}

/* The fewest results the claim can have: each request's count (All: at least one device), the
 * smallest of its alternatives'. */
static int64_t fewest_results(const sf_claim_spec_t *s)
{
  int64_t total = 0;
  for (size_t i = 0; i < s->nreqs; i++) {
    const sf_dreq_t *r = &s->reqs[i];
    int64_t least = r->nalts ? INT64_MAX : (r->mode == SF_MODE_ALL ? 1 : r->count);
    for (size_t k = 0; k < r->nalts; k++) {
      int64_t n = r->alts[k].mode == SF_MODE_ALL ? 1 : r->alts[k].count;
      if (n < least)
        least = n;
    }
    total += least;
  }
  return total;
}

/* Remembers the first request (or subrequest) of the pod in allocation mode All. */
static void note_all(sf_pod_plan_t *p, const char *key, const sf_claim_spec_t *s)
{
  for (size_t i = 0; i < s->nreqs && !p->all_who[0]; i++) {
    const sf_dreq_t *r = &s->reqs[i];
    if (!r->nalts && r->mode == SF_MODE_ALL)
      say(p->all_who, sizeof p->all_who, "claim %s, request %s", key, r->name);
    for (size_t k = 0; k < r->nalts && !p->all_who[0]; k++)
      if (r->alts[k].mode == SF_MODE_ALL)
        say(p->all_who, sizeof p->all_who, "claim %s, request %s", key, r->alts[k].name);
  }
}

static void plan_spec(sf_cluster_t *c, sf_pod_plan_t *p, const char *key, const sf_claim_spec_t *s)
{
  sf_request_t *reqs = sf__arena_alloc(p->a, s->nreqs * sizeof(*reqs));
  for (size_t i = 0; i < s->nreqs; i++)
    request(c, p, &s->reqs[i], &reqs[i]);
  note_all(p, key, s);
  if (fewest_results(s) > SF_CLAIM_RESULTS_MAX)
    fail(p, "claim %s: the requests exceed the claim limit of %d results", key, SF_CLAIM_RESULTS_MAX);
  sf_claim_t *cl = new_claim(p, key);
  cl->reqs = reqs;
  cl->nreqs = s->nreqs;
  constraints(p, s, cl);
}

static void plan_claim(sf_cluster_t *c, sf_pod_plan_t *p, const char *ns, const char *name)
{
  char key[KEY_MAX];
  snprintf(key, sizeof key, "%s/%s", ns, name);
  if (!sf_map_put(&p->seen, key, strlen(key), 1))
    return;
  const sf_object_t *o = sf__store_get(&c->stores[SF_KIND_RESOURCE_CLAIM], key);
  if (!o) {
    unsure(p, "claim %s is not known yet", key);
    return;
  }
  const sf_rclaim_t *cl = &o->u.claim;
  if (!cl->allocated) {
    plan_spec(c, p, key, &cl->spec);
    return;
  }
  const char *node = cl->alloc_node;
  sf_alloc_id a = sf_index_alloc_find(c->idx, key);
  if (!node && a >= 0)
    node = sf_index_node_name(c->idx, sf_index_alloc_node(c->idx, a));
  /* A pool's home ("@driver/pool") is no node: an allocation of devices several nodes reach does
   * not pin the pod (its nodeSelector, which slicefit does not evaluate, would). */
  if (node && node[0] != '@')
    pin(p, node, key);
}

static const char *status_claim(const sf_pod_t *pod, const char *name, bool *found)
{
  *found = false;
  for (size_t i = 0; i < pod->nstatuses; i++)
    if (!strcmp(pod->statuses[i].name, name)) {
      *found = true;
      return pod->statuses[i].claim_name;
    }
  return NULL;
}

static void plan_pod_claims(sf_cluster_t *c, sf_pod_plan_t *p, const sf_pod_t *pod)
{
  for (size_t i = 0; i < pod->nclaims; i++) {
    const sf_pod_claim_t *pc = &pod->claims[i];
    bool found = true;
    const char *name = pc->claim_name ? pc->claim_name : status_claim(pod, pc->name, &found);
    if (!found) {
      unsure(p, "the claim for %s (template %s) is not created yet", pc->name, pc->template_name);
      continue;
    }
    if (name)
      plan_claim(c, p, pod->meta.ns, name); /* no name: no claim was needed */
  }
}

/* ---- extended resources ---- */

/*
 * The class that serves extended resource `res`: the one named by the implicit name
 * deviceclass.resource.kubernetes.io/<class>, else among the classes whose extendedResourceName
 * it is, the one created last, ties to the name sorted first (the API's rule for DeviceClassSpec
 * extendedResourceName), whatever order the classes arrived in.
 */
static const sf_device_class_t *ext_class(const sf_cluster_t *c, const char *res)
{
  const store_t *s = &c->stores[SF_KIND_DEVICE_CLASS];
  const sf_device_class_t *best = NULL;
  size_t plen = strlen(EXT_PREFIX);
  if (!strncmp(res, EXT_PREFIX, plen)) {
    char key[KEY_MAX];
    snprintf(key, sizeof key, "%s", res + plen);
    const sf_object_t *o = sf__store_get(s, key);
    return o ? &o->u.dclass : NULL;
  }
  for (size_t i = 0; i < s->n; i++) {
    const sf_device_class_t *cls = &s->objs[i]->u.dclass;
    if (!cls->ext_resource || strcmp(cls->ext_resource, res))
      continue;
    int newer = best ? strcmp(cls->created, best->created) : 1;
    if (newer > 0 || (newer == 0 && strcmp(cls->meta.name, best->meta.name) < 0))
      best = cls;
  }
  return best;
}

static void ext_request(sf_cluster_t *c, sf_pod_plan_t *p, const sf_device_class_t *cls,
                        const sf_cap_request_t *res, size_t ci, size_t ri, sf_request_t *out)
{
  char name[64];
  snprintf(name, sizeof name, "container-%zu-request-%zu", ci, ri);
  size_t len = strlen(name) + 1;
  out->name = memcpy(sf__arena_alloc(p->a, len), name, len);
  if (res->value % 1000)
    unsure(p, "extended resource %s asks for a fraction of a device", res->name);
  out->count = (uint32_t)(res->value / 1000);
  selectors(c, p, cls->selectors, cls->nselectors, NULL, 0, out);
}

/* Container requests of extended resources a DeviceClass names: one implicit claim. */
static void plan_ext(sf_cluster_t *c, sf_pod_plan_t *p, const sf_pod_t *pod)
{
  size_t total = 0, n = 0;
  for (size_t i = 0; i < pod->nctrs; i++)
    total += pod->ctrs[i].next;
  sf_request_t *reqs = sf__arena_alloc(p->a, total * sizeof(*reqs));
  const char **res_of = sf__arena_alloc(p->a, total * sizeof(*res_of));
  bool failed = p->failed;
  for (size_t i = 0; i < pod->nctrs; i++)
    for (size_t k = 0; k < pod->ctrs[i].next; k++) {
      const sf_cap_request_t *res = &pod->ctrs[i].ext[k];
      const sf_device_class_t *cls = ext_class(c, res->name);
      if (!cls || res->value <= 0)
        continue;
      if (pod->ext_claim) {
        plan_claim(c, p, pod->meta.ns, pod->ext_claim);
        return;
      }
      res_of[n] = res->name;
      ext_request(c, p, cls, res, i, k, &reqs[n++]);
    }
  if (n == 0)
    return;
  char name[KEY_MAX];
  snprintf(name, sizeof name, "%s/%s (extended resources)", pod->meta.ns, pod->meta.name);
  sf_claim_t *cl = new_claim(p, name);
  cl->reqs = reqs;
  cl->nreqs = n;
  p->ext_res = res_of;
  p->next_res = n;
  p->ext_failed = !failed && p->failed;
}

/* ---- the learned mix ---- */

void sf__claim_learn(sf_cluster_t *c, const sf_object_t *o, int sign)
{
  if (c->mix_dirty)
    return; /* rebuilt from every claim before the next use */
  sf_pod_plan_t p;
  char key[KEY_MAX];
  memset(&p, 0, sizeof p);
  p.a = c->scratch; /* one arena and claims buffer for every plan learnt */
  p.claims = c->lclaims;
  p.capclaims = c->caplclaims;
  plan_spec(c, &p, sf__obj_key(&o->u.meta, key, sizeof key), &o->u.claim.spec);
  /* A claim the plan cannot read (its class unknown yet) teaches nothing: a class
   * arriving marks the mix dirty, and the rebuild reads it again. */
  if (!p.unsure && !p.failed) {
    /* With the CPU of the pod behind it, as the replay learns a pod: a node short of that CPU
     * strands its GPUs for this shape (FGD's "lack CPU" rule). */
    sf_demand_t d = {p.claims, p.nclaims, sf__claim_cpu(c, key), 0};
    sf_mix_learn(c->packer, c->idx, &c->pol, &d, sign);
  }
  /* The mix keeps shapes, not selectors: the programs go back now. */
  for (size_t i = 0; i < p.nprogs; i++)
    sf_cel_release(c->cel, p.progs[i]);
  free(p.progs);
  sf__arena_reset(p.a);
  c->lclaims = p.claims;
  c->caplclaims = p.capclaims;
}

void sf__mix_refresh(sf_cluster_t *c)
{
  if (!c->mix_dirty)
    return;
  c->mix_dirty = false;
  sf_mix_clear(c->idx);
  const store_t *s = &c->stores[SF_KIND_RESOURCE_CLAIM];
  for (size_t i = 0; i < s->n; i++)
    sf__claim_learn(c, s->objs[i], +1);
}

/* ---- the plan ---- */

int sf_cluster_plan(sf_cluster_t *c, const json_t *pod, sf_pod_plan_t **out, char *err, size_t errlen)
{
  sf_object_t *o = NULL;
  int r = sf_decode(pod, SF_OBJ_POD, &o, err, errlen);
  *out = NULL;
  if (r < 0)
    return r;
  sf_pod_plan_t *p = sf_xcalloc(1, sizeof(*p));
  p->a = sf__arena_create();
  p->pod = o;
  sf_map_init(&p->seen, c->hash_seed);
  plan_pod_claims(c, p, &o->u.pod);
  plan_ext(c, p, &o->u.pod);
  p->demand.claims = p->claims;
  p->demand.nclaims = p->nclaims;
  p->demand.cpu_milli = o->u.pod.cpu_milli;
  p->demand.mem_bytes = o->u.pod.mem_bytes;
  /* No claim at all (not one already allocated, which pins the pod, nor one not created yet). */
  p->cpu_only = p->nclaims == 0 && !p->pin && !p->unsure && !p->failed && !p->conflict &&
                (p->demand.cpu_milli > 0 || p->demand.mem_bytes > 0) &&
                c->pol.cpu_only_pods == SF_CPU_ONLY_SCORE;
  *out = p;
  return 0;
}

const sf_demand_t *sf_pod_plan_demand(const sf_pod_plan_t *p, const char **why)
{
  *why = p->failed ? p->fail_why : p->conflict || p->unsure ? p->why : NULL;
  return *why != NULL ? NULL : &p->demand;
}

void sf_pod_plan_free(sf_pod_plan_t *p)
{
  if (!p)
    return;
  for (size_t i = 0; i < p->nprogs; i++)
    sf_cel_release(p->cel, p->progs[i]);
  free(p->progs);
  sf__arena_destroy(p->a);
  sf_object_free(p->pod);
  sf_map_dispose(&p->seen);
  free(p->claims);
  free(p);
}

bool sf_pod_plan_empty(const sf_pod_plan_t *p)
{
  return p->nclaims == 0 && !p->pin && !p->unsure && !p->conflict && !p->failed && !p->cpu_only;
}

/* One verdict without formatting: thousands of nodes share one reason. */
static void verdict(sf_verdict_t *v, sf_fit_t fit, const char *why)
{
  size_t len = strnlen(why, SF_REASON_MAX - 1);
  v->fit = fit;
  v->raw = 0;
  v->score = 0;
  memcpy(v->reason, why, len);
  v->reason[len] = '\0';
}

#define NO_DEVICES "the node publishes no device slicefit knows"
#define NO_POOL "no complete, valid resource pool reaches the node"
#define NO_POOL_INVALID \
  "no complete, valid resource pool reaches the node (invalid resource pools were encountered)"

#define NO_GPUS_CPU_ONLY "the node has no GPU to strand: the best place for a pod without claims"

/*
 * DRA refuses allocation mode All on a node that a pool reaches incomplete or invalid, whatever
 * the pool's driver (validateDeviceRequest looks at every pool of the node first): true with
 * upstream's reason in v.
 */
static bool all_unsettled(const sf_cluster_t *c, const sf_pod_plan_t *p, const sf_map_t *unsettled,
                          const char *node, sf_verdict_t *v)
{
  char pool[KEY_MAX], why[SF_REASON_MAX];
  int32_t k = p->all_who[0] ? sf_map_get(unsettled, node, strlen(node)) : -1;
  if (k < 0)
    return false;
  say(why, sizeof why, "%s: asks for all devices, but resource pool %s is currently %s", p->all_who,
      sf__pool_name(c, (size_t)k / 2, pool, sizeof pool), k % 2 ? "invalid" : "being updated");
  verdict(v, SF_FIT_NO, why);
  return true;
}

/*
 * A node the index does not know: NO when it is a known Node (nothing reaches it), else UNSURE.
 * For a pod without claims a known Node without devices is the best place there is: FGD's
 * fragmentation cannot grow there (its increase is 0, the least any node can have).
 */
static void unknown_node(const sf_cluster_t *c, const sf_pod_plan_t *p, const char *name,
                         sf_verdict_t *v)
{
  if (!c->nodes_tracked || !sf__node_get(c, name)) {
    verdict(v, SF_FIT_UNSURE, NO_DEVICES);
    return;
  }
  if (p->cpu_only) {
    verdict(v, SF_FIT_YES, "");
    v->raw = 50.0; /* FGD's step for an increase of 0 (packer.c, cap_cpu_only) */
    v->score = SF_SCORE_MAX;
    return;
  }
  bool invalid = false;
  for (size_t i = 0; c->ninvalid && i < c->npools && !invalid; i++)
    for (size_t k = 0; k < c->pools[i]->ninvalid_nodes && !invalid; k++)
      invalid = !strcmp(c->pools[i]->invalid_nodes[k], name);
  verdict(v, SF_FIT_NO, invalid ? NO_POOL_INVALID : NO_POOL);
}

/* Does the node's device plugin serve every extended resource of the implicit claim? Then a
 * class DRA would fail the claim on is not used there. */
static bool plugin_serves_all(const sf_cluster_t *c, const sf_pod_plan_t *p, const char *name)
{
  const cnode_t *n = p->next_res ? sf__node_get(c, name) : NULL;
  for (size_t k = 0; n && k < p->next_res; k++)
    if (!sf__node_has_ext(n, p->ext_res[k]))
      return false;
  return n != NULL;
}

/*
 * KEP-5004: an extended resource that a Node's allocatable lists, whatever the amount, is its
 * device plugin's there, and DRA serves the name only on nodes where no device plugin
 * advertises it (the DRA plugin's filterExtendedResources). On such a node the implicit claim
 * loses the requests of those resources and NodeResourcesFit judges them; whatever else the pod
 * asks of DRA is judged as on any node. The node is scored in the middle of the range: slicefit
 * has no packing to predict for the device plugin, so it neither prefers nor avoids the node.
 * True when `name` is such a node, with its verdict in v.
 */
static bool plugin_node(sf_cluster_t *c, const sf_pod_plan_t *p, const char *name, sf_verdict_t *v)
{
  const cnode_t *n = p->next_res ? sf__node_get(c, name) : NULL;
  const char *served = NULL;
  size_t keep = 0;
  for (size_t k = 0; n && k < p->next_res; k++) {
    if (!sf__node_has_ext(n, p->ext_res[k]))
      keep++;
    else if (!served)
      served = p->ext_res[k];
  }
  if (!served)
    return false;
  char why[SF_REASON_MAX];
  say(why, sizeof why,
      "the node's device plugin serves %s: kube-scheduler's NodeResourcesFit judges it", served);
  const sf_claim_t *ext = &p->claims[p->nclaims - 1];
  sf_claim_t *claims = sf_xmalloc(p->nclaims * sizeof(*claims));
  sf_request_t *reqs = sf_xmalloc((keep ? keep : 1) * sizeof(*reqs));
  size_t nclaims = p->nclaims - 1, m = 0;
  memcpy(claims, p->claims, nclaims * sizeof(*claims));
  for (size_t k = 0; k < p->next_res; k++)
    if (!sf__node_has_ext(n, p->ext_res[k]))
      reqs[m++] = ext->reqs[k];
  if (keep) {
    claims[nclaims] = *ext;
    claims[nclaims].reqs = reqs;
    claims[nclaims++].nreqs = keep;
  }
  verdict(v, SF_FIT_YES, why);
  sf_node_id id = nclaims ? sf_index_node_find(c->idx, name) : -1;
  sf_demand_t d = {claims, nclaims, 0, 0}; /* CPU and memory: NodeResourcesFit's too */
  if (nclaims && id < 0)
    unknown_node(c, p, name, v);
  else if (nclaims && sf_packer_evaluate(c->packer, c->idx, &c->pol, &d, &id, 1, 0, v) < 0)
    verdict(v, SF_FIT_UNSURE, why);
  if (v->fit == SF_FIT_YES)
    v->score = SF_SCORE_MAX / 2;
  free(claims);
  free(reqs);
  return true;
}

/*
 * The node named names[i]. kube-scheduler sends the same names, in the same
 * order, call after call: the node found at position i last time is tried
 * first, and kept only if it is live and has that name (ids are reused), so
 * the answer is sf_index_node_find's. A string compare instead of a seeded
 * hash and a probe: 11% of a filter+prioritize pair over 5,000 names
 * (docs/benchmarks.md).
 */
static sf_node_id node_at(sf_cluster_t *c, size_t i, const char *name, bool same)
{
  if (same && i < c->nname_ids && c->name_ids[i] >= 0)
    return c->name_ids[i];
  if (i < c->nname_ids) {
    const char *had = sf_index_node_name(c->idx, c->name_ids[i]);
    if (had != NULL && strcmp(had, name) == 0)
      return c->name_ids[i];
  }
  sf_node_id id = sf_index_node_find(c->idx, name);
  if (i >= c->capname_ids)
    sf_xgrow(&c->name_ids, &c->capname_ids, i + 1, sizeof(*c->name_ids));
  for (; c->nname_ids < i; c->nname_ids++) /* positions skipped on the way (unsettled, pinned) */
    c->name_ids[c->nname_ids] = -1;
  c->name_ids[i] = id;
  c->nname_ids = c->nname_ids > i + 1 ? c->nname_ids : i + 1;
  return id;
}

/*
 * The names are the list `list` the caller passed last time, and no node
 * came or went in the index since (a removal frees an id for reuse, an
 * addition may name a position that found none): each position's node is
 * the one found then, without reading a name.
 */
static bool same_list(sf_cluster_t *c, uint64_t list)
{
  bool same = list != 0 && list == c->name_list && sf_index_node_count(c->idx) == c->name_nodes &&
              c->node_removals == c->name_removals;
  c->name_list = 0; /* until this call has found every position's node */
  return same;
}

/* Every position of `list` went through node_at: name_ids are its nodes. */
static void keep_list(sf_cluster_t *c, uint64_t list)
{
  c->name_list = list;
  c->name_nodes = sf_index_node_count(c->idx);
  c->name_removals = c->node_removals;
}

int sf_cluster_evaluate(sf_cluster_t *c, const sf_pod_plan_t *p, const char *const *names, size_t n,
                        sf_verdict_t *out)
{
  return sf_cluster_evaluate_list(c, p, names, n, 0, out);
}

int sf_cluster_evaluate_list(sf_cluster_t *c, const sf_pod_plan_t *p, const char *const *names,
                             size_t n, uint64_t list, sf_verdict_t *out)
{
  bool same = same_list(c, list);
  sf__mix_refresh(c);
  if (sf_pod_plan_empty(p)) {
    for (size_t i = 0; i < n; i++)
      verdict(&out[i], SF_FIT_YES, "");
    return 0;
  }
  sf_node_id *ids = sf_xmalloc((n ? n : 1) * sizeof(*ids));
  size_t *pos = sf_xmalloc((n ? n : 1) * sizeof(*pos)), m = 0, looked = 0;
  sf_map_t unsettled;
  sf_map_init(&unsettled, c->hash_seed);
  if (p->all_who[0])
    sf__pools_unsettled(c, &unsettled);
  for (size_t i = 0; i < n; i++) {
    sf_node_id id = -1;
    if (p->failed && !(p->ext_failed && plugin_serves_all(c, p, names[i])))
      verdict(&out[i], SF_FIT_NO, p->fail_why);
    else if (p->conflict)
      verdict(&out[i], SF_FIT_NO, p->why);
    else if (p->pin && strcmp(p->pin, names[i]))
      verdict(&out[i], SF_FIT_NO, p->pin_why);
    else if (p->unsure)
      verdict(&out[i], SF_FIT_UNSURE, p->why);
    else if (plugin_node(c, p, names[i], &out[i]))
      continue;
    else if (p->all_who[0] && all_unsettled(c, p, &unsettled, names[i], &out[i]))
      continue;
    else {
      looked++;
      if ((id = node_at(c, i, names[i], same)) < 0) {
        unknown_node(c, p, names[i], &out[i]);
        continue;
      }
      ids[m] = id;
      pos[m++] = i;
    }
  }
  /* A position skipped above (failed, pinned, unsure, unsettled, a device plugin's node) kept
   * another list's id: the names are this list's only when every position found its node. */
  if (looked == n)
    keep_list(c, list);
  /*
   * kube-scheduler's NodeResourcesFit has passed every node the extender
   * sees, counting the pods it has just placed and not yet bound; the index
   * lags it. So a node the core finds short of CPU or memory is judged on
   * its devices alone (SF_EVAL_HOST_LAGS), and the scores are the core's.
   */
  int r = 0;
  if (m == n) { /* every node known and evaluated (the usual call): no scatter needed */
    r = sf_packer_evaluate(c->packer, c->idx, &c->pol, &p->demand, ids, m, SF_EVAL_HOST_LAGS, out);
  } else if (m > 0) {
    sf_verdict_t *sub = sf_xmalloc(m * sizeof(*sub));
    r = sf_packer_evaluate(c->packer, c->idx, &c->pol, &p->demand, ids, m, SF_EVAL_HOST_LAGS, sub);
    for (size_t k = 0; r == 0 && k < m; k++)
      out[pos[k]] = sub[k];
    free(sub);
  }
  sf_map_dispose(&unsettled);
  free(ids);
  free(pos);
  return r;
}
