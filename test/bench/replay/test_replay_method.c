/*
 * FGD's experiment method: sort by name, shuffle by seed, grow by resampling
 * (appended, stopping at the first overshoot) or shrink; the typical pods;
 * and the allocation measured at the arrived-load thresholds.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "slicefit/replay.h"
#include "bundled.h"

Test(replay_method, shuffle_is_a_seeded_permutation_of_the_sorted_pods)
{
  sf_replay_trace_t t;
  sf_replay_order_t a, b, c;
  sf_test_load_bundled(&t);
  sf_replay_order_fgd(&t, 42, 0, &a);
  sf_replay_order_fgd(&t, 42, 0, &b);
  sf_replay_order_fgd(&t, 43, 0, &c);
  cr_assert_eq(a.n, t.npods);
  cr_assert_eq(a.norig, t.npods);
  uint8_t *seen = calloc(t.npods, 1);
  for (size_t i = 0; i < a.n; i++) {
    cr_assert_lt(a.idx[i], t.npods);
    cr_assert_eq(seen[a.idx[i]], 0, "pod %u twice", a.idx[i]);
    seen[a.idx[i]] = 1;
  }
  cr_expect_eq(memcmp(a.idx, b.idx, a.n * sizeof(*a.idx)), 0, "same seed, same order");
  cr_expect_neq(memcmp(a.idx, c.idx, a.n * sizeof(*a.idx)), 0, "another seed, another order");
  free(seen);
  sf_replay_order_dispose(&a);
  sf_replay_order_dispose(&b);
  sf_replay_order_dispose(&c);
  sf_replay_trace_dispose(&t);
}

Test(replay_method, growing_appends_resampled_pods_and_stops_before_overshooting)
{
  sf_replay_trace_t t;
  sf_replay_order_t plain, grown;
  sf_test_load_bundled(&t);
  int64_t cap = sf_replay_gpu_milli(&t), target = (int64_t)llround(1.3 * (double)cap), maxpod = 0;
  for (size_t i = 0; i < t.npods; i++)
    if (t.pods[i].load_milli > maxpod)
      maxpod = t.pods[i].load_milli;
  sf_replay_order_fgd(&t, 7, 0, &plain);
  sf_replay_order_fgd(&t, 7, 1.3, &grown);
  cr_assert_eq(grown.norig, t.npods);
  cr_assert_gt(grown.n, t.npods);
  /* The shuffled originals come first, unchanged; the resampled ones follow. */
  cr_expect_eq(memcmp(plain.idx, grown.idx, plain.n * sizeof(*plain.idx)), 0);
  int64_t load = 0;
  size_t cpu_only_appended = 0;
  for (size_t i = 0; i < grown.n; i++) {
    load += t.pods[grown.idx[i]].load_milli;
    if (i >= grown.norig && t.pods[grown.idx[i]].num_gpu == 0)
      cpu_only_appended++;
  }
  cr_expect_eq(load, grown.load_milli);
  cr_expect_leq(load, target, "never above tune x capacity");
  cr_expect_gt(load + maxpod, target, "stopped only when a pod would overshoot");
  cr_expect_gt(cpu_only_appended, 0, "CPU-only pods are resampled too");
  sf_replay_order_dispose(&plain);
  sf_replay_order_dispose(&grown);
  sf_replay_trace_dispose(&t);
}

Test(replay_method, shrinking_removes_random_pods_keeping_the_order)
{
  sf_replay_trace_t t;
  sf_replay_order_t plain, shrunk;
  sf_test_load_bundled(&t);
  int64_t target = (int64_t)llround(0.5 * (double)sf_replay_gpu_milli(&t));
  sf_replay_order_fgd(&t, 9, 0, &plain);
  sf_replay_order_fgd(&t, 9, 0.5, &shrunk);
  cr_assert_lt(shrunk.n, plain.n);
  cr_expect_leq(shrunk.load_milli, target);
  cr_expect_gt(shrunk.load_milli, target - 1000, "removal stops once under the target");
  /* What is left is a subsequence of the shuffled order. */
  size_t j = 0;
  for (size_t i = 0; i < shrunk.n; i++) {
    while (j < plain.n && plain.idx[j] != shrunk.idx[i])
      j++;
    cr_assert_lt(j, plain.n, "pod %zu out of order", i);
    j++;
  }
  sf_replay_order_dispose(&plain);
  sf_replay_order_dispose(&shrunk);
  sf_replay_trace_dispose(&t);
}

