/*
 * Reports of churn runs: JSON lines (jansson), the readable table and the
 * SVG of allocation and queue length over time.
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "replay_churn_int.h"
#include "replay_json.h"


static json_t *waits_obj(const sf_churn_wait_t *w)
{
  json_t *o = json_object();
  for (int k = 0; k < SF_CHURN_NCLASS; k++) {
    json_t *c = json_object();
    json_object_set_new(c, "p50", sf__replay_json_num(w[k].p50));
    json_object_set_new(c, "p95", sf__replay_json_num(w[k].p95));
    json_object_set_new(c, "p99", sf__replay_json_num(w[k].p99));
    json_object_set_new(c, "mean", sf__replay_json_num(w[k].mean));
    json_object_set_new(c, "n", json_integer((json_int_t)w[k].n));
    json_object_set_new(o, sf_churn_class_names[k], c);
  }
  return o;
}

static json_t *figures_obj(const sf_churn_result_t *r, const sf_churn_wait_t *w)
{
  json_t *o = json_object();
  json_object_set_new(o, "policy", json_string(r->policy));
  json_object_set_new(o, "load", sf__replay_json_num(r->load));
  json_object_set_new(o, "alloc_time_avg_pct", sf__replay_json_num(r->alloc_time_avg_pct));
  json_object_set_new(o, "pending_s", waits_obj(w));
  json_object_set_new(o, "idle_while_waiting_gpu_h",
                      sf__replay_json_num(r->idle_while_waiting_gpu_h));
  json_t *h = json_array();
  json_array_append_new(h, sf__replay_json_num(r->idle_half_gpu_h[0]));
  json_array_append_new(h, sf__replay_json_num(r->idle_half_gpu_h[1]));
  json_object_set_new(o, "idle_while_waiting_gpu_h_by_half_day", h);
  json_object_set_new(o, "never_placed", json_integer((json_int_t)r->never_placed));
  json_object_set_new(o, "evicted", json_integer((json_int_t)r->evicted));
  json_object_set_new(o, "wall_s", sf__replay_json_num(r->wall_s));
  json_object_set_new(o, "warmup_s", sf__replay_json_num(r->warmup_s));
  return o;
}

void sf_churn_json_run(FILE *out, const sf_churn_result_t *r)
{
  json_t *o = figures_obj(r, r->pending_s);
  json_object_set_new(o, "seed", json_integer((json_int_t)r->seed));
  json_object_set_new(o, "arrivals_per_s", sf__replay_json_num(r->rate));
  json_object_set_new(o, "arrivals", json_integer((json_int_t)r->arrivals));
  json_object_set_new(o, "measured", json_integer((json_int_t)r->measured));
  json_object_set_new(o, "attempts", json_integer((json_int_t)r->attempts));
  json_object_set_new(o, "stopped", json_boolean(r->stopped));
  sf__replay_json_emit(out, o);
}

/* The median over n runs of the double at byte offset off. */
static double med(const sf_churn_result_t *runs, size_t n, size_t off)
{
  return sf__replay_median_at(runs, n, sizeof(*runs), off);
}

/* The medians of one run's every figure over n runs (counts as doubles rounded). */
static void medians(const sf_churn_result_t *runs, size_t n, sf_churn_result_t *m)
{
  memset(m, 0, sizeof(*m));
  if (n == 0)
    return;
  snprintf(m->policy, sizeof(m->policy), "%s", runs[0].policy);
  m->load = runs[0].load;
  m->alloc_time_avg_pct = med(runs, n, offsetof(sf_churn_result_t, alloc_time_avg_pct));
  m->idle_while_waiting_gpu_h = med(runs, n, offsetof(sf_churn_result_t, idle_while_waiting_gpu_h));
  m->idle_half_gpu_h[0] = med(runs, n, offsetof(sf_churn_result_t, idle_half_gpu_h[0]));
  m->idle_half_gpu_h[1] = med(runs, n, offsetof(sf_churn_result_t, idle_half_gpu_h[1]));
  m->wall_s = med(runs, n, offsetof(sf_churn_result_t, wall_s));
  m->warmup_s = med(runs, n, offsetof(sf_churn_result_t, warmup_s));
  double *v = sf_xcalloc(n + 1, sizeof(*v));
  for (size_t i = 0; i < n; i++)
    v[i] = (double)runs[i].never_placed;
  m->never_placed = (size_t)llround(sf_replay_median(v, n));
  for (size_t i = 0; i < n; i++)
    v[i] = (double)runs[i].evicted;
  m->evicted = (size_t)llround(sf_replay_median(v, n));
  free(v);
  for (int k = 0; k < SF_CHURN_NCLASS; k++)
    sf__churn_pooled(runs, n, k, &m->pending_s[k]);
}

void sf_churn_json_medians(FILE *out, const sf_churn_result_t *runs, size_t n, double sustainable)
{
  sf_churn_result_t m;
  medians(runs, n, &m);
  json_t *o = figures_obj(&m, m.pending_s);
  json_object_set_new(o, "seeds", json_integer((json_int_t)n));
  json_object_set_new(o, "median", json_true());
  json_object_set_new(o, "sustainable_load",
                      sustainable >= 0 ? sf__replay_json_num(sustainable) : json_null());
  sf__replay_json_emit(out, o);
}

static void cell(FILE *out, double v, int width, int prec)
{
  if (isnan(v))
    fprintf(out, " %*s", width, "-");
  else
    fprintf(out, " %*.*f", width, prec, v);
}

