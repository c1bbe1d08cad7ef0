/*
 * The plan of the shares (pk_plan.h), all of it: the configuration LP of
 * the mix's share sizes, solved by column generation, and the table K of
 * what a free share is worth at its dual prices; its inputs, built from the
 * mix loaded (the share sizes per device capacity, the CPU that feeds each
 * free share, the capacities planned for); and the loss a placement pays
 * against it and what a placement strands of it, the terms weight_plan and
 * weight_strand weigh in strategy fragmentation's cost.
 *
 * The LP, for sizes s_i (per-mille) with weights c_i:
 *   max  sum_p v_p x_p   (v_p = sum_i a_ip s_i, the share a pattern p places)
 *   s.t. sum_p x_p       <= G = sum_i c_i s_i / 1000   (the GPUs the shares fill)
 *        sum_p a_ip x_p  <= c_i                         (no more shares than the mix)
 * It is homogeneous in (c, G): the mix's weights, not its pod counts, decide
 * the prices. G is the shares' volume: the cluster is full when fragmentation
 * matters, and no packing places every share then, so the GPUs bind and each
 * share is priced by what of a GPU it really takes (a 470 with another 470
 * half of what an 810 alone is worth). Revised simplex with an explicit
 * basis inverse, from the slack basis; the entering column is the pattern
 * of most reduced value, found by an unbounded knapsack over per-mille
 * cells. The right-hand side is perturbed by a tiny amount per row so that
 * no pivot is degenerate and the prices are one answer, not one of many.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "packer_int.h"

#define EPS 1e-9

/* The greatest common divisor of the sizes: the knapsack's cells. */
static int32_t unit_of(const plan_item_t *it, size_t n)
{
  int32_t g = 0;
  for (size_t i = 0; i < n; i++) {
    int32_t a = it[i].size, b = g;
    while (b != 0) {
      int32_t t = a % b;
      a = b;
      b = t;
    }
    g = a;
  }
  return g > 0 ? g : 1;
}

/*
 * The pattern of most value sum a_i val_i within PLAN_CELLS, a_i >= 0
 * (an item of val_i <= 0 never taken), over cells of `unit` per-mille.
 */
static double knapsack(const plan_item_t *it, const double *val, size_t n, int32_t unit, uint32_t *a)
{
  double best[PLAN_CELLS + 1];
  int16_t pick[PLAN_CELLS + 1];
  int cells = PLAN_CELLS / unit;
  best[0] = 0.0;
  pick[0] = -1;
  for (int c = 1; c <= cells; c++) {
    best[c] = best[c - 1];
    pick[c] = -1;
    for (size_t i = 0; i < n; i++) {
      int w = it[i].size / unit;
      if (val[i] > EPS && w <= c && best[c - w] + val[i] > best[c] + EPS) {
        best[c] = best[c - w] + val[i];
        pick[c] = (int16_t)i;
      }
    }
  }
  memset(a, 0, n * sizeof(*a));
  for (int c = cells; c > 0;) {
    if (pick[c] < 0) {
      c--;
      continue;
    }
    a[pick[c]]++;
    c -= it[pick[c]].size / unit;
  }
  return best[cells];
}

/* The right-hand side: the GPUs the shares' volume fills, then each size's weight; each row
 * perturbed by its own tiny amount, so that no two ratios of a pivot tie. */
static void rhs(const plan_item_t *items, size_t n, double *b)
{
  double vol = 0.0, mean = 0.0;
  for (size_t i = 0; i < n; i++) {
    vol += items[i].w * items[i].size / 1000.0;
    mean += items[i].w / (double)n;
  }
  size_t m = n + 1;
  for (size_t j = 0; j < m; j++)
    b[j] = (j == 0 ? vol : items[j - 1].w) + mean * 1e-7 * (double)(j + 1) / (double)m;
}

