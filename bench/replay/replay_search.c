/*
 * The policy search behind bin/slicefit-replay --search (replay_search.h).
 *
 * Entries: the built-in strategies first (the base policy with another
 * strategy and the varied knobs at their defaults), then the candidates
 * (candidate 0 = the base, the others its Latin hypercube draws). Two
 * entries whose policies print the same for every key share one set of
 * results, so a candidate equal to a built-in is replayed once.
 *
 * Results: per entry, part (train, holdout) and seed, the allocation at 100%
 * and 130% arrived load. A replay is a job; a stage is a list of jobs that
 * `threads` workers take in order, each with its own sf_replay_run (its own
 * index and packer); a job writes only its own slot, and the stage's order
 * and every decision between stages depend on the results alone, so the
 * output does not depend on the threads or their timing.
 *
 * Stages (successive halving):
 *   1. every candidate on train with the first seed; the built-ins on train
 *      with every seed;
 *   2. the best ceil(n/4) candidates by stage 1, and candidate 0 always, on
 *      train with the other seeds; the best of them by the mean over every
 *      seed is the winner (candidate 0 took part, so the winner is never
 *      worse than the base on train);
 *   3. the best SF_SEARCH_FINALISTS of stage 2 and candidate 0, and the
 *      built-ins, on the holdout with every seed.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "replay_search_int.h"

/* ---- when a knob cannot act (packer/score.c: the weights are fragmentation's terms) ---- */

static const char *frag_only(const sf_replay_trace_t *t, const sf_policy_t *base, bool churn)
{
  (void)t;
  (void)churn;
  return base->strategy == SF_STRATEGY_FRAGMENTATION ? NULL : "only strategy fragmentation weighs it";
}

static const char *islands_idle(const sf_replay_trace_t *t, const sf_policy_t *base, bool churn)
{
  if (frag_only(t, base, churn) != NULL)
    return frag_only(t, base, churn);
  return t->has_islands || base->nisland_rules > 0 ? NULL
                                                   : "no NVLink island in the trace or island_map";
}

/* The unfed term needs node CPU to run out (packer/score.c): a trace without node CPU never does. */
static const char *cpu_idle(const sf_replay_trace_t *t, const sf_policy_t *base, bool churn)
{
  if (frag_only(t, base, churn) != NULL)
    return frag_only(t, base, churn);
  for (size_t i = 0; i < t->nnodes; i++)
    if (t->nodes[i].cpu_milli > 0)
      return NULL;
  return "no node CPU in the trace";
}

/* Does some request of some pod of the trace answer `yes`? */
static bool any_request(const sf_replay_trace_t *t, bool (*yes)(const sf_replay_req_t *))
{
  for (size_t i = 0; i < t->npods; i++)
    for (size_t c = 0; c < t->pods[i].nclaims; c++)
      for (size_t r = 0; r < t->pods[i].claims[c].nreqs; r++)
        if (yes(&t->pods[i].claims[c].reqs[r]))
          return true;
  return false;
}

static bool names_model(const sf_replay_req_t *q)
{
  return q->spec != 0;
}

static bool takes_share(const sf_replay_req_t *q)
{
  return q->amount > 0;
}

/* Scarcity comes from claims that name models (packer/mix.c): none, and the term is 0. */
static const char *models_idle(const sf_replay_trace_t *t, const sf_policy_t *base, bool churn)
{
  if (frag_only(t, base, churn) != NULL)
    return frag_only(t, base, churn);
  return any_request(t, names_model) ? NULL : "no pod selects a GPU model";
}

/* The plan prices the shares (packer/plan.c): a trace where no pod takes part of a GPU has none. */
static const char *shares_idle(const sf_replay_trace_t *t, const sf_policy_t *base, bool churn)
{
  if (frag_only(t, base, churn) != NULL)
    return frag_only(t, base, churn);
  return any_request(t, takes_share) ? NULL : "no pod takes part of a GPU";
}

/* What a placement strands is the worth of shares left without CPU: it needs both (packer/plan.c). */
static const char *strand_idle(const sf_replay_trace_t *t, const sf_policy_t *base, bool churn)
{
  return shares_idle(t, base, churn) != NULL ? shares_idle(t, base, churn) : cpu_idle(t, base, churn);
}

