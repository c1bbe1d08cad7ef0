/*
 * The learned workload mix, one module (slicefit/mix.h, pk_mix.h): its
 * storage in the index (a multiset of the present demands' shapes), how a
 * demand is observed and taken back, its shapes for metrics, and the mix a
 * packer call scores fragmentation against, with its hash.
 *
 * Where it comes from: the policy's fgd_mix under fgd when it has one; else
 * the index's learned mix (the multiset of the present demands' shapes,
 * sf_mix_learn and SF_EVAL_LEARN); else, while nothing is learned, the
 * demand's own shapes. Learned weights (counts) are scored in steps of
 * 1/MIX_STEPS of the total, so that the mix, its hash and every per-node
 * statistic keyed on it stay put while the workload's proportions do;
 * shapes under half a step are left out, and so are the rare shapes past
 * the policy's mix_coverage (FGD's typical pods cover 95% of the pods: a
 * rare shape weighs little, but each one adds a CPU or GPU threshold where
 * a node's whole free GPU turns into fragmentation, and on CPU-bound
 * workloads those thresholds decide where pods go; docs/research/packing.md). The learned mix is read again
 * when the index's mix version moves or the index is another one (its
 * serial: an index freed and another allocated at the same address is
 * still another index).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "packer_int.h"
#include "slicefit/mix.h"

#define MIX_STEPS 256.0 /* resolution of learned weights */

static uint64_t models_of(sf_index_t *idx, const char (*names)[SF_POLICY_NAME_MAX], uint32_t n,
                          bool *none)
{
  uint64_t m = 0;
  for (uint32_t i = 0; i < n; i++) {
    sf_str_id id = sf_index_lookup(idx, names[i]);
    for (uint32_t b = 0; id && b < idx->nmodels; b++)
      if (idx->model_ids[b] == id)
        m |= 1ull << b;
  }
  *none = n > 0 && m == 0;
  return m;
}

/* Hashes the fields (not the padding), one 64-bit word at a time; the weights too when `weights`. */
static uint64_t hash_mix(const shape_t *m, size_t n, bool weights)
{
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) {
    uint64_t w = 0;
    if (weights)
      memcpy(&w, &m[i].w, sizeof(w));
    const uint64_t f[5] = {(uint64_t)m[i].cpu_milli, (uint64_t)m[i].amount,
                           (uint64_t)m[i].count << 1 | (uint64_t)m[i].island, m[i].models, w};
    for (size_t k = 0; k < 5; k++) {
      h = (h ^ f[k]) * 0x100000001b3ull;
      h ^= h >> 29;
    }
  }
  return h ? h : 1;
}

/* The policy's fgd_mix, less the shapes whose models are not in the cluster (never hosted). */
static void load_policy(sf_packer_t *p)
{
  pk_mix_t *mx = &p->mix;
  for (size_t i = 0; i < p->pol->nmix && mx->nmix < SF__MIX_MAX; i++) {
    const sf_shape_t *s = &p->pol->mix[i];
    bool none;
    uint64_t m = models_of(p->idx, s->models, s->nmodels, &none);
    if (!none)
      mx->mix[mx->nmix++] = (shape_t){s->cpu_milli, s->amount, s->count, s->island, m, s->weight, 0};
  }
}

/*
 * FGD's typical pods: the least weight a shape needs to be kept when the
 * most frequent shapes, in order, are kept until they cover `coverage`
 * percent of the pods. Shapes as frequent as the last one kept stay too, so
 * that the cut does not depend on the storage's order.
 */
static double coverage_floor(const sf__shape_t *src, size_t n, double total, uint32_t coverage)
{
  double w[SF__MIX_MAX], cum = 0.0;
  if (coverage >= 100 || n == 0)
    return 0.0;
  for (size_t i = 0; i < n; i++) { /* by weight, largest first: insertion, n is small */
    size_t j = i;
    for (; j > 0 && w[j - 1] < src[i].weight; j--)
      w[j] = w[j - 1];
    w[j] = src[i].weight;
  }
  for (size_t i = 0; i < n; i++) {
    cum += w[i];
    if (cum * 100.0 >= total * (double)coverage)
      return w[i];
  }
  return 0.0;
}

