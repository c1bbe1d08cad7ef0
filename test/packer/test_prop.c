/*
 * Property tests over random clusters and claims (h2o t/00prop style):
 * the packer never overcommits, the index stays valid after every mutation,
 * verdicts do not depend on node order, and the same input gives the same
 * answer. Seeds are fixed so a failure reproduces.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "../../packer/packer_int.h"
#include "slicefit/mix.h"
#include "cluster.h"
#include "reference.h"
#include "slicefit/policy.h"

static uint64_t rng;
static uint64_t next(void)
{
  uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static uint32_t below(uint32_t n)
{
  return (uint32_t)(next() % n);
}

#define NODES 24

static bool ranged[NODES]; /* the node's memory has a validRange {1Gi, 1Gi, all} */

static void random_cluster(sf_index_t *idx, sf_node_id *nodes)
{
  const char *models[] = {"NVIDIA H100", "NVIDIA A100", "RTX 4000"};
  for (int i = 0; i < NODES; i++) {
    char name[32];
    snprintf(name, sizeof(name), "node-%02d", i);
    int m = (int)below(3);
    int n = m == 2 ? 1 + (int)below(2) : (m == 1 ? 4 : 8);
    ranged[i] = below(2);
    nodes[i] = ranged[i] ? tc_node_range(idx, name, n, models[m],
                                         (m == 0   ? 80
                                          : m == 1 ? 40
                                                   : 20) *
                                             GiB,
                                         GiB, GiB)
                         : tc_node(idx, name, n, models[m],
                                   (m == 0   ? 80
                                    : m == 1 ? 40
                                             : 20) *
                                       GiB,
                                   m == 2);
    sf_node_spec_t ns = {name, 64000, 256LL << 30};
    sf_index_node_upsert(idx, &ns, NULL);
  }
}

typedef struct {
  tc_claim_t c;
  sf_constraint_t con;
} rclaim_t;

static void random_claim(rclaim_t *r)
{
  uint32_t kind = below(4);
  if (kind == 0)
    tc_claim(&r->c, 1, (sf_milli_t)(1 + below(24)) * GiB / 2);
  else if (kind == 1)
    tc_claim(&r->c, 1 + below(3), 0);
  else if (kind == 2)
    tc_claim_island(&r->c, 1 + below(4));
  else
    tc_claim(&r->c, 1 + below(2), (sf_milli_t)(1 + below(8)) * GiB);
  r->c.dem.cpu_milli = (int64_t)below(8) * 1000;
}

static void no_overcommit(const sf_index_t *idx)
{
  for (sf_dev_id d = 0; d < sf_index_dev_end(idx); d++) {
    if (!sf_index_dev_live(idx, d))
      continue;
    for (size_t c = 0; c < sf_index_dev_ncaps(idx, d); c++) {
      sf_milli_t f;
      sf_index_dev_cap(idx, d, c, NULL, &f);
      cr_assert_geq(f, 0, "device %s overcommitted", sf_index_dev_name(idx, d));
    }
    if (!sf_index_dev_shared(idx, d))
      cr_assert_leq(sf_index_dev_holders(idx, d), 1);
  }
  for (sf_node_id n = 0; n < sf_index_node_end(idx); n++) {
    int64_t ca, cu, ma, mu;
    sf_index_node_cpu_mem(idx, n, &ca, &cu, &ma, &mu);
    cr_assert_leq(cu, ca);
    cr_assert_leq(mu, ma);
  }
}

static void run_policy(const char *strategy, const char *choice, uint64_t seed)
{
  rng = seed;
  sf_index_t *idx = sf_index_create();
  sf_packer_t *pk = sf_packer_create();
  sf_packer_t *slow = sf_packer_create(); /* the general path, to compare with the fast one */
  slow->fast.on = false;
  sf_policy_t pol;
  sf_policy_init(&pol);
  char err[200];
  cr_assert_eq(sf_policy_set(&pol, "strategy", strategy, err, sizeof(err)), 0);
  cr_assert_eq(sf_policy_set(&pol, "device_choice", choice, err, sizeof(err)), 0);
  cr_assert_eq(sf_policy_set(&pol, "island_map", "H100=4,A100=2", err, sizeof(err)), 0);
  sf_node_id nodes[NODES], rev[NODES];
  random_cluster(idx, nodes);
  sf_index_apply_policy(idx, &pol);
  for (int i = 0; i < NODES; i++)
    rev[i] = nodes[NODES - 1 - i];
  sf_verdict_t v[NODES], w[NODES], again[NODES], gen[NODES];
  char holder[32];
  int placed = 0, refused = 0;
  for (int step = 0; step < 300; step++) {
    if (below(5) == 0 && sf_index_alloc_count(idx) > 0) {
      /* Remove a random allocation. */
      for (;;) {
        snprintf(holder, sizeof(holder), "pod-%u", below((uint32_t)step));
        sf_alloc_id a = sf_index_alloc_find(idx, holder);
        if (a >= 0) {
          cr_assert_eq(sf_index_alloc_remove(idx, a), 0);
          break;
        }
      }
      tc_valid(idx);
      continue;
    }
    rclaim_t r;
    random_claim(&r);
    cr_assert_eq(sf_packer_evaluate(pk, idx, &pol, &r.c.dem, nodes, NODES, SF_EVAL_LEARN, v), 0);
    cr_assert_eq(sf_packer_evaluate(pk, idx, &pol, &r.c.dem, rev, NODES, 0, w), 0);
    cr_assert_eq(sf_packer_evaluate(pk, idx, &pol, &r.c.dem, nodes, NODES, 0, again), 0);
    cr_assert_eq(sf_packer_evaluate(slow, idx, &pol, &r.c.dem, nodes, NODES, 0, gen), 0);
    for (int i = 0; i < NODES; i++) {
      cr_assert_eq(gen[i].fit, again[i].fit, "fast and general paths disagree on node %d", i);
      cr_assert(gen[i].raw == again[i].raw, "raw %g (general) vs %g (fast)", gen[i].raw,
                again[i].raw);
      cr_assert_eq(gen[i].score, again[i].score);
      cr_assert_str_eq(gen[i].reason, again[i].reason);
      cr_assert_eq(gen[i].code, again[i].code, "%s", gen[i].reason);
      /* Every sentence has the code it is counted by; only FIT has none. */
      cr_assert((gen[i].fit == SF_FIT_YES) == (gen[i].code == SF_REASON_NONE), "%s", gen[i].reason);
      cr_assert_lt(gen[i].code, SF_REASON_COUNT);
    }
    int best = -1;
    for (int i = 0; i < NODES; i++) {
      const sf_verdict_t *x = &w[NODES - 1 - i];
      cr_assert_eq(v[i].fit, x->fit, "node order changed the verdict");
      cr_assert_eq(again[i].fit, v[i].fit, "same input, different answer");
      cr_assert_eq(again[i].score, x->score, "node order or repetition changed the score");
      cr_assert_str_eq(again[i].reason, x->reason);
      if (v[i].fit == SF_FIT_NO) {
        cr_assert_neq(v[i].reason[0], '\0', "a rejected node needs a reason");
        refused++;
      }
      if (v[i].fit == SF_FIT_YES && (best < 0 || again[i].score > again[best].score))
        best = i;
    }
    if (best < 0)
      continue;
    sf_assignment_t as;
    sf_assignment_t gs;
    cr_assert_eq(sf_packer_place(slow, idx, &pol, &r.c.dem, nodes[best], &gs, NULL), SF_FIT_YES);
    cr_assert_eq(sf_packer_place(pk, idx, &pol, &r.c.dem, nodes[best], &as, NULL), SF_FIT_YES);
    cr_assert_eq(as.n, gs.n);
    for (size_t i = 0; i < as.n; i++) {
      cr_assert_eq(as.results[i].pick.dev, gs.results[i].pick.dev,
                   "fast and general paths pick differently");
      cr_assert_eq(as.results[i].pick.consumed[0], gs.results[i].pick.consumed[0]);
    }
    snprintf(holder, sizeof(holder), "pod-%d", step);
    /* The placement the core proposes never overcommits: a strict add succeeds. */
    cr_assert_eq(sf_packer_commit(pk, idx, &r.c.dem, holder, NULL), 0);
    placed++;
    tc_valid(idx);
    no_overcommit(idx);
  }
  /* Not vacuous: the run placed pods, and the cluster filled up enough to refuse some. */
  cr_assert_gt(placed, 100, "only %d placed", placed);
  cr_assert_gt(refused, 0);
  sf_policy_dispose(&pol);
  sf_packer_destroy(slow);
  sf_packer_destroy(pk);
  sf_index_destroy(idx);
}

