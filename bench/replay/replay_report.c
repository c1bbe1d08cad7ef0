/*
 * Reports of replay runs: JSON lines (jansson), the readable table, the SVG
 * plot of allocation against arrived load (the paper's Figure 9(a)), and
 * the cost per tenant.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "slicefit/replay.h"
#include "replay_json.h"

#define JSON_FLAGS (JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(7))

json_t *sf__replay_json_num(double v)
{
  return isnan(v) || isinf(v) ? json_null() : json_real(round(v * 1000.0) / 1000.0);
}


static json_t *thresholds_obj(const double *v)
{
  json_t *o = json_object();
  char key[8];
  for (size_t k = 0; k < SF_REPLAY_NTHRESH; k++) {
    snprintf(key, sizeof(key), "%d", sf_replay_thresholds[k]);
    json_object_set_new(o, key, sf__replay_json_num(v[k]));
  }
  return o;
}

static double tenants_per_gpu(double tenants, double gpus)
{
  return gpus > 0 ? tenants / gpus : NAN;
}

static double usd_per_tenant(double tenants, double nodes, double price)
{
  return tenants > 0 ? price * nodes / tenants : NAN;
}

static json_t *cost_obj(double tenants, double gpus, double nodes, double price)
{
  json_t *o = json_object();
  json_object_set_new(o, "node_price_usd_month", sf__replay_json_num(price));
  json_object_set_new(o, "tenants", sf__replay_json_num(tenants));
  json_object_set_new(o, "tenants_per_gpu", sf__replay_json_num(tenants_per_gpu(tenants, gpus)));
  json_object_set_new(o, "usd_per_tenant_month",
                      sf__replay_json_num(usd_per_tenant(tenants, nodes, price)));
  return o;
}

/* sf_replay_result_t.free_*_pct_at_100, as one object. */
static json_t *free_obj(double too_small, double starved, double usable)
{
  json_t *o = json_object();
  json_object_set_new(o, "too_small_pct", sf__replay_json_num(too_small));
  json_object_set_new(o, "starved_pct", sf__replay_json_num(starved));
  json_object_set_new(o, "usable_pct", sf__replay_json_num(usable));
  return o;
}

void sf__replay_json_emit(FILE *out, json_t *o)
{
  json_dumpf(o, out, JSON_FLAGS);
  fputc('\n', out);
  json_decref(o);
}


void sf_replay_json_run(FILE *out, const sf_replay_result_t *r, double node_price)
{
  json_t *o = json_object();
  json_object_set_new(o, "policy", json_string(r->policy));
  json_object_set_new(o, "seed", json_integer((json_int_t)r->seed));
  json_object_set_new(o, "tune", sf__replay_json_num(r->tune));
  json_object_set_new(o, "nodes", json_integer(r->nodes));
  json_object_set_new(o, "gpus", json_integer(r->gpus));
  json_object_set_new(o, "pods_arrived", json_integer((json_int_t)r->pods_arrived));
  json_object_set_new(o, "pods_failed", json_integer((json_int_t)r->pods_failed));
  json_object_set_new(o, "gpu_pods_failed", json_integer((json_int_t)r->gpu_pods_failed));
  json_object_set_new(o, "pods_departed", json_integer((json_int_t)r->pods_departed));
  json_object_set_new(o, "alloc_pct_at", thresholds_obj(r->alloc_pct_at));
  json_object_set_new(o, "unallocated_pct_at_100", sf__replay_json_num(r->unallocated_pct_at_100));
  json_object_set_new(o, "frag_pct_at_100", sf__replay_json_num(r->frag_pct_at_100));
  json_object_set_new(o, "sliver_floor_pct_at_100", sf__replay_json_num(r->sliver_floor_pct_at_100));
  json_object_set_new(o, "free_at_100",
                      free_obj(r->free_too_small_pct_at_100, r->free_starved_pct_at_100,
                               r->free_usable_pct_at_100));
  json_object_set_new(o, "alloc_pct_final", sf__replay_json_num(r->alloc_pct_final));
  json_object_set_new(o, "arrived_pct_final", sf__replay_json_num(r->arrived_pct_final));
  json_object_set_new(o, "decision_us_p50", sf__replay_json_num(r->decision_us_p50));
  json_object_set_new(o, "decision_us_p99", sf__replay_json_num(r->decision_us_p99));
  json_object_set_new(o, "node_eval_us", sf__replay_json_num(r->node_eval_us));
  json_object_set_new(o, "nodes_evaluated", json_integer((json_int_t)r->nodes_evaluated));
  json_object_set_new(o, "verdicts_kept", json_integer((json_int_t)r->verdicts_kept));
  json_object_set_new(o, "wall_s", sf__replay_json_num(r->wall_s));
  if (node_price > 0)
    json_object_set_new(o, "cost",
                        cost_obj((double)r->tenants_at_100, r->gpus, r->nodes, node_price));
  sf__replay_json_emit(out, o);
}