static void load_shapes(pk_mix_t *mx, const sf__shape_t *src, size_t n, bool learned, double least)
{
  double total = 0.0;
  for (size_t i = 0; learned && i < n; i++)
    total += src[i].weight;
  for (size_t i = 0; i < n; i++) {
    double w = src[i].weight;
    if (w < least)
      continue;
    if (learned && (w = floor(w * MIX_STEPS / total + 0.5)) <= 0.0)
      continue;
    mx->mix[mx->nmix++] =
        (shape_t){src[i].cpu_milli, src[i].amount, src[i].count, src[i].island, src[i].models, w, 0};
  }
}

static bool same_gpu(const shape_t *a, const shape_t *b)
{
  return a->amount == b->amount && a->count == b->count && a->island == b->island &&
         a->models == b->models;
}

static bool same_shape(const shape_t *a, const shape_t *b)
{
  return a->cpu_milli == b->cpu_milli && same_gpu(a, b);
}

/* The mix's shapes grouped by their GPU side, in the order each side first comes. */
static void group(pk_mix_t *mx)
{
  bool placed[SF__MIX_MAX + 1] = {false};
  uint32_t k = 0;
  mx->ngroup = 0;
  for (size_t i = 0; i < mx->nmix; i++) {
    if (placed[i])
      continue;
    group_t *g = &mx->group[mx->ngroup++];
    g->first = k;
    for (size_t j = i; j < mx->nmix; j++)
      if (!placed[j] && same_gpu(&mx->mix[i], &mx->mix[j])) {
        placed[j] = true;
        mx->member[k++] = (uint16_t)j;
      }
    g->n = k - g->first;
  }
}

/* The id of a shape among every shape the packer scored since its universe began. */
static uint32_t universe_id(pk_mix_t *mx, const shape_t *m)
{
  for (uint32_t u = 0; u < mx->nuni; u++)
    if (same_shape(&mx->uni[u], m))
      return u;
  if (mx->nuni == MIX_UNIVERSE) { /* full: begin again, and no older epoch can be bounded */
    mx->nuni = 0;
    mx->drift.epoch += MIX_EPOCHS;
    mx->reset_at = mx->drift.moves + 1;
  }
  mx->uni[mx->nuni] = *m;
  return mx->nuni++;
}

/*
 * Adds the move from the mix loaded last to this one to the drift: the sum
 * of the weights' changes per shape (a shape that left counts its whole
 * weight, one that joined too) and the change of their sum. When the set
 * of shapes changes, a new epoch begins and its set is kept.
 */
