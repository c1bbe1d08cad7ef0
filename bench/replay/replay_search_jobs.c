/*
 * The policy search's entries and its replays on worker threads (the design
 * is in replay_search.c): a stage's jobs taken in order by `threads`
 * workers, each job writing only its own slot.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "replay_search_int.h"
#include "slicefit/replay_churn.h"

/* ---- entries ---- */

double sf__replay_search_now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

char *sf_search_value(const sf_policy_t *pol, const char *key)
{
  size_t len = 256;
  char *buf = sf_xmalloc(len);
  int rc;
  while ((rc = sf_policy_get(pol, key, buf, len)) == SF_E2BIG)
    buf = sf_xrealloc(buf, len *= 4);
  if (rc != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}

/* Every key's value, one "key=value" line each: equal policies have equal signatures. */
static char *signature(const sf_policy_t *pol)
{
  size_t nkeys, len = 0, cap = 0;
  const sf_policy_key_t *keys = sf_policy_keys(&nkeys);
  char *sig = NULL;
  for (size_t k = 0; k < nkeys; k++) {
    char *val = sf_search_value(pol, keys[k].key);
    size_t need = strlen(keys[k].key) + strlen(val) + 3;
    sf_xgrow(&sig, &cap, len + need + 1, 1);
    len += (size_t)snprintf(sig + len, cap - len, "%s=%s\n", keys[k].key, val);
    free(val);
  }
  return sig;
}

static char *knob_values(const search_t *s, const sf_policy_t *pol)
{
  size_t len = 0, cap = 1;
  char *out = sf_xcalloc(1, 1);
  for (size_t k = 0; k < s->nk; k++) {
    char *val = sf_search_value(pol, s->ks[k]->key);
    sf_xgrow(&out, &cap, len + strlen(s->ks[k]->key) + strlen(val) + 3, 1);
    len += (size_t)snprintf(out + len, cap - len, "%s%s=%s", k ? " " : "", s->ks[k]->key, val);
    free(val);
  }
  return out;
}

void sf__replay_search_add_entry(search_t *s, const char *name, long candidate, sf_policy_t *pol)
{
  entry_t *e = &s->e[s->ne];
  snprintf(e->name, sizeof(e->name), "%s", name);
  e->candidate = candidate;
  e->pol = *pol; /* steals pol's arrays */
  e->sig = signature(&e->pol);
  e->knobs = knob_values(s, &e->pol);
  e->canon = s->ne;
  for (size_t j = 0; j < s->ne; j++)
    if (strcmp(s->e[j].sig, e->sig) == 0) {
      e->canon = s->e[j].canon;
      break;
    }
  s->ne++;
}

/* The base with strategy `st` and every varied knob at its default: a built-in strategy. */
void sf__replay_search_builtin_policy(const search_t *s, sf_strategy_t st, sf_policy_t *out)
{
  size_t nkeys;
  const sf_policy_key_t *keys = sf_policy_keys(&nkeys);
  char err[256];
  sf_policy_copy(out, &s->base);
  out->strategy = st;
  for (size_t k = 0; k < s->nk; k++)
    for (size_t j = 0; j < nkeys; j++)
      if (strcmp(keys[j].key, s->ks[k]->key) == 0 &&
          sf_policy_set(out, keys[j].key, keys[j].def, err, sizeof(err)) != 0)
        abort(); /* a default the policy refuses: a bug in policy.c */
}

/* ---- replays on worker threads ---- */

static size_t idx_of(int pct)
{
  for (size_t k = 0; k < SF_REPLAY_NTHRESH; k++)
    if (sf_replay_thresholds[k] == pct)
      return k;
  abort();
}

/* Allocation at pct% arrived load; the state at the end when the load never got there. */
static double alloc_at(const sf_replay_result_t *r, int pct)
{
  double v = r->alloc_pct_at[idx_of(pct)];
  return isnan(v) ? r->alloc_pct_final : v;
}

static int cmp_desc(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x < y) - (x > y);
}

/*
 * The allocation @100 a stage-1 run must be able to reach to still make the
 * best quarter: the k1-th best of the candidates' finished, complete runs
 * (0 while fewer have finished). The bar only rises as runs finish, so a run
 * that cannot reach it would not have been promoted whatever the order the
 * runs finished in: stopping it changes nothing but the time. Called under
 * the lock.
 */

