/*
 * Internals shared by the decoders: the arena decoded objects live in, and
 * the decoding context that tracks the JSON path for error messages.
 */
#ifndef SF_DECODE_INT_H
#define SF_DECODE_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>
#include "slicefit/decode.h"

typedef struct sf_arena sf_arena_t;

/* jansson's iterators take non-const values; the decoders never modify them. */
static inline json_t *unconst(const json_t *j)
{
  return (json_t *)(uintptr_t)j;
}

/** New empty arena (chunks grow on demand). */
sf_arena_t *sf__arena_create(void);
void sf__arena_destroy(sf_arena_t *a);
/** Forgets every allocation, keeping the newest (largest) chunk for reuse. */
void sf__arena_reset(sf_arena_t *a);
/** `n` zeroed bytes, aligned for any type; valid until the arena dies. */
void *sf__arena_alloc(sf_arena_t *a, size_t n);
/**
 * `n` bytes (not zeroed) in the room left in the current chunk, or in a
 * chunk of their own of just that size: for a last allocation whose size is
 * known, where doubling the chunk would leave its second half unused.
 */
void *sf__arena_alloc_exact(sf_arena_t *a, size_t n);
/** "a/b" in the arena. */
char *sf__arena_join(sf_arena_t *a, const char *x, const char *y);

#define DPATH_MAX 256
#define DPATH_DEPTH 32

/*
 * Decoding context: the arena, the current JSON path and the error sink.
 * The path is a stack of segments (a key, or an index when key is NULL),
 * formatted only when an error is reported: decoding pays no formatting.
 */
#define DVIEW_KEYS 16

/* The keys of one small object, read in one pass: a lookup is then a few strcmp, not a hash. */
typedef struct {
  const json_t *obj;
  size_t n;
  const char *keys[DVIEW_KEYS];
  json_t *vals[DVIEW_KEYS];
} dview_t;

typedef struct {
  sf_arena_t *a;
  dview_t views[2]; /* the two objects read last */
  unsigned next_view;
  const char *qname[64], *qval[64]; /* qualified names made so far (devices repeat them) */
  struct {
    const char *key;
    size_t i;
  } seg[DPATH_DEPTH];
  size_t depth; /* may exceed DPATH_DEPTH: deeper segments are not kept */
  char *err;
  size_t errlen;
} dctx_t;

/**
 * Copies every array and string a decoded ResourceSlice or ResourceClaim
 * points at into one block of exactly their size, which replaces its arena,
 * and drops its JSON (a slice keeps the node selectors and counter sets the
 * pools read; decode_own.c). Other kinds are left alone. Cost: O(size of the
 * object).
 */
void sf__object_compact(sf_object_t *o);
/**
 * The same for a decoded slice already compact, its arena grown since: with
 * `slim`, without its devices' attributes (which the index then holds:
 * cluster_slim.c). Cost: O(size of the slice).
 */
