/*
 * The packer: filter and score nodes for one pod's demand.
 *
 * Per call, the demand's requests are flattened in order (claim by claim,
 * request by request). Per node:
 *   1. CPU and memory (when the node tracks them).
 *   2. For every flattened request (and each firstAvailable alternative),
 *      the node's candidate devices: selectors (cached per device in the
 *      index), taints against tolerations, and capacity requests rounded as
 *      DRA rounds them (validValues / validRange / default / whole).
 *   3. A depth-first search picks devices request by request, honouring
 *      availability (exclusive devices, shared capacity, counters, the
 *      policy's max_sharers and headroom) against a tentative overlay of what
 *      earlier picks consumed, and the claim's constraints (matchAttribute,
 *      distinctAttribute, one NVLink island). Candidates are tried in node
 *      order under device_choice first-fit (what the in-tree allocator does)
 *      or in the strategy's preference order under packer. The search counts
 *      steps and gives up (UNSURE) past the policy's search_budget, so a
 *      hostile claim costs a bounded amount per node.
 *   4. The placement found is scored under the strategy (binpack, spread,
 *      fgd, fragmentation). For the common single-device request under
 *      packer choice every candidate is scored and the best kept, as FGD does.
 * Scores are normalised to 0..10 over the FIT nodes: the best raw score gets
 * 10, the others min-max over 0..9 (kube-scheduler picks at random among
 * equal totals, so only the best may have the top). This is independent of
 * the order of the nodes in the call. fgd's raw score is the FGD simulator's
 * integer node score with a fixed order of node names below one step (fgd_raw).
 *
 * Fragmentation (FGD, ATC'23) of a node against a mix M of shapes:
 * F(m) = Σ free share of every device if the node cannot host m (or m asks
 * for no device), else Σ free share of the devices too small for m; F(M) =
 * Σ w_m F(m). Shares are per-mille of the device's primary capacity. The
 * "before" value of each node is cached by node version and mix hash.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "index_int.h"
#include "slicefit/packer.h"
#include "slicefit/quantity.h"

#define MIX_STEPS 256.0  /* resolution of learned weights */
/*
 * Fragmentation sums integer per-mille amounts with weights in steps of
 * 1/WEIGHT_ONE, in int64, so F and its differences are exact: the same
 * cluster gives bit-identical scores whatever path or cache computed them.
 */
#define WEIGHT_ONE 65536.0
#define GROW(arr, cap, need) sf_xgrow(&(arr), &(cap), (need), sizeof(*(arr)))
#define MAXCAPS 32        /* DRA: attributes + capacities per device <= 32 */
#define MAXCUSE 8

enum { SEARCH_FAIL = 0, SEARCH_OK = 1, SEARCH_BUDGET = 2 };

/* Node device state for scoring: free amount and share per device, CPU. */
typedef struct {
  sf_milli_t fa[256];      /* free amount of the primary capacity (INT64_MAX: no primary, idle) */
  int32_t fp[256];         /* free share, per-mille */
  bool idle[256];
  bool gpu[256];           /* counts in fragmentation */
  size_t n;
  int64_t cpu_free;        /* -1: not tracked */
} nstate_t;

/* One flattened request. */
typedef struct {
  uint32_t claim, req;
  const sf_request_t *top;
  const char **capnames;   /* interned names of top/alt capacity requests (per alt) */
} freq_t;

/* A candidate device for one request spec on the current node. */
typedef struct {
  uint32_t k;              /* index in the node's device list */
  sf_milli_t need[MAXCAPS];
} cand_t;

/* Per-request, per-node candidate statistics, for reasons. */
typedef struct {
  uint32_t match, unknown, tainted, shape, busy, short_cap, sharers, counters;
  sf_milli_t best_free, want;   /* best free amount of the first requested capacity */
  const char *capname;
  const sf_taint_t *taint;
} stats_t;

typedef struct {
  uint32_t claim;
  const sf_constraint_t *c;
  const char *attr;        /* interned; NULL when no device has it */
  uint32_t n;              /* values pushed */
  const sf_attr_t *vals[64];
  uint32_t lists;          /* how many of vals are list-type attributes */
  int32_t isl;
} cstate_t;

typedef struct {
  int32_t pool; uint32_t counter; sf_milli_t v;
} tcount_t;

typedef struct {
  sf_milli_t cpu_milli;
  sf_milli_t amount;
  uint32_t count;
  bool island;
  uint64_t models;
  double w;
  int64_t q;                /* w in steps of 1/WEIGHT_ONE */
} shape_t;

typedef struct {
  uint64_t version, mixhash;
  double f;
} fcache_t;

/* ---- fast-path summaries (see "the fast path" below) ---- */
#define FAST_MAXDEV 64
#define FAST_MAXCLS 4096
#define HD_GPU 1u
#define HD_SHARED 2u
#define HD_IDLE 4u
#define HD_PRIMARY 8u      /* the only capacity is the primary one */
enum { FAST_NONE = 0, FAST_SIMPLE, FAST_ISLAND };

typedef struct {
  sf_milli_t capfree;      /* free amount of the only capacity */
  sf_milli_t fa;           /* nstate_t's fa */
  sf_dev_id dev;
  int32_t fp;              /* free share, per-mille */
  uint32_t holders;
  int32_t cls;             /* capacity class, -1: no capacity */
  int8_t island;           /* -1: its own */
  uint8_t model_bit, fl;
} hdev_t;

/* One shape's FGD statistics on a node: Σ fp of GPUs too small, hosts, island counts. */
typedef struct {
  int32_t small, nh;
  int32_t bi, bi2, argbi;  /* best and second-best hosts in one island, and which island */
  int32_t ns1;             /* hosts in no island */
} fstat_t;

typedef struct {
  uint64_t version;        /* node version it was built from; 0: never */
  hdev_t *d; uint32_t n, cap;
  bool fast;               /* every device is plain */
  int64_t cpu_free;        /* -1: not tracked */
  uint64_t intact;         /* islands of >= 2 devices none of which is held */
  int64_t total, used;     /* Σ fp and Σ (1000 - fp) over GPUs */
  uint32_t ngpu;
  uint64_t fversion, mixhash;  /* fs and fb are for this version and mix */
  double fb;               /* F(before) */
  fstat_t *fs; size_t fscap;
  /* The verdict of the last evaluate on this summary, for the next call with the same signature. */
  uint64_t msig;           /* 0: none */
  double mraw;             /* FIT */
  stats_t mst;             /* NO: what the reason is made from */
  uint32_t mn, mnavail, mlargest;
  uint8_t mfit;
} hnode_t;

typedef struct {
  sf__cap_t cap;           /* name, value, request policy (valid[] owned) */
  bool shared;
} hcls_t;

typedef struct {
  uint64_t stamp;
  sf_milli_t need;
  bool ok;
} hmemo_t;

/* A reason already formatted in this call. */
#define NSAY 16
typedef struct {
  uint64_t stamp;
  int kind;
  size_t r;
  int64_t a, b, c;
  char text[SF_REASON_MAX];
} say_t;

struct sf_packer {
  freq_t *fr; size_t nfr, frcap;
  /* current node */
  sf_index_t *idx;
  const sf_policy_t *pol;
  const sf_demand_t *dem;
  sf_node_id node;
  const sf_dev_id *devs; size_t ndevs;
  uint32_t *tcount; size_t tccap;        /* tentative holders per node device */
  sf_milli_t *tcap; size_t tcapcap;      /* tentative consumption [k*MAXCAPS + c] */
  tcount_t *tcnt; size_t ntcnt, tcntcap; /* tentative counter use */
  cand_t *cands; size_t ncands, candcap; /* all requests' candidate lists */
  size_t *coff; size_t coffcap;          /* per (request, alt) offset into cands */
  size_t *clen; size_t clencap;
  cstate_t *cs; size_t ncs, cscap;
  sf_result_t *res; size_t nres, rescap;
  sf_milli_t *rcons; size_t rconscap;    /* consumed arrays of results [i*MAXCAPS] */
  uint32_t *rk; size_t rkcap;            /* node device index of each result */
  stats_t *st; size_t stcap;
  size_t steps;
  bool unknown;
  /* the last placement (for commit) */
  sf_node_id last_node;
  /* scoring */
  shape_t mix[SF__MIX_MAX + 1];
  size_t nmix;
  uint64_t mixhash;
  double scarcity[SF__MODELS + 1];
  bool flexible;
  fcache_t *fc; size_t fccap;
  nstate_t nsb, nsa;       /* node state before and after a placement */
  sf__shape_t learned[SF__MIX_MAX];
  size_t nlearned;
  uint64_t learned_version;
  const sf_index_t *learned_idx;
  bool nsb_ok;             /* nsb holds the current node */
  /* the fast path */
  bool fast_on;
  int fast_kind;
  uint64_t fsig;           /* what a node's verdict depends on besides the node; 0: no memo */
  bool evaluating;         /* in sf_packer_evaluate, where verdicts may come from the memo */
  uint8_t *fsel[8];
  hnode_t *hn; size_t hncap;
  uint64_t hserial;        /* index the summaries describe */
  hcls_t *cls; size_t ncls, clscap;
  hmemo_t *memo; size_t memocap;
  uint64_t stamp;          /* this call */
  say_t says[NSAY];
  size_t nsay;
};

static void cls_clear(sf_packer_t *p);

sf_packer_t *sf_packer_create(void)
{
  sf_packer_t *p = sf_xcalloc(1, sizeof(*p));
  p->last_node = -1;
  p->fast_on = true;
  return p;
}

void sf_packer_destroy(sf_packer_t *p)
{
  if (p == NULL)
    return;
  for (size_t i = 0; i < p->nfr; i++)
    free(p->fr[i].capnames);
  free(p->fr); free(p->tcount); free(p->tcap); free(p->tcnt); free(p->cands);
  free(p->coff); free(p->clen); free(p->cs); free(p->res); free(p->rcons); free(p->rk);
  free(p->st); free(p->fc);
  for (size_t i = 0; i < p->hncap; i++) {
    free(p->hn[i].d);
    free(p->hn[i].fs);
  }
  free(p->hn);
  cls_clear(p);
  free(p->cls); free(p->memo);
  free(p);
}

/* ---- demand preparation ---- */

static const sf_request_t *spec_of(const freq_t *f, int32_t alt)
{
  return alt < 0 ? f->top : &f->top->alts[alt];
}

static size_t nalts_of(const freq_t *f)
{
  return f->top->nalts ? f->top->nalts : 1;
}

static void flatten(sf_packer_t *p, sf_index_t *idx, const sf_demand_t *d)
{
  for (size_t i = 0; i < p->nfr; i++)
    free(p->fr[i].capnames);
  p->nfr = 0;
  for (uint32_t c = 0; c < d->nclaims; c++)
    for (uint32_t r = 0; r < d->claims[c].nreqs; r++) {
      GROW(p->fr, p->frcap, p->nfr + 1);
      freq_t *f = &p->fr[p->nfr++];
      f->claim = c;
      f->req = r;
      f->top = &d->claims[c].reqs[r];
      /* Capacity request names as interned pointers (NULL: no device has it). */
      size_t n = 0;
      for (size_t a = 0; a < nalts_of(f); a++)
        n += spec_of(f, f->top->nalts ? (int32_t)a : -1)->ncaps;
      f->capnames = sf_xcalloc(n + 1, sizeof(*f->capnames));
      n = 0;
      for (size_t a = 0; a < nalts_of(f); a++) {
        const sf_request_t *s = spec_of(f, f->top->nalts ? (int32_t)a : -1);
        for (size_t k = 0; k < s->ncaps; k++) {
          sf_str_id id = s->caps[k].name ? sf_index_lookup(idx, s->caps[k].name) : 0;
          f->capnames[n++] = id ? sf_index_str(idx, id) : NULL;
        }
      }
    }
}

static const char **capnames_of(const freq_t *f, int32_t alt)
{
  size_t off = 0;
  for (int32_t a = 0; a < alt; a++)
    off += f->top->alts[a].ncaps;
  return f->capnames + off;
}

/* ---- eligibility ---- */

