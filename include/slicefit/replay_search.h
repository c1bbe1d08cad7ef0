/*
 * slicefit replay search: tunes the policy's numeric knobs on a pod history
 * (bin/slicefit-replay --search), the tool behind "tune from your own
 * history" (docs/replay.md).
 *
 * The history is split by arrival into a train part (the first pods) and a
 * holdout part (the last ones). Candidate policies are the base policy
 * (candidate 0) and a Latin hypercube sample of the knobs in the knob table,
 * seeded. They are ranked on train by successive halving: every candidate on
 * the first replay seed, the best quarter (and candidate 0) on every seed,
 * and the best few are then replayed on the holdout, as are the built-in
 * strategies. The winner is chosen on train alone; the holdout only reports.
 *
 * The objective is the replay's: GPU allocation % when the arrived GPU
 * request reaches 100% of capacity, 130% breaking ties, as the mean over
 * the replay seeds.
 *
 * This module is a shell (bench/): it runs sf_replay_run on worker threads,
 * one replay per thread at a time (the packer is one-per-thread; the trace
 * is shared read-only) and reads the clock for progress. Results do not
 * depend on the number of threads.
 */
#ifndef SLICEFIT_REPLAY_SEARCH_H
#define SLICEFIT_REPLAY_SEARCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "slicefit/policy.h"
#include "slicefit/replay.h"

/* The policy ConfigMap the daemon watches (manifests/policy/policy-configmap.yaml). */
#define SF_SEARCH_CONFIGMAP_NAMESPACE "slicefit-system"
#define SF_SEARCH_CONFIGMAP_NAME "slicefit-policy"

#define SF_SEARCH_BUILTINS 4  /* fgd, fragmentation, binpack, spread */
#define SF_SEARCH_FINALISTS 3 /* candidates replayed on the holdout */
#define SF_SEARCH_MAX_KNOBS 32
#define SF_SEARCH_MAX_SEEDS 64

/*
 * One searched knob: a policy key (sf_policy_keys) and the range it is drawn
 * from. `keep` is the share of candidates that keep the base's value: for a
 * limit whose "off" is a value of its own (max_sharers 0, headroom_pct 0),
 * so that half of the candidates vary the weights with the limits off.
 * `idle`, when not NULL, says why the knob cannot change a placement on
 * this trace under this base policy (a static string), or NULL when it can,
 * churn true for a search of churn runs (--churn): a knob that multiplies a
 * term the trace makes zero is not varied.
 */
typedef struct {
  const char *key;
  double lo, hi;
  bool log;     /* drawn uniformly in log(lo)..log(hi) (lo > 0) */
  bool integer; /* whole numbers lo..hi, each about equally likely */
  double keep;  /* 0..1 */
  const char *(*idle)(const sf_replay_trace_t *t, const sf_policy_t *base, bool churn);
} sf_search_knob_t;

/**
 * The knob table: every knob --search may vary, one per policy key with a
 * search range (sf_policy_key_t.search), in the policy table's order
 * (static data, built once, thread-safe; *n gets the count).
 */
const sf_search_knob_t *sf_search_knobs(size_t *n);
/** The table's entry for `key`, or NULL. */
const sf_search_knob_t *sf_search_knob(const char *key);

/**
 * Candidate i (i >= 1) of a search: `base` with each of the `nknobs` knobs
 * set to its Latin hypercube draw for `search_seed` among n candidates
 * (n >= 2). Values are set as text (at most 4 significant digits), so the
 * ConfigMap written for it reads back as the very policy replayed. *out is
 * new (sf_policy_dispose). Candidate 0 is `base` itself.
 */
void sf_search_candidate(const sf_policy_t *base, const sf_search_knob_t *const *knobs, size_t nknobs,
                         uint64_t search_seed, size_t n, size_t i, sf_policy_t *out);

/**
 * Splits the history by arrival: pods ordered by arrival time (a native
 * trace's `at`, an Alibaba list's creation_time; equal times, or a list
 * without times, in file order), the first round(train_pct% of them) to
 * *train, the rest to *holdout. Both get every node. Both halves are new (trace
 * _dispose); 0, or SF_EINVAL when either half would have no pod.
 */
