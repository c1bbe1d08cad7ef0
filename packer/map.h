/*
 * A string-keyed open-addressing hash map (linear probing, tombstones) from
 * byte strings to int32 values. Internal to slicefit: packer/, and apiwatch/
 * for the cluster's stores. Keys are copied into the map (owned) and freed
 * on removal or dispose.
 */
#ifndef SF_PACKER_MAP_H
#define SF_PACKER_MAP_H

#include <stddef.h>
#include <stdint.h>

#define SF__MAP_INLINE 20  /* key bytes kept in the slot: most lookups never follow `key` */

typedef struct {
  char *key;       /* NULL: empty; the tombstone pointer: deleted */
  uint32_t klen;
  uint32_t hash;
  int32_t val;
  char head[SF__MAP_INLINE];  /* the key's first bytes (zero-padded) */
} sf__map_slot_t;

typedef struct {
  sf__map_slot_t *slots;
  size_t cap;      /* power of two or 0 */
  size_t used;     /* live + tombstones */
  size_t live;
} sf__map_t;

void sf__map_init(sf__map_t *m);
void sf__map_dispose(sf__map_t *m);
/** Value for the key, or -1. */
int32_t sf__map_get(const sf__map_t *m, const char *key, size_t klen);
/** Sets key to val (copying the key). */
void sf__map_put(sf__map_t *m, const char *key, size_t klen, int32_t val);
/** Removes the key if present. */
void sf__map_del(sf__map_t *m, const char *key, size_t klen);
/** The stored copy of the key (stable until removed), or NULL. */
const char *sf__map_key(const sf__map_t *m, const char *key, size_t klen);
uint32_t sf__hash(const char *s, size_t n);

#endif
