/* The cluster: the claims recorded on each pool, through claims, relists and churn. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <string.h>
#include "slicefit/mix.h"
#include "slicefit/cluster.h"
#include "fixture.h"
#include "cluster_fx.h"

/* ---- the claims of each pool ---- */

/* A claim named `name` allocated on device `dev` of pool `pool` (example driver), or pending. */
static json_t *pool_claim(const char *name, const char *pool, const char *dev)
{
  char buf[1024];
  if (!pool)
    snprintf(buf, sizeof buf,
             "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\"}}",
             name);
  else
    snprintf(buf, sizeof buf,
             "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\"},\"status\":"
             "{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"r\",\"driver\":\"gpu.example.com\","
             "\"pool\":\"%s\",\"device\":\"%s\"}]}}}}",
             name, pool, dev);
  return fx_json(buf);
}

/* The node claim ns/`name` is recorded on, or "-" when it is not recorded. */
static const char *recorded_on(const char *name)
{
  char key[64];
  sf_index_t *idx = sf_cluster_index(ct_cluster);
  snprintf(key, sizeof key, "ns/%s", name);
  sf_alloc_id a = sf_index_alloc_find(idx, key);
  return a < 0 ? "-" : sf_index_node_name(idx, sf_index_alloc_node(idx, a));
}

static void apply_claim(const char *name, const char *pool, const char *dev)
{
  json_t *cl = pool_claim(name, pool, dev);
  ct_apply(cl);
  json_decref(cl);
}

static void delete_claim(const char *name)
{
  json_t *cl = pool_claim(name, NULL, NULL);
  cr_assert_eq(sf_cluster_delete(ct_cluster, SF_KIND_RESOURCE_CLAIM, cl, ct_err, sizeof ct_err), 0,
               "%s", ct_err);
  json_decref(cl);
  ct_valid();
}

/* Republishes pool `pool` (slice of the same name on node `pool`) with `ndev` devices. */
static void publish_pool(const char *pool, int gen, int ndev)
{
  json_t *s = ct_slice(pool, pool, pool, gen, 1, ndev, "gpu");
  ct_apply(s);
  json_decref(s);
}

/* Claims come, go, and move between pools; a slice republished takes its pool's claims off
 * the index and puts them back, and no other pool's. */
Test(cluster, pool_claim_sets_follow_claims)
{
  publish_pool("n1", 1, 4);
  publish_pool("n2", 1, 4);
  apply_claim("a", "n1", "gpu-0");
  apply_claim("b", "n1", "gpu-1");
  apply_claim("c", "n1", "gpu-2");
  apply_claim("d", "n2", "gpu-0");
  delete_claim("a");               /* the last stored claim (d) moves into its slot */
  apply_claim("e", NULL, NULL);    /* and e takes d's old one */
  apply_claim("b", "n2", "gpu-1"); /* moves to the other pool */
  apply_claim("e", "n1", "gpu-3"); /* pending, then allocated */
  cr_assert_str_eq(recorded_on("b"), "n2");
  publish_pool("n1", 2, 0); /* n1's devices are gone: its claims with them */
  cr_assert_str_eq(recorded_on("c"), "-");
  cr_assert_str_eq(recorded_on("e"), "-");
  cr_assert_str_eq(recorded_on("b"), "n2");
  cr_assert_str_eq(recorded_on("d"), "n2");
  publish_pool("n2", 2, 0);
  cr_assert_str_eq(recorded_on("b"), "-");
  cr_assert_str_eq(recorded_on("d"), "-");
  publish_pool("n1", 3, 4);
  publish_pool("n2", 3, 4);
  cr_assert_str_eq(recorded_on("c"), "n1");
  cr_assert_str_eq(recorded_on("e"), "n1");
  cr_assert_str_eq(recorded_on("b"), "n2");
  cr_assert_str_eq(recorded_on("d"), "n2");
  cr_assert_str_eq(recorded_on("a"), "-");
  delete_claim("c"); /* e fills c's place in n1's set */
  delete_claim("b");
  publish_pool("n1", 4, 0);
  cr_assert_str_eq(recorded_on("e"), "-");
  publish_pool("n1", 5, 4);
  cr_assert_str_eq(recorded_on("e"), "n1");
  apply_claim("e", NULL, NULL); /* allocation taken back */
  publish_pool("n1", 6, 0);
  publish_pool("n1", 7, 4);
  cr_assert_str_eq(recorded_on("e"), "-");
  cr_assert_str_eq(recorded_on("d"), "n2");
}

