/*
 * The scoring kernel (pk_score.h): one function scores any placement on
 * any node, from the node's summary.
 *
 * A placement is a list of picks (device, amount of its primary capacity);
 * a device may appear more than once (several requests on one shared
 * device). Its devices' states after it: a measured device (shared, with a
 * primary capacity) loses what the picks take of its free amount; any other
 * device is used up. Strategies:
 *   binpack        GPU utilisation after, plus a tenth of how used the
 *                  picked devices end up (fill what is already used);
 *   spread         the opposite;
 *   fgd            FGD's node score, 100 x sigmoid(-dF / 1000) truncated,
 *                  dF the fragmentation increase in milli-GPUs, with a fixed
 *                  order of node names below one step (fgd_step);
 *   fragmentation  FGD's node score of a cost, the sum of the terms of one
 *                  table (`terms`: key, weight, function): weight_frag x dF,
 *                  weight_frag x the change of the idle GPUs the node's CPU
 *                  cannot feed (row weight_unfed, which sets each one's
 *                  worth), weight_island x 1000 for each intact island the placement
 *                  breaks without taking it whole, weight_plan x the plan's
 *                  loss, weight_strand x the worth of the free shares it
 *                  leaves without CPU, weight_model x scarcity x the share taken of each
 *                  device of a scarce model when the demand could use
 *                  several models; the same integer steps and node order as
 *                  fgd (fgd_step).
 *
 * F(before) comes from per-shape statistics of the node (fstat_t), kept
 * with the summary for its version and the mix's shapes (not weights);
 * F(after) updates
 * them for the picked devices only, so scoring one candidate costs
 * O(shapes x picks). When the picks take hosts from more than one island,
 * the island counts of the shapes that ask for one island are worked out
 * again over the node. F_n(m) counts the unfed idle GPUs with the rest
 * (the memo and the range of F's changes are of that F); their part is
 * summed apart for their row, and only on a node whose free CPU after the
 * pod is short of feeding every idle GPU a shape could find there
 * (hnode_t.fneed): elsewhere none is unfed, before or after, and the
 * scoring skips their count.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "packer_int.h"

/* Can device d, in the state given, host one device of shape m? */
static bool hosts(const shape_t *m, const hdev_t *d, bool idle, int32_t fp, sf_milli_t fa)
{
  if (!(d->fl & HD_GPU) || (m->models && !(m->models & (1ull << d->model_bit))))
    return false;
  return m->amount == 0 ? (idle && fp == 1000) : fa >= m->amount;
}

/* Does a device with fa free hold one pod of shape m and no more (when it hosts it at all)? */
static bool holds_one(const shape_t *m, sf_milli_t fa)
{
  return m->amount == 0 || fa < 2 * m->amount;
}

/*
 * The idle GPUs a node that can host m cannot feed with CPU, weighted by
 * unfed (1/UNFED_ONE): ni idle devices each hold one device of m, so
 * floor(ni / count) pods of m, and the free CPU feeds cpu_free / m's CPU of
 * those pods, a fraction included: the CPU the node lacks, in GPUs of m.
 * Were the CPU rounded down to whole pods, a light pod on a node with CPU to
 * spare could round a pod's worth of GPUs away and look as if it fed a
 * stranded GPU, so the nodes with the most CPU per GPU would win the light
 * pods. Counted exactly, a pod with less CPU than m lowers it by the same on
 * every node short of CPU and by nothing on one with CPU to spare
 * (docs/research/packing.md). For a shape that needs one island, ni ignores how the
 * idle devices fall into islands (the reference in test/ counts the same
 * way). *qu sums the counts times the shapes' weights (m->q) apart, past
 * the common case's return, so the sums that do not need it pay nothing.
 */
static inline int64_t unfed(const shape_t *m, int32_t ni, int64_t cpu_free, int64_t w, int64_t *qu)
{
  /*
   * The common case without a division: ni x cpu <= cpu_free x count means
   * every pod the idle devices hold is fed (and so does a shape without CPU).
   */
  if (w == 0 || cpu_free < 0 || (int64_t)ni * m->cpu_milli <= cpu_free * (int64_t)m->count)
    return 0;
  int64_t held = (int64_t)(ni / (int32_t)m->count) * m->count; /* in whole pods of m */
  int64_t lack = held * m->cpu_milli - cpu_free * (int64_t)m->count;
  int64_t u = lack > 0 ? lack * 1000 * w / (m->cpu_milli * UNFED_ONE) : 0;
  *qu += m->q * u;
  return u;
}

void sf__score_policy(sf_packer_t *p)
{
  p->score.unfed = p->pol->strategy == SF_STRATEGY_FRAGMENTATION
                       ? llround(p->pol->weight_unfed * UNFED_ONE)
                       : 0;
}

