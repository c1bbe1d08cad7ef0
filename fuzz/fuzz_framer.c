/*
 * libFuzzer target for apiwatch/framer.c. The input is a watch stream. It is
 * framed three ways: whole, one byte at a time, and in chunks whose sizes
 * come from the input's own bytes. Every way must give the same events in
 * the same order and the same outcome (clean end, partial event kept, or an
 * error after the same events). Every event starts with '{' and ends with
 * '}' and none is longer than the cap.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "slicefit/apiwatch.h"

#define CAP 4096

typedef struct {
  char *cat; /* every event, each followed by a NUL */
  size_t len, cap;
  size_t nevents;
  long err; /* the error, or 0 */
  bool pending;
} outcome_t;

static void record(outcome_t *o, const char *ev, size_t n)
{
  assert(n >= 2 && n <= CAP && ev[0] == '{' && ev[n - 1] == '}');
  sf_xgrow(&o->cat, &o->cap, o->len + n + 1, 1);
  memcpy(o->cat + o->len, ev, n);
  o->len += n;
  o->cat[o->len++] = '\0';
  o->nevents++;
}

/* Frames data in chunks: step(i) gives the size of chunk i (>= 1). */
static void frame(const uint8_t *data, size_t size, size_t (*step)(const uint8_t *, size_t, size_t),
                  outcome_t *o)
{
  sf_framer_t f;
  sf_framer_init(&f, CAP);
  memset(o, 0, sizeof *o);
  size_t pos = 0;
  for (size_t k = 0; pos < size && !o->err; k++) {
    size_t n = step(data, size, k);
    if (n > size - pos)
      n = size - pos;
    const char *chunk = (const char *)data + pos;
    size_t off = 0;
    while (off < n) {
      const char *ev;
      size_t evlen;
      long used = sf_framer_feed(&f, chunk + off, n - off, &ev, &evlen);
      if (used < 0) {
        o->err = used;
        break;
      }
      assert(used > 0 && (size_t)used <= n - off);
      off += (size_t)used;
      if (ev)
        record(o, ev, evlen);
    }
    pos += n;
  }
  o->pending = sf_framer_pending(&f);
  sf_framer_dispose(&f);
}

static size_t whole(const uint8_t *d, size_t size, size_t k)
{
  (void)d;
  (void)k;
  return size;
}
static size_t bytewise(const uint8_t *d, size_t size, size_t k)
{
  (void)d;
  (void)size;
  (void)k;
  return 1;
}
static size_t varied(const uint8_t *d, size_t size, size_t k)
{
  return 1 + (size ? d[(k * 7) % size] % 13 : 0);
}

static void same(const outcome_t *a, const outcome_t *b)
{
  /* An event both too long and too deep may report either first. */
  assert((a->err != 0) == (b->err != 0));
  assert(a->nevents == b->nevents && a->len == b->len);
  assert(a->len == 0 || memcmp(a->cat, b->cat, a->len) == 0);
  if (!a->err)
    assert(a->pending == b->pending);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  outcome_t a, b, c;
  frame(data, size, whole, &a);
  frame(data, size, bytewise, &b);
  frame(data, size, varied, &c);
  same(&a, &b);
  same(&a, &c);
  free(a.cat);
  free(b.cat);
  free(c.cat);
  return 0;
}
