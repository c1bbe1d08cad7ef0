/*
 * bin/slicefit-replay --churn: lifetimes, the load, the runs per policy and
 * the report (the flags are parsed in replay_main.c).
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "replay_churn_int.h"

#define DEFAULT_REF "openb_pod_list_default.csv"

static bool has_times(const sf_replay_trace_t *t)
{
  if (t->native)
    return true;
  for (size_t i = 0; i < t->npods; i++)
    if (t->pods[i].until < 0)
      return false;
  return true;
}

/* The pod list that lends lifetimes: --lifetimes, else the default list beside --pods. */
static int load_ref(const sf_churn_cli_t *c, sf_replay_trace_t *ref, char *path, size_t len)
{
  char err[SF_REPLAY_ERR_MAX] = "", dir[PATH_MAX];
  if (c->lifetimes != NULL) {
    snprintf(path, len, "%s", c->lifetimes);
  } else {
    snprintf(dir, sizeof(dir), "%s", c->pods ? c->pods : ".");
    snprintf(path, len, "%s/%s", dirname(dir), DEFAULT_REF);
    if (access(path, R_OK) != 0) {
      fprintf(stderr,
              "slicefit-replay: --churn: %s has no creation_time and deletion_time; give a pod "
              "list with them (--lifetimes FILE)\n",
              c->pods ? c->pods : "the pod list");
      return 2;
    }
  }
  if (sf_replay_load_csv(ref, c->nodes, path, err, sizeof(err)) != 0) {
    fprintf(stderr, "slicefit-replay: --lifetimes: %s\n", err);
    return 1;
  }
  return 0;
}

int sf__churn_ref(const sf_churn_cli_t *c, const sf_replay_trace_t *t, sf_replay_trace_t *ref,
                  char *path, size_t len)
{
  return has_times(t) ? 0 : load_ref(c, ref, path, len);
}

static void header(const sf_churn_cli_t *c, const sf_replay_trace_t *t, const sf_churn_load_t *l,
                   const size_t counts[3], const char *ref, size_t capped)
{
  FILE *out = c->json ? stderr : stdout;
  fprintf(out, "trace: %s\n%zu nodes, %.0f GPUs, %zu pods; seeds %llu-%llu; %.0f s simulated\n",
          t->source ? t->source : "-", t->nnodes, l->gpus, t->npods, (unsigned long long)c->seed_lo,
          (unsigned long long)c->seed_hi, c->duration_s);
  fprintf(out, "lifetimes: %zu from the trace", counts[0]);
  if (counts[1] + counts[2] > 0)
    fprintf(out, ", %zu by name from %s, %zu drawn (seeded) among its pods of the same shape",
            counts[1], ref, counts[2]);
  fprintf(out, "; %zu capped at the horizon (%.0f s); mean %.0f s\n", capped, c->horizon_s,
          l->life_s);
  if (t->native)
    fprintf(out, "load: the trace's own times offer R = %.3f", l->native_load);
  else
    fprintf(out, "load: R = %.3f (%.3f arrivals/s)", c->load, sf_churn_rate(l, c->load));
  fprintf(out, "; bounds: GPU 1.000, CPU %.3f, memory %.3f\n", l->cpu_bound, l->mem_bound);
}

static int write_svg(const sf_churn_cli_t *c, const sf_replay_trace_t *t,
                     const sf_churn_result_t *const *runs, const size_t *nruns)
{
  char title[512];
  FILE *out = fopen(c->svg, "w");
  if (out == NULL) {
    fprintf(stderr, "slicefit-replay: --svg %s: %s\n", c->svg, strerror(errno));
    return 1;
  }
  const char *src = t->source ? t->source : "";
  const char *b = strrchr(src, '/');
  snprintf(title, sizeof(title), "churn at load %.2f: %s", runs[0][0].load, b ? b + 1 : src);
  int rc = sf_churn_svg(out, runs, nruns, c->npolicies, title);
  if (fclose(out) != 0 || rc != 0) {
    fprintf(stderr, "slicefit-replay: --svg %s: nothing to plot or write failed\n", c->svg);
    return 1;
  }
  return 0;
}

