/* The bundled synthetic traces, found under $SLICEFIT_TOP (the Makefile exports it). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
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
