/*
 * slicefit map: a string-keyed hash map from byte strings to int32 values,
 * for the core's indexes (names to ids), the CEL cache and the cluster's
 * stores and sets.
 *
 * Keys are names that come from the API server, so the hash is keyed:
 * SipHash-1-3 under a 64-bit seed the owner chooses (a daemon draws it at
 * random, a test or a replay passes a constant). Without the seed, nobody can
 * choose names that all land in one probe chain. Lookups, inserts and
 * removals cost O(1) expected and O(key length) to hash; the table never
 * shrinks. Iteration order depends on the seed: never let it decide output.
 *
 * Ownership: the map copies every key it stores (new, freed on removal or
 * dispose); the caller's key is borrowed. Pure: no I/O. Not thread-safe: one
 * writer, and no reader during a write.
 */
#ifndef SLICEFIT_MAP_H
#define SLICEFIT_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SF_MAP_INLINE 20 /* key bytes kept in the slot: most lookups never follow `key` */

/* A slot of the table; the fields are the map's, visible only for the struct's size. */
typedef struct {
  char *key; /* NULL: empty; the map's tombstone: deleted */
  uint32_t klen;
  uint32_t hash;
  int32_t val;
  char head[SF_MAP_INLINE]; /* the key's first bytes (zero-padded) */
} sf_map_slot_t;

typedef struct {
  sf_map_slot_t *slots;
  size_t cap;  /* power of two or 0 */
  size_t used; /* live + tombstones */
  size_t live;
  uint64_t k0, k1; /* the hash key, derived from the seed */
} sf_map_t;

/** Initializes an empty map (the caller owns the struct) hashing under `seed`. Cost: O(1). */
void sf_map_init(sf_map_t *m, uint64_t seed);
/** Frees every key and the table; the map is then empty, under the same seed. */
void sf_map_dispose(sf_map_t *m);
/** Removes every key, keeping the seed; the table is freed. */
void sf_map_clear(sf_map_t *m);
/** Number of keys. */
size_t sf_map_count(const sf_map_t *m);
/** Value stored for the key (klen bytes, borrowed), or -1 when absent. */
int32_t sf_map_get(const sf_map_t *m, const char *key, size_t klen);
/**
 * Sets the key to `val`, which must be >= 0 (get answers -1 for absent);
 * copies the key when it is new. Returns true when the key was new.
 */
bool sf_map_put(sf_map_t *m, const char *key, size_t klen, int32_t val);
/** Removes the key; returns true when it was present. */
bool sf_map_del(sf_map_t *m, const char *key, size_t klen);
/** The map's copy of the key (borrowed, NUL-terminated, stable until removed), or NULL. */
const char *sf_map_key(const sf_map_t *m, const char *key, size_t klen);
/**
 * Iteration: start with *pos = 0 and call until it returns false; each call
 * gives one key (borrowed), its length and value (any out-pointer may be
 * NULL). Removing the key just returned is allowed; inserting is not.
 */
bool sf_map_next(const sf_map_t *m, size_t *pos, const char **key, size_t *klen, int32_t *val);

#endif