/* Can a node of these statistics and free CPU host one pod of m (which asks for a device)? */
static inline bool fcan(const shape_t *m, const fstat_t *s, int64_t cpu_free)
{
  if (m->count == 0)
    return false;
  bool cpu_ok = cpu_free < 0 || cpu_free >= m->cpu_milli;
  int32_t best = s->bi > (s->ns1 > 0) ? s->bi : (s->ns1 > 0);
  return cpu_ok && (m->island ? best >= (int32_t)m->count : s->nh >= (int32_t)m->count);
}

/*
 * F_n(m) from a shape's statistics, the unfed idle GPUs included (*qu sums
 * their part, as unfed's); w: the call's unfed weight (pk_score_t.unfed).
 */
static inline int64_t fshape(const shape_t *m, const fstat_t *s, int64_t total, int64_t cpu_free,
                             int64_t w, int64_t *qu)
{
  return fcan(m, s, cpu_free) ? s->small + unfed(m, s->ni, cpu_free, w, qu) : total;
}

/* A shape's statistics over the node, the devices of `af` (may be NULL) in their state after. */
static void shape_stats(sf_packer_t *p, const hnode_t *h, const shape_t *m, const after_t *af,
                        fstat_t *s)
{
  memset(s, 0, sizeof(*s));
  s->argbi = -1;
  if (m->count == 0)
    return;
  pk_score_t *sc = &p->score;
  GROW(sc->icnt, sc->icntcap, (size_t)h->nisl + 1);
  memset(sc->icnt, 0, h->nisl * sizeof(*sc->icnt));
  for (uint32_t k = 0; k < h->n; k++) {
    const hdev_t *d = &h->d[k];
    if (!(d->fl & HD_GPU))
      continue;
    bool idle = d->fl & HD_IDLE;
    int32_t fp = d->fp;
    sf_milli_t fa = d->fa;
    for (size_t j = 0; af && j < af->n; j++)
      if (af->k[j] == k) {
        idle = false;
        fp = af->fp[j];
        fa = af->fa[j];
      }
    if (!hosts(m, d, idle, fp, fa)) {
      s->small += fp;
      continue;
    }
    s->nh++;
    s->ni = (int16_t)(s->ni + (idle && holds_one(m, fa)));
    if (d->island < 0)
      s->ns1++;
    else
      sc->icnt[d->island]++;
  }
  for (uint32_t j = 0; j < h->nisl; j++) {
    if (sc->icnt[j] > s->bi) {
      s->bi2 = s->bi;
      s->bi = (int16_t)sc->icnt[j];
      s->argbi = (int16_t)j;
    } else if (sc->icnt[j] > s->bi2) {
      s->bi2 = (int16_t)sc->icnt[j];
    }
  }
}

/*
 * F_n(m) before any placement and its part of unfed idle GPUs (fstat_t.f,
 * .ub), from the shape's statistics; returns `need` raised to the free CPU
 * that feeds every idle GPU m finds on the node, floor(ni / count) pods of
 * m's CPU, where the node can host m. Past a placement (no more idle hosts,
 * no more CPU, no host it did not have before) the same CPU still feeds
 * them: with that much CPU left, no shape has an unfed GPU before or after.
 */
static int64_t fbefore(const sf_packer_t *p, const hnode_t *h, const shape_t *m, fstat_t *s,
                       int64_t need)
{
  int64_t qu = 0; /* the sums over the shapes are their callers' (fstats, unfed_before) */
  if (!fcan(m, s, h->cpu_free)) {
    s->f = h->total;
    s->ub = 0;
    return need;
  }
  int64_t u = unfed(m, s->ni, h->cpu_free, p->score.unfed, &qu);
  s->f = s->small + u;
  s->ub = (int32_t)u;
  int64_t fed = (int64_t)(s->ni / (int32_t)m->count) * m->cpu_milli;
  return fed > need ? fed : need;
}

/*
 * The node's per-shape statistics for the call's mix, and F(before). The
 * statistics and each F_n(m) depend on the node and the shapes, not on the
 * weights, so they are kept for the set of shapes: when only the weights
 * move (a learned mix does with every arrival), F(before) is summed again
 * in O(shapes).
 */
