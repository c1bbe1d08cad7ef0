/*
 * The cluster: decoded Kubernetes objects by kind and name, projected into
 * the packing index (pools as devices, allocated claims as forced
 * allocations, taint rules as device taints).
 *
 * Every mutation is all-or-nothing. An object is decoded before anything
 * changes; the one later step that can fail, republishing a pool into the
 * index (two slices of a pool naming the same device, say), is undone by
 * restoring the previous objects and republishing again.
 */
#include <stdio.h>
#include <string.h>
#include "slicefit/log.h"
#include "slicefit/mix.h"
#include "decode_int.h"
#include "cluster_int.h"

_Static_assert((int)SF_OBJ_RESOURCE_SLICE == (int)SF_KIND_RESOURCE_SLICE, "kinds align");
_Static_assert((int)SF_OBJ_RESOURCE_CLAIM == (int)SF_KIND_RESOURCE_CLAIM, "kinds align");
_Static_assert((int)SF_OBJ_DEVICE_CLASS == (int)SF_KIND_DEVICE_CLASS, "kinds align");
_Static_assert((int)SF_OBJ_DEVICE_TAINT_RULE == (int)SF_KIND_DEVICE_TAINT_RULE, "kinds align");

#define KEY_MAX 512

sf_kind_t sf_kind_from_name(const char *kind)
{
  sf_obj_kind_t k = sf_obj_kind_from_name(kind);
  if (k == SF_OBJ_NODE)
    return SF_KIND_NODE;
  if (k == SF_OBJ_POD)
    return SF_KIND_POD;
  return k < (sf_obj_kind_t)SF_KIND_NODE ? (sf_kind_t)k : SF_KIND_UNKNOWN;
}

/* The decoder's kind of a cluster kind (they agree up to the taint rules). */
static sf_obj_kind_t obj_kind(sf_kind_t kind)
{
  return kind == SF_KIND_NODE ? SF_OBJ_NODE : kind == SF_KIND_POD ? SF_OBJ_POD : (sf_obj_kind_t)kind;
}

static sf_kind_t cluster_kind(sf_obj_kind_t kind)
{
  return kind == SF_OBJ_NODE ? SF_KIND_NODE : kind == SF_OBJ_POD ? SF_KIND_POD : (sf_kind_t)kind;
}

const char *sf_kind_name(sf_kind_t kind)
{
  return sf_obj_kind_name(obj_kind(kind));
}

/* ---- store ---- */

/* Appends `str` at buf[at], cut to fit len (len > 0); returns the new length. */
static size_t append(char *buf, size_t len, size_t at, const char *str)
{
  size_t l = strlen(str);
  if (l > len - 1 - at)
    l = len - 1 - at;
  memcpy(buf + at, str, l);
  buf[at + l] = '\0';
  return at + l;
}

size_t sf__obj_keylen(const sf_meta_t *m, char *buf, size_t len)
{
  size_t n = 0;
  buf[0] = '\0';
  if (m->ns && *m->ns)
    n = append(buf, len, append(buf, len, 0, m->ns), "/");
  return append(buf, len, n, m->name);
}

const char *sf__obj_key(const sf_meta_t *m, char *buf, size_t len)
{
  sf__obj_keylen(m, buf, len);
  return buf;
}

int32_t sf__store_slot(const store_t *s, const char *key, size_t klen)
{
  return sf_map_get(&s->keys, key, klen);
}

sf_object_t *sf__store_get(const store_t *s, const char *key)
{
  int32_t i = sf__store_slot(s, key, strlen(key));
  return i >= 0 ? s->objs[i] : NULL;
}

