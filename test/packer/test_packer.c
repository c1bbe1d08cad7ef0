/* The packer: feasibility, DRA rounding, constraints, reasons, strategies. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "../../packer/packer_int.h" /* pk->fast.on: the fast path off */
#include "slicefit/mix.h"
#include "cluster.h"
#include "slicefit/policy.h"

static sf_policy_t pol;
static sf_index_t *idx;
static sf_packer_t *pk;

static void setup(void)
{
  sf_policy_init(&pol);
  pol.weight_fill = 0.0; /* an index told nothing churns: the tests that weigh fill say so */
  idx = sf_index_create();
  pk = sf_packer_create();
}

static void teardown(void)
{
  sf_packer_destroy(pk);
  sf_index_destroy(idx);
  sf_policy_dispose(&pol);
}

static void set(const char *k, const char *v)
{
  char err[200];
  cr_assert_eq(sf_policy_set(&pol, k, v, err, sizeof(err)), 0, "%s", err);
  sf_index_apply_policy(idx, &pol);
}

static sf_verdict_t eval1(sf_node_id n, const sf_demand_t *d)
{
  sf_verdict_t v;
  cr_assert_eq(sf_packer_evaluate(pk, idx, &pol, d, &n, 1, 0, &v), 0);
  return v;
}

/* Places and commits on node n; returns the first picked device. */
static sf_dev_id place(sf_node_id n, const sf_demand_t *d, const char *holder)
{
  sf_assignment_t a;
  cr_assert_eq(sf_packer_place(pk, idx, &pol, d, n, &a, NULL), SF_FIT_YES);
  sf_dev_id dev = a.results[0].pick.dev;
  cr_assert_eq(sf_packer_commit(pk, idx, d, holder, NULL), 0);
  tc_valid(idx);
  return dev;
}

/* The verdict's reason code: the class its sentence is counted in. */
#define CODE(v, c) \
  cr_assert_eq((v).code, c, "code %s for: %s", sf_reason_code_name((v).code), (v).reason)

TestSuite(packer, .init = setup, .fini = teardown);

Test(packer, fractional_claims_fill_a_shared_card_then_stop)
{
  sf_node_id n = tc_node(idx, "rtx", 1, "RTX", 20 * GiB, true);
  tc_claim_t c;
  tc_claim(&c, 1, 6 * GiB);
  place(n, &c.dem, "a");
  place(n, &c.dem, "b");
  place(n, &c.dem, "c");
  sf_verdict_t v = eval1(n, &c.dem);
  cr_assert_eq(v.fit, SF_FIT_NO);
  cr_assert(strstr(v.reason, "needs 6Gi of memory; the most free on a matching device is 2Gi"), "%s",
            v.reason);
  CODE(v, SF_REASON_CAPACITY_SHORT);
}

Test(packer, capacity_requests_round_up_as_dra_does)
{
  sf_node_id n = tc_node_range(idx, "rtx", 1, "RTX", 20 * GiB, 1 * GiB, 1 * GiB);
  tc_claim_t c;
  tc_claim(&c, 1, 1536LL * 1024 * 1024 * 1000); /* 1.5Gi rounds up to 2Gi */
  sf_dev_id d = place(n, &c.dem, "a");
  sf_milli_t f;
  sf_index_dev_cap(idx, d, 0, NULL, &f);
  cr_assert_eq(f, 18 * GiB);
  tc_claim(&c, 1, 0); /* no capacity named: the whole card (no default) */
  cr_assert_eq(eval1(n, &c.dem).fit, SF_FIT_NO);
  tc_claim(&c, 1, 21 * GiB); /* above max: not eligible */
  cr_assert_eq(eval1(n, &c.dem).fit, SF_FIT_NO);
}

Test(packer, counts_and_readable_reasons)
{
  sf_node_id n = tc_node(idx, "h100", 2, "H100", 80 * GiB, false);
  tc_claim_t one, three;
  tc_claim(&one, 1, 0);
  place(n, &one.dem, "a");
  tc_claim(&three, 2, 0);
  sf_verdict_t v = eval1(n, &three.dem);
  cr_assert_eq(v.fit, SF_FIT_NO);
  cr_assert_str_eq(v.reason,
                   "request gpu of claim default/claim needs 2 device(s); 1 of 2 matching are free");
  CODE(v, SF_REASON_DEVICE_COUNT);
}

Test(packer, nvlink_island_reason)
{
  set("island_map", "A100=2");
  sf_node_id n = tc_node(idx, "a100", 4, "NVIDIA A100", 40 * GiB, false);
  tc_claim_t one, isl;
  tc_claim(&one, 1, 0);
  place(n, &one.dem, "a"); /* first fit: gpu-0, island 0 */
  set("device_choice", "packer");
  tc_claim_island(&isl, 2);
  cr_assert_eq(eval1(n, &isl.dem).fit, SF_FIT_YES);
  place(n, &one.dem, "b"); /* the packer keeps island 1 whole: takes gpu-1 */
  cr_assert_eq(sf_index_dev_holders(idx, sf_index_dev_find(idx, DRV, "a100", "gpu-1")), 1);
  place(n, &isl.dem, "c");
  tc_claim_island(&isl, 2);
  tc_claim(&one, 1, 0);
  sf_verdict_t v = eval1(n, &isl.dem);
  cr_assert_eq(v.fit, SF_FIT_NO);
  cr_assert_str_eq(v.reason,
                   "request gpu of claim default/claim needs 2 device(s); 0 of 4 matching are free");
  CODE(v, SF_REASON_DEVICE_COUNT);
}

Test(packer, island_constraint_fails_on_split_islands)
{
  set("island_map", "A100=2");
  sf_node_id n = tc_node(idx, "a100", 4, "NVIDIA A100", 40 * GiB, false);
  sf_pick_t p0 = {sf_index_dev_find(idx, DRV, "a100", "gpu-0"), NULL, false};
  sf_pick_t p2 = {sf_index_dev_find(idx, DRV, "a100", "gpu-2"), NULL, false};
  cr_assert_eq(sf_index_alloc_add(idx, "x", n, 0, 0, &p0, 1, 0, NULL), 0);
  cr_assert_eq(sf_index_alloc_add(idx, "y", n, 0, 0, &p2, 1, 0, NULL), 0);
  tc_claim_t isl;
  tc_claim_island(&isl, 2);
  sf_verdict_t v = eval1(n, &isl.dem);
  cr_assert_eq(v.fit, SF_FIT_NO);
  cr_assert_str_eq(v.reason, "needs 2 GPUs in one NVLink island; the largest free island has 1");
  CODE(v, SF_REASON_ISLAND);
}

Test(packer, taints_and_tolerations)
{
  sf_node_id n = tc_node(idx, "n", 1, "RTX", 20 * GiB, true);
  sf_dev_id d = sf_index_dev_find(idx, DRV, "n", "gpu-0");
  sf_taint_t t = {"gpu.nvidia.com/xid", "79", SF_TAINT_NOSCHEDULE};
  sf_index_taint_rule_add(idx, "r", d, &t);
  tc_claim_t c;
  tc_claim(&c, 1, GiB);
  sf_verdict_t v = eval1(n, &c.dem);
  cr_assert_eq(v.fit, SF_FIT_NO);
  cr_assert(strstr(v.reason, "does not tolerate taint gpu.nvidia.com/xid=79:NoSchedule"), "%s",
            v.reason);
  CODE(v, SF_REASON_TAINT);
  sf_toleration_t tol = {"gpu.nvidia.com/xid", NULL, true, true, SF_TAINT_NONE};
  c.req.tols = &tol;
  c.req.ntols = 1;
  cr_assert_eq(eval1(n, &c.dem).fit, SF_FIT_YES);
  c.req.ntols = 0;
  sf_index_taint_rule_clear(idx, "r");
  sf_taint_t info = {"gpu.nvidia.com/unmonitored", "", SF_TAINT_NONE};
  sf_index_taint_rule_add(idx, "r", d, &info);
  cr_assert_eq(eval1(n, &c.dem).fit, SF_FIT_YES);
}