static bool tolerated(const sf_request_t *s, const sf_taint_t *t)
{
  for (size_t i = 0; i < s->ntols; i++) {
    const sf_toleration_t *o = &s->tols[i];
    if (!o->any_effect && o->effect != t->effect)
      continue;
    if (o->key == NULL || o->key[0] == '\0') {
      if (o->exists)
        return true;
      continue;
    }
    if (strcmp(o->key, t->key) != 0)
      continue;
    if (o->exists || strcmp(o->value ? o->value : "", t->value) == 0)
      return true;
  }
  return false;
}

/* DRA's rounding of a requested amount under a capacity's request policy; -1: not allowed. */
static sf_milli_t round_request(const sf__cap_t *c, sf_milli_t want)
{
  if (!c->has_policy)
    return want;
  const sf_request_policy_t *rp = &c->policy;
  if (rp->nvalid > 0) {
    for (size_t i = 0; i < rp->nvalid; i++)
      if (rp->valid[i] >= want)
        return rp->valid[i];
    return -1;
  }
  if (rp->has_range) {
    sf_milli_t v = want < rp->min ? rp->min : want;
    if (rp->step > 0 && v > rp->min) {
      sf_milli_t n = (v - rp->min + rp->step - 1) / rp->step;
      if (n > (SF_MILLI_MAX - rp->min) / rp->step)
        return -1;
      v = rp->min + n * rp->step;
    }
    if (rp->max > 0 && v > rp->max)
      return -1;
    return v;
  }
  return want;
}

/*
 * Can device d serve spec s at all (ignoring what is in use)? Fills need[]
 * with what it would consume on a shared device. Returns 1, or 0 with the
 * reason counted in st.
 */
static int eligible(sf_packer_t *p, const sf_request_t *s, const char **capnames, sf_dev_id d,
                    sf_milli_t *need, stats_t *st)
{
  sf__dev_t *dv = &p->idx->devs[d];
  for (size_t i = 0; i < s->nselectors; i++) {
    sf_match_t m = sf__index_select(p->idx, &s->selectors[i], d);
    if (m == SF_MATCH_UNKNOWN) {
      st->unknown++;
      p->unknown = true;
      return 0;
    }
    if (m != SF_MATCH_YES)
      return 0;
  }
  st->match++;
  for (uint32_t i = 0; i < dv->ntaints; i++) {
    const sf_taint_t *t = &dv->taints[i].t;
    if (t->effect != SF_TAINT_NONE && !tolerated(s, t)) {
      st->tainted++;
      st->taint = t;
      return 0;
    }
  }
  if (dv->ncaps > MAXCAPS) {
    st->shape++;
    return 0;
  }
  for (uint32_t c = 0; c < dv->ncaps; c++) {
    const sf__cap_t *cp = &dv->caps[c];
    need[c] = (cp->has_policy && cp->policy.has_default) ? cp->policy.def : cp->value;
  }
  for (size_t r = 0; r < s->ncaps; r++) {
    int32_t c = -1;
    for (uint32_t j = 0; j < dv->ncaps && c < 0; j++)
      if (dv->caps[j].name == capnames[r])
        c = (int32_t)j;
    if (c < 0) {
      st->shape++;
      return 0;
    }
    sf_milli_t v = dv->shared ? round_request(&dv->caps[c], s->caps[r].value) : s->caps[r].value;
    if (v < 0 || v > dv->caps[c].value) {
      st->shape++;
      return 0;
    }
    need[c] = v;
  }
  return 1;
}

static sf_milli_t *tcap_at(sf_packer_t *p, uint32_t k)
{
  return &p->tcap[(size_t)k * MAXCAPS];
}

static sf_milli_t tcounter(const sf_packer_t *p, int32_t pool, uint32_t counter)
{
  sf_milli_t v = 0;
  for (size_t i = 0; i < p->ntcnt; i++)
    if (p->tcnt[i].pool == pool && p->tcnt[i].counter == counter)
      v += p->tcnt[i].v;
  return v;
}

/* Is candidate c available given the real and the tentative state? */
static bool available(sf_packer_t *p, const cand_t *c, stats_t *st)
{
  const sf__dev_t *dv = &p->idx->devs[p->devs[c->k]];
  uint32_t holders = dv->holders + p->tcount[c->k];
  if (!dv->shared) {
    if (holders > 0) {
      if (st) st->busy++;
      return false;
    }
  } else {
    if (p->pol->max_sharers > 0 && holders >= p->pol->max_sharers) {
      if (st) st->sharers++;
      return false;
    }
    const sf_milli_t *t = tcap_at(p, c->k);
    for (uint32_t i = 0; i < dv->ncaps; i++) {
      sf_milli_t reserve = p->pol->headroom_pct ? dv->caps[i].value / 100 * p->pol->headroom_pct : 0;
      sf_milli_t left = dv->caps[i].free - t[i] - reserve;
      if (left < c->need[i]) {
        if (st) {
          st->short_cap++;
          if (left > st->best_free)
            st->best_free = left;
        }
        return false;
      }
    }
  }
  if (holders == 0 && dv->pool >= 0) {
    const sf__pool_t *pl = &p->idx->pools[dv->pool];
    for (uint32_t u = 0; u < dv->ncuses; u++)
      if (pl->counters[dv->cuses[u].counter].free - tcounter(p, dv->pool, dv->cuses[u].counter) <
          dv->cuses[u].value) {
        if (st) st->counters++;
        return false;
      }
  }
  return true;
}

static void take(sf_packer_t *p, const cand_t *c, int sign)
{
  const sf__dev_t *dv = &p->idx->devs[p->devs[c->k]];
  if (sign > 0 && dv->holders + p->tcount[c->k] == 0 && dv->pool >= 0)
    for (uint32_t u = 0; u < dv->ncuses; u++) {
      GROW(p->tcnt, p->tcntcap, p->ntcnt + 1);
      p->tcnt[p->ntcnt++] = (tcount_t){dv->pool, dv->cuses[u].counter, dv->cuses[u].value};
    }
  p->tcount[c->k] = (uint32_t)((int64_t)p->tcount[c->k] + sign);
  if (sign < 0 && dv->holders + p->tcount[c->k] == 0 && dv->pool >= 0)
    p->ntcnt -= dv->ncuses;
  if (dv->shared) {
    sf_milli_t *t = tcap_at(p, c->k);
    for (uint32_t i = 0; i < dv->ncaps; i++)
      t[i] += sign * c->need[i];
  }
}

/* ---- candidates ---- */

static int16_t primary_of(const sf__dev_t *dv) { return dv->primary; }

/* Free share of device k in per-mille after `extra` more of the primary is used (tentative included). */
static int32_t share_after(const sf_packer_t *p, uint32_t k, sf_milli_t extra, bool whole)
{
  const sf__dev_t *dv = &p->idx->devs[p->devs[k]];
  int16_t c = primary_of(dv);
  if (!dv->shared || c < 0)
    return (whole || dv->holders + p->tcount[k] > 0) ? 0 : 1000;
  sf_milli_t v = dv->caps[c].value, f = dv->caps[c].free - p->tcap[(size_t)k * MAXCAPS + (size_t)c] - extra;
  if (v <= 0 || f <= 0)
    return 0;
  return f >= v ? 1000 : (int32_t)(f > INT64_MAX / 1000 ? f / (v / 1000) : f * 1000 / v);
}

/* Is island isl whole and unheld (counting tentative picks when `tent`)? */
static bool island_intact(const sf_packer_t *p, int16_t isl, bool tent)
{
  uint32_t n = 0;
  for (size_t j = 0; j < p->ndevs; j++) {
    const sf__dev_t *e = &p->idx->devs[p->devs[j]];
    if (e->island != isl)
      continue;
    if (e->holders + (tent ? p->tcount[j] : 0) > 0)
      return false;
    n++;
  }
  return n >= 2;
}

static const sf_policy_t *sort_pol;
static sf_packer_t *sort_p;

/* Packer preference: tightest fit first (spread: loosest), devices of intact islands last. */
static int64_t prefer_key(sf_packer_t *p, const cand_t *c)
{
  const sf__dev_t *dv = &p->idx->devs[p->devs[c->k]];
  int16_t pc = primary_of(dv);
  int64_t after = share_after(p, c->k, (dv->shared && pc >= 0) ? c->need[pc] : 0, !dv->shared);
  int64_t key = sort_pol->strategy == SF_STRATEGY_SPREAD ? -after : after;
  if (dv->island >= 0 && island_intact(p, dv->island, true))
    key += 1000000;
  return key * 4096 + c->k;
}

static int cand_cmp(const void *a, const void *b)
{
  int64_t x = prefer_key(sort_p, a), y = prefer_key(sort_p, b);
  return (x > y) - (x < y);
}

/* Gathers every (request, alternative)'s candidates on the current node. */
/* A shared device whose free capacity (what other claims left) cannot take `need`: allocation
 * mode All leaves it out instead of failing on it, as DRA does. */
static bool shared_short(const sf__dev_t *dv, const sf_milli_t *need)
{
  for (uint32_t i = 0; dv->shared && i < dv->ncaps; i++)
    if (dv->caps[i].free < need[i])
      return true;
  return false;
}

static void gather(sf_packer_t *p)
{
  size_t nslots = 0;
  for (size_t r = 0; r < p->nfr; r++)
    nslots += nalts_of(&p->fr[r]);
  GROW(p->coff, p->coffcap, nslots + 1);
  GROW(p->clen, p->clencap, nslots + 1);
  GROW(p->st, p->stcap, nslots + 1);
  memset(p->st, 0, nslots * sizeof(*p->st));
  p->ncands = 0;
  size_t slot = 0;
  for (size_t r = 0; r < p->nfr; r++) {
    const freq_t *f = &p->fr[r];
    for (size_t a = 0; a < nalts_of(f); a++, slot++) {
      int32_t alt = f->top->nalts ? (int32_t)a : -1;
      const sf_request_t *s = spec_of(f, alt);
      const char **cn = capnames_of(f, alt < 0 ? 0 : alt);
      p->coff[slot] = p->ncands;
      p->st[slot].best_free = -1;
      if (s->ncaps) {
        p->st[slot].want = s->caps[0].value;
        p->st[slot].capname = s->caps[0].name;
      }
      for (uint32_t k = 0; k < p->ndevs; k++) {
        GROW(p->cands, p->candcap, p->ncands + 1);
        cand_t *c = &p->cands[p->ncands];
        if (eligible(p, s, cn, p->devs[k], c->need, &p->st[slot]) &&
            !(s->all && !s->admin && shared_short(&p->idx->devs[p->devs[k]], c->need))) {
          c->k = k;
          p->ncands++;
        }
      }
      p->clen[slot] = p->ncands - p->coff[slot];
      if (p->pol->device_choice == SF_CHOICE_PACKER && p->clen[slot] > 1) {
        sort_pol = p->pol;
        sort_p = p;
        qsort(p->cands + p->coff[slot], p->clen[slot], sizeof(cand_t), cand_cmp);
      }
    }
  }
}

static size_t slot_of(const sf_packer_t *p, size_t r, int32_t alt)
{
  size_t slot = 0;
  for (size_t i = 0; i < r; i++)
    slot += nalts_of(&p->fr[i]);
  return slot + (size_t)(alt < 0 ? 0 : alt);
}

/* ---- constraints ---- */

static bool attr_eq(const sf_attr_t *a, const sf_attr_t *b)
{
  return a->type == b->type && a->i == b->i && a->s == b->s;
}

static bool refers(const sf_constraint_t *c, uint32_t req, int32_t alt)
{
  if (c->nrefs == 0)
    return true;
  for (size_t i = 0; i < c->nrefs; i++)
    if (c->refs[i].req == req && (c->refs[i].alt < 0 || c->refs[i].alt == alt))
      return true;
  return false;
}

static const sf_attr_t *dev_attr_named(const sf__dev_t *dv, const char *name)
{
  for (uint32_t i = 0; name && i < dv->nattrs; i++)
    if (dv->attrs[i].name == name)
      return &dv->attrs[i];
  return NULL;
}

static int32_t island_of(const sf__dev_t *dv, uint32_t k)
{
  return dv->island >= 0 ? dv->island : -2 - (int32_t)k;  /* no island: its own */
}