/* Puts `o` in the store, its slot in *slot; returns the object it replaces (or NULL). */
static sf_object_t *store_put(store_t *s, sf_object_t *o, size_t *slot)
{
  char key[KEY_MAX];
  size_t klen = sf__obj_keylen(&o->u.meta, key, sizeof key);
  int32_t i = sf_map_get(&s->keys, key, klen);
  if (i >= 0) {
    sf_object_t *old = s->objs[i];
    s->objs[i] = o;
    *slot = (size_t)i;
    return old;
  }
  size_t cap = s->cap;
  sf_xgrow(&s->objs, &s->cap, s->n + 1, sizeof(*s->objs));
  sf_xgrow(&s->ext, &cap, s->n + 1, sizeof(*s->ext));
  sf_map_put(&s->keys, key, klen, (int32_t)s->n);
  s->ext[s->n] = (slot_ext_t){NULL, 0};
  s->objs[s->n] = o;
  *slot = s->n++;
  return NULL;
}

/* Takes the object with `key` out of the store and returns it (or NULL); the last slot moves
 * into the hole: *moved is its new slot, or SIZE_MAX when none moved. */
static sf_object_t *store_take(store_t *s, const char *key, size_t *moved)
{
  size_t klen = strlen(key);
  int32_t v = sf_map_get(&s->keys, key, klen);
  *moved = SIZE_MAX;
  if (v < 0)
    return NULL;
  size_t i = (size_t)v;
  sf_object_t *o = s->objs[i];
  sf_map_del(&s->keys, key, klen);
  free(s->ext[i].places);
  if (i != --s->n) {
    char k2[KEY_MAX];
    s->objs[i] = s->objs[s->n];
    s->ext[i] = s->ext[s->n];
    sf_map_put(&s->keys, k2, sf__obj_keylen(&s->objs[i]->u.meta, k2, sizeof k2), (int32_t)i);
    *moved = i;
  }
  return o;
}

static void store_init(store_t *s, uint64_t hash_seed)
{
  memset(s, 0, sizeof *s);
  sf_map_init(&s->keys, hash_seed);
}

static void store_dispose(store_t *s)
{
  for (size_t i = 0; i < s->n; i++) {
    sf_object_free(s->objs[i]);
    free(s->ext[i].places);
  }
  free(s->objs);
  free(s->ext);
  sf_map_dispose(&s->keys);
  memset(s, 0, sizeof *s);
}

/* ---- lifecycle ---- */

sf_cluster_t *sf_cluster_create(const sf_policy_t *pol)
{
  return sf_cluster_create_seeded(pol, 0);
}

sf_cluster_t *sf_cluster_create_seeded(const sf_policy_t *pol, uint64_t hash_seed)
{
  sf_cluster_t *c = sf_xcalloc(1, sizeof(*c));
  if (pol)
    sf_policy_copy(&c->pol, pol);
  else
    sf_policy_init(&c->pol);
  c->hash_seed = hash_seed;
  c->idx = sf_index_create_seeded(hash_seed);
  sf_index_apply_policy(c->idx, &c->pol);
  c->cel = sf_cel_cache_create_seeded(hash_seed);
  c->packer = sf_packer_create();
  for (int k = 0; k < SF_KIND_COUNT; k++)
    store_init(&c->stores[k], hash_seed);
  sf_map_init(&c->pool_keys, hash_seed);
  c->node_refs = json_object();
  c->ignored = json_object();
  sf_map_init(&c->cset_keys, hash_seed);
  c->scratch = sf__arena_create();
  sf_map_init(&c->logged, hash_seed);
  sf_map_init(&c->node_keys, hash_seed);
  sf__pods_init(c);
  return c;
}

void sf_cluster_destroy(sf_cluster_t *c)
{
  if (!c)
    return;
  sf__pools_free(c);
  sf__nodes_free(c);
  sf_map_dispose(&c->node_keys);
  sf__pods_free(c);
  sf_map_dispose(&c->pool_keys);
  json_decref(c->node_refs);
  json_decref(c->ignored);
  sf__claim_pools_free(c);
  sf__arena_destroy(c->scratch);
  free(c->lclaims);
  free(c->name_ids);
  for (int k = 0; k < SF_KIND_COUNT; k++)
    store_dispose(&c->stores[k]);
  sf_map_dispose(&c->logged);
  sf_packer_destroy(c->packer);
  sf_cel_cache_destroy(c->cel);
  sf_index_destroy(c->idx);
  sf_policy_dispose(&c->pol);
  free(c);
}

