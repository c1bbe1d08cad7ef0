/* Lists read item by item, and slices that outlive their JSON. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "slicefit/common.h"
#include "slicefit/decode.h"
#include "slicefit/listscan.h"

typedef struct {
  json_t *got; /* the items, parsed */
  int stop_at; /* return 99 at this item (-1: never) */
} sink_t;

static int on_item(void *ud, const char *text, size_t len)
{
  sink_t *k = ud;
  cr_assert_eq(strlen(text), len, "the item is NUL-terminated at its length");
  json_t *j = json_loadb(text, len, JSON_DECODE_ANY, NULL);
  cr_assert_not_null(j, "item %zu is whole JSON: %s", json_array_size(k->got), text);
  json_array_append_new(k->got, j);
  return (int)json_array_size(k->got) - 1 == k->stop_at ? 99 : 0;
}

/* Scans `text` fed in chunks of `chunk` bytes; returns the feed's result, fills *root at the end. */
static int scan(const char *text, size_t chunk, sink_t *k, json_t **root, size_t max)
{
  sf_listscan_t s;
  sf_listscan_init(&s, max);
  size_t len = strlen(text);
  int rc = 0;
  for (size_t off = 0; rc == 0 && off < len; off += chunk)
    rc = sf_listscan_feed(&s, text + off, len - off < chunk ? len - off : chunk, on_item, k);
  char err[256];
  *root = rc == 0 ? sf_listscan_finish(&s, err, sizeof err) : NULL;
  sf_listscan_dispose(&s);
  return rc;
}

static const char LIST[] =
    "{\"kind\":\"ResourceClaimList\",\"metadata\":{\"resourceVersion\":\"42\",\"items\":[1],"
    "\"continue\":\"\"},\n \"items\" : [ {\"metadata\":{\"name\":\"a]}\\\"[{\"},\"items\":[{}]},"
    "\n{\"metadata\":{\"name\":\"b\"},\"x\":[[],{}]} , \"s\\\"]\", 17, null,[1,[2]]], \"tail\":true}";

Test(listscan, items_one_by_one_at_every_chunk_size)
{
  json_t *want = json_loads(LIST, 0, NULL);
  cr_assert_not_null(want);
  for (size_t chunk = 1; chunk <= sizeof LIST; chunk++) {
    sink_t k = {json_array(), -1};
    json_t *root = NULL;
    cr_assert_eq(scan(LIST, chunk, &k, &root, 0), 0, "chunk %zu", chunk);
    cr_assert(json_equal(k.got, json_object_get(want, "items")), "chunk %zu: the same items", chunk);
    cr_assert_not_null(root);
    cr_assert_eq(json_array_size(json_object_get(root, "items")), 0, "items left out of the root");
    cr_assert(json_equal(json_object_get(root, "metadata"), json_object_get(want, "metadata")),
              "the metadata kept whole (its own items member too)");
    cr_assert(json_is_true(json_object_get(root, "tail")), "members after items are kept");
    json_decref(root);
    json_decref(k.got);
  }
  json_decref(want);
}

Test(listscan, null_and_empty_items)
{
  const char *cases[] = {"{\"items\":null,\"metadata\":{}}", "{\"items\":[]}", "{}",
                         " {\"items\":[ ]} \n"};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    sink_t k = {json_array(), -1};
    json_t *root = NULL;
    cr_assert_eq(scan(cases[i], 3, &k, &root, 0), 0, "%s", cases[i]);
    cr_assert_eq(json_array_size(k.got), 0);
    cr_assert_not_null(root, "%s", cases[i]);
    json_decref(root);
    json_decref(k.got);
  }
}

Test(listscan, an_items_key_with_escapes_stays_in_the_root)
{
  sink_t k = {json_array(), -1};
  json_t *root = NULL;
  cr_assert_eq(scan("{\"it\\u0065ms\":[{\"a\":1}]}", 5, &k, &root, 0), 0);
  cr_assert_eq(json_array_size(k.got), 0);
  cr_assert_eq(json_array_size(json_object_get(root, "items")), 1, "jansson reads it as items");
  json_decref(root);
  json_decref(k.got);
}

