/*
 * The pods the cluster knows, for two things the FGD simulator has and
 * ResourceSlices do not give: the CPU and memory in use on each node, and
 * the CPU of the pod behind each claim of the learned mix.
 *
 * Watched pods are the non-terminal ones (fieldSelector
 * status.phase!=Succeeded,status.phase!=Failed, as kube-scheduler's own
 * informer). A pod is kept only while it is bound (spec.nodeName) or holds a
 * claim, and only as its key, its node, its requests (decode_pod.c sums them
 * as kube-scheduler's NodeResourcesFit does), its claims' keys, its creation
 * time and whether a controller owns it (what the defragmentation planner
 * asks of a pod): a Pod object is several kilobytes, a kept pod 48 bytes
 * plus one allocation holding its key and its claims' keys.
 *
 * Layout: pods in an array (swap-removed) keyed by "ns/name"; per node a
 * host slot with the sums over its bound pods (free slots are reused, so a
 * pod's host index stays valid); per claim the pod whose CPU its learned
 * shapes carry (the first pod seen that names it).
 *
 * Invariants (sf_cluster_pods_validate): a host's sums and count are the sums
 * over the pods whose host it is; an index node carries its host's sums as
 * the one allocation "pods on NAME" and its Node's allocatable amounts; a
 * claim's learned shapes were taught with the CPU sf__claim_cpu gives now
 * (every change to claim_pods is bracketed by taking the claim's shapes back
 * and teaching them again).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "decode_int.h"
#include "cluster_int.h"
#include "slicefit/cluster_defrag.h"

#define KEY_MAX 512
#define HOLDER_PREFIX "pods on "

void sf__pods_init(sf_cluster_t *c)
{
  sf_map_init(&c->pod_keys, c->hash_seed);
  sf_map_init(&c->host_keys, c->hash_seed);
  sf_map_init(&c->claim_pods, c->hash_seed);
}

static void pods_clear(sf_cluster_t *c)
{
  for (size_t i = 0; i < c->npods; i++)
    free(c->pods[i].key);
  for (size_t i = 0; i < c->nhosts; i++)
    free(c->hosts[i].name);
  c->npods = c->nhosts = c->nfree_hosts = 0;
  sf_map_dispose(&c->pod_keys);
  sf_map_dispose(&c->host_keys);
  sf_map_dispose(&c->claim_pods);
  sf__pods_init(c);
}

void sf__pods_free(sf_cluster_t *c)
{
  pods_clear(c);
  sf_map_dispose(&c->pod_keys);
  sf_map_dispose(&c->host_keys);
  sf_map_dispose(&c->claim_pods);
  free(c->pods);
  free(c->hosts);
  free(c->free_hosts);
}

/* ---- the index side ---- */

static const char *holder(const char *node, char *buf, size_t len)
{
  snprintf(buf, len, HOLDER_PREFIX "%s", node);
  return buf;
}

static const chost_t *host_get(const sf_cluster_t *c, const char *name)
{
  int32_t h = sf_map_get(&c->host_keys, name, strlen(name));
  return h >= 0 ? &c->hosts[h] : NULL;
}

void sf__host_unrecord(sf_cluster_t *c, const char *name)
{
  char buf[KEY_MAX];
  sf_alloc_id a = sf_index_alloc_find(c->idx, holder(name, buf, sizeof buf));
  if (a >= 0 && sf_index_alloc_remove(c->idx, a) == 0)
    c->npod_allocs--;
}

size_t sf_cluster_pod_allocations(const sf_cluster_t *c)
{
  return c->npod_allocs;
}

void sf__host_sync(sf_cluster_t *c, const char *name)
{
  sf_node_id id = sf_index_node_find(c->idx, name);
  if (id < 0)
    return;
  const cnode_t *n = sf__node_get(c, name);
  int64_t cpu = 0, mem = 0;
  sf_index_node_cpu_mem(c->idx, id, &cpu, NULL, &mem, NULL);
  if (cpu != (n ? n->cpu_milli : 0) || mem != (n ? n->mem_bytes : 0)) {
    sf_node_spec_t spec = {name, n ? n->cpu_milli : 0, n ? n->mem_bytes : 0};
    sf_index_node_upsert(c->idx, &spec, &id);
  }
  const chost_t *h = host_get(c, name);
  char buf[KEY_MAX];
  sf__host_unrecord(c, name);
  holder(name, buf, sizeof buf);
  if (h && (h->cpu_milli > 0 || h->mem_bytes > 0) &&
      sf_index_alloc_add(c->idx, buf, id, h->cpu_milli, h->mem_bytes, NULL, 0, SF_ALLOC_FORCE,
                         NULL) == 0)
    c->npod_allocs++;
}

