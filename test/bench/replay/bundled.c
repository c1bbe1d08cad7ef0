/* The bundled synthetic traces, found under $SLICEFIT_TOP (the Makefile exports it). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bundled.h"

static void path(char *out, size_t len, const char *file)
{
  const char *top = getenv("SLICEFIT_TOP");
  snprintf(out, len, "%s/bench/data/%s", top ? top : ".", file);
}

void sf_test_load_bundled(sf_replay_trace_t *t)
{
  char np[512], pp[512];
  char err[SF_REPLAY_ERR_MAX] = "";
  path(np, sizeof(np), "synthetic-nodes.csv");
  path(pp, sizeof(pp), "synthetic-pods.csv");
  sf_replay_trace_init(t);
  cr_assert_eq(sf_replay_load_csv(t, np, pp, err, sizeof err), 0, "%s", err);
}

void sf_test_load_bundled_native(sf_replay_trace_t *t)
{
  char tp[512];
  char err[SF_REPLAY_ERR_MAX] = "";
  path(tp, sizeof(tp), "synthetic-native.jsonl");
  sf_replay_trace_init(t);
  cr_assert_eq(sf_replay_load_native(t, tp, err, sizeof err), 0, "%s", err);
}

void sf_test_load_csv_text(sf_replay_trace_t *t, const char *nodes, const char *pods)
{
  char np[] = "/tmp/sf-replay-t-XXXXXX", pp[] = "/tmp/sf-replay-t-XXXXXX";
  int a = mkstemp(np), b = mkstemp(pp);
  char err[SF_REPLAY_ERR_MAX] = "";
  cr_assert(a >= 0 && b >= 0);
  cr_assert(write(a, nodes, strlen(nodes)) == (ssize_t)strlen(nodes));
  cr_assert(write(b, pods, strlen(pods)) == (ssize_t)strlen(pods));
  close(a);
  close(b);
  sf_replay_trace_init(t);
  cr_assert_eq(sf_replay_load_csv(t, np, pp, err, sizeof err), 0, "%s", err);
  unlink(np);
  unlink(pp);
}