Test(replay_method, typical_pods_cover_95_percent_and_sum_to_one)
{
  sf_replay_trace_t t;
  sf_shape_t *mix;
  sf_test_load_csv_text(&t, "sn,cpu_milli,memory_mib,gpu,model\nn,8000,1024,2,T4\n",
                        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
                        "a0,1000,1,1,500,\na1,1000,2,1,500,\na2,1000,3,1,500,\na3,1000,4,1,500,\n"
                        "a4,1000,5,1,500,\na5,1000,6,1,500,\na6,1000,7,1,500,\na7,1000,8,1,500,\n"
                        "b0,2000,1,1,1000,T4\nb1,2000,1,1,1000,T4\nb2,2000,1,1,1000,T4\nb3,2000,1,1,1000,T4\n"
                        "b4,2000,1,1,1000,T4\nb5,2000,1,1,1000,T4\n"
                        "c0,500,1,0,0,\nc1,500,1,0,0,\nc2,500,1,0,0,\nc3,500,1,0,0,\nc4,500,1,0,0,\n"
                        "d0,3000,1,1,1000,\n");
  size_t n = sf_replay_typical_mix(&t, &mix);
  /* 20 pods: 8 + 6 + 5 = 19 = 95%, so the lone d0 shape is left out. */
  cr_assert_eq(n, 3);
  cr_expect_eq(mix[0].cpu_milli, 1000);
  cr_expect_eq(mix[0].amount, 500, "memory is not part of the key");
  cr_expect_eq(mix[0].count, 1);
  cr_expect_eq(mix[1].amount, 0, "a whole GPU is amount 0");
  cr_expect_eq(mix[1].nmodels, 1);
  cr_expect_str_eq(mix[1].models[0], "T4");
  cr_expect_eq(mix[2].count, 0, "CPU-only pods are typical pods too");
  cr_expect_float_eq(mix[0].weight + mix[1].weight + mix[2].weight, 1.0, 1e-12);
  cr_expect_float_eq(mix[0].weight, 8.0 / 19.0, 1e-12);
  free(mix);
  sf_replay_trace_dispose(&t);
}

/* 2 GPUs; four half-GPU pods reach 100% exactly, then a whole-GPU pod cannot fit. */
Test(replay_method, allocation_at_thresholds)
{
  sf_replay_trace_t t;
  sf_replay_result_t r;
  char err[SF_REPLAY_ERR_MAX] = "";
  sf_test_load_csv_text(
      &t, "sn,cpu_milli,memory_mib,gpu,model\nn1,8000,1024,1,T4\nn2,8000,1024,1,T4\n",
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
      "p0,1000,1,1,500\np1,1000,1,1,500\np2,1000,1,1,500\np3,1000,1,1,500\nq,1000,1,1,600\n");
  /* tune 0: the pods as they are; q comes anywhere, so use a seed where it comes last. */
  for (uint64_t seed = 1; seed < 200; seed++) {
    sf_replay_order_t o;
    sf_replay_order_fgd(&t, seed, 0, &o);
    bool last = strcmp(t.pods[o.idx[o.n - 1]].name, "q") == 0;
    sf_replay_order_dispose(&o);
    if (!last)
      continue;
    sf_replay_opts_t opts = {.policy = "bestfit", .device_choice = -1, .seed = seed};
    cr_assert_eq(sf_replay_run(&t, &opts, &r, err, sizeof err), 0, "%s", err);
    break;
  }
  cr_expect_eq(r.gpus, 2);
  cr_expect_eq(r.pods_arrived, 5);
  cr_expect_eq(r.pods_failed, 1);
  cr_expect_float_eq(r.alloc_pct_at[0], 50.0, 1e-9);  /* @50: two pods in */
  cr_expect_float_eq(r.alloc_pct_at[4], 100.0, 1e-9); /* @100 */
  cr_expect_float_eq(r.alloc_pct_at[8], 100.0, 1e-9); /* @130: q arrived (130%) and failed */
  cr_expect_float_eq(r.unallocated_pct_at_100, 0.0, 1e-9);
  cr_expect_float_eq(r.frag_pct_at_100, 0.0, 1e-9, "nothing idle, nothing fragmented");
  cr_expect_float_eq(r.arrived_pct_final, 130.0, 1e-9);
  cr_expect_eq(r.ncurve, 131, "one curve point per percent up to 130");
  sf_replay_result_dispose(&r);
  sf_replay_trace_dispose(&t);
}