void sf_cluster_set_policy(sf_cluster_t *c, const sf_policy_t *pol)
{
  sf_policy_t next;
  sf_policy_copy(&next, pol);
  sf_policy_dispose(&c->pol);
  c->pol = next;
  sf_index_apply_policy(c->idx, &c->pol);
  c->mix_dirty = true;
}

#define GATE_BINDING_CONDITIONS 36 /* DRADeviceBindingConditions: alpha (off) 1.34-1.35, beta (on) */

bool sf__gate_binding_conditions(const sf_cluster_t *c)
{
  return c->kube_minor == 0 || c->kube_minor >= GATE_BINDING_CONDITIONS;
}

void sf_cluster_set_kube_minor(sf_cluster_t *c, int minor)
{
  bool was = sf__gate_binding_conditions(c);
  char err[SF_ERR_MAX];
  c->kube_minor = minor > 0 ? minor : 0;
  if (was != sf__gate_binding_conditions(c))
    (void)sf__pools_sync_all(c, err, sizeof err); /* returns 0: invalid pools are recorded */
}

int sf_cluster_kube_minor(const sf_cluster_t *c)
{
  return c->kube_minor;
}

const sf_policy_t *sf_cluster_policy(const sf_cluster_t *c)
{
  return &c->pol;
}
sf_index_t *sf_cluster_index(sf_cluster_t *c)
{
  return c->idx;
}
size_t sf_cluster_count(const sf_cluster_t *c, sf_kind_t kind)
{
  if (kind == SF_KIND_NODE)
    return c->ncnodes;
  if (kind == SF_KIND_POD)
    return c->npods;
  return kind > SF_KIND_UNKNOWN && kind < SF_KIND_COUNT ? c->stores[kind].n : 0;
}

size_t sf_cluster_invalid_pools(const sf_cluster_t *c)
{
  return c->ninvalid;
}

const sf_cel_prog_t *sf__compile(sf_cluster_t *c, const char *text)
{
  const sf_cel_prog_t *p = sf_cel_acquire(c->cel, text);
  const char *why = sf_cel_prog_error(p);
  if (why && sf_map_get(&c->logged, text, strlen(text)) < 0) {
    if (sf_map_count(&c->logged) >= 4096)
      sf_map_clear(&c->logged); /* bounded */
    sf_map_put(&c->logged, text, strlen(text), 1);
    /* Say what the plan answers for it (cluster_plan.c selectors): DRA itself fails a claim
     * whose selector has no cel field or is not valid CEL, so slicefit says no on every node;
     * only what slicefit cannot evaluate leaves nodes unsure. */
    char qe[512], qw[512];
    const char *msg = !*text                   ? "selector has no cel field, nodes answer no"
                      : sf_cel_prog_invalid(p) ? "selector is not valid CEL, nodes answer no"
                                               : "selector not supported, nodes stay unsure";
    sf_log_warn(msg, "expr=%s reason=%s", sf_log_quote(qe, sizeof qe, text),
                sf_log_quote(qw, sizeof qw, why));
  }
  return p;
}

/* ---- projecting one object into the index ---- */

/* Undoes or does the index side of `o` entering (on) or leaving (!on) the store. */
static int project(sf_cluster_t *c, sf_object_t *o, bool on, char *err, size_t errlen)
{
  switch (o->kind) {
  case SF_OBJ_RESOURCE_SLICE: return sf__pool_sync(c, &o->u.slice, err, errlen);
  case SF_OBJ_RESOURCE_CLAIM:
    if (on)
      sf__claim_record(c, &o->u.claim);
    else
      sf__claim_unrecord(c, &o->u.meta);
    return 0;
  case SF_OBJ_DEVICE_CLASS:
    for (size_t i = 0; on && i < o->u.dclass.nselectors; i++)
      sf_cel_release(c->cel, sf__compile(c, o->u.dclass.selectors[i]));
    return 0;
  case SF_OBJ_DEVICE_TAINT_RULE:
    sf_index_taint_rule_clear(c->idx, o->u.meta.name);
    if (on)
      sf__rule_apply(c, &o->u.rule);
    return 0;
  default: return 0;
  }
}