bool sf__plan_prices(plan_t *p, const plan_item_t *items, size_t n, int32_t *r)
{
  p->solved = false;
  p->tried = true;
  p->n = n <= PLAN_SIZES ? n : 0;
  for (size_t i = 0; i < p->n; i++)
    p->size[i] = items[i].size;
  if (n == 0 || n > PLAN_SIZES)
    return false;
  size_t m = n + 1; /* row 0: GPUs; row 1 + i: item i */
  p->binv = sf_xrealloc(p->binv, (PLAN_SIZES + 1) * (PLAN_SIZES + 1) * sizeof(*p->binv));
  double *binv = p->binv;
  int32_t unit = unit_of(items, n);
  double xb[PLAN_SIZES + 1], cb[PLAN_SIZES + 1], y[PLAN_SIZES + 1], col[PLAN_SIZES + 1],
      d[PLAN_SIZES + 1], val[PLAN_SIZES];
  uint32_t a[PLAN_SIZES];
  rhs(items, n, xb);
  memset(binv, 0, m * m * sizeof(*binv));
  for (size_t j = 0; j < m; j++) {
    binv[j * m + j] = 1.0;
    cb[j] = 0.0;
  }
  for (int iter = 0; iter < 40 * (int)m + 200; iter++) {
    for (size_t j = 0; j < m; j++) { /* y = cb^T binv */
      y[j] = 0.0;
      for (size_t k = 0; k < m; k++)
        y[j] += cb[k] * binv[k * m + j];
    }
    /* Entering: a slack of negative price, else the pattern of most reduced value. */
    int slack = -1;
    for (size_t j = 0; j < m && slack < 0; j++)
      if (y[j] < -1e-7)
        slack = (int)j;
    double cost = 0.0;
    if (slack >= 0) {
      memset(col, 0, m * sizeof(*col));
      col[slack] = 1.0;
    } else {
      for (size_t i = 0; i < n; i++)
        val[i] = items[i].size - y[1 + i];
      double v = knapsack(items, val, n, unit, a);
      if (v - y[0] <= 1e-7 * (1.0 + fabs(y[0]))) { /* optimal: no column improves it */
        for (size_t i = 0; i < n; i++) {
          double ri = (items[i].size - y[1 + i]) * PLAN_ONE;
          ri = ri < 0.0 ? 0.0 : ri > items[i].size * PLAN_ONE ? items[i].size * PLAN_ONE : ri;
          r[i] = (int32_t)llround(ri);
          p->r[i] = r[i];
        }
        p->solved = true;
        return true;
      }
      col[0] = 1.0;
      for (size_t i = 0; i < n; i++) {
        col[1 + i] = a[i];
        cost += (double)a[i] * items[i].size;
      }
    }
    for (size_t j = 0; j < m; j++) { /* d = binv col */
      d[j] = 0.0;
      for (size_t k = 0; k < m; k++)
        d[j] += binv[j * m + k] * col[k];
    }
    int out = -1;
    double t = INFINITY;
    for (size_t j = 0; j < m; j++)
      if (d[j] > EPS && xb[j] / d[j] < t) {
        t = xb[j] / d[j];
        out = (int)j;
      }
    if (out < 0)
      return false; /* unbounded: cannot be, the GPU row bounds every pattern */
    double piv = d[out];
    for (size_t k = 0; k < m; k++)
      binv[(size_t)out * m + k] /= piv;
    xb[out] /= piv;
    for (size_t j = 0; j < m; j++) {
      if ((int)j == out || d[j] == 0.0)
        continue;
      for (size_t k = 0; k < m; k++)
        binv[j * m + k] -= d[j] * binv[(size_t)out * m + k];
      xb[j] -= d[j] * xb[out];
      if (xb[j] < 0.0)
        xb[j] = 0.0;
    }
    cb[out] = cost;
  }
  return false;
}

void sf__plan_table(const plan_item_t *items, const int32_t *r, size_t n, int32_t *k)
{
  k[0] = 0;
  for (int c = 1; c <= PLAN_CELLS; c++) {
    int32_t best = k[c - 1];
    for (size_t i = 0; i < n; i++)
      if (items[i].size <= c && k[c - items[i].size] + r[i] > best)
        best = k[c - items[i].size] + r[i];
    k[c] = best;
  }
}

static uint64_t hash_k(const int32_t *k)
{
  uint64_t h = 1469598103934665603ull;
  for (int c = 0; c <= PLAN_CELLS; c++)
    h = (h ^ (uint64_t)(uint32_t)k[c]) * 1099511628211ull;
  return h ? h : 1;
}