/* The fill term weighs only where pods leave (packer/score.c): --churn, or a native trace's departures. */
static const char *fill_idle(const sf_replay_trace_t *t, const sf_policy_t *base, bool churn)
{
  if (frag_only(t, base, churn) != NULL)
    return frag_only(t, base, churn);
  for (size_t i = 0; !churn && t->native && i < t->npods; i++)
    if (t->pods[i].until >= 0)
      return NULL;
  return churn ? NULL : "no pod leaves (--churn, or a native trace with departures)";
}

/*
 * When each knob cannot act, by its key. The knobs themselves, their ranges
 * and their order come from the policy's table (sf_policy_keys: every key
 * with a search range); a knob without a line here can always act (the
 * tests name the knobs that must have one).
 */
typedef const char *(*idle_fn)(const sf_replay_trace_t *t, const sf_policy_t *base, bool churn);
static const struct {
  const char *key;
  idle_fn idle;
} idles[] = {
    {"weight_frag", frag_only}, {"weight_island", islands_idle}, {"weight_model", models_idle},
    {"weight_unfed", cpu_idle}, {"weight_plan", shares_idle},    {"weight_strand", strand_idle},
    {"weight_fill", fill_idle}, {"mix_coverage", frag_only},
};

static sf_search_knob_t knobs[SF_SEARCH_MAX_KNOBS];
static size_t nknobs;
static pthread_once_t knobs_once = PTHREAD_ONCE_INIT;

static void knobs_build(void)
{
  size_t n;
  const sf_policy_key_t *keys = sf_policy_keys(&n);
  for (size_t i = 0; i < n; i++) {
    const sf_policy_range_t *r = &keys[i].search;
    if (!(r->lo < r->hi))
      continue;
    if (nknobs == SF_SEARCH_MAX_KNOBS)
      abort(); /* a programmer's error: raise SF_SEARCH_MAX_KNOBS */
    idle_fn idle = NULL;
    for (size_t j = 0; j < sizeof(idles) / sizeof(idles[0]); j++)
      if (strcmp(idles[j].key, keys[i].key) == 0)
        idle = idles[j].idle;
    knobs[nknobs++] = (sf_search_knob_t){keys[i].key, r->lo,   r->hi, r->log,
                                         r->integer,  r->keep, idle};
  }
}

static const sf_strategy_t builtins[SF_SEARCH_BUILTINS] = {SF_STRATEGY_FGD, SF_STRATEGY_FRAGMENTATION,
                                                           SF_STRATEGY_BINPACK, SF_STRATEGY_SPREAD};

const sf_search_knob_t *sf_search_knobs(size_t *n)
{
  pthread_once(&knobs_once, knobs_build);
  *n = nknobs;
  return knobs;
}

const sf_search_knob_t *sf_search_knob(const char *key)
{
  pthread_once(&knobs_once, knobs_build);
  for (size_t i = 0; i < nknobs; i++)
    if (strcmp(knobs[i].key, key) == 0)
      return &knobs[i];
  return NULL;
}

/* ---- candidates ---- */

static uint64_t fnv1a(const char *s)
{
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
  return h;
}

/*
 * Knob k's coordinate in [0, 1) for candidate i of n: stratum perm[i-1] of
 * n-1, jittered. The stream is seeded by the search seed and the key's name,
 * so a knob added to the table leaves the other knobs' draws as they were.
 */
static double lhs_unit(const char *key, uint64_t seed, size_t n, size_t i)
{
  sf_rng_t rng;
  size_t m = n - 1;
  uint32_t *perm = sf_xcalloc(m, sizeof(*perm));
  double u;
  sf_rng_seed(&rng, seed ^ fnv1a(key));
  for (size_t j = 0; j < m; j++)
    perm[j] = (uint32_t)j;
  for (size_t j = m; j > 1; j--) {
    size_t r = (size_t)sf_rng_below(&rng, j);
    uint32_t x = perm[j - 1];
    perm[j - 1] = perm[r];
    perm[r] = x;
  }
  for (size_t j = 1; j < i; j++) /* the jitters of the candidates before i */
    sf_rng_unit(&rng);
  u = ((double)perm[i - 1] + sf_rng_unit(&rng)) / (double)m;
  free(perm);
  return u;
}

