/*
 * String-keyed hash map (include/slicefit/map.h).
 *
 * Layout: one power-of-two array of slots, linear probing from the slot the
 * hash names. A slot is empty (key NULL), a tombstone (key TOMB, left by a
 * removal so that probe chains through it stay intact) or live. Each live
 * slot keeps the hash, the length and the first SF_MAP_INLINE bytes of its
 * key, so that a lookup compares against the slot before it follows `key`.
 * The table is rebuilt (tombstones dropped, doubled when more than half is
 * live) when live + tombstones would pass 70%.
 *
 * Invariant: every live key is reachable from its home slot without
 * crossing an empty slot; used == live + tombstones < 70% of cap.
 *
 * Hash: SipHash-1-3 (as Redis and Rust use for their tables) keyed by two
 * words derived from the seed, cut to 32 bits. The keys are untrusted names
 * from the API server; a keyed hash keeps their author from building one
 * long probe chain.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include "slicefit/common.h"
#include "slicefit/map.h"

static char tomb_;
#define TOMB (&tomb_)

/* ---- the hash ---- */

static uint64_t splitmix64(uint64_t x)
{
  x += 0x9e3779b97f4a7c15u;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
  return x ^ (x >> 31);
}

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

#define SIPROUND(v0, v1, v2, v3) \
  do {                           \
    v0 += v1;                    \
    v1 = ROTL(v1, 13);           \
    v1 ^= v0;                    \
    v0 = ROTL(v0, 32);           \
    v2 += v3;                    \
    v3 = ROTL(v3, 16);           \
    v3 ^= v2;                    \
    v0 += v3;                    \
    v3 = ROTL(v3, 21);           \
    v3 ^= v0;                    \
    v2 += v1;                    \
    v1 = ROTL(v1, 17);           \
    v1 ^= v2;                    \
    v2 = ROTL(v2, 32);           \
  } while (0)

/* Little-endian load of n <= 8 bytes (zero-extended), whatever the host order. */
static uint64_t load_le(const unsigned char *p, size_t n)
{
  uint64_t v = 0;
  memcpy(&v, p, n); /* one load for n == 8: no alignment is assumed */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v); /* p[0] becomes the low byte; the zero fill stays high */
#endif
  return v;
}

/* SipHash-1-3 of n bytes under the map's key: Aumasson and Bernstein's SipHash with one
 * compression round per word and three finalization rounds. */
static uint32_t hash(const sf_map_t *m, const char *s, size_t n)
{
  const unsigned char *p = (const unsigned char *)s;
  uint64_t v0 = m->k0 ^ 0x736f6d6570736575u, v1 = m->k1 ^ 0x646f72616e646f6du;
  uint64_t v2 = m->k0 ^ 0x6c7967656e657261u, v3 = m->k1 ^ 0x7465646279746573u;
  size_t whole = n & ~(size_t)7;
  for (size_t i = 0; i < whole; i += 8) {
    uint64_t w = load_le(p + i, 8);
    v3 ^= w;
    SIPROUND(v0, v1, v2, v3);
    v0 ^= w;
  }
  uint64_t last = (uint64_t)(n & 0xff) << 56 | load_le(p + whole, n & 7);
  v3 ^= last;
  SIPROUND(v0, v1, v2, v3);
  v0 ^= last;
  v2 ^= 0xff;
  SIPROUND(v0, v1, v2, v3);
  SIPROUND(v0, v1, v2, v3);
  SIPROUND(v0, v1, v2, v3);
  uint64_t h = v0 ^ v1 ^ v2 ^ v3;
  return (uint32_t)(h ^ (h >> 32));
}

/* ---- the table ---- */

void sf_map_init(sf_map_t *m, uint64_t seed)
{
  memset(m, 0, sizeof(*m));
  m->k0 = splitmix64(seed);
  m->k1 = splitmix64(m->k0);
}