double sf__replay_median_at(const void *recs, size_t n, size_t stride, size_t off)
{
  double *v = sf_xcalloc(n + 1, sizeof(*v));
  for (size_t i = 0; i < n; i++)
    memcpy(&v[i], (const char *)recs + i * stride + off, sizeof(double));
  double m = sf_replay_median(v, n);
  free(v);
  return m;
}

/* The median over runs of one field, picked by offset. */
static double med_field(const sf_replay_result_t *runs, size_t n, size_t off)
{
  return sf__replay_median_at(runs, n, sizeof(*runs), off);
}

#define MED(runs, n, field) med_field(runs, n, offsetof(sf_replay_result_t, field))

static double med_size(const sf_replay_result_t *runs, size_t n, size_t off)
{
  double *v = sf_xcalloc(n + 1, sizeof(*v));
  for (size_t i = 0; i < n; i++) {
    size_t x;
    memcpy(&x, (const char *)&runs[i] + off, sizeof(x));
    v[i] = (double)x;
  }
  double m = sf_replay_median(v, n);
  free(v);
  return m;
}

#define MEDZ(runs, n, field) med_size(runs, n, offsetof(sf_replay_result_t, field))

static void med_thresholds(const sf_replay_result_t *runs, size_t n, double *out)
{
  for (size_t k = 0; k < SF_REPLAY_NTHRESH; k++)
    out[k] = med_field(runs, n, offsetof(sf_replay_result_t, alloc_pct_at) + k * sizeof(double));
}

static double sd_at_100(const sf_replay_result_t *runs, size_t n)
{
  double sum = 0, sq = 0;
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    double v = runs[i].alloc_pct_at[4];
    if (isnan(v))
      continue;
    sum += v;
    sq += v * v;
    m++;
  }
  if (m < 2)
    return NAN;
  double mean = sum / (double)m;
  return sqrt(fmax(0.0, (sq - (double)m * mean * mean) / (double)(m - 1)));
}

void sf_replay_json_medians(FILE *out, const sf_replay_result_t *runs, size_t n, double node_price)
{
  double at[SF_REPLAY_NTHRESH];
  json_t *o = json_object(), *m = json_object(), *seeds = json_array();
  if (n == 0)
    return;
  med_thresholds(runs, n, at);
  for (size_t i = 0; i < n; i++)
    json_array_append_new(seeds, json_integer((json_int_t)runs[i].seed));
  json_object_set_new(o, "policy", json_string(runs[0].policy));
  json_object_set_new(o, "tune", sf__replay_json_num(runs[0].tune));
  json_object_set_new(o, "gpus", json_integer(runs[0].gpus));
  json_object_set_new(o, "seeds", seeds);
  json_object_set_new(m, "pods_arrived", sf__replay_json_num(MEDZ(runs, n, pods_arrived)));
  json_object_set_new(m, "pods_failed", sf__replay_json_num(MEDZ(runs, n, pods_failed)));
  json_object_set_new(m, "alloc_pct_at", thresholds_obj(at));
  json_object_set_new(m, "alloc_sd_at_100", sf__replay_json_num(sd_at_100(runs, n)));
  json_object_set_new(m, "unallocated_pct_at_100",
                      sf__replay_json_num(MED(runs, n, unallocated_pct_at_100)));
  json_object_set_new(m, "frag_pct_at_100", sf__replay_json_num(MED(runs, n, frag_pct_at_100)));
  json_object_set_new(m, "sliver_floor_pct_at_100",
                      sf__replay_json_num(MED(runs, n, sliver_floor_pct_at_100)));
  json_object_set_new(m, "free_at_100",
                      free_obj(MED(runs, n, free_too_small_pct_at_100),
                               MED(runs, n, free_starved_pct_at_100),
                               MED(runs, n, free_usable_pct_at_100)));
  json_object_set_new(m, "decision_us_p50", sf__replay_json_num(MED(runs, n, decision_us_p50)));
  json_object_set_new(m, "decision_us_p99", sf__replay_json_num(MED(runs, n, decision_us_p99)));
  json_object_set_new(m, "node_eval_us", sf__replay_json_num(MED(runs, n, node_eval_us)));
  json_object_set_new(m, "wall_s", sf__replay_json_num(MED(runs, n, wall_s)));
  if (node_price > 0)
    json_object_set_new(m, "cost",
                        cost_obj(MEDZ(runs, n, tenants_at_100), runs[0].gpus, runs[0].nodes,
                                 node_price));
  json_object_set_new(o, "medians", m);
  sf__replay_json_emit(out, o);
}

