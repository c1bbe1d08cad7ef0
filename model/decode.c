/*
 * Decoding shared by every kind: the arena, the JSON path kept for error
 * messages, typed field readers, metadata and the kind dispatch.
 *
 * Input becomes untrusted here: every reader checks the JSON type before it
 * looks at a value, and reports the path of the offending field. Strings are
 * borrowed from the source value (the decoded object keeps a reference);
 * arrays of decoded structs go to a bump arena freed in one call. Slices and
 * claims, the kinds that are many, are then copied into one exact block of
 * their own (decode_own.c).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "slicefit/decode.h"
#include "slicefit/quantity.h"
#include "decode_int.h"

/* ---- arena ---- */

/* A claim needs a few hundred bytes, a slice of 8 devices a few KiB: chunks start small and
 * double, so tens of thousands of stored claims do not each hold 4 KiB (and their malloc
 * stays in the allocator's fast small-size path). */
#define CHUNK_FIRST 480
#define CHUNK_MAX 65536
#define CLAIM_CHUNK_FIRST 1024

typedef struct chunk {
  struct chunk *next;
  size_t used, cap;
  max_align_t data[];
} chunk_t;

struct sf_arena {
  chunk_t *head;
  size_t first; /* the first chunk's size (0: CHUNK_FIRST) */
};

sf_arena_t *sf__arena_create(void)
{
  return sf_xcalloc(1, sizeof(sf_arena_t));
}

void sf__arena_destroy(sf_arena_t *a)
{
  if (!a)
    return;
  for (chunk_t *c = a->head, *n; c; c = n) {
    n = c->next;
    free(c);
  }
  free(a);
}

void sf__arena_reset(sf_arena_t *a)
{
  chunk_t *keep = a->head;
  if (!keep)
    return;
  for (chunk_t *c = keep->next, *n; c; c = n) {
    n = c->next;
    free(c);
  }
  keep->next = NULL;
  keep->used = 0;
}

/* Like sf__arena_alloc, without zeroing. */
static void *alloc_raw(sf_arena_t *a, size_t n)
{
  size_t al = sizeof(max_align_t);
  n = (n + al - 1) / al * al;
  chunk_t *c = a->head;
  if (!c || c->cap - c->used < n) {
    size_t first = a->first ? a->first : CHUNK_FIRST;
    size_t cap = !c ? first : c->cap < CHUNK_MAX ? 2 * c->cap : CHUNK_MAX;
    if (cap < n)
      cap = n;
    c = sf_xmalloc(sizeof(chunk_t) + cap);
    c->used = 0;
    c->cap = cap;
    c->next = a->head;
    a->head = c;
  }
  void *p = (char *)c->data + c->used;
  c->used += n;
  return p;
}

void *sf__arena_alloc(sf_arena_t *a, size_t n)
{
  void *p = alloc_raw(a, n);
  memset(p, 0, n);
  return p;
}

void *sf__arena_alloc_exact(sf_arena_t *a, size_t n)
{
  size_t al = sizeof(max_align_t), need = (n + al - 1) / al * al;
  chunk_t *c = a->head;
  if (c && c->cap - c->used >= need)
    return alloc_raw(a, n);
  c = sf_xmalloc(sizeof(chunk_t) + need);
  c->used = need;
  c->cap = need;
  c->next = a->head;
  a->head = c;
  return c->data;
}

char *sf__arena_join(sf_arena_t *a, const char *x, const char *y)
{
  size_t lx = strlen(x), ly = strlen(y);
  char *s = alloc_raw(a, lx + ly + 2);
  memcpy(s, x, lx);
  s[lx] = '/';
  memcpy(s + lx + 1, y, ly + 1);
  return s;
}

/* ---- path and errors ---- */

size_t sf__dpush(dctx_t *d, const char *key)
{
  if (d->depth < DPATH_DEPTH)
    d->seg[d->depth].key = key;
  return d->depth++;
}

size_t sf__dpush_i(dctx_t *d, size_t i)
{
  if (d->depth < DPATH_DEPTH) {
    d->seg[d->depth].key = NULL;
    d->seg[d->depth].i = i;
  }
  return d->depth++;
}