/* Swaps `o` (may be NULL: delete) for the stored object `key`; *old gets the displaced one. */
static void swap_in(sf_cluster_t *c, sf_kind_t kind, const char *key, sf_object_t *o,
                    sf_object_t **old)
{
  store_t *s = &c->stores[kind];
  size_t slot;
  bool claim = kind == SF_KIND_RESOURCE_CLAIM;
  int32_t was = claim ? sf__store_slot(s, key, strlen(key)) : -1;
  if (was >= 0)
    sf__claim_pools_del(c, (size_t)was);
  *old = o ? store_put(s, o, &slot) : store_take(s, key, &slot);
  if (claim && o)
    sf__claim_pools_add(c, slot);
  else if (claim && slot != SIZE_MAX)
    sf__claim_pools_moved(c, slot);
  if (kind != SF_KIND_RESOURCE_SLICE)
    return;
  if (*old)
    sf__pool_del_slice(c, *old);
  if (o)
    sf__pool_add_slice(c, o);
}

/* Replaces object `key` of `kind` by `o` (NULL deletes), all-or-nothing. */
static int change(sf_cluster_t *c, sf_kind_t kind, const char *key, sf_object_t *o, char *err,
                  size_t errlen)
{
  sf_object_t *old = NULL, *back = NULL;
  swap_in(c, kind, key, o, &old);
  sf_object_t *cur = o ? o : old;
  if (!cur)
    return 0;
  /* Allocations come off before devices are republished and go back after: a device may
   * change under them (exclusive to shared, say), and the index keeps allocations of its
   * devices as they were recorded. Only the claims on the slice's pools (before and after)
   * can be under a changing device, so a slice event re-records those alone. */
  bool moved = kind == SF_KIND_RESOURCE_SLICE && old && o &&
               (strcmp(old->u.slice.driver, o->u.slice.driver) ||
                strcmp(old->u.slice.pool, o->u.slice.pool));
  if (kind == SF_KIND_RESOURCE_SLICE) {
    sf__claims_unrecord_pool(c, &cur->u.slice);
    if (moved)
      sf__claims_unrecord_pool(c, &old->u.slice);
  }
  int r = project(c, cur, o != NULL, err, errlen);
  if (r == 0 && kind == SF_KIND_RESOURCE_SLICE) {
    /* A slice moved to another pool leaves its old pool to republish. */
    if (moved)
      r = sf__pool_sync(c, &old->u.slice, err, errlen);
    if (r == 0) {
      sf__claims_record_pool(c, &cur->u.slice);
      if (moved)
        sf__claims_record_pool(c, &old->u.slice);
      sf__rules_apply_all(c);
    }
  }
  if (r < 0) {
    /* Only republishing a pool fails: put the slices back and republish again. */
    swap_in(c, kind, key, old, &back); /* back == o */
    sf__pool_sync(c, &cur->u.slice, NULL, 0);
    if (old)
      sf__pool_sync(c, &old->u.slice, NULL, 0);
    sf__claims_record_all(c);
    sf__rules_apply_all(c);
    sf_object_free(back);
    return r;
  }
  /* A claim modified with the same spec (its status changed) would take back from the learned
   * mix what it then teaches again: the mix is a canonical multiset, so both are skipped. */
  if (kind == SF_KIND_RESOURCE_CLAIM &&
      !(old && o && sf__claim_spec_equal(&old->u.claim.spec, &o->u.claim.spec))) {
    if (old)
      sf__claim_learn(c, old, -1);
    if (o)
      sf__claim_learn(c, o, +1);
  } else if (kind == SF_KIND_DEVICE_CLASS) {
    c->mix_dirty = true;
  }
  if (kind == SF_KIND_RESOURCE_CLAIM) {
    /* A claim that gains an allocation was bound; one that loses it, or goes, left. */
    bool was = old && old->u.claim.allocated, now = o && o->u.claim.allocated;
    if (was != now)
      sf_mix_churn(c->idx, was);
  }
  sf_object_free(old);
  return 0;
}

