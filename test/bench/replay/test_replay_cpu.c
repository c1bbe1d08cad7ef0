/*
 * CPU-only pods and node CPU, as the FGD authors' simulator models them:
 * CPU and memory filter (kube-scheduler's NodeResourcesFit), FGD's score
 * counts a node's idle GPUs as fragmented for a typical pod the node's free
 * CPU cannot host, and a CPU-only pod that leaves every typical pod its CPU
 * scores the same (50) everywhere, so the tie rule alone places it: under
 * --ties perm, a node order drawn from the seed (docs/replay.md).
 *
 * The traces are native JSON lines so that pods arrive in the order written.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "slicefit/replay.h"
#include "bundled.h"

static void load(sf_replay_trace_t *t, const char *text)
{
  char path[] = "/tmp/sf-replay-cpu-XXXXXX";
  char err[SF_REPLAY_ERR_MAX] = "";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  cr_assert(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
  close(fd);
  sf_replay_trace_init(t);
  cr_assert_eq(sf_replay_load_native(t, path, err, sizeof err), 0, "%s", err);
  unlink(path);
}

static void run_opts(const sf_replay_trace_t *t, const sf_replay_opts_t *o, sf_replay_result_t *r)
{
  char err[SF_REPLAY_ERR_MAX] = "";
  cr_assert_eq(sf_replay_run(t, o, r, err, sizeof err), 0, "%s", err);
}

static void run(const sf_replay_trace_t *t, const char *policy, sf_replay_ties_t ties, uint64_t seed,
                sf_replay_result_t *r)
{
  sf_replay_opts_t o = {.policy = policy, .device_choice = -1, .seed = seed, .ties = ties};
  run_opts(t, &o, r);
}

/*
 * Nodes a and b differ only in memory, which FGD does not score. The CPU-only
 * pod c leaves both able to host every typical pod, so it scores 50 on both;
 * then g needs 60Gi, which only a has, and only while c is not there. So g's
 * fate tells where c went: on a, g fails (0% allocated); on b, g runs (50%).
 */
static const char *const tie_trace =
    "{\"kind\":\"node\",\"name\":\"a\",\"cpu\":\"8\",\"memory\":\"64Gi\",\"gpus\":1,\"model\":\"X\",\"gpu_memory\":\"16Gi\"}\n"
    "{\"kind\":\"node\",\"name\":\"b\",\"cpu\":\"8\",\"memory\":\"16Gi\",\"gpus\":1,\"model\":\"X\",\"gpu_memory\":\"16Gi\"}\n"
    "{\"kind\":\"pod\",\"name\":\"c\",\"at\":0,\"cpu\":\"2\",\"memory\":\"8Gi\"}\n"
    "{\"kind\":\"pod\",\"name\":\"g\",\"at\":1,\"cpu\":\"2\",\"memory\":\"60Gi\",\"claims\":[{\"requests\":[{\"count\":1}]}]}\n";

/* True when c went to a (g failed), false when it went to b. */
static bool cpu_pod_on_a(const sf_replay_trace_t *t, sf_replay_ties_t ties, uint64_t seed)
{
  sf_replay_result_t r;
  run(t, "fgd", ties, seed, &r);
  cr_assert_eq(r.pods_arrived, 2);
  cr_assert_eq(r.pods_failed - r.gpu_pods_failed, 0, "the CPU-only pod always fits");
  bool on_a = r.gpu_pods_failed == 1;
  cr_assert_float_eq(r.alloc_pct_final, on_a ? 0.0 : 50.0, 1e-9);
  sf_replay_result_dispose(&r);
  return on_a;
}

/* fgd's equal scores go by --ties like the baselines' (before, the core's name-hash order took b always). */
Test(replay_cpu, fgd_ties_follow_the_tie_rule)
{
  sf_replay_trace_t t;
  load(&t, tie_trace);
  for (uint64_t seed = 1; seed <= 4; seed++)
    cr_expect(cpu_pod_on_a(&t, SF_REPLAY_TIES_FIRST, seed), "--ties first: the first node by name");
  sf_replay_trace_dispose(&t);
}