Test(prop, fragmentation_first_fit)
{
  run_policy("fragmentation", "first-fit", 1);
}
Test(prop, fragmentation_packer)
{
  run_policy("fragmentation", "packer", 2);
}
Test(prop, fgd_packer)
{
  run_policy("fgd", "packer", 3);
}
Test(prop, binpack_packer)
{
  run_policy("binpack", "packer", 4);
}
Test(prop, spread_first_fit)
{
  run_policy("spread", "first-fit", 5);
}
Test(prop, many_seeds)
{
  for (uint64_t s = 10; s < 16; s++)
    run_policy(s & 1 ? "fragmentation" : "binpack", s & 2 ? "packer" : "first-fit", s);
}

/*
 * The verdicts a long-lived packer remembers between calls (per node, for
 * calls alike in all but names) equal what a fresh packer finds, while
 * allocations come and go, the policy changes, and claims of the same shapes
 * come under other names.
 */
static void same_verdicts(const sf_verdict_t *a, const sf_verdict_t *b, int step)
{
  for (int i = 0; i < NODES; i++) {
    cr_assert_eq(a[i].fit, b[i].fit, "step %d node %d: remembered %d, fresh %d", step, i, a[i].fit,
                 b[i].fit);
    cr_assert(a[i].raw == b[i].raw, "step %d node %d: raw %g vs %g", step, i, a[i].raw, b[i].raw);
    cr_assert_eq(a[i].score, b[i].score, "step %d node %d", step, i);
    cr_assert_str_eq(a[i].reason, b[i].reason, "step %d node %d", step, i);
  }
}

Test(prop, remembered_verdicts_match_fresh_ones)
{
  static const char *const strategies[] = {"fragmentation", "fgd", "binpack", "spread"};
  static const char *const names[] = {"default/claim", "tenants/agent-1", "tenants/agent-2"};
  rng = 77;
  sf_index_t *idx = sf_index_create();
  sf_packer_t *pk = sf_packer_create();
  sf_policy_t pol;
  sf_policy_init(&pol);
  char err[200], holder[32], num[16];
  cr_assert_eq(sf_policy_set(&pol, "island_map", "H100=4,A100=2", err, sizeof(err)), 0);
  /* A target mix with a CPU-hungry shape, so the pod's CPU moves scores. */
  cr_assert_eq(sf_policy_set(&pol, "fgd_mix", "63:4Gix1=1,8Gix1=1,wholex2=1", err, sizeof(err)), 0,
               "%s", err);
  sf_node_id nodes[NODES];
  random_cluster(idx, nodes);
  sf_index_apply_policy(idx, &pol);
  /* A few shapes, asked again and again, as a workload's pods are. */
  rclaim_t shapes[6];
  tc_claim(&shapes[0].c, 1, 4 * GiB);
  tc_claim(&shapes[1].c, 1, 8 * GiB);
  tc_claim(&shapes[2].c, 1, 0);
  tc_claim(&shapes[3].c, 1, 12 * GiB);
  tc_claim_island(&shapes[4].c, 2);
  tc_claim_island(&shapes[5].c, 4);
  sf_verdict_t v[NODES], f[NODES];
  int placed = 0;
  /* Each step: evaluate (the packer remembers), change one thing, evaluate again and compare. */
  for (int step = 0; step < 600; step++) {
    rclaim_t *r = &shapes[below(6)];
    r->c.claim.name = names[below(3)];
    r->c.dem.cpu_milli = (int64_t)below(3) * 1000;
    cr_assert_eq(sf_packer_evaluate(pk, idx, &pol, &r->c.dem, nodes, NODES, 0, v), 0);
    uint32_t change = below(6);
    if (change == 0) { /* one policy key */
      uint32_t key = below(4);
      snprintf(num, sizeof(num), "%u", key == 2 ? below(3) : below(2) * 40);
      const char *val = key == 0   ? strategies[below(4)]
                        : key == 1 ? (below(2) ? "packer" : "first-fit")
                                   : num;
      const char *name = key == 0   ? "strategy"
                         : key == 1 ? "device_choice"
                         : key == 2 ? "max_sharers"
                                    : "headroom_pct";
      cr_assert_eq(sf_policy_set(&pol, name, val, err, sizeof(err)), 0, "%s", err);
    } else if (change == 1) { /* the workload mix learned from the cluster */
      cr_assert_eq(sf_mix_learn(pk, idx, &pol, &shapes[below(6)].c.dem, +1), 0);
    } else if (change == 2 && sf_index_alloc_count(idx) > 0) { /* a pod leaves */
      snprintf(holder, sizeof(holder), "pod-%u", below((uint32_t)step));
      sf_alloc_id a = sf_index_alloc_find(idx, holder);
      if (a >= 0)
        cr_assert_eq(sf_index_alloc_remove(idx, a), 0);
    } else if (change == 3) { /* a pod lands on the best node */
      int best = -1;
      for (int i = 0; i < NODES; i++)
        if (v[i].fit == SF_FIT_YES && (best < 0 || v[i].score > v[best].score))
          best = i;
      if (best >= 0) {
        cr_assert_eq(sf_packer_place(pk, idx, &pol, &r->c.dem, nodes[best], NULL, NULL), SF_FIT_YES);
        snprintf(holder, sizeof(holder), "pod-%d", step);
        cr_assert_eq(sf_packer_commit(pk, idx, &r->c.dem, holder, NULL), 0);
        placed++;
      }
    } else if (change == 4) { /* the next pod asks other CPU */
      r->c.dem.cpu_milli = (int64_t)below(3) * 1000;
    } else { /* the next pod's claim has another name */
      r->c.claim.name = names[below(3)];
    }
    sf_packer_t *fresh = sf_packer_create();
    cr_assert_eq(sf_packer_evaluate(pk, idx, &pol, &r->c.dem, nodes, NODES, 0, v), 0);
    cr_assert_eq(sf_packer_evaluate(fresh, idx, &pol, &r->c.dem, nodes, NODES, 0, f), 0);
    same_verdicts(v, f, step);
    sf_packer_destroy(fresh);
  }
  cr_assert_gt(placed, 50, "only %d placed", placed);
  sf_policy_dispose(&pol);
  sf_packer_destroy(pk);
  sf_index_destroy(idx);
}

