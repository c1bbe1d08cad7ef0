/*
 * The churn replay's defragmentation (replay_churn_defrag.c): a whole-GPU
 * pod waiting behind two half-used GPUs gets one eviction, the evicted pod
 * finds room again at once, and without --defrag it waits for a departure.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "slicefit/replay_churn.h"
#include "../../../bench/replay/replay_churn_int.h"

/*
 * Two nodes of one 10Gi GPU. a and x (5Gi each) fill n1's GPU, b and y
 * n2's; x and y leave at 5, so each GPU is half used by a pod running to
 * 300. The whole-GPU pod w arrives at 10 and fits nowhere. The CPU-only
 * pod c leaves at 50: the queue's pass then asks for a plan (w has waited
 * 40 s, past --defrag-after 30).
 */
static const char trace[] =
    "{\"kind\":\"node\",\"name\":\"n1\",\"cpu\":\"8\",\"memory\":\"32Gi\",\"gpus\":1,"
    "\"model\":\"L4\",\"gpu_memory\":\"10Gi\"}\n"
    "{\"kind\":\"node\",\"name\":\"n2\",\"cpu\":\"8\",\"memory\":\"32Gi\",\"gpus\":1,"
    "\"model\":\"L4\",\"gpu_memory\":\"10Gi\"}\n"
    "{\"kind\":\"pod\",\"name\":\"c\",\"at\":0,\"until\":50,\"cpu\":\"1\"}\n"
    "{\"kind\":\"pod\",\"name\":\"a\",\"at\":0,\"until\":300,"
    "\"claims\":[{\"requests\":[{\"count\":1,\"memory\":\"5Gi\"}]}]}\n"
    "{\"kind\":\"pod\",\"name\":\"x\",\"at\":0,\"until\":5,"
    "\"claims\":[{\"requests\":[{\"count\":1,\"memory\":\"5Gi\"}]}]}\n"
    "{\"kind\":\"pod\",\"name\":\"b\",\"at\":1,\"until\":300,"
    "\"claims\":[{\"requests\":[{\"count\":1,\"memory\":\"5Gi\"}]}]}\n"
    "{\"kind\":\"pod\",\"name\":\"y\",\"at\":1,\"until\":5,"
    "\"claims\":[{\"requests\":[{\"count\":1,\"memory\":\"5Gi\"}]}]}\n"
    "{\"kind\":\"pod\",\"name\":\"w\",\"at\":10,\"until\":2000,"
    "\"claims\":[{\"requests\":[{\"count\":1}]}]}\n";

static void run(bool defrag, double restart_s, sf_churn_result_t *res)
{
  char path[] = "/tmp/sf-replay-defrag-XXXXXX";
  char err[SF_REPLAY_ERR_MAX] = "";
  sf_replay_trace_t t;
  size_t counts[3];
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  cr_assert(write(fd, trace, strlen(trace)) == (ssize_t)strlen(trace));
  close(fd);
  sf_replay_trace_init(&t);
  cr_assert_eq(sf_replay_load_native(&t, path, err, sizeof err), 0, "%s", err);
  unlink(path);
  double *life = calloc(t.npods + 1, sizeof(*life));
  cr_assert_eq(sf_churn_lifetimes(&t, NULL, 604800, 42, life, counts, err, sizeof err), 0, "%s", err);
  sf_churn_defrag_t cfg = {30};
  sf_churn_opts_t o = {.run = {.policy = "bestfit", .device_choice = -1, .seed = 42},
                       .duration_s = 1000,
                       .slo_s = 60,
                       .life = life,
                       .evict = defrag ? sf__churn_defrag : NULL,
                       .evict_ctx = &cfg,
                       .restart_s = restart_s};
  cr_assert_eq(sf_churn_run(&t, &o, res, err, sizeof err), 0, "%s", err);
  free(life);
  sf_replay_trace_dispose(&t);
}

Test(replay_defrag, one_eviction_lets_the_whole_gpu_pod_in_and_the_evicted_pod_back)
{
  sf_churn_result_t with, without;
  run(false, 30, &without);
  run(true, 30, &with);
  /* Without: w waits for a and b to leave at 300. */
  cr_assert_eq(without.evicted, 0);
  cr_assert_float_eq(without.pending_s[SF_CHURN_WHOLE].p99, 290.0, 1e-9);
  /* With: past 30 s of waiting, b (the younger) is evicted, w takes n2 and b goes to n1. */
  cr_assert_eq(with.evicted, 1);
  cr_assert_float_eq(with.pending_s[SF_CHURN_WHOLE].p99, 40.0, 1e-9);
  cr_assert_eq(with.never_placed, 0);
  /* b placed again at once: its wait stays the 0 s it had. */
  cr_assert_float_eq(with.pending_s[SF_CHURN_SHARE].p99, 0.0, 1e-9);
  cr_assert_eq(with.placed, without.placed + 1, "b placed twice: %zu vs %zu", with.placed,
               without.placed);
  sf_churn_result_dispose(&with);
  sf_churn_result_dispose(&without);
}

/* The evicted pod runs its remaining lifetime plus the restart cost: it leaves later. */
Test(replay_defrag, the_restart_cost_delays_the_evicted_pods_departure)
{
  sf_churn_result_t quick, slow;
  run(true, 0, &quick);
  run(true, 800, &slow);
  cr_assert_eq(quick.evicted, 1);
  cr_assert_eq(slow.evicted, 1);
  /* b leaves at 300 with no restart cost, past the run's end (1000) with 800 s. */
  cr_assert_eq(slow.departed + 1, quick.departed, "%zu vs %zu", slow.departed, quick.departed);
  sf_churn_result_dispose(&quick);
  sf_churn_result_dispose(&slow);
}

/* Runs bin/slicefit-replay with args; its exit status, stderr into err. */
static int replay_cli(const char *args, char *err, size_t len)
{
  const char *top = getenv("SLICEFIT_TOP"), *bin = getenv("SLICEFIT_BIN");
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "cd '%s' && '%s/slicefit-replay' %s 2>&1 >/dev/null", top ? top : ".",
           bin && *bin ? bin : "bin", args);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p);
  size_t n = fread(err, 1, len - 1, p);
  err[n] = '\0';
  int st = pclose(p);
  cr_assert(WIFEXITED(st), "%s", cmd);
  return WEXITSTATUS(st);
}

Test(replay_defrag, its_flags_go_with_churn_and_take_seconds)
{
  static const struct {
    const char *args, *want;
  } cases[] = {
      {"--defrag", "--defrag goes with --churn"},
      {"--restart-cost 10", "--restart-cost goes with --churn"},
      {"--churn --defrag --defrag-after -1", "--defrag-after: expected 0 to 1e9 seconds"},
      {"--churn --defrag --restart-cost soon", "--restart-cost: expected 0 to 1e9 seconds"},
  };
  char err[4096];
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    cr_assert_eq(replay_cli(cases[i].args, err, sizeof err), 2, "%s: %s", cases[i].args, err);
    cr_assert(strstr(err, cases[i].want) != NULL, "%s: %s", cases[i].args, err);
  }
}