/* DRA's All set is made by the selectors alone: a tainted device in it fails the request. */
Test(packer, all_mode_fails_on_a_tainted_device_instead_of_leaving_it_out)
{
  sf_node_id n = tc_node(idx, "n", 2, "RTX", 20 * GiB, false);
  sf_taint_t t = {"gpu.nvidia.com/xid", "79", SF_TAINT_NOSCHEDULE};
  sf_index_taint_rule_add(idx, "r", sf_index_dev_find(idx, DRV, "n", "gpu-1"), &t);
  tc_claim_t c;
  tc_claim(&c, 0, 0);
  c.req.all = true;
  sf_verdict_t v = eval1(n, &c.dem);
  cr_assert_eq(v.fit, SF_FIT_NO);
  cr_assert(strstr(v.reason,
                   "does not tolerate taint gpu.nvidia.com/xid=79:NoSchedule on 1 matching device"),
            "%s", v.reason);
  CODE(v, SF_REASON_TAINT);
  c.req.admin = true;
  cr_assert_eq(eval1(n, &c.dem).fit, SF_FIT_NO, "admin access does not pass a taint either");
  c.req.admin = false;
  sf_toleration_t tol = {"gpu.nvidia.com/xid", NULL, true, true, SF_TAINT_NONE};
  c.req.tols = &tol;
  c.req.ntols = 1;
  sf_assignment_t a;
  cr_assert_eq(sf_packer_place(pk, idx, &pol, &c.dem, n, &a, NULL), SF_FIT_YES);
  cr_assert_eq(a.n, 2, "tolerated: both");
  /* A request that is not All just takes the untainted device. */
  c.req.ntols = 0;
  tc_claim(&c, 1, 0);
  cr_assert_eq(eval1(n, &c.dem).fit, SF_FIT_YES);
}

Test(packer, unknown_selector_passes_the_node_as_unsure)
{
  sf_node_id n = tc_node(idx, "n", 1, "RTX", 20 * GiB, true);
  tc_claim_t c;
  tc_claim(&c, 1, GiB);
  c.req.selectors = &tc_sel_unknown;
  sf_verdict_t v = eval1(n, &c.dem);
  cr_assert_eq(v.fit, SF_FIT_UNSURE);
  cr_assert(strstr(v.reason, "left to the DRA plugin"));
  CODE(v, SF_REASON_SELECTOR);
}

Test(packer, first_available_alternatives)
{
  sf_node_id n = tc_node(idx, "n", 2, "RTX", 20 * GiB, false);
  sf_selector_t h100 = tc_sel_model("H100");
  sf_request_t alts[2] = {{"big", &h100, 1, false, 1, NULL, 0, NULL, 0, NULL, 0, false},
                          {"small", &tc_sel_driver, 1, false, 2, NULL, 0, NULL, 0, NULL, 0, false}};
  sf_request_t top = {"gpu", NULL, 0, false, 0, NULL, 0, NULL, 0, alts, 2, false};
  sf_claim_t cl = {"ns/c", &top, 1, NULL, 0};
  sf_demand_t d = {&cl, 1, 0, 0};
  sf_assignment_t a;
  cr_assert_eq(sf_packer_place(pk, idx, &pol, &d, n, &a, NULL), SF_FIT_YES);
  cr_assert_eq(a.n, 2);
  cr_assert_eq(a.results[0].alt, 1);
}

Test(packer, match_and_distinct_attributes)
{
  sf_node_id n = tc_node(idx, "n", 2, "RTX", 20 * GiB, true);
  sf_cap_request_t cap = {DRV "/memory", GiB};
  sf_request_t reqs[2] = {{"a", &tc_sel_driver, 1, false, 1, &cap, 1, NULL, 0, NULL, 0, false},
                          {"b", &tc_sel_driver, 1, false, 1, &cap, 1, NULL, 0, NULL, 0, false}};
  sf_constraint_t distinct = {SF_CONSTRAINT_DISTINCT, DRV "/uuid", NULL, 0};
  sf_claim_t cl = {"ns/c", reqs, 2, &distinct, 1};
  sf_demand_t d = {&cl, 1, 0, 0};
  sf_assignment_t a;
  cr_assert_eq(sf_packer_place(pk, idx, &pol, &d, n, &a, NULL), SF_FIT_YES);
  cr_assert_neq(a.results[0].pick.dev, a.results[1].pick.dev);
  sf_constraint_t match = {SF_CONSTRAINT_MATCH, DRV "/uuid", NULL, 0};
  cl.cons = &match;
  cr_assert_eq(sf_packer_place(pk, idx, &pol, &d, n, &a, NULL), SF_FIT_YES);
  cr_assert_eq(a.results[0].pick.dev, a.results[1].pick.dev); /* one shared card, twice */
  sf_constraint_t missing = {SF_CONSTRAINT_MATCH, DRV "/nosuch", NULL, 0};
  cl.cons = &missing;
  sf_verdict_t v = eval1(n, &d);
  cr_assert_eq(v.fit, SF_FIT_NO);
  cr_assert(strstr(v.reason, "shares one value of " DRV "/nosuch"), "%s", v.reason);
  CODE(v, SF_REASON_CONSTRAINT);
}

Test(packer, all_mode_takes_every_matching_device)
{
  sf_node_id n = tc_node(idx, "n", 3, "RTX", 20 * GiB, false);
  tc_claim_t c;
  tc_claim(&c, 0, 0);
  c.req.all = true;
  sf_assignment_t a;
  cr_assert_eq(sf_packer_place(pk, idx, &pol, &c.dem, n, &a, NULL), SF_FIT_YES);
  cr_assert_eq(a.n, 3);
  tc_claim_t one;
  tc_claim(&one, 1, 0);
  place(n, &one.dem, "x");
  cr_assert_eq(eval1(n, &c.dem).fit, SF_FIT_NO);
}

/* Adds pool `pool` of n (<= 16) exclusive devices of `model` to node `node`. */
static void add_pool(sf_node_id node, const char *pool, int n, const char *model)
{
  sf_device_spec_t devs[16];
  sf_attr_t attrs[16];
  char names[16][16];
  for (int i = 0; i < n; i++) {
    snprintf(names[i], sizeof(names[i]), "gpu-%d", i);
    attrs[i] = (sf_attr_t){DRV "/productName", SF_ATTR_STRING, 0, model};
    devs[i] = (sf_device_spec_t){names[i], &attrs[i], 1, NULL, 0, NULL, 0, NULL, 0, false};
  }
  cr_assert_eq(sf_index_pool_set(idx, node, DRV, pool, devs, (size_t)n, NULL, 0), 0);
}