static void fshapes(sf_packer_t *p, hnode_t *h)
{
  const pk_mix_t *mx = &p->mix;
  /* F_n(m) depends on the unfed weight too: a call under another one reads other values. */
  uint64_t key = mx->shapehash ^ (uint64_t)p->score.unfed * 0x9e3779b97f4a7c15ull;
  if (h->fversion != h->version || h->shapehash != key) {
    if (mx->nmix > h->fscap) {
      h->fs = sf_xrealloc(h->fs, mx->nmix * sizeof(*h->fs));
      h->fscap = mx->nmix;
    }
    int64_t need = 0;
    for (size_t g = 0; g < mx->ngroup; g++) { /* a group's shapes share their GPU statistics */
      const uint16_t *mb = &mx->member[mx->group[g].first];
      shape_stats(p, h, &mx->mix[mb[0]], NULL, &h->fs[mb[0]]);
      for (uint32_t k = 0; k < mx->group[g].n; k++) {
        if (k > 0)
          h->fs[mb[k]] = h->fs[mb[0]];
        need = fbefore(p, h, &mx->mix[mb[k]], &h->fs[mb[k]], need);
      }
    }
    h->fversion = h->version;
    h->shapehash = key;
    h->mixhash = 0;
    /* none is ever unfed at weight 0 or with the CPU not tracked */
    h->fneed = p->score.unfed > 0 && h->cpu_free >= 0 ? need : INT64_MIN;
  }
}

static void fstats(sf_packer_t *p, hnode_t *h)
{
  const pk_mix_t *mx = &p->mix;
  fshapes(p, h);
  if (h->mixhash == mx->mixhash)
    return;
  int64_t q = 0;
  for (size_t i = 0; i < mx->nmix; i++)
    q += mx->mix[i].q * h->fs[i].f;
  h->fb = (double)q / WEIGHT_ONE;
  h->mixhash = mx->mixhash;
}

/* F(before)'s part of unfed idle GPUs for the call's weights, in 1/WEIGHT_ONE milli-GPUs. */
static int64_t unfed_before(const sf_packer_t *p, const hnode_t *h)
{
  int64_t qu = 0;
  for (size_t i = 0; i < p->mix.nmix; i++)
    qu += p->mix.mix[i].q * h->fs[i].ub;
  return qu;
}

double sf__score_frag(sf_packer_t *p, hnode_t *h)
{
  fstats(p, h);
  return h->fb;
}

int64_t sf__score_starved(const sf_packer_t *p, const hnode_t *h)
{
  int64_t sum = 0;
  if (h->cpu_free < 0)
    return 0;
  for (uint32_t k = 0; k < h->n; k++) {
    const hdev_t *d = &h->d[k];
    if (!(d->fl & HD_GPU) || d->fp <= 0)
      continue;
    bool fits = false, fed = false;
    for (size_t i = 0; i < p->mix.nmix && !fed; i++) {
      const shape_t *m = &p->mix.mix[i];
      if (m->count != 1 || !hosts(m, d, d->fl & HD_IDLE, d->fp, d->fa))
        continue;
      fits = true;
      fed = h->cpu_free >= m->cpu_milli;
    }
    sum += fits && !fed ? d->fp : 0;
  }
  return sum;
}

/* One shape's statistics after the placement, from its statistics before. */
static void shape_after(sf_packer_t *p, const hnode_t *h, size_t i, const after_t *af, fstat_t *s)
{
  const shape_t *m = &p->mix.mix[i];
  *s = h->fs[i];
  if (m->count == 0)
    return;
  int32_t lost = 0, isl = -1;
  bool several = false;
  for (size_t j = 0; j < af->n; j++) {
    const hdev_t *d = &h->d[af->k[j]];
    if (!(d->fl & HD_GPU))
      continue;
    bool hb = hosts(m, d, d->fl & HD_IDLE, d->fp, d->fa),
         ha = hosts(m, d, false, af->fp[j], af->fa[j]);
    s->small += (hb ? 0 : -d->fp) + (ha ? 0 : af->fp[j]);
    s->nh += (int32_t)ha - (int32_t)hb;
    /* no device is idle after a pick */
    s->ni = (int16_t)(s->ni - (hb && (d->fl & HD_IDLE) && holds_one(m, d->fa)));
    if (!m->island || !hb || ha)
      continue;
    if (d->island < 0) {
      s->ns1--;
    } else {
      several = several || (isl >= 0 && isl != d->island);
      lost++;
      isl = d->island;
    }
  }
  if (several)
    shape_stats(p, h, m, af, s);
  else if (lost > 0 && isl == s->argbi)
    s->bi = (int16_t)(s->bi - lost > s->bi2 ? s->bi - lost : s->bi2);
}

/* The least and the greatest change of F over the mix's shapes (none: lo > hi). */
typedef struct {
  int64_t lo, hi;
} range_t;

