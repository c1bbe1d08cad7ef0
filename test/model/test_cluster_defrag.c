/*
 * The defragmentation planner asked about a claim of a cluster: a plan on
 * a fragmented snapshot, the plan carried out making the claim fit, and a
 * clear answer for every claim that needs no plan or has none.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include "slicefit/cluster_defrag.h"
#include "fixture.h"

#define NOW 1796688000 /* 2026-12-08T00:00:00Z */

static sf_cluster_t *load(json_t *snap, const char *key, const char *value)
{
  sf_policy_t pol;
  char err[SF_ERR_MAX];
  sf_policy_init(&pol);
  if (key != NULL)
    cr_assert_eq(sf_policy_set(&pol, key, value, err, sizeof err), 0, "%s", err);
  sf_cluster_t *c = sf_cluster_create(&pol);
  sf_policy_dispose(&pol);
  cr_assert_eq(sf_cluster_load_list(c, snap, err, sizeof err), 0, "%s", err);
  return c;
}

static const char *field(const json_t *a, const char *k)
{
  const json_t *v = json_object_get(a, k);
  return json_is_string(v) ? json_string_value(v) : "(null)";
}

Test(cluster_defrag, one_eviction_frees_the_card_and_carrying_it_out_lets_the_claim_fit)
{
  json_t *snap = fx_load("defrag/fragmented.json");
  sf_cluster_t *c = load(snap, NULL, NULL);
  json_t *items = json_object_get(snap, "items");
  json_t *a = sf_cluster_defrag(c, items, "team/big", NOW);
  cr_assert_str_eq(field(a, "outcome"), "found", "%s", field(a, "why"));
  cr_assert_str_eq(field(a, "node"), "node-b");
  cr_assert(json_is_true(json_object_get(a, "fits_after")));
  json_t *ev = json_object_get(a, "evictions");
  cr_assert_eq(json_array_size(ev), 1);
  json_t *e = json_array_get(ev, 0);
  /* infer-b is the youngest pod a controller recreates (debug-c is younger but bare). */
  cr_assert_str_eq(field(e, "namespace"), "team");
  cr_assert_str_eq(field(e, "name"), "infer-b");
  cr_assert_str_eq(json_string_value(json_array_get(json_object_get(e, "claims"), 0)), "small-b");
  cr_assert_eq(json_integer_value(json_object_get(e, "gpu_milli")), 125);
  cr_assert_str_neq(field(e, "to_node"), "node-b");
  cr_assert_eq(json_integer_value(json_object_get(a, "gpu_seconds_lost")), 3600 * 125 / 1000);
  char *text = sf_cluster_defrag_text(a);
  cr_assert(strstr(text, "Evict team/infer-b") != NULL && strstr(text, "from node-b") != NULL, "%s",
            text);
  free(text);
  /* Carry it out: the evicted pod's claim leaves node-b; the claim now fits there at once. */
  char err[SF_ERR_MAX];
  json_t *gone = NULL;
  size_t i;
  json_t *o;
  json_array_foreach(items, i, o)
  {
    const json_t *md = json_object_get(o, "metadata");
    if (strcmp(json_string_value(json_object_get(md, "name")), "small-b") == 0)
      gone = o;
  }
  cr_assert_not_null(gone);
  cr_assert_eq(sf_cluster_delete(c, SF_KIND_RESOURCE_CLAIM, gone, err, sizeof err), 0, "%s", err);
  json_t *after = sf_cluster_defrag(c, items, "team/big", NOW);
  cr_assert_str_eq(field(after, "outcome"), "fits", "%s", field(after, "why"));
  cr_assert_str_eq(field(after, "node"), "node-b");
  json_decref(after);
  json_decref(a);
  sf_cluster_destroy(c);
  json_decref(snap);
}

Test(cluster_defrag, every_claim_gets_a_clear_answer)
{
  static const struct {
    const char *claim, *outcome, *why;
    bool fits;
  } cases[] = {
      {"team/tiny", "fits", "fits on", true},
      {"team/two", "never", "fits on no node", false},
      {"team/small-a", "allocated", "already allocated on node-a", true},
      {"team/nope", "unknown", "no ResourceClaim team/nope", false},
      {"other/big", "unknown", "no ResourceClaim other/big", false},
      {"big", "unknown", "expected a claim as NAMESPACE/NAME", false},
      {"team/", "unknown", "expected a claim as NAMESPACE/NAME", false},
      {"/big", "unknown", "expected a claim as NAMESPACE/NAME", false},
      {"a/b/c", "unknown", "expected a claim as NAMESPACE/NAME", false},
  };
  json_t *snap = fx_load("defrag/fragmented.json");
  sf_cluster_t *c = load(snap, NULL, NULL);
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    json_t *a = sf_cluster_defrag(c, json_object_get(snap, "items"), cases[i].claim, NOW);
    cr_assert_str_eq(field(a, "outcome"), cases[i].outcome, "%s: %s", cases[i].claim,
                     field(a, "why"));
    cr_assert(strstr(field(a, "why"), cases[i].why) != NULL, "%s: %s", cases[i].claim,
              field(a, "why"));
    cr_assert_eq(json_is_true(json_object_get(a, "fits_after")), cases[i].fits);
    cr_assert_eq(json_array_size(json_object_get(a, "evictions")), 0);
    json_decref(a);
  }
  sf_cluster_destroy(c);
  json_decref(snap);
}

Test(cluster_defrag, pods_in_protected_namespaces_stay)
{
  json_t *snap = fx_load("defrag/fragmented.json");
  sf_cluster_t *c = load(snap, "defrag_protect_namespaces", "kube-system,team");
  json_t *a = sf_cluster_defrag(c, json_object_get(snap, "items"), "team/big", NOW);
  cr_assert_str_eq(field(a, "outcome"), "none");
  cr_assert(json_is_false(json_object_get(a, "fits_after")));
  cr_assert(strstr(field(a, "why"), "may not be evicted") != NULL, "%s", field(a, "why"));
  json_decref(a);
  sf_cluster_destroy(c);
  json_decref(snap);
}

Test(cluster_defrag, rfc3339_times)
{
  cr_assert_eq(sf_rfc3339_seconds("1970-01-01T00:00:00Z"), 0);
  cr_assert_eq(sf_rfc3339_seconds("2026-12-08T00:00:00Z"), NOW);
  cr_assert_eq(sf_rfc3339_seconds("2000-02-29T12:30:15.250Z"), 951827415);
  cr_assert_eq(sf_rfc3339_seconds("2026-12-08T00:00:00+01:00"), -1);
  cr_assert_eq(sf_rfc3339_seconds("2026-13-08T00:00:00Z"), -1);
  cr_assert_eq(sf_rfc3339_seconds("yesterday"), -1);
  cr_assert_eq(sf_rfc3339_seconds(NULL), -1);
}