Test(packer, all_mode_counts_toward_the_result_limit_per_claim)
{
  sf_node_id n;
  sf_node_spec_t ns = {"n", 0, 0};
  cr_assert_eq(sf_index_node_upsert(idx, &ns, &n), 0);
  add_pool(n, "a1", 16, "A");
  add_pool(n, "a2", 15, "A");
  add_pool(n, "b", 2, "B");
  sf_selector_t a = tc_sel_model("A"), b = tc_sel_model("B"), h100 = tc_sel_model("H100");
  sf_request_t all_a = {"all", &a, 1, true, 0, NULL, 0, NULL, 0, NULL, 0, false};
  sf_request_t two_b = {"two", &b, 1, false, 2, NULL, 0, NULL, 0, NULL, 0, false};
  /* One claim: 31 devices (All) and 2 are 33 results, past DRA's 32. */
  sf_request_t both[2] = {all_a, two_b};
  sf_claim_t one = {"ns/one", both, 2, NULL, 0};
  sf_demand_t d = {&one, 1, 0, 0};
  sf_verdict_t v = eval1(n, &d);
  cr_assert_eq(v.fit, SF_FIT_NO);
  cr_assert(strstr(v.reason,
                   "claim ns/one would get 33 devices on this node; DRA allows 32 per claim"),
            "%s", v.reason);
  CODE(v, SF_REASON_CLAIM_LIMIT);
  /* The limit is per claim: 31 in one, 2 in the other. */
  sf_claim_t apart[2] = {{"ns/a", &all_a, 1, NULL, 0}, {"ns/b", &two_b, 1, NULL, 0}};
  d = (sf_demand_t){apart, 2, 0, 0};
  cr_assert_eq(eval1(n, &d).fit, SF_FIT_YES);
  /* All counts the node's matching devices: 33 now. */
  add_pool(n, "a3", 2, "A");
  sf_claim_t alone = {"ns/all", &all_a, 1, NULL, 0};
  d = (sf_demand_t){&alone, 1, 0, 0};
  v = eval1(n, &d);
  cr_assert_eq(v.fit, SF_FIT_NO);
  cr_assert(strstr(v.reason, "would get 33 devices"), "%s", v.reason);
  /* firstAvailable: the alternative past the limit is skipped for the next one... */
  sf_request_t alts[2] = {all_a, {"one", &b, 1, false, 1, NULL, 0, NULL, 0, NULL, 0, false}};
  sf_request_t top = {"gpu", NULL, 0, false, 0, NULL, 0, NULL, 0, alts, 2, false};
  sf_claim_t pick = {"ns/pick", &top, 1, NULL, 0};
  d = (sf_demand_t){&pick, 1, 0, 0};
  sf_assignment_t as;
  cr_assert_eq(sf_packer_place(pk, idx, &pol, &d, n, &as, NULL), SF_FIT_YES);
  cr_assert_eq(as.n, 1);
  cr_assert_eq(as.results[0].alt, 1);
  /* ...and when that one has no device, nothing fits. */
  alts[1].selectors = &h100;
  v = eval1(n, &d);
  cr_assert_eq(v.fit, SF_FIT_NO);
  cr_assert(strstr(v.reason, "would get 33 devices"), "%s", v.reason);
  /* An exact count past the limit, on a node with enough devices. */
  sf_request_t many = {"many", &a, 1, false, 33, NULL, 0, NULL, 0, NULL, 0, false};
  sf_claim_t big = {"ns/big", &many, 1, NULL, 0};
  d = (sf_demand_t){&big, 1, 0, 0};
  cr_assert_eq(eval1(n, &d).fit, SF_FIT_NO);
  pk->fast.on = false; /* the general search gives the same answer */
  cr_assert_eq(eval1(n, &d).fit, SF_FIT_NO);
}

/* DRA: a result without shareID puts a shared device among the allocated devices, not the shares. */
Test(packer, shared_device_held_whole_takes_no_share)
{
  /* A shared device without capacities: only the hold can keep others off. */
  sf_node_id n;
  sf_node_spec_t ns = {"bare", 0, 0};
  cr_assert_eq(sf_index_node_upsert(idx, &ns, &n), 0);
  sf_device_spec_t bare = {"gpu-0", NULL, 0, NULL, 0, NULL, 0, NULL, 0, true};
  cr_assert_eq(sf_index_pool_set(idx, n, DRV, "bare", &bare, 1, NULL, 0), 0);
  sf_dev_id d = sf_index_dev_find(idx, DRV, "bare", "gpu-0");
  tc_claim_t c;
  tc_claim(&c, 1, 0);
  sf_pick_t share = {d, NULL, false}, whole = {d, NULL, true};
  sf_alloc_id a;
  cr_assert_eq(sf_index_alloc_add(idx, "ns/share", n, 0, 0, &share, 1, 0, &a), 0);
  cr_assert_eq(eval1(n, &c.dem).fit, SF_FIT_YES, "shares beside a share");
  cr_assert_eq(sf_index_alloc_remove(idx, a), 0);
  cr_assert_eq(sf_index_alloc_add(idx, "ns/whole", n, 0, 0, &whole, 1, SF_ALLOC_FORCE, &a), 0);
  tc_valid(idx);
  sf_verdict_t v = eval1(n, &c.dem);
  cr_assert_eq(v.fit, SF_FIT_NO);
  cr_assert(strstr(v.reason, "0 of 1 matching are free"), "%s", v.reason);
  CODE(v, SF_REASON_DEVICE_COUNT);
  cr_assert_eq(sf_index_alloc_remove(idx, a), 0);
  tc_valid(idx);
  cr_assert_eq(eval1(n, &c.dem).fit, SF_FIT_YES);
  /* With capacities: held whole, all of each is taken, also of one published later. */
  sf_node_id m = tc_node(idx, "caps", 2, "RTX", 20 * GiB, true);
  sf_pick_t w0 = {sf_index_dev_find(idx, DRV, "caps", "gpu-0"), NULL, true};
  cr_assert_eq(sf_index_alloc_add(idx, "ns/w0", m, 0, 0, &w0, 1, SF_ALLOC_FORCE, NULL), 0);
  tc_valid(idx);
  sf_milli_t val, fr;
  sf_index_dev_cap(idx, w0.dev, 0, &val, &fr);
  cr_assert_eq(fr, 0);
  /* All: DRA keeps a device held whole in the set (only shares' capacity filters it out) and
   * then cannot allocate it. */
  tc_claim(&c, 0, GiB);
  c.req.all = true;
  v = eval1(m, &c.dem);
  cr_assert_eq(v.fit, SF_FIT_NO, "%s", v.reason);
  tc_node(idx, "caps", 2, "RTX", 40 * GiB, true); /* republished with more memory */
  tc_valid(idx);
  sf_index_dev_cap(idx, w0.dev, 0, &val, &fr);
  cr_assert_eq(val, 40 * GiB);
  cr_assert_eq(fr, 0);
  cr_assert_eq(eval1(m, &c.dem).fit, SF_FIT_NO);
}

/* A constraint over an attribute a device has with no readable value: unsure, never a no. */
Test(packer, constraint_on_an_unreadable_attribute_is_unsure)
{
  sf_node_id n;
  sf_node_spec_t ns = {"n", 0, 0};
  cr_assert_eq(sf_index_node_upsert(idx, &ns, &n), 0);
  sf_attr_t odd = {DRV "/numa", SF_ATTR_UNKNOWN, 0, NULL}, one = {DRV "/numa", SF_ATTR_INT, 1, NULL};
  sf_device_spec_t devs[2] = {{"gpu-0", &odd, 1, NULL, 0, NULL, 0, NULL, 0, false},
                              {"gpu-1", &one, 1, NULL, 0, NULL, 0, NULL, 0, false}};
  cr_assert_eq(sf_index_pool_set(idx, n, DRV, "n", devs, 2, NULL, 0), 0);
  tc_claim_t c;
  tc_claim(&c, 2, 0);
  sf_constraint_t match = {SF_CONSTRAINT_MATCH, DRV "/numa", NULL, 0};
  c.claim.cons = &match;
  c.claim.ncons = 1;
  sf_verdict_t v = eval1(n, &c.dem);
  cr_assert_eq(v.fit, SF_FIT_UNSURE);
  cr_assert(strstr(v.reason, "gpu.nvidia.com/numa has no value slicefit can read"), "%s", v.reason);
  CODE(v, SF_REASON_SELECTOR);
  /* One device is enough: the readable one fits, whatever the other holds. */
  tc_claim(&c, 1, 0);
  c.claim.cons = &match;
  c.claim.ncons = 1;
  cr_assert_eq(eval1(n, &c.dem).fit, SF_FIT_YES);
}

Test(packer, max_sharers_and_headroom)
{
  sf_node_id n = tc_node(idx, "n", 1, "RTX", 20 * GiB, true);
  tc_claim_t c;
  tc_claim(&c, 1, GiB);
  set("max_sharers", "2");
  place(n, &c.dem, "a");
  place(n, &c.dem, "b");
  sf_verdict_t v = eval1(n, &c.dem);
  cr_assert_eq(v.fit, SF_FIT_NO);
  cr_assert(strstr(v.reason, "max_sharers"), "%s", v.reason);
  CODE(v, SF_REASON_SHARERS);
  set("max_sharers", "0");
  set("headroom_pct", "50");
  tc_claim(&c, 1, 9 * GiB); /* 18 used + 2 already; 10 of 20 kept free */
  cr_assert_eq(eval1(n, &c.dem).fit, SF_FIT_NO);
  tc_claim(&c, 1, 8 * GiB);
  cr_assert_eq(eval1(n, &c.dem).fit, SF_FIT_YES);
}