static void knob_text(const sf_search_knob_t *k, double u, char *buf, size_t len)
{
  if (k->integer) {
    double v = floor(k->lo + u * (k->hi - k->lo + 1));
    snprintf(buf, len, "%.0f", v > k->hi ? k->hi : v);
  } else if (k->log) {
    snprintf(buf, len, "%.4g", exp(log(k->lo) + u * (log(k->hi) - log(k->lo))));
  } else {
    snprintf(buf, len, "%.4g", k->lo + u * (k->hi - k->lo));
  }
}

void sf_search_candidate(const sf_policy_t *base, const sf_search_knob_t *const *ks, size_t nk,
                         uint64_t search_seed, size_t n, size_t i, sf_policy_t *out)
{
  char val[64], err[256];
  sf_policy_copy(out, base);
  if (i == 0)
    return;
  for (size_t k = 0; k < nk; k++) {
    double u = lhs_unit(ks[k]->key, search_seed, n, i);
    /* The strata below `keep` keep the base's value; the others spread over the range. */
    if (u < ks[k]->keep)
      continue;
    knob_text(ks[k], (u - ks[k]->keep) / (1 - ks[k]->keep), val, sizeof(val));
    /* The table's ranges are inside every key's own: a refusal is a bug in the table. */
    if (sf_policy_set(out, ks[k]->key, val, err, sizeof(err)) != 0) {
      fprintf(stderr, "slicefit-replay: knob table: %s\n", err);
      abort();
    }
  }
}

/* ---- the train/holdout split ---- */

static void copy_node(sf_replay_node_t *d, const sf_replay_node_t *s)
{
  *d = *s;
  d->name = sf_xstrdup(s->name);
  d->model = sf_xstrdup(s->model);
  if (s->island_of != NULL) {
    d->island_of = sf_xcalloc(s->ngpu ? s->ngpu : 1, sizeof(*d->island_of));
    memcpy(d->island_of, s->island_of, s->ngpu * sizeof(*d->island_of));
  }
}

static void copy_pod(sf_replay_pod_t *d, const sf_replay_pod_t *s)
{
  *d = *s;
  d->name = sf_xstrdup(s->name);
  d->claims = sf_xcalloc(s->nclaims ? s->nclaims : 1, sizeof(*d->claims));
  for (size_t c = 0; c < s->nclaims; c++) {
    d->claims[c] = s->claims[c];
    d->claims[c].reqs = sf_xcalloc(s->claims[c].nreqs ? s->claims[c].nreqs : 1,
                                   sizeof(*d->claims[c].reqs));
    memcpy(d->claims[c].reqs, s->claims[c].reqs, s->claims[c].nreqs * sizeof(*d->claims[c].reqs));
  }
}

/* A trace with every node and model set of t and the pods idx[0..n) (a deep copy). */
static void subset(const sf_replay_trace_t *t, const uint32_t *idx, size_t n, const char *what,
                   sf_replay_trace_t *out)
{
  char src[1024];
  sf_replay_trace_init(out);
  out->native = t->native;
  out->has_islands = t->has_islands;
  out->nodes = sf_xcalloc(t->nnodes ? t->nnodes : 1, sizeof(*out->nodes));
  for (size_t i = 0; i < t->nnodes; i++)
    copy_node(&out->nodes[out->nnodes++], &t->nodes[i]);
  /* Model set ids are indices: intern them in the same order so the pods' ids stay valid. */
  for (size_t i = 1; i < t->nspecs; i++)
    sf_replay_spec_intern(out, t->specs[i].key);
  out->pods = sf_xcalloc(n ? n : 1, sizeof(*out->pods));
  for (size_t i = 0; i < n; i++)
    copy_pod(&out->pods[out->npods++], &t->pods[idx[i]]);
  snprintf(src, sizeof(src), "%s (%s)", t->source ? t->source : "-", what);
  out->source = sf_xstrdup(src);
}

static _Thread_local const sf_replay_trace_t *split_trace; /* qsort has no context argument in C11 */

static int cmp_arrival(const void *a, const void *b)
{
  uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
  int64_t x = split_trace->pods[i].at, y = split_trace->pods[j].at;
  if (x != y)
    return x < y ? -1 : 1;
  return (i > j) - (i < j);
}