static void cell(FILE *out, double v, int width, int prec)
{
  if (isnan(v))
    fprintf(out, " %*s", width, "-");
  else
    fprintf(out, " %*.*f", width, prec, v);
}

void sf_replay_table(FILE *out, const sf_replay_result_t *const *runs, const size_t *nruns,
                     size_t npolicies, double node_price)
{
  static const int cols[] = {90, 95, 100, 110, 130};
  fprintf(out, "%-13s %5s", "policy", "seeds");
  for (size_t c = 0; c < sizeof(cols) / sizeof(cols[0]); c++)
    fprintf(out, " %6s%d", "@", cols[c]);
  fprintf(out, " %8s %8s %8s %7s %8s %8s", "unalloc", "frag", "starved", "failed", "p50 us",
          "p99 us");
  if (node_price > 0)
    fprintf(out, " %8s %9s", "ten/GPU", "$/ten-mo");
  fputc('\n', out);
  for (size_t p = 0; p < npolicies; p++) {
    const sf_replay_result_t *r = runs[p];
    size_t n = nruns[p];
    double at[SF_REPLAY_NTHRESH];
    if (n == 0)
      continue;
    med_thresholds(r, n, at);
    fprintf(out, "%-13s %5zu", r[0].policy, n);
    for (size_t c = 0; c < sizeof(cols) / sizeof(cols[0]); c++)
      for (size_t k = 0; k < SF_REPLAY_NTHRESH; k++)
        if (sf_replay_thresholds[k] == cols[c])
          cell(out, at[k], 9 - (cols[c] >= 100), 2);
    cell(out, MED(r, n, unallocated_pct_at_100), 8, 2);
    cell(out, MED(r, n, frag_pct_at_100), 8, 2);
    cell(out, MED(r, n, free_starved_pct_at_100), 8, 2);
    cell(out, MEDZ(r, n, pods_failed), 7, 0);
    cell(out, MED(r, n, decision_us_p50), 8, 1);
    cell(out, MED(r, n, decision_us_p99), 8, 1);
    if (node_price > 0) {
      double ten = MEDZ(r, n, tenants_at_100);
      cell(out, tenants_per_gpu(ten, r[0].gpus), 8, 2);
      cell(out, usd_per_tenant(ten, r[0].nodes, node_price), 9, 2);
    }
    fputc('\n', out);
  }
  fprintf(out, "columns: GPU allocation %% (median over seeds) when the arrived GPU request reaches "
               "@N %% of capacity;\nunalloc, frag (FGD's fragmentation amount) and starved (free GPU "
               "no pod of the trace that fits it\ncan use for its node's CPU and memory) in %% of "
               "all GPUs at 100%%; failed pods; core time per decision.\n");
  if (node_price > 0)
    fprintf(out, "cost: GPU tenants placed at 100%% load per GPU, and node price x nodes / "
                 "tenants, per month.\n");
}

/* ---- SVG ---- */

static const char *const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                      "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"};

