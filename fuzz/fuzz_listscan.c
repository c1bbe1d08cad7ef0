/*
 * libFuzzer target for model/listscan.c. The input is a List's text. It is
 * scanned twice, whole and in chunks whose sizes come from the input's own
 * bytes: both must hand out the same items, in the same order, and end the
 * same way. When the scan succeeds, every item is JSON, the rest of the root
 * is JSON, and the whole text is JSON whose "items" are the items handed out
 * followed by those the rest kept; when jansson, refusing duplicate keys,
 * reads the whole text as an object with an "items" array of depth the
 * scanner allows, the scan succeeds.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "slicefit/listscan.h"

#define CAP 65536

typedef struct {
  json_t *items; /* the items handed out, parsed (an unparsable one stops the scan) */
  int rc;        /* the scan's result: 0, SF_E..., or 1 for an item jansson refused */
  json_t *rest;  /* sf_listscan_finish's root, when the scan succeeded */
} outcome_t;

static int take(void *ud, const char *text, size_t len)
{
  outcome_t *o = ud;
  assert(strlen(text) <= len && text[len] == '\0');
  json_t *it = json_loadb(text, len, JSON_DECODE_ANY, NULL);
  if (it == NULL)
    return 1;
  json_array_append_new(o->items, it);
  return 0;
}

/* Scans data in chunks: step(i) gives the size of chunk i (>= 1). */
static void scan(const uint8_t *data, size_t size, size_t (*step)(const uint8_t *, size_t, size_t),
                 outcome_t *o)
{
  sf_listscan_t s;
  sf_listscan_init(&s, CAP);
  o->items = json_array();
  o->rc = 0;
  o->rest = NULL;
  for (size_t at = 0, i = 0; at < size && o->rc == 0; i++) {
    size_t n = step(data, size, i);
    n = n < size - at ? n : size - at;
    o->rc = sf_listscan_feed(&s, (const char *)data + at, n, take, o);
    at += n;
  }
  char err[128];
  if (o->rc == 0)
    o->rest = sf_listscan_finish(&s, err, sizeof err);
  sf_listscan_dispose(&s);
}

static size_t whole(const uint8_t *d, size_t size, size_t i)
{
  (void)d;
  (void)i;
  return size;
}

static size_t chunks(const uint8_t *d, size_t size, size_t i)
{
  return size ? (size_t)d[(i * 7) % size] % 13 + 1 : 1;
}

/* Is v nested deeper than `most` arrays and objects? */
static bool deeper(const json_t *v, size_t most)
{
  if (!json_is_array(v) && !json_is_object(v))
    return false;
  if (most == 0)
    return true;
  const char *k;
  size_t i;
  json_t *e;
  if (json_is_array(v)) {
    json_array_foreach(v, i, e) if (deeper(e, most - 1)) return true;
  } else {
    json_object_foreach((json_t *)(uintptr_t)v, k, e) if (deeper(e, most - 1)) return true;
  }
  return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  outcome_t a, b;
  scan(data, size, whole, &a);
  scan(data, size, chunks, &b);
  assert(a.rc == b.rc);
  assert(json_equal(a.items, b.items));
  assert((a.rest == NULL) == (b.rest == NULL));
  assert(a.rest == NULL || json_equal(a.rest, b.rest));
  json_t *doc = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
  if (a.rest != NULL) {
    /* What the scanner let through, jansson reads whole: the items it handed out, then the rest's. */
    json_t *all = json_deep_copy(a.items);
    json_array_extend(all, json_object_get(a.rest, "items"));
    json_t *whole_doc = json_loadb((const char *)data, size, 0, NULL);
    assert(whole_doc != NULL && json_is_object(whole_doc));
    const json_t *want = json_object_get(whole_doc, "items");
    const json_t *kept = json_object_get(a.rest, "items");
    if (doc != NULL && json_is_array(want))
      assert(json_equal(want, all));
    else if (doc != NULL) /* no "items" array: nothing handed out, the rest keeps what there is */
      assert(json_array_size(a.items) == 0 && (want ? json_equal(want, kept) : kept == NULL));
    json_decref(whole_doc);
    json_decref(all);
  } else if (doc != NULL && json_is_object(doc) && json_is_array(json_object_get(doc, "items")) &&
             size < CAP && !deeper(doc, SF_LISTSCAN_MAX_DEPTH - 2)) {
    assert(!"jansson reads a List the scanner refused");
  }
  json_decref(doc);
  json_decref(a.items);
  json_decref(b.items);
  json_decref(a.rest);
  json_decref(b.rest);
  return 0;
}