Test(listscan, bad_lists_are_errors)
{
  const char *bad[] = {
      "[{}]",               /* not an object */
      "{\"items\":[{}]} x", /* a stray byte after the root */
      "{\"items\":[{}]}{}", /* two roots */
      "{\"items\":[{}{}]}", /* no comma between items */
      "{\"items\":[{},]}",  /* a trailing comma */
      "{\"items\":[,{}]}",  /* a leading comma */
      "x{\"items\":[]}",    /* a stray byte before */
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    sink_t k = {json_array(), -1};
    json_t *root = NULL;
    cr_assert_eq(scan(bad[i], 2, &k, &root, 0), SF_EINVAL, "%s", bad[i]);
    json_decref(k.got);
  }
  char deep[2 * SF_LISTSCAN_MAX_DEPTH + 16] = "{\"a\":";
  for (size_t i = 0; i < SF_LISTSCAN_MAX_DEPTH; i++)
    strcat(deep, "[");
  sink_t k = {json_array(), -1};
  json_t *root = NULL;
  cr_assert_eq(scan(deep, 64, &k, &root, 0), SF_EINVAL, "nesting past the cap");
  json_decref(k.got);
}

Test(listscan, an_unfinished_or_malformed_rest_fails_at_the_end)
{
  const char *bad[] = {"{\"items\":[{}]", "{\"metadata\":{\"a\" 1},\"items\":[]}", ""};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    sf_listscan_t s;
    sf_listscan_init(&s, 0);
    sink_t k = {json_array(), -1};
    cr_assert_eq(sf_listscan_feed(&s, bad[i], strlen(bad[i]), on_item, &k), 0);
    char err[256] = "";
    cr_assert_null(sf_listscan_finish(&s, err, sizeof err), "%s", bad[i]);
    cr_assert_neq(err[0], '\0', "a reason is given");
    sf_listscan_dispose(&s);
    json_decref(k.got);
  }
}

Test(listscan, caps_and_stops)
{
  sink_t k = {json_array(), -1};
  json_t *root = NULL;
  cr_assert_eq(scan("{\"items\":[{\"a\":\"0123456789\"}]}", 4, &k, &root, 16), SF_E2BIG,
               "an item past the cap");
  json_decref(k.got);
  k = (sink_t){json_array(), -1};
  cr_assert_eq(scan("{\"metadata\":{\"a\":\"0123456789abcdef\"},\"items\":[]}", 4, &k, &root, 16),
               SF_E2BIG, "a root past the cap");
  json_decref(k.got);
  k = (sink_t){json_array(), 1};
  cr_assert_eq(scan("{\"items\":[1,2,3]}", 1, &k, &root, 0), 99, "the callback's code stops it");
  cr_assert_eq(json_array_size(k.got), 2);
  json_decref(k.got);
}

/* ---- slices decoded keep no pointer into their JSON ---- */