/*
 * The sliver floor: an 810-milli pod leaves 190 that only pods under 190
 * could use, so with no such pod the floor is 19% of one GPU, and here it
 * is exactly what stays unallocated once the whole-GPU pod fails.
 */
Test(replay_method, sliver_floor_counts_what_only_small_pods_could_use)
{
  sf_replay_trace_t t;
  sf_replay_result_t r;
  char err[SF_REPLAY_ERR_MAX] = "";
  sf_test_load_csv_text(&t, "sn,cpu_milli,memory_mib,gpu,model\nn1,8000,1024,1,T4\n",
                        "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1000,1,1,810\nw,1000,1,1,1000\n");
  bool ran = false;
  for (uint64_t seed = 1; seed < 200 && !ran; seed++) {
    sf_replay_order_t o;
    sf_replay_order_fgd(&t, seed, 0, &o);
    bool p_first = strcmp(t.pods[o.idx[0]].name, "p") == 0;
    sf_replay_order_dispose(&o);
    if (!p_first)
      continue;
    sf_replay_opts_t opts = {.policy = "fragmentation", .device_choice = -1, .seed = seed};
    cr_assert_eq(sf_replay_run(&t, &opts, &r, err, sizeof err), 0, "%s", err);
    ran = true;
  }
  cr_assert(ran);
  cr_expect_eq(r.pods_failed, 1);
  cr_expect_float_eq(r.unallocated_pct_at_100, 19.0, 1e-9);
  cr_expect_float_eq(r.sliver_floor_pct_at_100, 19.0, 1e-9);
  sf_replay_result_dispose(&r);
  sf_replay_trace_dispose(&t);
}

/*
 * Every policy leaves at least the sliver floor unallocated on the bundled
 * trace (a lower bound, never above), and the free split adds up to it.
 */
Test(replay_method, sliver_floor_is_below_every_policy)
{
  sf_replay_trace_t t;
  sf_test_load_bundled(&t);
  const char *pols[] = {"fgd", "fragmentation", "bestfit", "random"};
  for (size_t i = 0; i < 4; i++) {
    sf_replay_result_t r;
    char err[SF_REPLAY_ERR_MAX] = "";
    sf_replay_opts_t opts = {.policy = pols[i], .device_choice = -1, .seed = 42, .tune = 1.3};
    cr_assert_eq(sf_replay_run(&t, &opts, &r, err, sizeof err), 0, "%s", err);
    cr_expect_gt(r.sliver_floor_pct_at_100, 1.0, "%s: the bundled trace has 810-milli pods", pols[i]);
    cr_expect_leq(r.sliver_floor_pct_at_100, r.unallocated_pct_at_100 + 1e-9,
                  "%s: floor %.3f, unallocated %.3f", pols[i], r.sliver_floor_pct_at_100,
                  r.unallocated_pct_at_100);
    double sum = r.free_too_small_pct_at_100 + r.free_starved_pct_at_100 + r.free_usable_pct_at_100;
    cr_expect(fabs(sum - r.unallocated_pct_at_100) < 1e-9, "%s: %.6f + %.6f + %.6f against %.6f",
              pols[i], r.free_too_small_pct_at_100, r.free_starved_pct_at_100,
              r.free_usable_pct_at_100, r.unallocated_pct_at_100);
    cr_expect(r.free_too_small_pct_at_100 >= 0 && r.free_starved_pct_at_100 >= 0 &&
                  r.free_usable_pct_at_100 >= 0,
              "%s", pols[i]);
    sf_replay_result_dispose(&r);
  }
  sf_replay_trace_dispose(&t);
}