void sf_churn_table(FILE *out, const sf_churn_result_t *const *runs, const size_t *nruns,
                    const double *sustainable, size_t npolicies)
{
  fprintf(out, "%-14s %6s %7s", "policy", "alloc%", "sustain");
  for (int k = 0; k < SF_CHURN_NCLASS; k++)
    fprintf(out, " %6s-p50 %6s-p99", sf_churn_class_names[k], sf_churn_class_names[k]);
  fprintf(out, " %9s %6s %4s %6s\n", "idle-GPUh", "never", "evic", "wall_s");
  for (size_t p = 0; p < npolicies; p++) {
    sf_churn_result_t m;
    medians(runs[p], nruns[p], &m);
    fprintf(out, "%-14s", m.policy);
    cell(out, m.alloc_time_avg_pct, 6, 2);
    cell(out, sustainable != NULL && sustainable[p] >= 0 ? sustainable[p] : NAN, 7, 2);
    for (int k = 0; k < SF_CHURN_NCLASS; k++) {
      cell(out, m.pending_s[k].p50, 10, 1);
      cell(out, m.pending_s[k].p99, 10, 1);
    }
    cell(out, m.idle_while_waiting_gpu_h, 9, 1);
    fprintf(out, " %6zu %4zu", m.never_placed, m.evicted);
    cell(out, m.wall_s, 6, 2);
    fputc('\n', out);
  }
  fputs("columns: after the warm-up, medians over seeds of: GPU allocation averaged over time;\n"
        "sustainable load (--sustainable: the highest load whose p99 waits stay under --slo);\n"
        "pending seconds (p50, p99 over the pods of all seeds) of share (< 1 GPU), whole (1 GPU),\n"
        "multi (2+ GPUs) and pinned (a GPU model asked) pods; GPU-hours free while a pod that would\n"
        "fit in that much waited; pods never placed; evictions; wall time per run.\n",
        out);
}

/* ---- SVG: two panels over time, allocation % and queue length ---- */

static const char *const colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                     "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

static void panel(FILE *out, const sf_churn_result_t *const *runs, const size_t *nruns, size_t np,
                  bool queue, double y0, const char *label)
{
  const double x0 = 70, w = 760, h = 220;
  double top = 0;
  double *v = sf_xcalloc(64, sizeof(*v));
  double(*m)[SF_CHURN_BUCKETS] = sf_xcalloc(np + 1, sizeof(*m));
  for (size_t p = 0; p < np; p++)
    for (size_t b = 0; b < SF_CHURN_BUCKETS; b++) {
      size_t n = nruns[p] < 64 ? nruns[p] : 64;
      for (size_t i = 0; i < n; i++)
        v[i] = queue ? runs[p][i].queue[b] : runs[p][i].alloc_pct[b];
      m[p][b] = sf_replay_median(v, n);
      top = m[p][b] > top ? m[p][b] : top;
    }
  top = queue ? (top > 1 ? ceil(top * 1.1) : 1) : 100;
  double dur = runs[0][0].bucket_s * SF_CHURN_BUCKETS;
  fprintf(out, "<rect x='%g' y='%g' width='%g' height='%g' fill='none' stroke='#999'/>\n", x0, y0, w,
          h);
  fprintf(out, "<text x='%g' y='%g' font-size='12' transform='rotate(-90 %g %g)'>%s</text>\n",
          x0 - 45, y0 + h / 2 + 40, x0 - 45, y0 + h / 2 + 40, label);
  for (int k = 0; k <= 4; k++) {
    fprintf(out, "<text x='%g' y='%g' font-size='10' text-anchor='end'>%.0f</text>\n", x0 - 4,
            y0 + h - h * k / 4 + 3, top * k / 4);
    fprintf(out, "<text x='%g' y='%g' font-size='10' text-anchor='middle'>%.1f h</text>\n",
            x0 + w * k / 4, y0 + h + 14, dur * k / 4 / 3600);
  }
  for (size_t p = 0; p < np; p++) {
    fprintf(out, "<polyline fill='none' stroke-width='1.5' stroke='%s' points='", colors[p % 8]);
    for (size_t b = 0; b < SF_CHURN_BUCKETS; b++)
      if (!isnan(m[p][b]))
        fprintf(out, "%.1f,%.1f ", x0 + w * ((double)b + 0.5) / SF_CHURN_BUCKETS,
                y0 + h - h * fmin(m[p][b], top) / top);
    fprintf(out, "'/>\n");
  }
  free(m);
  free(v);
}

int sf_churn_svg(FILE *out, const sf_churn_result_t *const *runs, const size_t *nruns,
                 size_t npolicies, const char *title)
{
  for (size_t p = 0; p < npolicies; p++)
    if (nruns[p] == 0)
      return SF_EINVAL;
  if (npolicies == 0)
    return SF_EINVAL;
  fprintf(out, "<svg xmlns='http://www.w3.org/2000/svg' width='900' height='600' "
               "font-family='sans-serif'>\n<rect width='900' height='600' fill='white'/>\n");
  fprintf(out, "<text x='450' y='22' font-size='14' text-anchor='middle'>");
  for (const char *s = title; *s; s++) {
    if (*s == '<' || *s == '>' || *s == '&' || *s == '\'')
      fprintf(out, "&#%d;", *s);
    else
      fputc(*s, out);
  }
  fprintf(out, "</text>\n");
  panel(out, runs, nruns, npolicies, false, 40, "GPU allocated %");
  panel(out, runs, nruns, npolicies, true, 300, "pods waiting");
  for (size_t p = 0; p < npolicies; p++)
    fprintf(out,
            "<rect x='%zu' y='560' width='12' height='4' fill='%s'/><text x='%zu' y='566' "
            "font-size='11'>%s</text>\n",
            70 + p * 150, colors[p % 8], 86 + p * 150, runs[p][0].policy);
  fprintf(out, "</svg>\n");
  return 0;
}