/*
 * The one kernel against the reference kept in test/ (reference.c): on
 * random clusters under churn, a node is FIT exactly when some set of its
 * devices serves the claim; the raw score of the placement the packer
 * proposes is the strategy's formula over the devices' states after it;
 * and under device_choice packer a one-device claim gets the device FGD
 * scores best (fgd) or the tightest fit (fragmentation). Run with the fast path on and off, so its shortcuts and
 * memo answer to the reference too.
 */
/*
 * The packer's preference for taking `use` of device dev (device_choice
 * packer, strategies other than fgd): the free share it leaves, per-mille,
 * the devices of an intact island (two or more, none held) after all others.
 */
static int64_t pref_key(const sf_index_t *idx, sf_node_id node, sf_dev_id dev, sf_milli_t use)
{
  sf_milli_t value = 0, fr = 0;
  int c = sf_index_dev_cap_find(idx, dev, DRV "/memory");
  if (c >= 0)
    sf_index_dev_cap(idx, dev, (size_t)c, &value, &fr);
  int64_t left = 0;
  if (sf_index_dev_shared(idx, dev))
    left = value > 0 ? (fr - use) * 1000 / value : sf_index_dev_holders(idx, dev) > 0 ? 0 : 1000;
  int32_t isl = sf_index_dev_island(idx, dev);
  size_t n, members = 0;
  bool held = false;
  const sf_dev_id *devs = sf_index_node_devices(idx, node, &n);
  for (size_t k = 0; k < n && isl >= 0; k++)
    if (sf_index_dev_island(idx, devs[k]) == isl) {
      members++;
      held |= sf_index_dev_holders(idx, devs[k]) > 0;
    }
  return (members >= 2 && !held ? 1000000 : 0) + left;
}

/* A random cluster under the strategy and device choice, islands on, and one more policy key. */
static void prop_setup(sf_index_t **idx, sf_packer_t **pk, sf_policy_t *pol, sf_node_id *nodes,
                       const char *strategy, const char *choice, bool fast, uint64_t seed,
                       const char *key, const char *val)
{
  char err[200];
  rng = seed;
  *idx = sf_index_create();
  *pk = sf_packer_create();
  (*pk)->fast.on = fast;
  sf_policy_init(pol);
  /* The reference knows no fill term (an index told nothing churns): it is left out. */
  cr_assert_eq(sf_policy_set(pol, "weight_fill", "0", err, sizeof(err)), 0);
  cr_assert_eq(sf_policy_set(pol, "strategy", strategy, err, sizeof(err)), 0);
  cr_assert_eq(sf_policy_set(pol, "device_choice", choice, err, sizeof(err)), 0);
  cr_assert_eq(sf_policy_set(pol, "island_map", "H100=4,A100=2", err, sizeof(err)), 0);
  cr_assert_eq(sf_policy_set(pol, key, val, err, sizeof(err)), 0, "%s", err);
  random_cluster(*idx, nodes);
  sf_index_apply_policy(*idx, pol);
}

/* A mix with island shapes (the general sums) and one without (score.c's one-device loop). */
static const char *const MIX_ISLANDS = "8:4Gix1=3,12Gix1=1,wholex1=2,wholex2!=1,wholex4!=1";
static const char *const MIX_PLAIN = "8:4Gix1=3,12Gix1=1,2:20Gix1=1,wholex1=2,16:wholex2=1";

/* The packer's plans of the call just made (its private state): what the reference prices with. */
static size_t read_plans(const sf_packer_t *pk, ref_plan_t *out)
{
  const pk_plan_t *pl = &pk->mix.plan;
  for (size_t i = 0; i < pl->n; i++) {
    cr_assert_leq(pl->p[i].n, 16);
    out[i].cap = pl->p[i].cap;
    out[i].n = pl->p[i].solved ? pl->p[i].n : 0;
    for (size_t j = 0; j < out[i].n; j++) {
      out[i].size[j] = pl->p[i].size[j];
      out[i].r[j] = pl->p[i].r[j] / (double)PLAN_ONE;
    }
  }
  return pl->n;
}

/*
 * The reference's step of the picks under the policy: FGD's of dF, and
 * under strategy fragmentation of weight_frag x dF + weight_plan x the
 * plan's loss + weight_strand x what it strands (islands and scarce models
 * weigh 0 where this is used).
 * *planned: whether the plan's loss was above 0; *stranded: whether some
 * of it was worth the pod's CPU stranded (both may be NULL).
 */
