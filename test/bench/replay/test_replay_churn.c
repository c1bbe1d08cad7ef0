/*
 * The churn replay (replay_churn*.c): the pending queue and its backoff,
 * lifetimes and the load arithmetic on hand-computed traces, determinism
 * for a seed, and the kube-default baseline's node and device choices.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "slicefit/replay_churn.h"

static void load_native(sf_replay_trace_t *t, const char *text)
{
  char path[] = "/tmp/sf-replay-churn-XXXXXX";
  char err[SF_REPLAY_ERR_MAX] = "";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  cr_assert(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
  close(fd);
  sf_replay_trace_init(t);
  cr_assert_eq(sf_replay_load_native(t, path, err, sizeof err), 0, "%s", err);
  unlink(path);
}

static void load_csv(sf_replay_trace_t *t, const char *nodes, const char *pods)
{
  char err[SF_REPLAY_ERR_MAX] = "";
  sf_replay_trace_init(t);
  FILE *f = fmemopen((void *)(uintptr_t)nodes, strlen(nodes), "r");
  cr_assert_eq(sf_replay_parse_nodes_csv(t, f, "nodes", err, sizeof err), 0, "%s", err);
  fclose(f);
  f = fmemopen((void *)(uintptr_t)pods, strlen(pods), "r");
  cr_assert_eq(sf_replay_parse_pods_csv(t, f, "pods", err, sizeof err), 0, "%s", err);
  fclose(f);
}

static void churn(const sf_replay_trace_t *t, const char *policy, double load, uint64_t seed,
                  double duration, sf_churn_result_t *res)
{
  double *life = calloc(t->npods + 1, sizeof(*life));
  size_t counts[3];
  char err[SF_REPLAY_ERR_MAX] = "";
  cr_assert_eq(sf_churn_lifetimes(t, NULL, 604800, seed, life, counts, err, sizeof err), 0, "%s",
               err);
  sf_churn_opts_t o = {.run = {.policy = policy, .device_choice = -1, .seed = seed},
                       .load = load,
                       .duration_s = duration,
                       .slo_s = 60,
                       .life = life};
  cr_assert_eq(sf_churn_run(t, &o, res, err, sizeof err), 0, "%s", err);
  free(life);
}

Test(replay_churn, backoff_doubles_from_one_second_to_ten)
{
  cr_expect_eq(sf_churn_backoff(1), 1.0);
  cr_expect_eq(sf_churn_backoff(2), 2.0);
  cr_expect_eq(sf_churn_backoff(3), 4.0);
  cr_expect_eq(sf_churn_backoff(4), 8.0);
  cr_expect_eq(sf_churn_backoff(5), 10.0);
  cr_expect_eq(sf_churn_backoff(1000), 10.0);
}

/*
 * One GPU. a holds it from 0 to 12. b arrives at 10 and fits nowhere: it
 * waits (attempt 1 at 10). The CPU-only pod c leaves at 11: a departure
 * wakes b, its 1 s backoff since 10 has passed, it is tried and fails
 * again (attempt 2 at 11, backoff now 2 s). a leaves at 12 and wakes b,
 * but b's backoff runs to 13: it is placed at 13, after 3 s of waiting.
 */
Test(replay_churn, a_waiting_pod_is_placed_when_a_departure_frees_room_after_its_backoff)
{
  sf_replay_trace_t t;
  load_native(&t, "{\"kind\":\"node\",\"name\":\"n\",\"cpu\":\"8\",\"memory\":\"32Gi\",\"gpus\":1,"
                  "\"model\":\"L4\",\"gpu_memory\":\"10Gi\"}\n"
                  "{\"kind\":\"pod\",\"name\":\"c\",\"at\":0,\"until\":11,\"cpu\":\"1\"}\n"
                  "{\"kind\":\"pod\",\"name\":\"a\",\"at\":0,\"until\":12,"
                  "\"claims\":[{\"requests\":[{\"count\":1}]}]}\n"
                  "{\"kind\":\"pod\",\"name\":\"b\",\"at\":10,\"until\":1000,"
                  "\"claims\":[{\"requests\":[{\"count\":1}]}]}\n");
  sf_churn_result_t r;
  churn(&t, "bestfit", 0, 42, 400, &r);
  cr_expect_eq(r.warmup_s, 0.0);
  cr_expect_eq(r.arrivals, 3);
  cr_expect_eq(r.attempts, 5, "c 1, a 1, b 3 (at 10, 11 and 13): %zu", r.attempts);
  cr_expect_eq(r.pending_s[SF_CHURN_WHOLE].n, 2);
  cr_expect_float_eq(r.pending_s[SF_CHURN_WHOLE].p99, 3.0, 1e-9);
  cr_expect_float_eq(r.pending_s[SF_CHURN_WHOLE].p50, 0.0, 1e-9);
  cr_expect_float_eq(r.pending_s[SF_CHURN_WHOLE].mean, 1.5, 1e-9);
  cr_expect_eq(r.never_placed, 0);
  cr_expect_eq(r.departed, 2, "c and a left");
  /* The GPU was free for 1 s (12 to 13) while b, which fits in one GPU, waited. */
  cr_expect_float_eq(r.idle_while_waiting_gpu_h, 1.0 / 3600.0, 1e-9);
  sf_churn_result_dispose(&r);
  sf_replay_trace_dispose(&t);
}