/* --ties perm: each seed has its own node order, the same every time the seed is replayed. */
Test(replay_cpu, cpu_only_pods_follow_the_seeds_node_order)
{
  sf_replay_trace_t t;
  size_t on_a = 0, seeds = 32;
  load(&t, tie_trace);
  for (uint64_t seed = 1; seed <= seeds; seed++) {
    bool x = cpu_pod_on_a(&t, SF_REPLAY_TIES_PERM, seed);
    cr_expect_eq(cpu_pod_on_a(&t, SF_REPLAY_TIES_PERM, seed), x, "seed %llu: same seed, same node",
                 (unsigned long long)seed);
    on_a += x;
  }
  cr_expect(on_a > 0 && on_a < seeds, "both nodes come first for some seed (a first %zu of %zu)",
            on_a, seeds);
  sf_replay_trace_dispose(&t);
}

/*
 * Node CPU in FGD's score: on a (8 cores), the 4-core CPU-only pod c would
 * leave too little CPU for the typical 8-core GPU pod, so a's GPU would count
 * as fragmented (the simulator's Q4, "lack CPU"); on b (16 cores) it changes
 * nothing. fgd puts c on b whatever the tie rule, and both GPU pods then run.
 * binpack, blind to CPU, ties and with --ties first takes a, stranding a's GPU.
 */
static const char *const cpu_trace =
    "{\"kind\":\"node\",\"name\":\"a\",\"cpu\":\"8\",\"memory\":\"64Gi\",\"gpus\":1,\"model\":\"X\",\"gpu_memory\":\"16Gi\"}\n"
    "{\"kind\":\"node\",\"name\":\"b\",\"cpu\":\"16\",\"memory\":\"64Gi\",\"gpus\":1,\"model\":\"X\",\"gpu_memory\":\"16Gi\"}\n"
    "{\"kind\":\"pod\",\"name\":\"c\",\"at\":0,\"cpu\":\"4\",\"memory\":\"1Gi\"}\n"
    "{\"kind\":\"pod\",\"name\":\"g1\",\"at\":1,\"cpu\":\"8\",\"memory\":\"1Gi\",\"claims\":[{\"requests\":[{\"count\":1}]}]}\n"
    "{\"kind\":\"pod\",\"name\":\"g2\",\"at\":2,\"cpu\":\"8\",\"memory\":\"1Gi\",\"claims\":[{\"requests\":[{\"count\":1}]}]}\n";

Test(replay_cpu, fgd_keeps_cpu_for_the_typical_gpu_pods)
{
  sf_replay_trace_t t;
  sf_replay_result_t r;
  load(&t, cpu_trace);
  static const sf_replay_ties_t ties[] = {SF_REPLAY_TIES_PERM, SF_REPLAY_TIES_SCHED,
                                          SF_REPLAY_TIES_FIRST};
  for (size_t k = 0; k < sizeof(ties) / sizeof(ties[0]); k++) {
    for (uint64_t seed = 1; seed <= 4; seed++) {
      run(&t, "fgd", ties[k], seed, &r);
      cr_expect_eq(r.pods_failed, 0, "ties %d seed %llu", (int)ties[k], (unsigned long long)seed);
      cr_expect_float_eq(r.alloc_pct_final, 100.0, 1e-9);
      sf_replay_result_dispose(&r);
    }
  }
  run(&t, "binpack", SF_REPLAY_TIES_FIRST, 1, &r);
  cr_expect_eq(r.gpu_pods_failed, 1, "binpack does not see that c strands a's GPU");
  sf_replay_result_dispose(&r);
  sf_replay_trace_dispose(&t);
}

/* --cpu-blind: without CPU in the mix, c ties on a and b, and --ties first strands a's GPU. */
Test(replay_cpu, a_cpu_blind_mix_loses_the_cpu_rule)
{
  sf_replay_trace_t t;
  sf_replay_result_t r;
  load(&t, cpu_trace);
  sf_replay_opts_t o = {.policy = "fgd",
                        .device_choice = -1,
                        .seed = 1,
                        .ties = SF_REPLAY_TIES_FIRST,
                        .cpu_blind = true};
  run_opts(&t, &o, &r);
  cr_expect_eq(r.gpu_pods_failed, 1);
  cr_expect_float_eq(r.frag_pct_at_100, 50.0, 1e-9, "the metric stays FGD's: a's GPU lacks CPU");
  sf_replay_result_dispose(&r);
  sf_replay_trace_dispose(&t);
}

