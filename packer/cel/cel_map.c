/*
 * Map values: map literals and the results of transformMap and
 * transformMapEntry. A map (V_MAP) is n entries laid out as 2n values in
 * the evaluation's arena, key then value, in insertion order; its keys are
 * distinct under CEL equality. Keys are ints, uints, bools or strings (a
 * double finds the int or uint key of the same value, as cel-go's lookup
 * does); any other key is unknown. Lookups are linear: a selector's maps
 * hold a device's attributes at most, a few dozen entries.
 *
 * Building one: room for the expected entries is reserved first (a
 * literal's count, a macro's range); a map that outgrows it moves to twice
 * the room at the arena's top, whatever its transforms allocated meanwhile.
 * Exhausting the arena is UNKNOWN, as for lists.
 */
#include <string.h>
#include "cel_int.h"

/* Is v a value CEL allows as a map key? */
static bool key_type(const cel_val_t *v)
{
  return !(v->flags & CV_OPT) && (v->t == V_INT || v->t == V_UINT || v->t == V_BOOL || v->t == V_STR);
}

/* Do key k (of a map) and the probe p name the same entry? */
static bool key_match(const cel_val_t *k, const cel_val_t *p)
{
  if (k->t == V_STR || p->t == V_STR || k->t == V_BOOL || p->t == V_BOOL) {
    cel_val_t e = sf__cel_eq(0, k, p);
    return e.t == V_BOOL && e.v.b;
  }
  return sf__cel_order(k, p) == 0;
}

int sf__cel_map_find(const cel_val_t *m, const cel_val_t *key)
{
  if (key->flags & CV_OPT || !(key_type(key) || key->t == V_DOUBLE))
    return -2;
  for (uint32_t i = 0; i < m->n; i++)
    if (key_match(&m->v.l[2 * i], key))
      return (int)i;
  return -1;
}

int sf__cel_map_get(const cel_val_t *m, uint32_t node, const cel_val_t *key, cel_val_t *out)
{
  int at = sf__cel_map_find(m, key);
  if (at == -2) {
    *out = sf__cel_unk(node, "a map key of this type is not supported");
    return -1;
  }
  if (at >= 0)
    *out = m->v.l[2 * at + 1];
  return at >= 0;
}

int sf__cel_map_get_field(const cel_val_t *m, uint32_t node, const char *key, size_t kn,
                          cel_val_t *out)
{
  cel_val_t k = {.t = V_STR, .n = (uint32_t)kn, .v.s = key};
  return sf__cel_map_get(m, node, &k, out);
}

bool sf__cel_map_start(cel_ctx_t *c, cel_map_builder_t *b, size_t cap)
{
  cel_val_t *l = sf__cel_reserve(c, 2 * cap);
  memset(&b->m, 0, sizeof b->m);
  b->m.t = V_MAP;
  b->m.v.l = b->store = l;
  b->cap = (uint32_t)cap;
  return l != NULL;
}

cel_val_t sf__cel_map_insert(cel_ctx_t *c, uint32_t node, cel_map_builder_t *b, const cel_val_t *k,
                             const cel_val_t *v)
{
  if (!key_type(k))
    return sf__cel_unk(node, "a map key of this type is not supported");
  if (sf__cel_map_find(&b->m, k) >= 0)
    return sf__cel_err(node, "insert failed: key already exists");
  if (b->m.n == b->cap) {
    /* Full: twice the room at the arena's top, so a map of n entries uses at most 4n values. */
    uint32_t cap = b->cap < 4 ? 4 : 2 * b->cap;
    cel_val_t *l = sf__cel_reserve(c, 2 * (size_t)cap);
    if (l == NULL)
      return sf__cel_unk(node, "list arena exhausted");
    memcpy(l, b->store, 2 * (size_t)b->m.n * sizeof *l);
    b->m.v.l = b->store = l;
    b->cap = cap;
  }
  cel_val_t *e = b->store + 2 * b->m.n++;
  e[0] = *k;
  e[1] = *v;
  return b->m;
}

static bool maplike(int t)
{
  return t == V_ATTRS || t == V_CAPS || t == V_ADOM || t == V_CDOM || t == V_QUERY;
}

cel_val_t sf__cel_map_eq(uint32_t node, const cel_val_t *a, const cel_val_t *b)
{
  if (a->t != b->t)
    return maplike(a->t) || maplike(b->t)
               ? sf__cel_unk(node, "equality of a map and the device's maps is not supported")
               : sf__cel_bool(false);
  if (a->n != b->n)
    return sf__cel_bool(false);
  cel_val_t bad = sf__cel_bool(true);
  for (uint32_t i = 0; i < a->n; i++) {
    int at = sf__cel_map_find(b, &a->v.l[2 * i]);
    if (at < 0)
      return sf__cel_bool(false);
    cel_val_t e = sf__cel_eq(node, &a->v.l[2 * i + 1], &b->v.l[2 * at + 1]);
    if (e.t == V_BOOL && !e.v.b)
      return e;
    if (BAD(e) && bad.t != V_UNK)
      bad = e;
  }
  return bad;
}
