/*
 * The native JSON-lines format: departures free their allocation, NVLink
 * islands constrain multi-GPU claims, and bad lines name file, line, column.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "slicefit/replay.h"
#include "bundled.h"

static char path[64];

static int load(sf_replay_trace_t *t, const char *text, char *err, size_t errlen)
{
  snprintf(path, sizeof(path), "/tmp/sf-replay-n-XXXXXX");
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  cr_assert(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
  close(fd);
  sf_replay_trace_init(t);
  int rc = sf_replay_load_native(t, path, err, errlen);
  unlink(path);
  return rc;
}

static void run(const sf_replay_trace_t *t, const char *policy, sf_replay_result_t *r)
{
  char err[SF_REPLAY_ERR_MAX] = "";
  sf_replay_opts_t o = {.policy = policy, .device_choice = -1, .seed = 1};
  cr_assert_eq(sf_replay_run(t, &o, r, err, sizeof err), 0, "%s", err);
}

Test(replay_native, departures_free_capacity_at_their_time)
{
  sf_replay_trace_t t;
  sf_replay_result_t r;
  char err[SF_REPLAY_ERR_MAX] = "";
  cr_assert_eq(
      load(&t,
           "# one GPU of 80Gi\n"
           "{\"kind\":\"node\",\"name\":\"n\",\"cpu\":\"8\",\"memory\":\"64Gi\",\"gpus\":1,"
           "\"model\":\"H100\",\"gpu_memory\":\"80Gi\"}\n"
           "{\"kind\":\"pod\",\"name\":\"a\",\"at\":0,\"until\":10,\"cpu\":\"1\","
           "\"claims\":[{\"requests\":[{\"count\":1}]}]}\n"
           "{\"kind\":\"pod\",\"name\":\"c\",\"at\":5,\"claims\":[{\"requests\":[{\"memory\":\"10Gi\"}]}]}\n"
           "{\"kind\":\"pod\",\"name\":\"b\",\"at\":10,\"until\":20,"
           "\"claims\":[{\"requests\":[{\"memory\":\"40Gi\",\"models\":[\"H100\"]}]}]}\n"
           "{\"kind\":\"pod\",\"name\":\"d\",\"at\":11,\"claims\":[{\"requests\":[{\"memory\":\"40Gi\"}]}]}\n"
           "{\"kind\":\"pod\",\"name\":\"e\",\"at\":12,\"claims\":[{\"requests\":[{\"memory\":\"1Gi\"}]}]}\n",
           err, sizeof err),
      0, "%s", err);
  cr_assert(t.native);
  cr_expect_eq(t.pods[2].load_milli, 500, "40Gi of an 80Gi GPU is half a GPU");
  run(&t, "fgd", &r);
  /* a holds the GPU; c fails; a leaves at 10 before b arrives at 10; b and d share it; e does not fit. */
  cr_expect_eq(r.pods_arrived, 5);
  cr_expect_eq(r.pods_failed, 2);
  cr_expect_eq(r.pods_departed, 2, "a and b leave; the failed c never held anything");
  cr_expect_float_eq(r.alloc_pct_final, 50.0, 1e-9, "d alone at the end");
  /* The sliver floor and the free split read one-GPU shares of an Alibaba list: not here. */
  cr_expect(isnan(r.sliver_floor_pct_at_100) && isnan(r.free_starved_pct_at_100) &&
            isnan(r.free_usable_pct_at_100) && isnan(r.free_too_small_pct_at_100));
  sf_replay_result_dispose(&r);
  sf_replay_trace_dispose(&t);
}