/* ---- hosts ---- */

static int32_t host_ref(sf_cluster_t *c, const char *name)
{
  int32_t h = sf_map_get(&c->host_keys, name, strlen(name));
  if (h >= 0)
    return h;
  if (c->nfree_hosts > 0) {
    h = c->free_hosts[--c->nfree_hosts];
  } else {
    sf_xgrow(&c->hosts, &c->caphosts, c->nhosts + 1, sizeof(*c->hosts));
    h = (int32_t)c->nhosts++;
  }
  c->hosts[h] = (chost_t){sf_xstrdup(name), 0, 0, 0};
  sf_map_put(&c->host_keys, name, strlen(name), h);
  return h;
}

/* Adds (sign +1) or takes back (-1) a pod's requests on its host; a host left empty is freed. */
static void host_add(sf_cluster_t *c, const cpod_t *p, int sign)
{
  chost_t *h = &c->hosts[p->host];
  h->cpu_milli += sign * p->cpu_milli;
  h->mem_bytes += sign * p->mem_bytes;
  h->npods = sign > 0 ? h->npods + 1 : h->npods - 1;
  if (h->npods > 0)
    return;
  sf_map_del(&c->host_keys, h->name, strlen(h->name));
  free(h->name);
  *h = (chost_t){NULL, 0, 0, 0};
  sf_xgrow(&c->free_hosts, &c->capfree_hosts, c->nfree_hosts + 1, sizeof(*c->free_hosts));
  c->free_hosts[c->nfree_hosts++] = p->host;
}

/* ---- claims' CPU in the learned mix ---- */

const char *sf__pod_claim(const cpod_t *p, size_t i)
{
  const char *k = p->key;
  for (size_t n = 0; n <= i; n++)
    k += strlen(k) + 1;
  return k;
}

/* The key of the pod's first claim, or NULL when it names none. */
static const char *first_claim(const cpod_t *p)
{
  return p->nclaims > 0 ? sf__pod_claim(p, 0) : NULL;
}

uint64_t sf_cluster_pod_changes(const sf_cluster_t *c)
{
  return c->pod_changes;
}

int64_t sf__claim_cpu(const sf_cluster_t *c, const char *claim_key)
{
  int32_t i = sf_map_get(&c->claim_pods, claim_key, strlen(claim_key));
  return i >= 0 ? c->pods[i].cpu_milli : 0;
}

/* Takes back (-1) or teaches again (+1) the learned shapes of the stored claim `key`. */
static void relearn(sf_cluster_t *c, const char *key, int sign)
{
  const sf_object_t *o = sf__store_get(&c->stores[SF_KIND_RESOURCE_CLAIM], key);
  if (o)
    sf__claim_learn(c, o, sign);
}

/* Pod i carries its claim's CPU unless another pod does already; false when it does not. */
static bool claim_take(sf_cluster_t *c, size_t i)
{
  const char *k = first_claim(&c->pods[i]);
  if (!k || sf_map_get(&c->claim_pods, k, strlen(k)) >= 0)
    return false;
  relearn(c, k, -1);
  sf_map_put(&c->claim_pods, k, strlen(k), (int32_t)i);
  relearn(c, k, +1);
  return true;
}

/* Pod i no longer carries its claim's CPU (if it did). */
static void claim_drop(sf_cluster_t *c, size_t i)
{
  const char *k = first_claim(&c->pods[i]);
  if (!k || sf_map_get(&c->claim_pods, k, strlen(k)) != (int32_t)i)
    return;
  relearn(c, k, -1);
  sf_map_del(&c->claim_pods, k, strlen(k));
  relearn(c, k, +1);
}

/* ---- pods ---- */

/*
 * A kept pod's record in `rec`: its key, then the keys of the claims it
 * names (its resourceClaims as named or as generated, deduplicated, then its
 * extended resources' claim), each NUL-terminated. Returns the record's
 * length; *nclaims the claims' count. A key that does not fit is left out.
 */
static size_t pod_record(const sf_pod_t *p, const char *key, char *rec, size_t cap, uint16_t *nclaims)
{
  const char *ns = p->meta.ns ? p->meta.ns : "";
  size_t len = (size_t)snprintf(rec, cap, "%s", key) + 1;
  *nclaims = 0;
  for (size_t i = 0; i <= p->nclaims && *nclaims < UINT16_MAX; i++) {
    const char *name = i < p->nclaims ? p->claims[i].claim_name : p->ext_claim;
    for (size_t k = 0; i < p->nclaims && !name && k < p->nstatuses; k++)
      if (!strcmp(p->statuses[k].name, p->claims[i].name))
        name = p->statuses[k].claim_name;
    if (!name || !*name)
      continue;
    int n = snprintf(rec + len, cap - len, "%s/%s", ns, name);
    if (n < 0 || (size_t)n >= cap - len)
      continue;
    const char *seen = rec + strlen(rec) + 1;
    for (uint16_t k = 0; k < *nclaims && strcmp(seen, rec + len); k++)
      seen += strlen(seen) + 1;
    if (seen < rec + len)
      continue;
    len += (size_t)n + 1;
    (*nclaims)++;
  }
  return len;
}