/* Without a departure the waiting pod stays: never placed, its wait is the rest of the run. */
Test(replay_churn, a_pod_that_never_fits_is_never_placed)
{
  sf_replay_trace_t t;
  load_native(&t, "{\"kind\":\"node\",\"name\":\"n\",\"cpu\":\"8\",\"memory\":\"32Gi\",\"gpus\":1,"
                  "\"model\":\"L4\",\"gpu_memory\":\"10Gi\"}\n"
                  "{\"kind\":\"pod\",\"name\":\"a\",\"at\":0,"
                  "\"claims\":[{\"requests\":[{\"count\":1}]}]}\n"
                  "{\"kind\":\"pod\",\"name\":\"b\",\"at\":10,\"until\":20,"
                  "\"claims\":[{\"requests\":[{\"count\":1}]}]}\n");
  sf_churn_result_t r;
  churn(&t, "fgd", 0, 42, 400, &r);
  cr_expect_eq(r.never_placed, 1);
  cr_expect_eq(r.attempts, 2, "no departure, no retry: %zu", r.attempts);
  cr_expect_float_eq(r.pending_s[SF_CHURN_WHOLE].p99, 390.0, 1e-9);
  sf_churn_result_dispose(&r);
  sf_replay_trace_dispose(&t);
}

static const char nodes4[] = "sn,cpu_milli,memory_mib,gpu,model\n"
                             "n1,64000,262144,4,T4\n";
/* Lifetimes 100, 300, 0 (counted as 1 s) and 10^6 (capped at the 1000 s horizon). */
static const char pods4[] = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,creation_time,"
                            "deletion_time\n"
                            "p1,8000,1024,1,1000,,0,100\n"
                            "p2,16000,2048,2,1000,,50,350\n"
                            "p3,4000,1024,1,500,,7,7\n"
                            "p4,32000,4096,0,0,,0,1000000\n";

Test(replay_churn, lifetimes_and_load_arithmetic_by_hand)
{
  sf_replay_trace_t t;
  load_csv(&t, nodes4, pods4);
  double life[4];
  size_t counts[3];
  char err[SF_REPLAY_ERR_MAX] = "";
  cr_assert_eq(sf_churn_lifetimes(&t, NULL, 1000, 1, life, counts, err, sizeof err), 0, "%s", err);
  cr_expect_eq(life[0], 100.0);
  cr_expect_eq(life[1], 300.0);
  cr_expect_eq(life[2], 1.0);
  cr_expect_eq(life[3], 1000.0);
  cr_expect_eq(counts[0], 4);
  sf_churn_load_t l;
  sf_churn_load(&t, life, &l);
  /* GPUs x life: (1 x 100 + 2 x 300 + 0.5 x 1 + 0) / 4 = 175.125 */
  cr_expect_float_eq(l.gpu_s, 175.125, 1e-9);
  /* cores x life: (8 x 100 + 16 x 300 + 4 x 1 + 32 x 1000) / 4 = 9401 */
  cr_expect_float_eq(l.cpu_s, 9401.0, 1e-9);
  cr_expect_float_eq(l.gpus, 4.0, 1e-12);
  cr_expect_float_eq(l.cpus, 64.0, 1e-12);
  /* rate at R = 1: 4 GPUs / 175.125 GPU-s per pod; CPU bound: 64 x 175.125 / (4 x 9401) */
  cr_expect_float_eq(sf_churn_rate(&l, 1.0), 4.0 / 175.125, 1e-12);
  cr_expect_float_eq(l.cpu_bound, 64.0 * 175.125 / (4.0 * 9401.0), 1e-12);
  cr_expect_float_eq(sf_churn_bound(&l), l.cpu_bound, 1e-12);
  sf_replay_trace_dispose(&t);
}

