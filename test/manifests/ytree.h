/*
 * A YAML stream as a tree, for the manifests test: what `kubectl kustomize`
 * prints, loaded with libyaml into maps, sequences and scalars (all scalars
 * kept as text: "true", "2" and "4Gi" alike). Anchors and aliases are
 * refused; kubectl never prints them. Nesting deeper than YT_DEPTH_MAX is
 * refused too.
 *
 * Test support code: not part of the daemon.
 */
#ifndef SLICEFIT_TEST_YTREE_H
#define SLICEFIT_TEST_YTREE_H

#include <stddef.h>

#define YT_DEPTH_MAX 64

typedef enum { YT_SCALAR, YT_SEQ, YT_MAP } yt_kind_t;

typedef struct yt_node {
  yt_kind_t kind;
  char *str;              /* YT_SCALAR: the text (owned) */
  char **keys;            /* YT_MAP: n keys (owned) */
  struct yt_node **items; /* YT_SEQ: n items; YT_MAP: n values (owned) */
  size_t n, cap, kcap;
} yt_node_t;

/**
 * Parses a stream of `len` bytes: a new YT_SEQ of its documents, or NULL
 * with "line L, column C: problem" in err.
 */
yt_node_t *yt_parse(const char *text, size_t len, char *err, size_t errlen);
/** Frees a tree; accepts NULL. */
void yt_free(yt_node_t *n);

/** The value of `key` in a map (borrowed), NULL when n is not a map or lacks it. */
const yt_node_t *yt_get(const yt_node_t *n, const char *key);
/** yt_get along a NULL-terminated list of keys. */
const yt_node_t *yt_dig(const yt_node_t *n, ...);
/** Scalar text (borrowed), NULL when n is not a scalar. */
const char *yt_str(const yt_node_t *n);
/** Items of a sequence or entries of a map; 0 otherwise. */
size_t yt_len(const yt_node_t *n);
/** Item i of a sequence or value i of a map, NULL out of range. */
const yt_node_t *yt_at(const yt_node_t *n, size_t i);

#endif