/*
 * frag_delta for a placement on one device: every share claim and every
 * one-device claim, most of what is scored. The same sums as shape_after
 * and fshape, reading each shape's statistics without copying them: one
 * device leaves at most one island short of a host, which shape_after's
 * bi/bi2 settle without a walk over the node. Part of the fast path: with
 * it off (pk_fast_t.on, which the tests clear) the general sums score, and the
 * property tests hold both to each other and to the reference
 * (test/packer/reference.c). `ranged`, `islands` and `unfeds` are
 * constants where it is inlined (frag_after_one): without island shapes in
 * the mix, their bookkeeping is compiled out, and so is the count of unfed
 * GPUs where the CPU left feeds them all (hnode_t.fneed); with it, *dfu gets
 * their part of dF.
 */
SF_HOT double frag_one(const sf_packer_t *p, const hnode_t *h, const after_t *af, int64_t total,
                       int64_t cpu_free, range_t *range, double *dfu, bool ranged, bool islands,
                       bool unfeds)
{
  const pk_mix_t *mx = &p->mix;
  const hdev_t *d = &h->d[af->k[0]];
  bool gpu = d->fl & HD_GPU, idle = d->fl & HD_IDLE, whole = idle && d->fp == 1000;
  uint64_t bit = 1ull << d->model_bit;
  int32_t fpb = d->fp, fpa = af->fp[0];
  sf_milli_t fab = d->fa, faa = af->fa[0];
  int64_t q = 0, qu = 0, lo = INT64_MAX, hi = INT64_MIN;
  bool feed = unfeds && cpu_free >= 0;
  for (size_t i = 0; i < mx->nmix; i++) {
    const shape_t *m = &mx->mix[i];
    const fstat_t *s = &h->fs[i];
    int64_t f = total;
    if (m->count > 0) {
      int32_t small = s->small, nh = s->nh;
      bool took = false, lost = false; /* the pick takes a host of m: an idle one; one for good */
      if (gpu && (!m->models || (m->models & bit))) {
        bool hb = m->amount == 0 ? whole : fab >= m->amount;
        bool ha = m->amount != 0 && faa >= m->amount;
        small += (hb ? 0 : -fpb) + (ha ? 0 : fpa);
        nh += (int32_t)ha - (int32_t)hb;
        took = idle && hb;
        lost = hb && !ha;
      } else if (gpu) { /* a model it cannot use: too small before and after */
        small += fpa - fpb;
      }
      int32_t can = nh; /* hosts, or for an island shape the most in one island */
      if (islands && m->island) {
        int32_t bi = s->bi, ns1 = s->ns1;
        if (lost && d->island < 0)
          ns1--;
        else if (lost && d->island == s->argbi)
          bi = bi - 1 > s->bi2 ? bi - 1 : s->bi2;
        can = bi > (ns1 > 0) ? bi : (ns1 > 0);
      }
      if ((cpu_free < 0 || cpu_free >= m->cpu_milli) && can >= (int32_t)m->count) {
        f = small;
        /* ni <= nh: when the CPU feeds nh pods, unfed is 0 and ni is not needed */
        if (feed && (int64_t)nh * m->cpu_milli > cpu_free * (int64_t)m->count)
          f += unfed(m, s->ni - (took && holds_one(m, fab)), cpu_free, p->score.unfed, &qu);
      }
    }
    if (unfeds)
      qu -= m->q * s->ub;
    int64_t df = f - s->f;
    q += m->q * df;
    if (ranged) {
      lo = df < lo ? df : lo;
      hi = df > hi ? df : hi;
    }
  }
  if (ranged)
    *range = (range_t){lo, hi};
  if (unfeds)
    *dfu = (double)qu / WEIGHT_ONE;
  return (double)q / WEIGHT_ONE;
}

static double frag_after_one(const sf_packer_t *p, const hnode_t *h, const after_t *af, int64_t total,
                             int64_t cpu_free, range_t *range, double *dfu, bool unfeds)
{
#define FRAG_ONE(ranged, islands, unfeds) \
  frag_one(p, h, af, total, cpu_free, (ranged) ? range : NULL, dfu, ranged, islands, unfeds)
  bool r = range != NULL;
  if (p->mix.islands) /* the island bookkeeping only where a shape needs it */
    return unfeds ? (r ? FRAG_ONE(true, true, true) : FRAG_ONE(false, true, true))
                  : (r ? FRAG_ONE(true, true, false) : FRAG_ONE(false, true, false));
  return unfeds ? (r ? FRAG_ONE(true, false, true) : FRAG_ONE(false, false, true))
                : (r ? FRAG_ONE(true, false, false) : FRAG_ONE(false, false, false));
#undef FRAG_ONE
}

/*
 * dF = Σ w F(after) - F(before), and the range of F(after) - F(before)
 * over the shapes (when `range` is not NULL); *dfu gets the part of dF
 * that is unfed idle GPUs. (Σ w (F(after) - F(before)) and Σ w F(after) -
 * Σ w F(before) are the same double, and so are dF and its two parts
 * added: the sums are exact integers far below 2^53 and WEIGHT_ONE is a
 * power of two.)
 */