static double ref_score(const sf_index_t *idx, const sf_policy_t *pol, const sf_policy_t *ref,
                        sf_node_id node, const sf_dev_id *picks, const sf_milli_t *use, size_t n,
                        int64_t cpu, const ref_plan_t *plans, size_t nplans, bool *planned,
                        bool *stranded)
{
  double df = ref_frag(idx, ref, node, picks, use, n, cpu) -
              ref_frag(idx, ref, node, NULL, NULL, 0, 0);
  double loss = 0.0, strand = 0.0;
  if (pol->strategy == SF_STRATEGY_FRAGMENTATION &&
      (pol->weight_plan > 0.0 || pol->weight_strand > 0.0))
    loss = ref_plan_loss(idx, ref, node, picks, use, n, cpu, plans, nplans, &strand);
  if (planned != NULL)
    *planned = loss > 0.0;
  if (stranded != NULL)
    *stranded = strand > 0.0;
  if (pol->strategy != SF_STRATEGY_FRAGMENTATION)
    return ref_fgd(idx, ref, node, picks, use, n, cpu);
  return ref_step(pol->weight_frag * df + pol->weight_plan * (loss - strand) +
                  pol->weight_strand * strand);
}

/*
 * The loop of the comparisons: 250 steps of random claims (CPU up to
 * cpu_max cores) and departures, every node's verdict and raw score
 * against the reference under `ref` (the policy itself, or a copy holding
 * the learned mix as its fgd_mix). Returns how many FIT nodes scored
 * otherwise without the unfed term: 0 when it never mattered; *planned
 * counts the placements compared that the plan's loss weighed, *stranded
 * those where it counted worth the pod's CPU stranded.
 */
static int compare_with_reference(sf_index_t *idx, sf_packer_t *pk, const sf_policy_t *pol,
                                  const sf_policy_t *ref, const sf_node_id *nodes, const char *choice,
                                  uint32_t cpu_max, int *planned, int *stranded)
{
  char holder[32];
  sf_verdict_t v[NODES];
  int fits = 0, compared = 0, unfed = 0;
  sf_policy_t plain;
  sf_policy_copy(&plain, ref);
  plain.weight_unfed = 0;
  for (int step = 0; step < 250; step++) {
    if (below(5) == 0 && sf_index_alloc_count(idx) > 0) {
      snprintf(holder, sizeof(holder), "pod-%u", below((uint32_t)step));
      sf_alloc_id a = sf_index_alloc_find(idx, holder);
      if (a >= 0)
        cr_assert_eq(sf_index_alloc_remove(idx, a), 0);
      continue;
    }
    rclaim_t r;
    random_claim(&r);
    r.c.dem.cpu_milli = (int64_t)below(cpu_max) * 1000;
    cr_assert_eq(sf_packer_evaluate(pk, idx, pol, &r.c.dem, nodes, NODES, 0, v), 0);
    ref_plan_t plans[PLAN_CAPS];
    size_t nplans = read_plans(pk, plans);
    int best = -1;
    for (int i = 0; i < NODES; i++) {
      if (v[i].fit == SF_FIT_UNSURE)
        continue;
      ref_claim_t rc = {r.c.req.count,       r.c.req.ncaps ? r.c.cap.value : 0,
                        r.c.claim.ncons > 0, r.c.dem.cpu_milli,
                        ranged[i] ? GiB : 0, ranged[i] ? GiB : 0};
      bool want = ref_fits(idx, pol, &rc, nodes[i]);
      cr_assert_eq(v[i].fit == SF_FIT_YES, want, "step %d node %d: packer %d, reference %d (%s)",
                   step, i, v[i].fit, want, v[i].reason);
      if (!want)
        continue;
      fits++;
      sf_assignment_t as;
      cr_assert_eq(sf_packer_place(pk, idx, pol, &r.c.dem, nodes[i], &as, NULL), SF_FIT_YES);
      sf_dev_id picks[8];
      sf_milli_t use[8];
      for (size_t j = 0; j < as.n; j++) {
        picks[j] = as.results[j].pick.dev;
        int c = sf_index_dev_cap_find(idx, picks[j], DRV "/memory");
        use[j] = sf_index_dev_shared(idx, picks[j]) && c >= 0 ? as.results[j].pick.consumed[c] : 0;
      }
      if (pol->strategy == SF_STRATEGY_BINPACK) {
        cr_assert(v[i].raw == ref_binpack(idx, nodes[i], picks, use, as.n),
                  "step %d node %d: %.17g vs %.17g", step, i, v[i].raw,
                  ref_binpack(idx, nodes[i], picks, use, as.n));
      } else {
        bool lost, strand;
        double want_raw = ref_score(idx, pol, ref, nodes[i], picks, use, as.n, r.c.dem.cpu_milli,
                                    plans, nplans, &lost, &strand);
        cr_assert_eq(floor(v[i].raw), want_raw, "step %d node %d: %g vs reference %g", step, i,
                     v[i].raw, want_raw);
        *planned += lost;
        *stranded += strand;
        unfed += ref_frag(idx, ref, nodes[i], picks, use, as.n, r.c.dem.cpu_milli) !=
                 ref_frag(idx, &plain, nodes[i], picks, use, as.n, r.c.dem.cpu_milli);
        if (strcmp(choice, "packer") == 0 && rc.count == 1 && !rc.island) {
          /*
           * Under fgd no other device of the node scores better; under the
           * others none is a tighter fit (intact islands last).
           */
          bool by_score = pol->strategy == SF_STRATEGY_FGD;
          int64_t pick_key = pref_key(idx, nodes[i], picks[0], use[0]);
          size_t n;
          const sf_dev_id *devs = sf_index_node_devices(idx, nodes[i], &n);
          for (size_t k = 0; k < n; k++) {
            /* Every device of a node has the same memory and rounding: the pick's amount fits it or not. */
            bool shared = sf_index_dev_shared(idx, devs[k]);
            sf_milli_t value, fr;
            sf_index_dev_cap(idx, devs[k], (size_t)sf_index_dev_cap_find(idx, devs[k], DRV "/memory"),
                             &value, &fr);
            sf_milli_t uk = shared ? (rc.mem ? use[0] : value) : 0;
            if ((!shared && sf_index_dev_holders(idx, devs[k]) > 0) || (shared && fr < uk) ||
                (pol->max_sharers > 0 && sf_index_dev_holders(idx, devs[k]) >= pol->max_sharers))
              continue;
            if (!by_score) {
              int64_t other = pref_key(idx, nodes[i], devs[k], uk);
              cr_assert_geq(other, pick_key, "step %d node %d: device %zu fits tighter (%lld < %lld)",
                            step, i, k, (long long)other, (long long)pick_key);
              continue;
            }
            double other = ref_score(idx, pol, ref, nodes[i], &devs[k], &uk, 1, r.c.dem.cpu_milli,
                                     plans, nplans, NULL, NULL);
            cr_assert_leq(other, want_raw,
                          "step %d node %d: device %zu scores %g, the packer's pick %g", step, i, k,
                          other, want_raw);
          }
        }
      }
      compared++;
      if (best < 0 || v[i].score > v[best].score)
        best = i;
    }
    if (best < 0)
      continue;
    cr_assert_eq(sf_packer_place(pk, idx, pol, &r.c.dem, nodes[best], NULL, NULL), SF_FIT_YES);
    snprintf(holder, sizeof(holder), "pod-%d", step);
    cr_assert_eq(sf_packer_commit(pk, idx, &r.c.dem, holder, NULL), 0);
  }
  cr_assert_gt(fits, 500, "only %d fitting nodes compared", fits);
  cr_assert_gt(compared, 500);
  sf_policy_dispose(&plain);
  return unfed;
}