void sf__dpop(dctx_t *d, size_t len)
{
  d->depth = len;
}

/* "spec.devices[3].attributes['resource.kubernetes.io/pciBusID']" into buf. */
static void format_path(const dctx_t *d, char *buf, size_t len)
{
  size_t n = 0, depth = d->depth < DPATH_DEPTH ? d->depth : DPATH_DEPTH;
  buf[0] = '\0';
  for (size_t k = 0; k < depth && n < len; k++) {
    const char *key = d->seg[k].key;
    int w = !key               ? snprintf(buf + n, len - n, "[%zu]", d->seg[k].i)
            : strchr(key, '.') ? snprintf(buf + n, len - n, "['%s']", key)
                               : snprintf(buf + n, len - n, "%s%s", n ? "." : "", key);
    n += w > 0 ? (size_t)w : 0;
  }
  if (n == 0)
    snprintf(buf, len, "(object)");
}

int sf__dfail(dctx_t *d, const char *fmt, ...)
{
  char path[DPATH_MAX];
  if (!d->err || !d->errlen)
    return SF_EINVAL;
  format_path(d, path, sizeof path);
  int n = snprintf(d->err, d->errlen, "%s: ", path);
  if (n < 0 || (size_t)n >= d->errlen)
    return SF_EINVAL;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(d->err + n, d->errlen - (size_t)n, fmt, ap);
  va_end(ap);
  return SF_EINVAL;
}

const char *sf__dtype_name(const json_t *v)
{
  switch (json_typeof(v)) {
  case JSON_OBJECT: return "an object";
  case JSON_ARRAY: return "an array";
  case JSON_STRING: return "a string";
  case JSON_INTEGER: return "an integer";
  case JSON_REAL: return "a number";
  case JSON_TRUE:
  case JSON_FALSE: return "a boolean";
  default: return "null";
  }
}

/*
 * json_object_get through a view of the object's keys. Objects are read a few fields at a
 * time, each once: iterating a small object once and comparing names is several times cheaper
 * than hashing every key looked up (most of a slice's decoding time otherwise).
 */
static json_t *get(dctx_t *d, const json_t *obj, const char *key)
{
  dview_t *v = NULL;
  for (int i = 0; i < 2; i++)
    if (d->views[i].obj == obj)
      v = &d->views[i];
  if (!v) {
    if (!json_is_object(obj) || json_object_size(obj) > DVIEW_KEYS)
      return json_object_get(obj, key);
    v = &d->views[d->next_view++ & 1];
    v->obj = obj;
    v->n = 0;
    const char *k;
    json_t *e;
    json_object_foreach(unconst(obj), k, e)
    {
      v->keys[v->n] = k;
      v->vals[v->n++] = e;
    }
  }
  for (size_t i = 0; i < v->n; i++)
    if (v->keys[i][0] == key[0] && !strcmp(v->keys[i], key))
      return v->vals[i];
  return NULL;
}

/* Fetches `key`; 0 if absent or null, 1 if of type `t`, else fails at its path. */
static int field(dctx_t *d, const json_t *obj, const char *key, json_type t, const char *want,
                 json_t **out)
{
  json_t *v = get(d, obj, key);
  if (!v || json_is_null(v))
    return 0;
  if (json_typeof(v) == t || (t == JSON_TRUE && json_is_boolean(v))) {
    *out = v;
    return 1;
  }
  sf__dpush(d, key);
  return sf__dfail(d, "expected %s, got %s", want, sf__dtype_name(v));
}

/* ---- field readers ---- */

int sf__dstr(dctx_t *d, const json_t *obj, const char *key, const char **out)
{
  json_t *v = NULL;
  int r = field(d, obj, key, JSON_STRING, "a string", &v);
  if (r == 1)
    *out = json_string_value(v);
  return r;
}

int sf__dstr_req(dctx_t *d, const json_t *obj, const char *key, const char **out)
{
  const char *s = NULL;
  int r = sf__dstr(d, obj, key, &s);
  if (r < 0)
    return r;
  if (!s || !*s) {
    size_t at = sf__dpush(d, key);
    r = sf__dfail(d, "is required");
    sf__dpop(d, at);
    return r;
  }
  *out = s;
  return 1;
}