static double frag_delta(sf_packer_t *p, hnode_t *h, const after_t *af, int64_t total,
                         int64_t cpu_free, range_t *range, double *dfu)
{
  bool fast = af->n == 1 && p->fast.on;
  if (fast)
    fshapes(p, h); /* F(before) itself is not needed */
  else
    fstats(p, h);
  /* Unless the CPU left is short of what could be unfed, no GPU is, before or after. */
  bool unfeds = cpu_free < h->fneed;
  *dfu = 0.0;
  if (fast)
    return frag_after_one(p, h, af, total, cpu_free, range, dfu, unfeds);
  int64_t q = 0, qu = 0, lo = INT64_MAX, hi = INT64_MIN, w = unfeds ? p->score.unfed : 0;
  for (size_t i = 0; i < p->mix.nmix; i++) {
    fstat_t s;
    shape_after(p, h, i, af, &s);
    int64_t f = fshape(&p->mix.mix[i], &s, total, cpu_free, w, &qu);
    q += p->mix.mix[i].q * f;
    if (range != NULL) {
      lo = f - h->fs[i].f < lo ? f - h->fs[i].f : lo;
      hi = f - h->fs[i].f > hi ? f - h->fs[i].f : hi;
    }
  }
  if (range != NULL)
    *range = (range_t){lo, hi};
  if (unfeds)
    *dfu = (double)(qu - unfed_before(p, h)) / WEIGHT_ONE;
  return (double)q / WEIGHT_ONE - h->fb;
}

/*
 * FGD's node score as its authors' simulator compares nodes: 100 x
 * sigmoid(-cost / 1000) truncated, cost in milli-GPUs, so placements within
 * about 0.04 GPU of each other are equals. Among equals one fixed order of
 * nodes decides (a hash of the name, less than one step): the packing bias
 * the simulator gets from taking the first of its node list, the same in
 * every replica and after a restart, and not left to kube-scheduler's
 * random choice among equal totals. That bias is most of what FGD packs:
 * the replay with a fresh random choice among equals per pod loses 5.4
 * points on the default trace (docs/research/packing.md, "Why FGD's integer
 * steps and one node order"), and comparing the cost exactly, with few equals, loses 0.7.
 */
/* The step: the largest j with cost <= t[j] (t[0] = +inf, t[100] = -inf). */
static int step_of(const pk_score_t *s, double cost)
{
  const double *t = s->step;
  int k;
  if (cost < -STEP_SPAN) {
    k = 99;
  } else if (cost >= STEP_SPAN) {
    k = 0;
  } else { /* the step at the bucket's low end, or one less past the one boundary a bucket can hold */
    k = s->bucket[(int)((cost + STEP_SPAN) / STEP_BUCKET)];
    k -= cost > t[k];
  }
  if (fabs(cost - t[k]) < 1e-6 ||
      fabs(cost - t[k + 1]) < 1e-6) /* on a boundary: the formula decides */
    return (int)floor(100.0 / (1.0 + exp(cost / 1000.0)));
  return k;
}

/* The step and, below it, the node's place in the one fixed order: (0, 0.001]. */
static double with_rank(const sf_packer_t *p, int step)
{
  double rank = (double)(p->idx->nodes[p->node].order >> 11) / 9007199254740992.0; /* [0, 1) */
  return (double)step + 0.001 * (1.0 - rank);
}

static double fgd_step(const sf_packer_t *p, double cost)
{
  return with_rank(p, step_of(&p->score, cost));
}

double sf__score_renode(const sf_packer_t *p, double raw)
{
  if (p->pol->strategy == SF_STRATEGY_BINPACK || p->pol->strategy == SF_STRATEGY_SPREAD)
    return raw; /* the node's state alone */
  /* step + (0, 0.001] rounds to neither step nor step + 1 (steps are 0..100): floor is the step */
  return with_rank(p, (int)floor(raw));
}

void sf_packer_set_bounds(sf_packer_t *p, bool on)
{
  p->score.bounds = on;
  sf__mix_history(&p->mix, on);
}

int sf__score_step(const pk_score_t *s, double cost)
{
  return step_of(s, cost);
}

double sf_packer_step_cost(const sf_packer_t *p, int k)
{
  return k <= 0 ? HUGE_VAL : k > 99 ? -HUGE_VAL : p->score.step[k];
}

double sf_packer_step_margin(const sf_packer_t *p, double cost)
{
  const double *t = p->score.step;
  int k = step_of(&p->score, cost);
  if (k < 0 || k > 99 ||
      !(cost <= t[k] && cost > t[k + 1])) /* on a boundary, where the formula decides */
    return 0.0;
  double m = (t[k] - cost < cost - t[k + 1] ? t[k] - cost : cost - t[k + 1]) - 1e-6;
  return m > 0.0 ? m : 0.0;
}