static int kind_of(sf_kind_t kind, const json_t *obj, char *err, size_t errlen, sf_kind_t *out)
{
  *out = kind;
  if (kind != SF_KIND_UNKNOWN)
    return 0;
  const char *name = json_string_value(json_object_get(obj, "kind"));
  *out = sf_kind_from_name(name);
  if (*out != SF_KIND_UNKNOWN)
    return 0;
  if (err && errlen)
    snprintf(err, errlen, "kind: '%s' is not tracked", name ? name : "");
  return SF_EINVAL;
}

int sf_cluster_apply(sf_cluster_t *c, sf_kind_t kind, const json_t *obj, char *err, size_t errlen)
{
  sf_object_t *o = NULL;
  char key[KEY_MAX];
  int r = kind_of(kind, obj, err, errlen, &kind);
  if (r < 0)
    return r;
  if ((r = sf_decode(obj, obj_kind(kind), &o, err, errlen)) < 0) {
    c->rejected[kind]++;
    return r;
  }
  if (kind == SF_KIND_NODE) {
    if (sf__node_set(c, &o->u.node))
      sf__pools_sync_reaching(c);
    sf_object_free(o);
    return 0;
  }
  if (kind == SF_KIND_POD) {
    sf__pod_set(c, &o->u.pod);
    sf_object_free(o);
    return 0;
  }
  /* A claim re-applied loses its old allocation in sf__claim_record, before the new one. */
  return change(c, kind, sf__obj_key(&o->u.meta, key, sizeof key), o, err, errlen);
}

int sf_cluster_delete(sf_cluster_t *c, sf_kind_t kind, const json_t *obj, char *err, size_t errlen)
{
  sf_meta_t m;
  char key[KEY_MAX];
  int r = kind_of(kind, obj, err, errlen, &kind);
  if (r < 0)
    return r;
  if ((r = sf_decode_meta(obj, &m, err, errlen)) < 0)
    return r;
  if (kind == SF_KIND_NODE) {
    if (sf__node_del(c, m.name))
      sf__pools_sync_reaching(c);
    return 0;
  }
  sf__obj_key(&m, key, sizeof key);
  if (kind == SF_KIND_POD) {
    sf__pod_del(c, key);
    return 0;
  }
  if (!sf__store_get(&c->stores[kind], key))
    return 0;
  return change(c, kind, key, NULL, err, errlen);
}

/* ---- relists ---- */

/* Does the index side of a whole kind going from store `from` to store `to`. */
static int reproject(sf_cluster_t *c, sf_kind_t kind, store_t *from, store_t *to, char *err,
                     size_t errlen)
{
  int r = 0;
  if (kind == SF_KIND_RESOURCE_CLAIM)
    sf__claim_pools_reset(c);
  for (size_t i = 0; i < from->n; i++) {
    sf_object_t *o = from->objs[i];
    if (kind == SF_KIND_RESOURCE_SLICE)
      sf__pool_del_slice(c, o);
    else if (kind == SF_KIND_RESOURCE_CLAIM)
      sf__claim_unrecord(c, &o->u.meta);
    else if (kind == SF_KIND_DEVICE_TAINT_RULE)
      sf_index_taint_rule_clear(c->idx, o->u.meta.name);
  }
  for (size_t i = 0; i < to->n; i++) {
    sf_object_t *o = to->objs[i];
    if (kind == SF_KIND_RESOURCE_SLICE)
      sf__pool_add_slice(c, o);
    else if (kind != SF_KIND_DEVICE_TAINT_RULE)
      project(c, o, true, NULL, 0);
    if (kind == SF_KIND_RESOURCE_CLAIM)
      sf__claim_pools_add(c, i); /* `to` is the store now */
  }
  if (kind == SF_KIND_RESOURCE_SLICE) {
    sf__claims_unrecord_all(c);
    r = sf__pools_sync_all(c, err, errlen);
    sf__claims_record_all(c);
  }
  if (kind == SF_KIND_RESOURCE_SLICE || kind == SF_KIND_DEVICE_TAINT_RULE)
    sf__rules_apply_all(c);
  if (kind == SF_KIND_RESOURCE_CLAIM || kind == SF_KIND_DEVICE_CLASS)
    c->mix_dirty = true;
  return r;
}