/* The record's length: its key and its claims' keys with their NULs. */
static size_t record_len(const cpod_t *p)
{
  if (p->nclaims == 0)
    return strlen(p->key) + 1;
  const char *last = sf__pod_claim(p, p->nclaims - 1u);
  return (size_t)(last - p->key) + strlen(last) + 1;
}

/* Removes pods[i]: its host's sums, its claim's CPU, its slot (the last pod moves there). */
static void pod_remove(sf_cluster_t *c, size_t i, char *touched, size_t len)
{
  cpod_t *p = &c->pods[i];
  c->pod_changes++;
  touched[0] = '\0';
  if (p->host >= 0) {
    snprintf(touched, len, "%s", c->hosts[p->host].name);
    host_add(c, p, -1);
  }
  claim_drop(c, i);
  sf_map_del(&c->pod_keys, p->key, strlen(p->key));
  free(p->key);
  if (i != --c->npods) {
    c->pods[i] = c->pods[c->npods];
    const cpod_t *m = &c->pods[i];
    const char *k = first_claim(m);
    sf_map_put(&c->pod_keys, m->key, strlen(m->key), (int32_t)i);
    if (k && sf_map_get(&c->claim_pods, k, strlen(k)) == (int32_t)c->npods)
      sf_map_put(&c->claim_pods, k, strlen(k), (int32_t)i);
  }
}

void sf__pod_del(sf_cluster_t *c, const char *key)
{
  int32_t i = sf_map_get(&c->pod_keys, key, strlen(key));
  char node[KEY_MAX];
  if (i < 0)
    return;
  pod_remove(c, (size_t)i, node, sizeof node);
  if (node[0])
    sf__host_sync(c, node);
}

/* Records pod `p` (not yet known) as `rec`; returns its host's name in node ("" when not bound). */
static void pod_add(sf_cluster_t *c, const sf_pod_t *p, const cpod_t *rec, size_t rlen, char *node,
                    size_t len)
{
  sf_xgrow(&c->pods, &c->cappods, c->npods + 1, sizeof(*c->pods));
  size_t i = c->npods++;
  c->pod_changes++;
  c->pods[i] = *rec;
  c->pods[i].key = sf_xmalloc(rlen);
  memcpy(c->pods[i].key, rec->key, rlen);
  sf_map_put(&c->pod_keys, rec->key, strlen(rec->key), (int32_t)i);
  node[0] = '\0';
  if (p->node_name) {
    c->pods[i].host = host_ref(c, p->node_name);
    host_add(c, &c->pods[i], +1);
    snprintf(node, len, "%s", p->node_name);
  }
  claim_take(c, i);
}

/* Is the kept pod `o` the same as the record `n`, on the same node? */
static bool pod_same(const sf_cluster_t *c, const cpod_t *o, const cpod_t *n, size_t rlen,
                     const char *node_name)
{
  const char *node = o->host >= 0 ? c->hosts[o->host].name : NULL;
  bool same_node = node && node_name ? !strcmp(node, node_name) : node == node_name;
  return same_node && o->nclaims == n->nclaims && record_len(o) == rlen &&
         !memcmp(o->key, n->key, rlen) && o->cpu_milli == n->cpu_milli &&
         o->mem_bytes == n->mem_bytes && o->created_s == n->created_s &&
         o->controller == n->controller;
}

void sf__pod_set(sf_cluster_t *c, const sf_pod_t *p)
{
  char key[KEY_MAX], rbuf[4 * KEY_MAX], before[KEY_MAX] = "", after[KEY_MAX] = "";
  sf__obj_key(&p->meta, key, sizeof key);
  cpod_t rec = {rbuf, p->cpu_milli, p->mem_bytes, sf_rfc3339_seconds(p->created), -1,
                0,    p->controller};
  size_t rlen = pod_record(p, key, rbuf, sizeof rbuf, &rec.nclaims);
  int32_t i = sf_map_get(&c->pod_keys, key, strlen(key));
  /* A pod whose node, requests, claims and owner are unchanged (a status update) costs a compare. */
  if (i >= 0 && !p->terminal && pod_same(c, &c->pods[i], &rec, rlen, p->node_name))
    return;
  if (i >= 0)
    pod_remove(c, (size_t)i, before, sizeof before);
  if (!p->terminal && (p->node_name || rec.nclaims > 0))
    pod_add(c, p, &rec, rlen, after, sizeof after);
  if (before[0])
    sf__host_sync(c, before);
  if (after[0] && strcmp(before, after))
    sf__host_sync(c, after);
}

