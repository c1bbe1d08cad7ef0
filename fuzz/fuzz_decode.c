/*
 * libFuzzer target for the object decoders and the cluster built from them.
 *
 * The input is JSON. An object is decoded as whatever its "kind" says; an
 * array is a sequence of operations on a new cluster: each element is
 * applied (a "List" element is loaded whole, an element with "$delete"
 * deletes, a Pod is planned and evaluated on every node, or recorded as a
 * watched pod when it has "$apply": true). Invariants, after every operation:
 *   - a failed decode or apply names a path and a reason ("...: ...");
 *   - the index is consistent (sf_index_validate), and each node's CPU and
 *     memory in use are the sums over its pods (sf_cluster_pods_validate);
 *   - a failed apply changes nothing: the object counts and the devices per
 *     node are what they were;
 *   - every verdict is YES, NO or UNSURE, with a reason unless YES.
 * Seeds: fuzz/corpus/decode/ (fixture objects and operation sequences).
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "slicefit/cluster.h"
#include "slicefit/decode.h"
#include "slicefit/log.h"

/* What a failed apply must leave as it was: object counts and devices per node. */
static char *summary(sf_cluster_t *c)
{
  sf_index_t *idx = sf_cluster_index(c);
  json_t *s = json_object();
  for (int k = 1; k < SF_KIND_COUNT; k++)
    json_object_set_new(s, sf_kind_name((sf_kind_t)k),
                        json_integer((json_int_t)sf_cluster_count(c, (sf_kind_t)k)));
  for (sf_node_id n = 0; n < sf_index_node_end(idx); n++) {
    size_t nd = 0;
    if (!sf_index_node_live(idx, n))
      continue;
    sf_index_node_devices(idx, n, &nd);
    json_object_set_new(s, sf_index_node_name(idx, n), json_integer((json_int_t)nd));
  }
  char *text = json_dumps(s, JSON_SORT_KEYS | JSON_COMPACT);
  json_decref(s);
  return text;
}

static void check_error(int r, const char *err)
{
  if (r < 0)
    assert(err[0] && strstr(err, ": "));
}

static void check_valid(sf_cluster_t *c)
{
  char why[256];
  if (sf_index_validate(sf_cluster_index(c), why, sizeof why) != 0) {
    fprintf(stderr, "index invalid: %s\n", why);
    abort();
  }
  /* Each node's CPU and memory in use are its bound pods' sums, and the index carries them. */
  if (sf_cluster_pods_validate(c, why, sizeof why) != 0) {
    fprintf(stderr, "pods' sums invalid: %s\n", why);
    abort();
  }
}

static void plan_pod(sf_cluster_t *c, const json_t *pod)
{
  sf_pod_plan_t *p = NULL;
  char err[SF_ERR_MAX];
  int r = sf_cluster_plan(c, pod, &p, err, sizeof err);
  check_error(r, err);
  if (r < 0)
    return;
  sf_index_t *idx = sf_cluster_index(c);
  const char *names[65];
  size_t n = 0;
  for (sf_node_id i = 0; i < sf_index_node_end(idx) && n < 64; i++)
    if (sf_index_node_live(idx, i))
      names[n++] = sf_index_node_name(idx, i);
  names[n++] = "no-such-node";
  sf_verdict_t v[65];
  if (sf_cluster_evaluate(c, p, names, n, v) == 0)
    for (size_t i = 0; i < n; i++) {
      assert(v[i].fit == SF_FIT_YES || v[i].fit == SF_FIT_NO || v[i].fit == SF_FIT_UNSURE);
      assert(v[i].fit == SF_FIT_YES || v[i].reason[0]);
    }
  sf_pod_plan_free(p);
}

static void operate(sf_cluster_t *c, const json_t *op)
{
  char err[SF_ERR_MAX] = "", *before = summary(c);
  const char *kind = json_string_value(json_object_get(op, "kind"));
  int r = 0;
  /* A Pod is planned and evaluated, or with "$apply": true recorded as a watched pod. */
  if (kind && !strcmp(kind, "Pod") && !json_is_true(json_object_get(op, "$apply")))
    plan_pod(c, op);
  else if (kind && !strcmp(kind, "List"))
    r = sf_cluster_load_list(c, op, err, sizeof err);
  else if (json_is_true(json_object_get(op, "$delete")))
    r = sf_cluster_delete(c, SF_KIND_UNKNOWN, op, err, sizeof err);
  else
    r = sf_cluster_apply(c, SF_KIND_UNKNOWN, op, err, sizeof err);
  check_error(r, err);
  check_valid(c);
  char *after = summary(c);
  if (r < 0 && strcmp(before, after)) {
    fprintf(stderr, "failed apply changed the cluster: %s\n%s\n-> %s\n", err, before, after);
    abort();
  }
  free(before);
  free(after);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  json_t *j = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
  if (!j)
    return 0;
  sf_log_set_verbosity(-1);
  if (json_is_object(j)) {
    sf_object_t *o = NULL;
    char err[SF_ERR_MAX] = "";
    int r = sf_decode(j, SF_OBJ_UNKNOWN, &o, err, sizeof err);
    check_error(r, err);
    assert((r == 0) == (o != NULL));
    sf_object_free(o);
  }
  sf_cluster_t *c = sf_cluster_create(NULL);
  size_t i;
  json_t *op;
  if (json_is_array(j)) {
    json_array_foreach(j, i, op) if (i < 64) operate(c, op);
    json_t *st = sf_cluster_state_json(c);
    json_decref(st);
  } else {
    operate(c, j);
  }
  sf_cluster_destroy(c);
  json_decref(j);
  return 0;
}
