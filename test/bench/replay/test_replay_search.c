/*
 * The policy search (replay_search.c): the knob table against the policy's
 * own keys, the Latin hypercube draws, the split by arrival, and small
 * searches whose results are asserted: the same for any number of threads,
 * never worse on train than the base (candidate 0), able to leave a bad base
 * behind, and bad options refused.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "slicefit/replay_search.h"
#include "bundled.h"

static const uint64_t seeds2[] = {42, 43};

static bool is_number(const char *s)
{
  char *end;
  if (*s == '\0')
    return false;
  (void)strtod(s, &end);
  return *end == '\0';
}

static void text(const sf_policy_t *p, const char *key, char *buf, size_t len)
{
  cr_assert_eq(sf_policy_get(p, key, buf, len), 0, "sf_policy_get %s", key);
}

/* ---- the knob table ---- */

Test(replay_search, every_knob_is_a_numeric_policy_key_whose_range_the_policy_accepts)
{
  size_t nk, nkeys;
  const sf_search_knob_t *k = sf_search_knobs(&nk);
  const sf_policy_key_t *keys = sf_policy_keys(&nkeys);
  char err[256], v[64];
  cr_assert_gt(nk, 0);
  for (size_t i = 0; i < nk; i++) {
    const sf_policy_key_t *pk = NULL;
    for (size_t j = 0; j < nkeys; j++)
      if (strcmp(keys[j].key, k[i].key) == 0)
        pk = &keys[j];
    cr_assert_not_null(pk, "knob '%s' is not a policy key", k[i].key);
    cr_expect(is_number(pk->def), "knob '%s' has the default '%s', not a number", k[i].key, pk->def);
    cr_expect_lt(k[i].lo, k[i].hi, "knob '%s'", k[i].key);
    cr_expect(!k[i].log || k[i].lo > 0, "knob '%s': a log scale needs lo > 0", k[i].key);
    cr_expect(k[i].keep >= 0 && k[i].keep < 1, "knob '%s': keep %g", k[i].key, k[i].keep);
    cr_expect_eq(sf_search_knob(k[i].key), &k[i]);
    sf_policy_t p;
    sf_policy_init(&p);
    snprintf(v, sizeof v, "%.4g", k[i].lo);
    cr_expect_eq(sf_policy_set(&p, k[i].key, v, err, sizeof err), 0, "%s", err);
    snprintf(v, sizeof v, "%.4g", k[i].hi);
    cr_expect_eq(sf_policy_set(&p, k[i].key, v, err, sizeof err), 0, "%s", err);
    sf_policy_dispose(&p);
  }
  cr_expect_null(sf_search_knob("strategy"));
}

/*
 * A numeric policy key the table leaves out must be left out on purpose.
 * search_budget bounds the core's work per node; it changes no placement
 * unless the budget runs out, and then only for the worse. The defrag_ keys
 * bound the defragmentation planner, which places nothing by itself.
 */
Test(replay_search, every_numeric_policy_key_is_a_knob_or_left_out_on_purpose)
{
  static const char *const not_searched[] = {"search_budget", "defrag_max_evictions",
                                             "defrag_max_per_hour", "defrag_budget"};
  size_t nkeys;
  const sf_policy_key_t *keys = sf_policy_keys(&nkeys);
  for (size_t j = 0; j < nkeys; j++) {
    bool out = false;
    for (size_t i = 0; i < sizeof not_searched / sizeof *not_searched; i++)
      out = out || strcmp(keys[j].key, not_searched[i]) == 0;
    if (is_number(keys[j].def) && !out)
      cr_expect_not_null(sf_search_knob(keys[j].key),
                         "policy key '%s' is numeric but has no search range in the policy's "
                         "table (packer/policy.c keys[]): give it one, or list it in "
                         "not_searched here with the reason",
                         keys[j].key);
  }
}