/* A list without times borrows by name, else draws among the same shape (the only one: 300 s). */
Test(replay_churn, a_list_without_times_borrows_lifetimes)
{
  sf_replay_trace_t ref, t;
  load_csv(&ref, nodes4, pods4);
  load_csv(&t, nodes4,
           "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np1,8000,1024,1,1000\nzz,1,1,2,1000\n");
  double life[2];
  size_t counts[3];
  char err[SF_REPLAY_ERR_MAX] = "";
  cr_assert_eq(sf_churn_lifetimes(&t, &ref, 1000, 7, life, counts, err, sizeof err), 0, "%s", err);
  cr_expect_eq(life[0], 100.0);
  cr_expect_eq(life[1], 300.0);
  cr_expect_eq(counts[1], 1);
  cr_expect_eq(counts[2], 1);
  cr_expect_neq(sf_churn_lifetimes(&t, NULL, 1000, 7, life, counts, err, sizeof err), 0);
  cr_expect(strstr(err, "--lifetimes") != NULL, "%s", err);
  sf_replay_trace_dispose(&ref);
  sf_replay_trace_dispose(&t);
}

Test(replay_churn, deletion_before_creation_is_an_error)
{
  sf_replay_trace_t t;
  char err[SF_REPLAY_ERR_MAX] = "";
  const char pods[] = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time\n"
                      "p1,1000,1024,1,1000,50,49\n";
  sf_replay_trace_init(&t);
  FILE *f = fmemopen((void *)(uintptr_t)pods, strlen(pods), "r");
  cr_expect_neq(sf_replay_parse_pods_csv(&t, f, "pods", err, sizeof err), 0);
  fclose(f);
  cr_expect(strstr(err, "pods:2:") != NULL && strstr(err, "deletion_time") != NULL, "%s", err);
  sf_replay_trace_dispose(&t);
}

static void same(const sf_churn_result_t *a, const sf_churn_result_t *b)
{
  cr_expect_eq(a->arrivals, b->arrivals);
  cr_expect_eq(a->attempts, b->attempts);
  cr_expect_eq(a->alloc_time_avg_pct, b->alloc_time_avg_pct);
  for (int k = 0; k < SF_CHURN_NCLASS; k++)
    cr_expect(a->pending_s[k].n == b->pending_s[k].n &&
              (a->pending_s[k].p99 == b->pending_s[k].p99 ||
               (isnan(a->pending_s[k].p99) && isnan(b->pending_s[k].p99))));
  cr_expect_eq(memcmp(a->alloc_pct, b->alloc_pct, sizeof(a->alloc_pct)), 0);
  cr_expect_eq(memcmp(a->queue, b->queue, sizeof(a->queue)), 0);
}

Test(replay_churn, a_seed_gives_the_same_run_and_another_seed_another)
{
  sf_replay_trace_t t;
  load_csv(&t, "sn,cpu_milli,memory_mib,gpu,model\nn1,64000,262144,4,T4\nn2,64000,262144,4,T4\n",
           "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,creation_time,deletion_time\n"
           "p1,8000,1024,1,1000,,0,100\n"
           "p2,16000,2048,2,1000,,50,350\n"
           "p3,4000,1024,1,500,,7,60\n");
  sf_churn_result_t a, b, c;
  churn(&t, "fragmentation", 0.9, 42, 3600, &a);
  churn(&t, "fragmentation", 0.9, 42, 3600, &b);
  churn(&t, "fragmentation", 0.9, 43, 3600, &c);
  cr_expect_gt(a.arrivals, 20);
  cr_expect_gt(a.alloc_time_avg_pct, 50.0, "%f", a.alloc_time_avg_pct);
  same(&a, &b);
  cr_expect(a.arrivals != c.arrivals || a.alloc_time_avg_pct != c.alloc_time_avg_pct);
  sf_churn_result_dispose(&a);
  sf_churn_result_dispose(&b);
  sf_churn_result_dispose(&c);
  sf_replay_trace_dispose(&t);
}

