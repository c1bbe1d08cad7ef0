/* The reference (reference.h): exhaustive, by definition, through the public API only. */
#include <math.h>
#include <string.h>
#include "reference.h"

#define MAXD 64

typedef struct {
  sf_dev_id dev;
  bool shared, idle, gpu;
  sf_milli_t value, fa; /* memory: total, free (whole devices: all or nothing) */
  int32_t fp;           /* free share, per-mille */
  int32_t island;
} rdev_t;

static size_t load(const sf_index_t *idx, sf_node_id node, rdev_t *out)
{
  size_t n;
  const sf_dev_id *devs = sf_index_node_devices(idx, node, &n);
  for (size_t k = 0; k < n && k < MAXD; k++) {
    rdev_t *d = &out[k];
    sf_milli_t value = 0, fr = 0;
    int c = sf_index_dev_cap_find(idx, devs[k], DRV "/memory");
    if (c >= 0)
      sf_index_dev_cap(idx, devs[k], (size_t)c, &value, &fr);
    d->dev = devs[k];
    d->shared = sf_index_dev_shared(idx, devs[k]);
    d->idle = sf_index_dev_holders(idx, devs[k]) == 0;
    d->gpu = c >= 0 || sf_index_dev_model(idx, devs[k]) != 0;
    d->value = value;
    d->fa = d->shared ? fr : d->idle ? value : 0;
    d->fp = sf_index_dev_free_permille(idx, devs[k]);
    d->island = sf_index_dev_island(idx, devs[k]);
  }
  return n < MAXD ? n : MAXD;
}

static int32_t permille(sf_milli_t f, sf_milli_t v)
{
  if (v <= 0 || f <= 0)
    return 0;
  return f >= v ? 1000 : (int32_t)(f * 1000 / v);
}

/* The node's devices after the picks. */
static size_t after(const sf_index_t *idx, sf_node_id node, const sf_dev_id *picks,
                    const sf_milli_t *use, size_t np, rdev_t *d)
{
  size_t n = load(idx, node, d);
  for (size_t i = 0; i < np; i++)
    for (size_t k = 0; k < n; k++)
      if (d[k].dev == picks[i]) {
        d[k].idle = false;
        d[k].fa = d[k].shared ? d[k].fa - use[i] : 0;
        d[k].fp = d[k].shared ? permille(d[k].fa, d[k].value) : 0;
      }
  return n;
}

/* What one device of the claim takes of a device (-1: it cannot serve it at all). */
static sf_milli_t need(const ref_claim_t *c, const rdev_t *d)
{
  if (!d->shared || c->mem == 0)
    return c->mem <= d->value ? d->value : -1;
  sf_milli_t v = c->mem;
  if (c->step > 0) {
    v = v < c->min ? c->min : c->min + (v - c->min + c->step - 1) / c->step * c->step;
  }
  return v <= d->value ? v : -1;
}

static bool usable(const sf_policy_t *pol, const ref_claim_t *c, const rdev_t *d)
{
  sf_milli_t n = need(c, d);
  if (n < 0)
    return false;
  if (!d->shared)
    return d->idle;
  sf_milli_t reserve = pol->headroom_pct ? d->value / 100 * pol->headroom_pct : 0;
  return d->fa - reserve >= n;
}

/* Tries every set of `left` more devices from `from` on. */
static bool choose(const rdev_t *d, const bool *ok, size_t n, size_t from, uint32_t left,
                   int32_t island)
{
  if (left == 0)
    return true;
  for (size_t k = from; k < n; k++) {
    if (!ok[k])
      continue;
    int32_t isl = d[k].island < 0 ? -2 - (int32_t)k : d[k].island;
    if (island != INT32_MIN && isl != island)
      continue;
    if (choose(d, ok, n, k + 1, left - 1, island == INT32_MIN ? INT32_MIN : isl))
      return true;
  }
  return false;
}