static void drift(pk_mix_t *mx)
{
  if (mx->past == NULL || (mx->mixhash == mx->prevhash && !mx->plan.moved))
    return; /* bounds off (no caller reads the drift), or nothing moved */
  bool replanned = mx->plan.moved;
  mx->plan.moved = false;
  if (replanned) { /* a plan's K moved: every cost may have, and no earlier mix bounds one */
    mx->nuni = 0;
    mx->drift.epoch += MIX_EPOCHS;
    mx->reset_at = mx->drift.moves + 1;
  }
  int64_t moved = 0, sum = 0;
  if (!replanned && mx->shapehash == mx->prevshapes && mx->nmix == mx->nprev) {
    memcpy(mx->uid, mx->prevuid, mx->nmix * sizeof(*mx->uid));
    for (size_t i = 0; i < mx->nmix; i++) {
      moved += llabs(mx->mix[i].q - mx->prev[i].q);
      sum += mx->mix[i].q - mx->prev[i].q;
    }
  } else {
    uint64_t epoch = mx->drift.epoch;
    for (size_t i = 0; i < mx->nmix; i++) {
      mx->uid[i] = (uint16_t)universe_id(mx, &mx->mix[i]);
      if (mx->drift.epoch != epoch && i > 0) /* begun again midway: the earlier ids are gone */
        i = (size_t)-1;
      epoch = mx->drift.epoch;
    }
    bool fresh = mx->drift.epoch != mx->prevepoch; /* prev's ids are of another universe */
    int64_t w[MIX_UNIVERSE] = {0};
    uint64_t set[MIX_SETWORDS] = {0};
    for (size_t i = 0; i < mx->nmix; i++) {
      w[mx->uid[i]] += mx->mix[i].q;
      set[mx->uid[i] / 64] |= 1ull << (mx->uid[i] % 64);
    }
    for (size_t j = 0; j < mx->nprev; j++) {
      if (fresh) {
        moved += mx->prev[j].q;
        sum -= mx->prev[j].q;
      } else {
        w[mx->prevuid[j]] -= mx->prev[j].q;
      }
    }
    for (uint32_t u = 0; u < mx->nuni; u++) {
      moved += llabs(w[u]);
      sum += w[u];
    }
    mx->drift.epoch++;
    memcpy(mx->sets[mx->drift.epoch % MIX_EPOCHS], set, sizeof(set));
  }
  mx->drift.d[0] += (double)moved / WEIGHT_ONE;
  mx->drift.d[1] += (double)llabs(sum) / WEIGHT_ONE;
  mx->drift.moves++;
  if (mx->past != NULL) {
    mixpast_t *m = &mx->past[mx->drift.moves % MIX_HISTORY];
    m->moves = mx->drift.moves;
    m->n = (uint16_t)mx->nmix;
    for (size_t i = 0; i < mx->nmix; i++) {
      m->uid[i] = mx->uid[i];
      m->q[i] = (int32_t)mx->mix[i].q;
    }
  }
  memcpy(mx->prev, mx->mix, mx->nmix * sizeof(*mx->prev));
  memcpy(mx->prevuid, mx->uid, mx->nmix * sizeof(*mx->prevuid));
  mx->nprev = mx->nmix;
  mx->prevhash = mx->mixhash;
  mx->prevshapes = mx->shapehash;
  mx->prevepoch = mx->drift.epoch;
}

void sf__mix_history(pk_mix_t *mx, bool on)
{
  if (on && mx->past == NULL) {
    /* The drift was not followed while off: begin again from no mix, in a new universe, so that
     * the next load counts the whole mix as joined and no earlier epoch or mix is bounded. */
    mx->past = sf_xcalloc(MIX_HISTORY, sizeof(*mx->past));
    mx->nuni = 0;
    mx->nprev = 0;
    mx->prevhash = mx->prevshapes = 0;
    mx->drift.epoch += MIX_EPOCHS;
    mx->prevepoch = mx->drift.epoch;
    mx->reset_at = mx->drift.moves + 1;
  } else if (!on) {
    free(mx->past);
    mx->past = NULL;
  }
}

bool sf_mix_since(const sf_packer_t *p, uint64_t moves, double out[3])
{
  const pk_mix_t *mx = &p->mix;
  if (mx->past == NULL || moves < mx->reset_at || moves > mx->drift.moves)
    return false;
  const mixpast_t *m = &mx->past[moves % MIX_HISTORY];
  if (m->moves != moves)
    return false;
  int64_t then[MIX_UNIVERSE];
  uint64_t had[MIX_SETWORDS] = {0};
  int64_t moved = 0, sum = 0, joined = 0;
  for (uint16_t j = 0; j < m->n; j++) {
    then[m->uid[j]] = m->q[j];
    had[m->uid[j] / 64] |= 1ull << (m->uid[j] % 64);
  }
  for (size_t i = 0; i < mx->nmix; i++) {
    uint16_t u = mx->uid[i];
    if (!(had[u / 64] >> (u % 64) & 1)) {
      joined += mx->mix[i].q;
      continue;
    }
    moved += llabs(mx->mix[i].q - then[u]);
    sum += mx->mix[i].q - then[u];
    then[u] = 0; /* counted */
  }
  for (uint16_t j = 0; j < m->n; j++) { /* gone since: their whole weight */
    moved += then[m->uid[j]];
    sum -= then[m->uid[j]];
    then[m->uid[j]] = 0;
  }
  out[0] = (double)moved / WEIGHT_ONE;
  out[1] = (double)llabs(sum) / WEIGHT_ONE;
  out[2] = (double)joined / WEIGHT_ONE;
  return true;
}

