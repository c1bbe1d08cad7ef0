/* The learned workload mix (slicefit/mix.h): a multiset of the present demands' shapes. */
#include <criterion/criterion.h>
#include <math.h>
#include "cluster.h"
#include "slicefit/mix.h"
#include "slicefit/policy.h"

static sf_index_t *cluster(void)
{
  sf_index_t *idx = sf_index_create();
  tc_node(idx, "n1", 8, "NVIDIA H100", 80 * GiB, true);
  tc_node(idx, "n2", 4, "NVIDIA A100", 40 * GiB, true);
  return idx;
}

/* Learns claims of 4Gi x1 (a), 8Gi x1 (b) and a whole device x2 (c), in the order given by `order`. */
static void learn(sf_packer_t *pk, sf_index_t *idx, const sf_policy_t *pol, const char *order,
                  int sign)
{
  for (const char *o = order; *o; o++) {
    tc_claim_t c;
    if (*o == 'a')
      tc_claim(&c, 1, 4 * GiB);
    else if (*o == 'b')
      tc_claim(&c, 1, 8 * GiB);
    else
      tc_claim(&c, 2, 0);
    cr_assert_eq(sf_mix_learn(pk, idx, pol, &c.dem, sign), 0);
  }
}

static void same_mix(const sf_index_t *x, const sf_index_t *y)
{
  cr_assert_eq(sf_mix_size(x), sf_mix_size(y));
  for (size_t i = 0; i < sf_mix_size(x); i++) {
    sf_shape_t a, b;
    cr_assert_eq(sf_mix_shape(x, i, &a), 0);
    cr_assert_eq(sf_mix_shape(y, i, &b), 0);
    cr_assert_eq(a.amount, b.amount);
    cr_assert_eq(a.count, b.count);
    cr_assert(a.weight == b.weight);
  }
}

/* A default policy, a packer and a probe claim of 4Gi x1, for the tests that hash the mix. */
typedef struct {
  sf_policy_t pol;
  sf_packer_t *pk;
  tc_claim_t probe;
} fix_t;

static void fix_open(fix_t *f)
{
  sf_policy_init(&f->pol);
  f->pk = sf_packer_create();
  tc_claim(&f->probe, 1, 4 * GiB);
}

static void fix_close(fix_t *f)
{
  sf_packer_destroy(f->pk);
  sf_policy_dispose(&f->pol);
}

Test(mix, a_multiset_whatever_the_order)
{
  sf_policy_t pol;
  sf_policy_init(&pol);
  sf_packer_t *pk = sf_packer_create();
  sf_index_t *x = cluster(), *y = cluster();
  learn(pk, x, &pol, "aabcab", +1);
  learn(pk, y, &pol, "bacbaa", +1);
  same_mix(x, y);
  cr_assert_eq(sf_mix_size(x), 3);
  double sum = 0.0;
  for (size_t i = 0; i < 3; i++) {
    sf_shape_t s;
    sf_mix_shape(x, i, &s);
    sum += s.weight;
    if (s.amount == 4 * GiB)
      cr_assert(fabs(s.weight - 3.0 / 6.0) < 1e-12, "a: %g", s.weight);
  }
  cr_assert(fabs(sum - 1.0) < 1e-12);
  sf_shape_t none;
  cr_assert_eq(sf_mix_shape(x, 3, &none), SF_ENOENT);
  /* Same mix, same hash; taking every demand back leaves nothing. */
  tc_claim_t probe;
  tc_claim(&probe, 1, 4 * GiB);
  cr_assert_eq(sf_mix_hash(pk, x, &pol, &probe.dem), sf_mix_hash(pk, y, &pol, &probe.dem));
  learn(pk, x, &pol, "baacba", -1);
  cr_assert_eq(sf_mix_size(x), 0);
  cr_assert_neq(sf_mix_hash(pk, x, &pol, &probe.dem), sf_mix_hash(pk, y, &pol, &probe.dem));
  sf_mix_clear(y);
  cr_assert_eq(sf_mix_size(y), 0);
  cr_assert_eq(sf_mix_hash(pk, x, &pol, &probe.dem), sf_mix_hash(pk, y, &pol, &probe.dem));
  sf_index_destroy(x);
  sf_index_destroy(y);
  sf_packer_destroy(pk);
  sf_policy_dispose(&pol);
}