Test(packer, search_budget_bounds_hostile_claims)
{
  sf_node_id n = tc_node(idx, "n", 16, "RTX", 20 * GiB, false);
  /* Eight single-device requests and one for nine more: 17 > 16, and a naive
   * search would try every ordering of the first eight before giving up. */
  sf_request_t r[9];
  for (int i = 0; i < 9; i++)
    r[i] = (sf_request_t){"gpu", &tc_sel_driver, 1, false, i == 8 ? 9 : 1, NULL, 0, NULL,
                          0,     NULL,           0, false};
  sf_claim_t cl = {"ns/hostile", r, 9, NULL, 0};
  sf_demand_t d = {&cl, 1, 0, 0};
  set("search_budget", "1000");
  sf_verdict_t v = eval1(n, &d);
  cr_assert_eq(v.fit, SF_FIT_UNSURE, "%s", v.reason);
  cr_assert(strstr(v.reason, "budget of 1000 steps"), "%s", v.reason);
  CODE(v, SF_REASON_SEARCH_BUDGET);
  r[8].count = 8; /* 8 + 8 fits */
  cr_assert_eq(eval1(n, &d).fit, SF_FIT_YES);
}

Test(packer, first_fit_follows_node_order_packer_packs_tight)
{
  sf_node_id n = tc_node(idx, "n", 2, "RTX", 20 * GiB, true);
  sf_milli_t ten = 10 * GiB;
  sf_pick_t p = {sf_index_dev_find(idx, DRV, "n", "gpu-1"), &ten, false};
  sf_index_alloc_add(idx, "x", n, 0, 0, &p, 1, 0, NULL);
  tc_claim_t c;
  tc_claim(&c, 1, 4 * GiB);
  sf_assignment_t a;
  sf_packer_place(pk, idx, &pol, &c.dem, n, &a, NULL);
  cr_assert_str_eq(sf_index_dev_name(idx, a.results[0].pick.dev), "gpu-0");
  set("device_choice", "packer");
  for (int s = 0; s < 4; s++) {
    const char *strat[] = {"fragmentation", "fgd", "binpack", "spread"};
    set("strategy", strat[s]);
    sf_packer_place(pk, idx, &pol, &c.dem, n, &a, NULL);
    cr_assert_str_eq(sf_index_dev_name(idx, a.results[0].pick.dev), s == 3 ? "gpu-0" : "gpu-1", "%s",
                     strat[s]);
  }
}

/*
 * The fast path remembers a node's verdict for the next call alike, and
 * under first fit its placement for a call that differs only in what
 * scores it (the pod's CPU, the mix): each remembered answer must be what
 * a fresh packer gives. The device choice is set without applying the
 * policy to the index, as the ConfigMap's reload can, so no node version
 * moves to hide a stale verdict.
 */
static void same_as_fresh(sf_node_id n, const sf_demand_t *d, const char *what)
{
  sf_verdict_t got = eval1(n, d), want;
  sf_packer_t *fresh = sf_packer_create();
  cr_assert_eq(sf_packer_evaluate(fresh, idx, &pol, d, &n, 1, 0, &want), 0);
  sf_packer_destroy(fresh);
  cr_assert_eq(got.fit, want.fit, "%s", what);
  cr_assert(got.raw == want.raw, "%s: remembered %.17g, fresh %.17g", what, got.raw, want.raw);
}

Test(packer, remembered_verdicts_follow_the_device_choice_and_what_scores)
{
  char err[200];
  sf_node_id n = tc_node(idx, "n", 2, "RTX", 20 * GiB, true);
  sf_milli_t ten = 10 * GiB;
  sf_pick_t p = {sf_index_dev_find(idx, DRV, "n", "gpu-1"), &ten, false};
  sf_index_alloc_add(idx, "x", n, 0, 0, &p, 1, 0, NULL);
  sf_node_spec_t ns = {"n", 64000, 0};
  sf_index_node_upsert(idx, &ns, NULL);
  set("strategy", "binpack"); /* first fit takes the idle gpu-0, the packer the used gpu-1 */
  tc_claim_t c;
  tc_claim(&c, 1, 4 * GiB);
  double first = eval1(n, &c.dem).raw;
  cr_assert_eq(sf_policy_set(&pol, "device_choice", "packer", err, sizeof(err)), 0, "%s", err);
  same_as_fresh(n, &c.dem, "packer after first-fit");
  cr_assert(eval1(n, &c.dem).raw > first, "the packer's device fills the used card");
  cr_assert_eq(sf_policy_set(&pol, "device_choice", "first-fit", err, sizeof(err)), 0, "%s", err);
  same_as_fresh(n, &c.dem, "first-fit after packer");
  /* Under first fit, what scores the same device moves: the pod's CPU, then the learned mix. */
  set("strategy", "fragmentation");
  cr_assert_eq(sf_policy_set(&pol, "weight_unfed", "1", err, sizeof(err)), 0, "%s", err);
  tc_claim_t hungry;
  tc_claim(&hungry, 1, 4 * GiB);
  hungry.dem.cpu_milli = 40000;
  cr_assert_eq(sf_mix_learn(pk, idx, &pol, &hungry.dem, +1), 0);
  c.dem.cpu_milli = 1000;
  double light = eval1(n, &c.dem).raw;
  c.dem.cpu_milli = 30000;
  same_as_fresh(n, &c.dem, "another CPU");
  cr_assert(eval1(n, &c.dem).raw != light, "the CPU moved the score: the test reaches the case");
  cr_assert_eq(sf_mix_learn(pk, idx, &pol, &c.dem, +1), 0);
  same_as_fresh(n, &c.dem, "another mix");
}

Test(packer, binpack_and_spread_rank_nodes_oppositely)
{
  sf_node_id n[2] = {tc_node(idx, "empty", 2, "RTX", 20 * GiB, true),
                     tc_node(idx, "used", 2, "RTX", 20 * GiB, true)};
  tc_claim_t c;
  tc_claim(&c, 1, 8 * GiB);
  place(n[1], &c.dem, "x");
  sf_verdict_t v[2];
  set("strategy", "binpack");
  sf_packer_evaluate(pk, idx, &pol, &c.dem, n, 2, 0, v);
  cr_assert_eq(v[1].score, 10);
  cr_assert_eq(v[0].score, 0);
  set("strategy", "spread");
  sf_packer_evaluate(pk, idx, &pol, &c.dem, n, 2, 0, v);
  cr_assert_eq(v[0].score, 10);
  cr_assert_eq(v[1].score, 0);
}

/* FGD: a 0.5-GPU pod goes where it leaves no sliver the mix cannot use. */
Test(packer, fgd_follows_the_mix)
{
  sf_node_id n[2] = {tc_node(idx, "a", 1, "T4", 1000, true), tc_node(idx, "b", 1, "T4", 1000, true)};
  set("capacity", "memory");
  set("strategy", "fgd");
  set("fgd_mix", "500mx1=1");
  sf_milli_t three = 300, half = 500;
  sf_pick_t pa = {sf_index_dev_find(idx, DRV, "a", "gpu-0"), &three, false};
  sf_index_alloc_add(idx, "x", n[0], 0, 0, &pa, 1, 0, NULL);
  tc_claim_t c;
  tc_claim(&c, 1, half);
  sf_verdict_t v[2];
  sf_packer_evaluate(pk, idx, &pol, &c.dem, n, 2, 0, v);
  /* On a: 700 free -> 200 left, a sliver too small for 500 (frag +200). On b: 1000 -> 500, usable. */
  cr_assert_eq(v[1].score, 10);
  cr_assert_eq(v[0].score, 0);
  cr_assert_float_eq(sf_packer_node_frag(pk, idx, &pol, n[0]), 0.0, 1e-9);
}