int sf_search_split(const sf_replay_trace_t *t, unsigned train_pct, sf_replay_trace_t *train,
                    sf_replay_trace_t *holdout)
{
  size_t ntrain = (size_t)llround((double)t->npods * train_pct / 100.0);
  uint32_t *idx;
  sf_replay_trace_init(train);
  sf_replay_trace_init(holdout);
  if (train_pct < 1 || train_pct > 99 || ntrain == 0 || ntrain == t->npods)
    return SF_EINVAL;
  idx = sf_xcalloc(t->npods, sizeof(*idx));
  for (size_t i = 0; i < t->npods; i++)
    idx[i] = (uint32_t)i;
  split_trace = t;
  qsort(idx, t->npods, sizeof(*idx), cmp_arrival);
  sf_replay_trace_dispose(train);
  sf_replay_trace_dispose(holdout);
  subset(t, idx, ntrain, "train", train);
  subset(t, idx + ntrain, t->npods - ntrain, "holdout", holdout);
  free(idx);
  return 0;
}

/* ---- the stages ---- */

static _Thread_local const search_t *rank_s; /* qsort has no context argument in C11 */
static _Thread_local int rank_part;
static _Thread_local size_t rank_upto;

static int cmp_rank(const void *a, const void *b)
{
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  if (x == y)
    return 0;
  return sf__replay_search_better(rank_s, x, y, rank_part, rank_upto) ? -1 : 1;
}

/* Sorts the entries in v best first on part over the first `upto` seeds. */
static void rank(const search_t *s, size_t *v, size_t n, int part, size_t upto)
{
  rank_s = s;
  rank_part = part;
  rank_upto = upto;
  qsort(v, n, sizeof(*v), cmp_rank);
}

static int check_opts(const sf_search_opts_t *o, char *err, size_t errlen)
{
  if (o->ncandidates < 1 || o->ncandidates > 100000)
    snprintf(err, errlen, "the number of candidates must be 1 to 100000, not %zu", o->ncandidates);
  else if (o->nseeds < 1 || o->nseeds > SF_SEARCH_MAX_SEEDS)
    snprintf(err, errlen, "the search takes 1 to %d replay seeds, not %zu", SF_SEARCH_MAX_SEEDS,
             o->nseeds);
  else if (o->train_pct < 1 || o->train_pct > 99)
    snprintf(err, errlen, "the train part must be 1 to 99%% of the pods, not %u", o->train_pct);
  else if (o->threads < 1)
    snprintf(err, errlen, "at least one thread");
  else if (o->nkeys > SF_SEARCH_MAX_KNOBS)
    snprintf(err, errlen, "at most %d knobs", SF_SEARCH_MAX_KNOBS);
  else
    return 0;
  return SF_EINVAL;
}

static int pick_knobs(search_t *s, char *err, size_t errlen)
{
  size_t nall;
  const sf_search_knob_t *all = sf_search_knobs(&nall);
  size_t n = s->o->keys ? s->o->nkeys : nall;
  for (size_t i = 0; i < n; i++) {
    const sf_search_knob_t *k = s->o->keys ? sf_search_knob(s->o->keys[i]) : &all[i];
    if (k == NULL) {
      size_t m = 0;
      char list[512];
      for (size_t j = 0; j < nall; j++)
        m += (size_t)snprintf(list + m, sizeof(list) - m, "%s%s", j ? ", " : "", all[j].key);
      snprintf(err, errlen, "'%s' is not a knob the search varies (knobs: %s)", s->o->keys[i], list);
      return SF_EINVAL;
    }
    for (size_t j = 0; j < s->nk; j++)
      if (s->ks[j] == k) {
        snprintf(err, errlen, "knob '%s' named twice", k->key);
        return SF_EINVAL;
      }
    s->ks[s->nk++] = k;
  }
  return 0;
}

/* Moves the knobs that cannot act on this trace from the varied ones to res->idle. */
static void drop_idle(search_t *s, const sf_replay_trace_t *t, sf_search_result_t *res)
{
  size_t n = 0;
  for (size_t k = 0; k < s->nk; k++) {
    const char *why = s->ks[k]->idle ? s->ks[k]->idle(t, &s->base, s->o->churn != NULL) : NULL;
    if (why == NULL) {
      s->ks[n++] = s->ks[k];
      continue;
    }
    res->idle[res->nidle][0] = s->ks[k]->key;
    res->idle[res->nidle++][1] = why;
  }
  s->nk = n;
}

