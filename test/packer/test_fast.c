/*
 * The fast path's memo signature (packer/fast.c) against the policy's one
 * table of keys (packer/policy.c): a remembered verdict is replayed only for
 * a call with the same signature, so every key must move it.
 */
#include <criterion/criterion.h>
#include <string.h>
#include "../../packer/packer_int.h"
#include "cluster.h"
#include "slicefit/policy.h"

/* A value other than the default for each key; a key added to the table needs its line here. */
static const struct {
  const char *key, *other;
} others[] = {
    {"strategy", "fgd"},
    {"device_choice", "packer"},
    {"capacity", "cores"},
    {"model_attribute", "model"},
    {"island_attribute", "cliqueId"},
    {"island_map", "RTX=2"},
    {"fgd_mix", "4Gix1=1"},
    {"weight_frag", "2"},
    {"weight_island", "0"},
    {"weight_model", "1"},
    {"weight_unfed", "1"},
    {"weight_plan", "8"},
    {"weight_strand", "4"},
    {"weight_fill", "1"},
    {"mix_coverage", "100"},
    {"max_sharers", "3"},
    {"headroom_pct", "10"},
    {"search_budget", "100"},
    {"cpu_only_pods", "pass"},
    {"defrag_max_evictions", "2"},
    {"defrag_protect_namespaces", "kube-system,ops"},
    {"defrag_max_per_hour", "1"},
    {"defrag_budget", "2000"},
};

static const char *other_of(const char *key)
{
  for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
    if (strcmp(others[i].key, key) == 0)
      return others[i].other;
  return NULL;
}

/* The signature sf_packer_evaluate keeps verdicts under, for one claim on one node. */
static uint64_t signature(sf_packer_t *pk, sf_index_t *idx, const sf_policy_t *pol, sf_node_id n,
                          const sf_demand_t *d)
{
  sf_verdict_t v;
  sf_index_apply_policy(idx, pol);
  cr_assert_eq(sf_packer_evaluate(pk, idx, pol, d, &n, 1, 0, &v), 0);
  return pk->fast.sig;
}

Test(fast, changing_any_policy_key_changes_the_memo_signature)
{
  sf_index_t *idx = sf_index_create();
  sf_packer_t *pk = sf_packer_create();
  sf_node_id n = tc_node(idx, "n", 4, "RTX", 20 * GiB, true);
  tc_claim_t c;
  tc_claim(&c, 1, 4 * GiB);
  sf_policy_t def;
  sf_policy_init(&def);
  uint64_t base = signature(pk, idx, &def, n, &c.dem);
  cr_assert_neq(base, 0, "the claim takes the fast path: the test reaches the memo");
  size_t nk;
  const sf_policy_key_t *keys = sf_policy_keys(&nk);
  for (size_t i = 0; i < nk; i++) {
    const char *other = other_of(keys[i].key);
    cr_assert_not_null(other, "policy key %s: add a value other than its default to others[]",
                       keys[i].key);
    cr_assert_str_neq(other, keys[i].def);
    sf_policy_t pol;
    char err[256];
    sf_policy_init(&pol);
    cr_assert_eq(sf_policy_set(&pol, keys[i].key, other, err, sizeof(err)), 0, "%s", err);
    cr_expect_neq(signature(pk, idx, &pol, n, &c.dem), base, "%s = %s leaves the signature",
                  keys[i].key, other);
    /* The placement's part moves with the keys that can move a placement, and only with them. */
    bool moved = sf_policy_hash(&pol, true, 1) != sf_policy_hash(&def, true, 1);
    cr_expect_eq(moved, keys[i].places, "%s: placement hash moved %d, places %d", keys[i].key, moved,
                 keys[i].places);
    cr_expect_neq(sf_policy_hash(&pol, false, 1), sf_policy_hash(&def, false, 1), "%s", keys[i].key);
    sf_policy_dispose(&pol);
  }
  /* And back: the same policy gives the same signature, so verdicts are kept. */
  cr_expect_eq(signature(pk, idx, &def, n, &c.dem), base);
  sf_policy_dispose(&def);
  sf_packer_destroy(pk);
  sf_index_destroy(idx);
}