static void run_one(const char *nodes, const char *pods, sf_replay_result_t *r)
{
  sf_replay_trace_t t;
  char err[SF_REPLAY_ERR_MAX] = "";
  sf_test_load_csv_text(&t, nodes, pods);
  sf_replay_opts_t opts = {.policy = "fragmentation", .device_choice = -1, .seed = 7};
  cr_assert_eq(sf_replay_run(&t, &opts, r, err, sizeof err), 0, "%s", err);
  sf_replay_trace_dispose(&t);
}

/*
 * Where the free GPU sits at 100%: too small for every pod of the trace,
 * starved by its node's CPU, or usable by a pod that did not come. Each
 * case's answer holds whatever the arrival order.
 */
Test(replay_method, free_split_names_where_the_free_gpu_sits)
{
  const char *hdr = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n";
  char pods[256];
  sf_replay_result_t r;

  /* Two 700s fill both GPUs' CPU-fed room; the 300s left fit no pod of the trace. */
  snprintf(pods, sizeof pods, "%sa,1000,1,1,700\nb,1000,1,1,700\nc,1000,1,1,700\n", hdr);
  run_one("sn,cpu_milli,memory_mib,gpu,model\nn1,3000,1024,2,T4\n", pods, &r);
  cr_expect_float_eq(r.unallocated_pct_at_100, 30.0, 1e-9);
  cr_expect_float_eq(r.free_too_small_pct_at_100, 30.0, 1e-9);
  cr_expect_float_eq(r.free_starved_pct_at_100, 0.0, 1e-9);
  cr_expect_float_eq(r.free_usable_pct_at_100, 0.0, 1e-9);
  sf_replay_result_dispose(&r);

  /* The first pod takes the node's only core: the idle GPU is starved, the 300 or 400 too small. */
  snprintf(pods, sizeof pods, "%sa,1000,1,1,700\nb,1000,1,1,700\nc,1000,1,1,600\n", hdr);
  run_one("sn,cpu_milli,memory_mib,gpu,model\nn1,1000,1024,2,T4\n", pods, &r);
  cr_expect_eq(r.pods_failed, 2);
  cr_expect_float_eq(r.free_starved_pct_at_100, 50.0, 1e-9);
  cr_expect(fabs(r.free_too_small_pct_at_100 - 15.0) < 1e-9 ||
                fabs(r.free_too_small_pct_at_100 - 20.0) < 1e-9,
            "too small: %.3f", r.free_too_small_pct_at_100);
  cr_expect_float_eq(r.free_usable_pct_at_100, 0.0, 1e-9);
  sf_replay_result_dispose(&r);

  /* The 5-core pod fits no node; the GPU it leaves idle would take the other pod's shape. */
  snprintf(pods, sizeof pods, "%sw1,1000,1,1,1000\nw2,5000,1,1,1000\n", hdr);
  run_one("sn,cpu_milli,memory_mib,gpu,model\nn1,1000,1024,1,T4\nn2,1000,1024,1,T4\n", pods, &r);
  cr_expect_eq(r.pods_failed, 1);
  cr_expect_float_eq(r.free_usable_pct_at_100, 50.0, 1e-9);
  cr_expect_float_eq(r.free_too_small_pct_at_100 + r.free_starved_pct_at_100, 0.0, 1e-9);
  sf_replay_result_dispose(&r);

  /* Host memory starves as CPU does: the first pod takes all of it, the GPU's other half waits. */
  snprintf(pods, sizeof pods, "%sa,100,2048,1,500\nb,100,2048,1,500\n", hdr);
  run_one("sn,cpu_milli,memory_mib,gpu,model\nn1,8000,2048,1,T4\n", pods, &r);
  cr_expect_eq(r.pods_failed, 1);
  cr_expect_float_eq(r.free_starved_pct_at_100, 50.0, 1e-9);
  cr_expect_float_eq(r.free_too_small_pct_at_100 + r.free_usable_pct_at_100, 0.0, 1e-9);
  sf_replay_result_dispose(&r);
}