/*
 * Does the plan stand for these items: the same sizes, and its LP's basis
 * feasible for their weights (so still optimal)? An LP of the same sizes
 * that did not settle is not tried again until they change: no plan then.
 */
static bool stands(const plan_t *p, const plan_item_t *items, size_t n)
{
  if (!p->tried || p->n != n)
    return false;
  for (size_t i = 0; i < n; i++)
    if (p->size[i] != items[i].size)
      return false;
  if (!p->solved)
    return true;
  double b[PLAN_SIZES + 1];
  size_t m = n + 1;
  rhs(items, n, b);
  for (size_t j = 0; j < m; j++) {
    double x = 0.0;
    for (size_t k = 0; k < m; k++)
      x += p->binv[j * m + k] * b[k];
    if (x < 0.0)
      return false;
  }
  return true;
}

bool sf__plan_set(plan_t *p, const plan_item_t *items, size_t n)
{
  if (stands(p, items, n))
    return false;
  int32_t r[PLAN_SIZES];
  uint64_t was = p->hash;
  if (sf__plan_prices(p, items, n, r))
    sf__plan_table(items, r, n, p->k);
  else
    memset(p->k, 0, sizeof(p->k)); /* no plan: no loss anywhere */
  p->hash = hash_k(p->k);
  return p->hash != was;
}

/* ---- its inputs: the mix's share sizes, what feeds them, the capacities ---- */

static int by_weight(const void *a, const void *b)
{
  const plan_item_t *x = a, *y = b;
  return x->w > y->w ? -1 : x->w < y->w ? 1 : x->size - y->size;
}

static int by_size(const void *a, const void *b)
{
  return ((const plan_item_t *)a)->size - ((const plan_item_t *)b)->size;
}

/* A shape's share of a device of capacity cap, per-mille rounded up; 0 when it is no share. */
static int32_t share_size(const shape_t *m, sf_milli_t cap)
{
  if (m->count == 0 || m->amount <= 0 || m->amount >= cap || m->q <= 0)
    return 0;
  int32_t size = m->amount <= INT64_MAX / 1000
                     ? (int32_t)((m->amount * 1000 + cap - 1) / cap)
                     : (int32_t)ceil((double)m->amount * 1000.0 / (double)cap);
  return size < 1 ? 1 : size > PLAN_CELLS - 1 ? PLAN_CELLS - 1 : size;
}

/*
 * The mix's shares on a device of capacity cap: every shape that takes part
 * of a device, its amount in per-mille of cap (rounded up: what it leaves
 * free), weighted by its weight times its device count; equal sizes as
 * one. A shape of whole devices, of cap or more, or of no device is no
 * share. At most PLAN_SIZES sizes, the heaviest; ascending.
 */
static size_t plan_items(const pk_mix_t *mx, sf_milli_t cap, plan_item_t *it)
{
  plan_item_t all[SF__MIX_MAX + 1];
  size_t n = 0;
  for (size_t i = 0; i < mx->nmix; i++) {
    const shape_t *m = &mx->mix[i];
    int32_t size = share_size(m, cap);
    if (size == 0)
      continue;
    double w = (double)m->q * m->count;
    size_t j = 0;
    while (j < n && all[j].size != size)
      j++;
    if (j == n)
      all[n++] = (plan_item_t){size, 0.0};
    all[j].w += w;
  }
  if (n > PLAN_SIZES) {
    qsort(all, n, sizeof(*all), by_weight);
    n = PLAN_SIZES;
  }
  qsort(all, n, sizeof(*all), by_size);
  memcpy(it, all, n * sizeof(*it));
  return n;
}

static bool plan_on(const sf_packer_t *p)
{
  return p->pol->strategy == SF_STRATEGY_FRAGMENTATION &&
         (p->pol->weight_plan > 0.0 || p->pol->weight_strand > 0.0);
}

/*
 * The plan's feed[]: per free share f, the least CPU of a share of the mix
 * (every one, not only the LP's sizes) within f. True when it moved.
 */