static void against_reference_mix(const char *strategy, const char *choice, bool fast, uint64_t seed,
                                  const char *mix)
{
  sf_index_t *idx;
  sf_packer_t *pk;
  sf_policy_t pol;
  sf_node_id nodes[NODES];
  prop_setup(&idx, &pk, &pol, nodes, strategy, choice, fast, seed, "fgd_mix", mix);
  int planned = 0, stranded = 0;
  compare_with_reference(idx, pk, &pol, &pol, nodes, choice, 8, &planned, &stranded);
  sf_policy_dispose(&pol);
  sf_packer_destroy(pk);
  sf_index_destroy(idx);
}

/*
 * Strategy fragmentation against the reference: the mix is learned (CPU-hungry
 * whole GPUs, shares, two GPUs at once, a share over half an A100, two GPUs
 * in one island: the one-device sums' island bookkeeping), then held,
 * and the reference reads it as its fgd_mix; islands and scarce models
 * weigh 0, so the cost is dF plus the plan's loss (with the packer's
 * prices, K enumerated) and its step FGD's. Pods ask for up to 23 cores
 * of nodes' 64, so the CPU runs out while GPUs are idle, and the unfed
 * term has to change scores (it does on some of the nodes compared); the
 * 4 GiB and 30 GiB shares give each memory size a plan, whose loss has
 * to weigh some placements too, and the CPU running out has to strand the
 * worth of some part-used GPUs (what the placements stranded is returned).
 */
static int against_reference_learned(const char *choice, bool fast, uint64_t seed, const char *unfed,
                                     const char *plan, const char *strand)
{
  static const struct {
    uint32_t count, gib, cores, times;
    bool island;
  } learn[] = {{1, 0, 16, 3, false},
               {1, 12, 8, 2, false},
               {2, 0, 24, 1, false},
               {1, 30, 4, 1, false},
               {2, 0, 20, 1, true}}; /* 8 pods: weights exact in 1/256 */
  const size_t nlearn = sizeof(learn) / sizeof(learn[0]);
  char err[200];
  sf_index_t *idx;
  sf_packer_t *pk;
  sf_policy_t pol, ref;
  sf_node_id nodes[NODES];
  prop_setup(&idx, &pk, &pol, nodes, "fragmentation", choice, fast, seed, "weight_unfed", unfed);
  cr_assert_eq(sf_policy_set(&pol, "weight_island", "0", err, sizeof(err)), 0);
  cr_assert_eq(sf_policy_set(&pol, "weight_model", "0", err, sizeof(err)), 0);
  cr_assert_eq(sf_policy_set(&pol, "mix_coverage", "100", err, sizeof(err)), 0);
  cr_assert_eq(sf_policy_set(&pol, "weight_plan", plan, err, sizeof(err)), 0);
  cr_assert_eq(sf_policy_set(&pol, "weight_strand", strand, err, sizeof(err)), 0);
  for (size_t i = 0; i < nlearn; i++)
    for (uint32_t t = 0; t < learn[i].times; t++) {
      tc_claim_t c;
      if (learn[i].island)
        tc_claim_island(&c, learn[i].count);
      else
        tc_claim(&c, learn[i].count, (sf_milli_t)learn[i].gib * GiB);
      c.dem.cpu_milli = (int64_t)learn[i].cores * 1000;
      cr_assert_eq(sf_mix_learn(pk, idx, &pol, &c.dem, +1), 0);
    }
  cr_assert_eq(sf_mix_size(idx), nlearn);
  sf_policy_copy(&ref, &pol);
  ref.mix = sf_xcalloc(nlearn, sizeof(*ref.mix));
  for (size_t i = 0; i < nlearn; i++)
    cr_assert_eq(sf_mix_shape(idx, i, &ref.mix[ref.nmix++]), 0);
  int planned = 0, stranded = 0;
  int differs = compare_with_reference(idx, pk, &pol, &ref, nodes, choice, 24, &planned, &stranded);
  if (pol.weight_unfed > 0)
    cr_assert_gt(differs, 20, "the unfed term changed only %d scores", differs);
  if (pol.weight_plan > 0 || pol.weight_strand > 0)
    cr_assert_gt(planned, 10, "the plan weighed only %d placements", planned);
  else
    cr_assert_eq(planned + stranded, 0);
  sf_policy_dispose(&ref);
  sf_policy_dispose(&pol);
  sf_packer_destroy(pk);
  sf_index_destroy(idx);
  return stranded;
}

Test(prop, kernel_matches_reference_fragmentation_unfed)
{
  int stranded = against_reference_learned("packer", true, 31, "1", "16", "16");
  stranded += against_reference_learned("first-fit", false, 32, "1", "0", "0");
  stranded += against_reference_learned("packer", false, 33, "0.5", "16", "16");
  stranded += against_reference_learned("first-fit", true, 34, "0", "3", "3");
  /* The two terms apart: the plan's loss alone, and what is stranded alone. */
  stranded += against_reference_learned("packer", true, 35, "1", "16", "0");
  stranded += against_reference_learned("first-fit", false, 36, "0.25", "0", "16");
  /* Not vacuous: some placements left a node too little CPU to feed its part-used GPUs. */
  cr_assert_gt(stranded, 10, "the plan counted worth stranded in only %d placements", stranded);
}

static void against_reference(const char *strategy, const char *choice, bool fast, uint64_t seed)
{
  against_reference_mix(strategy, choice, fast, seed, MIX_ISLANDS);
}