/* CPU is checked per node: one 600-milli-CPU pod per 1000-milli node. */
Test(replay_method, cpu_limits_allocation)
{
  sf_replay_trace_t t;
  sf_replay_result_t r;
  char err[SF_REPLAY_ERR_MAX] = "";
  sf_test_load_csv_text(&t,
                        "sn,cpu_milli,memory_mib,gpu,model\nn1,1000,1024,1,T4\nn2,1000,1024,1,T4\n",
                        "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
                        "p0,600,1,1,500\np1,600,1,1,500\np2,600,1,1,500\np3,600,1,1,500\n");
  sf_replay_opts_t opts = {.policy = "fgd", .device_choice = -1, .seed = 1};
  cr_assert_eq(sf_replay_run(&t, &opts, &r, err, sizeof err), 0, "%s", err);
  cr_expect_eq(r.pods_failed, 2);
  cr_expect_float_eq(r.alloc_pct_at[4], 50.0, 1e-9);
  cr_expect_float_eq(r.frag_pct_at_100, 50.0, 1e-9, "the free halves are stranded by CPU");
  sf_replay_result_dispose(&r);
  sf_replay_trace_dispose(&t);
}

Test(replay_method, unknown_policy_is_an_error)
{
  sf_replay_trace_t t;
  sf_replay_result_t r;
  char err[SF_REPLAY_ERR_MAX] = "";
  sf_test_load_bundled(&t);
  sf_replay_opts_t opts = {.policy = "tetris", .device_choice = -1, .seed = 1};
  cr_expect_eq(sf_replay_run(&t, &opts, &r, err, sizeof err), SF_EINVAL);
  cr_expect(strstr(err, "unknown policy 'tetris'") != NULL, "%s", err);
  sf_replay_result_dispose(&r);
  sf_replay_trace_dispose(&t);
}

/* The verdict cache only saves work: every policy replays the same with and without it. */
static void same_with_and_without_cache(const sf_replay_trace_t *t, const char *policy,
                                        sf_replay_ties_t ties, double tune)
{
  sf_replay_result_t r[2];
  for (int k = 0; k < 2; k++) {
    char err[SF_REPLAY_ERR_MAX] = "";
    sf_replay_opts_t o = {.policy = policy,
                          .device_choice = SF_CHOICE_PACKER,
                          .seed = 7,
                          .tune = tune,
                          .ties = ties,
                          .no_cache = k == 1};
    cr_assert_eq(sf_replay_run(t, &o, &r[k], err, sizeof err), 0, "%s", err);
  }
  cr_expect_eq(r[0].pods_failed, r[1].pods_failed, "%s: failed pods differ", policy);
  cr_expect_eq(r[0].pods_departed, r[1].pods_departed, "%s: departures differ", policy);
  cr_expect(r[0].alloc_pct_final == r[1].alloc_pct_final, "%s: final allocation %.3f vs %.3f", policy,
            r[0].alloc_pct_final, r[1].alloc_pct_final);
  for (size_t i = 0; i < SF_REPLAY_NTHRESH; i++)
    cr_expect(r[0].alloc_pct_at[i] == r[1].alloc_pct_at[i] ||
                  (isnan(r[0].alloc_pct_at[i]) && isnan(r[1].alloc_pct_at[i])),
              "%s: allocation at %d%% differs", policy, sf_replay_thresholds[i]);
  cr_expect(r[0].frag_pct_at_100 == r[1].frag_pct_at_100 ||
                (isnan(r[0].frag_pct_at_100) && isnan(r[1].frag_pct_at_100)),
            "%s: fragmentation differs", policy);
  sf_replay_result_dispose(&r[0]);
  sf_replay_result_dispose(&r[1]);
}

