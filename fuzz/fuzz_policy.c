/*
 * libFuzzer target for packer/policy.c. The input is key/value pairs: if it
 * holds a NUL, alternating NUL-separated key and value strings, else lines of
 * "key=value". Beyond "no crash" it checks, after every sf_policy_set:
 *   - the result is 0 or SF_EINVAL, and the message names the key;
 *   - on error the policy is unchanged (every key renders the same text);
 *   - on success sf_policy_get of that key reads back through sf_policy_set
 *     and renders the same text again (the round trip);
 * and at the end that sf_policy_from_kv over all the pairs agrees with the
 * sequence of sets, and that a copy renders the same. Everything is disposed,
 * so LeakSanitizer sees any leak.
 */
#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "slicefit/policy.h"

#define MAXPAIRS 32

typedef struct {
  char *keys[MAXPAIRS], *vals[MAXPAIRS];
  size_t n;
} pairs_t;

static char *dupn(const uint8_t *p, size_t n)
{
  char *s = malloc(n + 1);
  memcpy(s, p, n);
  s[n] = '\0';
  return s;
}

/* Splits data at sep into alternating keys and values (NUL mode). */
static void split_nul(const uint8_t *d, size_t size, pairs_t *pp)
{
  size_t i = 0;
  while (i < size && pp->n < MAXPAIRS) {
    size_t kn = strnlen((const char *)d + i, size - i), vi = i + kn + 1, vn;
    if (vi > size)
      break;
    vn = strnlen((const char *)d + vi, size - vi);
    pp->keys[pp->n] = dupn(d + i, kn);
    pp->vals[pp->n++] = dupn(d + vi, vn);
    i = vi + vn + 1;
  }
}

/* Lines of key=value; a line without '=' is a key with an empty value. */
static void split_lines(const uint8_t *d, size_t size, pairs_t *pp)
{
  size_t i = 0;
  while (i < size && pp->n < MAXPAIRS) {
    const uint8_t *nl = memchr(d + i, '\n', size - i);
    size_t end = nl ? (size_t)(nl - d) : size;
    const uint8_t *eq = memchr(d + i, '=', end - i);
    size_t kend = eq ? (size_t)(eq - d) : end;
    pp->keys[pp->n] = dupn(d + i, kend - i);
    pp->vals[pp->n++] = eq ? dupn(eq + 1, end - kend - 1) : dupn(d, 0);
    i = end + 1;
  }
}

/* The text of one key; a new string, grown until it fits. */
static char *get(const sf_policy_t *pol, const char *key)
{
  size_t len = 64;
  for (;;) {
    char *buf = malloc(len);
    int rc = sf_policy_get(pol, key, buf, len);
    if (rc == 0)
      return buf;
    assert(rc == SF_E2BIG);
    free(buf);
    len *= 4;
  }
}

/* Every key's text joined by newlines; a new string. */
static char *snapshot(const sf_policy_t *pol)
{
  size_t nk, len = 0;
  const sf_policy_key_t *k = sf_policy_keys(&nk);
  char *all = NULL;
  for (size_t i = 0; i < nk; i++) {
    char *v = get(pol, k[i].key);
    size_t vn = strlen(v);
    all = realloc(all, len + vn + 2);
    memcpy(all + len, v, vn);
    len += vn;
    all[len++] = '\n';
    all[len] = '\0';
    free(v);
  }
  return all;
}

static void roundtrip(sf_policy_t *pol, const char *key)
{
  char err[512];
  char *first = get(pol, key), *second;
  int rc = sf_policy_set(pol, key, first, err, sizeof err);
  if (rc != 0) {
    fprintf(stderr, "get(%s) = \"%s\" not accepted back: %s\n", key, first, err);
    abort();
  }
  second = get(pol, key);
  assert(strcmp(first, second) == 0);
  free(first);
  free(second);
}

/* Applies one pair; returns the set's result after checking its invariants. */
static int apply(sf_policy_t *pol, const char *key, const char *val)
{
  char err[512] = "";
  char *before = snapshot(pol), *after;
  int rc = sf_policy_set(pol, key, val, err, sizeof err);
  assert(rc == 0 || rc == SF_EINVAL);
  if (rc == 0) {
    roundtrip(pol, key);
  } else {
    after = snapshot(pol);
    assert(strcmp(before, after) == 0);
    assert(strncmp(err, "unknown policy key \"", 20) == 0 || strncmp(err, "policy key \"", 12) == 0);
    assert(strstr(err, key) != NULL || strlen(key) > 100);
    free(after);
  }
  free(before);
  return rc;
}

static void compare_kv(const pairs_t *pp, const sf_policy_t *seq, int seq_rc)
{
  sf_policy_t kv, cp;
  char err[512];
  char *a, *b;
  int rc = sf_policy_from_kv(&kv, (const char *const *)pp->keys, (const char *const *)pp->vals, pp->n,
                             err, sizeof err);
  assert((rc == 0) == (seq_rc == 0));
  if (rc != 0)
    return;
  sf_policy_copy(&cp, &kv);
  a = snapshot(seq);
  b = snapshot(&kv);
  assert(strcmp(a, b) == 0);
  free(b);
  b = snapshot(&cp);
  assert(strcmp(a, b) == 0);
  free(a);
  free(b);
  sf_policy_dispose(&kv);
  sf_policy_dispose(&cp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  pairs_t pp = {.n = 0};
  sf_policy_t pol;
  int seq_rc = 0;
  if (memchr(data, '\0', size) != NULL)
    split_nul(data, size, &pp);
  else
    split_lines(data, size, &pp);
  sf_policy_init(&pol);
  for (size_t i = 0; i < pp.n; i++) {
    int rc = apply(&pol, pp.keys[i], pp.vals[i]);
    if (seq_rc == 0)
      seq_rc = rc;
  }
  /* from_kv stops at the first error; compare it with a clean sequence. */
  sf_policy_dispose(&pol);
  sf_policy_init(&pol);
  for (size_t i = 0; i < pp.n && seq_rc == 0; i++)
    assert(sf_policy_set(&pol, pp.keys[i], pp.vals[i], NULL, 0) == 0);
  compare_kv(&pp, &pol, seq_rc);
  sf_policy_dispose(&pol);
  for (size_t i = 0; i < pp.n; i++) {
    free(pp.keys[i]);
    free(pp.vals[i]);
  }
  return 0;
}