/* Frees the objects of `s` that `keep` does not hold, and the store itself. */
static void store_drop(store_t *s, const store_t *keep)
{
  char key[KEY_MAX];
  for (size_t i = 0; i < s->n; i++) {
    size_t klen = sf__obj_keylen(&s->objs[i]->u.meta, key, sizeof key);
    int32_t k = sf__store_slot(keep, key, klen);
    if (k < 0 || keep->objs[k] != s->objs[i])
      sf_object_free(s->objs[i]);
    free(s->ext[i].places);
  }
  s->n = 0;
  store_dispose(s);
}

/* Makes `objs` (stolen) the objects of `kind`, with the old ones too when `merge`. */
static int install(sf_cluster_t *c, sf_kind_t kind, sf_object_t **objs, size_t n, bool merge,
                   char *err, size_t errlen)
{
  store_t old = c->stores[kind], next;
  store_init(&next, c->hash_seed);
  size_t slot;
  for (size_t i = 0; merge && i < old.n; i++)
    store_put(&next, old.objs[i], &slot);
  for (size_t i = 0; i < n; i++) {
    sf_object_t *dis = store_put(&next, objs[i], &slot);
    char key[KEY_MAX];
    if (dis && sf__store_get(&old, sf__obj_key(&dis->u.meta, key, sizeof key)) != dis)
      sf_object_free(dis); /* a duplicate within the list: the later one wins */
  }
  c->stores[kind] = next;
  int r = reproject(c, kind, &old, &next, err, errlen);
  if (r < 0) {
    c->stores[kind] = old;
    reproject(c, kind, &next, &old, NULL, 0);
    store_drop(&next, &old);
    return r;
  }
  store_drop(&old, &c->stores[kind]);
  return 0;
}

/* The API's resource name of a tracked kind, as apiwatch names it ("resourceslices"). */
static const char *resource_of(sf_kind_t k, char *buf, size_t len)
{
  const char *name = sf_kind_name(k);
  size_t n = 0;
  for (; name[n] && n + 3 < len; n++)
    buf[n] = (char)(name[n] >= 'A' && name[n] <= 'Z' ? name[n] - 'A' + 'a' : name[n]);
  snprintf(buf + n, len - n, "%s", n && buf[n - 1] == 's' ? "es" : "s");
  return buf;
}

/* An object refused alone while the rest loads: logged as live mode logs it, and counted. */
static void reject(sf_cluster_t *c, sf_kind_t k, const json_t *it, const char *why)
{
  char res[64], qn[300], qe[SF_ERR_MAX + 64];
  const char *name = json_string_value(json_object_get(json_object_get(it, "metadata"), "name"));
  c->rejected[k]++;
  sf_log_warn("object rejected", "resource=%s name=%s error=%s", resource_of(k, res, sizeof res),
              sf_log_quote(qn, sizeof qn, name ? name : "?"), sf_log_quote(qe, sizeof qe, why));
}

/* Counts an item of a kind the cluster does not track (a ResourceClaimTemplate, a Namespace). */
static void ignore(sf_cluster_t *c, const json_t *it)
{
  const char *kind = json_string_value(json_object_get(it, "kind"));
  if (!kind || !*kind)
    kind = "(no kind)";
  json_t *n = json_object_get(c->ignored, kind);
  if (n == NULL && json_object_size(c->ignored) >= 64)
    kind = "(other kinds)"; /* a list's kinds come from its author: bounded */
  n = json_object_get(c->ignored, kind);
  json_object_set_new(c->ignored, kind, json_integer(json_integer_value(n) + 1));
}