/* The knobs come from the policy's table, in its order; each term's weight knows when it is idle. */
Test(replay_search, the_knobs_are_the_policy_keys_with_a_search_range)
{
  static const char *const must_know_idle[] = {"weight_frag",  "weight_island", "weight_model",
                                               "weight_unfed", "weight_plan",   "mix_coverage"};
  size_t nk, nkeys, j = 0;
  const sf_search_knob_t *k = sf_search_knobs(&nk);
  const sf_policy_key_t *keys = sf_policy_keys(&nkeys);
  for (size_t i = 0; i < nkeys; i++) {
    const sf_policy_range_t *r = &keys[i].search;
    if (!(r->lo < r->hi))
      continue;
    cr_assert_lt(j, nk);
    cr_expect_str_eq(k[j].key, keys[i].key);
    cr_expect(k[j].lo == r->lo && k[j].hi == r->hi && k[j].keep == r->keep, "%s", k[j].key);
    j++;
  }
  cr_expect_eq(j, nk);
  for (size_t i = 0; i < sizeof must_know_idle / sizeof *must_know_idle; i++) {
    const sf_search_knob_t *kn = sf_search_knob(must_know_idle[i]);
    cr_assert_not_null(kn, "%s", must_know_idle[i]);
    cr_expect_not_null(kn->idle, "%s: replay_search.c idles[] has no line for it", kn->key);
  }
}

/* ---- candidates ---- */

static void knob_list(const sf_search_knob_t **ks, size_t *n)
{
  const sf_search_knob_t *all = sf_search_knobs(n);
  for (size_t i = 0; i < *n; i++)
    ks[i] = &all[i];
}

Test(replay_search, candidates_are_seeded_latin_hypercube_draws_and_candidate_0_is_the_base)
{
  const sf_search_knob_t *ks[SF_SEARCH_MAX_KNOBS];
  size_t nk, n = 21;
  char a[64], b[64];
  sf_policy_t base, p, q;
  knob_list(ks, &nk);
  sf_policy_init(&base);
  cr_assert_eq(sf_policy_set(&base, "weight_model", "0.75", a, sizeof a), 0);
  sf_search_candidate(&base, ks, nk, 7, n, 0, &p);
  text(&p, "weight_model", a, sizeof a);
  cr_expect_str_eq(a, "0.75", "candidate 0 is the base");
  sf_policy_dispose(&p);
  /* Stratified: each of the n-1 draws of weight_island in its own 1/(n-1) of the range. */
  const sf_search_knob_t *wi = sf_search_knob("weight_island");
  bool seen[20] = {false};
  size_t kept = 0;
  for (size_t i = 1; i < n; i++) {
    sf_search_candidate(&base, ks, nk, 7, n, i, &p);
    sf_search_candidate(&base, ks, nk, 7, n, i, &q);
    for (size_t k = 0; k < nk; k++) {
      text(&p, ks[k]->key, a, sizeof a);
      text(&q, ks[k]->key, b, sizeof b);
      cr_expect_str_eq(a, b, "candidate %zu, %s: the same seed draws the same", i, ks[k]->key);
    }
    text(&p, "weight_island", a, sizeof a);
    double u = (strtod(a, NULL) - wi->lo) / (wi->hi - wi->lo);
    size_t s = (size_t)(u * (double)(n - 1));
    cr_assert_lt(s, n - 1);
    cr_expect(!seen[s], "two draws in stratum %zu", s);
    seen[s] = true;
    /* headroom_pct keeps the base's 0 in half of the strata exactly. */
    text(&p, "headroom_pct", a, sizeof a);
    kept += strcmp(a, "0") == 0;
    sf_policy_dispose(&p);
    sf_policy_dispose(&q);
  }
  cr_expect_eq(kept, (n - 1) / 2, "%zu of %zu candidates kept headroom_pct at the base's", kept,
               n - 1);
  /* Another search seed draws other values. */
  sf_search_candidate(&base, ks, nk, 7, n, 1, &p);
  sf_search_candidate(&base, ks, nk, 8, n, 1, &q);
  text(&p, "weight_frag", a, sizeof a);
  text(&q, "weight_frag", b, sizeof b);
  cr_expect_str_neq(a, b);
  sf_policy_dispose(&p);
  sf_policy_dispose(&q);
  sf_policy_dispose(&base);
}