double sf_mix_joined(const sf_packer_t *p, uint64_t epoch)
{
  const pk_mix_t *mx = &p->mix;
  if (mx->past == NULL || epoch > mx->drift.epoch || mx->drift.epoch - epoch >= MIX_EPOCHS)
    return INFINITY;
  const uint64_t *set = mx->sets[epoch % MIX_EPOCHS];
  int64_t q = 0;
  for (size_t i = 0; i < mx->nmix; i++)
    q += (set[mx->uid[i] / 64] >> (mx->uid[i] % 64) & 1) ? 0 : mx->mix[i].q;
  return (double)q / WEIGHT_ONE;
}

void sf__mix_load(sf_packer_t *p)
{
  pk_mix_t *mx = &p->mix;
  const sf_index_t *idx = p->idx;
  bool read = mx->learned_version != idx->mix.version || mx->learned_serial != idx->serial ||
              mx->coverage != p->pol->mix_coverage;
  bool learned = !(p->pol->strategy == SF_STRATEGY_FGD && p->pol->nmix > 0) &&
                 (read || mx->nlearned > 0);  /* read again below, it may be empty */
  if (!read && learned && mx->from_learned) { /* the learned mix as loaded last: nothing moved */
    sf__plan_load(p);
    if (mx->plan.moved) /* the policy turned the plan on since */
      drift(mx);
    return;
  }
  if (read) {
    size_t n;
    const sf__shape_t *m = sf__mix_read(idx, &n);
    memcpy(mx->learned, m, n * sizeof(*mx->learned));
    mx->nlearned = n;
    mx->learned_version = idx->mix.version;
    mx->learned_serial = idx->serial;
    double total = 0.0;
    for (size_t i = 0; i < n; i++)
      total += m[i].weight;
    mx->coverage = p->pol->mix_coverage;
    mx->least = coverage_floor(mx->learned, n, total, mx->coverage);
  }
  mx->nmix = 0;
  mx->from_learned = false;
  if (p->pol->strategy == SF_STRATEGY_FGD && p->pol->nmix > 0) {
    load_policy(p);
  } else if (mx->nlearned > 0) {
    mx->from_learned = learned;
    load_shapes(mx, mx->learned, mx->nlearned, true, mx->least);
  } else {
    sf__shape_t own[SF__MIX_MAX];
    load_shapes(mx, own, sf__demand_shapes(p, p->dem.models, own, SF__MIX_MAX), false, 0.0);
  }
  double sum = 0.0;
  for (size_t i = 0; i < mx->nmix; i++)
    sum += mx->mix[i].w;
  for (size_t i = 0; i < mx->nmix && sum > 0.0; i++) {
    mx->mix[i].w /= sum;
    mx->mix[i].q = llround(mx->mix[i].w * WEIGHT_ONE);
  }
  mx->islands = false;
  for (size_t i = 0; i < mx->nmix; i++)
    mx->islands = mx->islands || mx->mix[i].island;
  group(mx);
  mx->churning = !idx->mix.filling; /* weight_fill's answer moves every cost: in the hash */
  mx->rawhash = hash_mix(mx->mix, mx->nmix, true) ^ (mx->churning ? 0x6a09e667f3bcc909ull : 0);
  mx->mixhash = mx->rawhash;
  mx->shapehash = hash_mix(mx->mix, mx->nmix, false);
  sf__plan_load(p);
  drift(mx);
}

