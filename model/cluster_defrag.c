/*
 * The defragmentation planner asked about one ResourceClaim of a cluster
 * (slicefit/cluster_defrag.h). The cluster's index knows allocation holders
 * ("namespace/claim"), not pods: the cluster's kept pods (cluster_pods.c,
 * the same records from a snapshot's Pods as from a watch) say who holds
 * what, whether a controller recreates them and when they were created.
 * The snapshot's objects are untrusted JSON: a field of the wrong type
 * reads as absent.
 *
 * The claim's demand is the one the extender would evaluate for a pod that
 * names it (sf_cluster_plan of a probe pod), so the plan answers for the
 * same rules the filter applies.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "slicefit/cluster_defrag.h"
#include "slicefit/defrag.h"
#include "cluster_int.h"

#define KEY_MAX 512

/* The planner's view of the kept pods that name claims: borrowed from the records but ns/name. */
typedef struct {
  sf_defrag_pod_t *in;
  const char **holders; /* every pod's claims' keys, one run per pod */
  char *names;          /* every pod's "ns\0name\0" (its key, split) */
  size_t n;
} pods_t;

static const char *str_at(const json_t *o, const char *a, const char *b)
{
  const json_t *v = json_object_get(o, a);
  if (b != NULL)
    v = json_object_get(v, b);
  return json_is_string(v) ? json_string_value(v) : NULL;
}

/* Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm). */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