Test(replay_search, a_knob_keeps_its_draws_when_another_knob_joins)
{
  const sf_search_knob_t *all[SF_SEARCH_MAX_KNOBS], *one[1] = {sf_search_knob("weight_model")};
  size_t nk;
  char a[64], b[64];
  sf_policy_t base, p, q;
  knob_list(all, &nk);
  sf_policy_init(&base);
  for (size_t i = 1; i < 10; i++) {
    sf_search_candidate(&base, all, nk, 3, 10, i, &p);
    sf_search_candidate(&base, one, 1, 3, 10, i, &q);
    text(&p, "weight_model", a, sizeof a);
    text(&q, "weight_model", b, sizeof b);
    cr_expect_str_eq(a, b, "candidate %zu", i);
    text(&q, "weight_frag", b, sizeof b);
    cr_expect_str_eq(b, "1", "a knob not searched keeps the base's value");
    sf_policy_dispose(&p);
    sf_policy_dispose(&q);
  }
  sf_policy_dispose(&base);
}

/* ---- the split ---- */

/* The bundled list is in creation order, as the Alibaba default list is. */
Test(replay_search, an_alibaba_list_splits_in_creation_order)
{
  sf_replay_trace_t t, tr, ho;
  sf_test_load_bundled(&t);
  cr_assert_eq(sf_search_split(&t, 70, &tr, &ho), 0);
  size_t want = (size_t)llround((double)t.npods * 0.7);
  cr_expect_eq(tr.npods, want);
  cr_expect_eq(tr.npods + ho.npods, t.npods);
  cr_expect_eq(tr.nnodes, t.nnodes);
  cr_expect_eq(ho.nnodes, t.nnodes);
  cr_expect_eq(sf_replay_gpu_milli(&ho), sf_replay_gpu_milli(&t));
  for (size_t i = 0; i < tr.npods; i++)
    cr_assert_str_eq(tr.pods[i].name, t.pods[i].name);
  for (size_t i = 0; i < ho.npods; i++) {
    cr_assert_str_eq(ho.pods[i].name, t.pods[want + i].name);
    cr_assert_eq(ho.pods[i].load_milli, t.pods[want + i].load_milli);
  }
  sf_replay_trace_dispose(&tr);
  sf_replay_trace_dispose(&ho);
  sf_replay_trace_dispose(&t);
}

/* gpushare40 is not in creation order: the split follows creation_time, not the file. */
Test(replay_search, an_alibaba_list_with_creation_times_splits_by_them)
{
  sf_replay_trace_t t, tr, ho;
  sf_test_load_csv_text(&t, "sn,cpu_milli,memory_mib,gpu,model\nn-0,96000,393216,8,G2\n",
                        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time\n"
                        "p-0,1000,1024,1,500,40\np-1,1000,1024,1,500,30\np-2,1000,1024,1,500,20\n"
                        "p-3,1000,1024,1,500,10\np-4,1000,1024,1,500,10\n");
  cr_assert_eq(sf_search_split(&t, 60, &tr, &ho), 0);
  cr_assert_eq(tr.npods, 3);
  cr_expect_str_eq(tr.pods[0].name, "p-3", "equal times keep the file order");
  cr_expect_str_eq(tr.pods[1].name, "p-4");
  cr_expect_str_eq(tr.pods[2].name, "p-2");
  cr_assert_eq(ho.npods, 2);
  cr_expect_str_eq(ho.pods[0].name, "p-1");
  cr_expect_str_eq(ho.pods[1].name, "p-0");
  sf_replay_trace_dispose(&tr);
  sf_replay_trace_dispose(&ho);
  sf_replay_trace_dispose(&t);
}