Test(prop, kernel_matches_reference_fgd_without_island_shapes)
{
  against_reference_mix("fgd", "packer", true, 26, MIX_PLAIN);
  against_reference_mix("fgd", "first-fit", false, 27, MIX_PLAIN);
}
Test(prop, kernel_matches_reference_fgd_packer)
{
  against_reference("fgd", "packer", true, 21);
}
Test(prop, kernel_matches_reference_fgd_packer_general)
{
  against_reference("fgd", "packer", false, 22);
}
Test(prop, kernel_matches_reference_fgd_first_fit)
{
  against_reference("fgd", "first-fit", true, 23);
}
Test(prop, kernel_matches_reference_binpack)
{
  against_reference("binpack", "packer", true, 24);
}
Test(prop, kernel_matches_reference_binpack_general)
{
  against_reference("binpack", "first-fit", false, 25);
}

/*
 * The drift bound (sf_verdict_t.cost and .sens, sf_mix_drift,
 * sf_mix_joined): while a node does not change, however the learned mix
 * moves (shapes coming and going, past the coverage cut too), its verdict's
 * cost moves by no more than the bound, and raw is the step of the cost.
 * Not vacuous: costs do move, shapes do join, and the bound is not
 * infinite.
 */
typedef struct {
  bool fit;
  double cost, sens[SF_DRIFT_TERMS + 1];
  sf_mix_drift_t dr;
  uint32_t changes; /* of the node, when scored */
} probe_t;

static void drift_bound(const char *strategy, const char *choice, bool fast, uint64_t seed)
{
  sf_index_t *idx;
  sf_packer_t *pk;
  sf_policy_t pol;
  sf_node_id nodes[NODES];
  char holder[32];
  prop_setup(&idx, &pk, &pol, nodes, strategy, choice, fast, seed, "mix_coverage", "90");
  sf_packer_set_bounds(pk, true);
  sf_packer_t *plain = sf_packer_create(); /* bounds off: the same verdicts, cost and sens 0 */
  enum { PROBES = 5, LEARNED = 64 };
  rclaim_t probes[PROBES], learned[LEARNED];
  for (int k = 0; k < PROBES; k++)
    random_claim(&probes[k]);
  probe_t seen[PROBES][NODES];
  memset(seen, 0, sizeof(seen));
  uint32_t changes[NODES] = {0};
  int nlearned = 0, checked = 0, moved = 0, joined = 0, tighter = 0;
  uint64_t epoch0 = 0;
  sf_mix_drift_t dr_last = {0, 0, {0}};
  sf_verdict_t v[NODES];
  for (int step = 0; step < 400; step++) {
    uint32_t what = below(8);
    if (what < 4) { /* the mix moves: a demand arrives, or one learned earlier leaves */
      if (nlearned < LEARNED && (nlearned == 0 || below(3) > 0)) {
        random_claim(&learned[nlearned]);
        cr_assert_eq(sf_mix_learn(pk, idx, &pol, &learned[nlearned++].c.dem, +1), 0);
      } else {
        uint32_t k = below((uint32_t)nlearned);
        cr_assert_eq(sf_mix_learn(pk, idx, &pol, &learned[k].c.dem, -1), 0);
        learned[k] = learned[--nlearned];
      }
    } else if (what == 4 && sf_index_alloc_count(idx) > 0) { /* a pod leaves: its node changes */
      snprintf(holder, sizeof(holder), "pod-%u", below((uint32_t)step));
      sf_alloc_id a = sf_index_alloc_find(idx, holder);
      if (a >= 0) {
        sf_node_id n = sf_index_alloc_node(idx, a);
        for (int i = 0; i < NODES; i++)
          changes[i] += nodes[i] == n;
        cr_assert_eq(sf_index_alloc_remove(idx, a), 0);
      }
    } else if (what == 5) { /* a pod lands on the first node it fits */
      rclaim_t r;
      random_claim(&r);
      for (int i = 0; i < NODES; i++)
        if (sf_packer_place(pk, idx, &pol, &r.c.dem, nodes[i], NULL, NULL) == SF_FIT_YES) {
          snprintf(holder, sizeof(holder), "pod-%d", step);
          cr_assert_eq(sf_packer_commit(pk, idx, &r.c.dem, holder, NULL), 0);
          changes[i]++;
          break;
        }
    }
    int k = (int)below(PROBES);
    sf_verdict_t u[NODES];
    cr_assert_eq(sf_packer_evaluate(pk, idx, &pol, &probes[k].c.dem, nodes, NODES, 0, v), 0);
    cr_assert_eq(sf_packer_evaluate(plain, idx, &pol, &probes[k].c.dem, nodes, NODES, 0, u), 0);
    for (int i = 0; i < NODES; i++) {
      cr_assert(u[i].fit == v[i].fit && u[i].raw == v[i].raw && u[i].score == v[i].score,
                "step %d node %d: bounds change the verdict", step, i);
      cr_assert(u[i].cost == 0.0 && u[i].sens[0] == 0.0 && u[i].sens[SF_DRIFT_TERMS] == 0.0);
    }
    sf_mix_drift_t dr;
    sf_mix_drift(pk, &dr);
    dr_last = dr;
    joined += dr.epoch != epoch0;
    epoch0 = dr.epoch;
    cr_assert_eq(sf_mix_joined(pk, dr.epoch), 0.0, "nothing joined since now");
    cr_assert(isinf(sf_mix_joined(pk, dr.epoch + 1)), "an epoch to come is unknown");
    for (int i = 0; i < NODES; i++) {
      probe_t *s = &seen[k][i];
      if (v[i].fit != SF_FIT_YES) {
        s->fit = false;
        continue;
      }
      cr_assert_eq(floor(v[i].raw), sf__score_step(&pk->score, v[i].cost),
                   "step %d node %d: raw %g, cost %g", step, i, v[i].raw, v[i].cost);
      if (s->fit && s->changes == changes[i]) {
        double bound = sf_mix_joined(pk, s->dr.epoch) * s->sens[SF_DRIFT_TERMS] + 1e-6;
        for (int t = 0; t < SF_DRIFT_TERMS; t++)
          bound += s->sens[t] * (dr.d[t] - s->dr.d[t]);
        cr_assert_leq(fabs(v[i].cost - s->cost), bound,
                      "step %d node %d probe %d: cost %.6f then %.6f, bound %.6f", step, i, k,
                      s->cost, v[i].cost, bound);
        double since[3]; /* the same, with the mix then against the mix now directly */
        if (sf_mix_since(pk, s->dr.moves, since)) {
          double direct = since[0] * s->sens[0] + since[1] * s->sens[1] +
                          since[2] * s->sens[SF_DRIFT_TERMS] + (dr.d[2] - s->dr.d[2]) * s->sens[2] +
                          1e-6;
          cr_assert_leq(fabs(v[i].cost - s->cost), direct,
                        "step %d node %d probe %d: cost %.6f then %.6f, direct bound %.6f", step, i,
                        k, s->cost, v[i].cost, direct);
          tighter += direct < bound;
        }
        checked++;
        moved += v[i].cost != s->cost && !isinf(bound);
      }
      *s = (probe_t){true, v[i].cost, {0}, dr, changes[i]};
      memcpy(s->sens, v[i].sens, sizeof(s->sens));
    }
  }
  cr_assert_gt(checked, 500, "only %d verdicts checked", checked);
  cr_assert_gt(moved, 50, "only %d costs moved within a finite bound", moved);
  cr_assert_gt(joined, 5, "only %d epochs", joined);
  cr_assert_gt(tighter, 50, "the direct bound was tighter only %d times", tighter);
  double none[3];
  cr_assert(!sf_mix_since(pk, dr_last.moves + 1, none), "a mix to come is unknown");
  cr_assert(!sf_mix_since(plain, 0, none), "without bounds no past is kept");
  sf_policy_dispose(&pol);
  sf_packer_destroy(plain);
  sf_packer_destroy(pk);
  sf_index_destroy(idx);
}

