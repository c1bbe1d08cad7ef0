/*
 * slicefit listscan: a Kubernetes List (`{"kind":..., "metadata":...,
 * "items":[...]}`) read item by item as its bytes arrive, so that a list
 * of any length never sits whole in memory, as text or as a jansson tree.
 *
 * The scanner tracks strings and bracket depth only. Each element of the
 * root object's "items" array is handed to a callback as its own text
 * (jansson parses it there); every other byte of the root is kept, so that
 * at the end the root without its items' elements (`"items":[]`: the
 * metadata with resourceVersion and continue) is parsed whole. Input is
 * untrusted: sizes are capped and anything that is not one JSON object is
 * an error; what the scanner lets through, jansson still checks.
 *
 * Shell code (jansson). One scanner per list; not thread-safe.
 */
#ifndef SLICEFIT_LISTSCAN_H
#define SLICEFIT_LISTSCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#define SF_LISTSCAN_MAX_DEPTH 512

/* One item's text (borrowed, valid during the call, NUL-terminated); nonzero stops the scan. */
typedef int (*sf_listscan_item_fn)(void *ud, const char *text, size_t len);

typedef struct {
  char *item; /* the element being read */
  size_t ilen, icap;
  char *rest; /* the root, its items' elements left out */
  size_t rlen, rcap;
  size_t max;       /* cap on one element and on the rest */
  uint32_t depth;   /* open brackets and braces */
  bool in_str, esc; /* inside a string; after its backslash */
  bool started, ended;
  bool want_key;  /* at depth 1, the next string is a member's key */
  bool in_key;    /* reading that key */
  bool key_items; /* the member being read is "items" */
  bool in_items;  /* inside the root's items array (depth 2) */
  uint8_t elem;   /* 0: between elements; '{', '[', '"' or 's' (scalar): reading one */
  uint8_t sep;    /* between elements: after '[', after an element, after ',' */
  char key[8];    /* the current root key, cut */
  size_t klen;
  size_t items; /* elements handed out so far */
} sf_listscan_t;

/** Ready for one list; `max_bytes` caps one item and the rest of the root (0: 64 MiB). */
void sf_listscan_init(sf_listscan_t *s, size_t max_bytes);
void sf_listscan_dispose(sf_listscan_t *s);
/**
 * Consumes `len` bytes, calling `fn` for each item that ends within them.
 * Returns 0; SF_EINVAL when the bytes are not one JSON object (a stray byte
 * around the root, a bracket closed by a brace, depth past
 * SF_LISTSCAN_MAX_DEPTH); SF_E2BIG past the cap; or what `fn` returned.
 * After an error the scanner must be disposed. Cost: O(len) and the callbacks.
 */
int sf_listscan_feed(sf_listscan_t *s, const char *data, size_t len, sf_listscan_item_fn fn,
                     void *ud);
/**
 * After the last byte: the root object with its items' elements left out
 * (new reference), or NULL with the reason in `err` (the list ended early,
 * or the rest is not JSON). An "items" key the scanner did not see as such
 * (spelled with escapes) keeps its elements in the result: the caller reads
 * them from there.
 */
json_t *sf_listscan_finish(sf_listscan_t *s, char *err, size_t errlen);

#endif
