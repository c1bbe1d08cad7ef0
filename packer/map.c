/*
 * String-keyed hash map: FNV-1a hashes, linear probing over a power-of-two
 * table, tombstones on delete, rehash when live + tombstones pass 70%.
 * Invariant: every key reachable from its home slot without crossing an
 * empty slot.
 */
#include <string.h>
#include <stdlib.h>
#include "map.h"
#include "slicefit/common.h"

static char tomb_;
#define TOMB (&tomb_)

uint32_t sf__hash(const char *s, size_t n)
{
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++) {
    h ^= (uint8_t)s[i];
    h *= 16777619u;
  }
  return h;
}

void sf__map_init(sf__map_t *m)
{
  memset(m, 0, sizeof(*m));
}

void sf__map_dispose(sf__map_t *m)
{
  for (size_t i = 0; i < m->cap; i++)
    if (m->slots[i].key != NULL && m->slots[i].key != TOMB)
      free(m->slots[i].key);
  free(m->slots);
  sf__map_init(m);
}

static sf__map_slot_t *find(const sf__map_t *m, const char *key, size_t klen, uint32_t h)
{
  if (m->cap == 0)
    return NULL;
  size_t mask = m->cap - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    sf__map_slot_t *s = &m->slots[i];
    if (s->key == NULL)
      return NULL;
    if (s->key == TOMB || s->hash != h || s->klen != klen)
      continue;
    size_t head = klen < SF__MAP_INLINE ? klen : SF__MAP_INLINE;
    if (memcmp(s->head, key, head) == 0 &&
        (klen <= SF__MAP_INLINE || memcmp(s->key + head, key + head, klen - head) == 0))
      return s;
  }
}

static void rehash(sf__map_t *m, size_t ncap)
{
  sf__map_slot_t *old = m->slots;
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

int32_t sf__map_get(const sf__map_t *m, const char *key, size_t klen)
{
  sf__map_slot_t *s = find(m, key, klen, sf__hash(key, klen));
  return s ? s->val : -1;
}

const char *sf__map_key(const sf__map_t *m, const char *key, size_t klen)
{
  sf__map_slot_t *s = find(m, key, klen, sf__hash(key, klen));
  return s ? s->key : NULL;
}

void sf__map_put(sf__map_t *m, const char *key, size_t klen, int32_t val)
{
  uint32_t h = sf__hash(key, klen);
  sf__map_slot_t *s = find(m, key, klen, h);
  if (s != NULL) {
    s->val = val;
    return;
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
  m->slots[i] = (sf__map_slot_t){k, (uint32_t)klen, h, val, {0}};
  memcpy(m->slots[i].head, key, klen < SF__MAP_INLINE ? klen : SF__MAP_INLINE);
  m->live++;
}

void sf__map_del(sf__map_t *m, const char *key, size_t klen)
{
  sf__map_slot_t *s = find(m, key, klen, sf__hash(key, klen));
  if (s == NULL)
    return;
  free(s->key);
  s->key = TOMB;
  m->live--;
}