/* Would device k keep constraint cs satisfied? */
static bool cons_ok(const cstate_t *cs, const sf__dev_t *dv, uint32_t k)
{
  if (cs->c->kind == SF_CONSTRAINT_ISLAND)
    return cs->n == 0 || cs->isl == island_of(dv, k);
  const sf_attr_t *a = dev_attr_named(dv, cs->attr);
  if (a == NULL || cs->n >= 64)
    return false;
  if (a->type == SF_ATTR_LIST || (cs->n > 0 && cs->vals[0]->type == SF_ATTR_LIST) || cs->lists)
    return cs->c->kind == SF_CONSTRAINT_MATCH ? sf__attrs_match(cs->vals, cs->n, a)
                                              : sf__attrs_distinct(cs->vals, cs->n, a);
  for (uint32_t j = 0; j < cs->n; j++) {
    bool eq = attr_eq(cs->vals[j], a);
    if (cs->c->kind == SF_CONSTRAINT_MATCH ? !eq : eq)
      return false;
  }
  return true;
}

/* Checks, then records, device k in every constraint of request r that refers to it. */
static bool cons_push(sf_packer_t *p, size_t r, int32_t alt, uint32_t k)
{
  const freq_t *f = &p->fr[r];
  const sf__dev_t *dv = &p->idx->devs[p->devs[k]];
  for (size_t i = 0; i < p->ncs; i++)
    if (p->cs[i].claim == f->claim && refers(p->cs[i].c, f->req, alt) && !cons_ok(&p->cs[i], dv, k))
      return false;
  for (size_t i = 0; i < p->ncs; i++) {
    cstate_t *cs = &p->cs[i];
    if (cs->claim != f->claim || !refers(cs->c, f->req, alt))
      continue;
    if (cs->c->kind == SF_CONSTRAINT_ISLAND)
      cs->isl = island_of(dv, k);
    else
      cs->vals[cs->n] = dev_attr_named(dv, cs->attr);
    cs->lists += cs->c->kind != SF_CONSTRAINT_ISLAND && cs->vals[cs->n]->type == SF_ATTR_LIST;
    cs->n++;
  }
  return true;
}

static void cons_pop(sf_packer_t *p, size_t r, int32_t alt)
{
  const freq_t *f = &p->fr[r];
  for (size_t i = 0; i < p->ncs; i++) {
    cstate_t *cs = &p->cs[i];
    if (cs->claim == f->claim && refers(cs->c, f->req, alt) && cs->n > 0) {
      cs->n--;
      cs->lists -= cs->c->kind != SF_CONSTRAINT_ISLAND && cs->vals[cs->n]->type == SF_ATTR_LIST;
    }
  }
}

/* ---- search ---- */

static void push_result(sf_packer_t *p, size_t r, int32_t alt, const cand_t *c)
{
  GROW(p->res, p->rescap, p->nres + 1);
  GROW(p->rk, p->rkcap, p->nres + 1);
  if ((p->nres + 1) * MAXCAPS > p->rconscap) {
    size_t need = (p->nres + 1) * MAXCAPS;
    p->rcons = sf_xrealloc(p->rcons, need * 2 * sizeof(*p->rcons));
    p->rconscap = need * 2;
  }
  memcpy(&p->rcons[p->nres * MAXCAPS], c->need, sizeof(c->need));
  p->res[p->nres] = (sf_result_t){p->fr[r].claim, p->fr[r].req, alt, {p->devs[c->k], NULL}};
  p->rk[p->nres] = c->k;
  p->nres++;
}

static int search_req(sf_packer_t *p, size_t r);

/* Admin access (as DRA): a device is available unless this claim already took it; what others
 * hold, or the pod's other claims take, does not count, and it takes nothing from them. */
static bool admin_available(const sf_packer_t *p, size_t r, const cand_t *c)
{
  for (size_t i = 0; i < p->nres; i++)
    if (p->res[i].claim == p->fr[r].claim && p->rk[i] == c->k)
      return false;
  return true;
}

/* Chooses the m-th of `want` devices for request r (alternative alt), from candidate `from` on. */
static int search_dev(sf_packer_t *p, size_t r, int32_t alt, uint32_t m, uint32_t want, size_t from)
{
  if (m == want)
    return search_req(p, r + 1);
  size_t slot = slot_of(p, r, alt);
  const cand_t *cs = p->cands ? p->cands + p->coff[slot] : NULL;
  bool admin = spec_of(&p->fr[r], alt)->admin;
  for (size_t i = from; i < p->clen[slot]; i++) {
    if (++p->steps > p->pol->search_budget)
      return SEARCH_BUDGET;
    if (!(admin ? admin_available(p, r, &cs[i]) : available(p, &cs[i], NULL)) ||
        !cons_push(p, r, alt, cs[i].k))
      continue;
    if (!admin)
      take(p, &cs[i], +1);
    push_result(p, r, alt, &cs[i]);
    int rc = search_dev(p, r, alt, m + 1, want, i + 1);
    if (rc != SEARCH_FAIL)
      return rc;
    p->nres--;
    if (!admin)
      take(p, &cs[i], -1);
    cons_pop(p, r, alt);
  }
  return SEARCH_FAIL;
}

static int search_req(sf_packer_t *p, size_t r)
{
  if (r == p->nfr)
    return SEARCH_OK;
  const freq_t *f = &p->fr[r];
  int rc = SEARCH_FAIL;
  for (size_t a = 0; a < nalts_of(f) && rc == SEARCH_FAIL; a++) {
    int32_t alt = f->top->nalts ? (int32_t)a : -1;
    const sf_request_t *s = spec_of(f, alt);
    size_t slot = slot_of(p, r, alt);
    uint32_t want = s->all ? (uint32_t)p->clen[slot] : s->count;
    if (want == 0 || want > p->clen[slot])
      continue;  /* All needs at least one device; ExactCount needs enough candidates */
    rc = search_dev(p, r, alt, 0, want, 0);
  }
  return rc;
}

/* ---- scoring ---- */

static void nstate_load(const sf_packer_t *p, nstate_t *ns)
{
  ns->n = p->ndevs < 256 ? p->ndevs : 256;
  for (size_t k = 0; k < ns->n; k++) {
    const sf__dev_t *dv = &p->idx->devs[p->devs[k]];
    ns->idle[k] = dv->holders == 0;
    ns->gpu[k] = dv->primary >= 0 || dv->model != 0;
    ns->fp[k] = sf_index_dev_free_permille(p->idx, p->devs[k]);
    if (dv->primary >= 0 && dv->shared)
      ns->fa[k] = dv->caps[dv->primary].free;
    else if (dv->primary >= 0)
      ns->fa[k] = dv->holders ? 0 : dv->caps[dv->primary].value;
    else
      ns->fa[k] = dv->holders ? 0 : INT64_MAX;
  }
  const sf__node_t *n = &p->idx->nodes[p->node];
  ns->cpu_free = n->cpu_alloc > 0 ? n->cpu_alloc - n->cpu_used : -1;
}

/* Applies results [from, to) of the placement to a node state. */
static void nstate_apply(const sf_packer_t *p, nstate_t *ns, const sf_result_t *res,
                         const uint32_t *rk, const sf_milli_t *cons, size_t nres, int64_t cpu)
{
  for (size_t i = 0; i < nres; i++) {
    uint32_t k = rk[i];
    if (k >= ns->n)
      continue;
    const sf__dev_t *dv = &p->idx->devs[res[i].pick.dev];
    ns->idle[k] = false;
    if (dv->shared && dv->primary >= 0) {
      sf_milli_t v = dv->caps[dv->primary].value;
      ns->fa[k] -= cons[i * MAXCAPS + (size_t)dv->primary];
      ns->fp[k] = (v <= 0 || ns->fa[k] <= 0) ? 0
                  : (ns->fa[k] >= v ? 1000 : (int32_t)(ns->fa[k] > INT64_MAX / 1000 ? ns->fa[k] / (v / 1000) : ns->fa[k] * 1000 / v));
    } else {
      ns->fa[k] = 0;
      ns->fp[k] = 0;
    }
  }
  if (ns->cpu_free >= 0)
    ns->cpu_free -= cpu;
}

static void nstate_copy(nstate_t *dst, const nstate_t *src)
{
  dst->n = src->n;
  dst->cpu_free = src->cpu_free;
  memcpy(dst->fa, src->fa, src->n * sizeof(*src->fa));
  memcpy(dst->fp, src->fp, src->n * sizeof(*src->fp));
  memcpy(dst->idle, src->idle, src->n * sizeof(*src->idle));
  memcpy(dst->gpu, src->gpu, src->n * sizeof(*src->gpu));
}

static bool hosts(const sf_packer_t *p, const nstate_t *ns, size_t k, const shape_t *m)
{
  const sf__dev_t *dv = &p->idx->devs[p->devs[k]];
  if (!ns->gpu[k] || (m->models && !(m->models & (1ull << dv->model_bit))))
    return false;
  return m->amount == 0 ? (ns->idle[k] && ns->fp[k] == 1000) : ns->fa[k] >= m->amount;
}

/* FGD's F_n(m) in per-mille of a device. */
static double frag_shape(const sf_packer_t *p, const nstate_t *ns, const shape_t *m)
{
  int64_t total = 0, small = 0;
  uint32_t nh = 0;
  uint32_t isl[64];
  uint32_t best_isl = 0;
  if (m->island)
    memset(isl, 0, sizeof(isl));
  for (size_t k = 0; k < ns->n; k++) {
    if (!ns->gpu[k])
      continue;
    total += ns->fp[k];
    if (m->count == 0)
      continue;
    if (hosts(p, ns, k, m)) {
      nh++;
      if (m->island) {
        int32_t is = p->idx->devs[p->devs[k]].island;
        uint32_t c = is >= 0 && is < 64 ? ++isl[is] : 1;
        best_isl = c > best_isl ? c : best_isl;
      }
    } else {
      small += ns->fp[k];
    }
  }
  if (m->count == 0)
    return (double)total;
  bool cpu_ok = ns->cpu_free < 0 || ns->cpu_free >= m->cpu_milli;
  bool can = cpu_ok && (m->island ? best_isl >= m->count : nh >= m->count);
  return (double)(can ? small : total);
}

static double frag_mix(const sf_packer_t *p, const nstate_t *ns)
{
  int64_t q = 0;
  for (size_t i = 0; i < p->nmix; i++)
    q += p->mix[i].q * (int64_t)frag_shape(p, ns, &p->mix[i]);
  return (double)q / WEIGHT_ONE;
}

static double frag_before(sf_packer_t *p, const nstate_t *ns)
{
  if ((size_t)p->node >= p->fccap) {
    size_t old = p->fccap;
    GROW(p->fc, p->fccap, (size_t)p->node + 1);
    memset(p->fc + old, 0, (p->fccap - old) * sizeof(*p->fc));
  }
  fcache_t *c = &p->fc[p->node];
  const sf__node_t *n = &p->idx->nodes[p->node];
  if (c->version != n->version || c->mixhash != p->mixhash || c->version == 0) {
    c->f = frag_mix(p, ns);
    c->version = n->version;
    c->mixhash = p->mixhash;
  }
  return c->f;
}

/*
 * FGD's node score as its authors' simulator compares nodes: 100 x
 * sigmoid(-dF / 1000) truncated, dF the fragmentation increase in milli-GPUs,
 * so placements within about 0.04 GPU of each other are equals. Among equals
 * one fixed order of nodes decides (a hash of the name, less than one step):
 * the packing bias the simulator gets from taking the first of its node
 * list, the same in every replica and after a restart, and not left to
 * kube-scheduler's random choice among equal totals.
 */
static double fgd_raw(const sf_packer_t *p, double df)
{
  double rank = (double)(p->idx->nodes[p->node].order >> 11) / 9007199254740992.0;  /* [0, 1) */
  return floor(100.0 / (1.0 + exp(df / 1000.0))) + 0.001 * (1.0 - rank);
}

static double util(const nstate_t *ns)
{
  int64_t sum = 0, n = 0;
  for (size_t k = 0; k < ns->n; k++)
    if (ns->gpu[k]) {
      sum += 1000 - ns->fp[k];
      n++;
    }
  return n ? (double)sum / (double)(n * 1000) : 0.0;
}