Test(slice_detach, strings_are_copied_and_the_tree_dropped)
{
  json_t *j = json_loads(
      "{\"kind\":\"ResourceSlice\",\"apiVersion\":\"resource.k8s.io/v1\",\"metadata\":{\"name\":"
      "\"s1\",\"uid\":\"u\"},\"spec\":{\"driver\":\"gpu.example.com\",\"nodeName\":\"n1\","
      "\"pool\":{\"name\":\"p\",\"generation\":1,\"resourceSliceCount\":1},\"devices\":[{\"name\":"
      "\"gpu-0\",\"attributes\":{\"model\":{\"string\":\"H100\"},\"x.io/y\":{\"string\":\"z\"}},"
      "\"capacity\":{\"memory\":{\"value\":\"80Gi\"}},\"taints\":[{\"key\":\"k\",\"value\":\"v\","
      "\"effect\":\"NoSchedule\"}]}]}}",
      0, NULL);
  cr_assert_not_null(j);
  sf_object_t *o = NULL;
  char err[256];
  cr_assert_eq(sf_decode(j, SF_OBJ_UNKNOWN, &o, err, sizeof err), 0, "%s", err);
  cr_assert_null(o->json, "a slice by nodeName keeps nothing of its JSON");
  const sf_slice_t *s = &o->u.slice;
  const sf_device_spec_t *d = &s->devs[0];
  const char *strs[] = {s->meta.name,     s->driver,         s->pool,          s->node,
                        d->name,          d->attrs[0].s,     d->attrs[1].name, d->attrs[1].s,
                        d->taints[0].key, d->taints[0].value};
  const char *model = json_string_value(json_object_get(
      json_object_get(json_object_get(json_array_get(json_object_get(json_object_get(j, "spec"),
                                                                     "devices"),
                                                     0),
                                      "attributes"),
                      "model"),
      "string"));
  for (size_t i = 0; i < sizeof strs / sizeof *strs; i++)
    cr_assert_neq(strs[i], model, "string %zu is a copy", i);
  cr_assert_neq(s->node, json_string_value(json_object_get(json_object_get(j, "spec"), "nodeName")));
  json_decref(j); /* the object outlives its JSON */
  cr_assert_str_eq(s->meta.name, "s1");
  cr_assert_str_eq(s->node, "n1");
  cr_assert_str_eq(d->name, "gpu-0");
  cr_assert_str_eq(d->attrs[0].s, "H100");
  cr_assert_str_eq(d->attrs[1].name, "x.io/y");
  cr_assert_str_eq(d->taints[0].value, "v");
  cr_assert_str_eq(d->caps[0].name, "gpu.example.com/memory");
  sf_object_free(o);
}

Test(slice_detach, node_selectors_and_counters_are_kept)
{
  const char *text =
      "{\"kind\":\"ResourceSlice\",\"apiVersion\":\"resource.k8s.io/v1\",\"metadata\":{\"name\":"
      "\"s2\"},\"spec\":{\"driver\":\"d.io\",\"nodeSelector\":{\"nodeSelectorTerms\":[{"
      "\"matchLabels\":{}}]},\"pool\":{\"name\":\"p\",\"generation\":1,\"resourceSliceCount\":1},"
      "\"sharedCounters\":[{\"name\":\"cs\",\"counters\":{\"mem\":{\"value\":\"1\"}}}],"
      "\"devices\":[{\"name\":\"a\",\"attributes\":{\"big\":{\"string\":\"xxxxxxxxxxxxxxxx\"}}},"
      "{\"name\":\"b\",\"consumesCounters\":[{\"counterSet\":\"cs\",\"counters\":{\"mem\":{"
      "\"value\":\"1\"}}}]}]}}";
  json_t *j = json_loads(text, 0, NULL);
  sf_object_t *o = NULL;
  char err[256];
  cr_assert_eq(sf_decode(j, SF_OBJ_UNKNOWN, &o, err, sizeof err), 0, "%s", err);
  const json_t *spec = json_object_get(o->json, "spec");
  cr_assert(json_equal(json_object_get(spec, "nodeSelector"),
                       json_object_get(json_object_get(j, "spec"), "nodeSelector")));
  cr_assert_eq(json_array_size(json_object_get(spec, "sharedCounters")), 1);
  const json_t *devs = json_object_get(spec, "devices");
  cr_assert_eq(json_array_size(devs), 2, "one entry per device, in order");
  cr_assert_null(json_object_get(json_array_get(devs, 0), "attributes"), "attributes are dropped");
  cr_assert_not_null(json_object_get(json_array_get(devs, 1), "consumesCounters"));
  json_decref(j);
  cr_assert_str_eq(o->u.slice.devs[0].attrs[0].s, "xxxxxxxxxxxxxxxx");
  cr_assert_str_eq(o->u.slice.devs[1].counters[0].set, "cs");
  sf_object_free(o);
}