/*
 * fragmentation scores on FGD's integer steps: costs within one step tie,
 * and the node order, not the exact cost, decides between them. Node "s"
 * has 400 of 1000 free (a sliver the learned 500m mix cannot use); the
 * 300m pod there leaves 100 (dF = -300), on an idle node it leaves 700
 * (dF = 0).
 */
static void sliver_pair(bool sliver_first, sf_verdict_t v[2], sf_node_id n[2])
{
  n[0] = tc_node(idx, "p", 1, "T4", 1000, true);
  n[1] = tc_node(idx, "q", 1, "T4", 1000, true);
  set("capacity", "memory");
  sf_milli_t six = 600;
  sf_node_id s = n[sliver_first ? 0 : 1];
  sf_pick_t pk6 = {sf_index_dev_find(idx, DRV, sliver_first ? "p" : "q", "gpu-0"), &six, false};
  sf_index_alloc_add(idx, "x", s, 0, 0, &pk6, 1, 0, NULL);
  set("weight_plan", "0"); /* FGD's steps alone: the plan would price the 500s' pairs */
  tc_claim_t mix, c;
  tc_claim(&mix, 1, 500);
  cr_assert_eq(sf_mix_learn(pk, idx, &pol, &mix.dem, +1), 0);
  tc_claim(&c, 1, 300);
  sf_packer_evaluate(pk, idx, &pol, &c.dem, n, 2, 0, v);
}

Test(packer, fragmentation_steps_tie_and_node_order_decides)
{
  sf_verdict_t v[2], w[2];
  sf_node_id n[2];
  sliver_pair(true, v, n);
  /* weight 1: costs -300 and 0, steps 57 and 50: the sliver node wins */
  cr_assert_float_eq(floor(v[0].raw), floor(100.0 / (1.0 + exp(-0.3))), 1e-9);
  cr_assert_float_eq(floor(v[1].raw), 50.0, 1e-9);
  cr_assert_eq(v[0].score, 10);
  /* weight 0.1: costs -30 and 0, both step 50: one fixed order of names decides, whichever node has the sliver */
  set("weight_frag", "0.1");
  tc_claim_t c;
  tc_claim(&c, 1, 300);
  sf_packer_evaluate(pk, idx, &pol, &c.dem, n, 2, 0, v);
  cr_assert_float_eq(floor(v[0].raw), 50.0, 1e-9);
  cr_assert_float_eq(floor(v[1].raw), 50.0, 1e-9);
  int first = v[0].score == 10 ? 0 : 1;
  teardown();
  setup();
  set("weight_frag", "0.1");
  sliver_pair(false, w, n);
  cr_assert_float_eq(floor(w[0].raw), 50.0, 1e-9);
  cr_assert_float_eq(floor(w[1].raw), 50.0, 1e-9);
  cr_assert_eq(w[first].score, 10, "the same node wins with or without the sliver");
}

Test(packer, fragmentation_keeps_islands_whole)
{
  set("island_map", "H100=4");
  sf_node_id n[2] = {tc_node(idx, "intact", 4, "H100", 80 * GiB, false),
                     tc_node(idx, "broken", 4, "H100", 80 * GiB, false)};
  tc_claim_t one;
  tc_claim(&one, 1, 0);
  place(n[1], &one.dem, "x");
  sf_verdict_t v[2];
  sf_packer_evaluate(pk, idx, &pol, &one.dem, n, 2, SF_EVAL_LEARN, v);
  cr_assert_eq(v[1].score, 10);
  cr_assert_eq(v[0].score, 0);
  cr_assert_geq(sf_mix_size(idx), 1);
}

/*
 * Nodes "a" (20 cores) and "b" (64 cores), four idle A100s each, and a
 * learned mix of one pod: one whole GPU, 12 cores.
 */
static void cpu_nodes(sf_node_id n[2])
{
  n[0] = tc_node(idx, "a", 4, "A100", 40 * GiB, false);
  n[1] = tc_node(idx, "b", 4, "A100", 40 * GiB, false);
  sf_node_spec_t sa = {"a", 20000, 0}, sb = {"b", 64000, 0};
  sf_index_node_upsert(idx, &sa, NULL);
  sf_index_node_upsert(idx, &sb, NULL);
  tc_claim_t mix;
  tc_claim(&mix, 1, 0);
  mix.dem.cpu_milli = 12000;
  cr_assert_eq(sf_mix_learn(pk, idx, &pol, &mix.dem, +1), 0);
}

/* cpu_nodes, and a pod of one whole GPU and 2 cores for them. */
static void cpu_nodes_pod(sf_node_id n[2], tc_claim_t *c)
{
  cpu_nodes(n);
  tc_claim(c, 1, 0);
  c->dem.cpu_milli = 2000;
}

/*
 * weight_unfed: node "a" has 20 cores for four idle GPUs, so its CPU feeds
 * 20 / 12 = 1.67 of the learned pod (one whole GPU, 12 cores) and 2.33 GPUs
 * count as fragmentation; "b" has 64 cores and feeds all four. A 2-core pod
 * on a leaves three idle GPUs and 18 cores, 1.5 GPUs unfed (dF = -833, step
 * 69); on b it changes nothing (step 50). Without the term, as in FGD, both
 * are step 50. The default weight, 0.25, counts a quarter of each: 583
 * milli-GPU before, 375 after (whole milli, rounded down), dF = -208, step 55.
 */
Test(packer, fragmentation_counts_gpus_the_cpu_cannot_feed)
{
  sf_node_id n[2];
  tc_claim_t c;
  cpu_nodes_pod(n, &c);
  sf_verdict_t v[2];
  cr_assert_eq(pol.weight_unfed, 0.25, "the default");
  sf_packer_evaluate(pk, idx, &pol, &c.dem, n, 2, 0, v);
  cr_assert_float_eq(floor(v[0].raw), floor(100.0 / (1.0 + exp(-0.208))), 1e-9);
  cr_assert_float_eq(floor(v[0].raw), 55.0, 1e-9);
  cr_assert_float_eq(floor(v[1].raw), 50.0, 1e-9);
  set("weight_unfed", "1"); /* the measure's own unit: whole GPUs */
  sf_packer_evaluate(pk, idx, &pol, &c.dem, n, 2, 0, v);
  cr_assert_float_eq(floor(v[0].raw), floor(100.0 / (1.0 + exp(-0.833))), 1e-9);
  cr_assert_float_eq(floor(v[0].raw), 69.0, 1e-9);
  cr_assert_float_eq(floor(v[1].raw), 50.0, 1e-9);
  cr_assert_eq(v[0].score, 10);
  /* FGD's own measure (the replay's frag figure) does not count them. */
  cr_assert_float_eq(sf_packer_node_frag(pk, idx, &pol, n[0]), 0.0, 1e-9);
  set("weight_unfed", "0");
  sf_packer_evaluate(pk, idx, &pol, &c.dem, n, 2, 0, v);
  cr_assert_float_eq(floor(v[0].raw), 50.0, 1e-9);
  cr_assert_float_eq(floor(v[1].raw), 50.0, 1e-9);
  set("weight_unfed", "1");
  set("strategy", "fgd");
  sf_packer_evaluate(pk, idx, &pol, &c.dem, n, 2, 0, v);
  cr_assert_float_eq(floor(v[0].raw), 50.0, 1e-9, "fgd keeps the published measure");
}

/* An A100 node of `gpus` idle GPUs and `cores` cores. */
static sf_node_id cpu_node(const char *name, int gpus, int64_t cores)
{
  sf_node_id n = tc_node(idx, name, gpus, "A100", 40 * GiB, false);
  sf_node_spec_t sp = {name, cores * 1000, 0};
  sf_index_node_upsert(idx, &sp, NULL);
  return n;
}