static void make_entries(search_t *s)
{
  const sf_search_opts_t *o = s->o;
  sf_policy_t pol;
  char name[48];
  s->e = sf_xcalloc(SF_SEARCH_BUILTINS + o->ncandidates, sizeof(*s->e));
  for (size_t b = 0; b < SF_SEARCH_BUILTINS; b++) {
    sf__replay_search_builtin_policy(s, builtins[b], &pol);
    sf__replay_search_add_entry(s, sf_strategy_name(builtins[b]), -1, &pol);
  }
  s->nbuiltin = s->ne;
  for (size_t i = 0; i < o->ncandidates; i++) {
    sf_search_candidate(&s->base, s->ks, s->nk, o->search_seed, o->ncandidates, i, &pol);
    snprintf(name, sizeof(name), i ? "candidate %zu" : "candidate 0 (base)", i);
    sf__replay_search_add_entry(s, name, (long)i, &pol);
  }
}

static void stage_start(search_t *s, size_t stage, size_t later)
{
  s->stage = stage;
  s->planned = s->finished + s->njobs + later;
}

/*
 * Stages 1 and 2; on return order[0..*n) holds the candidates replayed on
 * every train seed, best first (entry indices).
 */
static int train_stages(search_t *s, size_t *order, size_t *n)
{
  const sf_search_opts_t *o = s->o;
  size_t nc = o->ncandidates, k1 = (nc + 3) / 4, S = o->nseeds;
  size_t fin = SF_SEARCH_FINALISTS + 1 + SF_SEARCH_BUILTINS;
  for (size_t i = 0; i < nc; i++)
    sf__replay_search_queue(s, s->nbuiltin + i, TRAIN, 0, true);
  for (size_t b = 0; b < s->nbuiltin; b++)
    for (size_t k = 0; k < S; k++)
      sf__replay_search_queue(s, b, TRAIN, k, false);
  stage_start(s, 1, (k1 + 1) * (S - 1) + fin * S);
  if (sf__replay_search_run_stage(s) != 0)
    return s->rc;
  for (size_t i = 0; i < nc; i++)
    order[i] = s->nbuiltin + i;
  rank(s, order, nc, TRAIN, 1);
  /* The best quarter, and candidate 0 (the base) wherever it ranked. */
  *n = 0;
  for (size_t i = 0; i < nc; i++)
    if (i < k1 || order[i] == s->nbuiltin)
      order[(*n)++] = order[i];
  for (size_t i = 0; i < *n; i++)
    for (size_t k = 1; k < S; k++)
      sf__replay_search_queue(s, order[i], TRAIN, k, false);
  stage_start(s, 2, fin * S);
  if (sf__replay_search_run_stage(s) != 0)
    return s->rc;
  rank(s, order, *n, TRAIN, S);
  return 0;
}

static void add_row(const search_t *s, sf_search_result_t *res, size_t entry)
{
  const entry_t *e = &s->e[entry];
  sf_search_row_t *r = &res->rows[res->nrows++];
  snprintf(r->name, sizeof(r->name), "%s", e->name);
  r->candidate = e->candidate;
  sf_policy_copy(&r->pol, &e->pol);
  const entry_t *c = &s->e[e->canon];
  for (size_t k = 0; k < s->o->nseeds; k++) {
    r->ntrain += c->done[TRAIN][k];
    r->nholdout += c->done[HOLDOUT][k];
  }
  r->train100 = sf__replay_search_mean(s, entry, TRAIN, false, s->o->nseeds);
  r->train130 = sf__replay_search_mean(s, entry, TRAIN, true, s->o->nseeds);
  r->holdout100 = sf__replay_search_mean(s, entry, HOLDOUT, false, s->o->nseeds);
  r->holdout130 = sf__replay_search_mean(s, entry, HOLDOUT, true, s->o->nseeds);
}