int sf__dint(dctx_t *d, const json_t *obj, const char *key, int64_t *out)
{
  json_t *v = NULL;
  int r = field(d, obj, key, JSON_INTEGER, "an integer", &v);
  if (r == 1)
    *out = (int64_t)json_integer_value(v);
  return r;
}

int sf__dbool(dctx_t *d, const json_t *obj, const char *key, bool *out)
{
  json_t *v = NULL;
  int r = field(d, obj, key, JSON_TRUE, "a boolean", &v);
  if (r == 1)
    *out = json_is_true(v);
  return r;
}

int sf__dobj(dctx_t *d, const json_t *obj, const char *key, const json_t **out)
{
  json_t *v = NULL;
  *out = NULL;
  int r = field(d, obj, key, JSON_OBJECT, "an object", &v);
  if (r == 1)
    *out = v;
  return r;
}

int sf__darr(dctx_t *d, const json_t *obj, const char *key, const json_t **out, size_t *n)
{
  json_t *v = NULL;
  *out = NULL;
  *n = 0;
  int r = field(d, obj, key, JSON_ARRAY, "an array", &v);
  if (r == 1) {
    *out = v;
    *n = json_array_size(v);
  }
  return r;
}

static int qty_text(dctx_t *d, const char *s, size_t len, sf_milli_t *out)
{
  int r = sf_quantity_parse_n(s, len, out);
  if (r == SF_ERANGE)
    return sf__dfail(d, "'%.*s' is out of range", (int)len, s);
  if (r < 0)
    return sf__dfail(d, "'%.*s' is not a quantity", (int)len, s);
  return 1;
}

static int dfield(dctx_t *d, const json_t *obj, const dfield_t *f)
{
  switch (f->kind) {
  case DF_STR: return sf__dstr(d, obj, f->key, f->out.s);
  case DF_STR_REQ: return sf__dstr_req(d, obj, f->key, f->out.s);
  case DF_INT: return sf__dint(d, obj, f->key, f->out.i);
  case DF_BOOL: return sf__dbool(d, obj, f->key, f->out.b);
  case DF_QTY: return sf__dqty(d, obj, f->key, f->out.q);
  }
  return 1;
}

int sf__dfields(dctx_t *d, const json_t *obj, const dfield_t *f)
{
  for (int r; f->key; f++)
    if ((r = dfield(d, obj, f)) < 0)
      return r;
  return 1;
}