Test(replay_search, a_native_trace_splits_by_arrival_time)
{
  sf_replay_trace_t t, tr, ho;
  sf_test_load_bundled_native(&t);
  cr_assert_eq(sf_search_split(&t, 60, &tr, &ho), 0);
  cr_expect(tr.native && ho.native && tr.has_islands == t.has_islands);
  int64_t last = INT64_MIN, first = INT64_MAX;
  for (size_t i = 0; i < tr.npods; i++)
    last = tr.pods[i].at > last ? tr.pods[i].at : last;
  for (size_t i = 0; i < ho.npods; i++)
    first = ho.pods[i].at < first ? ho.pods[i].at : first;
  cr_expect_leq(last, first, "a train pod arrives at %lld, after a holdout pod (%lld)",
                (long long)last, (long long)first);
  /* Model sets keep their ids: a claim's spec names the same models in the part. */
  for (size_t i = 0; i < ho.npods; i++)
    for (size_t c = 0; c < ho.pods[i].nclaims; c++)
      for (size_t r = 0; r < ho.pods[i].claims[c].nreqs; r++) {
        uint32_t s = ho.pods[i].claims[c].reqs[r].spec;
        cr_assert_lt(s, ho.nspecs);
        cr_assert_str_eq(ho.specs[s].key, t.specs[s].key);
      }
  sf_replay_trace_dispose(&tr);
  sf_replay_trace_dispose(&ho);
  sf_replay_trace_dispose(&t);
}

Test(replay_search, a_split_with_an_empty_part_is_refused)
{
  sf_replay_trace_t t, tr, ho;
  sf_test_load_csv_text(&t, "sn,cpu_milli,memory_mib,gpu,model\nn-0,96000,393216,8,G2\n",
                        "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np-0,1000,1024,1,500\n");
  cr_expect_eq(sf_search_split(&t, 70, &tr, &ho), SF_EINVAL, "one pod cannot make two parts");
  sf_replay_trace_dispose(&tr);
  sf_replay_trace_dispose(&ho);
  cr_expect_eq(sf_search_split(&t, 0, &tr, &ho), SF_EINVAL);
  sf_replay_trace_dispose(&tr);
  sf_replay_trace_dispose(&ho);
  sf_replay_trace_dispose(&t);
}

/* ---- searches ---- */

static sf_search_opts_t opts(size_t n, unsigned threads)
{
  return (sf_search_opts_t){.ncandidates = n,
                            .search_seed = 1,
                            .seeds = seeds2,
                            .nseeds = 2,
                            .train_pct = 70,
                            .threads = threads,
                            .tune = 1.3,
                            .device_choice = -1};
}

static void same_rows(const sf_search_result_t *a, const sf_search_result_t *b)
{
  size_t nkeys;
  const sf_policy_key_t *keys = sf_policy_keys(&nkeys);
  char x[256], y[256];
  cr_assert_eq(a->nrows, b->nrows);
  cr_expect_eq(a->winner, b->winner);
  cr_expect_eq(a->replays, b->replays);
  for (size_t r = 0; r < a->nrows; r++) {
    const sf_search_row_t *p = &a->rows[r], *q = &b->rows[r];
    cr_expect_str_eq(p->name, q->name);
    cr_expect(p->train100 == q->train100 && p->train130 == q->train130, "%s", p->name);
    cr_expect(p->holdout100 == q->holdout100 && p->holdout130 == q->holdout130, "%s", p->name);
    for (size_t k = 0; k < nkeys; k++) {
      text(&p->pol, keys[k].key, x, sizeof x);
      text(&q->pol, keys[k].key, y, sizeof y);
      cr_expect_str_eq(x, y, "%s: %s", p->name, keys[k].key);
    }
  }
}

static void run_search(const sf_replay_trace_t *t, const sf_search_opts_t *o, sf_search_result_t *r)
{
  char err[SF_REPLAY_ERR_MAX + 256] = "";
  cr_assert_eq(sf_search_run(t, o, r, err, sizeof err), 0, "%s", err);
}

/*
 * The islands and models of the native trace give the weights something to
 * move; on the Alibaba-shaped trace, stage-1 runs stop early against a bar
 * that depends on which runs finished first, and must change nothing.
 */
Test(replay_search, the_same_search_gives_the_same_result_on_one_or_two_threads, .timeout = 180)
{
  sf_replay_trace_t t;
  sf_search_result_t a, b;
  sf_test_load_bundled_native(&t);
  sf_search_opts_t o1 = opts(12, 1), o2 = opts(12, 2);
  o1.tune = o2.tune = 0;
  run_search(&t, &o1, &a);
  run_search(&t, &o2, &b);
  same_rows(&a, &b);
  sf_search_result_dispose(&a);
  sf_search_result_dispose(&b);
  sf_replay_trace_dispose(&t);
  sf_test_load_bundled(&t);
  o1 = opts(12, 1);
  o2 = opts(12, 2);
  run_search(&t, &o1, &a);
  run_search(&t, &o2, &b);
  same_rows(&a, &b);
  sf_search_result_dispose(&a);
  sf_search_result_dispose(&b);
  sf_replay_trace_dispose(&t);
}

