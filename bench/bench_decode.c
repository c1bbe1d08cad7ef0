/*
 * bench_decode: decoding a 128-device ResourceSlice, the most devices one
 * slice may hold (the target: under 200 us). A benchmark, never a
 * test: it prints figures and exits 0.
 *
 * The slice repeats the device shape of test/fixtures/nvidia-slices.json
 * (an A100 as the NVIDIA driver publishes it: 11 attributes, 1 capacity)
 * 128 times with distinct names. Rows:
 *   decode   sf_decode of the parsed json_t and sf_object_free
 *   parse    json_loads of the slice's text (jansson's share, for scale)
 *   both     json_loads + sf_decode + free, what a watch event costs
 * Each row runs RUNS rounds of REPS operations and prints the median,
 * p10 and p90 of the per-operation wall time over the rounds, and the
 * median CPU time (less sensitive to a shared, oversubscribed machine).
 *
 * usage: bench_decode [REPS [RUNS]]   (defaults 500 and 9)
 *   callgrind: valgrind --tool=callgrind build/release/bench/bench_decode 50 1
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <jansson.h>
#include "slicefit/decode.h"

#define NDEV 128

static double now_us(clockid_t id)
{
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* The 128-device slice built from the fixture's first device; NULL when the fixture is missing. */
static json_t *big_slice(void)
{
  const char *top = getenv("SLICEFIT_TOP");
  char path[1024];
  snprintf(path, sizeof path, "%s/test/fixtures/nvidia-slices.json", top ? top : ".");
  json_error_t e;
  json_t *l = json_load_file(path, 0, &e);
  if (!l) {
    fprintf(stderr, "bench_decode: %s: %s\n", path, e.text);
    return NULL;
  }
  json_t *s = json_deep_copy(json_array_get(json_object_get(l, "items"), 0));
  json_t *devs = json_object_get(json_object_get(s, "spec"), "devices");
  json_t *shape = json_deep_copy(json_array_get(devs, 0));
  json_array_clear(devs);
  for (int i = 0; i < NDEV; i++) {
    char name[32];
    json_t *d = json_deep_copy(shape);
    snprintf(name, sizeof name, "gpu-%d", i);
    json_object_set_new(d, "name", json_string(name));
    json_array_append_new(devs, d);
  }
  json_decref(shape);
  json_decref(l);
  return s;
}

static int cmp(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

typedef enum { ROW_DECODE, ROW_PARSE, ROW_BOTH } row_t;

/* One round: reps operations of `row`; returns wall us per operation, *cpu the CPU us. */
static double round_us(row_t row, const json_t *s, const char *text, int reps, double *cpu)
{
  double t0 = now_us(CLOCK_MONOTONIC), c0 = now_us(CLOCK_PROCESS_CPUTIME_ID);
  for (int i = 0; i < reps; i++) {
    json_t *j = row == ROW_DECODE ? (json_t *)(uintptr_t)s : json_loads(text, 0, NULL);
    sf_object_t *o = NULL;
    if (row != ROW_PARSE && sf_decode(j, SF_OBJ_RESOURCE_SLICE, &o, NULL, 0) != 0)
      abort();
    sf_object_free(o);
    if (row != ROW_DECODE)
      json_decref(j);
  }
  *cpu = (now_us(CLOCK_PROCESS_CPUTIME_ID) - c0) / reps;
  return (now_us(CLOCK_MONOTONIC) - t0) / reps;
}

int main(int argc, char **argv)
{
  int reps = argc > 1 ? atoi(argv[1]) : 500, runs = argc > 2 ? atoi(argv[2]) : 9;
  if (reps < 1 || runs < 1 || runs > 101) {
    fprintf(stderr, "usage: bench_decode [REPS [RUNS<=101]]\n");
    return 2;
  }
  json_t *s = big_slice();
  if (!s)
    return 0;
  char *text = json_dumps(s, JSON_COMPACT);
  static const char *const names[] = {"decode", "parse", "both"};
  printf("slice: %d devices, %zu bytes of JSON; %d runs of %d\n", NDEV, strlen(text), runs, reps);
  printf("%-7s %10s %9s %9s %11s   %s\n", "row", "median_us", "p10_us", "p90_us", "cpu_med_us",
         "target");
  for (int r = 0; r < 3; r++) {
    double t[101], c[101];
    round_us((row_t)r, s, text, reps / 10 + 1, &c[0]); /* warm-up */
    for (int k = 0; k < runs; k++)
      t[k] = round_us((row_t)r, s, text, reps, &c[k]);
    qsort(t, (size_t)runs, sizeof t[0], cmp);
    qsort(c, (size_t)runs, sizeof c[0], cmp);
    printf("%-7s %10.1f %9.1f %9.1f %11.1f   %s\n", names[r], t[runs / 2], t[runs / 10],
           t[runs - 1 - runs / 10], c[runs / 2], r == ROW_DECODE ? "< 200 us" : "");
  }
  free(text);
  json_decref(s);
  return 0;
}
