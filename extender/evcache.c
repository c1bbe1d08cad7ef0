/*
 * The last filter's verdicts, so that the prioritize call kube-scheduler
 * sends right after it for the same pod is answered without evaluating the
 * nodes again (the evaluation is most of a call's cost at 5,000 nodes).
 *
 * A hit needs the same pod (uid, resourceVersion, namespace and name), the
 * same cluster generation (any applied event or policy change bumps it),
 * every name known to the filter, and the same set of FIT nodes: scores are
 * normalised over the FIT nodes, so a prioritize over fewer of them is
 * evaluated afresh. Names are found through an open-addressing hash table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ext_int.h"

static uint64_t hash(const char *s)
{
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* The cache key of a pod; false when it lacks a uid (never cached). */
bool sf__evcache_key(const json_t *pod, char *key, size_t cap)
{
  const json_t *md = json_object_get(pod, "metadata");
  const char *uid = json_string_value(json_object_get(md, "uid"));
  const char *rv = json_string_value(json_object_get(md, "resourceVersion"));
  const char *ns = json_string_value(json_object_get(md, "namespace"));
  const char *name = json_string_value(json_object_get(md, "name"));
  if (uid == NULL || *uid == '\0')
    return false;
  int n = snprintf(key, cap, "%s/%s/%s/%s", uid, rv ? rv : "", ns ? ns : "", name ? name : "");
  return n > 0 && (size_t)n < cap;
}

void sf__evcache_dispose(sf__evcache_t *ec)
{
  free(ec->arena);
  free(ec->names);
  free(ec->v);
  free(ec->slots);
  free(ec->map);
  memset(ec, 0, sizeof *ec);
}

static void index_names(sf__evcache_t *ec)
{
  size_t want = 16;
  while (want < 2 * ec->n)
    want *= 2;
  if (want > ec->nslots) {
    free(ec->slots);
    ec->slots = sf_xmalloc(want * sizeof *ec->slots);
    ec->nslots = want;
  }
  memset(ec->slots, 0, ec->nslots * sizeof *ec->slots);
  for (size_t i = 0; i < ec->n; i++) {
    size_t s = (size_t)hash(ec->names[i]) & (ec->nslots - 1);
    while (ec->slots[s])
      s = (s + 1) & (ec->nslots - 1);
    ec->slots[s] = (uint32_t)i + 1;
  }
}

/* Copies the names into one arena. */
static void copy_names(sf__evcache_t *ec, const char *const *names, size_t n)
{
  size_t total = 0;
  for (size_t i = 0; i < n; i++)
    total += strlen(names[i]) + 1;
  free(ec->arena);
  free(ec->names);
  ec->arena = sf_xmalloc(total ? total : 1);
  ec->names = sf_xmalloc((n ? n : 1) * sizeof *ec->names);
  char *w = ec->arena;
  for (size_t i = 0; i < n; i++) {
    size_t l = strlen(names[i]) + 1;
    ec->names[i] = memcpy(w, names[i], l);
    w += l;
  }
  ec->n = n;
}

static bool same_names(const sf__evcache_t *ec, const char *const *names, size_t n)
{
  if (n != ec->n)
    return false;
  for (size_t i = 0; i < n; i++)
    if (strcmp(ec->names[i], names[i]) != 0)
      return false;
  return true;
}

sf_verdict_t *sf__evcache_store(sf__evcache_t *ec, const char *key, uint64_t gen,
                                const char *const *names, size_t n, sf_verdict_t *v, size_t *vcap)
{
  return sf__evcache_store_list(ec, key, gen, names, n, 0, v, vcap);
}

sf_verdict_t *sf__evcache_store_list(sf__evcache_t *ec, const char *key, uint64_t gen,
                                     const char *const *names, size_t n, uint64_t list,
                                     sf_verdict_t *v, size_t *vcap)
{
  if (n > UINT32_MAX - 1)
    return v;
  /* kube-scheduler sends the same names call after call: keep them and their table. */
  bool known = list != 0 && list == ec->list && ec->n == n;
  if (!ec->valid || (!known && !same_names(ec, names, n))) {
    copy_names(ec, names, n);
    index_names(ec);
    ec->map_list = 0; /* positions found in other names */
  }
  ec->list = list;
  snprintf(ec->key, sizeof ec->key, "%s", key);
  ec->gen = gen;
  ec->nfit = 0;
  for (size_t i = 0; i < n; i++)
    ec->nfit += v[i].fit == SF_FIT_YES;
  /* The verdicts change hands: the cache's old array becomes the caller's scratch. */
  sf_verdict_t *old = ec->v;
  size_t oldcap = ec->vcap;
  ec->v = v;
  ec->vcap = *vcap;
  *vcap = oldcap;
  ec->valid = true;
  return old;
}

static long find(const sf__evcache_t *ec, const char *name)
{
  size_t s = (size_t)hash(name) & (ec->nslots - 1);
  for (; ec->slots[s]; s = (s + 1) & (ec->nslots - 1))
    if (strcmp(ec->names[ec->slots[s] - 1], name) == 0)
      return (long)ec->slots[s] - 1;
  return -1;
}

bool sf__evcache_lookup(const sf__evcache_t *ec, const char *key, uint64_t gen,
                        const char *const *names, size_t n, sf_verdict_t *out)
{
  if (!ec->valid || ec->gen != gen || strcmp(ec->key, key) != 0)
    return false;
  size_t nfit = 0;
  for (size_t i = 0; i < n; i++) {
    long k = find(ec, names[i]);
    if (k < 0)
      return false;
    out[i] = ec->v[k];
    nfit += out[i].fit == SF_FIT_YES;
  }
  return nfit == ec->nfit;
}

bool sf__evcache_lookup_list(sf__evcache_t *ec, const char *key, uint64_t gen,
                             const char *const *names, size_t n, uint64_t list, sf_verdict_t *out)
{
  if (!ec->valid || ec->gen != gen || strcmp(ec->key, key) != 0)
    return false;
  if (list == 0 || list != ec->map_list || n != ec->nmap) {
    ec->map_list = 0;
    sf_xgrow(&ec->map, &ec->capmap, n ? n : 1, sizeof *ec->map);
    for (size_t i = 0; i < n; i++) {
      long k = find(ec, names[i]);
      if (k < 0)
        return false;
      ec->map[i] = (uint32_t)k;
    }
    ec->nmap = n;
    ec->map_list = list;
  }
  size_t nfit = 0;
  for (size_t i = 0; i < n; i++) { /* what a prioritize reads: not the whole verdict */
    const sf_verdict_t *from = &ec->v[ec->map[i]];
    out[i].fit = from->fit;
    out[i].raw = from->raw;
    out[i].score = from->score;
    nfit += from->fit == SF_FIT_YES;
  }
  return nfit == ec->nfit;
}