bool ref_fits(const sf_index_t *idx, const sf_policy_t *pol, const ref_claim_t *c, sf_node_id node)
{
  int64_t ca, cu, ma, mu;
  sf_index_node_cpu_mem(idx, node, &ca, &cu, &ma, &mu);
  if (ca > 0 && c->cpu_milli > ca - cu)
    return false;
  rdev_t d[MAXD];
  bool ok[MAXD];
  size_t n = load(idx, node, d);
  for (size_t k = 0; k < n; k++) {
    ok[k] = usable(pol, c, &d[k]);
    if (ok[k] && d[k].shared && pol->max_sharers > 0)
      ok[k] = sf_index_dev_holders(idx, d[k].dev) < pol->max_sharers;
  }
  if (!c->island)
    return choose(d, ok, n, 0, c->count, INT32_MIN);
  for (size_t k = 0; k < n; k++) { /* the first device fixes the island */
    int32_t isl = d[k].island < 0 ? -2 - (int32_t)k : d[k].island;
    if (ok[k] && choose(d, ok, n, k + 1, c->count - 1, isl))
      return true;
  }
  return false;
}

static bool hosts(const sf_shape_t *m, const rdev_t *d)
{
  if (!d->gpu)
    return false;
  return m->amount == 0 ? (d->idle && d->fp == 1000) : d->fa >= m->amount;
}

/*
 * F(m) by its definition; with strategy fragmentation, plus the idle GPUs
 * holding one pod of m (and no more) that the node's free CPU cannot feed
 * (a fraction of a pod's CPU feeds that fraction), times the weight in
 * 1/1024 (`unfed`).
 */
static int64_t frag_shape(const sf_shape_t *m, const rdev_t *d, size_t n, int64_t cpu_free,
                          int64_t unfed)
{
  int64_t total = 0, small = 0;
  uint32_t nh = 0, best = 0, one = 0;
  for (size_t k = 0; k < n; k++) {
    if (!d[k].gpu)
      continue;
    total += d[k].fp;
    if (!hosts(m, &d[k])) {
      small += d[k].fp;
      continue;
    }
    nh++;
    one += d[k].idle && (m->amount == 0 || d[k].fa < 2 * m->amount);
    uint32_t in = 0; /* hosts in the same island (a device of no island is its own) */
    for (size_t j = 0; j < n; j++)
      in += hosts(m, &d[j]) && (j == k || (d[k].island >= 0 && d[j].island == d[k].island));
    best = in > best ? in : best;
  }
  if (m->count == 0)
    return total;
  bool can = (cpu_free < 0 || cpu_free >= m->cpu_milli) && (m->island ? best : nh) >= m->count;
  if (!can)
    return total;
  if (cpu_free >= 0 && m->cpu_milli > 0) {
    /* the idle GPUs in whole pods of m less those the free CPU feeds, cpu_free / cpu pods */
    int64_t lack = (int64_t)(one / m->count * m->count) * m->cpu_milli - cpu_free * m->count;
    if (lack > 0)
      small += lack * 1000 * unfed / (m->cpu_milli * 1024);
  }
  return small;
}

double ref_frag(const sf_index_t *idx, const sf_policy_t *pol, sf_node_id node,
                const sf_dev_id *picks, const sf_milli_t *use, size_t npicks, int64_t cpu_milli)
{
  rdev_t d[MAXD];
  size_t n = after(idx, node, picks, use, npicks, d);
  int64_t ca, cu, ma, mu;
  sf_index_node_cpu_mem(idx, node, &ca, &cu, &ma, &mu);
  int64_t cpu_free = ca > 0 ? ca - cu - cpu_milli : -1;
  double sum = 0.0;
  for (size_t i = 0; i < pol->nmix; i++)
    sum += pol->mix[i].weight;
  int64_t q = 0,
          unfed = pol->strategy == SF_STRATEGY_FRAGMENTATION ? llround(pol->weight_unfed * 1024) : 0;
  for (size_t i = 0; i < pol->nmix; i++)
    q += llround(pol->mix[i].weight / sum * 65536.0) *
         frag_shape(&pol->mix[i], d, n, cpu_free, unfed);
  return (double)q / 65536.0;
}