Test(mix, a_shape_that_never_came_cannot_leave)
{
  sf_policy_t pol;
  sf_policy_init(&pol);
  sf_packer_t *pk = sf_packer_create();
  sf_index_t *idx = cluster();
  learn(pk, idx, &pol, "a", +1);
  learn(pk, idx, &pol, "bc", -1);
  cr_assert_eq(sf_mix_size(idx), 1);
  sf_index_destroy(idx);
  sf_packer_destroy(pk);
  sf_policy_dispose(&pol);
}

/*
 * A packer reads the learned mix again for another index, even one
 * allocated where a freed one was, with a mix of as many changes: it keys
 * what it read by the index's serial, not its address.
 */
Test(mix, another_index_at_the_same_address_is_read_again)
{
  fix_t f;
  fix_open(&f);
  int same_address = 0;
  for (int round = 0; round < 8; round++) {
    sf_index_t *x = cluster();
    learn(f.pk, x, &f.pol, "aab", +1);
    sf_verdict_t v[1];
    sf_node_id n1 = sf_index_node_find(x, "n1");
    cr_assert_eq(sf_packer_evaluate(f.pk, x, &f.pol, &f.probe.dem, &n1, 1, 0, v),
                 0); /* reads x's mix */
    uintptr_t was = (uintptr_t)x;
    sf_index_destroy(x);
    sf_index_t *y = cluster();
    same_address += (uintptr_t)y == was;
    learn(f.pk, y, &f.pol, "ccb", +1); /* as many changes, another mix */
    sf_packer_t *fresh = sf_packer_create();
    cr_assert_eq(sf_mix_hash(f.pk, y, &f.pol, &f.probe.dem),
                 sf_mix_hash(fresh, y, &f.pol, &f.probe.dem),
                 "round %d: the packer scored with the freed index's mix", round);
    sf_packer_destroy(fresh);
    sf_index_destroy(y);
  }
  cr_log_info("same address in %d of 8 rounds", same_address);
  fix_close(&f);
}

/* Learns n claims of 4Gi x1 (a) and m of 8Gi x1 (b). */
static void learn_ab(sf_packer_t *pk, sf_index_t *idx, const sf_policy_t *pol, int n, int m)
{
  for (int i = 0; i < n + m; i++) {
    tc_claim_t c;
    tc_claim(&c, 1, i < n ? 4 * GiB : 8 * GiB);
    cr_assert_eq(sf_mix_learn(pk, idx, pol, &c.dem, +1), 0);
  }
}

/*
 * mix_coverage keeps FGD's typical pods: the most frequent shapes until they
 * cover that share of the pods. A shape past it is not scored (the mix
 * hashes as without it); one that completes the share is; 100 keeps all.
 */
Test(mix, coverage_keeps_the_typical_shapes)
{
  fix_t f;
  fix_open(&f);
  cr_assert_eq(f.pol.mix_coverage, 95);
  sf_index_t *alone = cluster(), *rare = cluster(), *kept = cluster();
  learn_ab(f.pk, alone, &f.pol, 19, 0);
  learn_ab(f.pk, rare, &f.pol, 19, 1); /* b is 5%: a alone covers 95% */
  learn_ab(f.pk, kept, &f.pol, 18, 2); /* b is 10%: a covers 90%, b is needed */
  uint64_t h_alone = sf_mix_hash(f.pk, alone, &f.pol, &f.probe.dem);
  cr_assert_eq(sf_mix_hash(f.pk, rare, &f.pol, &f.probe.dem), h_alone);
  cr_assert_neq(sf_mix_hash(f.pk, kept, &f.pol, &f.probe.dem), h_alone);
  cr_assert_eq(sf_mix_size(rare), 2, "the storage keeps every shape; the cut is the scoring's");
  f.pol.mix_coverage = 100;
  cr_assert_neq(sf_mix_hash(f.pk, rare, &f.pol, &f.probe.dem), h_alone);
  f.pol.mix_coverage = 90;
  cr_assert_eq(sf_mix_hash(f.pk, kept, &f.pol, &f.probe.dem), h_alone);
  sf_index_destroy(alone);
  sf_index_destroy(rare);
  sf_index_destroy(kept);
  fix_close(&f);
}

