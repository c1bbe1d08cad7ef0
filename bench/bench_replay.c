/*
 * bench_replay: wall time of whole replays, against the speed target (one
 * default-trace replay at --tune 1.3 with the fgd policy under 2 s on one
 * core). A benchmark, never a test: it prints figures and exits 0 whatever
 * they are.
 *
 * usage: bench_replay [NODES.csv PODS.csv [RUNS [POLICY [packer|first-fit]]]]
 *   With no files it replays the bundled synthetic trace (bench/data/, found
 *   from $SLICEFIT_TOP or the current folder). RUNS (default 5) replays of
 *   seed 42 at --tune 1.3; prints the median, min and max wall time, the
 *   node evaluations the verdict cache and the drift bound left to the core,
 *   the FIT verdicts the bound kept, and the core's time per node. Pin it to one core: taskset -c 0 build/release/bench/bench_replay ...
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "slicefit/replay.h"

#define MAX_RUNS 101

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int load(int argc, char **argv, sf_replay_trace_t *t)
{
  char np[1024], pp[1024];
  const char *top = getenv("SLICEFIT_TOP");
  char err[SF_REPLAY_ERR_MAX] = "";
  if (argc >= 3) {
    snprintf(np, sizeof(np), "%s", argv[1]);
    snprintf(pp, sizeof(pp), "%s", argv[2]);
  } else {
    snprintf(np, sizeof(np), "%s/bench/data/synthetic-nodes.csv", top ? top : ".");
    snprintf(pp, sizeof(pp), "%s/bench/data/synthetic-pods.csv", top ? top : ".");
  }
  if (sf_replay_load_csv(t, np, pp, err, sizeof err) != 0) {
    fprintf(stderr, "bench_replay: %s\n", err);
    return 1;
  }
  printf("trace: %s (%zu nodes, %zu pods)\n", t->source ? t->source : pp, t->nnodes, t->npods);
  return 0;
}

int main(int argc, char **argv)
{
  sf_replay_trace_t t;
  int runs = argc >= 4 ? atoi(argv[3]) : 5;
  const char *policy = argc >= 5 ? argv[4] : "fgd";
  int choice = argc >= 6 ? (strcmp(argv[5], "packer") == 0 ? SF_CHOICE_PACKER : SF_CHOICE_FIRST_FIT)
                         : -1;
  double wall[MAX_RUNS];
  sf_replay_result_t last = {0};
  if (runs < 1 || runs > MAX_RUNS)
    runs = 5;
  sf_replay_trace_init(&t);
  if (load(argc, argv, &t) != 0)
    return 0;
  for (int i = 0; i < runs; i++) {
    sf_replay_opts_t o = {.policy = policy, .device_choice = choice, .seed = 42, .tune = 1.3};
    char err[SF_REPLAY_ERR_MAX] = "";
    sf_replay_result_dispose(&last);
    double t0 = now_s();
    if (sf_replay_run(&t, &o, &last, err, sizeof err) != 0) {
      fprintf(stderr, "bench_replay: %s\n", err);
      break;
    }
    wall[i] = now_s() - t0;
  }
  double sorted[MAX_RUNS];
  memcpy(sorted, wall, (size_t)runs * sizeof(*wall));
  double med = sf_replay_median(sorted, (size_t)runs);
  double lo = INFINITY, hi = 0;
  for (int i = 0; i < runs; i++) {
    lo = wall[i] < lo ? wall[i] : lo;
    hi = wall[i] > hi ? wall[i] : hi;
  }
  printf("%-10s runs %d  wall_s median %.3f  min %.3f  max %.3f  pods %zu  alloc@100 %.2f%%  "
         "decision_us p50 %.1f p99 %.1f  node_eval_us %.3f  nodes evaluated %zu  verdicts kept "
         "%zu\n",
         policy, runs, med, lo, hi, last.pods_arrived, last.alloc_pct_at[4], last.decision_us_p50,
         last.decision_us_p99, last.node_eval_us, last.nodes_evaluated, last.verdicts_kept);
  sf_replay_result_dispose(&last);
  sf_replay_trace_dispose(&t);
  return 0;
}