Test(replay_method, verdict_cache_changes_nothing)
{
  sf_replay_trace_t t, nt;
  sf_test_load_bundled(&t);
  sf_test_load_bundled_native(&nt);
  same_with_and_without_cache(&t, "fgd", SF_REPLAY_TIES_SCHED, 1.3);
  same_with_and_without_cache(&t, "clustering", SF_REPLAY_TIES_FIRST, 1.3);
  same_with_and_without_cache(&t, "packing", SF_REPLAY_TIES_RANDOM, 1.3);
  same_with_and_without_cache(&t, "random", SF_REPLAY_TIES_SCHED, 1.3);
  same_with_and_without_cache(&t, "fragmentation", SF_REPLAY_TIES_SCHED, 1.3);
  same_with_and_without_cache(&nt, "fragmentation", SF_REPLAY_TIES_SCHED, 0);
  same_with_and_without_cache(&nt, "bestfit", SF_REPLAY_TIES_SCHED, 0);
  sf_replay_trace_dispose(&t);
  sf_replay_trace_dispose(&nt);
}

/*
 * The drift bound only saves work: with it (the verdicts whose key the
 * learned mix's move cannot have changed are kept) and without it (every
 * moved verdict scored again) a run places the same pods, under both tie
 * orders it serves and both device choices, on the bundled trace and the
 * native one (islands, departures). And it does keep verdicts.
 */
Test(replay_method, drift_bound_changes_nothing)
{
  sf_replay_trace_t tr[2];
  sf_test_load_bundled(&tr[0]);
  sf_test_load_bundled_native(&tr[1]);
  static const sf_replay_ties_t ties[2] = {SF_REPLAY_TIES_PERM, SF_REPLAY_TIES_FIRST};
  for (int t = 0; t < 2; t++)
    for (int c = 0; c < 4; c++) {
      sf_replay_result_t r[2];
      for (int k = 0; k < 2; k++) {
        char err[SF_REPLAY_ERR_MAX] = "";
        sf_replay_opts_t o = {.policy = "fragmentation",
                              .device_choice = c % 2 ? SF_CHOICE_FIRST_FIT : SF_CHOICE_PACKER,
                              .seed = 40 + (uint64_t)c,
                              .tune = t == 0 ? 1.3 : 0,
                              .ties = ties[c / 2],
                              .no_bound = k == 1};
        cr_assert_eq(sf_replay_run(&tr[t], &o, &r[k], err, sizeof err), 0, "%s", err);
      }
      cr_expect_gt(r[0].verdicts_kept, 50, "trace %d case %d: %zu kept", t, c, r[0].verdicts_kept);
      cr_expect_eq(r[1].verdicts_kept, 0);
      cr_expect_lt(r[0].nodes_evaluated, r[1].nodes_evaluated);
      cr_expect_eq(r[0].pods_failed, r[1].pods_failed, "trace %d case %d", t, c);
      cr_expect_eq(r[0].pods_departed, r[1].pods_departed);
      cr_expect(r[0].alloc_pct_final == r[1].alloc_pct_final, "trace %d case %d: %.4f vs %.4f", t, c,
                r[0].alloc_pct_final, r[1].alloc_pct_final);
      for (size_t i = 0; i < SF_REPLAY_NTHRESH; i++)
        cr_expect(r[0].alloc_pct_at[i] == r[1].alloc_pct_at[i] ||
                      (isnan(r[0].alloc_pct_at[i]) && isnan(r[1].alloc_pct_at[i])),
                  "trace %d case %d: allocation at %d%% differs", t, c, sf_replay_thresholds[i]);
      for (size_t i = 0; i < r[0].ncurve && i < r[1].ncurve; i++)
        cr_expect(r[0].curve[i] == r[1].curve[i], "trace %d case %d: curve point %zu", t, c, i);
      cr_expect(r[0].frag_pct_at_100 == r[1].frag_pct_at_100 ||
                (isnan(r[0].frag_pct_at_100) && isnan(r[1].frag_pct_at_100)));
      sf_replay_result_dispose(&r[0]);
      sf_replay_result_dispose(&r[1]);
    }
  sf_replay_trace_dispose(&tr[0]);
  sf_replay_trace_dispose(&tr[1]);
}

