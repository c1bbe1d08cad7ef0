/*
 * What --search prints: the table of the built-in strategies and the best
 * candidates on train and holdout, and the winning policy as the policy
 * ConfigMap (manifests/policy/policy-configmap.yaml's name, namespace and shape).
 * Neither has a timing in it, so the same search prints the same bytes.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "slicefit/replay_search.h"

static void cell(FILE *out, double v, int width)
{
  if (isnan(v))
    fprintf(out, " %*s", width, "-");
  else
    fprintf(out, " %*.2f", width, v);
}

static int knob_width(const char *key)
{
  int w = (int)strlen(key);
  return w < 8 ? 8 : w;
}

static void seeds_text(FILE *out, const sf_search_opts_t *o)
{
  bool run = o->nseeds > 1;
  for (size_t k = 1; k < o->nseeds; k++)
    run = run && o->seeds[k] == o->seeds[k - 1] + 1;
  if (run) {
    fprintf(out, "%llu-%llu", (unsigned long long)o->seeds[0],
            (unsigned long long)o->seeds[o->nseeds - 1]);
    return;
  }
  for (size_t k = 0; k < o->nseeds; k++)
    fprintf(out, "%s%llu", k ? "," : "", (unsigned long long)o->seeds[k]);
}

static void header(FILE *out, const sf_search_result_t *res, const sf_search_opts_t *o)
{
  fprintf(out,
          "search: %zu candidates (search seed %llu; candidate 0 is the base policy), "
          "varying",
          o->ncandidates, (unsigned long long)o->search_seed);
  for (size_t k = 0; k < res->nknobs; k++)
    fprintf(out, "%s %s", k ? "," : "", res->knobs[k]);
  fprintf(out, "%s\n", res->nknobs ? "" : " nothing");
  for (size_t k = 0; k < res->nidle; k++)
    fprintf(out, "not varied: %s (%s)\n", res->idle[k][0], res->idle[k][1]);
  fprintf(out,
          "split: by arrival (a native trace's times, an Alibaba list's creation_time): "
          "train = the first %u%% (%zu pods), holdout = the last %u%% (%zu pods); each part "
          "is replayed on its own",
          o->train_pct, res->ntrain_pods, 100 - o->train_pct, res->nholdout_pods);
  if (o->tune > 0)
    fprintf(out, ", its pods resampled to %.2f x GPU capacity", o->tune);
  fprintf(out, "\nseeds ");
  seeds_text(out, o);
  fprintf(out,
          ": every candidate on train with seed %llu; the best %zu (with the base) on train "
          "with every seed; the best %d, the base and the built-ins on the holdout with every "
          "seed (%zu replays)\n",
          (unsigned long long)o->seeds[0], res->rung1, SF_SEARCH_FINALISTS, res->replays);
  if (o->churn != NULL)
    fprintf(out,
            "objective (--churn): sustainable load x 100 (p99 waits under %g s, to 0.01), "
            "mean over the seeds; the winner is chosen on train alone\n\n",
            o->churn->slo_s);
  else
    fprintf(out, "objective: GPU allocation %% when the arrived GPU request reaches 100%% of "
                 "capacity (130%% breaks ties), mean over the seeds; the winner is chosen on "
                 "train alone\n\n");
}

static void row(FILE *out, const sf_search_row_t *r, const sf_search_result_t *res)
{
  fprintf(out, "%-22s", r->name);
  cell(out, r->train100, 9);
  cell(out, r->train130, 9);
  cell(out, r->holdout100, 9);
  cell(out, r->holdout130, 9);
  fprintf(out, "  %-13s %-9s", sf_strategy_name(r->pol.strategy),
          r->pol.device_choice == SF_CHOICE_PACKER ? "packer" : "first-fit");
  for (size_t k = 0; k < res->nknobs; k++) {
    char *val = sf_search_value(&r->pol, res->knobs[k]);
    fprintf(out, " %*s", knob_width(res->knobs[k]), val ? val : "?");
    free(val);
  }
  fputc('\n', out);
}

void sf_search_table(FILE *out, const sf_search_result_t *res, const sf_search_opts_t *o)
{
  header(out, res, o);
  fprintf(out, "%-22s %9s %9s %9s %9s  %-13s %-9s", "policy", "train@100", "train@130", "hold@100",
          "hold@130", "strategy", "device");
  for (size_t k = 0; k < res->nknobs; k++)
    fprintf(out, " %*s", knob_width(res->knobs[k]), res->knobs[k]);
  fputc('\n', out);
  for (size_t r = 0; r < res->nrows; r++) {
    if (r == res->winner)
      fprintf(out, "-- the best candidates on train, best first:\n");
    row(out, &res->rows[r], res);
  }
  const sf_search_row_t *w = &res->rows[res->winner], *b = &res->rows[res->reference];
  fprintf(out,
          "\nwinner: %s: %+.2f points @100 on train and %+.2f on the holdout against the base "
          "(%s)\n",
          w->name, w->train100 - b->train100, w->holdout100 - b->holdout100, b->name);
}

/* A YAML double-quoted scalar: backslash and quote escaped, control bytes as \xNN. */
static void quoted(FILE *out, const char *s)
{
  fputc('"', out);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(out, "\\%c", c);
    else if (c < 0x20 || c == 0x7f)
      fprintf(out, "\\x%02x", c);
    else
      fputc(c, out);
  }
  fputc('"', out);
}

static void comment_lines(FILE *out, const char *indent, const char *text)
{
  while (*text) {
    size_t n = strcspn(text, "\n");
    fprintf(out, "%s#%s%.*s\n", indent, n ? " " : "", (int)n, text);
    text += n + (text[n] == '\n');
  }
}

void sf_search_configmap(FILE *out, const sf_policy_t *pol, const char *head)
{
  size_t nkeys;
  const sf_policy_key_t *keys = sf_policy_keys(&nkeys);
  if (head != NULL)
    comment_lines(out, "", head);
  fprintf(out,
          "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\n"
          "  labels:\n    app.kubernetes.io/name: slicefit\ndata:\n",
          SF_SEARCH_CONFIGMAP_NAME, SF_SEARCH_CONFIGMAP_NAMESPACE);
  for (size_t k = 0; k < nkeys; k++) {
    char *val = sf_search_value(pol, keys[k].key);
    fprintf(out, "  # %s (default \"%s\")\n  %s: ", keys[k].doc, keys[k].def, keys[k].key);
    quoted(out, val);
    fputc('\n', out);
    free(val);
  }
}