/*
 * Each term of strategy fragmentation's cost (score.c) is a row weighed by
 * the policy key of its row: fragmentation, then the unfed idle GPUs (on its
 * scale, so the two add exactly before the rest), islands, the plan, CPU
 * stranded, scarce models, and best fit's free capacity where pods leave.
 */
Test(fast, every_scoring_term_is_weighed_by_its_policy_key)
{
  static const char *const named[] = {"weight_frag",   "weight_unfed", "weight_island", "weight_plan",
                                      "weight_strand", "weight_model", "weight_fill"};
  size_t nt, nk;
  const sf__term_t *t = sf__score_terms(&nt);
  const sf_policy_key_t *keys = sf_policy_keys(&nk);
  cr_assert_eq(nt, sizeof(named) / sizeof(named[0]));
  for (size_t i = 0; i < nt; i++)
    cr_assert_str_eq(t[i].key, named[i], "row %zu", i);
  for (size_t i = 0; i < nt; i++) {
    bool found = false;
    for (size_t k = 0; k < nk; k++)
      found = found || strcmp(keys[k].key, t[i].key) == 0;
    cr_assert(found, "term %s is not a policy key", t[i].key);
    sf_policy_t pol;
    char err[256];
    double w;
    sf_policy_init(&pol);
    cr_assert_eq(sf_policy_set(&pol, t[i].key, "0.75", err, sizeof(err)), 0, "%s", err);
    memcpy(&w, (const char *)&pol + t[i].weight, sizeof(w));
    cr_expect_eq(w, 0.75, "term %s reads another field than its key sets", t[i].key);
    sf_policy_dispose(&pol);
  }
}

/*
 * The memo keeps FMEMO_WAYS verdicts a node: two claims in turn each find
 * theirs on every unchanged node, a third claim takes the place of the
 * least recently used, and every verdict is what a packer without the fast
 * path gives, before and after a node changes.
 */
static void evaluate_both(sf_packer_t *pk, sf_packer_t *ref, sf_index_t *idx, const sf_policy_t *pol,
                          const tc_claim_t *c, const sf_node_id *nodes, size_t n)
{
  sf_verdict_t v[8], w[8];
  cr_assert_leq(n, 8);
  cr_assert_eq(sf_packer_evaluate(pk, idx, pol, &c->dem, nodes, n, 0, v), 0);
  cr_assert_eq(sf_packer_evaluate(ref, idx, pol, &c->dem, nodes, n, 0, w), 0);
  for (size_t i = 0; i < n; i++) {
    cr_assert_eq(v[i].fit, w[i].fit, "node %zu", i);
    cr_assert(v[i].raw == w[i].raw, "node %zu: raw %.17g vs %.17g", i, v[i].raw, w[i].raw);
    cr_assert_eq(v[i].score, w[i].score, "node %zu", i);
    cr_assert_str_eq(v[i].reason, w[i].reason, "node %zu", i);
  }
}