void sf__slice_compact(sf_object_t *o, bool slim);
/** Enters field `key` (borrowed until popped); returns the depth to pop back to. */
size_t sf__dpush(dctx_t *d, const char *key);
/** Enters array element i; returns the depth to pop back to. */
size_t sf__dpush_i(dctx_t *d, size_t i);
/** Returns to depth `len`. */
void sf__dpop(dctx_t *d, size_t len);
/** Writes "path: reason" into the error sink; returns SF_EINVAL. */
int sf__dfail(dctx_t *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** "an integer", "a string", ... for messages. */
const char *sf__dtype_name(const json_t *v);

/*
 * Field readers. `obj` is an object; `key` its field. Each returns 0 when
 * the field is absent or null (leaving *out alone), 1 when it was read, or
 * SF_EINVAL with the path of the field on a wrong type or value.
 */
int sf__dstr(dctx_t *d, const json_t *obj, const char *key, const char **out);
int sf__dint(dctx_t *d, const json_t *obj, const char *key, int64_t *out);
int sf__dbool(dctx_t *d, const json_t *obj, const char *key, bool *out);
int sf__dqty(dctx_t *d, const json_t *obj, const char *key, sf_milli_t *out);
/** An object field: *out NULL when absent. */
int sf__dobj(dctx_t *d, const json_t *obj, const char *key, const json_t **out);
/** An array field: *out NULL when absent, *n its length. */
int sf__darr(dctx_t *d, const json_t *obj, const char *key, const json_t **out, size_t *n);
/** A required string field: SF_EINVAL "is required" when absent or empty. */
int sf__dstr_req(dctx_t *d, const json_t *obj, const char *key, const char **out);
/* One row of a table of fields read by sf__dfields(): its key, its reader and where it goes. */
typedef enum { DF_STR, DF_STR_REQ, DF_INT, DF_BOOL, DF_QTY } dfield_kind_t;
typedef struct {
  const char *key;
  dfield_kind_t kind;
  union {
    const char **s;
    int64_t *i;
    bool *b;
    sf_milli_t *q;
  } out;
} dfield_t;
/* clang-format off */
#define DFIELD(key, kind, member, p) {(key), (kind), {.member = (p)}}
/* clang-format on */
#define DSTR(key, p) DFIELD(key, DF_STR, s, p)
#define DSTR_REQ(key, p) DFIELD(key, DF_STR_REQ, s, p)
#define DINT(key, p) DFIELD(key, DF_INT, i, p)
#define DBOOL(key, p) DFIELD(key, DF_BOOL, b, p)
#define DQTY(key, p) DFIELD(key, DF_QTY, q, p)
#define DEND DFIELD(NULL, DF_STR, s, NULL)
/**
 * Reads the fields of `f` (up to DEND) in order with sf__dstr, sf__dstr_req, sf__dint, sf__dbool
 * or sf__dqty; the first error stops. Returns 1, or that error.
 */
int sf__dfields(dctx_t *d, const json_t *obj, const dfield_t *f);
/** Parses a quantity value (string, number or null -> 0 not read) at the current path. */
int sf__dqty_val(dctx_t *d, const json_t *v, sf_milli_t *out);
/** An array of strings (e.g. requests: [...]) into the arena. */
int sf__dstrs(dctx_t *d, const json_t *obj, const char *key, const char ***out, size_t *n);
/** A map of quantities ({"memory": "16Gi"}) into name/value pairs. */
int sf__dqmap(dctx_t *d, const json_t *obj, const char *key, sf_cap_request_t **out, size_t *n);
/** Decodes member `k` (value `v`) of an object into `out`: 1 keeps it, 0 drops it, or SF_EINVAL. */
typedef int (*sf__dmember_fn)(dctx_t *d, const void *ctx, const char *k, const json_t *v, void *out);
/**
 * Decodes each member of the object `key` of `obj` with `fn` (at the member's path) into a new
 * arena array of `size`-byte elements: *out, *n. Returns 0 when the object is absent.
 */
int sf__dmap(dctx_t *d, const json_t *obj, const char *key, size_t size, sf__dmember_fn fn,
             const void *ctx, void **out, size_t *n);
/** Selectors [{cel: {expression}}] into their texts. */
int sf__dselectors(dctx_t *d, const json_t *obj, const char *key, const char ***out, size_t *n);
/** Decodes one array element (an object) into `out`. */
typedef int (*sf__delem_fn)(dctx_t *d, const json_t *e, void *out);
/** Decodes the object field `key` of `obj` with `fn` at its path: 0 when absent, else fn's result. */
int sf__dsub(dctx_t *d, const json_t *obj, const char *key, sf__delem_fn fn, void *out);
/** Same for a required field: SF_EINVAL "is required" when absent. */
int sf__dsub_req(dctx_t *d, const json_t *obj, const char *key, sf__delem_fn fn, void *out);
/**
 * Decodes the array `key` of `obj` with `fn` into `size`-byte elements
 * appended at out + *n * size (room for them is the caller's).
 */
int sf__deach(dctx_t *d, const json_t *obj, const char *key, size_t size, sf__delem_fn fn, char *out,
              size_t *n);
/** Same into a new arena array: *out, *n. */
int sf__darray(dctx_t *d, const json_t *obj, const char *key, size_t size, sf__delem_fn fn,
               void **out, size_t *n);
/** The taint effect named `eff` (NULL or unknown: None). */
sf_taint_effect_t sf__deffect(const char *eff);
/** A taint {key, value, effect} into the sf_taint_t `out`; unknown effects are None. */
int sf__dtaint(dctx_t *d, const json_t *t, void *out);

int sf__decode_slice(dctx_t *d, const json_t *j, sf_slice_t *s);
int sf__decode_claim(dctx_t *d, const json_t *j, sf_rclaim_t *c);
int sf__decode_template(dctx_t *d, const json_t *j, sf_claim_template_t *t);
int sf__decode_class(dctx_t *d, const json_t *j, sf_device_class_t *c);
int sf__decode_rule(dctx_t *d, const json_t *j, sf_taint_rule_t *r);
int sf__decode_pod(dctx_t *d, const json_t *j, sf_pod_t *p);
int sf__decode_node(dctx_t *d, const json_t *j, sf_node_t *n);
/** True when two decoded claim specs are equal field by field. */
bool sf__claim_spec_equal(const sf_claim_spec_t *a, const sf_claim_spec_t *b);
/** metadata {namespace, name, uid, resourceVersion}; name required. */
int sf__decode_meta(dctx_t *d, const json_t *j, sf_meta_t *m);

#endif