void sf__mix_scarcity(sf_packer_t *p)
{
  pk_mix_t *mx = &p->mix;
  if (mx->scarcity_of == mx->mixhash && mx->scarcity_serial == p->idx->serial &&
      memcmp(mx->scarcity_devs, p->idx->model_devs, sizeof(mx->scarcity_devs)) == 0)
    return; /* the same mix on the same devices */
  mx->scarcity_of = mx->mixhash;
  mx->scarcity_serial = p->idx->serial;
  memcpy(mx->scarcity_devs, p->idx->model_devs, sizeof(mx->scarcity_devs));
  double need[SF__MODELS + 1] = {0}, total = 0.0, devs = 0.0;
  for (size_t i = 0; i < mx->nmix; i++) {
    const shape_t *m = &mx->mix[i];
    double units = m->w * (m->count ? (double)m->count : 0.0);
    total += units;
    int nb = __builtin_popcountll(m->models);
    for (uint32_t b = 0; nb > 0 && b < SF__MODELS; b++)
      if (m->models & (1ull << b))
        need[b] += units / (double)nb;
  }
  for (uint32_t b = 0; b <= SF__MODELS; b++)
    devs += p->idx->model_devs[b];
  double moved = 0.0;
  for (uint32_t b = 0; b <= SF__MODELS; b++) {
    double share = devs > 0.0 ? p->idx->model_devs[b] / devs : 0.0;
    double s = (total > 0.0 && share > 0.0) ? (need[b] / total) / share : 0.0;
    mx->scarcity[b] = s > 1.0 ? 1.0 : s;
    double m = fabs(mx->scarcity[b] - mx->prevscarcity[b]);
    moved = m > moved ? m : moved;
    mx->prevscarcity[b] = mx->scarcity[b];
  }
  mx->drift.d[2] += moved;
}

void sf__mix_learn(sf_packer_t *p, int sign)
{
  uint64_t dm = p->dem.models;
  sf__shape_t own[SF__MIX_MAX];
  size_t n = sf__demand_shapes(p, __builtin_popcountll(dm) == (int)p->idx->nmodels ? 0 : dm, own,
                               SF__MIX_MAX);
  for (size_t i = 0; i < n; i++)
    sf__mix_observe(&p->idx->mix, &own[i], sign);
}

/* ---- the storage ---- */

static int shape_cmp(const sf__shape_t *a, const sf__shape_t *b)
{
#define CMP(f)      \
  if (a->f != b->f) \
  return a->f < b->f ? -1 : 1
  CMP(cpu_milli);
  CMP(amount);
  CMP(count);
  CMP(island);
  CMP(models);
#undef CMP
  return 0;
}

void sf__mix_observe(sf__mix_t *m, const sf__shape_t *s, int sign)
{
  /* Kept in one canonical order, so that the mix depends on which demands are
   * present and not on the order they came in. */
  size_t i = 0;
  int c = 1;
  while (i < m->n && (c = shape_cmp(&m->s[i], s)) < 0)
    i++;
  if (i < m->n && c == 0) {
    m->s[i].weight += sign;
    if (m->s[i].weight <= 0.0) {
      memmove(&m->s[i], &m->s[i + 1], (m->n - i - 1) * sizeof(*m->s));
      m->n--;
    }
  } else if (sign > 0 && m->n < SF__MIX_MAX) {
    memmove(&m->s[i + 1], &m->s[i], (m->n - i) * sizeof(*m->s));
    m->s[i] = *s;
    m->s[i].weight = sign;
    m->n++;
  } else {
    return; /* a shape past SF__MIX_MAX is not tracked; an absent one cannot leave */
  }
  if (!m->held)
    m->version++;
}

const sf__shape_t *sf__mix_read(const sf_index_t *idx, size_t *n)
{
  *n = idx->mix.held ? idx->mix.npub : idx->mix.n;
  return idx->mix.held ? idx->mix.pub : idx->mix.s;
}

void sf_mix_publish(sf_index_t *idx)
{
  sf__mix_t *m = &idx->mix;
  memcpy(m->pub, m->s, m->n * sizeof(*m->pub));
  m->npub = m->n;
  m->version++;
}

void sf_mix_hold(sf_index_t *idx, bool on)
{
  sf__mix_t *m = &idx->mix;
  if (on && !m->held)
    sf_mix_publish(idx);
  if (!on && m->held)
    m->version++;
  m->held = on;
}

