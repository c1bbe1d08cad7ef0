/*
 * What the trace loaders share: replay_trace.c (errors, the trace's
 * lifecycle, model sets, names and files), replay_csv.c (the Alibaba CSV
 * files), replay_native.c (slicefit's JSON lines). Private to bench/replay/.
 */
#ifndef SF_REPLAY_TRACE_INT_H
#define SF_REPLAY_TRACE_INT_H

#include <stdio.h>
#include "slicefit/replay.h"

void sf__replay_fail(char *err, size_t errlen, const char *file, size_t line, size_t col,
                     const char *fmt, ...) __attribute__((format(printf, 6, 7)));
void sf__replay_trace_reset(sf_replay_trace_t *t);
bool sf__replay_name_ok(const char *s);
FILE *sf__replay_open_input(const char *path, char *err, size_t errlen);

#endif