static bool plan_feed(const pk_mix_t *mx, plan_t *pl)
{
  int64_t f[PLAN_CELLS + 1];
  for (int c = 0; c <= PLAN_CELLS; c++)
    f[c] = INT64_MAX;
  for (size_t i = 0; i < mx->nmix; i++) {
    int32_t size = share_size(&mx->mix[i], pl->cap);
    if (size > 0 && mx->mix[i].cpu_milli < f[size])
      f[size] = mx->mix[i].cpu_milli;
  }
  for (int c = 1; c <= PLAN_CELLS; c++)
    f[c] = f[c] < f[c - 1] ? f[c] : f[c - 1];
  if (memcmp(f, pl->feed, sizeof(f)) == 0 && pl->feedhash != 0)
    return false;
  memcpy(pl->feed, f, sizeof(f));
  pl->feedmost = -1;
  for (int c = 1; c <= PLAN_CELLS && pl->feedmost < 0; c++)
    if (f[c] != INT64_MAX)
      pl->feedmost = f[c];
  uint64_t h = 1469598103934665603ull;
  for (int c = 0; c <= PLAN_CELLS; c++)
    h = (h ^ (uint64_t)f[c]) * 1099511628211ull;
  pl->feedhash = h ? h : 1;
  return true;
}

/* Brings one plan to the mix loaded; true when its K or what feeds it moved. */
static bool plan_one(pk_mix_t *mx, plan_t *pl)
{
  plan_item_t it[PLAN_SIZES];
  size_t n = plan_items(mx, pl->cap, it);
  bool moved = sf__plan_set(pl, it, n);
  return plan_feed(mx, pl) || moved;
}

/* The mix's hash with the plans' K and feed folded in, and the most CPU a free share needs. */
static void plan_fold(pk_mix_t *mx)
{
  uint64_t h = 0;
  int64_t starve = -1;
  for (size_t i = 0; i < mx->plan.n; i++) {
    const plan_t *pl = &mx->plan.p[i];
    h = (h ^ pl->hash ^ pl->feedhash) * 1099511628211ull;
    starve = pl->feedmost > starve ? pl->feedmost : starve;
  }
  mx->plan.hash = h;
  mx->plan.starve = starve;
  mx->mixhash = mx->rawhash ^ h;
}

/*
 * The device capacities the plans are for: the primary capacity of a
 * device of each GPU model in the index, the PLAN_CAPS of most devices
 * (ties: the smaller capacity first). A fleet's models each have one
 * memory size, so a device of another size than its model's gets no plan.
 */
static size_t plan_caps(sf_index_t *idx, sf_milli_t *caps)
{
  sf_milli_t cap[SF__MODELS + 1];
  uint32_t devs[SF__MODELS + 1];
  size_t n = 0;
  for (uint32_t b = 0; b <= SF__MODELS; b++) {
    sf_dev_id d = sf__index_model_dev(idx, b);
    if (d < 0)
      continue;
    const sf__dev_t *dv = &idx->devs[d];
    if (dv->primary < 0 || !dv->shared || dv->caps[dv->primary].value <= 0)
      continue;
    sf_milli_t c = dv->caps[dv->primary].value;
    size_t j = 0;
    while (j < n && cap[j] != c)
      j++;
    if (j == n) {
      cap[n] = c;
      devs[n++] = 0;
    }
    devs[j] += idx->model_devs[b];
  }
  size_t out = 0;
  for (; out < PLAN_CAPS && out < n; out++) { /* the most devices first: selection, n <= 64 */
    size_t best = out;
    for (size_t j = out + 1; j < n; j++)
      if (devs[j] > devs[best] || (devs[j] == devs[best] && cap[j] < cap[best]))
        best = j;
    sf_milli_t tc = cap[out];
    uint32_t td = devs[out];
    cap[out] = cap[best];
    devs[out] = devs[best];
    cap[best] = tc;
    devs[best] = td;
    caps[out] = cap[out];
  }
  return out;
}

/*
 * Brings the plans to the mix loaded and the index's capacities, under a
 * policy that weighs them; a plan whose K moves marks the drift
 * (plan.moved), and the mix's hash folds every K in.
 */
