/*
 * What the churn replay's files share: replay_churn.c (classes, lifetimes,
 * the load, the arrivals), replay_churn_run.c (the run and its queue),
 * replay_churn_report.c (JSON, the table, the SVG). Private to bench/replay/.
 */
#ifndef SF_REPLAY_CHURN_INT_H
#define SF_REPLAY_CHURN_INT_H

#include "slicefit/index.h"
#include "slicefit/replay_churn.h"

typedef struct {
  double at;    /* arrival, seconds from the start */
  uint32_t pod; /* index in the trace */
  double life;  /* how long it runs once placed */
  bool fill;    /* present at the start (the steady state): never measured */
} churn_arrival_t;

/* The arrivals of one run, by time; *rate gets the arrival rate (per second). New array. */
churn_arrival_t *sf__churn_arrivals(const sf_replay_trace_t *t, const sf_churn_opts_t *o,
                                    const sf_churn_load_t *l, double *rate, size_t *n);

/* ---- what the eviction hook reads of a run (replay_churn_run.c) ---- */

double sf__churn_view_now(const sf_churn_view_t *v);
const sf_replay_trace_t *sf__churn_view_trace(const sf_churn_view_t *v);
size_t sf__churn_view_slots(const sf_churn_view_t *v);
const churn_arrival_t *sf__churn_view_arrival(const sf_churn_view_t *v, uint32_t slot);
/* The slot's allocation, -1 while not placed; *since its placement time. */
sf_alloc_id sf__churn_view_alloc(const sf_churn_view_t *v, uint32_t slot, double *since);
/* The holder of the slot's allocation ("NAME#SLOT") into buf. */
void sf__churn_holder(const sf_churn_view_t *v, uint32_t slot, char *buf, size_t len);
/* The run's scheduling state (replay_run_int.h's run_t). */
void *sf__churn_view_run(sf_churn_view_t *v);
/* The hook's own state for the run: NULL at first, freed with free() when the run ends. */
void **sf__churn_view_state(sf_churn_view_t *v);

/* The defragmentation hook (replay_churn_defrag.c); ctx is a sf_churn_defrag_t. */
typedef struct {
  double after_s; /* a pod waiting longer gets a plan */
} sf_churn_defrag_t;
size_t sf__churn_defrag(void *ctx, sf_churn_view_t *v, const uint32_t *waiting, size_t nwaiting,
                        uint32_t *evict, size_t max, uint32_t *serve);

/* The waits of class k over the pods of all n runs pooled: a p99 over every seed's pods. */
void sf__churn_pooled(const sf_churn_result_t *runs, size_t n, int k, sf_churn_wait_t *w);

/* What bin/slicefit-replay --churn was given (replay_main.c parses it). */
typedef struct {
  const char *nodes, *pods, *lifetimes, *svg;
  const char **policies;
  size_t npolicies;
  const sf_policy_t *base;
  int device_choice;
  sf_replay_ties_t ties;
  uint64_t seed_lo, seed_hi;
  double load, horizon_s, duration_s, give_up_s, slo_s;
  bool defrag;                      /* --defrag */
  double defrag_after_s, restart_s; /* --defrag-after, --restart-cost */
  bool load_set, sustainable, json, cpu_blind, cpu_only_la;
  size_t mix_window, mix_every;
  unsigned threads;
} sf_churn_cli_t;

/*
 * The pod list that lends lifetimes to t when t has no times (--lifetimes,
 * else the default list beside --pods) into ref (initialised), its path in
 * path; 0 (ref empty when t has times) or the exit status after a message.
 */
int sf__churn_ref(const sf_churn_cli_t *c, const sf_replay_trace_t *t, sf_replay_trace_t *ref,
                  char *path, size_t len);

/* Runs the churn replay for the CLI and prints its report; the exit status. */
int sf__churn_cli(const sf_churn_cli_t *c, const sf_replay_trace_t *t);

#endif