/*
 * The costs where FGD's integer score steps: 100 / (1 + e^(c/1000)) >= j
 * <=>  c <= 1000 ln(100/j - 1), from +-4595 at the ends to 40 apart in the
 * middle; and the step at the low end of every bucket of STEP_BUCKET
 * milli-GPUs across them, narrower than any step, so that a bucket holds one
 * boundary at most.
 */
void sf__score_init(pk_score_t *s)
{
  s->step[0] = HUGE_VAL;
  for (int j = 1; j < 100; j++)
    s->step[j] = 1000.0 * log(100.0 / j - 1.0);
  s->step[100] = -HUGE_VAL;
  for (int b = 0; b < STEP_BUCKETS; b++) {
    double low = -STEP_SPAN + b * STEP_BUCKET;
    int k = 99;
    while (k > 0 && low > s->step[k])
      k--;
    s->bucket[b] = (uint8_t)k;
  }
}

/*
 * The terms of strategy fragmentation's cost, each one row of TERMS: its
 * policy key, its weight (a field of the policy) and its function, which
 * adds the term times its weight to the cost summed so far (a term of
 * several parts adds them one by one, in a fixed order, so the sum is the
 * same double whatever the weights). Costs are in milli-GPUs of
 * fragmentation, on FGD's scale. A term whose weight is 0 is skipped.
 *
 * The unfed idle GPUs' row is weighed otherwise. weight_unfed sets what
 * each one is worth inside their count (unfed(): in 1/UNFED_ONE, rounded
 * down per shape), since the per-shape sums that give dF carry them; their
 * count is on F's scale, so the row weighs it by weight_frag, like dF. The
 * key's weight times a count of whole GPUs would round per shape
 * elsewhere, and so give other scores. The row follows fragmentation's,
 * so the two add to weight_frag x (dF + their change) before any other
 * term: both parts are exact multiples of 1/WEIGHT_ONE, so with
 * weight_frag a power of two (the default, 1) that is one exact double;
 * with another weight_frag the two products may round apart in the last
 * bit.
 */
typedef struct {
  const hnode_t *h;
  const after_t *af;
  double df;   /* the fragmentation increase, FGD's measure */
  double dfu;  /* the increase of the unfed idle GPUs, weighed by weight_unfed to 1/UNFED_ONE */
  int64_t cpu; /* the node's free CPU after the pod (-1: not tracked) */
  /* the plan's two terms, worked out once for both rows (plan_terms) */
  bool planned;
  double loss, strand;
  int64_t total; /* the node's free GPU after, in milli-GPUs */
} term_in_t;


/* Fragmentation: dF, FGD's measure. */
static double term_frag(const sf_packer_t *p, term_in_t *in, double w, double cost)
{
  (void)p;
  return cost + w * in->df;
}

/*
 * The idle GPUs the node's free CPU cannot feed (unfed(), above): their
 * change, weighed by weight_frag like dF; w, weight_unfed, has set each
 * one's worth already, inside their count.
 */
static double term_unfed(const sf_packer_t *p, term_in_t *in, double w, double cost)
{
  (void)w;
  return cost + p->pol->weight_frag * in->dfu;
}

/* Islands kept whole: each intact island the placement takes part of, not all of, pays 1000. */
static double term_island(const sf_packer_t *p, term_in_t *in, double w, double cost)
{
  const hnode_t *h = in->h;
  const after_t *af = in->af;
  (void)p;
  for (size_t j = 0; j < af->n; j++) {
    int16_t isl = h->d[af->k[j]].island;
    bool first = sf__view_intact(h, isl);
    for (size_t e = 0; e < j && first; e++)
      first = h->d[af->k[e]].island != isl;
    if (!first)
      continue;
    uint32_t used = 0;
    for (size_t e = j; e < af->n; e++)
      used += h->d[af->k[e]].island == isl;
    if (used < sf__view_isize(h)[isl])
      cost += w * 1000.0;
  }
  return cost;
}

static void plan_terms(const sf_packer_t *p, term_in_t *in)
{
  if (!in->planned)
    sf__plan_terms(p, in->h, in->af, in->cpu, &in->loss, &in->strand);
  in->planned = true;
}

/* The plan's loss (plan.c). */
static double term_plan(const sf_packer_t *p, term_in_t *in, double w, double cost)
{
  plan_terms(p, in);
  return cost + w * in->loss;
}