/* Scores a placement (results res/rk/cons, nres of them) on the current node. */
static double score(sf_packer_t *p, const sf_result_t *res, const uint32_t *rk, const sf_milli_t *cons,
                    size_t nres)
{
  const nstate_t *bp = &p->nsb;
  nstate_t *ap = &p->nsa;
  if (!p->nsb_ok) {
    nstate_load(p, &p->nsb);
    p->nsb_ok = true;
  }
  nstate_copy(ap, bp);
  nstate_apply(p, ap, res, rk, cons, nres, p->dem->cpu_milli);
#define before (*bp)
#define after (*ap)
  double touched = 0.0;
  for (size_t i = 0; i < nres; i++)
    touched += rk[i] < after.n ? (double)(1000 - after.fp[rk[i]]) / 1000.0 : 1.0;
  touched = nres ? touched / (double)nres : 0.0;
  switch (p->pol->strategy) {
  case SF_STRATEGY_BINPACK:
    return util(&after) + 0.1 * touched;
  case SF_STRATEGY_SPREAD:
    return -util(&after) - 0.1 * touched;
  case SF_STRATEGY_FGD:
    return fgd_raw(p, frag_mix(p, &after) - frag_before(p, &before));
  case SF_STRATEGY_FRAGMENTATION:
  default:
    break;
  }
  double raw = -p->pol->weight_frag * (frag_mix(p, &after) - frag_before(p, &before));
  /*
   * Islands kept whole: a placement that breaks an island intact before it
   * pays, unless it takes it all (the picks themselves are tentative here).
   */
  for (size_t i = 0; i < nres; i++) {
    const sf__dev_t *dv = &p->idx->devs[res[i].pick.dev];
    bool first = true;
    for (size_t j = 0; j < i; j++)
      first = first && p->idx->devs[res[j].pick.dev].island != dv->island;
    if (dv->island < 0 || !first || !island_intact(p, dv->island, false))
      continue;
    size_t in = 0, used = 0;
    for (size_t k = 0; k < p->ndevs; k++)
      in += p->idx->devs[p->devs[k]].island == dv->island;
    for (size_t j = 0; j < nres; j++)
      used += p->idx->devs[res[j].pick.dev].island == dv->island;
    if (used < in)
      raw -= p->pol->weight_island * 1000.0;
  }
  /* Scarce models kept for the claims that select them. */
  if (p->flexible)
    for (size_t i = 0; i < nres; i++) {
      const sf__dev_t *dv = &p->idx->devs[res[i].pick.dev];
      int32_t used = rk[i] < before.n ? before.fp[rk[i]] - after.fp[rk[i]] : 1000;
      raw -= p->pol->weight_model * p->scarcity[dv->model_bit] * (double)used;
    }
  return raw;
#undef before
#undef after
}

/* ---- per-call preparation: mix, scarcity, flexibility, constraints ---- */

static uint64_t models_of(sf_index_t *idx, const char (*names)[SF_POLICY_NAME_MAX], uint32_t n, bool *none)
{
  uint64_t m = 0;
  *none = false;
  for (uint32_t i = 0; i < n; i++) {
    sf_str_id id = sf_index_lookup(idx, names[i]);
    for (uint32_t b = 0; id && b < idx->nmodels; b++)
      if (idx->model_ids[b] == id)
        m |= 1ull << b;
  }
  *none = n > 0 && m == 0;
  return m;
}