/* ---- the public side ---- */

/*
 * Churn: of the last SF__CHURN_WINDOW bindings and departures told, how
 * many were departures. The fleet fills (and weight_fill is left out) when
 * fewer than an eighth of a full window are; until the window is full the
 * fleet is taken to churn, as a live cluster does. The answer is a function
 * of the last events alone, so replicas that were told the same ones agree;
 * a change moves the mix's version, so that every verdict scored with the
 * other answer is dropped.
 */
void sf_mix_churn(sf_index_t *idx, bool departed)
{
  sf__mix_t *m = &idx->mix;
  uint32_t k = m->churn_next, w = k / 64;
  uint64_t bit = 1ull << (k % 64);
  if (m->churn_seen == SF__CHURN_WINDOW)
    m->churn_departed -= (m->churn_bits[w] & bit) != 0; /* the oldest event leaves the window */
  else
    m->churn_seen++;
  m->churn_bits[w] = departed ? m->churn_bits[w] | bit : m->churn_bits[w] & ~bit;
  m->churn_departed += departed;
  m->churn_next = (k + 1) % SF__CHURN_WINDOW;
  bool filling = m->churn_seen == SF__CHURN_WINDOW && m->churn_departed < SF__CHURN_WINDOW / 8;
  if (filling != m->filling) {
    m->filling = filling;
    m->version++;
  }
}

bool sf_mix_churning(const sf_index_t *idx)
{
  return !idx->mix.filling;
}

void sf_mix_clear(sf_index_t *idx)
{
  idx->mix.n = 0;
  if (!idx->mix.held)
    idx->mix.version++;
}

size_t sf_mix_size(const sf_index_t *idx)
{
  size_t n;
  sf__mix_read(idx, &n);
  return n;
}

int sf_mix_shape(const sf_index_t *idx, size_t i, sf_shape_t *out)
{
  size_t n;
  const sf__shape_t *mix = sf__mix_read(idx, &n);
  if (i >= n)
    return SF_ENOENT;
  double sum = 0.0;
  for (size_t k = 0; k < n; k++)
    sum += mix[k].weight;
  const sf__shape_t *s = &mix[i];
  memset(out, 0, sizeof(*out));
  out->cpu_milli = s->cpu_milli;
  out->amount = s->amount;
  out->count = s->count;
  out->island = s->island;
  out->weight = sum > 0.0 ? s->weight / sum : 0.0;
  for (uint32_t b = 0; b < idx->nmodels && out->nmodels < SF_POLICY_MODELS_MAX; b++)
    if (s->models & (1ull << b)) {
      const char *name = sf_index_str(idx, idx->model_ids[b]);
      size_t l = strlen(name);
      if (l >= SF_POLICY_NAME_MAX)
        l = SF_POLICY_NAME_MAX - 1;
      memcpy(out->models[out->nmodels], name, l);
      out->models[out->nmodels++][l] = '\0';
    }
  return 0;
}

int sf_mix_learn(sf_packer_t *p, sf_index_t *idx, const sf_policy_t *pol, const sf_demand_t *demand,
                 int sign)
{
  if (p == NULL || idx == NULL || pol == NULL || demand == NULL || (sign != 1 && sign != -1))
    return SF_EINVAL;
  p->pol = pol;
  sf__demand_prepare(p, idx, demand);
  sf__mix_learn(p, sign);
  p->last_node = -1;
  return 0;
}

uint64_t sf_mix_hash(sf_packer_t *p, sf_index_t *idx, const sf_policy_t *pol,
                     const sf_demand_t *demand)
{
  p->pol = pol;
  sf__demand_prepare(p, idx, demand);
  sf__mix_load(p); /* no fast-path set-up: the mix, and its scarcity for the drift */
  sf__mix_scarcity(p);
  p->last_node = -1;
  return p->mix.mixhash;
}

void sf_mix_drift(const sf_packer_t *p, sf_mix_drift_t *out)
{
  *out = p->mix.drift;
}
