/*
 * Tests of packer/map.c (slicefit/map.h): insert, lookup, overwrite, delete
 * through tombstones, growth, iteration, keys that share a home slot or a
 * long prefix, and that the seed decides the layout and nothing else. Every
 * seed is fixed.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include "slicefit/map.h"

#define SEED 42u

static int32_t get(const sf_map_t *m, const char *k)
{
  return sf_map_get(m, k, strlen(k));
}
static bool put(sf_map_t *m, const char *k, int32_t v)
{
  return sf_map_put(m, k, strlen(k), v);
}
static bool del(sf_map_t *m, const char *k)
{
  return sf_map_del(m, k, strlen(k));
}

/* The map's invariant: every key iteration gives is found at its own slot, and the counts add up. */
static void check(const sf_map_t *m)
{
  size_t pos = 0, live = 0, klen;
  const char *k;
  int32_t v;
  while (sf_map_next(m, &pos, &k, &klen, &v)) {
    cr_assert_eq(sf_map_key(m, k, klen), k, "slot %zu not reachable from its home", pos - 1);
    cr_assert_eq(sf_map_get(m, k, klen), v);
    live++;
  }
  cr_assert_eq(live, sf_map_count(m));
  cr_assert(live <= m->used);
  cr_assert(m->cap == 0 || m->used * 10 < m->cap * 7, "load %zu/%zu", m->used, m->cap);
}

Test(map, empty)
{
  sf_map_t m;
  sf_map_init(&m, SEED);
  cr_assert_eq(sf_map_count(&m), 0);
  cr_assert_eq(get(&m, "a"), -1);
  cr_assert_null(sf_map_key(&m, "a", 1));
  cr_assert_not(del(&m, "a"));
  size_t pos = 0;
  cr_assert_not(sf_map_next(&m, &pos, NULL, NULL, NULL));
  sf_map_dispose(&m);
  sf_map_dispose(&m); /* disposing twice is harmless: the map is empty again */
}

Test(map, insert_lookup_overwrite)
{
  sf_map_t m;
  sf_map_init(&m, SEED);
  cr_assert(put(&m, "node-a", 1));
  cr_assert(put(&m, "node-b", 2));
  cr_assert(put(&m, "", 3)); /* the empty key is a key */
  cr_assert_not(put(&m, "node-a", 7), "overwriting is not new");
  cr_assert_eq(get(&m, "node-a"), 7);
  cr_assert_eq(get(&m, "node-b"), 2);
  cr_assert_eq(get(&m, ""), 3);
  cr_assert_eq(get(&m, "node-c"), -1);
  cr_assert_eq(sf_map_count(&m), 3);
  check(&m);
  sf_map_dispose(&m);
}

Test(map, keys_are_copied_and_stable)
{
  sf_map_t m;
  sf_map_init(&m, SEED);
  char buf[64];
  strcpy(buf, "tenants/claim-0");
  put(&m, buf, 0);
  const char *stored = sf_map_key(&m, buf, strlen(buf));
  cr_assert_neq(stored, buf);
  strcpy(buf, "something else");
  cr_assert_str_eq(stored, "tenants/claim-0");
  for (int i = 1; i < 1000; i++) { /* growth moves slots, never the stored keys */
    snprintf(buf, sizeof buf, "k%d", i);
    put(&m, buf, i);
  }
  cr_assert_eq(sf_map_key(&m, "tenants/claim-0", 15), stored);
  sf_map_dispose(&m);
}

Test(map, lengths_not_nul)
{
  sf_map_t m;
  sf_map_init(&m, SEED);
  const char k[] = {'a', '\0', 'b'};
  sf_map_put(&m, k, 3, 1);
  sf_map_put(&m, k, 1, 2);
  sf_map_put(&m,
             "a\x1f"
             "b",
             3, 3);
  cr_assert_eq(sf_map_get(&m, k, 3), 1);
  cr_assert_eq(sf_map_get(&m, k, 1), 2);
  cr_assert_eq(sf_map_get(&m, "a", 1), 2);
  cr_assert_eq(sf_map_get(&m,
                          "a\x1f"
                          "b",
                          3),
               3);
  sf_map_dispose(&m);
}