double ref_binpack(const sf_index_t *idx, sf_node_id node, const sf_dev_id *picks,
                   const sf_milli_t *use, size_t npicks)
{
  rdev_t d[MAXD];
  size_t n = after(idx, node, picks, use, npicks, d);
  int64_t used = 0, gpus = 0;
  for (size_t k = 0; k < n; k++)
    if (d[k].gpu) {
      used += 1000 - d[k].fp;
      gpus++;
    }
  double touched = 0.0;
  for (size_t i = 0; i < npicks; i++)
    for (size_t k = 0; k < n; k++)
      if (d[k].dev == picks[i])
        touched += (double)(1000 - d[k].fp) / 1000.0;
  touched = npicks ? touched / (double)npicks : 0.0;
  return (gpus ? (double)used / (double)(gpus * 1000) : 0.0) + 0.1 * touched;
}

/* The most worth a set of plan sizes from index i on holds within f: every count of size i, then the rest. */
static double most_worth(const ref_plan_t *pl, size_t i, int32_t f)
{
  if (i == pl->n)
    return 0.0;
  double best = 0.0;
  for (int32_t k = 0; k * pl->size[i] <= f; k++) {
    double w = k * pl->r[i] + most_worth(pl, i + 1, f - k * pl->size[i]);
    best = w > best ? w : best;
  }
  return best;
}

/* Does free CPU cpu (-1: not tracked) feed a share of the mix within f per-mille of cap? */
static bool fed(const sf_policy_t *pol, sf_milli_t cap, int32_t f, int64_t cpu)
{
  if (cpu < 0)
    return true;
  for (size_t i = 0; i < pol->nmix; i++) {
    const sf_shape_t *m = &pol->mix[i];
    if (m->count == 0 || m->amount <= 0 || m->amount >= cap || m->weight <= 0.0)
      continue;
    int64_t size = (m->amount * 1000 + cap - 1) / cap;
    if (size <= f && m->cpu_milli <= cpu)
      return true;
  }
  return false;
}

double ref_plan_loss(const sf_index_t *idx, const sf_policy_t *pol, sf_node_id node,
                     const sf_dev_id *picks, const sf_milli_t *use, size_t npicks, int64_t cpu_milli,
                     const ref_plan_t *plans, size_t nplans, double *strand)
{
  rdev_t b[MAXD], a[MAXD];
  size_t n = load(idx, node, b);
  after(idx, node, picks, use, npicks, a);
  int64_t ca, cu, ma, mu;
  sf_index_node_cpu_mem(idx, node, &ca, &cu, &ma, &mu);
  int64_t before = ca > 0 ? ca - cu : -1, left = ca > 0 ? ca - cu - cpu_milli : -1;
  double loss = 0.0, lost = 0.0;
  for (size_t k = 0; k < n; k++) {
    bool picked = b[k].fp > a[k].fp;
    if (!b[k].gpu || !b[k].shared || (!picked && (b[k].fp == 0 || b[k].fp >= 1000)))
      continue;
    for (size_t j = 0; j < nplans; j++) {
      const ref_plan_t *pl = &plans[j];
      if (pl->cap != b[k].value)
        continue;
      double kb = most_worth(pl, 0, b[k].fp), ka = most_worth(pl, 0, a[k].fp);
      double was = picked || fed(pol, pl->cap, b[k].fp, before) ? kb : 0.0;
      double is = a[k].fp > 0 && fed(pol, pl->cap, a[k].fp, left) ? ka : 0.0;
      double taken = picked ? most_worth(pl, 0, b[k].fp - a[k].fp) : 0.0;
      loss += was - is - taken;
      lost += was > 0.0 || picked ? (a[k].fp > 0 ? ka : 0.0) - is : 0.0;
    }
  }
  if (strand != NULL)
    *strand = lost;
  return loss;
}

double ref_step(double cost)
{
  return floor(100.0 / (1.0 + exp(cost / 1000.0)));
}

double ref_fgd(const sf_index_t *idx, const sf_policy_t *pol, sf_node_id node, const sf_dev_id *picks,
               const sf_milli_t *use, size_t npicks, int64_t cpu_milli)
{
  double df = ref_frag(idx, pol, node, picks, use, npicks, cpu_milli) -
              ref_frag(idx, pol, node, NULL, NULL, 0, 0);
  return floor(100.0 / (1.0 + exp(df / 1000.0)));
}