void sf_map_clear(sf_map_t *m)
{
  for (size_t i = 0; i < m->cap; i++)
    if (m->slots[i].key != NULL && m->slots[i].key != TOMB)
      free(m->slots[i].key);
  free(m->slots);
  m->slots = NULL;
  m->cap = m->used = m->live = 0;
}

void sf_map_dispose(sf_map_t *m)
{
  sf_map_clear(m);
}

size_t sf_map_count(const sf_map_t *m)
{
  return m->live;
}

static sf_map_slot_t *find(const sf_map_t *m, const char *key, size_t klen, uint32_t h)
{
  if (m->cap == 0)
    return NULL;
  size_t mask = m->cap - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    sf_map_slot_t *s = &m->slots[i];
    if (s->key == NULL)
      return NULL;
    if (s->key == TOMB || s->hash != h || s->klen != klen)
      continue;
    size_t head = klen < SF_MAP_INLINE ? klen : SF_MAP_INLINE;
    if (memcmp(s->head, key, head) == 0 &&
        (klen <= SF_MAP_INLINE || memcmp(s->key + head, key + head, klen - head) == 0))
      return s;
  }
}

static void rehash(sf_map_t *m, size_t ncap)
{
  sf_map_slot_t *old = m->slots;
  size_t ocap = m->cap;
  m->slots = sf_xcalloc(ncap, sizeof(*m->slots));
  m->cap = ncap;
  m->used = m->live;
  for (size_t i = 0; i < ocap; i++) {
    if (old[i].key == NULL || old[i].key == TOMB)
      continue;
    size_t j = old[i].hash & (ncap - 1);
    while (m->slots[j].key != NULL)
      j = (j + 1) & (ncap - 1);
    m->slots[j] = old[i];
  }
  free(old);
}

int32_t sf_map_get(const sf_map_t *m, const char *key, size_t klen)
{
  sf_map_slot_t *s = find(m, key, klen, hash(m, key, klen));
  return s ? s->val : -1;
}

const char *sf_map_key(const sf_map_t *m, const char *key, size_t klen)
{
  sf_map_slot_t *s = find(m, key, klen, hash(m, key, klen));
  return s ? s->key : NULL;
}

bool sf_map_put(sf_map_t *m, const char *key, size_t klen, int32_t val)
{
  assert(val >= 0 && klen <= UINT32_MAX);
  uint32_t h = hash(m, key, klen);
  sf_map_slot_t *s = find(m, key, klen, h);
  if (s != NULL) {
    s->val = val;
    return false;
  }
  if ((m->used + 1) * 10 >= m->cap * 7)
    rehash(m, m->cap ? (m->live * 2 >= m->cap / 2 ? m->cap * 2 : m->cap) : 16);
  size_t mask = m->cap - 1, i = h & mask;
  while (m->slots[i].key != NULL && m->slots[i].key != TOMB)
    i = (i + 1) & mask;
  if (m->slots[i].key == NULL)
    m->used++;
  char *k = sf_xmalloc(klen + 1);
  memcpy(k, key, klen);
  k[klen] = '\0';
  m->slots[i] = (sf_map_slot_t){k, (uint32_t)klen, h, val, {0}};
  memcpy(m->slots[i].head, key, klen < SF_MAP_INLINE ? klen : SF_MAP_INLINE);
  m->live++;
  return true;
}

bool sf_map_del(sf_map_t *m, const char *key, size_t klen)
{
  sf_map_slot_t *s = find(m, key, klen, hash(m, key, klen));
  if (s == NULL)
    return false;
  free(s->key);
  s->key = TOMB;
  m->live--;
  return true;
}

bool sf_map_next(const sf_map_t *m, size_t *pos, const char **key, size_t *klen, int32_t *val)
{
  for (size_t i = *pos; i < m->cap; i++) {
    const sf_map_slot_t *s = &m->slots[i];
    if (s->key == NULL || s->key == TOMB)
      continue;
    *pos = i + 1;
    if (key)
      *key = s->key;
    if (klen)
      *klen = s->klen;
    if (val)
      *val = s->val;
    return true;
  }
  *pos = m->cap;
  return false;
}