/*
 * FGD's step from the bucket table (sf__score_step) against its formula,
 * 100 x sigmoid(-cost / 1000) truncated, away from the boundaries where the
 * formula itself decides; the boundary costs (sf_packer_step_cost) and the
 * margins (sf_packer_step_margin) around them.
 */
Test(prop, step_table_matches_the_formula)
{
  sf_packer_t *pk = sf_packer_create();
  rng = 41;
  cr_assert(isinf(sf_packer_step_cost(pk, 0)) && sf_packer_step_cost(pk, 0) > 0);
  cr_assert(isinf(sf_packer_step_cost(pk, 100)) && sf_packer_step_cost(pk, 100) < 0);
  for (int k = 1; k < 100; k++) {
    double t = sf_packer_step_cost(pk, k);
    cr_assert_eq(sf__score_step(&pk->score, t - 1e-3), k, "just below the %d boundary", k);
    cr_assert_eq(sf__score_step(&pk->score, t + 1e-3), k - 1, "just above the %d boundary", k);
    cr_assert_leq(sf_packer_step_margin(pk, t), 1e-6, "no margin on the %d boundary", k);
  }
  for (int i = 0; i < 200000; i++) {
    double cost = ((double)(next() % 12000000) - 6000000.0) / 1000.0; /* -6000 .. 6000, 1e-3 steps */
    int k = sf__score_step(&pk->score, cost);
    double m = sf_packer_step_margin(pk, cost);
    if (m > 0.0) {
      cr_assert_eq(k, (int)floor(100.0 / (1.0 + exp(cost / 1000.0))), "cost %.3f", cost);
      cr_assert_eq(sf__score_step(&pk->score, cost - m), k, "cost %.3f - margin %.6f", cost, m);
      cr_assert_eq(sf__score_step(&pk->score, cost + m), k, "cost %.3f + margin %.6f", cost, m);
    }
    cr_assert(k >= 0 && k <= 99);
  }
  sf_packer_destroy(pk);
}

Test(prop, drift_bounds_the_cost_fragmentation)
{
  drift_bound("fragmentation", "packer", true, 31);
  drift_bound("fragmentation", "first-fit", false, 32);
}
Test(prop, drift_bounds_the_cost_fgd)
{
  drift_bound("fgd", "packer", false, 33);
  drift_bound("fgd", "first-fit", true, 34);
}

/*
 * Nodes alike (fast.c): within one call, a node in the same state as one
 * evaluated before it, whose devices the request's selectors answer alike,
 * takes that node's verdict with its own node order. Groups of nodes are
 * filled alike, then churn pulls some apart; a selector answers NO on the
 * second device of every third node of a group, which their states do not
 * show. Every verdict (fit, raw score to the bit, score, reason, cost and
 * sensitivities) must be what a packer without the sharing gives, over all
 * strategies and both device choices, with nodes in a new order each call.
 */
static sf_match_t by_member(void *ctx, const sf_index_t *idx, sf_dev_id d)
{
  (void)ctx;
  const sf_attr_t *a = sf_index_dev_attr(idx, d, DRV "/uuid"); /* GPU-alike-G-M-I */
  unsigned g, m, i;
  if (a == NULL || sscanf(a->s, "GPU-alike-%u-%u-%u", &g, &m, &i) != 3)
    return SF_MATCH_UNKNOWN;
  return m % 3 == 2 && i == 1 ? SF_MATCH_NO : SF_MATCH_YES;
}

static const sf_selector_t sel_member = {by_member, NULL, 0x5e1ec7};

#define GROUPS 5
#define MEMBERS 7

static void alike_claim(rclaim_t *r)
{
  random_claim(r);
  r->c.req.selectors = &sel_member;
}