static double bar(const search_t *s)
{
  size_t k1 = (s->o->ncandidates + 3) / 4, n = 0;
  double *v = sf_xcalloc(s->ne, sizeof(*v)), b = 0;
  for (size_t i = s->nbuiltin; i < s->ne; i++) {
    const entry_t *c = &s->e[s->e[i].canon];
    if (c->done[TRAIN][0] && !c->stopped[TRAIN][0])
      v[n++] = c->a100[TRAIN][0];
  }
  if (n >= k1) {
    qsort(v, n, sizeof(*v), cmp_desc);
    b = v[k1 - 1];
  }
  free(v);
  return b;
}

/* The churn figure of one job: the sustainable load on the part for the seed, x 100. */
static int churn_replay(search_t *s, const sf_replay_opts_t *ro, const sf_replay_trace_t *t,
                        double *a100, char *err, size_t errlen)
{
  const sf_search_churn_t *ch = s->o->churn;
  double *life = sf_xcalloc(t->npods + 1, sizeof(*life)), sus = 0;
  size_t counts[3], runs;
  sf_churn_load_t l;
  int rc = sf_churn_lifetimes(t, ch->ref, ch->horizon_s, ro->seed, life, counts, err, errlen);
  if (rc == 0) {
    sf_churn_load(t, life, &l);
    double hi = floor(fmin(sf_churn_bound(&l), 1.0) * 100 + 1e-9) / 100;
    sf_churn_opts_t co = {.run = *ro, .duration_s = ch->duration_s, .slo_s = ch->slo_s, .life = life};
    rc = sf_churn_sustainable(t, &co, 1, hi - 0.3, hi, 0.01, 1, &sus, &runs, err, errlen);
  }
  *a100 = sus * 100.0;
  free(life);
  return rc;
}

static int replay(search_t *s, const job_t *j, double *a100, double *a130, bool *stopped, char *err,
                  size_t errlen)
{
  const entry_t *e = &s->e[j->entry];
  const sf_search_opts_t *o = s->o;
  sf_replay_result_t res;
  sf_replay_opts_t ro = {.policy = sf_strategy_name(e->pol.strategy),
                         .base = &e->pol,
                         .device_choice = -1,
                         .seed = o->seeds[j->seed],
                         .tune = o->tune,
                         .ties = o->ties,
                         .extender_scores = o->extender_scores,
                         .cpu_blind = o->cpu_blind,
                         .cpu_only_least_allocated = o->cpu_only_least_allocated,
                         .mix_window = o->mix_window,
                         .mix_every = o->mix_every};
  if (o->churn != NULL) {
    *stopped = false;
    int rc = churn_replay(s, &ro, s->parts[j->part], a100, err, errlen);
    *a130 = *a100;
    return rc;
  }
  if (j->may_stop) {
    pthread_mutex_lock(&s->lock);
    ro.stop_below_100 = bar(s);
    pthread_mutex_unlock(&s->lock);
  }
  int rc = sf_replay_run(s->parts[j->part], &ro, &res, err, errlen);
  *stopped = rc == 0 && res.stopped;
  if (rc == 0) {
    *a100 = *stopped ? -1 : alloc_at(&res, 100);
    *a130 = *stopped ? -1 : alloc_at(&res, 130);
  }
  sf_replay_result_dispose(&res);
  return rc;
}

/* Mean over the first `upto` seeds done on `part` (the entry's canonical results); NAN when none. */
double sf__replay_search_mean(const search_t *s, size_t entry, int part, bool at130, size_t upto)
{
  const entry_t *c = &s->e[s->e[entry].canon];
  double sum = 0;
  size_t k = 0;
  for (size_t i = 0; i < upto && i < s->o->nseeds; i++)
    if (c->done[part][i]) {
      sum += at130 ? c->a130[part][i] : c->a100[part][i];
      k++;
    }
  return k ? sum / (double)k : NAN;
}

/*
 * True when entry a ranks before b on part over the first `upto` seeds: by
 * allocation @100, then @130, then the lower index (so among equals the base
 * and the earlier draws win, whatever order the threads finished in).
 */
bool sf__replay_search_better(const search_t *s, size_t a, size_t b, int part, size_t upto)
{
  double x = sf__replay_search_mean(s, a, part, false, upto),
         y = sf__replay_search_mean(s, b, part, false, upto);
  if (x != y)
    return x > y || isnan(y);
  x = sf__replay_search_mean(s, a, part, true, upto);
  y = sf__replay_search_mean(s, b, part, true, upto);
  if (x != y)
    return x > y || isnan(y);
  return a < b;
}