/* Quantile q of the curves' value at point i (over runs that reached it). */
static double curve_q(const sf_replay_result_t *r, size_t n, size_t i, double q)
{
  double v[256];
  size_t m = 0;
  for (size_t s = 0; s < n && m < 256; s++)
    if (i < r[s].ncurve)
      v[m++] = r[s].curve[i];
  if (m == 0)
    return NAN;
  if (q == 0.5)
    return sf_replay_median(v, m);
  sf_replay_median(v, m); /* sorts */
  double pos = q * (double)(m - 1);
  size_t lo = (size_t)floor(pos);
  size_t hi = lo + 1 < m ? lo + 1 : lo;
  return v[lo] + (v[hi] - v[lo]) * (pos - (double)lo);
}

static void xml_text(FILE *out, const char *s)
{
  for (; *s; s++) {
    if (*s == '<')
      fputs("&lt;", out);
    else if (*s == '>')
      fputs("&gt;", out);
    else if (*s == '&')
      fputs("&amp;", out);
    else
      fputc(*s, out);
  }
}

#define W 760.0
#define H 480.0
#define ML 64.0
#define MR 170.0
#define MT 40.0
#define MB 52.0

/*
 * The plot's frame: x from xmin to xmax (arrived load, %), y from ymin to
 * 100. The y axis is zoomed to where the policies differ (see y_floor), and
 * x starts where the ideal enters the frame (xmin = ymin: below it every
 * curve is under the frame); the ideal line is always drawn, clipped to the
 * frame like the curves.
 */
typedef struct {
  double xmin, xmax, ymin, xstep, ystep;
} frame_t;

static double sx(const frame_t *f, double x)
{
  return ML + (x - f->xmin) / (f->xmax - f->xmin) * (W - ML - MR);
}

static double sy(const frame_t *f, double y)
{
  return MT + (100.0 - y) / (100.0 - f->ymin) * (H - MT - MB);
}

/* A tick step giving at most 10 ticks over span: 1, 2, 5, 10, 20, 50, ... */
static double tick_step(double span)
{
  static const double steps[] = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000};
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
    if (span / steps[i] <= 10)
      return steps[i];
  return 1000;
}

static double ideal(double x)
{
  return x < 100 ? x : 100;
}

/*
 * Bottom of the y axis: the lowest quartile any policy reaches from the
 * first point where some policy falls a point below the ideal; before that
 * every curve follows the ideal, which needs no room. Rounded down to 5.
 */
static double y_floor(const sf_replay_result_t *const *runs, const size_t *nruns, size_t np,
                      size_t npts)
{
  size_t from = npts;
  for (size_t i = 0; i < npts && from == npts; i++)
    for (size_t p = 0; p < np; p++) {
      double y = nruns[p] ? curve_q(runs[p], nruns[p], i, 0.5) : NAN;
      if (!isnan(y) && y < ideal((double)i * SF_REPLAY_CURVE_STEP) - 1)
        from = i;
    }
  double lo = 100;
  for (size_t i = from; i < npts; i++)
    for (size_t p = 0; p < np; p++) {
      double y = nruns[p] ? curve_q(runs[p], nruns[p], i, 0.25) : NAN;
      if (!isnan(y) && y < lo)
        lo = y;
    }
  double floor5 = floor((lo - 1) / 5) * 5;
  return floor5 < 0 ? 0 : floor5 > 90 ? 90 : floor5;
}

static void svg_axes(FILE *out, const frame_t *f, const char *title)
{
  fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n", W, H);
  fprintf(out,
          "<clipPath id=\"plot\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>"
          "</clipPath>\n",
          ML, MT, W - ML - MR, H - MT - MB);
  fprintf(out, "<text x=\"%.0f\" y=\"24\" font-size=\"15\" text-anchor=\"middle\">", W / 2);
  xml_text(out, title);
  fputs("</text>\n", out);
  for (double x = f->xmin; x <= f->xmax + 1e-9; x += f->xstep) {
    fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
            sx(f, x), sy(f, f->ymin), sx(f, x), sy(f, 100));
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">%.0f</text>\n",
            sx(f, x), H - MB + 16, x);
  }
  for (double y = f->ymin; y <= 100 + 1e-9; y += f->ystep) {
    fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
            sx(f, f->xmin), sy(f, y), sx(f, f->xmax), sy(f, y));
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%.0f</text>\n",
            ML - 6, sy(f, y) + 4, y);
  }
  fprintf(out,
          "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\">arrived GPU "
          "request (%% of capacity)</text>\n",
          (ML + W - MR) / 2, H - 12);
  fprintf(out,
          "<text x=\"16\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\" "
          "transform=\"rotate(-90 16 %.1f)\">GPU allocation (%%)</text>\n",
          (MT + H - MB) / 2, (MT + H - MB) / 2);
  /* The ideal: everything that arrived is allocated, up to capacity. */
  fprintf(out,
          "<polyline clip-path=\"url(#plot)\" fill=\"none\" stroke=\"#888\" "
          "stroke-dasharray=\"5,4\" points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\"/>\n",
          sx(f, 0), sy(f, 0), sx(f, 100), sy(f, 100), sx(f, f->xmax), sy(f, 100));
}

