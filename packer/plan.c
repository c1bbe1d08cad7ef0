/*
 * The plan of the shares (pk_plan.h): the configuration LP of the mix's
 * share sizes, solved by column generation, and the table K of what a free
 * share is worth at its dual prices.
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
#include "pk_plan.h"

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

void sf__plan_dispose(pk_plan_t *pl)
{
  for (size_t i = 0; i < PLAN_CAPS; i++) {
    free(pl->p[i].binv);
    pl->p[i].binv = NULL;
  }
}