void sf__plan_load(sf_packer_t *p)
{
  pk_mix_t *mx = &p->mix;
  pk_plan_t *pl = &mx->plan;
  if (!plan_on(p))
    return;
  sf_milli_t caps[PLAN_CAPS];
  size_t nc = plan_caps(p->idx, caps);
  bool same = nc == pl->n;
  for (size_t i = 0; i < nc && same; i++)
    same = pl->p[i].cap == caps[i];
  if (same && pl->of == mx->rawhash) {
    plan_fold(mx);
    return;
  }
  if (!same) { /* other capacities: a plan kept where its capacity stays, else begun anew */
    plan_t old[PLAN_CAPS];
    memcpy(old, pl->p, sizeof(old));
    memset(pl->p, 0, sizeof(pl->p));
    for (size_t i = 0; i < nc; i++) {
      for (size_t j = 0; j < pl->n; j++)
        if (old[j].cap == caps[i]) {
          pl->p[i] = old[j];
          old[j].binv = NULL;
        }
      pl->p[i].cap = caps[i];
    }
    for (size_t j = 0; j < PLAN_CAPS; j++)
      free(old[j].binv);
    pl->n = nc;
    pl->moved = true;
  }
  for (size_t i = 0; i < pl->n; i++)
    pl->moved = plan_one(mx, &pl->p[i]) || pl->moved;
  pl->of = mx->rawhash;
  plan_fold(mx);
}

const plan_t *sf__plan_of(const sf_packer_t *p, sf_milli_t cap)
{
  const pk_plan_t *pl = &p->mix.plan;
  for (size_t i = 0; i < pl->n; i++)
    if (pl->p[i].cap == cap)
      return &pl->p[i];
  return NULL;
}

/* ---- its terms of strategy fragmentation's cost (score.c) ---- */

/*
 * The plan's two terms of a placement, per-mille, in one walk over its
 * picks. *loss: what each GPU it takes part of spends of its worth beyond
 * what the share taken is worth (a whole GPU taken, or a share that fills
 * its GPU, loses nothing). *strand: a GPU's free share is worth K(f) only
 * while its node has the CPU for a share of the mix that fits f
 * (plan_t.feed), so the share a pick leaves, when the CPU left after the
 * pod feeds none, and each other part-used GPU of the node whose feed the
 * pod's CPU takes, lose all their worth. An idle GPU the CPU no longer
 * feeds is the unfed term's (weight_unfed), not the plan's.
 */
void sf__plan_terms(const sf_packer_t *p, const hnode_t *h, const after_t *af, int64_t cpu,
                    double *loss, double *strand)
{
  double spent = 0.0, lost = 0.0;
  for (size_t j = 0; j < af->n; j++) {
    const hdev_t *d = &h->d[af->k[j]];
    if (!(d->fl & HD_GPU) || !(d->fl & HD_MEASURED) || d->fp <= af->fp[j])
      continue;
    const plan_t *pl = sf__plan_of(p, d->pval);
    if (pl == NULL)
      continue;
    spent += sf__plan_loss(pl, d->fp, af->fp[j]);
    if (sf__plan_starved(pl, af->fp[j], cpu))
      lost += (double)pl->k[af->fp[j]] / PLAN_ONE;
  }
  *loss = spent;
  *strand = lost;
  if (cpu < 0 || cpu >= p->mix.plan.starve)
    return; /* every free share is still fed */
  for (uint32_t k = 0; k < h->n; k++) {
    const hdev_t *d = &h->d[k];
    if (!(d->fl & HD_GPU) || !(d->fl & HD_MEASURED) || d->fp <= 0 || d->fp >= PLAN_CELLS)
      continue;
    bool picked = false;
    for (size_t j = 0; j < af->n && !picked; j++)
      picked = af->k[j] == k;
    const plan_t *pl = picked ? NULL : sf__plan_of(p, d->pval);
    if (pl != NULL && !sf__plan_starved(pl, d->fp, h->cpu_free) && sf__plan_starved(pl, d->fp, cpu))
      lost += (double)pl->k[d->fp] / PLAN_ONE;
  }
  *strand = lost;
}

void sf__plan_dispose(pk_plan_t *pl)
{
  for (size_t i = 0; i < PLAN_CAPS; i++) {
    free(pl->p[i].binv);
    pl->p[i].binv = NULL;
  }
}