/*
 * --cpu-only-pods least-allocated: g0 fills a's only GPU (model X). fgd puts
 * the CPU-only pod c on a, where its CPU strands nothing; kube-scheduler's
 * NodeResourcesLeastAllocated puts it on b, the emptier node, and b then
 * lacks the CPU for g1 (model Y, 12 cores).
 */
static const char *const spread_trace =
    "{\"kind\":\"node\",\"name\":\"a\",\"cpu\":\"16\",\"memory\":\"64Gi\",\"gpus\":1,\"model\":\"X\",\"gpu_memory\":\"16Gi\"}\n"
    "{\"kind\":\"node\",\"name\":\"b\",\"cpu\":\"16\",\"memory\":\"64Gi\",\"gpus\":1,\"model\":\"Y\",\"gpu_memory\":\"16Gi\"}\n"
    "{\"kind\":\"pod\",\"name\":\"g0\",\"at\":0,\"cpu\":\"4\",\"memory\":\"1Gi\",\"claims\":[{\"requests\":[{\"count\":1,\"models\":[\"X\"]}]}]}\n"
    "{\"kind\":\"pod\",\"name\":\"c\",\"at\":1,\"cpu\":\"8\",\"memory\":\"1Gi\"}\n"
    "{\"kind\":\"pod\",\"name\":\"g1\",\"at\":2,\"cpu\":\"12\",\"memory\":\"1Gi\",\"claims\":[{\"requests\":[{\"count\":1,\"models\":[\"Y\"]}]}]}\n";

Test(replay_cpu, least_allocated_spreads_cpu_only_pods)
{
  sf_replay_trace_t t;
  sf_replay_result_t r;
  load(&t, spread_trace);
  for (uint64_t seed = 1; seed <= 4; seed++) {
    sf_replay_opts_t o = {.policy = "fgd", .device_choice = -1, .seed = seed};
    run_opts(&t, &o, &r);
    cr_expect_eq(r.pods_failed, 0, "fgd, seed %llu", (unsigned long long)seed);
    sf_replay_result_dispose(&r);
    o.cpu_only_least_allocated = true;
    run_opts(&t, &o, &r);
    cr_expect_eq(r.gpu_pods_failed, 1, "least-allocated, seed %llu", (unsigned long long)seed);
    cr_expect_float_eq(r.alloc_pct_final, 50.0, 1e-9);
    sf_replay_result_dispose(&r);
  }
  sf_replay_trace_dispose(&t);
}

/* The least-allocated keys bypass the verdict cache (memory is not in a shape): same result without it. */
Test(replay_cpu, live_cpu_modes_replay_the_same_without_the_cache)
{
  sf_replay_trace_t t;
  sf_test_load_bundled(&t);
  static const char *const pol[] = {"fgd", "fragmentation"};
  for (size_t k = 0; k < 2; k++) {
    sf_replay_result_t r[2];
    for (int nc = 0; nc < 2; nc++) {
      sf_replay_opts_t o = {.policy = pol[k],
                            .device_choice = -1,
                            .seed = 7,
                            .tune = 1.3,
                            .no_cache = nc == 1,
                            .cpu_blind = true,
                            .cpu_only_least_allocated = true};
      run_opts(&t, &o, &r[nc]);
    }
    cr_expect_eq(r[0].pods_failed, r[1].pods_failed, "%s", pol[k]);
    cr_expect(r[0].alloc_pct_final == r[1].alloc_pct_final, "%s: %.3f vs %.3f", pol[k],
              r[0].alloc_pct_final, r[1].alloc_pct_final);
    sf_replay_result_dispose(&r[0]);
    sf_replay_result_dispose(&r[1]);
  }
  sf_replay_trace_dispose(&t);
}
