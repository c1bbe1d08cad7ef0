/*
 * Test harness for apiwatch: starts test/tools/fake-apiserver as a child
 * process and talks to its control channel; a recording sink that keeps
 * "kind|ns/name" -> resourceVersion and flags events applied twice or
 * deletes of objects it never saw.
 */
#ifndef SLICEFIT_TEST_APIWATCH_HARNESS_H
#define SLICEFIT_TEST_APIWATCH_HARNESS_H

#include <stdio.h>
#include <sys/types.h>
#include "slicefit/apiwatch.h"

typedef struct {
  pid_t pid;
  FILE *in, *out;
  unsigned port;
  char url[64];
} fake_t;

/** Starts the fake with extra arguments (NULL-terminated list, may be empty). */
void fake_start(fake_t *f, const char *const *args);
/** Sends one command line and returns its answer (static buffer); asserts it starts with "ok". */
const char *fake_cmd(fake_t *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void fake_stop(fake_t *f);
/** Path of a built tool next to the test binary (static buffer). */
const char *tool_path(const char *name);

typedef struct {
  json_t *objs; /* "kind|ns/name" -> rv */
  unsigned applies, removes, replaces;
  unsigned duplicates, unknown_deletes;
} rec_t;

void rec_init(rec_t *r);
void rec_dispose(rec_t *r);
sf_apiwatch_sink_t rec_sink(rec_t *r);
/** True when the recording holds exactly the fake's objects of `res` (by name and rv). */
bool rec_equals(rec_t *r, fake_t *f, const char *res, sf_kind_t kind);
/** True when all four resources match. */
bool rec_equals_all(rec_t *r, fake_t *f);

/** Runs `loop` until cond(ud) holds or `ms` pass; returns cond's last value. */
bool run_until(uv_loop_t *loop, bool (*cond)(void *), void *ud, unsigned ms);
/** Stops and destroys the watcher, running the loop until its handles close. */
void watcher_free(uv_loop_t *loop, sf_apiwatch_t *w);

/** A ResourceSlice JSON (one line) for node `i`, with `ndev` devices. */
char *slice_json(unsigned i, unsigned ndev, unsigned gen);
char *claim_json(unsigned i);

#endif