/* Keys longer than the inline head that differ only after it, or only in length. */
Test(map, long_keys_sharing_a_prefix)
{
  sf_map_t m;
  sf_map_init(&m, SEED);
  char k[128];
  memset(k, 'x', sizeof k);
  for (size_t n = 0; n < sizeof k; n++)
    cr_assert(sf_map_put(&m, k, n, (int32_t)n));
  for (int i = 0; i < 50; i++) {
    char buf[80];
    snprintf(buf, sizeof buf, "gpu.nvidia.com/pool-with-a-long-prefix/device-%d", i);
    put(&m, buf, 1000 + i);
  }
  for (size_t n = 0; n < sizeof k; n++)
    cr_assert_eq(sf_map_get(&m, k, n), (int32_t)n, "length %zu", n);
  for (int i = 0; i < 50; i++) {
    char buf[80];
    snprintf(buf, sizeof buf, "gpu.nvidia.com/pool-with-a-long-prefix/device-%d", i);
    cr_assert_eq(get(&m, buf), 1000 + i);
  }
  check(&m);
  sf_map_dispose(&m);
}

Test(map, grow_and_delete)
{
  sf_map_t m;
  sf_map_init(&m, SEED);
  char buf[32];
  for (int i = 0; i < 20000; i++) {
    snprintf(buf, sizeof buf, "node-%d", i);
    cr_assert(put(&m, buf, i));
  }
  check(&m);
  cr_assert_eq(sf_map_count(&m), 20000);
  for (int i = 0; i < 20000; i += 2) {
    snprintf(buf, sizeof buf, "node-%d", i);
    cr_assert(del(&m, buf));
    cr_assert_not(del(&m, buf), "a second removal finds nothing");
  }
  check(&m);
  for (int i = 0; i < 20000; i++) {
    snprintf(buf, sizeof buf, "node-%d", i);
    cr_assert_eq(get(&m, buf), i % 2 ? i : -1, "%s", buf);
  }
  /* Churn: tombstones are reused or swept by a rebuild, and the table stops growing. */
  size_t cap = m.cap;
  for (int round = 0; round < 20; round++)
    for (int i = 0; i < 5000; i++) {
      snprintf(buf, sizeof buf, "churn-%d", i);
      if (round % 2 == 0)
        put(&m, buf, i);
      else
        del(&m, buf);
    }
  check(&m);
  cr_assert_eq(sf_map_count(&m), 10000);
  cr_assert_eq(m.cap, cap, "churn at a steady size grew the table from %zu to %zu", cap, m.cap);
  sf_map_dispose(&m);
}

/* Two keys with one home slot: removing the first must not hide the second. */
Test(map, collisions_in_one_home_slot)
{
  sf_map_t m;
  sf_map_init(&m, SEED);
  char keys[11][24];
  int a = -1, b = -1;
  for (int i = 0; i < 11 && b < 0; i++) { /* 11 keys fit the first 16-slot table */
    snprintf(keys[i], sizeof keys[i], "claim-%d", i);
    put(&m, keys[i], i);
    for (size_t s = 0; s < m.cap && b < 0; s++)
      for (size_t t = s + 1; t < m.cap && b < 0; t++)
        if (m.slots[s].key && m.slots[t].key &&
            (m.slots[s].hash & (m.cap - 1)) == (m.slots[t].hash & (m.cap - 1))) {
          a = m.slots[s].val;
          b = m.slots[t].val;
        }
  }
  cr_assert_eq(m.cap, 16);
  cr_assert(b >= 0, "no two of 11 keys share a home slot of 16 under seed %u", SEED);
  /* Whichever of the two comes first in the chain, removing it leaves a tombstone, not a gap. */
  cr_assert(del(&m, keys[a]));
  cr_assert_eq(get(&m, keys[b]), b);
  cr_assert(put(&m, keys[a], a));
  cr_assert(del(&m, keys[b]));
  cr_assert_eq(get(&m, keys[a]), a);
  cr_assert(put(&m, keys[b], b));
  cr_assert_eq(get(&m, keys[a]), a);
  cr_assert_eq(get(&m, keys[b]), b);
  check(&m);
  sf_map_dispose(&m);
}