/* The learned mix gains a pod of `gpus` whole GPUs and `cores` cores. */
static void learn_pod(uint32_t gpus, int64_t cores)
{
  tc_claim_t mix;
  tc_claim(&mix, gpus, 0);
  mix.dem.cpu_milli = cores * 1000;
  cr_assert_eq(sf_mix_learn(pk, idx, &pol, &mix.dem, +1), 0);
}

/*
 * The unfed GPUs' row is on the fragmentation term's scale: weight_frag
 * weighs it as it weighs dF, and weight_unfed sets what each GPU is worth.
 * On "a" (see above) FGD's own dF is 0 and the unfed GPUs change by -833
 * at weight_unfed 1: the least cost is weight_frag x -833, the same double
 * at weight_frag 2 and at 0.3, and 0 when weight_frag is 0.
 */
Test(packer, unfed_row_is_weighed_by_weight_frag)
{
  sf_node_id n[2];
  tc_claim_t c;
  cpu_nodes_pod(n, &c);
  sf_verdict_t v[2];
  sf_packer_set_bounds(pk, true);
  set("weight_unfed", "1");
  static const char *const wf[] = {"1", "2", "0.3", "0"};
  for (size_t i = 0; i < sizeof(wf) / sizeof(wf[0]); i++) {
    set("weight_frag", wf[i]);
    sf_packer_evaluate(pk, idx, &pol, &c.dem, n, 2, 0, v);
    cr_assert_eq(v[0].cost, pol.weight_frag * -833.0, "weight_frag %s: cost %.17g", wf[i], v[0].cost);
    cr_assert_float_eq(floor(v[0].raw), floor(100.0 / (1.0 + exp(v[0].cost / 1000.0))), 1e-9);
    cr_assert_eq(v[1].cost, 0.0, "b feeds all its GPUs");
  }
  set("weight_frag", "2");
  set("weight_unfed", "0.5"); /* 1166 milli-GPU before, 750 after, each rounded down */
  sf_packer_evaluate(pk, idx, &pol, &c.dem, n, 2, 0, v);
  cr_assert_eq(v[0].cost, 2.0 * -416.0);
}

/*
 * A node whose CPU feeds its idle GPUs exactly: "even" has 48 cores for
 * four idle GPUs of the learned pod (one GPU, 12 cores). A 1-GPU pod of 12
 * cores leaves three idle and 36 cores, all fed: no change (step 50). One
 * of 13 cores leaves 35 cores for three GPUs' 36: a twelfth of a GPU
 * unfed, 83 milli-GPU, step 47. At weight 1.
 */
Test(packer, unfed_counts_from_the_cpu_the_pod_leaves)
{
  set("weight_unfed", "1");
  sf_node_id n = cpu_node("even", 4, 48);
  learn_pod(1, 12);
  tc_claim_t c;
  tc_claim(&c, 1, 0);
  c.dem.cpu_milli = 12000;
  sf_verdict_t v;
  sf_packer_evaluate(pk, idx, &pol, &c.dem, &n, 1, 0, &v);
  cr_assert_float_eq(floor(v.raw), 50.0, 1e-9);
  c.dem.cpu_milli = 13000;
  sf_packer_evaluate(pk, idx, &pol, &c.dem, &n, 1, 0, &v);
  cr_assert_float_eq(floor(v.raw), floor(100.0 / (1.0 + exp(0.083))), 1e-9);
  cr_assert_float_eq(floor(v.raw), 47.0, 1e-9);
}

/*
 * At the CPU that just feeds every idle GPU the count is skipped, and one
 * milli-core less counts. "s" has 8 cores, five shared A100s, one of them
 * half used, and the learned pod is one whole GPU and 1 core: its four idle
 * GPUs need 4 cores. A 4 GiB share on the used GPU takes a tenth of a GPU
 * from the too small (dF = -100). With 4 cores, the pod leaves exactly 4;
 * with 4.001, it leaves a milli-core short: 1 milli-GPU unfed (at weight 1,
 * whole milli-GPUs of the shape's 1 core).
 */
Test(packer, unfed_skipped_only_where_the_cpu_left_feeds_every_idle_gpu)
{
  set("weight_unfed", "1");
  sf_node_id n = tc_node(idx, "s", 5, "A100", 40 * GiB, true);
  sf_node_spec_t sp = {"s", 8000, 0};
  sf_index_node_upsert(idx, &sp, NULL);
  tc_claim_t half, c;
  tc_claim(&half, 1, 20 * GiB);
  place(n, &half.dem, "x");
  learn_pod(1, 1);
  tc_claim(&c, 1, 4 * GiB);
  sf_verdict_t v;
  sf_packer_set_bounds(pk, true);
  c.dem.cpu_milli = 4000;
  sf_packer_evaluate(pk, idx, &pol, &c.dem, &n, 1, 0, &v);
  cr_assert_eq(v.cost, -100.0, "cost %.17g", v.cost);
  c.dem.cpu_milli = 4001;
  sf_packer_evaluate(pk, idx, &pol, &c.dem, &n, 1, 0, &v);
  cr_assert_eq(v.cost, -99.0, "cost %.17g", v.cost);
}

/*
 * The CPU a node lacks counts exactly, not in whole pods. Four idle GPUs
 * each on "p" (21 cores), "q" (29) and "r" (48), and a learned pod of one
 * whole GPU and 10 cores. A 5-core pod lowers what p and q lack by the same
 * half GPU: p 1.9 -> 1.4, q 1.1 -> 0.6 GPUs unfed. Counted in whole pods
 * fed, p would stay at 2 (21 and 16 cores both feed one pod short of a
 * second) and q would drop from 2 to 1, so the node with more CPU per GPU
 * would win every light pod. r feeds every GPU and gains nothing. (At
 * weight 1, the measure's own unit.)
 */
Test(packer, unfed_counts_the_cpu_a_node_lacks_not_whole_pods)
{
  set("weight_unfed", "1");
  sf_node_id n[3] = {cpu_node("p", 4, 21), cpu_node("q", 4, 29), cpu_node("r", 4, 48)};
  learn_pod(1, 10);
  tc_claim_t c;
  tc_claim(&c, 1, 0);
  c.dem.cpu_milli = 5000;
  sf_verdict_t v[3];
  sf_packer_evaluate(pk, idx, &pol, &c.dem, n, 3, 0, v);
  /* dF = -500 on p and q: step floor(100 / (1 + e^-0.5)) = 62 */
  cr_assert_float_eq(floor(v[0].raw), 62.0, 1e-9);
  cr_assert_float_eq(floor(v[1].raw), 62.0, 1e-9);
  cr_assert_float_eq(floor(v[2].raw), 50.0, 1e-9);
}

/*
 * A shape of two GPUs takes idle GPUs two at a time, whatever the CPU: only
 * the CPU is counted as a fraction. Learned pod: two whole GPUs, 20 cores.
 * "five" (30 cores, five idle GPUs) holds two such pods, of which its CPU
 * feeds 1.5: one GPU unfed, before and after a 1-GPU pod without CPU (four
 * idle still hold two), so the pod scores step 50. "six" (30 cores, six
 * idle) holds three, 1.5 fed: three GPUs unfed; after, two held: one. dF =
 * -2000, step 88. Counting the odd idle GPU as a fraction of a pod would give
 * both nodes dF = -1000, step 73. (At weight 1.)
 */
Test(packer, unfed_takes_idle_gpus_in_whole_pods_of_the_shape)
{
  set("weight_unfed", "1");
  sf_node_id n[2] = {cpu_node("five", 5, 30), cpu_node("six", 6, 30)};
  learn_pod(2, 20);
  tc_claim_t c;
  tc_claim(&c, 1, 0);
  sf_verdict_t v[2];
  sf_packer_evaluate(pk, idx, &pol, &c.dem, n, 2, 0, v);
  cr_assert_float_eq(floor(v[0].raw), 50.0, 1e-9);
  cr_assert_float_eq(floor(v[1].raw), floor(100.0 / (1.0 + exp(-2.0))), 1e-9);
}