/* Line styles told apart without colour too: solid, dashed, dotted, dash-dot, long dash. */
static const char *const dashes[] = {"", "7,3", "2,3", "8,3,2,3", "14,4"};

static void svg_points(FILE *out, const frame_t *f, const sf_replay_result_t *r, size_t n,
                       size_t npts, double q, bool backwards)
{
  for (size_t k = 0; k < npts; k++) {
    size_t i = backwards ? npts - 1 - k : k;
    double y = curve_q(r, n, i, q);
    if (!isnan(y))
      fprintf(out, "%.1f,%.1f ", sx(f, (double)i * SF_REPLAY_CURVE_STEP), sy(f, y));
  }
}

static void svg_policy(FILE *out, const frame_t *f, const sf_replay_result_t *r, size_t n,
                       size_t npts, size_t slot)
{
  const char *color = palette[slot % 10], *dash = dashes[slot % 5];
  /* The interquartile band over seeds, then the median line, both clipped to the frame. */
  fprintf(out,
          "<g clip-path=\"url(#plot)\">\n<polygon fill=\"%s\" fill-opacity=\"0.12\" "
          "stroke=\"none\" points=\"",
          color);
  svg_points(out, f, r, n, npts, 0.75, false);
  svg_points(out, f, r, n, npts, 0.25, true);
  fprintf(out,
          "\"/>\n<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.6\" "
          "stroke-dasharray=\"%s\" points=\"",
          color, dash);
  svg_points(out, f, r, n, npts, 0.5, false);
  fputs("\"/>\n</g>\n", out);
  double ly = MT + 14 + (double)slot * 20;
  fprintf(out,
          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
          "stroke-width=\"3\" stroke-dasharray=\"%s\"/>\n",
          W - MR + 14, ly, W - MR + 38, ly, color, dash);
  fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">", W - MR + 44, ly + 4);
  xml_text(out, r[0].policy);
  fputs("</text>\n", out);
}

int sf_replay_svg(FILE *out, const sf_replay_result_t *const *runs, const size_t *nruns,
                  size_t npolicies, const char *title)
{
  frame_t f = {0, 100, 0, 10, 10};
  size_t npts = 0;
  for (size_t p = 0; p < npolicies; p++)
    for (size_t s = 0; s < nruns[p]; s++)
      if (runs[p][s].ncurve > npts)
        npts = runs[p][s].ncurve;
  if (npts < 2)
    return SF_EINVAL;
  f.xmax = ceil((double)(npts - 1) * SF_REPLAY_CURVE_STEP / 10.0) * 10.0;
  if (f.xmax < 100)
    f.xmax = 100;
  f.ymin = y_floor(runs, nruns, npolicies, npts);
  f.ystep = tick_step(100 - f.ymin);
  f.ymin = floor(f.ymin / f.ystep) * f.ystep;
  f.xstep = tick_step(f.xmax - f.ymin);
  f.xmin = floor(f.ymin / f.xstep) * f.xstep;
  fprintf(out,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
          "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\">\n",
          W, H, W, H);
  svg_axes(out, &f, title);
  for (size_t p = 0; p < npolicies; p++)
    if (nruns[p] > 0)
      svg_policy(out, &f, runs[p], nruns[p], npts, p);
  double ly = MT + 14 + (double)npolicies * 20;
  fprintf(out,
          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\" "
          "stroke-dasharray=\"5,4\"/>\n",
          W - MR + 14, ly, W - MR + 38, ly);
  fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">ideal</text>\n", W - MR + 44, ly + 4);
  fputs("</svg>\n", out);
  return 0;
}