/* A relist of the claims rebuilds the pool sets; a claim with results on two pools (and two on
 * one) is in both sets once. */
Test(cluster, pool_claim_sets_after_relist)
{
  publish_pool("n1", 1, 2);
  publish_pool("n2", 1, 2);
  apply_claim("old", "n1", "gpu-0");
  json_t *items = json_array();
  json_array_append_new(items, pool_claim("x", "n2", "gpu-0"));
  json_array_append_new(
      items,
      fx_json(
          "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"two\",\"namespace\":\"ns\"},\"status\":"
          "{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"r\",\"driver\":\"gpu.example.com\","
          "\"pool\":\"n1\",\"device\":\"gpu-0\"},{\"request\":\"r\",\"driver\":\"gpu.example.com\","
          "\"pool\":\"n1\",\"device\":\"gpu-1\"},{\"request\":\"s\",\"driver\":\"gpu.example.com\","
          "\"pool\":\"n2\",\"device\":\"gpu-1\"}]}}}}"));
  cr_assert_eq(sf_cluster_replace(ct_cluster, SF_KIND_RESOURCE_CLAIM, items, ct_err, sizeof ct_err),
               0, "%s", ct_err);
  ct_valid();
  cr_assert_str_eq(recorded_on("old"), "-");
  cr_assert_str_eq(recorded_on("two"), "n1", "recorded on its first device's node");
  publish_pool("n1", 2, 0);
  cr_assert_str_eq(recorded_on("two"), "n2", "n1 gone: its devices on n2 remain");
  cr_assert_str_eq(recorded_on("x"), "n2");
  publish_pool("n1", 3, 2);
  cr_assert_str_eq(recorded_on("two"), "n1");
  delete_claim("two");
  publish_pool("n2", 2, 0);
  publish_pool("n2", 3, 2);
  cr_assert_str_eq(recorded_on("x"), "n2");
  cr_assert_str_eq(recorded_on("two"), "-");
  json_decref(items);
}

/* Every claim recorded on the node of the pool `want` says (-1: not recorded). */
static void claims_recorded_as(const int *want, size_t n, const char *when)
{
  for (size_t i = 0; i < n; i++) {
    char name[32], node[16];
    snprintf(name, sizeof name, "c%zu", i);
    snprintf(node, sizeof node, "p%d", want[i]);
    cr_assert_str_eq(recorded_on(name), want[i] < 0 ? "-" : node, "claim %s %s", name, when);
  }
}

/* A long deterministic run of claims added, allocated, moved, made pending and deleted: each
 * pool republished without devices takes exactly its claims off, and with them back. */
Test(cluster, pool_claim_sets_under_churn)
{
  enum { NPOOLS = 4, NCLAIMS = 12, STEPS = 300 };
  int gen[NPOOLS], on[NCLAIMS], off[NCLAIMS];
  char pool[16], name[16], dev[16];
  for (int p = 0; p < NPOOLS; p++) {
    snprintf(pool, sizeof pool, "p%d", p);
    publish_pool(pool, gen[p] = 1, NCLAIMS);
  }
  for (int i = 0; i < NCLAIMS; i++)
    on[i] = -1;
  unsigned x = 12345;
  for (int step = 0; step < STEPS; step++) {
    x = x * 1103515245u + 12345u;
    int i = (int)((x >> 8) % NCLAIMS), r = (int)((x >> 16) % 6);
    snprintf(name, sizeof name, "c%d", i);
    snprintf(dev, sizeof dev, "gpu-%d", i);
    snprintf(pool, sizeof pool, "p%d", r % NPOOLS);
    if (r == 0)
      delete_claim(name);
    else if (r == 1)
      apply_claim(name, NULL, NULL);
    else
      apply_claim(name, pool, dev);
    on[i] = r < 2 ? -1 : r % NPOOLS;
    int q = (int)((x >> 20) % NPOOLS);
    snprintf(pool, sizeof pool, "p%d", q);
    publish_pool(pool, ++gen[q], 0);
    for (int k = 0; k < NCLAIMS; k++)
      off[k] = on[k] == q ? -1 : on[k];
    claims_recorded_as(off, NCLAIMS, "with its pool gone");
    publish_pool(pool, ++gen[q], NCLAIMS);
    claims_recorded_as(on, NCLAIMS, "with its pool back");
  }
}