/* Stage 3: the finalists, candidate 0 and the built-ins on the holdout; then the rows. */
static int holdout_stage(search_t *s, const size_t *order, size_t n, sf_search_result_t *res)
{
  size_t nf = n < SF_SEARCH_FINALISTS ? n : SF_SEARCH_FINALISTS, base = s->nbuiltin;
  bool base_in = false;
  for (size_t i = 0; i < nf; i++) {
    base_in = base_in || order[i] == base;
    for (size_t k = 0; k < s->o->nseeds; k++)
      sf__replay_search_queue(s, order[i], HOLDOUT, k, false);
  }
  for (size_t b = 0; b <= s->nbuiltin; b++) /* b == nbuiltin: candidate 0 */
    for (size_t k = 0; k < s->o->nseeds; k++)
      sf__replay_search_queue(s, b, HOLDOUT, k, false);
  stage_start(s, 3, 0);
  if (sf__replay_search_run_stage(s) != 0)
    return s->rc;
  res->rows = sf_xcalloc(s->nbuiltin + nf + 1, sizeof(*res->rows));
  for (size_t b = 0; b < s->nbuiltin; b++)
    add_row(s, res, b);
  res->winner = res->nrows;
  for (size_t i = 0; i < nf; i++)
    add_row(s, res, order[i]);
  /* The base gets a row of its own unless it is a finalist or equal to a built-in. */
  if (!base_in && s->e[base].canon == base)
    add_row(s, res, base);
  for (size_t r = 0; r < res->nrows; r++)
    if (res->rows[r].candidate == 0 || (r < s->nbuiltin && s->e[r].canon == s->e[base].canon)) {
      res->reference = r;
      break;
    }
  return 0;
}

int sf_search_run(const sf_replay_trace_t *t, const sf_search_opts_t *o, sf_search_result_t *res,
                  char *err, size_t errlen)
{
  search_t s = {.o = o};
  sf_replay_trace_t train, holdout;
  size_t *order = NULL, n = 0;
  int rc;
  memset(res, 0, sizeof(*res));
  sf_replay_trace_init(&train);
  sf_replay_trace_init(&holdout);
  pthread_mutex_init(&s.lock, NULL);
  if (o->base != NULL)
    sf_policy_copy(&s.base, o->base);
  else
    sf_policy_init(&s.base);
  if (o->device_choice >= 0)
    s.base.device_choice = (sf_choice_t)o->device_choice;
  if ((rc = check_opts(o, err, errlen)) != 0 || (rc = pick_knobs(&s, err, errlen)) != 0)
    goto out;
  sf_replay_trace_dispose(&train);
  sf_replay_trace_dispose(&holdout);
  if ((rc = sf_search_split(t, o->train_pct, &train, &holdout)) != 0) {
    snprintf(err, errlen, "%zu pods cannot be split %u%% / %u%% with a pod in each part", t->npods,
             o->train_pct, 100 - o->train_pct);
    goto out;
  }
  s.parts[TRAIN] = &train;
  s.parts[HOLDOUT] = &holdout;
  res->ntrain_pods = train.npods;
  res->nholdout_pods = holdout.npods;
  drop_idle(&s, t, res);
  for (size_t k = 0; k < s.nk; k++)
    res->knobs[res->nknobs++] = s.ks[k]->key;
  make_entries(&s);
  order = sf_xcalloc(o->ncandidates, sizeof(*order));
  s.t0 = sf__replay_search_now_s();
  if ((rc = train_stages(&s, order, &n)) != 0 || (rc = holdout_stage(&s, order, n, res)) != 0) {
    snprintf(err, errlen, "%s", s.err);
    goto out;
  }
  res->rung1 = n;
  res->replays = s.finished;
out:
  if (rc != 0)
    sf_search_result_dispose(res);
  for (size_t i = 0; i < s.ne; i++) {
    sf_policy_dispose(&s.e[i].pol);
    free(s.e[i].sig);
    free(s.e[i].knobs);
  }
  free(s.e);
  free(s.jobs);
  free(order);
  sf_policy_dispose(&s.base);
  sf_replay_trace_dispose(&train);
  sf_replay_trace_dispose(&holdout);
  pthread_mutex_destroy(&s.lock);
  return rc;
}

void sf_search_result_dispose(sf_search_result_t *res)
{
  for (size_t r = 0; r < res->nrows; r++)
    sf_policy_dispose(&res->rows[r].pol);
  free(res->rows);
  memset(res, 0, sizeof(*res));
}