/* Shapes as frequent as the last one the share needs stay, whatever the storage's order. */
Test(mix, coverage_keeps_equals_together)
{
  fix_t f;
  fix_open(&f);
  sf_index_t *x = cluster();
  learn(f.pk, x, &f.pol, "aaaabbcc", +1); /* a 50%, b and c 25% each */
  f.pol.mix_coverage = 60;                /* a and one of b, c would do: both stay */
  uint64_t h60 = sf_mix_hash(f.pk, x, &f.pol, &f.probe.dem);
  f.pol.mix_coverage = 100;
  cr_assert_eq(sf_mix_hash(f.pk, x, &f.pol, &f.probe.dem), h60);
  f.pol.mix_coverage = 50; /* a alone covers it */
  cr_assert_neq(sf_mix_hash(f.pk, x, &f.pol, &f.probe.dem), h60);
  sf_index_destroy(x);
  fix_close(&f);
}

/* n events: bindings, with a departure every `every` (0: none). */
static void told(sf_index_t *idx, size_t n, size_t every)
{
  for (size_t i = 1; i <= n; i++)
    sf_mix_churn(idx, every > 0 && i % every == 0);
}

Test(mix, a_fleet_fills_when_under_an_eighth_of_the_last_256_events_are_departures)
{
  fix_t f;
  fix_open(&f);
  sf_index_t *idx = cluster();
  uint64_t churning = sf_mix_hash(f.pk, idx, &f.pol, &f.probe.dem);
  cr_assert(sf_mix_churning(idx), "a live cluster churns until told otherwise");
  told(idx, 255, 0);
  cr_assert(sf_mix_churning(idx), "fewer than 256 events say nothing yet");
  told(idx, 1, 0);
  cr_assert(!sf_mix_churning(idx), "256 bindings and no departure: the fleet fills");
  cr_assert_neq(sf_mix_hash(f.pk, idx, &f.pol, &f.probe.dem), churning, "a change moves the hash");
  told(idx, 31 * 8, 8); /* 31 departures among the last 256 */
  cr_assert(!sf_mix_churning(idx));
  told(idx, 8, 8); /* 32 */
  cr_assert(sf_mix_churning(idx));
  cr_assert_eq(sf_mix_hash(f.pk, idx, &f.pol, &f.probe.dem), churning);
  told(idx, 8, 0); /* the oldest departure leaves the window: 31 again */
  cr_assert(!sf_mix_churning(idx));
  sf_index_destroy(idx);
  fix_close(&f);
}

Test(mix, the_answer_is_the_last_events_alone)
{
  /* Two indexes told different histories, then the same 256 events, answer alike. */
  sf_index_t *a = sf_index_create(), *b = sf_index_create();
  told(a, 100000, 0);
  told(b, 3000, 2);
  for (int round = 0; round < 2; round++) {
    size_t every = round == 0 ? 4 : 0;
    told(a, 256, every);
    told(b, 256, every);
    cr_assert_eq(sf_mix_churning(a), sf_mix_churning(b));
    cr_assert_eq(sf_mix_churning(a), round == 0);
  }
  sf_index_destroy(a);
  sf_index_destroy(b);
}