Test(prop, nodes_alike_share_verdicts_exactly)
{
  static const char *const strategies[] = {"fragmentation", "fgd", "binpack", "spread"};
  static const char *const models[] = {"NVIDIA H100", "NVIDIA A100", "RTX 4000"};
  char err[200], holder[48];
  rng = 4242;
  sf_index_t *idx = sf_index_create();
  sf_packer_t *pk = sf_packer_create(), *ref = sf_packer_create();
  ref->fast.alike = false;
  sf_packer_set_bounds(pk, true);
  sf_packer_set_bounds(ref, true);
  sf_policy_t pol;
  sf_policy_init(&pol);
  cr_assert_eq(sf_policy_set(&pol, "island_map", "H100=4,A100=2", err, sizeof(err)), 0);
  /* CPU-hungry whole GPUs: the node's free CPU moves the default's score (weight_unfed). */
  cr_assert_eq(sf_policy_set(&pol, "fgd_mix", "8:4Gix1=3,12Gix1=1,16:wholex1=2,wholex2!=1", err,
                             sizeof(err)),
               0, "%s", err);
  /* GROUPS groups of MEMBERS, and two twins (the last group) told apart by holders alone. */
  enum { N = GROUPS * MEMBERS + 2 };
  sf_node_id nodes[N], order[N];
  for (int g = 0; g <= GROUPS; g++)
    for (int m = 0; m < (g < GROUPS ? MEMBERS : 2); m++) {
      char name[32];
      snprintf(name, sizeof(name), "alike-%d-%d", g, m);
      int model = g % 3;
      nodes[g * MEMBERS + m] = tc_node(idx, name,
                                       model == 2   ? 2
                                       : model == 1 ? 4
                                                    : 8,
                                       models[model],
                                       (model == 0   ? 80
                                        : model == 1 ? 40
                                                     : 20) *
                                           GiB,
                                       model != 1);
      sf_node_spec_t ns = {name, 64000, 256LL << 30};
      sf_index_node_upsert(idx, &ns, NULL);
    }
  sf_index_apply_policy(idx, &pol);
  /* Fill the members of a group alike: the same claims land on the same devices of each. */
  int pods = 0;
  for (int g = 0; g < GROUPS; g++)
    for (uint32_t k = below(4); k > 0; k--) {
      rclaim_t r;
      alike_claim(&r);
      for (int m = 0; m < MEMBERS; m++) {
        sf_node_id n = nodes[g * MEMBERS + m];
        if (sf_packer_place(ref, idx, &pol, &r.c.dem, n, NULL, NULL) != SF_FIT_YES)
          continue;
        snprintf(holder, sizeof(holder), "pod-%d", pods++);
        cr_assert_eq(sf_packer_commit(ref, idx, &r.c.dem, holder, NULL), 0);
      }
    }
  /* The twins: one 8Gi pod on the first device of one, two 4Gi pods on the other's. */
  for (int t = 0; t < 3; t++) {
    rclaim_t r;
    tc_claim(&r.c, 1, t == 0 ? 8 * GiB : 4 * GiB);
    r.c.req.selectors = &sel_member;
    cr_assert_eq(sf_policy_set(&pol, "device_choice", "first-fit", err, sizeof(err)), 0);
    cr_assert_eq(sf_packer_place(ref, idx, &pol, &r.c.dem, nodes[N - 2 + (t > 0)], NULL, NULL),
                 SF_FIT_YES);
    snprintf(holder, sizeof(holder), "pod-%d", pods++);
    cr_assert_eq(sf_packer_commit(ref, idx, &r.c.dem, holder, NULL), 0);
  }
  sf_verdict_t v[N], w[N];
  size_t shared = 0, yes = 0;
  for (int step = 0; step < 400; step++) {
    cr_assert_eq(sf_policy_set(&pol, "strategy", strategies[below(4)], err, sizeof(err)), 0);
    cr_assert_eq(sf_policy_set(&pol, "device_choice", below(2) ? "packer" : "first-fit", err,
                               sizeof(err)),
                 0);
    /* a cap on sharers: a device's holders, not only whether it has any, decide */
    cr_assert_eq(sf_policy_set(&pol, "max_sharers", below(2) ? "0" : "2", err, sizeof(err)), 0);
    for (int i = 0; i < N; i++)
      order[i] = nodes[i];
    for (int i = N - 1; i > 0; i--) {
      uint32_t j = below((uint32_t)i + 1);
      sf_node_id t = order[i];
      order[i] = order[j];
      order[j] = t;
    }
    rclaim_t r;
    alike_claim(&r);
    cr_assert_eq(sf_packer_evaluate(pk, idx, &pol, &r.c.dem, order, N, 0, v), 0);
    shared += pk->fast.shared;
    cr_assert_eq(sf_packer_evaluate(ref, idx, &pol, &r.c.dem, order, N, 0, w), 0);
    cr_assert_eq(ref->fast.shared, 0);
    for (int i = 0; i < N; i++) {
      cr_assert_eq(v[i].fit, w[i].fit, "step %d node %d", step, i);
      cr_assert(v[i].raw == w[i].raw, "step %d node %d: raw %.17g vs %.17g", step, i, v[i].raw,
                w[i].raw);
      cr_assert_eq(v[i].score, w[i].score, "step %d node %d", step, i);
      cr_assert_str_eq(v[i].reason, w[i].reason, "step %d node %d", step, i);
      cr_assert(v[i].cost == w[i].cost, "step %d node %d", step, i);
      for (int k = 0; k <= SF_DRIFT_TERMS; k++)
        cr_assert(v[i].sens[k] == w[i].sens[k], "step %d node %d sens %d", step, i, k);
      yes += v[i].fit == SF_FIT_YES;
    }
    /* Churn: a pod lands on one node (pulling it apart from its group), or one leaves. */
    uint32_t what = below(8);
    if (what == 0 && pods > 0) {
      snprintf(holder, sizeof(holder), "pod-%u", below((uint32_t)pods));
      sf_alloc_id a = sf_index_alloc_find(idx, holder);
      if (a >= 0)
        cr_assert_eq(sf_index_alloc_remove(idx, a), 0);
    } else if (what == 2) { /* a node's allocatable CPU moves: only its CPU tells it apart */
      char name[32];
      uint32_t at = below(N);
      snprintf(name, sizeof(name), "alike-%u-%u", at / MEMBERS, at % MEMBERS);
      sf_node_spec_t ns = {name, 8000 + 28000 * (int64_t)below(3), 256LL << 30};
      sf_index_node_upsert(idx, &ns, NULL);
    } else if (what == 1) {
      sf_node_id n = nodes[below(N)];
      if (sf_packer_place(ref, idx, &pol, &r.c.dem, n, NULL, NULL) == SF_FIT_YES) {
        snprintf(holder, sizeof(holder), "pod-%d", pods++);
        cr_assert_eq(sf_packer_commit(ref, idx, &r.c.dem, holder, NULL), 0);
      }
    } else if (what == 3) { /* a pod on every member of a group that holds it: they stay alike */
      uint32_t g = below(GROUPS);
      for (int m = 0; m < MEMBERS; m++)
        if (sf_packer_place(ref, idx, &pol, &r.c.dem, nodes[g * MEMBERS + m], NULL, NULL) ==
            SF_FIT_YES) {
          snprintf(holder, sizeof(holder), "pod-%d", pods++);
          cr_assert_eq(sf_packer_commit(ref, idx, &r.c.dem, holder, NULL), 0);
        }
    }
  }
  /* Not vacuous: most calls shared verdicts, and many nodes fit. */
  cr_assert_gt(shared, 1000, "only %zu verdicts shared", shared);
  cr_assert_gt(yes, 400 * 5);
  sf_policy_dispose(&pol);
  sf_packer_destroy(ref);
  sf_packer_destroy(pk);
  sf_index_destroy(idx);
}