static void report(search_t *s, const job_t *j, double a100, bool stopped)
{
  char got[64];
  char line[1024], best[128] = "";
  size_t bi = 0;
  bool have = false;
  /* The best candidate so far: by its mean over the train seeds it has finished. */
  for (size_t i = s->nbuiltin; i < s->ne; i++)
    if (!isnan(sf__replay_search_mean(s, i, TRAIN, false, s->o->nseeds)) &&
        (!have || sf__replay_search_better(s, i, bi, TRAIN, s->o->nseeds))) {
      bi = i;
      have = true;
    }
  if (have)
    snprintf(best, sizeof(best), "; best so far %s %.2f", s->e[bi].name,
             sf__replay_search_mean(s, bi, TRAIN, false, s->o->nseeds));
  double el = sf__replay_search_now_s() - s->t0;
  double eta = s->finished ? el / (double)s->finished * (double)(s->planned - s->finished) : NAN;
  if (stopped)
    snprintf(got, sizeof(got), "stopped, cannot make the best quarter");
  else
    snprintf(got, sizeof(got), "%.2f @100", a100);
  snprintf(line, sizeof(line),
           "search: stage %zu/3, %zu/%zu: %s (%s) on %s, seed %llu: %s%s; "
           "%.0fs elapsed, about %.0fs left",
           s->stage, s->finished, s->planned, s->e[j->entry].name, s->e[j->entry].knobs,
           j->part == TRAIN ? "train" : "holdout", (unsigned long long)s->o->seeds[j->seed], got,
           best, el, isnan(eta) ? 0.0 : eta);
  s->o->progress(s->o->progress_ctx, line);
}

static void *worker(void *arg)
{
  search_t *s = arg;
  char err[SF_REPLAY_ERR_MAX];
  for (;;) {
    size_t i = atomic_fetch_add(&s->next, 1);
    if (i >= s->njobs)
      break;
    const job_t *j = &s->jobs[i];
    double a100 = NAN, a130 = NAN;
    bool stopped = false;
    int rc = replay(s, j, &a100, &a130, &stopped, err, sizeof(err));
    pthread_mutex_lock(&s->lock);
    if (rc != 0 && s->rc == 0) {
      s->rc = rc;
      snprintf(s->err, sizeof(s->err), "%s on %s: %s", s->e[j->entry].name,
               j->part == TRAIN ? "train" : "holdout", err);
    }
    entry_t *e = &s->e[j->entry];
    e->a100[j->part][j->seed] = a100;
    e->a130[j->part][j->seed] = a130;
    e->done[j->part][j->seed] = rc == 0;
    e->stopped[j->part][j->seed] = stopped;
    s->finished++;
    if (rc == 0 && s->o->progress != NULL)
      report(s, j, a100, stopped);
    pthread_mutex_unlock(&s->lock);
  }
  return NULL;
}

/*
 * Queues entry's replay on part with seed index k, once per canonical
 * policy. may_stop: the run may end early when it cannot make the best
 * quarter; never for a built-in or the base, whose figures are reported.
 */
void sf__replay_search_queue(search_t *s, size_t entry, int part, size_t k, bool may_stop)
{
  size_t canon = s->e[entry].canon;
  entry_t *c = &s->e[canon];
  if (c->queued[part][k])
    return;
  c->queued[part][k] = true;
  sf_xgrow(&s->jobs, &s->jobcap, s->njobs + 1, sizeof(*s->jobs));
  s->jobs[s->njobs++] = (job_t){canon, part, k, may_stop && canon > s->nbuiltin};
}

/* Runs the queued jobs on the worker threads and empties the queue. */
int sf__replay_search_run_stage(search_t *s)
{
  unsigned nt = s->o->threads;
  pthread_t th[64];
  size_t started = 0;
  if (nt > 64)
    nt = 64;
  if (nt > s->njobs)
    nt = (unsigned)(s->njobs ? s->njobs : 1);
  atomic_store(&s->next, 0);
  for (unsigned t = 1; t < nt; t++)
    if (pthread_create(&th[started], NULL, worker, s) == 0)
      started++;
  worker(s); /* the calling thread is a worker too */
  for (size_t t = 0; t < started; t++)
    pthread_join(th[t], NULL);
  free(s->jobs);
  s->jobs = NULL;
  s->njobs = s->jobcap = 0;
  return s->rc;
}