/*
 * Item i of a list as `kind` (SF_KIND_UNKNOWN: by its "kind"). *out is NULL
 * for a kind the cluster does not track (counted as ignored) and, with
 * `each`, for an item that does not decode (rejected alone: reject()).
 */
static int decode_item(sf_cluster_t *c, const json_t *it, sf_kind_t kind, bool each, size_t i,
                       sf_object_t **out, char *err, size_t errlen)
{
  sf_kind_t k = kind ? kind : sf_kind_from_name(json_string_value(json_object_get(it, "kind")));
  char e[SF_ERR_MAX];
  int r;
  *out = NULL;
  if (k == SF_KIND_UNKNOWN) {
    ignore(c, it);
    return 0;
  }
  if ((r = sf_decode(it, obj_kind(k), out, e, sizeof e)) < 0 && each) {
    reject(c, k, it, strncmp(e, "(object)", 8) ? e : e + 8);
    return 0;
  }
  if (r < 0 && err && errlen)
    snprintf(err, errlen, "items[%zu]%s%s", i, strncmp(e, "(object)", 8) ? "." : "",
             strncmp(e, "(object)", 8) ? e : e + 8);
  return r;
}

int sf_cluster_decode_item(sf_cluster_t *c, const json_t *it, size_t i, bool each, sf_object_t **out,
                           char *err, size_t errlen)
{
  return decode_item(c, it, SF_KIND_UNKNOWN, each, i, out, err, errlen);
}

/* Decodes every item of `items` of `kind` (decode_item). */
static int decode_items(sf_cluster_t *c, const json_t *items, sf_kind_t kind, bool each,
                        sf_object_t ***out, size_t *n, char *err, size_t errlen)
{
  size_t len = json_array_size(items), i;
  sf_object_t **v = sf_xcalloc(len ? len : 1, sizeof(*v));
  json_t *it;
  int r = 0;
  *n = 0;
  json_array_foreach(items, i, it)
  {
    if ((r = decode_item(c, it, kind, each, i, &v[*n], err, errlen)) < 0)
      break;
    *n += v[*n] != NULL;
  }
  if (r < 0) {
    for (size_t k = 0; k < *n; k++)
      sf_object_free(v[k]);
    free(v);
    v = NULL;
    *n = 0;
  }
  *out = v;
  return r;
}

static void install_nodes(sf_cluster_t *c, sf_object_t **objs, size_t n, bool merge);

int sf_cluster_replace(sf_cluster_t *c, sf_kind_t kind, const json_t *items, char *err, size_t errlen)
{
  sf_object_t **objs = NULL;
  size_t n = 0;
  int r = SF_EINVAL;
  if (kind <= SF_KIND_UNKNOWN || kind >= SF_KIND_COUNT) {
    if (err && errlen)
      snprintf(err, errlen, "kind: a tracked kind is required");
    return r;
  }
  if (!json_is_array(items)) {
    if (err && errlen)
      snprintf(err, errlen, "items: expected an array");
    return r;
  }
  if ((r = decode_items(c, items, kind, false, &objs, &n, err, errlen)) < 0)
    return r;
  if (kind == SF_KIND_NODE || kind == SF_KIND_POD) {
    if (kind == SF_KIND_NODE)
      install_nodes(c, objs, n, false);
    else
      sf__pods_install(c, objs, n, false);
    free(objs);
    return 0;
  }
  r = install(c, kind, objs, n, false, err, errlen);
  free(objs);
  return r;
}

/* Makes the decoded Nodes objs[0..n) (freed here) the known Nodes, with the old ones too when
 * `merge`; the pools that reach nodes by selector follow. */
