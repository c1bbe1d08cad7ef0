/*
 * slicefit churn replay: pods arrive, run their lifetime and leave, and a
 * pod that fits nowhere waits in a pending queue as kube-scheduler keeps one
 * (bin/slicefit-replay --churn; docs/replay.md, "Churn: pods that come and go").
 *
 * Lifetimes come from the trace (Alibaba: deletion_time - creation_time;
 * native: until - at), capped at a horizon. Alibaba arrivals are re-timed by
 * a seeded Poisson process at an offered load R = arrival rate x mean over
 * pods of (GPUs asked x lifetime) / the fleet's GPUs, and the run starts from
 * the steady state of that process (the pods present at a random instant:
 * drawn in proportion to their lifetime, each with a uniform part of it
 * left). Native traces keep their own arrivals and lifetimes; a load scales
 * their arrival times only.
 *
 * The queue: an arrival is tried at once; a pod that fits nowhere waits. A
 * departure wakes every waiting pod (kube-scheduler's queueing hint for
 * freed capacity); a woken pod is tried again in arrival order once its
 * backoff since its last attempt has passed: 1 s after the first failure,
 * doubling up to 10 s (kube-scheduler's defaults).
 *
 * Same contract as replay.h: a shell (clock, threads); runs for different
 * options may go on several threads at once.
 */
#ifndef SLICEFIT_REPLAY_CHURN_H
#define SLICEFIT_REPLAY_CHURN_H

#include "slicefit/replay.h"

#define SF_CHURN_BACKOFF_S 1.0      /* kube-scheduler's podInitialBackoffDuration */
#define SF_CHURN_BACKOFF_MAX_S 10.0 /* and podMaxBackoffDuration */
#define SF_CHURN_BUCKETS 400        /* time buckets: the curves and the warm-up */

/* The pending classes, in the order of the tables. */
typedef enum {
  SF_CHURN_SHARE = 0, /* less than one GPU */
  SF_CHURN_WHOLE,     /* one GPU */
  SF_CHURN_MULTI,     /* two GPUs or more */
  SF_CHURN_PINNED,    /* a GPU model asked, one GPU or less (multi takes the rest) */
  SF_CHURN_NCLASS
} sf_churn_class_t;

extern const char *const sf_churn_class_names[SF_CHURN_NCLASS];

/** The class of a pod; -1 for a pod without GPU. */
int sf_churn_class(const sf_replay_trace_t *t, const sf_replay_pod_t *p);

/** The wait after a pod's n-th failed attempt (n >= 1): 1 s doubling, at most 10 s. */
double sf_churn_backoff(uint32_t attempts);

/*
 * Lifetimes, one per trace pod, in seconds, at least 1 and at most horizon_s.
 * A pod of the trace with a deletion time (or a native `until`) keeps its
 * own; a native pod without `until` lives to the horizon. A pod without
 * times takes the lifetime of the pod of the same name in `ref` (a pod list
 * with times, e.g. openb_pod_list_default.csv), else one drawn (seeded)
 * among ref's pods of the same shape (num_gpu, gpu_milli), else of the same
 * num_gpu, else among all of ref. Counts go to *own, *borrowed, *drawn.
 * SF_EINVAL with err when a pod has no times and ref has none to give.
 */
int sf_churn_lifetimes(const sf_replay_trace_t *t, const sf_replay_trace_t *ref, double horizon_s,
                       uint64_t seed, double *life, size_t counts[3], char *err, size_t errlen);

/* The load arithmetic of a trace with its lifetimes. */
typedef struct {
  double gpu_s, cpu_s, mem_s;  /* means over pods of GPUs x life, cores x life, bytes x life */
  double life_s;               /* mean lifetime */
  double gpus, cpus, mem;      /* the fleet: GPUs, cores, bytes */
  double cpu_bound, mem_bound; /* the load R at which CPU-time or memory-time is all offered */
  double native_load;          /* native traces: the load of their own times (else 0) */
} sf_churn_load_t;

void sf_churn_load(const sf_replay_trace_t *t, const double *life, sf_churn_load_t *out);
/** Arrivals per second at load R: R x gpus / gpu_s. */
double sf_churn_rate(const sf_churn_load_t *l, double load);
/** The capacity bound: min(1, cpu_bound, mem_bound). */
double sf_churn_bound(const sf_churn_load_t *l);

/* A run's state as the eviction hook sees it (bench/replay/replay_churn_int.h reads it). */
typedef struct sf_churn_view sf_churn_view_t;