/*
 * Starved GPU: the learned pod (one whole GPU, 12 cores) fits each idle GPU
 * of "a", and a's 20 cores feed it until a 10-core pod takes one GPU: the
 * three idle GPUs left are starved. "b" (64 cores) feeds them all; a node
 * whose CPU is not tracked starves nothing; a sliver no shape fits is too
 * small, not starved.
 */
Test(packer, starved_gpus_fit_the_mix_but_not_the_cpu)
{
  sf_node_id n[3];
  cpu_nodes(n);
  n[2] = tc_node(idx, "c", 4, "A100", 40 * GiB, false);
  tc_claim_t c;
  cr_assert_float_eq(sf_packer_node_starved(pk, idx, &pol, n[0]), 0.0, 1e-9);
  tc_claim(&c, 1, 0);
  c.dem.cpu_milli = 10000;
  place(n[0], &c.dem, "ns/a");
  place(n[1], &c.dem, "ns/b");
  place(n[2], &c.dem, "ns/c");
  cr_assert_float_eq(sf_packer_node_starved(pk, idx, &pol, n[0]), 3000.0, 1e-9);
  cr_assert_float_eq(sf_packer_node_starved(pk, idx, &pol, n[1]), 0.0, 1e-9);
  cr_assert_float_eq(sf_packer_node_starved(pk, idx, &pol, n[2]), 0.0, 1e-9, "CPU not tracked");
  /* A shape that asks 2 cores fits a's 10: no GPU of a is starved any more. */
  tc_claim_t light;
  tc_claim(&light, 1, 0);
  light.dem.cpu_milli = 2000;
  cr_assert_eq(sf_mix_learn(pk, idx, &pol, &light.dem, +1), 0);
  cr_assert_float_eq(sf_packer_node_starved(pk, idx, &pol, n[0]), 0.0, 1e-9);
}

/* A share left too small for every shape of the mix is not starved, however little CPU is left. */
Test(packer, starved_leaves_out_slivers_no_shape_fits)
{
  sf_node_id n = tc_node(idx, "a", 2, "T4", 1000, true);
  sf_node_spec_t sa = {"a", 1000, 0};
  sf_index_node_upsert(idx, &sa, NULL);
  set("capacity", "memory");
  set("fgd_mix", "500m:500mx1=1"); /* half a core, half a GPU */
  sf_milli_t eight = 800;
  sf_pick_t p0 = {sf_index_dev_find(idx, DRV, "a", "gpu-0"), &eight, false};
  cr_assert_eq(sf_index_alloc_add(idx, "x", n, 1000, 0, &p0, 1, 0, NULL), 0);
  /* gpu-0: 200 free, too small for 500; gpu-1: idle, fits 500, but no CPU is left. */
  cr_assert_float_eq(sf_packer_node_starved(pk, idx, &pol, n), 1000.0, 1e-9);
  /* A shape without CPU is fed anywhere. */
  set("fgd_mix", "500mx1=1");
  cr_assert_float_eq(sf_packer_node_starved(pk, idx, &pol, n), 0.0, 1e-9);
}

Test(packer, held_mix_moves_only_when_published)
{
  sf_node_id n = tc_node(idx, "n", 1, "T4", 1000, true);
  tc_claim_t a, b;
  tc_claim(&a, 1, 300);
  tc_claim(&b, 1, 600);
  cr_assert_eq(sf_mix_learn(pk, idx, &pol, &a.dem, +1), 0);
  uint64_t h = sf_mix_hash(pk, idx, &pol, &a.dem);
  sf_mix_hold(idx, true);
  cr_assert_eq(sf_mix_learn(pk, idx, &pol, &b.dem, +1), 0);
  cr_assert_eq(sf_mix_size(idx), 1);
  cr_assert_eq(sf_mix_hash(pk, idx, &pol, &a.dem), h);
  sf_mix_publish(idx);
  cr_assert_eq(sf_mix_size(idx), 2);
  cr_assert_neq(sf_mix_hash(pk, idx, &pol, &a.dem), h);
  sf_mix_hold(idx, false);
  cr_assert_eq(sf_mix_learn(pk, idx, &pol, &b.dem, -1), 0);
  cr_assert_eq(sf_mix_size(idx), 1);
  (void)n;
}

Test(packer, reasons_off_changes_no_verdict)
{
  sf_node_id n = tc_node(idx, "n", 1, "RTX", 20 * GiB, true);
  sf_node_spec_t ns = {"n", 4000, 8LL << 30};
  sf_index_node_upsert(idx, &ns, NULL);
  sf_demand_t d = {NULL, 0, 6000, 0};
  sf_packer_set_reasons(pk, false);
  sf_verdict_t v = eval1(n, &d);
  cr_assert_eq(v.fit, SF_FIT_NO);
  cr_assert_str_eq(v.reason, "");
  sf_packer_set_reasons(pk, true);
  cr_assert_str_eq(eval1(n, &d).reason, "needs 6000m CPU; 4000m is free");
}

Test(packer, cpu_and_memory_checked_when_tracked)
{
  sf_node_id n = tc_node(idx, "n", 1, "RTX", 20 * GiB, true);
  sf_node_spec_t ns = {"n", 4000, 8LL << 30};
  sf_index_node_upsert(idx, &ns, NULL);
  sf_demand_t d = {NULL, 0, 6000, 0};
  sf_verdict_t v = eval1(n, &d);
  cr_assert_eq(v.fit, SF_FIT_NO);
  cr_assert_str_eq(v.reason, "needs 6000m CPU; 4000m is free");
  CODE(v, SF_REASON_NODE_CPU);
  d = (sf_demand_t){NULL, 0, 0, 16LL << 30};
  v = eval1(n, &d);
  cr_assert_str_eq(v.reason, "needs 16384 MiB of memory; 8192 MiB is free");
  CODE(v, SF_REASON_NODE_MEMORY);
}

Test(packer, no_claims_pass_every_node)
{
  sf_node_id n[3] = {tc_node(idx, "a", 1, "RTX", 20 * GiB, true), tc_node(idx, "b", 0, "", 0, true),
                     tc_node(idx, "c", 2, "RTX", 20 * GiB, false)};
  sf_demand_t d = {NULL, 0, 0, 0};
  sf_verdict_t v[3];
  cr_assert_eq(sf_packer_evaluate(pk, idx, &pol, &d, n, 3, 0, v), 0);
  for (int i = 0; i < 3; i++)
    cr_assert_eq(v[i].fit, SF_FIT_YES);
  sf_node_id bad = 99;
  cr_assert_eq(sf_packer_evaluate(pk, idx, &pol, &d, &bad, 1, 0, v), SF_ENOENT);
}

/* The fast path's per-node summaries follow the index: a changed, removed or new node is seen anew. */
Test(packer, summaries_follow_changes_and_indexes)
{
  tc_claim_t c;
  tc_claim(&c, 1, 16 * GiB);
  sf_node_id n = tc_node(idx, "a", 1, "RTX", 20 * GiB, true);
  cr_assert_eq(eval1(n, &c.dem).fit, SF_FIT_YES);
  place(n, &c.dem, "ns/first");
  sf_verdict_t v = eval1(n, &c.dem);
  cr_assert_eq(v.fit, SF_FIT_NO);
  cr_assert(strstr(v.reason, "the most free on a matching device is 4Gi") != NULL, "%s", v.reason);
  CODE(v, SF_REASON_CAPACITY_SHORT);
  /* Removed and added again under the same name: a fresh, idle node. */
  cr_assert_eq(sf_index_alloc_remove(idx, sf_index_alloc_find(idx, "ns/first")), 0);
  cr_assert_eq(sf_index_node_remove(idx, n), 0);
  sf_node_id m = tc_node(idx, "a", 1, "RTX", 20 * GiB, true);
  cr_assert_eq(eval1(m, &c.dem).fit, SF_FIT_YES);
  place(m, &c.dem, "ns/second");
  cr_assert_eq(eval1(m, &c.dem).fit, SF_FIT_NO);
}