Test(replay_native, island_claims_need_one_island)
{
  sf_replay_trace_t t;
  sf_replay_result_t r;
  char err[SF_REPLAY_ERR_MAX] = "";
  const char *node =
      "{\"kind\":\"node\",\"name\":\"n\",\"cpu\":\"64\",\"memory\":\"512Gi\",\"gpus\":8,"
      "\"model\":\"A100\",\"gpu_memory\":\"40Gi\",\"islands\":[4,4]}\n";
  char text[2048];
  /* x takes 3 of one island, y 2 of the other: 3 GPUs stay free but no island has 3. */
  snprintf(
      text, sizeof(text),
      "%s{\"kind\":\"pod\",\"name\":\"x\",\"at\":0,\"claims\":[{\"requests\":[{\"count\":3}],\"island\":true}]}\n"
      "{\"kind\":\"pod\",\"name\":\"y\",\"at\":1,\"claims\":[{\"requests\":[{\"count\":2}],\"island\":true}]}\n"
      "{\"kind\":\"pod\",\"name\":\"z\",\"at\":2,\"claims\":[{\"requests\":[{\"count\":3}],\"island\":true}]}\n",
      node);
  cr_assert_eq(load(&t, text, err, sizeof err), 0, "%s", err);
  cr_assert(t.has_islands);
  run(&t, "fragmentation", &r);
  cr_expect_eq(r.pods_failed, 1, "z needs 3 GPUs in one island");
  sf_replay_result_dispose(&r);
  sf_replay_trace_dispose(&t);
  /* Without the constraint z fits on the 3 free GPUs. */
  snprintf(text, sizeof(text),
           "%s{\"kind\":\"pod\",\"name\":\"x\",\"at\":0,\"claims\":[{\"requests\":[{\"count\":3}],\"island\":true}]}\n"
           "{\"kind\":\"pod\",\"name\":\"y\",\"at\":1,\"claims\":[{\"requests\":[{\"count\":2}],\"island\":true}]}\n"
           "{\"kind\":\"pod\",\"name\":\"z\",\"at\":2,\"claims\":[{\"requests\":[{\"count\":3}]}]}\n",
           node);
  cr_assert_eq(load(&t, text, err, sizeof err), 0, "%s", err);
  run(&t, "fragmentation", &r);
  cr_expect_eq(r.pods_failed, 0);
  sf_replay_result_dispose(&r);
  sf_replay_trace_dispose(&t);
}

static void expect_error(const char *text, const char *want)
{
  sf_replay_trace_t t;
  char err[SF_REPLAY_ERR_MAX] = "";
  cr_expect_neq(load(&t, text, err, sizeof err), 0, "loaded although it should fail with '%s'", want);
  cr_expect(strstr(err, want) != NULL, "error '%s' lacks '%s'", err, want);
  cr_expect_eq(t.npods, 0);
  sf_replay_trace_dispose(&t);
}

Test(replay_native, bad_lines_name_line_and_column)
{
  const char *n = "{\"kind\":\"node\",\"name\":\"n\",\"cpu\":\"8\",\"memory\":\"8Gi\",\"gpus\":1,"
                  "\"model\":\"L4\",\"gpu_memory\":\"24Gi\"}\n";
  char buf[1024];
  expect_error("", "empty file");
  expect_error(n, "at least one node and one pod");
  snprintf(buf, sizeof(buf), "%s{\"kind\":\"pod\",\"name\":\"p\",\"at\":0,}\n", n);
  expect_error(buf, ":2:");
  expect_error(buf, "bad JSON");
  snprintf(buf, sizeof(buf), "%s{\"kind\":\"pod\",\"name\":\"p\",\"at\":0,\"colour\":1}\n", n);
  expect_error(buf, ":2:33: unknown key 'colour' in a pod");
  snprintf(buf, sizeof(buf), "%s{\"kind\":\"pod\",\"name\":\"p\",\"at\":5,\"until\":5}\n", n);
  expect_error(buf, "'until' (5) must be after 'at' (5)");
  snprintf(buf, sizeof(buf), "%s{\"kind\":\"pod\",\"name\":\"p\",\"at\":0,\"memory\":\"lots\"}\n", n);
  expect_error(buf, "'memory': bad quantity 'lots'");
  snprintf(buf, sizeof(buf),
           "%s{\"kind\":\"pod\",\"name\":\"p\",\"at\":0,"
           "\"claims\":[{\"requests\":[{\"count\":0}]}]}\n",
           n);
  expect_error(buf, "'count': expected an integer from 1 to 64");
  expect_error("{\"kind\":\"node\",\"name\":\"n\",\"cpu\":\"8\",\"memory\":\"8Gi\",\"gpus\":4,"
               "\"model\":\"L4\",\"gpu_memory\":\"24Gi\",\"islands\":[2,1]}\n",
               "'islands': sizes add up to 3, but the node has 4 GPUs");
  expect_error("{\"kind\":\"rack\"}\n", "'kind': expected \"node\" or \"pod\"");
  expect_error("[1,2]\n", "each line must be a JSON object");
}

Test(replay_native, bundled_native_trace_replays)
{
  sf_replay_trace_t t;
  sf_replay_result_t r;
  sf_test_load_bundled_native(&t);
  cr_expect(t.has_islands);
  run(&t, "fragmentation", &r);
  cr_expect_eq(r.pods_arrived, t.npods);
  cr_expect_gt(r.pods_departed, 0);
  cr_expect_lt(r.pods_failed, r.pods_arrived);
  sf_replay_result_dispose(&r);
  sf_replay_trace_dispose(&t);
}