/* The CPU a placement strands: the worth of the free shares it leaves unfed (plan.c). */
static double term_strand(const sf_packer_t *p, term_in_t *in, double w, double cost)
{
  plan_terms(p, in);
  return cost + w * in->strand;
}

/* Scarce models: scarcity x the share taken of each device, when the demand could use several models. */
static double term_model(const sf_packer_t *p, term_in_t *in, double w, double cost)
{
  if (!p->dem.flexible)
    return cost;
  for (size_t j = 0; j < in->af->n; j++) {
    const hdev_t *d = &in->h->d[in->af->k[j]];
    cost += w * p->mix.scarcity[d->model_bit] * (double)(d->fp - in->af->fp[j]);
  }
  return cost;
}

/*
 * Where pods leave (sf_mix_churning), the free capacity a placement leaves
 * on its node, in milli-GPUs: best fit's measure. Filling the fullest node
 * that fits lets departures empty whole nodes, which only the pods of many
 * GPUs and cores can use, and FGD's measure prices a rare shape's last host
 * at its share of the pods (docs/research/packing.md, "Under churn"). A free
 * core counts 1/FILL_CORES_PER_GPU of a GPU, a quarter of what it is worth
 * on a node of 8 GPUs and 128 cores, so that the GPUs decide and the cores
 * keep the CPU-rich nodes for the pods that need them. In a fleet that only
 * fills, nothing empties a node and the term is left out.
 */
#define FILL_CORES_PER_GPU 64

static double term_fill(const sf_packer_t *p, term_in_t *in, double w, double cost)
{
  if (!p->mix.churning)
    return cost;
  int64_t cpu = in->cpu > 0 ? in->cpu : 0;
  return cost + w * ((double)in->total + (double)cpu / FILL_CORES_PER_GPU);
}

/*
 * The table: one row per term, in the order the cost sums them (the order
 * the costs were always summed in, so they stay the same doubles):
 * X(policy key, its field in sf_policy_t, function).
 */
#define TERMS(X)                                 \
  X("weight_frag", weight_frag, term_frag)       \
  X("weight_unfed", weight_unfed, term_unfed)    \
  X("weight_island", weight_island, term_island) \
  X("weight_plan", weight_plan, term_plan)       \
  X("weight_strand", weight_strand, term_strand) \
  X("weight_model", weight_model, term_model)    \
  X("weight_fill", weight_fill, term_fill)

#define TERM_ROW(key, field, fn) {key, offsetof(sf_policy_t, field)},
static const sf__term_t terms[] = {TERMS(TERM_ROW)};
#undef TERM_ROW

const sf__term_t *sf__score_terms(size_t *n)
{
  *n = sizeof(terms) / sizeof(terms[0]);
  return terms;
}

/*
 * The fragmentation strategy's cost: the sum of its terms, each weighted,
 * a loop over the table that the preprocessor unrolls, so each row's
 * function is called directly (and inlined) where an indirect call per row
 * cost 4% of an evaluate call (bench_packer frac, callgrind).
 */
static double cost_fragmentation(const sf_packer_t *p, term_in_t *in)
{
  const sf_policy_t *pol = p->pol;
  double cost = 0.0;
#define TERM_ADD(key, field, fn) \
  if (pol->field != 0.0)         \
    cost = fn(p, in, pol->field, cost);
  TERMS(TERM_ADD)
#undef TERM_ADD
  return cost;
}

/* The GPU share of the devices of a scarce model a placement takes (0 when the term does not apply). */
static double scarce_taken(const sf_packer_t *p, const hnode_t *h, const after_t *af)
{
  double taken = 0.0;
  for (size_t j = 0; p->dem.flexible && j < af->n; j++)
    taken += (double)(h->d[af->k[j]].fp - af->fp[j]);
  return taken;
}

/*
 * What a node's verdict keeps of the placements scored on it: the least
 * cost (its step is the node's score) and, over them all, the range of the
 * per-shape changes of F, the most scarce-model share and the node's free
 * share. Weights moving by x in all (the mix's shapes of then) move a
 * placement's cost by at most x times the half range about the range's
 * middle, plus the middle times the move of the weights' sum (rounding),
 * plus weight_model times the share times the move of a scarcity, plus,
 * for the weight y of shapes that joined since, y times the middle and the
 * free share: sf_mix_drift_t, sf_verdict_t.
 */
static void keep(pk_score_t *s, const hnode_t *h, double cost, range_t rg, double taken)
{
  s->vtotal = (double)h->total;
  s->vcost = cost < s->vcost ? cost : s->vcost;
  s->vlo = (double)rg.lo < s->vlo ? (double)rg.lo : s->vlo;
  s->vhi = (double)rg.hi > s->vhi ? (double)rg.hi : s->vhi;
  s->vtaken = taken > s->vtaken ? taken : s->vtaken;
}