Test(replay_search, the_winner_is_never_worse_on_train_than_the_default_it_starts_from,
     .timeout = 120)
{
  sf_replay_trace_t t;
  sf_search_result_t r;
  sf_test_load_bundled_native(&t);
  sf_search_opts_t o = opts(16, 2);
  o.tune = 0;
  run_search(&t, &o, &r);
  cr_assert_eq(r.nrows, SF_SEARCH_BUILTINS + SF_SEARCH_FINALISTS);
  static const char *const names[] = {"fgd", "fragmentation", "binpack", "spread"};
  for (size_t b = 0; b < SF_SEARCH_BUILTINS; b++) {
    cr_expect_str_eq(r.rows[b].name, names[b]);
    cr_expect_eq(r.rows[b].candidate, -1);
    cr_expect(r.rows[b].ntrain == 2 && r.rows[b].nholdout == 2, "%s", names[b]);
  }
  /* The default policy is the built-in fragmentation, and candidate 0. */
  cr_expect_eq(r.reference, 1, "the base's results are fragmentation's");
  const sf_search_row_t *w = &r.rows[r.winner], *base = &r.rows[r.reference];
  cr_expect_eq(r.winner, SF_SEARCH_BUILTINS);
  cr_expect(w->train100 > base->train100 ||
                (w->train100 == base->train100 && w->train130 >= base->train130),
            "winner %s %.3f/%.3f below the base %.3f/%.3f on train", w->name, w->train100,
            w->train130, base->train100, base->train130);
  for (size_t i = r.winner; i + 1 < r.nrows; i++) {
    cr_expect_geq(r.rows[i].train100, r.rows[i + 1].train100, "finalists best first");
    cr_expect(r.rows[i].ntrain == 2 && r.rows[i].nholdout == 2, "%s", r.rows[i].name);
  }
  size_t nk;
  sf_search_knobs(&nk);
  cr_expect_eq(r.nknobs, nk,
               "by default every knob of the table varies (the native trace has "
               "islands and model selectors)");
  sf_search_result_dispose(&r);
  sf_replay_trace_dispose(&t);
}

/*
 * A base that allows no sharing (max_sharers 1) on pods of a quarter GPU
 * strands three quarters of every GPU; the candidates that draw a higher
 * limit pack them, and the search must find one.
 */
Test(replay_search, the_search_leaves_a_bad_base_behind, .timeout = 60)
{
  static const char nodes[] = "sn,cpu_milli,memory_mib,gpu,model\n"
                              "n-0,64000,262144,4,T4\nn-1,64000,262144,4,T4\n"
                              "n-2,64000,262144,4,T4\nn-3,64000,262144,4,T4\n";
  char pods[4096] = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n", err[256], v[64];
  for (int i = 0; i < 40; i++)
    snprintf(pods + strlen(pods), sizeof pods - strlen(pods), "p-%02d,1000,1024,1,250\n", i);
  sf_replay_trace_t t;
  sf_search_result_t r;
  sf_policy_t base;
  const char *keys[] = {"max_sharers"};
  sf_test_load_csv_text(&t, nodes, pods);
  sf_policy_init(&base);
  cr_assert_eq(sf_policy_set(&base, "max_sharers", "1", err, sizeof err), 0);
  sf_search_opts_t o = opts(8, 2);
  o.base = &base;
  o.keys = keys;
  o.nkeys = 1;
  run_search(&t, &o, &r);
  const sf_search_row_t *w = &r.rows[r.winner], *b = &r.rows[r.reference];
  cr_expect_eq(b->candidate, 0, "the base differs from every built-in: its own row");
  cr_expect_lt(b->train100, 30, "the base strands GPUs: %.2f", b->train100);
  cr_expect_gt(w->train100, 90, "the winner %s packs: %.2f", w->name, w->train100);
  cr_expect_gt(w->holdout100, b->holdout100, "and does on the holdout too");
  text(&w->pol, "max_sharers", v, sizeof v);
  cr_expect_geq(atoi(v), 4, "max_sharers %s", v);
  /* The built-ins are the base with the varied knob at its default (no limit). */
  text(&r.rows[1].pol, "max_sharers", v, sizeof v);
  cr_expect_str_eq(v, "0");
  sf_search_result_dispose(&r);
  sf_policy_dispose(&base);
  sf_replay_trace_dispose(&t);
}