int64_t sf_rfc3339_seconds(const char *s)
{
  int y, mo, d, h, mi, sec, n = 0;
  if (s == NULL || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6 ||
      n != 19 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
    return -1;
  const char *z = s + n;
  if (*z == '.')
    for (z++; *z >= '0' && *z <= '9'; z++)
      ;
  if (strcmp(z, "Z") != 0)
    return -1;
  return days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
}

static bool is_kind(const json_t *o, const char *kind)
{
  const char *k = str_at(o, "kind", NULL);
  return k != NULL && strcmp(k, kind) == 0;
}

/* Milli-GPUs an allocation holds: a whole device 1000, a share its part of the policy's capacity. */
static int64_t alloc_gpu_milli(const sf_index_t *idx, const sf_policy_t *pol, sf_alloc_id a)
{
  size_t np;
  const sf_pick_t *pk = sf_index_alloc_picks(idx, a, &np);
  int64_t milli = 0;
  size_t clen = strlen(pol->capacity);
  for (size_t k = 0; k < np; k++) {
    int64_t share = 1000;
    for (size_t i = 0; sf_index_dev_shared(idx, pk[k].dev) && !pk[k].whole && pk[k].consumed &&
                       i < sf_index_dev_ncaps(idx, pk[k].dev);
         i++) {
      sf_milli_t value, free_amount;
      const char *name = sf_index_dev_cap(idx, pk[k].dev, i, &value, &free_amount);
      size_t nlen = strlen(name);
      bool primary = strcmp(name, pol->capacity) == 0 ||
                     (nlen > clen && name[nlen - clen - 1] == '/' &&
                      strcmp(name + nlen - clen, pol->capacity) == 0);
      if (primary && value > 0)
        share = (int64_t)(pk[k].consumed[i] * 1000 / value);
    }
    milli += share;
  }
  return milli;
}

/* The planner's input for the kept pods that name claims, ages measured to now_s. */
static void pods_read(pods_t *ps, const sf_cluster_t *c, int64_t now_s)
{
  size_t nh = 0, nb = 0, at = 0, h = 0;
  for (size_t i = 0; i < c->npods; i++) {
    nh += c->pods[i].nclaims;
    nb += strlen(c->pods[i].key) + 1;
  }
  ps->in = sf_xcalloc(c->npods + 1, sizeof(*ps->in));
  ps->holders = sf_xcalloc(nh + 1, sizeof(*ps->holders));
  ps->names = sf_xmalloc(nb + 1);
  ps->n = 0;
  for (size_t i = 0; i < c->npods; i++) {
    const cpod_t *p = &c->pods[i];
    size_t klen = strlen(p->key);
    char *ns = memcpy(ps->names + at, p->key, klen + 1), *slash = strchr(ns, '/');
    if (p->nclaims == 0 || slash == NULL)
      continue;
    *slash = '\0';
    at += klen + 1;
    int64_t milli = 0;
    for (size_t k = 0; k < p->nclaims; k++) {
      ps->holders[h + k] = sf__pod_claim(p, k);
      sf_alloc_id a = sf_index_alloc_find(c->idx, ps->holders[h + k]);
      if (a >= 0)
        milli += alloc_gpu_milli(c->idx, &c->pol, a);
    }
    ps->in[ps->n++] = (sf_defrag_pod_t){ns,
                                        slash + 1,
                                        p->controller,
                                        p->created_s >= 0 && now_s > p->created_s
                                            ? now_s - p->created_s
                                            : 0,
                                        milli,
                                        ps->holders + h,
                                        p->nclaims};
    h += p->nclaims;
  }
}

static void pods_free(pods_t *ps)
{
  free(ps->in);
  free(ps->holders);
  free(ps->names);
}

static bool claim_known(const json_t *items, const char *ns, const char *name)
{
  size_t i;
  const json_t *o;
  json_array_foreach(items, i, o)
  {
    const char *n = str_at(o, "metadata", "name"), *s = str_at(o, "metadata", "namespace");
    if (is_kind(o, "ResourceClaim") && n && s && strcmp(n, name) == 0 && strcmp(s, ns) == 0)
      return true;
  }
  return false;
}

static int64_t demand_gpu_milli(const sf_demand_t *d)
{
  int64_t milli = 0;
  for (size_t c = 0; c < d->nclaims; c++)
    for (size_t r = 0; r < d->claims[c].nreqs; r++) {
      const sf_request_t *q = &d->claims[c].reqs[r];
      if (q->nalts > 0)
        q = &q->alts[0];
      milli += 1000 * (int64_t)(q->all ? 1 : q->count);
    }
  return milli;
}

static json_t *answer_new(const char *claim, const char *outcome, const char *node, bool fits,
                          const char *why)
{
  return json_pack("{s:s, s:s, s:s?, s:[], s:b, s:I, s:I, s:s}", "claim", claim, "outcome", outcome,
                   "node", node, "evictions", "fits_after", fits, "gpu_seconds_lost", (json_int_t)0,
                   "work", (json_int_t)0, "why", why);
}

static json_t *eviction(const sf_index_t *idx, const pods_t *ps, const sf_defrag_move_t *m,
                        const char *node)
{
  const sf_defrag_pod_t *p = &ps->in[m->pod];
  const char *to = sf_index_node_name(idx, m->to);
  json_t *claims = json_array();
  char sentence[SF_DEFRAG_WHY_MAX + KEY_MAX];
  for (size_t h = 0; h < p->nholders; h++) {
    const char *slash = strchr(p->holders[h], '/');
    json_array_append_new(claims, json_string(slash ? slash + 1 : p->holders[h]));
  }
  snprintf(sentence, sizeof sentence,
           "Evict %s/%s (%.3g GPUs, running %lld s) from %s; its claims fit again on %s.", p->ns,
           p->name, (double)p->gpu_milli / 1000.0, (long long)p->age_s, node, to);
  return json_pack("{s:s, s:s, s:o, s:I, s:s, s:s}", "namespace", p->ns, "name", p->name, "claims",
                   claims, "gpu_milli", (json_int_t)p->gpu_milli, "to_node", to, "sentence",
                   sentence);
}

static json_t *plan_json(sf_cluster_t *c, const pods_t *ps, const char *claim,
                         const sf_defrag_plan_t *pl)
{
  const sf_index_t *idx = sf_cluster_index(c);
  const char *node = pl->node >= 0 ? sf_index_node_name(idx, pl->node) : NULL;
  bool fits = pl->outcome == SF_DEFRAG_FOUND || pl->outcome == SF_DEFRAG_FITS;
  json_t *a = answer_new(claim, sf_defrag_outcome_name(pl->outcome), node, fits, pl->why);
  json_t *ev = json_object_get(a, "evictions");
  for (size_t m = 0; m < pl->nmoves; m++)
    json_array_append_new(ev, eviction(idx, ps, &pl->moves[m], node));
  json_object_set_new(a, "gpu_seconds_lost", json_integer((json_int_t)pl->gpu_s_lost));
  json_object_set_new(a, "work", json_integer((json_int_t)pl->work));
  return a;
}

/* Plans for a claim known to exist and not allocated. */
static json_t *plan_claim(sf_cluster_t *c, const char *claim, const char *ns, const char *name,
                          int64_t now_s)
{
  char err[SF_ERR_MAX], why[SF_DEFRAG_WHY_MAX];
  const char *bad = NULL;
  sf_pod_plan_t *pp = NULL;
  json_t *probe = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:{s:[{s:s}], s:[{s:s, s:s}]}}",
                            "apiVersion", "v1", "kind", "Pod", "metadata", "namespace", ns, "name",
                            "slicefit-defrag-probe", "uid", "slicefit-defrag-probe", "spec",
                            "containers", "name", "probe", "resourceClaims", "name", "claim",
                            "resourceClaimName", name);
  json_t *a = NULL;
  if (sf_cluster_plan(c, probe, &pp, err, sizeof err) != 0) {
    snprintf(why, sizeof why, "the claim cannot be read: %s", err);
    a = answer_new(claim, "unreadable", NULL, false, why);
    goto done;
  }
  const sf_demand_t *dem = sf_pod_plan_demand(pp, &bad);
  if (dem == NULL) {
    snprintf(why, sizeof why, "the claim cannot be planned for: %s", bad);
    a = answer_new(claim, "unreadable", NULL, false, why);
    goto done;
  }
  pods_t ps;
  sf_defrag_plan_t pl;
  pods_read(&ps, c, now_s);
  sf_defrag_input_t in = {dem, demand_gpu_milli(dem), ps.in, ps.n};
  sf_packer_t *p = sf_packer_create();
  if (sf_defrag_plan(p, sf_cluster_index(c), sf_cluster_policy(c), &in, &pl) == 0)
    a = plan_json(c, &ps, claim, &pl);
  else
    a = answer_new(claim, "unreadable", NULL, false, "the claim asks for nothing to plan");
  sf_packer_destroy(p);
  pods_free(&ps);