/*
 * Where evictions enter the queue (the defragmentation planner): called
 * after each pass over the queue with the run and the pods waiting; it may
 * fill up to `max` slots (trace order indices of placed pods) to evict, and
 * *serve with the waiting slot the evictions make room for (UINT32_MAX:
 * none), and returns how many. The served pod is tried at once, then the
 * evicted pods: each leaves its node and runs, once placed again, its
 * remaining lifetime plus restart_s; its wait goes on from the one it had.
 * NULL: no evictions.
 */
typedef size_t (*sf_churn_evict_fn)(void *ctx, sf_churn_view_t *v, const uint32_t *waiting,
                                    size_t nwaiting, uint32_t *evict, size_t max, uint32_t *serve);

typedef struct {
  sf_replay_opts_t run; /* policy, seed, device choice, ties ... (tune is ignored) */
  double load;          /* offered load R; <= 0: a native trace's own times */
  double duration_s;    /* simulated time */
  double give_up_s;     /* > 0: a pod waiting longer fails and leaves the queue */
  double slo_s;         /* the p99 wait that sustainable load holds every class under */
  bool stop_at_slo;     /* end the run once some class's p99 must exceed slo_s */
  size_t pool_seeds;    /* with stop_at_slo: the p99 is over this many seeds' pods (0: 1) */
  const double *life;   /* sf_churn_lifetimes, borrowed */
  sf_churn_evict_fn evict;
  void *evict_ctx;
  double restart_s; /* what an evicted pod loses to its restart, in seconds */
} sf_churn_opts_t;

typedef struct {
  double p50, p95, p99, mean;
  size_t n;
} sf_churn_wait_t;

typedef struct {
  char policy[32];
  uint64_t seed;
  double load, rate;
  uint32_t gpus;
  double warmup_s;
  size_t arrivals, measured, placed, departed, attempts;
  double alloc_time_avg_pct;
  sf_churn_wait_t pending_s[SF_CHURN_NCLASS];
  double idle_while_waiting_gpu_h;
  double idle_half_gpu_h[2]; /* the same, in the first and second 12 hours of each day */
  size_t never_placed, evicted;
  double wall_s;
  bool stopped; /* ended early: a class's p99 was sure to exceed the SLO */
  /* Every measured wait by class, ascending (new arrays; sf_churn_result_dispose). */
  double *waits[SF_CHURN_NCLASS];
  size_t nwaits[SF_CHURN_NCLASS];
  /* Per time bucket: mean allocation % and mean queue length. */
  double alloc_pct[SF_CHURN_BUCKETS], queue[SF_CHURN_BUCKETS];
  double bucket_s;
} sf_churn_result_t;

/** One churn run. 0, or a negative SF_E* with err filled. */
int sf_churn_run(const sf_replay_trace_t *t, const sf_churn_opts_t *o, sf_churn_result_t *res,
                 char *err, size_t errlen);

void sf_churn_result_dispose(sf_churn_result_t *r);

/**
 * The largest p99 wait over the classes, each over the pods of all n runs
 * pooled (the seeds of one load); INFINITY when a run stopped at the SLO.
 */
double sf_churn_worst_p99(const sf_churn_result_t *runs, size_t n);

/*
 * sustainable_load: the highest R in [lo, hi] (to `step`, by bisection) at
 * which sf_churn_worst_p99 over the seeds stays under o->slo_s. Runs nseeds
 * seeds from o->run.seed on `threads` threads; only the loads the bisection
 * visits are run (lo and hi are taken to hold and to fail, and checked when
 * the answer rests on them). Returns lo - step when lo fails, hi when hi
 * holds; *runs counts the churn runs made.
 */
int sf_churn_sustainable(const sf_replay_trace_t *t, const sf_churn_opts_t *o, size_t nseeds,
                         double lo, double hi, double step, unsigned threads, double *out,
                         size_t *runs, char *err, size_t errlen);

/** Several seeds of one load at once (threads), results in seed order. */
int sf_churn_seeds(const sf_replay_trace_t *t, const sf_churn_opts_t *o, size_t nseeds,
                   unsigned threads, sf_churn_result_t *res, char *err, size_t errlen);

/* ---- reports (replay_churn_report.c) ---- */

void sf_churn_json_run(FILE *out, const sf_churn_result_t *r);
/** Medians over n runs of a policy; sustainable < 0: not measured. */
void sf_churn_json_medians(FILE *out, const sf_churn_result_t *runs, size_t n, double sustainable);
void sf_churn_table(FILE *out, const sf_churn_result_t *const *runs, const size_t *nruns,
                    const double *sustainable, size_t npolicies);
/** Allocation and queue length over time, one panel each, median over seeds per policy. */
int sf_churn_svg(FILE *out, const sf_churn_result_t *const *runs, const size_t *nruns,
                 size_t npolicies, const char *title);

#endif
