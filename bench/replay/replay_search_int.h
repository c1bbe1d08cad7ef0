/*
 * The policy search's state, shared by replay_search.c (knobs, candidates,
 * the split, the stages) and replay_search_jobs.c (entries, and the replays
 * on worker threads). Private to bench/replay/.
 */
#ifndef SF_REPLAY_SEARCH_INT_H
#define SF_REPLAY_SEARCH_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include "slicefit/replay_search.h"

enum { TRAIN = 0, HOLDOUT = 1 };

typedef struct {
  char name[48];
  long candidate; /* -1 for a built-in */
  sf_policy_t pol;
  char *sig;    /* every key's value: equal policies have equal signatures */
  char *knobs;  /* the varied knobs' values, "k=v k=v", for progress lines */
  size_t canon; /* the first entry with this signature: it holds the results */
  double a100[2][SF_SEARCH_MAX_SEEDS], a130[2][SF_SEARCH_MAX_SEEDS];
  bool done[2][SF_SEARCH_MAX_SEEDS], queued[2][SF_SEARCH_MAX_SEEDS];
  bool stopped[2][SF_SEARCH_MAX_SEEDS]; /* ended early: below the bar, a100 and a130 are -1 */
} entry_t;

typedef struct {
  size_t entry;
  int part;
  size_t seed;
  bool may_stop; /* stage 1: may end once it cannot make the best quarter */
} job_t;

typedef struct {
  const sf_search_opts_t *o;
  sf_policy_t base; /* o->base (or the defaults) with the device choice applied */
  const sf_replay_trace_t *parts[2];
  entry_t *e;
  size_t ne, nbuiltin; /* built-ins are e[0..nbuiltin), candidate i is e[nbuiltin + i] */
  const sf_search_knob_t *ks[SF_SEARCH_MAX_KNOBS];
  size_t nk;
  /* the running stage */
  job_t *jobs;
  size_t njobs, jobcap;
  atomic_size_t next;
  pthread_mutex_t lock; /* progress, the counters below and the first error */
  size_t finished, planned, stage;
  double t0;
  int rc;
  char err[SF_REPLAY_ERR_MAX + 128];
} search_t;

double sf__replay_search_now_s(void);
void sf__replay_search_add_entry(search_t *s, const char *name, long candidate, sf_policy_t *pol);
void sf__replay_search_builtin_policy(const search_t *s, sf_strategy_t st, sf_policy_t *out);
double sf__replay_search_mean(const search_t *s, size_t entry, int part, bool at130, size_t upto);
bool sf__replay_search_better(const search_t *s, size_t a, size_t b, int part, size_t upto);
void sf__replay_search_queue(search_t *s, size_t entry, int part, size_t k, bool may_stop);
int sf__replay_search_run_stage(search_t *s);

#endif