Test(map, iteration_visits_each_key_once)
{
  sf_map_t m;
  sf_map_init(&m, SEED);
  enum { N = 3000 };
  static int seen[N];
  char buf[32];
  for (int i = 0; i < N; i++) {
    snprintf(buf, sizeof buf, "dev-%d", i);
    put(&m, buf, i);
  }
  for (int i = 0; i < N; i += 3) {
    snprintf(buf, sizeof buf, "dev-%d", i);
    del(&m, buf);
  }
  size_t pos = 0, n = 0, klen;
  const char *k;
  int32_t v;
  while (sf_map_next(&m, &pos, &k, &klen, &v)) {
    cr_assert(v >= 0 && v < N && v % 3 != 0, "value %d", v);
    snprintf(buf, sizeof buf, "dev-%d", v);
    cr_assert_eq(klen, strlen(buf));
    cr_assert_str_eq(k, buf);
    seen[v]++;
    n++;
  }
  cr_assert_eq(n, sf_map_count(&m));
  for (int i = 0; i < N; i++)
    cr_assert_eq(seen[i], i % 3 ? 1 : 0, "key %d seen %d times", i, seen[i]);
  sf_map_dispose(&m);
}

Test(map, remove_during_iteration)
{
  sf_map_t m;
  sf_map_init(&m, SEED);
  char buf[32];
  for (int i = 0; i < 500; i++) {
    snprintf(buf, sizeof buf, "pod-%d", i);
    put(&m, buf, i);
  }
  size_t pos = 0, klen;
  const char *k;
  int32_t v;
  while (sf_map_next(&m, &pos, &k, &klen, &v))
    if (v % 2)
      cr_assert(sf_map_del(&m, k, klen));
  cr_assert_eq(sf_map_count(&m), 250);
  check(&m);
  sf_map_dispose(&m);
}

Test(map, clear_keeps_the_seed)
{
  sf_map_t m;
  sf_map_init(&m, SEED);
  uint64_t k0 = m.k0, k1 = m.k1;
  put(&m, "a", 1);
  put(&m, "b", 2);
  sf_map_clear(&m);
  cr_assert_eq(sf_map_count(&m), 0);
  cr_assert_eq(get(&m, "a"), -1);
  cr_assert(m.k0 == k0 && m.k1 == k1);
  cr_assert(put(&m, "a", 3));
  cr_assert_eq(get(&m, "a"), 3);
  sf_map_dispose(&m);
}

/* Where each of a set of keys sits, as a string of slot indexes. */
static void layout(uint64_t seed, char *out, size_t len)
{
  sf_map_t m;
  sf_map_init(&m, seed);
  char buf[32];
  for (int i = 0; i < 64; i++) {
    snprintf(buf, sizeof buf, "rtx-%d", i);
    put(&m, buf, i);
  }
  size_t off = 0;
  for (size_t s = 0; s < m.cap; s++)
    off += (size_t)snprintf(out + off, len - off, "%d,", m.slots[s].key ? m.slots[s].val : -1);
  sf_map_dispose(&m);
}

Test(map, the_seed_decides_the_layout)
{
  static char a[4096], b[4096], c[4096];
  layout(SEED, a, sizeof a);
  layout(SEED, b, sizeof b);
  layout(SEED + 1, c, sizeof c);
  cr_assert_str_eq(a, b, "one seed, one layout");
  cr_assert_str_neq(a, c, "another seed puts the names elsewhere");
}