Test(fast, claims_in_turn_each_find_their_remembered_verdicts)
{
  sf_index_t *idx = sf_index_create();
  sf_packer_t *pk = sf_packer_create(), *ref = sf_packer_create();
  ref->fast.on = false;
  sf_node_id nodes[4] = {
      tc_node(idx, "a", 4, "RTX", 20 * GiB, true), tc_node(idx, "b", 2, "RTX", 20 * GiB, true),
      tc_node(idx, "c", 8, "A100", 40 * GiB, true),
      tc_node(idx, "d", 1, "RTX", 8 * GiB, true), /* too small for a and c: a reason each */
  };
  sf_policy_t pol;
  sf_policy_init(&pol);
  sf_index_apply_policy(idx, &pol);
  tc_claim_t a, b, c;
  tc_claim(&a, 1, 12 * GiB);
  tc_claim(&b, 1, 2 * GiB);
  tc_claim(&c, 1, 30 * GiB);
  evaluate_both(pk, ref, idx, &pol, &a, nodes, 4);
  cr_assert_eq(pk->fast.served, 0, "nothing remembered yet");
  evaluate_both(pk, ref, idx, &pol, &b, nodes, 4);
  cr_assert_eq(pk->fast.served, 0, "another claim: another signature");
  for (int round = 0; round < 3; round++) {
    evaluate_both(pk, ref, idx, &pol, &a, nodes, 4);
    cr_assert_eq(pk->fast.served, 4, "round %d: a's verdicts kept beside b's", round);
    evaluate_both(pk, ref, idx, &pol, &b, nodes, 4);
    cr_assert_eq(pk->fast.served, 4, "round %d: b's verdicts kept beside a's", round);
  }
  /* A third claim replaces the least recently used (a's); b's stay. */
  evaluate_both(pk, ref, idx, &pol, &c, nodes, 4);
  cr_assert_eq(pk->fast.served, 0);
  evaluate_both(pk, ref, idx, &pol, &b, nodes, 4);
  cr_assert_eq(pk->fast.served, 4);
  evaluate_both(pk, ref, idx, &pol, &a, nodes, 4);
  cr_assert_eq(pk->fast.served, 0, "a's verdicts were the least recently used");
  /* A node that changes is evaluated again for each claim; the others are not. */
  cr_assert_eq(sf_packer_place(ref, idx, &pol, &b.dem, nodes[0], NULL, NULL), SF_FIT_YES);
  cr_assert_eq(sf_packer_commit(ref, idx, &b.dem, "pod-1", NULL), 0);
  evaluate_both(pk, ref, idx, &pol, &a, nodes, 4);
  cr_assert_eq(pk->fast.served, 3);
  evaluate_both(pk, ref, idx, &pol, &b, nodes, 4);
  cr_assert_eq(pk->fast.served, 3);
  evaluate_both(pk, ref, idx, &pol, &a, nodes, 4);
  cr_assert_eq(pk->fast.served, 4);
  sf_policy_dispose(&pol);
  sf_packer_destroy(ref);
  sf_packer_destroy(pk);
  sf_index_destroy(idx);
}

/*
 * A selector with a cache key is asked once per device, however many calls
 * of other claims come between: the first call of a claim of another class
 * asks it of every device a node's verdict needs, and no later call asks
 * again while the devices do not change.
 */
static sf_match_t counted(void *ctx, const sf_index_t *idx, sf_dev_id d)
{
  (void)idx;
  (void)d;
  ++*(size_t *)ctx;
  return SF_MATCH_YES;
}

Test(fast, a_cached_selector_is_asked_once_per_device_across_calls)
{
  sf_index_t *idx = sf_index_create();
  sf_packer_t *pk = sf_packer_create(), *ref = sf_packer_create();
  ref->fast.on = false;
  sf_node_id nodes[4] = {
      tc_node(idx, "a", 4, "RTX", 20 * GiB, true),
      tc_node(idx, "b", 2, "RTX", 20 * GiB, true),
      tc_node(idx, "c", 8, "A100", 40 * GiB, true),
      tc_node(idx, "d", 1, "RTX", 8 * GiB, true),
  };
  enum { DEVICES = 4 + 2 + 8 + 1 };
  sf_policy_t pol;
  sf_policy_init(&pol);
  sf_index_apply_policy(idx, &pol);
  size_t asked_a = 0, asked_b = 0;
  sf_selector_t sel_a = {counted, &asked_a, 0xa11}, sel_b = {counted, &asked_b, 0xb22};
  tc_claim_t a, b;
  tc_claim(&a, 1, 12 * GiB);
  tc_claim(&b, 1, 2 * GiB);
  a.req.selectors = &sel_a;
  b.req.selectors = &sel_b;
  for (int round = 0; round < 4; round++) {
    evaluate_both(pk, ref, idx, &pol, &a, nodes, 4);
    evaluate_both(pk, ref, idx, &pol, &b, nodes, 4);
    cr_assert_eq(asked_a, DEVICES, "round %d: %zu answers of a's selector", round, asked_a);
    cr_assert_eq(asked_b, DEVICES, "round %d: %zu answers of b's selector", round, asked_b);
  }
  sf_policy_dispose(&pol);
  sf_packer_destroy(ref);
  sf_packer_destroy(pk);
  sf_index_destroy(idx);
}
