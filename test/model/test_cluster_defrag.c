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

/* The Pod of `items` named `name` (borrowed). */
static json_t *pod_named(json_t *items, const char *name)
{
  size_t i;
  json_t *o;
  json_array_foreach(items, i, o)
  {
    const json_t *md = json_object_get(o, "metadata");
    if (strcmp(json_string_value(json_object_get(o, "kind")), "Pod") == 0 &&
        strcmp(json_string_value(json_object_get(md, "name")), name) == 0)
      return o;
  }
  cr_assert_fail("no pod %s", name);
  return NULL;
}

Test(cluster_defrag, the_cluster_records_plan_as_the_snapshot_does)
{
  static const char *const claims[] = {"team/big",  "team/tiny", "team/two", "team/small-a",
                                       "team/nope", "other/big", "big",      "a/b/c"};
  json_t *snap = fx_load("defrag/fragmented.json");
  sf_cluster_t *c = load(snap, NULL, NULL);
  for (size_t i = 0; i < sizeof claims / sizeof *claims; i++) {
    json_t *want = sf_cluster_defrag(c, json_object_get(snap, "items"), claims[i], NOW);
    json_t *got = sf_cluster_defrag_live(c, claims[i], NOW);
    char *w = json_dumps(want, JSON_SORT_KEYS), *g = json_dumps(got, JSON_SORT_KEYS);
    cr_assert_str_eq(g, w, "%s", claims[i]);
    free(w);
    free(g);
    json_decref(want);
    json_decref(got);
  }
  sf_cluster_destroy(c);
  json_decref(snap);
}

Test(cluster_defrag, the_records_follow_a_pods_owner_age_and_claims)
{
  json_t *snap = fx_load("defrag/fragmented.json");
  sf_cluster_t *c = load(snap, NULL, NULL);
  char err[SF_ERR_MAX];
  /* train-a loses its controller: a bare pod, never chosen. */
  json_t *train = json_deep_copy(pod_named(json_object_get(snap, "items"), "train-a"));
  json_object_del(json_object_get(train, "metadata"), "ownerReferences");
  cr_assert_eq(sf_cluster_apply(c, SF_KIND_POD, train, err, sizeof err), 0, "%s", err);
  json_decref(train);
  /* A second claim on node-b, 5Gi of its card; infer-b names it too and is a day older. */
  json_t *extra = NULL;
  size_t i;
  json_t *o;
  json_array_foreach(json_object_get(snap, "items"), i,
                     o) if (strcmp(json_string_value(json_object_get(json_object_get(o, "metadata"),
                                                                     "name")),
                                   "small-b") == 0) extra = json_deep_copy(o);
  json_t *md = json_object_get(extra, "metadata");
  json_object_set_new(md, "name", json_string("extra-b"));
  json_object_set_new(md, "uid", json_string("uid-extra-b"));
  json_t *res =
      json_array_get(json_object_get(json_object_get(json_object_get(json_object_get(extra, "status"),
                                                                     "allocation"),
                                                     "devices"),
                                     "results"),
                     0);
  json_object_set_new(res, "shareID", json_string("00000000-0000-0000-0000-000000000004"));
  json_object_set_new(json_object_get(res, "consumedCapacity"), "memory", json_string("5Gi"));
  cr_assert_eq(sf_cluster_apply(c, SF_KIND_RESOURCE_CLAIM, extra, err, sizeof err), 0, "%s", err);
  json_decref(extra);
  json_t *infer = json_deep_copy(pod_named(json_object_get(snap, "items"), "infer-b"));
  json_array_append_new(json_object_get(json_object_get(infer, "spec"), "resourceClaims"),
                        json_pack("{s:s, s:s}", "name", "more", "resourceClaimName", "extra-b"));
  json_object_set_new(json_object_get(infer, "metadata"), "creationTimestamp",
                      json_string("2026-12-06T23:00:00Z"));
  cr_assert_eq(sf_cluster_apply(c, SF_KIND_POD, infer, err, sizeof err), 0, "%s", err);
  json_t *a = sf_cluster_defrag_live(c, "team/big", NOW);
  json_t *e = json_array_get(json_object_get(a, "evictions"), 0);
  cr_assert_str_eq(field(a, "outcome"), "found", "%s", field(a, "why"));
  cr_assert_str_eq(field(e, "name"), "infer-b");
  cr_assert_eq(json_array_size(json_object_get(e, "claims")), 2);
  cr_assert_str_eq(json_string_value(json_array_get(json_object_get(e, "claims"), 1)), "extra-b");
  cr_assert_eq(json_integer_value(json_object_get(e, "gpu_milli")), 125 + 62);
  cr_assert_eq(json_integer_value(json_object_get(a, "gpu_seconds_lost")),
               25 * 3600 * (125 + 62) / 1000);
  json_decref(a);
  /* Its controller gone, infer-b is a bare pod: never chosen. */
  json_object_del(json_object_get(infer, "metadata"), "ownerReferences");
  cr_assert_eq(sf_cluster_apply(c, SF_KIND_POD, infer, err, sizeof err), 0, "%s", err);
  a = sf_cluster_defrag_live(c, "team/big", NOW);
  cr_assert_str_eq(field(a, "outcome"), "none", "%s", field(a, "why"));
  cr_assert_eq(json_array_size(json_object_get(a, "evictions")), 0);
  json_decref(a);
  /* Deleted, it holds nothing any more in the planner's eyes. */
  cr_assert_eq(sf_cluster_delete(c, SF_KIND_POD, infer, err, sizeof err), 0, "%s", err);
  a = sf_cluster_defrag_live(c, "team/big", NOW);
  cr_assert_str_neq(field(a, "outcome"), "found");
  json_decref(a);
  json_decref(infer);
  sf_cluster_destroy(c);
  json_decref(snap);
}