int sf_search_split(const sf_replay_trace_t *t, unsigned train_pct, sf_replay_trace_t *train,
                    sf_replay_trace_t *holdout);

/*
 * --search --churn: a candidate's figure on a part and seed is its
 * sustainable load there (replay_churn.h, one seed, x 100 in train100 and
 * train130) instead of its allocation at 100% and 130%.
 */
typedef struct {
  double duration_s, horizon_s, slo_s;
  const sf_replay_trace_t *ref; /* lends lifetimes to a list without times; NULL: none */
} sf_search_churn_t;

typedef struct {
  size_t ncandidates; /* >= 1; candidate 0 is the base policy */
  uint64_t search_seed;
  const sf_policy_t *base; /* its strategy and device choice are fixed inputs; NULL = defaults */
  const char *const *keys; /* the knobs to vary (table keys); NULL = the whole table */
  size_t nkeys;
  const uint64_t *seeds; /* replay seeds, 1..SF_SEARCH_MAX_SEEDS */
  size_t nseeds;
  unsigned train_pct; /* 1..99 */
  unsigned threads;   /* >= 1 */
  /* Passed to every replay (sf_replay_opts_t): tune, ties and the live-cluster switches. */
  double tune;
  int device_choice; /* -1 = the base's */
  sf_replay_ties_t ties;
  bool cpu_blind, cpu_only_least_allocated, extender_scores;
  size_t mix_window, mix_every;
  const sf_search_churn_t *churn; /* NULL: the static replay ranks */
  /* One line per finished replay of a candidate or built-in; may be NULL. Called under a lock. */
  void (*progress)(void *ctx, const char *line);
  void *progress_ctx;
} sf_search_opts_t;

/* One row of the result: a built-in strategy or a candidate. */
typedef struct {
  char name[48];  /* "fgd", "candidate 17", ... */
  long candidate; /* -1 for a built-in */
  sf_policy_t pol;
  size_t ntrain, nholdout;   /* seeds replayed on each part (0 = not replayed there) */
  double train100, train130; /* means over those seeds */
  double holdout100, holdout130;
} sf_search_row_t;

typedef struct {
  sf_search_row_t *rows; /* the built-ins, then the finalists best first */
  size_t nrows;
  size_t winner;    /* the row of the best candidate on train */
  size_t reference; /* the row of the base's built-in strategy */
  size_t ntrain_pods, nholdout_pods;
  size_t rung1;                           /* candidates replayed on every seed */
  const char *knobs[SF_SEARCH_MAX_KNOBS]; /* the varied keys (static strings) */
  size_t nknobs;
  const char *idle[SF_SEARCH_MAX_KNOBS][2]; /* asked for but not varied: key, why (static) */
  size_t nidle;
  size_t replays; /* replays run (duplicates of a policy are run once) */
} sf_search_result_t;

/**
 * Runs the search. 0, or SF_EINVAL with err filled (a bad option, a key
 * not in the table, a split with an empty part, a replay that failed).
 */
int sf_search_run(const sf_replay_trace_t *t, const sf_search_opts_t *o, sf_search_result_t *res,
                  char *err, size_t errlen);
void sf_search_result_dispose(sf_search_result_t *res);

/** `key`'s value in `pol` as text, whatever its length: new (free), or NULL for an unknown key. */
char *sf_search_value(const sf_policy_t *pol, const char *key);

/** Writes the table: the built-ins and the finalists on train and holdout, the split, the winner. */
void sf_search_table(FILE *out, const sf_search_result_t *res, const sf_search_opts_t *o);

/**
 * Writes `pol` as the policy ConfigMap (SF_SEARCH_CONFIGMAP_*): every key of
 * sf_policy_keys with its value as a quoted string, each with its meaning
 * as a comment; `header` (may be NULL) as comment lines at the top.
 */
void sf_search_configmap(FILE *out, const sf_policy_t *pol, const char *header);

#endif