int sf__dqty_val(dctx_t *d, const json_t *v, sf_milli_t *out)
{
  char buf[64];
  switch (json_typeof(v)) {
  case JSON_NULL: return 0;
  case JSON_STRING: return qty_text(d, json_string_value(v), json_string_length(v), out);
  case JSON_INTEGER:
    snprintf(buf, sizeof buf, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    return qty_text(d, buf, strlen(buf), out);
  case JSON_REAL:
    /* %.17g round-trips a double; the parser rejects what is finer than milli. */
    snprintf(buf, sizeof buf, "%.17g", json_real_value(v));
    return qty_text(d, buf, strlen(buf), out);
  default: return sf__dfail(d, "expected a quantity, got %s", sf__dtype_name(v));
  }
}

int sf__dqty(dctx_t *d, const json_t *obj, const char *key, sf_milli_t *out)
{
  json_t *v = get(d, obj, key);
  if (!v)
    return 0;
  size_t at = sf__dpush(d, key);
  int r = sf__dqty_val(d, v, out);
  if (r >= 0)
    sf__dpop(d, at);
  return r;
}

/* Reads the array `key` of `obj` into a new arena array of texts, `fn` each element at its path. */
static int texts(dctx_t *d, const json_t *obj, const char *key, const char ***out, size_t *n,
                 int (*fn)(dctx_t *d, const json_t *e, const char **out))
{
  const json_t *arr;
  int r = sf__darr(d, obj, key, &arr, n);
  if (r <= 0)
    return r;
  size_t at = sf__dpush(d, key);
  const char **v = sf__arena_alloc(d->a, *n * sizeof(*v));
  for (size_t i = 0; i < *n; i++) {
    size_t ati = sf__dpush_i(d, i);
    if ((r = fn(d, json_array_get(arr, i), &v[i])) < 0)
      return r;
    sf__dpop(d, ati);
  }
  sf__dpop(d, at);
  *out = v;
  return 1;
}

static int text(dctx_t *d, const json_t *e, const char **out)
{
  if (!json_is_string(e))
    return sf__dfail(d, "expected a string, got %s", sf__dtype_name(e));
  *out = json_string_value(e);
  return 1;
}

int sf__dstrs(dctx_t *d, const json_t *obj, const char *key, const char ***out, size_t *n)
{
  return texts(d, obj, key, out, n, text);
}

int sf__dmap(dctx_t *d, const json_t *obj, const char *key, size_t size, sf__dmember_fn fn,
             const void *ctx, void **out, size_t *n)
{
  const json_t *m;
  int r = sf__dobj(d, obj, key, &m);
  if (r <= 0)
    return r;
  size_t at = sf__dpush(d, key), i = 0;
  char *v = sf__arena_alloc(d->a, json_object_size(m) * size);
  const char *k;
  json_t *e;
  json_object_foreach(unconst(m), k, e)
  {
    size_t at2 = sf__dpush(d, k);
    if ((r = fn(d, ctx, k, e, v + i * size)) < 0)
      return r;
    i += (size_t)r;
    sf__dpop(d, at2);
  }
  sf__dpop(d, at);
  *out = v;
  *n = i;
  return 1;
}

static int qty_member(dctx_t *d, const void *ctx, const char *k, const json_t *v, void *out)
{
  sf_cap_request_t *q = out;
  int r = sf__dqty_val(d, v, &q->value);
  (void)ctx;
  if (r < 0)
    return r;
  q->name = k;
  return 1;
}

int sf__dqmap(dctx_t *d, const json_t *obj, const char *key, sf_cap_request_t **out, size_t *n)
{
  return sf__dmap(d, obj, key, sizeof(**out), qty_member, NULL, (void **)out, n);
}

static int selector(dctx_t *d, const json_t *s, const char **out)
{
  const json_t *cel;
  int r;
  if (!json_is_object(s))
    return sf__dfail(d, "expected an object, got %s", sf__dtype_name(s));
  if ((r = sf__dobj(d, s, "cel", &cel)) < 0)
    return r;
  if (!cel) { /* a selector type of a later release: kept as "", which the claim cannot use */
    *out = "";
    return 1;
  }
  sf__dpush(d, "cel");
  return sf__dstr_req(d, cel, "expression", out);
}

int sf__dselectors(dctx_t *d, const json_t *obj, const char *key, const char ***out, size_t *n)
{
  return texts(d, obj, key, out, n, selector);
}

int sf__dsub(dctx_t *d, const json_t *obj, const char *key, sf__delem_fn fn, void *out)
{
  const json_t *v;
  int r = sf__dobj(d, obj, key, &v);
  if (r <= 0)
    return r;
  size_t at = sf__dpush(d, key);
  if ((r = fn(d, v, out)) >= 0)
    sf__dpop(d, at);
  return r;
}

int sf__dsub_req(dctx_t *d, const json_t *obj, const char *key, sf__delem_fn fn, void *out)
{
  const json_t *v;
  int r = sf__dobj(d, obj, key, &v);
  if (r < 0)
    return r;
  size_t at = sf__dpush(d, key);
  if (!v)
    return sf__dfail(d, "is required");
  if ((r = fn(d, v, out)) >= 0)
    sf__dpop(d, at);
  return r;
}

int sf__deach(dctx_t *d, const json_t *obj, const char *key, size_t size, sf__delem_fn fn, char *out,
              size_t *n)
{
  const json_t *arr;
  size_t len;
  int r = sf__darr(d, obj, key, &arr, &len);
  if (r <= 0)
    return r;
  size_t at = sf__dpush(d, key);
  for (size_t i = 0; i < len; i++) {
    const json_t *e = json_array_get(arr, i);
    size_t ati = sf__dpush_i(d, i);
    if (!json_is_object(e))
      return sf__dfail(d, "expected an object, got %s", sf__dtype_name(e));
    if ((r = fn(d, e, out + *n * size)) < 0)
      return r;
    *n += 1;
    sf__dpop(d, ati);
  }
  sf__dpop(d, at);
  return 1;
}

int sf__darray(dctx_t *d, const json_t *obj, const char *key, size_t size, sf__delem_fn fn,
               void **out, size_t *n)
{
  size_t len = json_array_size(json_object_get(obj, key));
  char *v = sf__arena_alloc(d->a, len * size);
  *n = 0;
  int r = sf__deach(d, obj, key, size, fn, v, n);
  if (r > 0)
    *out = v;
  return r;
}

int sf__dtaint(dctx_t *d, const json_t *t, void *taint)
{
  sf_taint_t *out = taint;
  const char *eff = NULL;
  int r;
  if (!json_is_object(t))
    return sf__dfail(d, "expected an object, got %s", sf__dtype_name(t));
  out->value = "";
  if ((r = sf__dfields(d, t,
                       (const dfield_t[]){DSTR_REQ("key", &out->key), DSTR("value", &out->value),
                                          DSTR("effect", &eff), DEND})) < 0)
    return r;
  out->effect = sf__deffect(eff);
  return 1;
}

sf_taint_effect_t sf__deffect(const char *eff)
{
  if (eff && !strcmp(eff, "NoSchedule"))
    return SF_TAINT_NOSCHEDULE;
  if (eff && !strcmp(eff, "NoExecute"))
    return SF_TAINT_NOEXECUTE;
  return SF_TAINT_NONE;
}

/* ---- metadata and dispatch ---- */

int sf__decode_meta(dctx_t *d, const json_t *j, sf_meta_t *m)
{
  const json_t *md;
  int r = sf__dobj(d, j, "metadata", &md);
  if (r < 0)
    return r;
  m->ns = m->uid = m->rv = "";
  if (!md) {
    sf__dpush(d, "metadata");
    return sf__dfail(d, "is required");
  }
  size_t at = sf__dpush(d, "metadata");
  if ((r = sf__dfields(d, md,
                       (const dfield_t[]){DSTR_REQ("name", &m->name), DSTR("namespace", &m->ns),
                                          DSTR("uid", &m->uid), DSTR("resourceVersion", &m->rv),
                                          DEND})) < 0)
    return r;
  sf__dpop(d, at);
  return 1;
}

static const char *const kind_names[SF_OBJ_COUNT] = {[SF_OBJ_RESOURCE_SLICE] = "ResourceSlice",
                                                     [SF_OBJ_RESOURCE_CLAIM] = "ResourceClaim",
                                                     [SF_OBJ_DEVICE_CLASS] = "DeviceClass",
                                                     [SF_OBJ_DEVICE_TAINT_RULE] = "DeviceTaintRule",
                                                     [SF_OBJ_CLAIM_TEMPLATE] = "ResourceClaimTemplate",
                                                     [SF_OBJ_POD] = "Pod",
                                                     [SF_OBJ_NODE] = "Node"};

sf_obj_kind_t sf_obj_kind_from_name(const char *name)
{
  for (int k = 1; name && k < SF_OBJ_COUNT; k++)
    if (!strcmp(kind_names[k], name))
      return (sf_obj_kind_t)k;
  return SF_OBJ_UNKNOWN;
}

const char *sf_obj_kind_name(sf_obj_kind_t kind)
{
  return kind > SF_OBJ_UNKNOWN && kind < SF_OBJ_COUNT ? kind_names[kind] : "Unknown";
}

static int dispatch(dctx_t *d, const json_t *j, sf_object_t *o)
{
  switch (o->kind) {
  case SF_OBJ_RESOURCE_SLICE: return sf__decode_slice(d, j, &o->u.slice);
  case SF_OBJ_RESOURCE_CLAIM: return sf__decode_claim(d, j, &o->u.claim);
  case SF_OBJ_CLAIM_TEMPLATE: return sf__decode_template(d, j, &o->u.tmpl);
  case SF_OBJ_DEVICE_CLASS: return sf__decode_class(d, j, &o->u.dclass);
  case SF_OBJ_DEVICE_TAINT_RULE: return sf__decode_rule(d, j, &o->u.rule);
  case SF_OBJ_POD: return sf__decode_pod(d, j, &o->u.pod);
  case SF_OBJ_NODE: return sf__decode_node(d, j, &o->u.node);
  default: return sf__dfail(d, "unsupported kind");
  }
}

static int resolve_kind(dctx_t *d, const json_t *j, sf_obj_kind_t *kind)
{
  const char *name = NULL;
  int r = sf__dstr(d, j, "kind", &name);
  if (r < 0)
    return r;
  if (*kind != SF_OBJ_UNKNOWN)
    return 1;
  if (!name) {
    sf__dpush(d, "kind");
    return sf__dfail(d, "is required");
  }
  *kind = sf_obj_kind_from_name(name);
  if (*kind == SF_OBJ_UNKNOWN) {
    sf__dpush(d, "kind");
    return sf__dfail(d, "unsupported kind '%s'", name);
  }
  return 1;
}

/*
 * resource.k8s.io/v1beta1 and v1alpha3 slices and claims have another shape (devices under
 * "basic", flat requests): read as v1 they would lose their devices and requests silently.
 */
static int check_version(dctx_t *d, const json_t *j, sf_obj_kind_t kind)
{
  const char *v = NULL;
  int r = sf__dstr(d, j, "apiVersion", &v);
  if (r <= 0 || (kind != SF_OBJ_RESOURCE_SLICE && kind != SF_OBJ_RESOURCE_CLAIM &&
                 kind != SF_OBJ_CLAIM_TEMPLATE))
    return r;
  if (strcmp(v, "resource.k8s.io/v1beta1") && strcmp(v, "resource.k8s.io/v1alpha3"))
    return 1;
  sf__dpush(d, "apiVersion");
  return sf__dfail(d, "%s is not supported (resource.k8s.io/v1 or v1beta2)", v);
}

int sf_decode(const json_t *j, sf_obj_kind_t kind, sf_object_t **out, char *err, size_t errlen)
{
  dctx_t d = {.err = err, .errlen = errlen};
  sf_object_t *o = NULL;
  int r;
  *out = NULL;
  if (err && errlen)
    err[0] = '\0';
  if (!j || !json_is_object(j)) {
    r = sf__dfail(&d, "expected an object, got %s", j ? sf__dtype_name(j) : "nothing");
    goto out;
  }
  if ((r = resolve_kind(&d, j, &kind)) < 0)
    goto out;
  if ((r = check_version(&d, j, kind)) < 0)
    goto out;
  o = sf_xcalloc(1, sizeof(*o));
  o->kind = kind;
  o->arena = d.a = sf__arena_create();
  /* Most claims decode into 0.8-1 KiB: one chunk that fits instead of 480 + 960 bytes. */
  o->arena->first = kind == SF_OBJ_RESOURCE_CLAIM ? CLAIM_CHUNK_FIRST : 0;
  o->json = json_incref(unconst(j));
  if ((r = sf__decode_meta(&d, j, &o->u.meta)) < 0)
    goto out;
  if ((r = dispatch(&d, j, o)) < 0)
    goto out;
  sf__object_compact(o);
  *out = o;
  o = NULL;
  r = 0;
out:
  sf_object_free(o);
  return r;
}

void sf_object_free(sf_object_t *o)
{
  if (!o)
    return;
  sf__arena_destroy(o->arena);
  json_decref(o->json);
  free(o);
}

int sf_decode_meta(const json_t *j, sf_meta_t *out, char *err, size_t errlen)
{
  dctx_t d = {.err = err, .errlen = errlen};
  if (!json_is_object(j))
    return sf__dfail(&d, "expected an object");
  int r = sf__decode_meta(&d, j, out);
  return r < 0 ? r : 0;
}

int sf_decode_list_items(const json_t *j, const json_t **items, char *err, size_t errlen)
{
  dctx_t d = {.err = err, .errlen = errlen};
  size_t n;
  if (!json_is_object(j))
    return sf__dfail(&d, "expected an object");
  int r = sf__darr(&d, j, "items", items, &n);
  if (r < 0)
    return r;
  if (!*items) {
    sf__dpush(&d, "items");
    return sf__dfail(&d, "is required");
  }
  return 0;
}