static bool idle(const sf_search_result_t *r, const char *key)
{
  for (size_t k = 0; k < r->nidle; k++)
    if (strcmp(r->idle[k][0], key) == 0)
      return true;
  return false;
}

/*
 * A weight that multiplies a term the trace makes zero cannot move a pod: the
 * bundled Alibaba-shaped trace has no NVLink island, no pod that names a
 * model and, replayed static, no pod that leaves; the native one has all
 * three; binpack reads no weight at all.
 */
Test(replay_search, knobs_that_cannot_act_on_the_trace_are_not_varied, .timeout = 120)
{
  sf_replay_trace_t t, nt;
  sf_search_result_t r;
  sf_policy_t bp;
  char err[64];
  sf_test_load_bundled(&t);
  sf_test_load_bundled_native(&nt);
  sf_search_opts_t o = opts(2, 2);
  o.nseeds = 1;
  run_search(&t, &o, &r);
  cr_expect(idle(&r, "weight_island") && idle(&r, "weight_model") && !idle(&r, "weight_frag") &&
            !idle(&r, "mix_coverage") && !idle(&r, "weight_unfed") && !idle(&r, "weight_plan") &&
            !idle(&r, "weight_strand") && idle(&r, "weight_fill"));
  cr_expect_eq(r.nknobs + r.nidle, 10);
  sf_search_result_dispose(&r);
  o.tune = 0;
  run_search(&nt, &o, &r);
  cr_expect_eq(r.nidle, 0, "islands and model selectors in the native trace");
  sf_search_result_dispose(&r);
  sf_policy_init(&bp);
  cr_assert_eq(sf_policy_set(&bp, "strategy", "binpack", err, sizeof err), 0);
  o.base = &bp;
  run_search(&nt, &o, &r);
  cr_expect(idle(&r, "weight_frag") && idle(&r, "weight_island") && idle(&r, "weight_model") &&
            idle(&r, "mix_coverage") && idle(&r, "weight_unfed") && idle(&r, "weight_plan") &&
            idle(&r, "weight_strand") && idle(&r, "weight_fill"));
  cr_expect_eq(r.nknobs, 2, "the limits filter under every strategy");
  sf_search_result_dispose(&r);
  sf_policy_dispose(&bp);
  sf_replay_trace_dispose(&t);
  sf_replay_trace_dispose(&nt);
}

static void refused(sf_search_opts_t o, const char *want)
{
  sf_replay_trace_t t;
  sf_search_result_t r;
  char err[SF_REPLAY_ERR_MAX + 256] = "";
  sf_test_load_bundled(&t);
  cr_expect_eq(sf_search_run(&t, &o, &r, err, sizeof err), SF_EINVAL, "accepted, wanted '%s'", want);
  cr_expect(strstr(err, want) != NULL, "'%s' lacks '%s'", err, want);
  cr_expect_eq(r.nrows, 0);
  sf_replay_trace_dispose(&t);
}

Test(replay_search, bad_options_are_refused_with_a_reason)
{
  static const char *const bogus[] = {"weight_frag", "colour"}, *const twice[] = {"weight_frag",
                                                                                  "weight_frag"};
  sf_search_opts_t o = opts(4, 1);
  o.ncandidates = 0;
  refused(o, "candidates");
  o = opts(4, 1);
  o.nseeds = 0;
  refused(o, "seeds");
  o = opts(4, 1);
  o.train_pct = 100;
  refused(o, "train part");
  o = opts(4, 1);
  o.keys = bogus;
  o.nkeys = 2;
  refused(o, "'colour' is not a knob");
  o = opts(4, 1);
  o.keys = twice;
  o.nkeys = 2;
  refused(o, "named twice");
}