static void install_nodes(sf_cluster_t *c, sf_object_t **objs, size_t n, bool merge)
{
  bool changed = !merge || !c->nodes_tracked;
  if (!merge) {
    for (size_t i = 0; i < c->ncnodes; i++) {
      bool keep = false;
      for (size_t k = 0; k < n && !keep; k++)
        keep = !strcmp(objs[k]->u.node.meta.name, c->cnodes[i].name);
      if (!keep && sf__node_del(c, c->cnodes[i].name)) {
        changed = true;
        i--;
      }
    }
  }
  for (size_t i = 0; i < n; i++) {
    changed |= sf__node_set(c, &objs[i]->u.node);
    sf_object_free(objs[i]);
  }
  c->nodes_tracked = true;
  if (changed)
    sf__pools_sync_reaching(c);
}

/* Splits objs[0..n) by kind into per[kind] arrays (borrowed pointers). */
static void split(sf_object_t **objs, size_t n, sf_object_t ***per, size_t *cnt)
{
  for (size_t i = 0; i < n; i++) {
    sf_kind_t k = cluster_kind(objs[i]->kind);
    per[k][cnt[k]++] = objs[i];
  }
}

static int load_list(sf_cluster_t *c, const json_t *list, bool each, char *err, size_t errlen)
{
  const json_t *items;
  sf_object_t **objs = NULL;
  size_t n = 0;
  int r = sf_decode_list_items(list, &items, err, errlen);
  if (r < 0)
    return r;
  if ((r = decode_items(c, items, SF_KIND_UNKNOWN, each, &objs, &n, err, errlen)) < 0)
    return r;
  r = sf_cluster_load_objects(c, objs, n, err, errlen);
  free(objs);
  return r;
}

int sf_cluster_load_objects(sf_cluster_t *c, sf_object_t **objs, size_t n, char *err, size_t errlen)
{
  sf_object_t **per[SF_KIND_COUNT] = {0};
  size_t cnt[SF_KIND_COUNT] = {0};
  int r = 0;
  for (int k = 1; k < SF_KIND_COUNT; k++)
    per[k] = sf_xcalloc(n ? n : 1, sizeof(**per));
  split(objs, n, per, cnt);
  /* Nodes first: which slices reach which node depends on them. */
  if (cnt[SF_KIND_NODE])
    install_nodes(c, per[SF_KIND_NODE], cnt[SF_KIND_NODE], true);
  /* Pods next (the nodes' CPU in use, the claims' CPU): they cannot fail. */
  if (cnt[SF_KIND_POD])
    sf__pods_install(c, per[SF_KIND_POD], cnt[SF_KIND_POD], true);
  /* Slices first (the only step that can fail, so nothing else is changed then), then the
   * classes, the claims whose allocations need the devices, and the taint rules. */
  static const sf_kind_t order[] = {SF_KIND_RESOURCE_SLICE, SF_KIND_DEVICE_CLASS,
                                    SF_KIND_RESOURCE_CLAIM, SF_KIND_DEVICE_TAINT_RULE};
  for (size_t i = 0; i < 4; i++) {
    sf_kind_t k = order[i];
    if (r < 0) {
      for (size_t j = 0; j < cnt[k]; j++)
        sf_object_free(per[k][j]);
      continue;
    }
    if (cnt[k])
      r = install(c, k, per[k], cnt[k], true, err, errlen);
  }
  for (int k = 1; k < SF_KIND_COUNT; k++)
    free(per[k]);
  return r;
}

int sf_cluster_load_list(sf_cluster_t *c, const json_t *list, char *err, size_t errlen)
{
  return load_list(c, list, false, err, errlen);
}

int sf_cluster_load_list_each(sf_cluster_t *c, const json_t *list, char *err, size_t errlen)
{
  return load_list(c, list, true, err, errlen);
}

uint64_t sf_cluster_rejected(const sf_cluster_t *c, sf_kind_t kind)
{
  return kind > SF_KIND_UNKNOWN && kind < SF_KIND_COUNT ? c->rejected[kind] : 0;
}

const json_t *sf_cluster_ignored(const sf_cluster_t *c)
{
  return c->ignored;
}