/* --extender-scores: the core's 0-10 scores decide, in their direction (binpack packs, spread spreads). */
Test(replay_method, extender_scores_follow_the_core_scores)
{
  sf_replay_trace_t t;
  char err[SF_REPLAY_ERR_MAX] = "";
  sf_test_load_bundled(&t);
  double at100[2];
  static const char *const pol[2] = {"binpack", "spread"};
  for (int k = 0; k < 2; k++) {
    sf_replay_result_t r;
    sf_replay_opts_t o = {.policy = pol[k],
                          .device_choice = -1,
                          .seed = 42,
                          .tune = 1.3,
                          .ties = SF_REPLAY_TIES_FIRST,
                          .extender_scores = true};
    cr_assert_eq(sf_replay_run(&t, &o, &r, err, sizeof err), 0, "%s", err);
    at100[k] = r.alloc_pct_at[4];
    sf_replay_result_dispose(&r);
  }
  cr_expect_gt(at100[0], at100[1] + 3.0, "binpack %.2f%% vs spread %.2f%%", at100[0], at100[1]);
  sf_replay_trace_dispose(&t);
}

/*
 * stop_below_100: a run stops only when its allocation at 100% load can no
 * longer reach the bar, so a bar it reaches changes nothing, and a run that
 * strands most of its GPUs (no sharing allowed, quarter-GPU pods) stops long
 * before the end.
 */
Test(replay_method, a_run_stops_early_only_when_it_cannot_reach_the_bar)
{
  sf_replay_trace_t t;
  sf_replay_result_t full, r;
  char err[SF_REPLAY_ERR_MAX] = "";
  sf_test_load_bundled(&t);
  sf_replay_opts_t o = {.policy = "fragmentation", .device_choice = -1, .seed = 42, .tune = 1.3};
  cr_assert_eq(sf_replay_run(&t, &o, &full, err, sizeof err), 0, "%s", err);
  o.stop_below_100 = full.alloc_pct_at[4];
  cr_assert_eq(sf_replay_run(&t, &o, &r, err, sizeof err), 0, "%s", err);
  cr_expect(!r.stopped, "stopped below a bar it reaches (%.3f)", full.alloc_pct_at[4]);
  for (size_t k = 0; k < SF_REPLAY_NTHRESH; k++)
    cr_expect(r.alloc_pct_at[k] == full.alloc_pct_at[k], "@%d", sf_replay_thresholds[k]);
  cr_expect_eq(r.pods_arrived, full.pods_arrived);
  sf_replay_result_dispose(&r);
  sf_replay_result_dispose(&full);
  sf_replay_trace_dispose(&t);

  char pods[4096] = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n";
  for (int i = 0; i < 40; i++)
    snprintf(pods + strlen(pods), sizeof pods - strlen(pods), "p-%02d,1000,1024,1,250\n", i);
  sf_test_load_csv_text(
      &t, "sn,cpu_milli,memory_mib,gpu,model\nn-0,64000,262144,4,T4\nn-1,64000,262144,4,T4\n", pods);
  sf_policy_t one;
  sf_policy_init(&one);
  cr_assert_eq(sf_policy_set(&one, "max_sharers", "1", err, sizeof err), 0);
  sf_replay_opts_t s = {.policy = "fragmentation",
                        .base = &one,
                        .device_choice = -1,
                        .seed = 1,
                        .tune = 1.3};
  cr_assert_eq(sf_replay_run(&t, &s, &full, err, sizeof err), 0, "%s", err);
  cr_assert_lt(full.alloc_pct_at[4], 30, "one pod per GPU: %.2f", full.alloc_pct_at[4]);
  s.stop_below_100 = 50;
  cr_assert_eq(sf_replay_run(&t, &s, &r, err, sizeof err), 0, "%s", err);
  cr_expect(r.stopped);
  cr_expect_lt(r.pods_arrived, full.pods_arrived * 3 / 4, "stopped after %zu of %zu pods",
               r.pods_arrived, full.pods_arrived);
  cr_expect(isnan(r.alloc_pct_at[4]), "no figure at 100%% for a run that stopped before");
  sf_replay_result_dispose(&r);
  sf_replay_result_dispose(&full);
  sf_policy_dispose(&one);
  sf_replay_trace_dispose(&t);
}
