/*
 * --snapshot FILE: a List read item by item (listscan.h) and decoded as it
 * is read, so that loading holds the decoded objects and one item's JSON at
 * a time, never the file's whole tree (about ten times its text). The
 * objects are installed together at the end, as sf_cluster_load_list does.
 * As live mode treats objects, a bad item is rejected alone (logged and
 * counted) and the rest served; with --strict it refuses the file.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ext_int.h"
#include "slicefit/decode.h"
#include "slicefit/listscan.h"

#define CHUNK ((size_t)1 << 20)

typedef struct {
  sf_cluster_t *cluster;
  bool each; /* a bad item is rejected alone (not --strict) */
  sf_object_t **objs;
  size_t n, cap, index;
  json_t *pending;
  char *err;
  size_t errlen;
} load_t;

static int take(load_t *l, json_t *it)
{
  sf_object_t *o = NULL;
  int rc = sf_cluster_decode_item(l->cluster, it, l->index++, l->each, &o, l->err, l->errlen);
  if (rc == 0 && o) {
    sf_xgrow(&l->objs, &l->cap, l->n + 1, sizeof *l->objs);
    l->objs[l->n++] = o;
    if (o->kind == SF_OBJ_RESOURCE_CLAIM)
      sf__pending_apply(l->pending, it);
  }
  return rc;
}

static int on_item(void *ud, const char *text, size_t len)
{
  load_t *l = ud;
  json_error_t je;
  json_t *it = json_loadb(text, len, 0, &je);
  if (it == NULL) {
    snprintf(l->err, l->errlen, "items[%zu]: %s", l->index, je.text);
    return SF_EINVAL;
  }
  int rc = take(l, it);
  json_decref(it);
  return rc;
}

/* Items the scanner left in the root (an "items" key spelled with escapes). */
static int take_rest(load_t *l, const json_t *root)
{
  const json_t *items = json_object_get(root, "items"), *it;
  size_t i;
  if (!json_is_array(items)) {
    snprintf(l->err, l->errlen, "items: is required");
    return SF_EINVAL;
  }
  json_array_foreach(items, i, it)
  {
    int rc = take(l, (json_t *)(uintptr_t)it);
    if (rc)
      return rc;
  }
  return 0;
}

static int scan_file(FILE *f, load_t *l)
{
  sf_listscan_t s;
  sf_listscan_init(&s, 0);
  char *buf = sf_xmalloc(CHUNK);
  int rc = 0;
  size_t got;
  while (rc == 0 && (got = fread(buf, 1, CHUNK, f)) > 0)
    rc = sf_listscan_feed(&s, buf, got, on_item, l);
  if (rc == 0 && ferror(f)) {
    snprintf(l->err, l->errlen, "read error");
    rc = SF_EINVAL;
  } else if (rc == SF_EINVAL && l->err[0] == '\0') {
    snprintf(l->err, l->errlen, "not one JSON List object (near item %zu)", s.items);
  } else if (rc == SF_E2BIG) {
    snprintf(l->err, l->errlen, "an item larger than 64 MiB (item %zu)", s.items);
  }
  json_t *root = rc == 0 ? sf_listscan_finish(&s, l->err, l->errlen) : NULL;
  if (rc == 0 && root == NULL)
    rc = SF_EINVAL;
  if (rc == 0)
    rc = take_rest(l, root);
  json_decref(root);
  free(buf);
  sf_listscan_dispose(&s);
  return rc;
}

int sf__snapshot_load(sf_cluster_t *c, json_t *pending, const char *path, bool strict, char *err,
                      size_t errlen)
{
  char why[SF_ERR_MAX] = "";
  load_t l = {.cluster = c, .each = !strict, .pending = pending, .err = why, .errlen = sizeof why};
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return SF_ENOENT;
  }
  int rc = scan_file(f, &l);
  fclose(f);
  if (rc == 0)
    rc = sf_cluster_load_objects(c, l.objs, l.n, why, sizeof why);
  else
    for (size_t i = 0; i < l.n; i++)
      sf_object_free(l.objs[i]);
  if (rc)
    snprintf(err, errlen, "%s: %s", path, why);
  free(l.objs);
  return rc;
}