void sf__pods_install(sf_cluster_t *c, sf_object_t **objs, size_t n, bool merge)
{
  char **nodes = sf_xcalloc(c->nhosts + 1, sizeof(*nodes));
  size_t nn = 0;
  for (size_t h = 0; h < c->nhosts; h++)
    if (c->hosts[h].name)
      nodes[nn++] = sf_xstrdup(c->hosts[h].name);
  if (!merge) {
    /* Every claim's CPU may change: the mix is rebuilt from every claim before its next use. */
    pods_clear(c);
    c->mix_dirty = true;
  }
  for (size_t i = 0; i < n; i++) {
    sf__pod_set(c, &objs[i]->u.pod);
    sf_object_free(objs[i]);
  }
  /* Nodes that lost every pod, and those that gained some, come in line with their sums. */
  for (size_t k = 0; k < nn; k++) {
    sf__host_sync(c, nodes[k]);
    free(nodes[k]);
  }
  for (size_t h = 0; h < c->nhosts; h++)
    if (c->hosts[h].name)
      sf__host_sync(c, c->hosts[h].name);
  free(nodes);
}

/* ---- the check ---- */

static int bad(char *err, size_t len, const char *what, const char *node, int64_t want, int64_t have)
{
  if (err && len)
    snprintf(err, len, "node %s: %s is %lld, recomputed %lld", node, what, (long long)have,
             (long long)want);
  return SF_EINVAL;
}

int sf_cluster_pods_validate(const sf_cluster_t *c, char *err, size_t errlen)
{
  int64_t *cpu = sf_xcalloc(c->nhosts + 1, sizeof(*cpu)),
          *mem = sf_xcalloc(c->nhosts + 1, sizeof(*mem));
  uint32_t *cnt = sf_xcalloc(c->nhosts + 1, sizeof(*cnt));
  int r = 0;
  size_t nalloc = 0;
  for (size_t i = 0; i < c->npods; i++) {
    const cpod_t *p = &c->pods[i];
    if (p->host < 0)
      continue;
    cpu[p->host] += p->cpu_milli;
    mem[p->host] += p->mem_bytes;
    cnt[p->host]++;
  }
  for (size_t h = 0; h < c->nhosts && r == 0; h++) {
    const chost_t *x = &c->hosts[h];
    if (!x->name) {
      if (cnt[h])
        r = bad(err, errlen, "a freed slot's pod count", "?", cnt[h], 0);
      continue;
    }
    if (x->cpu_milli != cpu[h])
      r = bad(err, errlen, "CPU requested", x->name, cpu[h], x->cpu_milli);
    else if (x->mem_bytes != mem[h])
      r = bad(err, errlen, "memory requested", x->name, mem[h], x->mem_bytes);
    else if (x->npods != cnt[h])
      r = bad(err, errlen, "the pod count", x->name, cnt[h], x->npods);
  }
  for (sf_node_id id = 0; r == 0 && id < sf_index_node_end(c->idx); id++) {
    if (!sf_index_node_live(c->idx, id))
      continue;
    const char *name = sf_index_node_name(c->idx, id);
    const chost_t *h = host_get(c, name);
    const cnode_t *n = sf__node_get(c, name);
    int64_t ca, cu, ma, mu;
    sf_index_node_cpu_mem(c->idx, id, &ca, &cu, &ma, &mu);
    nalloc += h && (h->cpu_milli > 0 || h->mem_bytes > 0);
    if (cu != (h ? h->cpu_milli : 0))
      r = bad(err, errlen, "the index's CPU in use", name, h ? h->cpu_milli : 0, cu);
    else if (mu != (h ? h->mem_bytes : 0))
      r = bad(err, errlen, "the index's memory in use", name, h ? h->mem_bytes : 0, mu);
    else if (ca != (n ? n->cpu_milli : 0))
      r = bad(err, errlen, "the index's allocatable CPU", name, n ? n->cpu_milli : 0, ca);
    else if (ma != (n ? n->mem_bytes : 0))
      r = bad(err, errlen, "the index's allocatable memory", name, n ? n->mem_bytes : 0, ma);
  }
  if (r == 0 && nalloc != c->npod_allocs)
    r = bad(err, errlen, "the count of pods' allocations", "(all)", (int64_t)nalloc,
            (int64_t)c->npod_allocs);
  free(cpu);
  free(mem);
  free(cnt);
  return r;
}