static int run_policies(const sf_churn_cli_t *c, const sf_replay_trace_t *t, sf_churn_opts_t *o,
                        const sf_churn_load_t *l)
{
  size_t nseeds = (size_t)(c->seed_hi - c->seed_lo + 1);
  sf_churn_result_t *runs[16] = {NULL};
  size_t nruns[16] = {0};
  double sus[16];
  char err[SF_REPLAY_ERR_MAX] = "";
  int rc = 0;
  for (size_t p = 0; p < c->npolicies && p < 16 && rc == 0; p++) {
    o->run.policy = c->policies[p];
    runs[p] = sf_xcalloc(nseeds, sizeof(**runs));
    sus[p] = -1;
    if ((rc = sf_churn_seeds(t, o, nseeds, c->threads, runs[p], err, sizeof(err))) != 0)
      break;
    nruns[p] = nseeds;
    if (c->sustainable) {
      size_t n;
      double hi = floor(fmin(sf_churn_bound(l), 1.0) * 100 + 1e-9) / 100;
      if ((rc = sf_churn_sustainable(t, o, nseeds, hi - 0.3, hi, 0.01, c->threads, &sus[p], &n, err,
                                     sizeof(err))) != 0)
        break;
    }
    if (c->json) {
      for (size_t s = 0; s < nseeds; s++)
        sf_churn_json_run(stdout, &runs[p][s]);
      sf_churn_json_medians(stdout, runs[p], nseeds, sus[p]);
      fflush(stdout);
    }
  }
  if (rc != 0)
    fprintf(stderr, "slicefit-replay: %s\n", err);
  if (rc == 0 && !c->json)
    sf_churn_table(stdout, (const sf_churn_result_t *const *)runs, nruns, sus, c->npolicies);
  if (rc == 0 && c->svg != NULL)
    rc = write_svg(c, t, (const sf_churn_result_t *const *)runs, nruns);
  for (size_t p = 0; p < c->npolicies && p < 16; p++) {
    for (size_t s = 0; s < nruns[p]; s++)
      sf_churn_result_dispose(&runs[p][s]);
    free(runs[p]);
  }
  return rc != 0;
}

int sf__churn_cli(const sf_churn_cli_t *c, const sf_replay_trace_t *t)
{
  sf_replay_trace_t ref;
  size_t counts[3], capped = 0;
  char path[PATH_MAX + 64] = "", err[SF_REPLAY_ERR_MAX] = "";
  double *life = sf_xcalloc(t->npods + 1, sizeof(*life));
  sf_churn_load_t l;
  int rc = 0;
  sf_replay_trace_init(&ref);
  if ((rc = sf__churn_ref(c, t, &ref, path, sizeof(path))) != 0)
    goto out;
  if (sf_churn_lifetimes(t, ref.npods ? &ref : NULL, c->horizon_s, c->seed_lo, life, counts, err,
                         sizeof(err)) != 0) {
    fprintf(stderr, "slicefit-replay: --churn: %s\n", err);
    rc = 1;
    goto out;
  }
  for (size_t i = 0; i < t->npods; i++)
    capped += life[i] >= c->horizon_s;
  sf_churn_load(t, life, &l);
  header(c, t, &l, counts, path, capped);
  sf_churn_opts_t o = {.run = {.device_choice = c->device_choice,
                               .base = c->base,
                               .seed = c->seed_lo,
                               .ties = c->ties,
                               .cpu_blind = c->cpu_blind,
                               .cpu_only_least_allocated = c->cpu_only_la,
                               .mix_window = c->mix_window,
                               .mix_every = c->mix_every},
                       .load = t->native && !c->load_set ? 0 : c->load,
                       .duration_s = c->duration_s,
                       .give_up_s = c->give_up_s,
                       .slo_s = c->slo_s,
                       .life = life,
                       .restart_s = c->restart_s};
  sf_churn_defrag_t defrag = {c->defrag_after_s};
  if (c->defrag) {
    o.evict = sf__churn_defrag;
    o.evict_ctx = &defrag;
  }
  rc = run_policies(c, t, &o, &l);
out:
  sf_replay_trace_dispose(&ref);
  free(life);
  return rc;
}