/*
 * kube-default spreads: two equal nodes; a (one whole GPU) goes to either;
 * the share b goes to the other node (LeastAllocated: emptier), so the
 * island pod c (2 GPUs) finds no node with two free GPUs. bestfit puts b
 * beside a and c fits.
 */
Test(replay_churn, kube_default_spreads_over_nodes)
{
  sf_replay_trace_t t;
  load_native(&t, "{\"kind\":\"node\",\"name\":\"x\",\"cpu\":\"8\",\"memory\":\"32Gi\",\"gpus\":2,"
                  "\"model\":\"L4\",\"gpu_memory\":\"10Gi\"}\n"
                  "{\"kind\":\"node\",\"name\":\"y\",\"cpu\":\"8\",\"memory\":\"32Gi\",\"gpus\":2,"
                  "\"model\":\"L4\",\"gpu_memory\":\"10Gi\"}\n"
                  "{\"kind\":\"pod\",\"name\":\"a\",\"at\":0,\"cpu\":\"1\",\"memory\":\"4Gi\","
                  "\"claims\":[{\"requests\":[{\"count\":1}]}]}\n"
                  "{\"kind\":\"pod\",\"name\":\"b\",\"at\":1,\"cpu\":\"1\",\"memory\":\"4Gi\","
                  "\"claims\":[{\"requests\":[{\"count\":1,\"memory\":\"5Gi\"}]}]}\n"
                  "{\"kind\":\"pod\",\"name\":\"c\",\"at\":2,\"cpu\":\"1\",\"memory\":\"4Gi\","
                  "\"claims\":[{\"requests\":[{\"count\":2}]}]}\n");
  for (uint64_t seed = 1; seed <= 4; seed++) {
    sf_churn_result_t k, b;
    churn(&t, "kube-default", 0, seed, 400, &k);
    churn(&t, "bestfit", 0, seed, 400, &b);
    cr_expect_eq(k.never_placed, 1, "seed %llu", (unsigned long long)seed);
    cr_expect_eq(b.never_placed, 0, "seed %llu", (unsigned long long)seed);
    sf_churn_result_dispose(&k);
    sf_churn_result_dispose(&b);
  }
  sf_replay_trace_dispose(&t);
}

/*
 * kube-default takes the first device that fits: 5Gi on gpu-0, 6Gi on
 * gpu-1 (gpu-0 has 5 left), 4Gi on gpu-0 (first fit; best fit takes
 * gpu-1's 4), so the last 5Gi finds 1 and 4 free and waits. With the
 * packer's device choice it finds gpu-0's 5.
 */
Test(replay_churn, kube_default_takes_the_first_device_that_fits)
{
  sf_replay_trace_t t;
  load_native(&t, "{\"kind\":\"node\",\"name\":\"x\",\"cpu\":\"8\",\"memory\":\"32Gi\",\"gpus\":2,"
                  "\"model\":\"L4\",\"gpu_memory\":\"10Gi\"}\n"
                  "{\"kind\":\"pod\",\"name\":\"p1\",\"at\":0,"
                  "\"claims\":[{\"requests\":[{\"count\":1,\"memory\":\"5Gi\"}]}]}\n"
                  "{\"kind\":\"pod\",\"name\":\"p2\",\"at\":1,"
                  "\"claims\":[{\"requests\":[{\"count\":1,\"memory\":\"6Gi\"}]}]}\n"
                  "{\"kind\":\"pod\",\"name\":\"p3\",\"at\":2,"
                  "\"claims\":[{\"requests\":[{\"count\":1,\"memory\":\"4Gi\"}]}]}\n"
                  "{\"kind\":\"pod\",\"name\":\"p4\",\"at\":3,"
                  "\"claims\":[{\"requests\":[{\"count\":1,\"memory\":\"5Gi\"}]}]}\n");
  sf_churn_result_t k, b;
  churn(&t, "kube-default", 0, 42, 400, &k);
  churn(&t, "bestfit", 0, 42, 400, &b);
  cr_expect_eq(k.never_placed, 1);
  cr_expect_eq(b.never_placed, 0);
  sf_churn_result_dispose(&k);
  sf_churn_result_dispose(&b);
  sf_replay_trace_dispose(&t);
}