/* Hashes the fields (not the padding), one 64-bit word at a time. */
static uint64_t hash_mix(const shape_t *m, size_t n)
{
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) {
    uint64_t w;
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

/* Is a representative device of model bit b eligible for the first request's selectors? */
static bool model_eligible(sf_packer_t *p, uint32_t b)
{
  sf_index_t *idx = p->idx;
  sf_dev_id d = idx->model_rep[b];
  if (idx->model_devs[b] == 0)
    return false;
  if (d < 0 || (size_t)d >= idx->ndevs || !idx->devs[d].used || idx->devs[d].model_bit != b) {
    for (d = 0; (size_t)d < idx->ndevs; d++)
      if (idx->devs[d].used && !idx->devs[d].retired && idx->devs[d].model_bit == b)
        break;
    if ((size_t)d >= idx->ndevs)
      return false;
    idx->model_rep[b] = d;
  }
  const sf_request_t *s = spec_of(&p->fr[0], p->fr[0].top->nalts ? 0 : -1);
  for (size_t i = 0; i < s->nselectors; i++)
    if (sf__index_select(idx, &s->selectors[i], d) != SF_MATCH_YES)
      return false;
  return true;
}

static uint64_t demand_models(sf_packer_t *p)
{
  uint64_t m = 0;
  for (uint32_t b = 0; p->nfr > 0 && b < p->idx->nmodels; b++)
    if (model_eligible(p, b))
      m |= 1ull << b;
  return m;
}

static sf_milli_t primary_request(const sf_packer_t *p, const sf_request_t *s)
{
  for (size_t i = 0; i < s->ncaps; i++) {
    const char *n = s->caps[i].name, *sl = strrchr(n, '/');
    if (strcmp(n, p->pol->capacity) == 0 || (sl && strcmp(sl + 1, p->pol->capacity) == 0))
      return s->caps[i].value;
  }
  return 0;
}

static bool needs_island(const sf_packer_t *p, const freq_t *f)
{
  const sf_claim_t *c = &p->dem->claims[f->claim];
  for (size_t i = 0; i < c->ncons; i++)
    if (c->cons[i].kind == SF_CONSTRAINT_ISLAND && refers(&c->cons[i], f->req, -1))
      return true;
  return false;
}

/* The demand's own shapes (one per flattened request; CPU on the first). */
static size_t demand_shapes(sf_packer_t *p, uint64_t models, sf__shape_t *out, size_t max)
{
  size_t n = 0;
  if (p->nfr == 0 && max > 0)
    out[n++] = (sf__shape_t){p->dem->cpu_milli, 0, 0, false, 0, 1.0};
  for (size_t r = 0; r < p->nfr && n < max; r++) {
    const sf_request_t *s = spec_of(&p->fr[r], p->fr[r].top->nalts ? 0 : -1);
    out[n++] = (sf__shape_t){r == 0 ? p->dem->cpu_milli : 0, primary_request(p, s),
                             s->all ? 1 : s->count, needs_island(p, &p->fr[r]), models, 1.0};
  }
  return n;
}

static void mix_load(sf_packer_t *p, uint64_t dmodels)
{
  const sf_policy_t *pol = p->pol;
  sf__shape_t own[SF__MIX_MAX];
  /* The learned mix is snapshotted when the index's moved. */
  if (p->learned_version != p->idx->mix_version || p->learned_idx != p->idx) {
    memcpy(p->learned, p->idx->mix, p->idx->nmix * sizeof(*p->learned));
    p->nlearned = p->idx->nmix;
    p->learned_version = p->idx->mix_version;
    p->learned_idx = p->idx;
  }
  const sf__shape_t *src = p->learned;
  size_t n = p->nlearned;
  p->nmix = 0;
  if (pol->strategy == SF_STRATEGY_FGD && pol->nmix > 0) {
    for (size_t i = 0; i < pol->nmix && p->nmix < SF__MIX_MAX; i++) {
      const sf_shape_t *s = &pol->mix[i];
      bool none;
      uint64_t m = models_of(p->idx, s->models, s->nmodels, &none);
      if (none)
        continue;  /* its models are not in the cluster: it can never be hosted */
      p->mix[p->nmix++] = (shape_t){s->cpu_milli, s->amount, s->count, s->island, m, s->weight, 0};
    }
    n = 0;
  } else if (n == 0) {
    n = demand_shapes(p, dmodels, own, SF__MIX_MAX);
    src = own;
  }
  /*
   * Learned weights (counts of present demands) are scored in steps of
   * 1/MIX_STEPS of the total, so that the mix, its hash and every per-node
   * fragmentation cache keyed on it stay put while the workload's
   * proportions do; shapes under half a step are left out.
   */
  double total = 0.0;
  for (size_t i = 0; src == p->learned && i < n; i++)
    total += src[i].weight;
  for (size_t i = 0; i < n; i++) {
    double w = src[i].weight;
    if (src == p->learned && (w = floor(w * MIX_STEPS / total + 0.5)) <= 0.0)
      continue;
    p->mix[p->nmix++] = (shape_t){src[i].cpu_milli, src[i].amount, src[i].count, src[i].island,
                                  src[i].models, w, 0};
  }
  double sum = 0.0;
  for (size_t i = 0; i < p->nmix; i++)
    sum += p->mix[i].w;
  for (size_t i = 0; i < p->nmix && sum > 0.0; i++) {
    p->mix[i].w /= sum;
    p->mix[i].q = llround(p->mix[i].w * WEIGHT_ONE);
  }
  p->mixhash = hash_mix(p->mix, p->nmix);
}

/* How much of each model the mix's model-restricted shapes need, against its share of devices. */
static void scarcity_load(sf_packer_t *p)
{
  double need[SF__MODELS + 1] = {0}, total = 0.0, devs = 0.0;
  for (size_t i = 0; i < p->nmix; i++) {
    const shape_t *m = &p->mix[i];
    double units = m->w * (m->count ? (double)m->count : 0.0);
    total += units;
    int nb = __builtin_popcountll(m->models);
    for (uint32_t b = 0; nb > 0 && b < SF__MODELS; b++)
      if (m->models & (1ull << b))
        need[b] += units / (double)nb;
  }
  for (uint32_t b = 0; b <= SF__MODELS; b++)
    devs += p->idx->model_devs[b];
  for (uint32_t b = 0; b <= SF__MODELS; b++) {
    double share = devs > 0.0 ? p->idx->model_devs[b] / devs : 0.0;
    double s = (total > 0.0 && share > 0.0) ? (need[b] / total) / share : 0.0;
    p->scarcity[b] = s > 1.0 ? 1.0 : s;
  }
}

static void sig_add(uint64_t *h, const void *data, size_t n)
{
  const unsigned char *b = data;
  for (size_t i = 0; i < n; i++)
    *h = (*h ^ b[i]) * 1099511628211ull;
}

/*
 * The signature of everything a node's fast verdict depends on besides the
 * node's own summary: the index, the request (count, capacity, selectors by
 * their cache keys), the scoring policy, the pod's CPU, the workload mix and
 * the models' scarcity. Names are not in it: reasons are written per call.
 * 0 (nothing remembered) when a selector has no cache.
 */
static uint64_t fast_signature(const sf_packer_t *p)
{
  const sf_request_t *s = p->fr[0].top;
  const sf_policy_t *pol = p->pol;
  uint64_t h = 1469598103934665603ull;
  sig_add(&h, &p->fast_kind, sizeof(p->fast_kind));
  sig_add(&h, &p->idx->serial, sizeof(p->idx->serial));
  sig_add(&h, &s->count, sizeof(s->count));
  sig_add(&h, &s->ncaps, sizeof(s->ncaps));
  if (s->ncaps) {
    sig_add(&h, &s->caps[0].value, sizeof(s->caps[0].value));
    sig_add(&h, &p->fr[0].capnames[0], sizeof(p->fr[0].capnames[0]));  /* interned */
  }
  sig_add(&h, &s->nselectors, sizeof(s->nselectors));
  for (size_t i = 0; i < s->nselectors; i++) {
    if (p->fsel[i] == NULL || s->selectors[i].cache_key == 0)
      return 0;
    sig_add(&h, &s->selectors[i].cache_key, sizeof(s->selectors[i].cache_key));
  }
  sig_add(&h, &pol->strategy, sizeof(pol->strategy));
  sig_add(&h, &pol->device_choice, sizeof(pol->device_choice));
  sig_add(&h, &pol->weight_frag, sizeof(pol->weight_frag));
  sig_add(&h, &pol->weight_island, sizeof(pol->weight_island));
  sig_add(&h, &pol->weight_model, sizeof(pol->weight_model));
  sig_add(&h, &pol->max_sharers, sizeof(pol->max_sharers));
  sig_add(&h, &pol->headroom_pct, sizeof(pol->headroom_pct));
  sig_add(&h, &p->dem->cpu_milli, sizeof(p->dem->cpu_milli));
  sig_add(&h, &p->mixhash, sizeof(p->mixhash));
  sig_add(&h, &p->flexible, sizeof(p->flexible));
  if (p->flexible)
    sig_add(&h, p->scarcity, sizeof(p->scarcity));
  return h ? h : 1;
}

/* Which fast path serves this call, if any; the selectors' caches for it. */
static void fast_prepare(sf_packer_t *p)
{
  p->fast_kind = FAST_NONE;
  if (!p->fast_on || p->nfr != 1)
    return;
  const sf_request_t *s = p->fr[0].top;
  if (s->nalts || s->all || s->admin || s->count < 1 || s->ncaps > 1 || s->nselectors > 8)
    return;
  if (p->ncs == 0 && s->count == 1)
    p->fast_kind = FAST_SIMPLE;
  else if (p->ncs == 1 && p->cs[0].c->kind == SF_CONSTRAINT_ISLAND && refers(p->cs[0].c, p->fr[0].req, -1))
    p->fast_kind = FAST_ISLAND;
  uint64_t gen;
  do {
    gen = p->idx->cache_gen;
    for (size_t i = 0; i < s->nselectors; i++)
      p->fsel[i] = sf__index_selcache(p->idx, &s->selectors[i]);
  } while (gen != p->idx->cache_gen);
  p->fsig = p->fast_kind == FAST_NONE ? 0 : fast_signature(p);
}

/* Adds (+1) or takes back (-1) the demand's shapes in the index's learned mix. */
static void learn(sf_packer_t *p, uint64_t dm, int sign)
{
  sf__shape_t own[SF__MIX_MAX];
  size_t n = demand_shapes(p, __builtin_popcountll(dm) == (int)p->idx->nmodels ? 0 : dm, own, SF__MIX_MAX);
  for (size_t i = 0; i < n; i++)
    sf__index_observe(p->idx, &own[i], sign);
}

/* The demand's side of a call: requests, constraints, and the models it can use. */
static uint64_t prepare_demand(sf_packer_t *p, sf_index_t *idx, const sf_policy_t *pol, const sf_demand_t *d)
{
  p->idx = idx;
  p->pol = pol;
  p->dem = d;
  flatten(p, idx, d);
  p->ncs = 0;
  for (uint32_t c = 0; c < d->nclaims; c++)
    for (size_t i = 0; i < d->claims[c].ncons; i++) {
      const sf_constraint_t *k = &d->claims[c].cons[i];
      GROW(p->cs, p->cscap, p->ncs + 1);
      sf_str_id a = k->attr ? sf_index_lookup(idx, k->attr) : 0;
      p->cs[p->ncs++] = (cstate_t){c, k, a ? sf_index_str(idx, a) : NULL, 0, {NULL}, 0, 0};
    }
  return demand_models(p);
}

static void prepare(sf_packer_t *p, sf_index_t *idx, const sf_policy_t *pol, const sf_demand_t *d,
                    unsigned flags)
{
  uint64_t dm = prepare_demand(p, idx, pol, d);
  p->flexible = __builtin_popcountll(dm) >= 2;
  if (flags & SF_EVAL_LEARN)
    learn(p, dm, +1);
  mix_load(p, dm);
  scarcity_load(p);
  p->stamp++;
  fast_prepare(p);
}

/* ---- one node ---- */

static void node_begin(sf_packer_t *p, sf_node_id node)
{
  p->node = node;
  p->devs = sf_index_node_devices(p->idx, node, &p->ndevs);
  size_t old = p->tccap;
  GROW(p->tcount, p->tccap, p->ndevs + 1);
  memset(p->tcount + old, 0, (p->tccap - old) * sizeof(*p->tcount));
  if ((p->ndevs + 1) * MAXCAPS > p->tcapcap) {
    size_t ncap = (p->ndevs + 1) * MAXCAPS * 2;
    p->tcap = sf_xrealloc(p->tcap, ncap * sizeof(*p->tcap));
    memset(p->tcap + p->tcapcap, 0, (ncap - p->tcapcap) * sizeof(*p->tcap));
    p->tcapcap = ncap;
  }
  p->ntcnt = 0;
  p->nres = 0;
  p->steps = 0;
  p->unknown = false;
  p->nsb_ok = false;
  for (size_t i = 0; i < p->ncs; i++)
    p->cs[i].n = 0;
}

/* Takes back the tentative state of the results, keeping the results themselves. */
static void node_end(sf_packer_t *p)
{
  for (size_t i = 0; i < p->nres; i++) {
    cand_t c;
    c.k = p->rk[i];
    memcpy(c.need, &p->rcons[i * MAXCAPS], sizeof(c.need));
    take(p, &c, -1);
  }
  p->ntcnt = 0;
}

static const char *effect_name(sf_taint_effect_t e)
{
  return e == SF_TAINT_NOEXECUTE ? "NoExecute" : e == SF_TAINT_NOSCHEDULE ? "NoSchedule" : "None";
}

static void qty(sf_milli_t v, char *buf, size_t len)
{
  if (sf_quantity_format(v, 1, buf, len) < 0)
    snprintf(buf, len, "%lld", (long long)(v / 1000));
}

/* The largest number of available candidates of slot that share one island. */
static uint32_t largest_island(sf_packer_t *p, size_t slot)
{
  uint32_t best = 0;
  const cand_t *cs = p->cands ? p->cands + p->coff[slot] : NULL;
  for (size_t i = 0; i < p->clen[slot]; i++) {
    if (!available(p, &cs[i], NULL))
      continue;
    int32_t isl = island_of(&p->idx->devs[p->devs[cs[i].k]], cs[i].k);
    uint32_t n = 0;
    for (size_t j = 0; j < p->clen[slot]; j++)
      n += available(p, &cs[j], NULL) && island_of(&p->idx->devs[p->devs[cs[j].k]], cs[j].k) == isl;
    best = n > best ? n : best;
  }
  return best;
}

enum { R_NODEVS = 1, R_NOMATCH, R_TAINT, R_NOCAP, R_SHORT, R_SHARERS, R_COUNTERS, R_FREE, R_ISLAND, R_UNKNOWN };

/* Formats reason `kind` about request r with numbers a, b, c into out[SF_REASON_MAX]. */
static void say_format(const sf_packer_t *p, int kind, size_t r, int64_t a, int64_t b, int64_t c, char *out)
{
  const size_t len = SF_REASON_MAX;
  const freq_t *f = &p->fr[r < p->nfr ? r : 0];
  const sf_request_t *s = p->nfr ? spec_of(f, f->top->nalts ? 0 : -1) : NULL;
  const char *claim = p->nfr && p->dem->claims[f->claim].name ? p->dem->claims[f->claim].name : "";
  const char *rn = p->nfr && f->top->name ? f->top->name : "";
  const sf_taint_t *t = (const sf_taint_t *)(uintptr_t)b;
  char qa[32], qb[32];
  switch (kind) {
  case R_NODEVS:
    snprintf(out, len, "node has no DRA devices for claim %s", claim);
    break;
  case R_NOMATCH:
    snprintf(out, len, "no device on the node matches request %s of claim %s", rn, claim);
    break;
  case R_TAINT:
    snprintf(out, len, "request %s of claim %s does not tolerate taint %s=%s:%s on %u matching device(s)", rn,
             claim, t->key, t->value, effect_name(t->effect), (unsigned)a);
    break;
  case R_NOCAP:
    snprintf(out, len, "no matching device offers the capacity request %s of claim %s asks for", rn, claim);
    break;
  case R_SHORT: {
    const char *cn = s->caps[0].name, *sl = strrchr(cn, '/');
    qty(a, qa, sizeof(qa));
    qty(b, qb, sizeof(qb));
    snprintf(out, len, "request %s of claim %s needs %s of %s; the most free on a matching device is %s", rn,
             claim, qa, sl ? sl + 1 : cn, qb);
    break;
  }
  case R_SHARERS:
    snprintf(out, len, "matching devices already have %u sharers (policy max_sharers)", p->pol->max_sharers);
    break;
  case R_COUNTERS:
    snprintf(out, len, "request %s of claim %s: the shared counters of the partitionable devices are used up",
             rn, claim);
    break;
  case R_FREE:
    snprintf(out, len, "request %s of claim %s needs %u device(s); %u of %zu matching are free", rn, claim,
             (unsigned)a, (unsigned)b, (size_t)c);
    break;
  case R_ISLAND:
    snprintf(out, len, "needs %u GPUs in one NVLink island; the largest free island has %u", (unsigned)a,
             (unsigned)b);
    break;
  default:
    snprintf(out, len, "a selector cannot be evaluated here; left to the DRA plugin");
    break;
  }
}

/*
 * say_format, memoised for the call: the failing nodes of one call mostly
 * fail alike, and formatting is most of what a failing node costs.
 */
static void say(sf_packer_t *p, int kind, size_t r, int64_t a, int64_t b, int64_t c, char *out, size_t len)
{
  say_t *e = NULL;
  for (size_t i = 0; i < NSAY && e == NULL; i++) {
    say_t *x = &p->says[i];
    if (x->stamp == p->stamp && x->kind == kind && x->r == r && x->a == a && x->b == b && x->c == c)
      e = x;
  }
  if (e == NULL) {
    e = &p->says[p->nsay++ % NSAY];
    *e = (say_t){p->stamp, kind, r, a, b, c, ""};
    say_format(p, kind, r, a, b, c, e->text);
  }
  size_t n = strlen(e->text);
  n = n < len ? n : len - 1;
  memcpy(out, e->text, n);
  out[n] = '\0';
}

/*
 * Explains why request r (its first alternative) cannot be placed, from
 * its candidate statistics: the node's device count, the candidates and
 * how many of them are available. False if the request alone could be.
 */
static bool reason_of_request(sf_packer_t *p, size_t r, const stats_t *st, size_t ndevs, size_t clen,
                              uint32_t avail, char *out, size_t len)
{
  const freq_t *f = &p->fr[r];
  const sf_request_t *s = spec_of(f, f->top->nalts ? 0 : -1);
  uint32_t want = s->all ? (uint32_t)(clen ? clen : 1) : s->count;
  if (ndevs == 0)
    say(p, R_NODEVS, r, 0, 0, 0, out, len);
  else if (st->match == 0)
    say(p, R_NOMATCH, r, 0, 0, 0, out, len);
  else if (clen == 0 && st->tainted)
    say(p, R_TAINT, r, st->tainted, (int64_t)(uintptr_t)st->taint, 0, out, len);
  else if (clen == 0)
    say(p, R_NOCAP, r, 0, 0, 0, out, len);
  else if (avail >= want)
    return false;
  else if (st->short_cap && st->capname && want == 1)
    say(p, R_SHORT, r, st->want, st->best_free < 0 ? 0 : st->best_free, 0, out, len);
  else if (st->sharers)
    say(p, R_SHARERS, r, 0, 0, 0, out, len);
  else if (st->counters && avail == 0)
    say(p, R_COUNTERS, r, 0, 0, 0, out, len);
  else
    say(p, R_FREE, r, want, avail, (int64_t)clen, out, len);
  return true;
}

static bool request_reason(sf_packer_t *p, size_t r, char *out, size_t len)
{
  const freq_t *f = &p->fr[r];
  size_t slot = slot_of(p, r, f->top->nalts ? 0 : -1);
  stats_t *st = &p->st[slot];
  uint32_t avail = 0;
  const cand_t *cs = p->cands ? p->cands + p->coff[slot] : NULL;
  for (size_t i = 0; i < p->clen[slot]; i++)
    avail += available(p, &cs[i], st);
  return reason_of_request(p, r, st, p->ndevs, p->clen[slot], avail, out, len);
}

static void constraint_reason(sf_packer_t *p, char *out, size_t len)
{
  for (size_t i = 0; i < p->ncs; i++) {
    const sf_constraint_t *c = p->cs[i].c;
    if (c->kind != SF_CONSTRAINT_ISLAND)
      continue;
    uint32_t want = 0, best = 0;
    for (size_t r = 0; r < p->nfr; r++)
      if (p->fr[r].claim == p->cs[i].claim && refers(c, p->fr[r].req, -1)) {
        const sf_request_t *s = spec_of(&p->fr[r], p->fr[r].top->nalts ? 0 : -1);
        uint32_t l = largest_island(p, slot_of(p, r, p->fr[r].top->nalts ? 0 : -1));
        want += s->count;
        best = l > best ? l : best;
      }
    say(p, R_ISLAND, 0, want, best, 0, out, len);
    return;
  }
  for (size_t i = 0; i < p->ncs; i++) {
    const sf_constraint_t *c = p->cs[i].c;
    snprintf(out, len, c->kind == SF_CONSTRAINT_MATCH
                           ? "no set of free devices shares one value of %s as claim %s requires"
                           : "not enough free devices with distinct values of %s for claim %s",
             c->attr ? c->attr : "", p->dem->claims[p->cs[i].claim].name ? p->dem->claims[p->cs[i].claim].name : "");
    return;
  }
  snprintf(out, len, "the requests of the pod's claims cannot all be satisfied together on this node");
}

static void fail_reason(sf_packer_t *p, int rc, sf_verdict_t *v)
{
  v->fit = SF_FIT_NO;
  if (rc == SEARCH_BUDGET) {
    v->fit = SF_FIT_UNSURE;
    snprintf(v->reason, sizeof(v->reason),
             "placement search passed its budget of %u steps; left to the DRA plugin", p->pol->search_budget);
    return;
  }
  if (p->unknown) {
    v->fit = SF_FIT_UNSURE;
    say(p, R_UNKNOWN, 0, 0, 0, 0, v->reason, sizeof(v->reason));
    return;
  }
  for (size_t r = 0; r < p->nfr; r++)
    if (request_reason(p, r, v->reason, sizeof(v->reason)))
      return;
  constraint_reason(p, v->reason, sizeof(v->reason));
}

/* ---- the fast path: plain nodes, one request ---- */

/*
 * Most calls ask for one device (a share of a GPU, or a whole one), or N
 * whole devices in one NVLink island, of nodes whose devices are plain: no
 * taints, no shared counters, at most one capacity (the primary one, if
 * any), at most FAST_MAXDEV devices in islands numbered below 64. For those
 * the packer keeps, per node, a compact summary (hdev_t per device,
 * contiguous) rebuilt from the index when the node's version moves, and the
 * FGD statistics of every shape of the mix (fstat_t), so that the
 * fragmentation after a candidate is O(shapes), not O(shapes × devices),
 * and the index's scattered device records are not read at all.
 * Eligibility is memoised per call: selectors through the index's
 * per-device cache, capacity rounding per capacity class (devices with the
 * same capacity name, total and request policy).
 *
 * The fast path gives the general path's verdicts, raw scores and reasons
 * (test_packer compares both on random clusters); being O(devices) per node
 * it needs no search budget, so a node the general search would leave
 * UNSURE past its budget gets its exact answer.
 */

static sf_match_t fast_match(sf_packer_t *p, const sf_request_t *s, sf_dev_id d)
{
  for (size_t i = 0; i < s->nselectors; i++) {
    const sf_selector_t *sel = &s->selectors[i];
    uint8_t *r = p->fsel[i];
    sf_match_t m;
    if (r != NULL) {
      if (r[d] == 0)
        r[d] = (uint8_t)(1 + sel->fn(sel->ctx, p->idx, d));
      m = (sf_match_t)(r[d] - 1);
    } else {
      m = sel->fn(sel->ctx, p->idx, d);
    }
    if (m != SF_MATCH_YES)
      return m;
  }
  return SF_MATCH_YES;
}

static bool policy_eq(const sf_request_policy_t *a, const sf_request_policy_t *b)
{
  return a->has_default == b->has_default && a->def == b->def && a->nvalid == b->nvalid &&
         (a->nvalid == 0 || memcmp(a->valid, b->valid, a->nvalid * sizeof(*a->valid)) == 0) &&
         a->has_range == b->has_range && a->min == b->min && a->step == b->step && a->max == b->max;
}

/* The capacity class of a device's only capacity; -1 when the table is full. */
static int32_t cls_of(sf_packer_t *p, const sf__dev_t *dv)
{
  const sf__cap_t *c = &dv->caps[0];
  for (size_t i = 0; i < p->ncls; i++) {
    const hcls_t *h = &p->cls[i];
    if (h->cap.name == c->name && h->cap.value == c->value && h->shared == dv->shared &&
        h->cap.has_policy == c->has_policy && (!c->has_policy || policy_eq(&h->cap.policy, &c->policy)))
      return (int32_t)i;
  }
  if (p->ncls >= FAST_MAXCLS)
    return -1;
  GROW(p->cls, p->clscap, p->ncls + 1);
  if (p->ncls + 1 > p->memocap) {
    size_t old = p->memocap;
    GROW(p->memo, p->memocap, p->ncls + 1);
    memset(p->memo + old, 0, (p->memocap - old) * sizeof(*p->memo));
  }
  hcls_t *h = &p->cls[p->ncls];
  h->cap = *c;
  h->shared = dv->shared;
  if (c->has_policy && c->policy.nvalid > 0) {
    sf_milli_t *v = sf_xmalloc(c->policy.nvalid * sizeof(*v));
    memcpy(v, c->policy.valid, c->policy.nvalid * sizeof(*v));
    h->cap.policy.valid = v;
  } else {
    h->cap.policy.valid = NULL;
  }
  return (int32_t)p->ncls++;
}

static void cls_clear(sf_packer_t *p)
{
  for (size_t i = 0; i < p->ncls; i++)
    free((void *)(uintptr_t)p->cls[i].cap.policy.valid);
  p->ncls = 0;
}

static int32_t permille(sf_milli_t f, sf_milli_t v)
{
  if (v <= 0 || f <= 0)
    return 0;
  if (f >= v)
    return 1000;
  return (int32_t)(f > INT64_MAX / 1000 ? f / (v / 1000) : f * 1000 / v);
}

/* Fills the summary of one device; false when it is not plain. */
static bool hdev_fill(sf_packer_t *p, hdev_t *h, sf_dev_id d)
{
  const sf__dev_t *dv = &p->idx->devs[d];
  if (dv->ntaints || dv->ncuses || dv->ncaps > 1 || dv->primary > 0 || dv->island >= 64)
    return false;
  memset(h, 0, sizeof(*h));
  h->dev = d;
  h->holders = dv->holders;
  h->island = (int8_t)(dv->island < 0 ? -1 : dv->island);
  h->model_bit = dv->model_bit;
  h->cls = -1;
  if (dv->ncaps == 1) {
    h->capfree = dv->caps[0].free;
    h->cls = cls_of(p, dv);
    if (h->cls < 0)
      return false;
  }
  h->fl = (uint8_t)((dv->primary >= 0 || dv->model != 0 ? HD_GPU : 0) | (dv->shared ? HD_SHARED : 0) |
                    (dv->holders == 0 ? HD_IDLE : 0) | (dv->primary == 0 ? HD_PRIMARY : 0));
  /* As nstate_load and sf_index_dev_free_permille. */
  if (dv->primary >= 0 && dv->shared) {
    h->fa = h->capfree;
    h->fp = permille(h->capfree, dv->caps[0].value);
  } else {
    h->fa = dv->holders ? 0 : dv->primary >= 0 ? dv->caps[0].value : INT64_MAX;
    h->fp = dv->holders ? 0 : 1000;
  }
  return true;
}

/* The node's summary, rebuilt when its version moved. */
static hnode_t *summary(sf_packer_t *p, sf_node_id node)
{
  if (p->hserial != p->idx->serial) {
    for (size_t i = 0; i < p->hncap; i++)
      p->hn[i].version = 0;
    cls_clear(p);
    p->hserial = p->idx->serial;
  }
  if ((size_t)node >= p->hncap) {
    size_t old = p->hncap;
    GROW(p->hn, p->hncap, (size_t)node + 1);
    memset(p->hn + old, 0, (p->hncap - old) * sizeof(*p->hn));
  }
  hnode_t *h = &p->hn[node];
  const sf__node_t *n = &p->idx->nodes[node];
  if (h->version == n->version)
    return h;
  h->version = n->version;
  h->fversion = 0;
  h->msig = 0;
  h->fast = n->ndevs <= FAST_MAXDEV;
  h->n = 0;
  if (!h->fast)
    return h;
  if (n->ndevs > h->cap) {
    h->d = sf_xrealloc(h->d, n->ndevs * sizeof(*h->d));
    h->cap = (uint32_t)n->ndevs;
  }
  uint8_t size[64] = {0}, held[64] = {0};
  h->total = h->used = 0;
  h->ngpu = 0;
  for (size_t k = 0; k < n->ndevs; k++) {
    hdev_t *d = &h->d[k];
    if (!hdev_fill(p, d, n->devs[k])) {
      h->fast = false;  /* the general path serves this node */
      return h;
    }
    if (d->fl & HD_GPU) {
      h->total += d->fp;
      h->used += 1000 - d->fp;
      h->ngpu++;
    }
    if (d->island >= 0) {
      size[d->island]++;
      held[d->island] |= d->holders > 0;
    }
  }
  h->n = (uint32_t)n->ndevs;
  h->intact = 0;
  for (uint32_t i = 0; i < 64; i++)
    if (size[i] >= 2 && !held[i])
      h->intact |= 1ull << i;
  h->cpu_free = n->cpu_alloc > 0 ? n->cpu_alloc - n->cpu_used : -1;
  return h;
}

static bool hosts_h(const shape_t *m, const hdev_t *d, bool idle, int32_t fp, sf_milli_t fa)
{
  if (!(d->fl & HD_GPU) || (m->models && !(m->models & (1ull << d->model_bit))))
    return false;
  return m->amount == 0 ? (idle && fp == 1000) : fa >= m->amount;
}

/* F_n(m) from a shape's statistics (frag_shape's rule). */
static int64_t fshape(const shape_t *m, const fstat_t *s, int64_t total, int64_t cpu_free)
{
  if (m->count == 0)
    return total;
  bool cpu_ok = cpu_free < 0 || cpu_free >= m->cpu_milli;
  int32_t best = s->bi > (s->ns1 > 0) ? s->bi : (s->ns1 > 0);
  bool can = cpu_ok && (m->island ? best >= (int32_t)m->count : s->nh >= (int32_t)m->count);
  return can ? s->small : total;
}

/* The node's per-shape statistics for the current mix, and F(before). */
static void fstats(sf_packer_t *p, hnode_t *h)
{
  if (h->fversion == h->version && h->mixhash == p->mixhash)
    return;
  if (p->nmix > h->fscap) {
    h->fs = sf_xrealloc(h->fs, p->nmix * sizeof(*h->fs));
    h->fscap = p->nmix;
  }
  int64_t q = 0;
  for (size_t i = 0; i < p->nmix; i++) {
    const shape_t *m = &p->mix[i];
    fstat_t *s = &h->fs[i];
    int32_t cnt[64] = {0};
    memset(s, 0, sizeof(*s));
    s->argbi = -1;
    for (uint32_t k = 0; k < h->n && m->count > 0; k++) {
      const hdev_t *d = &h->d[k];
      if (!(d->fl & HD_GPU))
        continue;
      if (!hosts_h(m, d, d->fl & HD_IDLE, d->fp, d->fa)) {
        s->small += d->fp;
        continue;
      }
      s->nh++;
      if (d->island < 0)
        s->ns1++;
      else
        cnt[d->island]++;
    }
    for (int32_t j = 0; j < 64; j++) {
      if (cnt[j] > s->bi) {
        s->bi2 = s->bi;
        s->bi = cnt[j];
        s->argbi = j;
      } else if (cnt[j] > s->bi2) {
        s->bi2 = cnt[j];
      }
    }
    q += m->q * fshape(m, s, h->total, h->cpu_free);
  }
  h->fb = (double)q / WEIGHT_ONE;
  h->fversion = h->version;
  h->mixhash = p->mixhash;
}

/* A device's primary free amount and share after a pick consuming `need` (nstate_apply's rule). */
static void after_pick(const hdev_t *d, const hcls_t *cls, sf_milli_t need, sf_milli_t *fa, int32_t *fp)
{
  if ((d->fl & HD_SHARED) && (d->fl & HD_PRIMARY)) {
    *fa = d->fa - need;
    *fp = permille(*fa, cls->cap.value);
  } else {
    *fa = 0;
    *fp = 0;
  }
}

/* Σ w F(after) for picks ks[0..n) (one device, or devices of one island). */
static double frag_after(const sf_packer_t *p, const hnode_t *h, const uint32_t *ks, const sf_milli_t *fa,
                         const int32_t *fp, size_t n, int64_t total, int64_t cpu_free)
{
  int64_t q = 0;
  for (size_t i = 0; i < p->nmix; i++) {
    const shape_t *m = &p->mix[i];
    fstat_t s = h->fs[i];
    int32_t lost = 0, isl = -1;
    for (size_t j = 0; j < n && m->count > 0; j++) {
      const hdev_t *d = &h->d[ks[j]];
      if (!(d->fl & HD_GPU))
        continue;
      bool hb = hosts_h(m, d, d->fl & HD_IDLE, d->fp, d->fa), ha = hosts_h(m, d, false, fp[j], fa[j]);
      s.small += (hb ? 0 : -d->fp) + (ha ? 0 : fp[j]);
      s.nh += (int32_t)ha - (int32_t)hb;
      if (m->island && hb && !ha) {
        if (d->island < 0) {
          s.ns1--;
        } else {
          lost++;
          isl = d->island;
        }
      }
    }
    if (lost > 0 && isl == s.argbi)
      s.bi = s.bi - lost > s.bi2 ? s.bi - lost : s.bi2;
    q += m->q * fshape(m, &s, total, cpu_free);
  }
  return (double)q / WEIGHT_ONE;
}

/* score() for picks ks[0..n) with needs[] on a summarised node. */
static double score_fast(sf_packer_t *p, hnode_t *h, const uint32_t *ks, const sf_milli_t *needs, size_t n)
{
  sf_milli_t fa[FAST_MAXDEV];
  int32_t fp[FAST_MAXDEV];
  int64_t total = h->total, used = h->used;
  double touched = 0.0;
  for (size_t j = 0; j < n; j++) {
    const hdev_t *d = &h->d[ks[j]];
    after_pick(d, d->cls >= 0 ? &p->cls[d->cls] : NULL, needs[j], &fa[j], &fp[j]);
    if (d->fl & HD_GPU) {
      total += fp[j] - d->fp;
      used += d->fp - fp[j];
    }
    touched += (double)(1000 - fp[j]) / 1000.0;
  }
  touched = n ? touched / (double)n : 0.0;
  int64_t cpu = h->cpu_free >= 0 ? h->cpu_free - p->dem->cpu_milli : h->cpu_free;
  double u = h->ngpu ? (double)used / (double)((int64_t)h->ngpu * 1000) : 0.0;
  switch (p->pol->strategy) {
  case SF_STRATEGY_BINPACK:
    return u + 0.1 * touched;
  case SF_STRATEGY_SPREAD:
    return -u - 0.1 * touched;
  default:
    break;
  }
  fstats(p, h);
  double df = frag_after(p, h, ks, fa, fp, n, total, cpu) - h->fb;
  if (p->pol->strategy == SF_STRATEGY_FGD)
    return fgd_raw(p, df);
  double raw = -p->pol->weight_frag * df;
  int8_t isl = h->d[ks[0]].island;
  if (isl >= 0 && (h->intact & (1ull << isl))) {
    size_t in = 0;
    for (uint32_t k = 0; k < h->n; k++)
      in += h->d[k].island == isl;
    if (n < in)
      raw -= p->pol->weight_island * 1000.0;
  }
  if (p->flexible)
    for (size_t j = 0; j < n; j++) {
      const hdev_t *d = &h->d[ks[j]];
      raw -= p->pol->weight_model * p->scarcity[d->model_bit] * (double)(d->fp - fp[j]);
    }
  return raw;
}

/* What device d of the summary consumes for the call's request; false when it cannot serve it. */
static bool fast_need(sf_packer_t *p, const hdev_t *d, sf_milli_t *need)
{
  const sf_request_t *s = p->fr[0].top;
  if (d->cls < 0) {
    *need = 0;
    return s->ncaps == 0;
  }
  hmemo_t *mo = &p->memo[d->cls];
  if (mo->stamp != p->stamp) {
    const hcls_t *c = &p->cls[d->cls];
    mo->stamp = p->stamp;
    mo->ok = true;
    mo->need = (c->cap.has_policy && c->cap.policy.has_default) ? c->cap.policy.def : c->cap.value;
    if (s->ncaps == 1) {
      sf_milli_t v = c->shared ? round_request(&c->cap, s->caps[0].value) : s->caps[0].value;
      mo->ok = c->cap.name == p->fr[0].capnames[0] && v >= 0 && v <= c->cap.value;
      mo->need = v;
    }
  }
  *need = mo->need;
  return mo->ok;
}

/* available() on a summarised device with nothing tentative. */
static bool fast_avail(const sf_packer_t *p, const hdev_t *d, sf_milli_t need, stats_t *st)
{
  if (!(d->fl & HD_SHARED)) {
    if (d->holders > 0) {
      st->busy++;
      return false;
    }
    return true;
  }
  if (p->pol->max_sharers > 0 && d->holders >= p->pol->max_sharers) {
    st->sharers++;
    return false;
  }
  if (d->cls < 0)
    return true;
  const hcls_t *c = &p->cls[d->cls];
  sf_milli_t reserve = p->pol->headroom_pct ? c->cap.value / 100 * p->pol->headroom_pct : 0;
  sf_milli_t left = d->capfree - reserve;
  if (left < need) {
    st->short_cap++;
    if (left > st->best_free)
      st->best_free = left;
    return false;
  }
  return true;
}

/* prefer_key() on a summarised device with nothing tentative. */
static int64_t fast_key(const sf_packer_t *p, const hnode_t *h, uint32_t k, sf_milli_t need)
{
  const hdev_t *d = &h->d[k];
  int64_t after;
  if (!(d->fl & HD_SHARED) || !(d->fl & HD_PRIMARY))
    after = (!(d->fl & HD_SHARED) || d->holders > 0) ? 0 : 1000;
  else
    after = permille(d->capfree - need, p->cls[d->cls].cap.value);
  int64_t key = p->pol->strategy == SF_STRATEGY_SPREAD ? -after : after;
  if (d->island >= 0 && (h->intact & (1ull << d->island)))
    key += 1000000;
  return key * 4096 + k;
}

static void fast_result(sf_packer_t *p, const hnode_t *h, uint32_t k, sf_milli_t need)
{
  GROW(p->res, p->rescap, p->nres + 1);
  GROW(p->rk, p->rkcap, p->nres + 1);
  if ((p->nres + 1) * MAXCAPS > p->rconscap) {
    size_t want = (p->nres + 1) * MAXCAPS * 2;
    p->rcons = sf_xrealloc(p->rcons, want * sizeof(*p->rcons));
    p->rconscap = want;
  }
  p->rcons[p->nres * MAXCAPS] = need;
  p->res[p->nres] = (sf_result_t){p->fr[0].claim, p->fr[0].req, -1, {h->d[k].dev, NULL}};
  p->rk[p->nres] = k;
  p->nres++;
}

/* Candidates of the call's request on a summarised node, with their needs and availability. */
typedef struct {
  uint32_t k[FAST_MAXDEV];
  sf_milli_t need[FAST_MAXDEV];
  bool avail[FAST_MAXDEV];
  uint32_t n, navail;
  stats_t st;
} fcands_t;

/*
 * Gathers the candidates; with `stop`, stops at the first available one
 * (first fit in node order needs no more unless the node fails).
 */
static void fast_gather(sf_packer_t *p, const hnode_t *h, fcands_t *fc, bool stop)
{
  const sf_request_t *s = p->fr[0].top;
  fc->n = fc->navail = 0;
  memset(&fc->st, 0, sizeof(fc->st));
  fc->st.best_free = -1;
  if (s->ncaps) {
    fc->st.want = s->caps[0].value;
    fc->st.capname = s->caps[0].name;
  }
  for (uint32_t k = 0; k < h->n; k++) {
    const hdev_t *d = &h->d[k];
    sf_match_t m = fast_match(p, s, d->dev);
    if (m == SF_MATCH_UNKNOWN) {
      fc->st.unknown++;
      p->unknown = true;
      continue;
    }
    if (m != SF_MATCH_YES)
      continue;
    fc->st.match++;
    sf_milli_t need;
    if (!fast_need(p, d, &need)) {
      fc->st.shape++;
      continue;
    }
    fc->k[fc->n] = k;
    fc->need[fc->n] = need;
    fc->avail[fc->n] = fast_avail(p, d, need, &fc->st);
    fc->navail += fc->avail[fc->n];
    fc->n++;
    if (stop && fc->navail > 0)
      return;
  }
}

/* The candidate order of the general path: node order, or the packer's preference. */
static void fast_order(sf_packer_t *p, const hnode_t *h, const fcands_t *fc, uint32_t *ord)
{
  int64_t key[FAST_MAXDEV];
  for (uint32_t i = 0; i < fc->n; i++)
    ord[i] = i;
  if (p->pol->device_choice != SF_CHOICE_PACKER)
    return;
  for (uint32_t i = 0; i < fc->n; i++)
    key[i] = fast_key(p, h, fc->k[i], fc->need[i]);
  for (uint32_t i = 1; i < fc->n; i++)  /* insertion sort: at most FAST_MAXDEV */
    for (uint32_t j = i; j > 0 && key[ord[j]] < key[ord[j - 1]]; j--) {
      uint32_t t = ord[j];
      ord[j] = ord[j - 1];
      ord[j - 1] = t;
    }
}

/* Same state, hence the same score and the same preference but for the node order. */
static bool same_state(const hdev_t *a, const hdev_t *b)
{
  return a->capfree == b->capfree && a->fa == b->fa && a->fp == b->fp && a->holders == b->holders &&
         a->cls == b->cls && a->island == b->island && a->model_bit == b->model_bit && a->fl == b->fl;
}

/*
 * simple_place() on a summarised node; returns the chosen candidate or -1.
 * The general path sorts the candidates by preference and keeps the first
 * best score; here the best score wins and the preference key breaks ties,
 * and a device in the same state as an earlier one is skipped: it would
 * tie with it and lose on node order.
 */
static int32_t fast_simple(sf_packer_t *p, hnode_t *h, const fcands_t *fc, double *raw)
{
  bool packer = p->pol->device_choice == SF_CHOICE_PACKER;
  bool all = packer && (p->pol->strategy == SF_STRATEGY_FGD || p->pol->strategy == SF_STRATEGY_FRAGMENTATION);
  int32_t best = -1;
  int64_t bkey = 0;
  for (uint32_t c = 0; c < fc->n; c++) {
    if (!fc->avail[c])
      continue;
    if (!packer) {
      *raw = score_fast(p, h, &fc->k[c], &fc->need[c], 1);
      return (int32_t)c;
    }
    bool dup = false;
    for (uint32_t e = 0; e < c && !dup; e++)
      dup = fc->avail[e] && same_state(&h->d[fc->k[e]], &h->d[fc->k[c]]);
    if (dup)
      continue;
    int64_t key = fast_key(p, h, fc->k[c], fc->need[c]);
    if (!all) {
      if (best < 0 || key < bkey) {
        best = (int32_t)c;
        bkey = key;
      }
      continue;
    }
    double sc = score_fast(p, h, &fc->k[c], &fc->need[c], 1);
    if (best < 0 || sc > *raw || (sc == *raw && key < bkey)) {
      *raw = sc;
      best = (int32_t)c;
      bkey = key;
    }
  }
  if (best >= 0 && !all)
    *raw = score_fast(p, h, &fc->k[best], &fc->need[best], 1);
  return best;
}

/* The one-island search on a summarised node: the first candidate, in order, whose island has enough. */
static uint32_t fast_island(const hnode_t *h, const fcands_t *fc, const uint32_t *ord, uint32_t want,
                            uint32_t *pick)
{
  for (uint32_t i = 0; i < fc->n; i++) {
    uint32_t c = ord[i], n = 0;
    if (!fc->avail[c])
      continue;
    int32_t isl = h->d[fc->k[c]].island;
    for (uint32_t j = i; j < fc->n && n < want; j++) {
      uint32_t e = ord[j];
      if (fc->avail[e] && (j == i || (isl >= 0 && h->d[fc->k[e]].island == isl)))
        pick[n++] = e;
    }
    if (n == want)
      return n;
  }
  return 0;
}

/* The largest number of available candidates in one island (singletons count 1). */
static uint32_t fast_largest(const hnode_t *h, const fcands_t *fc)
{
  uint32_t cnt[64] = {0}, best = 0;
  for (uint32_t i = 0; i < fc->n; i++) {
    if (!fc->avail[i])
      continue;
    int8_t isl = h->d[fc->k[i]].island;
    uint32_t c = isl < 0 ? 1 : ++cnt[isl];
    best = c > best ? c : best;
  }
  return best;
}

/*
 * The memo: sf_packer_evaluate keeps each node's fast verdict in its summary
 * with the call's signature, and a later call with the same signature on an
 * unchanged node (the summary is rebuilt, and the memo dropped, when the
 * node's version moves) takes it from there. kube-scheduler sends the pods
 * of one workload, alike in all but their names, one after another, and
 * between two of them only the nodes that changed are evaluated again.
 */
static bool remember(sf_packer_t *p, hnode_t *h, const sf_verdict_t *v, const fcands_t *fc,
                     uint32_t largest)
{
  h->msig = p->evaluating ? p->fsig : 0;
  h->mfit = (uint8_t)v->fit;
  h->mraw = v->raw;
  if (fc != NULL) {
    h->mst = fc->st;
    h->mn = fc->n;
    h->mnavail = fc->navail;
  }
  h->mlargest = largest;
  return true;
}

/* A remembered verdict; its reason is written anew, for this call's claim and request. */
static void replay(sf_packer_t *p, const hnode_t *h, sf_verdict_t *v)
{
  const sf_request_t *s = p->fr[0].top;
  v->fit = (sf_fit_t)h->mfit;
  v->raw = h->mraw;
  if (v->fit == SF_FIT_UNSURE) {
    say(p, R_UNKNOWN, 0, 0, 0, 0, v->reason, sizeof(v->reason));
  } else if (v->fit == SF_FIT_NO) {
    stats_t st = h->mst;
    st.capname = s->ncaps ? s->caps[0].name : NULL;  /* the remembered one was the last call's */
    if (!reason_of_request(p, 0, &st, h->n, h->mn, h->mnavail, v->reason, sizeof(v->reason)))
      say(p, R_ISLAND, 0, s->count, h->mlargest, 0, v->reason, sizeof(v->reason));
  }
}

/*
 * Filters and scores one node on the fast path. Returns false, having done
 * nothing, when the node is not plain.
 */
static bool fast_eval(sf_packer_t *p, sf_node_id node, sf_verdict_t *v)
{
  p->node = node;
  hnode_t *h = summary(p, node);
  if (!h->fast)
    return false;
  if (p->evaluating && p->fsig != 0 && h->msig == p->fsig) {
    replay(p, h, v);
    return true;
  }
  fcands_t fc;
  uint32_t ord[FAST_MAXDEV], pick[FAST_MAXDEV];
  const sf_request_t *s = p->fr[0].top;
  fast_gather(p, h, &fc, p->fast_kind == FAST_SIMPLE && p->pol->device_choice != SF_CHOICE_PACKER);
  double raw = 0.0;
  if (p->fast_kind == FAST_SIMPLE) {
    int32_t c = fast_simple(p, h, &fc, &raw);
    if (c >= 0) {
      fast_result(p, h, fc.k[c], fc.need[c]);
      v->fit = SF_FIT_YES;
      v->raw = raw;
      return remember(p, h, v, NULL, 0);
    }
  } else if (s->count <= fc.n && (fast_order(p, h, &fc, ord), fast_island(h, &fc, ord, s->count, pick)) == s->count) {
    uint32_t ks[FAST_MAXDEV];
    sf_milli_t needs[FAST_MAXDEV];
    for (uint32_t j = 0; j < s->count; j++) {
      ks[j] = fc.k[pick[j]];
      needs[j] = fc.need[pick[j]];
      fast_result(p, h, ks[j], needs[j]);
    }
    v->fit = SF_FIT_YES;
    v->raw = score_fast(p, h, ks, needs, s->count);
    return remember(p, h, v, NULL, 0);
  }
  if (p->unknown) {
    v->fit = SF_FIT_UNSURE;
    say(p, R_UNKNOWN, 0, 0, 0, 0, v->reason, sizeof(v->reason));
    return remember(p, h, v, NULL, 0);
  }
  uint32_t largest = 0;
  if (!reason_of_request(p, 0, &fc.st, h->n, fc.n, fc.navail, v->reason, sizeof(v->reason))) {
    largest = fast_largest(h, &fc);
    say(p, R_ISLAND, 0, s->count, largest, 0, v->reason, sizeof(v->reason));
  }
  return remember(p, h, v, &fc, largest);
}

/* A single request for one device with no constraint: try every candidate (packer) or the first. */
static bool simple(const sf_packer_t *p)
{
  return p->nfr == 1 && p->ncs == 0 && p->fr[0].top->nalts == 0 && !p->fr[0].top->all &&
         !p->fr[0].top->admin && p->fr[0].top->count == 1;
}

static double simple_place(sf_packer_t *p, int *rc)
{
  const cand_t *cs = p->cands ? p->cands + p->coff[0] : NULL;
  double best = -INFINITY;
  uint32_t bestk = 0;
  *rc = SEARCH_FAIL;
  bool all = p->pol->device_choice == SF_CHOICE_PACKER &&
             (p->pol->strategy == SF_STRATEGY_FGD || p->pol->strategy == SF_STRATEGY_FRAGMENTATION);
  for (size_t i = 0; i < p->clen[0]; i++) {
    if (!available(p, &cs[i], NULL))
      continue;
    p->nres = 0;
    push_result(p, 0, -1, &cs[i]);
    double s = score(p, p->res, p->rk, p->rcons, 1);
    if (*rc == SEARCH_FAIL || s > best) {
      best = s;
      bestk = (uint32_t)i;
    }
    *rc = SEARCH_OK;
    if (!all)
      break;
  }
  p->nres = 0;
  if (*rc == SEARCH_OK) {
    push_result(p, 0, -1, &cs[bestk]);
    take(p, &cs[bestk], +1);
  }
  return best;
}

/* Filters and scores one node; leaves the placement in p->res on FIT. */
static void node_eval(sf_packer_t *p, sf_node_id node, sf_verdict_t *v)
{
  node_begin(p, node);
  v->fit = SF_FIT_NO;
  v->raw = 0.0;
  v->score = 0;
  v->reason[0] = '\0';
  const sf__node_t *n = &p->idx->nodes[node];
  if (n->cpu_alloc > 0 && p->dem->cpu_milli > n->cpu_alloc - n->cpu_used) {
    snprintf(v->reason, sizeof(v->reason), "needs %lldm CPU; %lldm is free", (long long)p->dem->cpu_milli,
             (long long)(n->cpu_alloc - n->cpu_used));
    return;
  }
  if (n->mem_alloc > 0 && p->dem->mem_bytes > n->mem_alloc - n->mem_used) {
    snprintf(v->reason, sizeof(v->reason), "needs %lld MiB of memory; %lld MiB is free",
             (long long)(p->dem->mem_bytes >> 20), (long long)((n->mem_alloc - n->mem_used) >> 20));
    return;
  }
  if (p->fast_kind != FAST_NONE && fast_eval(p, node, v))
    return;
  gather(p);
  int rc;
  double raw = 0.0;
  if (simple(p)) {
    raw = simple_place(p, &rc);
  } else {
    rc = search_req(p, 0);
    if (rc == SEARCH_OK)
      raw = score(p, p->res, p->rk, p->rcons, p->nres);
  }
  node_end(p);
  if (rc != SEARCH_OK) {
    fail_reason(p, rc, v);
    return;
  }
  v->fit = SF_FIT_YES;
  v->raw = raw;
}

/* ---- public entry points ---- */

int sf_packer_evaluate(sf_packer_t *p, sf_index_t *idx, const sf_policy_t *pol, const sf_demand_t *demand,
                       const sf_node_id *nodes, size_t n, unsigned flags, sf_verdict_t *out)
{
  if (p == NULL || idx == NULL || pol == NULL || demand == NULL || (n > 0 && (nodes == NULL || out == NULL)))
    return SF_EINVAL;
  for (size_t i = 0; i < n; i++)
    if (!sf_index_node_live(idx, nodes[i]))
      return SF_ENOENT;
  if (demand->nclaims == 0 && demand->cpu_milli == 0 && demand->mem_bytes == 0) {
    for (size_t i = 0; i < n; i++)
      out[i] = (sf_verdict_t){SF_FIT_YES, 0.0, 0, ""};
    return 0;
  }
  prepare(p, idx, pol, demand, flags);
  double lo = INFINITY, hi = -INFINITY;
  p->evaluating = true;
  for (size_t i = 0; i < n; i++) {
    node_eval(p, nodes[i], &out[i]);
    if (out[i].fit == SF_FIT_YES) {
      lo = out[i].raw < lo ? out[i].raw : lo;
      hi = out[i].raw > hi ? out[i].raw : hi;
    }
  }
  for (size_t i = 0; i < n; i++) {
    if (out[i].fit != SF_FIT_YES)
      continue;
    double x = hi > lo ? (out[i].raw - lo) / (hi - lo) : 1.0;
    /* Only the best placement gets the top score: kube-scheduler breaks equal
     * totals at random, and min-max over a wide range of raw scores would hand
     * the top score to many nodes. */
    out[i].score = out[i].raw == hi ? SF_SCORE_MAX : (int)lround(x * (SF_SCORE_MAX - 1));
  }
  p->evaluating = false;
  p->last_node = -1;
  return 0;
}

sf_fit_t sf_packer_place(sf_packer_t *p, sf_index_t *idx, const sf_policy_t *pol, const sf_demand_t *demand,
                         sf_node_id node, sf_assignment_t *out, sf_verdict_t *verdict)
{
  sf_verdict_t v;
  p->last_node = -1;
  if (!sf_index_node_live(idx, node)) {
    v = (sf_verdict_t){SF_FIT_NO, 0.0, 0, "no such node"};
  } else {
    prepare(p, idx, pol, demand, 0);
    node_eval(p, node, &v);
  }
  if (v.fit == SF_FIT_YES) {
    v.score = SF_SCORE_MAX;
    for (size_t i = 0; i < p->nres; i++)
      p->res[i].pick.consumed = &p->rcons[i * MAXCAPS];
    p->last_node = node;
    if (out)
      *out = (sf_assignment_t){node, p->nres, p->res};
  }
  if (verdict)
    *verdict = v;
  return v.fit;
}

int sf_packer_commit(sf_packer_t *p, sf_index_t *idx, const sf_demand_t *demand, const char *holder,
                     sf_alloc_id *out)
{
  if (p->last_node < 0)
    return SF_EINVAL;
  sf_pick_t *picks = sf_xcalloc(p->nres + 1, sizeof(*picks));
  for (size_t i = 0; i < p->nres; i++)
    picks[i] = (sf_pick_t){p->res[i].pick.dev, &p->rcons[i * MAXCAPS]};
  int err = sf_index_alloc_add(idx, holder, p->last_node, demand->cpu_milli, demand->mem_bytes, picks, p->nres,
                               0, out);
  free(picks);
  if (err == 0)
    p->last_node = -1;
  return err;
}

double sf_packer_node_frag(sf_packer_t *p, sf_index_t *idx, const sf_policy_t *pol, sf_node_id node)
{
  static const sf_demand_t none = {NULL, 0, 0, 0};
  if (!sf_index_node_live(idx, node))
    return 0.0;
  sf_policy_t fgd = *pol;
  fgd.strategy = SF_STRATEGY_FGD;
  prepare(p, idx, &fgd, &none, 0);
  node_begin(p, node);
  nstate_load(p, &p->nsb);
  double f = frag_mix(p, &p->nsb);
  p->pol = pol;
  return f;
}

int sf_packer_learn(sf_packer_t *p, sf_index_t *idx, const sf_policy_t *pol, const sf_demand_t *demand,
                    int sign)
{
  if (p == NULL || idx == NULL || pol == NULL || demand == NULL || (sign != 1 && sign != -1))
    return SF_EINVAL;
  learn(p, prepare_demand(p, idx, pol, demand), sign);
  p->last_node = -1;
  return 0;
}

uint64_t sf_packer_mix_hash(sf_packer_t *p, sf_index_t *idx, const sf_policy_t *pol, const sf_demand_t *demand)
{
  mix_load(p, prepare_demand(p, idx, pol, demand));  /* no scarcity or fast-path set-up: only the mix */
  p->last_node = -1;
  return p->mixhash;
}

void sf_packer_set_fast_path(sf_packer_t *p, bool on)
{
  p->fast_on = on;
}

size_t sf_index_mix_size(const sf_index_t *idx)
{
  return idx->nmix;
}

int sf_index_mix_shape(const sf_index_t *idx, size_t i, sf_shape_t *out)
{
  if (i >= idx->nmix)
    return SF_ENOENT;
  double sum = 0.0;
  for (size_t k = 0; k < idx->nmix; k++)
    sum += idx->mix[k].weight;
  const sf__shape_t *s = &idx->mix[i];
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
