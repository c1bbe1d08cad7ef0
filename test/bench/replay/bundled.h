/* The bundled synthetic traces (bench/data/), loaded for the replay tests. */
#ifndef SLICEFIT_TEST_BUNDLED_H
#define SLICEFIT_TEST_BUNDLED_H

#include "slicefit/replay.h"

/** Loads bench/data/synthetic-{nodes,pods}.csv (under $SLICEFIT_TOP) into a fresh trace; asserts. */
void sf_test_load_bundled(sf_replay_trace_t *t);
/** Loads bench/data/synthetic-native.jsonl into a fresh trace; asserts. */
void sf_test_load_bundled_native(sf_replay_trace_t *t);
/** Loads an Alibaba node list and pod list given as text (through temporary files); asserts. */
void sf_test_load_csv_text(sf_replay_trace_t *t, const char *nodes, const char *pods);

#endif