/* One packer over two indexes whose nodes went through the same steps: each is judged on its own state. */
Test(packer, summaries_are_per_index)
{
  tc_claim_t big, small;
  tc_claim(&big, 1, 16 * GiB);
  tc_claim(&small, 1, 2 * GiB);
  sf_index_t *other = sf_index_create();
  sf_node_id n = tc_node(idx, "a", 1, "RTX", 20 * GiB, true);
  sf_node_id o = tc_node(other, "a", 1, "RTX", 20 * GiB, true);
  sf_index_apply_policy(other, &pol);
  sf_index_apply_policy(idx, &pol);
  cr_assert_eq(n, o);
  place(n, &big.dem, "ns/big"); /* idx: 4Gi left */
  sf_assignment_t as;
  cr_assert_eq(sf_packer_place(pk, other, &pol, &small.dem, o, &as, NULL), SF_FIT_YES);
  cr_assert_eq(sf_packer_commit(pk, other, &small.dem, "ns/small", NULL), 0); /* other: 18Gi left */
  cr_assert_eq(eval1(n, &big.dem).fit, SF_FIT_NO);
  sf_verdict_t w;
  cr_assert_eq(sf_packer_evaluate(pk, other, &pol, &big.dem, &o, 1, 0, &w), 0);
  cr_assert_eq(w.fit, SF_FIT_YES, "a summary of another index was reused: %s", w.reason);
  cr_assert_eq(eval1(n, &big.dem).fit, SF_FIT_NO);
  sf_index_destroy(other);
}

/* Reasons the tests above do not reach, each with its code. */
Test(packer, every_reason_has_its_code)
{
  sf_node_id bare = tc_node(idx, "bare", 0, "RTX", 20 * GiB, true);
  sf_node_id rtx = tc_node(idx, "rtx", 1, "RTX", 20 * GiB, false);
  tc_claim_t c;
  tc_claim(&c, 1, 0);
  sf_verdict_t v = eval1(bare, &c.dem);
  cr_assert_eq(v.fit, SF_FIT_NO);
  CODE(v, SF_REASON_NO_DEVICES);
  sf_selector_t h100 = tc_sel_model("H100");
  c.req.selectors = &h100;
  v = eval1(rtx, &c.dem);
  cr_assert_eq(v.fit, SF_FIT_NO);
  CODE(v, SF_REASON_NO_MATCH);
  tc_claim(&c, 1, GiB);
  c.cap.name = DRV "/bandwidth"; /* a capacity no device publishes */
  v = eval1(rtx, &c.dem);
  cr_assert_eq(v.fit, SF_FIT_NO);
  CODE(v, SF_REASON_NO_CAPACITY);
  /* Two claims that each fit alone on the one card, not together. */
  tc_claim_t a, b;
  tc_claim(&a, 1, 0);
  tc_claim(&b, 1, 0);
  sf_claim_t both[2] = {a.claim, b.claim};
  both[1].name = "ns/other";
  sf_demand_t d = {both, 2, 0, 0};
  v = eval1(rtx, &d);
  cr_assert_eq(v.fit, SF_FIT_NO);
  CODE(v, SF_REASON_TOGETHER);
  cr_assert_eq(eval1(rtx, &a.dem).code, SF_REASON_NONE);
}

/* Every code has a name of its own; none is "other", the class of a verdict without one. */
Test(packer, reason_codes_have_distinct_names)
{
  for (int i = 0; i < SF_REASON_COUNT; i++) {
    const char *n = sf_reason_code_name((sf_reason_code_t)i);
    cr_assert(n && *n && strcmp(n, "other") != 0 && strcmp(n, "unknown") != 0, "code %d", i);
    for (int j = 0; j < i; j++)
      cr_assert_str_neq(n, sf_reason_code_name((sf_reason_code_t)j), "codes %d and %d", i, j);
  }
  cr_assert_str_eq(sf_reason_code_name(SF_REASON_COUNT), "unknown");
}

/*
 * SF_EVAL_HOST_LAGS: a node short of the pod's CPU by the index's count is
 * judged on its devices alone, passed unscored when they fit and rejected
 * with their reason when they do not; without the flag it is rejected for
 * its CPU.
 */
Test(packer, host_lags_passes_a_node_short_of_cpu_when_its_devices_fit)
{
  sf_node_id n = tc_node(idx, "n", 1, "RTX", 20 * GiB, true);
  sf_node_spec_t ns = {"n", 4000, 0};
  sf_index_node_upsert(idx, &ns, NULL);
  sf_index_apply_policy(idx, &pol);
  tc_claim_t c;
  tc_claim(&c, 1, 4 * GiB);
  c.dem.cpu_milli = 8000;
  sf_verdict_t v;
  cr_assert_eq(sf_packer_evaluate(pk, idx, &pol, &c.dem, &n, 1, 0, &v), 0);
  cr_assert_eq(v.fit, SF_FIT_NO);
  cr_assert(strstr(v.reason, "CPU") != NULL, "%s", v.reason);
  cr_assert_eq(sf_packer_evaluate(pk, idx, &pol, &c.dem, &n, 1, SF_EVAL_HOST_LAGS, &v), 0);
  cr_assert_eq(v.fit, SF_FIT_UNSURE, "%s", v.reason);
  cr_assert_eq(v.score, 0);
  cr_assert(strstr(v.reason, "kube-scheduler judges CPU") != NULL, "%s", v.reason);
  tc_claim(&c, 1, 40 * GiB); /* more than the card has: the devices reject */
  c.dem.cpu_milli = 8000;
  cr_assert_eq(sf_packer_evaluate(pk, idx, &pol, &c.dem, &n, 1, SF_EVAL_HOST_LAGS, &v), 0);
  cr_assert_eq(v.fit, SF_FIT_NO);
  cr_assert(strstr(v.reason, "CPU") == NULL, "the devices' reason: %s", v.reason);
}

/*
 * Where pods leave, the cost of a placement grows by weight_fill times the
 * free GPU it leaves on its node (best fit): the fuller node gains on the
 * emptier one. In a fleet that only fills, the term is left out.
 */
Test(packer, fill_weighs_only_where_pods_leave)
{
  sf_node_id n[2] = {tc_node(idx, "empty", 4, "RTX", 20 * GiB, false),
                     tc_node(idx, "used", 4, "RTX", 20 * GiB, false)};
  tc_claim_t c;
  tc_claim(&c, 1, 0);
  place(n[1], &c.dem, "x");
  set("weight_fill", "0.3");
  sf_packer_set_bounds(pk, true); /* the verdicts carry their cost */
  sf_verdict_t still[2], churning[2];
  for (int i = 0; i < 256; i++) /* a fleet that only fills */
    sf_mix_churn(idx, false);
  cr_assert(!sf_mix_churning(idx));
  cr_assert_eq(sf_packer_evaluate(pk, idx, &pol, &c.dem, n, 2, 0, still), 0);
  for (int i = 0; i < 64; i++) /* departures come */
    sf_mix_churn(idx, i % 2 == 1);
  cr_assert(sf_mix_churning(idx));
  cr_assert_eq(sf_packer_evaluate(pk, idx, &pol, &c.dem, n, 2, 0, churning), 0);
  /* 3 GPUs left free on "empty", 2 on "used"; no CPU tracked on either */
  cr_assert_float_eq(churning[0].cost - still[0].cost, pol.weight_fill * 3000.0, 1e-9);
  cr_assert_float_eq(churning[1].cost - still[1].cost, pol.weight_fill * 2000.0, 1e-9);
  set("weight_fill", "0");
  cr_assert_eq(sf_packer_evaluate(pk, idx, &pol, &c.dem, n, 2, 0, churning), 0);
  cr_assert_float_eq(churning[0].cost, still[0].cost, 1e-9);
  cr_assert_float_eq(churning[1].cost, still[1].cost, 1e-9);
}
