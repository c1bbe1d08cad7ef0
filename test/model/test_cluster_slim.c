/* Stored slices without the attributes the index holds (cluster_slim.c): whatever republishes a
 * pool, every device it publishes has its slice's attributes. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include "slicefit/cluster.h"
#include "fixture.h"
#include "cluster_fx.h"

static void setup(void)
{
  ct_cluster = sf_cluster_create(NULL);
}
static void teardown(void)
{
  sf_cluster_destroy(ct_cluster);
}

TestSuite(cluster_slim, .init = setup, .fini = teardown);

/* ct_slice with a uuid per device ("<prefix>-<i>-<tag>") besides its index. */
static json_t *slice(const char *name, const char *pool, int gen, int count, int ndev,
                     const char *prefix, const char *tag)
{
  json_t *s = ct_slice(name, "n1", pool, gen, count, ndev, prefix);
  json_t *devs = json_object_get(json_object_get(s, "spec"), "devices"), *d;
  size_t i;
  json_array_foreach(devs, i, d)
  {
    char uuid[96];
    snprintf(uuid, sizeof uuid, "%s-%zu-%s", prefix, i, tag);
    json_object_set_new(json_object_get(d, "attributes"), "uuid", json_pack("{s:s}", "string", uuid));
  }
  return s;
}

/* Fails unless device prefix-i of `pool` is published with its index and uuid for each i < n. */
static void published_as(const char *pool, const char *prefix, int n, const char *tag)
{
  sf_index_t *idx = sf_cluster_index(ct_cluster);
  for (int i = 0; i < n; i++) {
    char name[64], uuid[96];
    snprintf(name, sizeof name, "%s-%d", prefix, i);
    snprintf(uuid, sizeof uuid, "%s-%d-%s", prefix, i, tag);
    sf_dev_id d = sf_index_dev_find(idx, "gpu.example.com", pool, name);
    cr_assert_geq(d, 0, "%s is published", name);
    cr_assert_eq(sf_index_dev_nattrs(idx, d), 2, "%s has its two attributes", name);
    const sf_attr_t *a = sf_index_dev_attr(idx, d, "gpu.example.com/index");
    cr_assert(a && a->type == SF_ATTR_INT && a->i == i, "%s: index", name);
    a = sf_index_dev_attr(idx, d, "gpu.example.com/uuid");
    cr_assert(a && a->type == SF_ATTR_STRING && !strcmp(a->s, uuid), "%s: uuid", name);
  }
}

/* Deletes slice `s`, which must succeed, and checks the index. */
static void del(json_t *s)
{
  cr_assert_eq(sf_cluster_delete(ct_cluster, SF_KIND_RESOURCE_SLICE, s, ct_err, sizeof ct_err), 0,
               "%s", ct_err);
  ct_valid();
}

Test(cluster_slim, slices_unpublished_and_published_again_keep_their_attributes)
{
  json_t *a = slice("a", "p", 1, 2, 2, "a", "x"), *b = slice("b", "p", 1, 2, 3, "b", "x");
  json_t *c = slice("c", "p", 2, 1, 1, "c", "x");
  ct_apply(a);
  ct_apply(b);
  published_as("p", "a", 2, "x");
  published_as("p", "b", 3, "x");
  ct_apply(c); /* a newer generation: a and b leave the index */
  cr_assert_eq(ct_node_devs("n1"), 1);
  del(c);
  cr_assert_eq(ct_node_devs("n1"), 5);
  published_as("p", "a", 2, "x");
  published_as("p", "b", 3, "x");
  json_decref(c);
  json_decref(a);
  json_decref(b);
}

Test(cluster_slim, a_slice_changing_leaves_the_others_of_its_pool_whole)
{
  json_t *a = slice("a", "p", 1, 2, 2, "a", "x"), *b = slice("b", "p", 1, 2, 3, "b", "x");
  json_t *a2 = slice("a", "p", 1, 2, 2, "a", "y");
  ct_apply(a);
  ct_apply(b);
  ct_apply(a2); /* b's pool republishes from b and the new a */
  published_as("p", "a", 2, "y");
  published_as("p", "b", 3, "x");
  del(a2);
  json_decref(a2);
  cr_assert_eq(ct_node_devs("n1"), 0, "1 of 2 slices: incomplete");
  ct_apply(a);
  published_as("p", "a", 2, "x");
  published_as("p", "b", 3, "x");
  json_decref(a);
  json_decref(b);
}

Test(cluster_slim, relists_and_node_changes_republish_whole_devices)
{
  json_t *items = json_array();
  json_array_append_new(items, slice("a", "p", 1, 1, 4, "a", "x"));
  json_array_append_new(items, slice("q", "q", 1, 1, 2, "q", "x"));
  cr_assert_eq(sf_cluster_replace(ct_cluster, SF_KIND_RESOURCE_SLICE, items, ct_err, sizeof ct_err),
               0, "%s", ct_err);
  published_as("p", "a", 4, "x");
  /* The same list again, then another version of one slice: every pool republishes. */
  cr_assert_eq(sf_cluster_replace(ct_cluster, SF_KIND_RESOURCE_SLICE, items, ct_err, sizeof ct_err),
               0, "%s", ct_err);
  published_as("p", "a", 4, "x");
  published_as("q", "q", 2, "x");
  json_array_set_new(items, 1, slice("q", "q", 1, 1, 2, "q", "y"));
  cr_assert_eq(sf_cluster_replace(ct_cluster, SF_KIND_RESOURCE_SLICE, items, ct_err, sizeof ct_err),
               0, "%s", ct_err);
  ct_valid();
  published_as("p", "a", 4, "x");
  published_as("q", "q", 2, "y");
  /* A kube minor version that turns a gate off republishes every pool. */
  sf_cluster_set_kube_minor(ct_cluster, 34);
  published_as("p", "a", 4, "x");
  published_as("q", "q", 2, "y");
  json_decref(items);
}