void sf__score_begin(pk_score_t *s)
{
  s->vcost = INFINITY;
  s->vlo = INFINITY;
  s->vhi = -INFINITY;
  s->vtaken = 0.0;
  s->vtotal = 0.0;
}

void sf__score_sens(const sf_packer_t *p, double *cost, double sens[SF_DRIFT_TERMS + 1])
{
  const pk_score_t *s = &p->score;
  bool frag = p->pol->strategy == SF_STRATEGY_FRAGMENTATION;
  double w = frag ? fabs(p->pol->weight_frag) : 1.0;
  if (isinf(s->vcost) || s->vlo > s->vhi) { /* nothing weighed by the mix */
    *cost = isinf(s->vcost) ? 0.0 : s->vcost;
    sens[0] = sens[1] = 0.0;
  } else {
    *cost = s->vcost;
    sens[0] = w * (s->vhi - s->vlo) / 2.0;
    sens[1] = w * fabs(s->vhi + s->vlo) / 2.0;
  }
  sens[2] = frag ? fabs(p->pol->weight_model) * s->vtaken : 0.0;
  /* a shape that joined the mix since: its F before and after are within the node's free share */
  sens[3] = isinf(s->vcost) ? 0.0 : sens[1] + w * s->vtotal;
}

/* The distinct devices of picks[0..n) and their state after. */
static void after_of(sf_packer_t *p, const hnode_t *h, const pick_t *picks, size_t n, after_t *af)
{
  pk_score_t *sc = &p->score;
  if (n > sc->acap) {
    sc->dk = sf_xrealloc(sc->dk, n * sizeof(*sc->dk));
    sc->afa = sf_xrealloc(sc->afa, n * sizeof(*sc->afa));
    sc->afp = sf_xrealloc(sc->afp, n * sizeof(*sc->afp));
    sc->acap = n;
  }
  size_t nd = 0;
  for (size_t i = 0; i < n; i++) {
    size_t j = 0;
    while (j < nd && sc->dk[j] != picks[i].k)
      j++;
    if (j == nd) {
      sc->dk[nd] = picks[i].k;
      sc->afa[nd++] = h->d[picks[i].k].fa;
    }
    sc->afa[j] = (h->d[picks[i].k].fl & HD_MEASURED) ? sc->afa[j] - picks[i].use : 0;
  }
  for (size_t j = 0; j < nd; j++) {
    const hdev_t *d = &h->d[sc->dk[j]];
    sc->afp[j] = (d->fl & HD_MEASURED) ? sf__permille(sc->afa[j], d->pval) : 0;
  }
  *af = (after_t){sc->dk, sc->afa, sc->afp, nd};
}

double sf__score(sf_packer_t *p, hnode_t *h, const pick_t *picks, size_t n)
{
  after_t af;
  after_of(p, h, picks, n, &af);
  int64_t total = h->total, used = h->used;
  for (size_t j = 0; j < af.n; j++) {
    const hdev_t *d = &h->d[af.k[j]];
    if (d->fl & HD_GPU) {
      total += af.fp[j] - d->fp;
      used += d->fp - af.fp[j];
    }
  }
  if (p->pol->strategy == SF_STRATEGY_BINPACK || p->pol->strategy == SF_STRATEGY_SPREAD) {
    double touched = 0.0;
    for (size_t i = 0; i < n; i++) {
      size_t j = 0;
      while (af.k[j] != picks[i].k)
        j++;
      touched += (double)(1000 - af.fp[j]) / 1000.0;
    }
    touched = n ? touched / (double)n : 0.0;
    double u = h->ngpu ? (double)used / (double)((int64_t)h->ngpu * 1000) : 0.0;
    return p->pol->strategy == SF_STRATEGY_BINPACK ? u + 0.1 * touched : -u - 0.1 * touched;
  }
  int64_t cpu = h->cpu_free >= 0 ? h->cpu_free - p->dem.dem->cpu_milli : h->cpu_free;
  range_t rg;
  double dfu;
  double df = frag_delta(p, h, &af, total, cpu, p->score.bounds ? &rg : NULL, &dfu);
  bool frag = p->pol->strategy == SF_STRATEGY_FRAGMENTATION;
  double cost = frag ? cost_fragmentation(p, &(term_in_t){h, &af, df - dfu, dfu, cpu, false, 0.0, 0.0,
                                                          total})
                     : df;
  if (p->score.bounds)
    keep(&p->score, h, cost, rg, frag ? scarce_taken(p, h, &af) : 0.0);
  return fgd_step(p, cost);
}

void sf__score_dispose(pk_score_t *s)
{
  free(s->icnt);
  free(s->dk);
  free(s->afa);
  free(s->afp);
}
