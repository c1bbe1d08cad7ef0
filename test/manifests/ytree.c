/*
 * libyaml's event stream folded into a tree (ytree.h). One recursive
 * builder per node kind; each owns what it built until it hands it to its
 * parent, and frees it on any error.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <yaml.h>
#include "slicefit/common.h"
#include "ytree.h"

typedef struct {
  yaml_parser_t parser;
  char *err;
  size_t errlen;
} ctx_t;

static yt_node_t *build(ctx_t *c, yaml_event_t *ev, int depth);

static yt_node_t *mknode(yt_kind_t kind)
{
  yt_node_t *n = sf_xcalloc(1, sizeof *n);
  n->kind = kind;
  return n;
}

static void push(yt_node_t *n, char *key, yt_node_t *item)
{
  sf_xgrow(&n->items, &n->cap, n->n + 1, sizeof *n->items);
  if (n->kind == YT_MAP) {
    sf_xgrow(&n->keys, &n->kcap, n->n + 1, sizeof *n->keys);
    n->keys[n->n] = key;
  }
  n->items[n->n++] = item;
}

static void fail(ctx_t *c, const char *what, const yaml_mark_t *m)
{
  snprintf(c->err, c->errlen, "line %zu, column %zu: %s", m->line + 1, m->column + 1, what);
}

/* The next event; false (err set) when libyaml reports a syntax error. */
static int next(ctx_t *c, yaml_event_t *ev)
{
  if (yaml_parser_parse(&c->parser, ev))
    return 1;
  fail(c, c->parser.problem ? c->parser.problem : "malformed YAML", &c->parser.problem_mark);
  return 0;
}

/* Items until the end event; a map reads a scalar key before each value. */
static yt_node_t *collection(ctx_t *c, yt_kind_t kind, int depth)
{
  yt_node_t *n = mknode(kind);
  yaml_event_type_t end = kind == YT_MAP ? YAML_MAPPING_END_EVENT : YAML_SEQUENCE_END_EVENT;
  for (;;) {
    yaml_event_t ev;
    char *key = NULL;
    if (!next(c, &ev))
      goto fail;
    if (ev.type == end) {
      yaml_event_delete(&ev);
      return n;
    }
    if (kind == YT_MAP) {
      if (ev.type != YAML_SCALAR_EVENT) {
        fail(c, "a map key that is not a scalar", &ev.start_mark);
        yaml_event_delete(&ev);
        goto fail;
      }
      key = sf_xstrdup((const char *)ev.data.scalar.value);
      yaml_event_delete(&ev);
      if (!next(c, &ev)) {
        free(key);
        goto fail;
      }
    }
    yt_node_t *item = build(c, &ev, depth + 1);
    yaml_event_delete(&ev);
    if (item == NULL) {
      free(key);
      goto fail;
    }
    push(n, key, item);
  }
fail:
  yt_free(n);
  return NULL;
}

static yt_node_t *build(ctx_t *c, yaml_event_t *ev, int depth)
{
  if (depth > YT_DEPTH_MAX) {
    fail(c, "nested too deeply", &ev->start_mark);
    return NULL;
  }
  switch (ev->type) {
  case YAML_SCALAR_EVENT: {
    yt_node_t *n = mknode(YT_SCALAR);
    n->str = sf_xmalloc(ev->data.scalar.length + 1);
    memcpy(n->str, ev->data.scalar.value, ev->data.scalar.length);
    n->str[ev->data.scalar.length] = '\0';
    return n;
  }
  case YAML_SEQUENCE_START_EVENT: return collection(c, YT_SEQ, depth);
  case YAML_MAPPING_START_EVENT: return collection(c, YT_MAP, depth);
  case YAML_ALIAS_EVENT: fail(c, "aliases are not supported", &ev->start_mark); return NULL;
  default: fail(c, "unexpected YAML event", &ev->start_mark); return NULL;
  }
}

/* One document after its DOCUMENT-START event: the root, then DOCUMENT-END. */
static yt_node_t *document(ctx_t *c)
{
  yaml_event_t ev;
  if (!next(c, &ev))
    return NULL;
  yt_node_t *root = build(c, &ev, 0);
  yaml_event_delete(&ev);
  if (root == NULL || !next(c, &ev)) {
    yt_free(root);
    return NULL;
  }
  yaml_event_delete(&ev);
  return root;
}

yt_node_t *yt_parse(const char *text, size_t len, char *err, size_t errlen)
{
  ctx_t c = {.err = err, .errlen = errlen};
  yt_node_t *docs = mknode(YT_SEQ);
  if (!yaml_parser_initialize(&c.parser))
    abort();
  yaml_parser_set_input_string(&c.parser, (const unsigned char *)text, len);
  for (;;) {
    yaml_event_t ev;
    if (!next(&c, &ev))
      goto fail;
    yaml_event_type_t t = ev.type;
    yaml_event_delete(&ev);
    if (t == YAML_STREAM_END_EVENT)
      break;
    if (t != YAML_DOCUMENT_START_EVENT)
      continue;
    yt_node_t *doc = document(&c);
    if (doc == NULL)
      goto fail;
    push(docs, NULL, doc);
  }
  yaml_parser_delete(&c.parser);
  return docs;
fail:
  yaml_parser_delete(&c.parser);
  yt_free(docs);
  return NULL;
}

void yt_free(yt_node_t *n)
{
  if (n == NULL)
    return;
  for (size_t i = 0; i < n->n; i++) {
    if (n->keys)
      free(n->keys[i]);
    yt_free(n->items[i]);
  }
  free(n->keys);
  free(n->items);
  free(n->str);
  free(n);
}

const yt_node_t *yt_get(const yt_node_t *n, const char *key)
{
  if (n == NULL || n->kind != YT_MAP)
    return NULL;
  for (size_t i = 0; i < n->n; i++)
    if (strcmp(n->keys[i], key) == 0)
      return n->items[i];
  return NULL;
}

const yt_node_t *yt_dig(const yt_node_t *n, ...)
{
  va_list ap;
  va_start(ap, n);
  for (const char *k = va_arg(ap, const char *); k != NULL && n != NULL; k = va_arg(ap, const char *))
    n = yt_get(n, k);
  va_end(ap);
  return n;
}

const char *yt_str(const yt_node_t *n)
{
  return n != NULL && n->kind == YT_SCALAR ? n->str : NULL;
}

size_t yt_len(const yt_node_t *n)
{
  return n != NULL && n->kind != YT_SCALAR ? n->n : 0;
}

const yt_node_t *yt_at(const yt_node_t *n, size_t i)
{
  return i < yt_len(n) ? n->items[i] : NULL;
}