done:
  sf_pod_plan_free(pp);
  json_decref(probe);
  return a;
}

/*
 * The answer for `claim`: "unknown" when it is not NS/NAME or `known` says
 * the cluster has no such claim, "allocated" when it holds devices, else a plan.
 */
static json_t *answer(sf_cluster_t *c, const char *claim, int64_t now_s,
                      bool (*known)(const void *ctx, const char *ns, const char *name),
                      const void *ctx)
{
  char ns[KEY_MAX], why[SF_DEFRAG_WHY_MAX + KEY_MAX];
  const char *slash = strchr(claim, '/');
  size_t nl = slash ? (size_t)(slash - claim) : 0;
  if (slash == NULL || nl == 0 || nl >= sizeof ns || slash[1] == '\0' || strchr(slash + 1, '/')) {
    snprintf(why, sizeof why, "expected a claim as NAMESPACE/NAME, got \"%.200s\"", claim);
    return answer_new(claim, "unknown", NULL, false, why);
  }
  memcpy(ns, claim, nl);
  ns[nl] = '\0';
  if (!known(ctx, ns, slash + 1)) {
    snprintf(why, sizeof why, "no ResourceClaim %.400s in the cluster", claim);
    return answer_new(claim, "unknown", NULL, false, why);
  }
  const sf_index_t *idx = sf_cluster_index(c);
  sf_alloc_id a = sf_index_alloc_find(idx, claim);
  if (a >= 0) {
    const char *node = sf_index_node_name(idx, sf_index_alloc_node(idx, a));
    snprintf(why, sizeof why, "the claim is already allocated on %s", node);
    return answer_new(claim, "allocated", node, true, why);
  }
  return plan_claim(c, claim, ns, slash + 1, now_s);
}

static bool in_items(const void *items, const char *ns, const char *name)
{
  return claim_known(items, ns, name);
}

static bool in_store(const void *c, const char *ns, const char *name)
{
  char key[2 * KEY_MAX];
  snprintf(key, sizeof key, "%s/%s", ns, name);
  return sf__store_get(&((const sf_cluster_t *)c)->stores[SF_KIND_RESOURCE_CLAIM], key) != NULL;
}

json_t *sf_cluster_defrag(sf_cluster_t *c, const json_t *items, const char *claim, int64_t now_s)
{
  return answer(c, claim, now_s, in_items, items);
}

json_t *sf_cluster_defrag_live(sf_cluster_t *c, const char *claim, int64_t now_s)
{
  return answer(c, claim, now_s, in_store, c);
}

char *sf_cluster_defrag_text(const json_t *answer)
{
  size_t len = 0, cap = 256, i;
  char *out = sf_xmalloc(cap);
  const json_t *e;
  const char *parts[2] = {str_at(answer, "claim", NULL), str_at(answer, "why", NULL)};
  len = (size_t)snprintf(out, cap, "%s: %s.\n", parts[0] ? parts[0] : "?", parts[1] ? parts[1] : "");
  if (len >= cap) {
    sf_xgrow(&out, &cap, len + 1, 1);
    snprintf(out, cap, "%s: %s.\n", parts[0] ? parts[0] : "?", parts[1] ? parts[1] : "");
  }
  json_array_foreach(json_object_get(answer, "evictions"), i, e)
  {
    const char *s = str_at(e, "sentence", NULL);
    size_t n = s ? strlen(s) : 0;
    sf_xgrow(&out, &cap, len + n + 4, 1);
    len += (size_t)snprintf(out + len, cap - len, "  %s\n", s ? s : "");
  }
  return out;
}
