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
 * Scores are normalised to 0..10 over the FIT nodes (min-max), which is
 * independent of node order.
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
} shape_t;

typedef struct {
  uint64_t version, mixhash;
  double f;
} fcache_t;

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
};

sf_packer_t *sf_packer_create(void)
{
  sf_packer_t *p = sf_xcalloc(1, sizeof(*p));
  p->last_node = -1;
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

static bool island_intact(const sf_packer_t *p, int16_t isl)
{
  uint32_t n = 0;
  for (size_t j = 0; j < p->ndevs; j++) {
    const sf__dev_t *e = &p->idx->devs[p->devs[j]];
    if (e->island != isl)
      continue;
    if (e->holders + p->tcount[j] > 0)
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
  if (dv->island >= 0 && island_intact(p, dv->island))
    key += 1000000;
  return key * 4096 + c->k;
}

static int cand_cmp(const void *a, const void *b)
{
  int64_t x = prefer_key(sort_p, a), y = prefer_key(sort_p, b);
  return (x > y) - (x < y);
}

/* Gathers every (request, alternative)'s candidates on the current node. */
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
        if (eligible(p, s, cn, p->devs[k], c->need, &p->st[slot])) {
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
    cs->n++;
  }
  return true;
}

static void cons_pop(sf_packer_t *p, size_t r, int32_t alt)
{
  const freq_t *f = &p->fr[r];
  for (size_t i = 0; i < p->ncs; i++) {
    cstate_t *cs = &p->cs[i];
    if (cs->claim == f->claim && refers(cs->c, f->req, alt) && cs->n > 0)
      cs->n--;
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

/* Chooses the m-th of `want` devices for request r (alternative alt), from candidate `from` on. */
static int search_dev(sf_packer_t *p, size_t r, int32_t alt, uint32_t m, uint32_t want, size_t from)
{
  if (m == want)
    return search_req(p, r + 1);
  size_t slot = slot_of(p, r, alt);
  const cand_t *cs = p->cands ? p->cands + p->coff[slot] : NULL;
  for (size_t i = from; i < p->clen[slot]; i++) {
    if (++p->steps > p->pol->search_budget)
      return SEARCH_BUDGET;
    if (!available(p, &cs[i], NULL) || !cons_push(p, r, alt, cs[i].k))
      continue;
    take(p, &cs[i], +1);
    push_result(p, r, alt, &cs[i]);
    int rc = search_dev(p, r, alt, m + 1, want, i + 1);
    if (rc != SEARCH_FAIL)
      return rc;
    p->nres--;
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
  double f = 0.0;
  for (size_t i = 0; i < p->nmix; i++)
    f += p->mix[i].w * frag_shape(p, ns, &p->mix[i]);
  return f;
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
    return -(frag_mix(p, &after) - frag_before(p, &before));
  case SF_STRATEGY_FRAGMENTATION:
  default:
    break;
  }
  double raw = -p->pol->weight_frag * (frag_mix(p, &after) - frag_before(p, &before));
  /* Islands kept whole: a placement that breaks an intact island pays, unless it takes it all. */
  for (size_t i = 0; i < nres; i++) {
    const sf__dev_t *dv = &p->idx->devs[res[i].pick.dev];
    bool first = true;
    for (size_t j = 0; j < i; j++)
      first = first && p->idx->devs[res[j].pick.dev].island != dv->island;
    if (dv->island < 0 || !first || !island_intact(p, dv->island))
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

static uint64_t hash_mix(const shape_t *m, size_t n)
{
  uint64_t h = 1469598103934665603ull;
  const unsigned char *b = (const unsigned char *)m;
  for (size_t i = 0; i < n * sizeof(*m); i++)
    h = (h ^ b[i]) * 1099511628211ull;
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
  /* The learned mix is snapshotted when the index says it moved enough
   * (every 64 observations), so per-node fragmentation caches stay valid. */
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
      p->mix[p->nmix++] = (shape_t){s->cpu_milli, s->amount, s->count, s->island, m, s->weight};
    }
    n = 0;
  } else if (n == 0) {
    n = demand_shapes(p, dmodels, own, SF__MIX_MAX);
    src = own;
  }
  for (size_t i = 0; i < n; i++)
    p->mix[p->nmix++] = (shape_t){src[i].cpu_milli, src[i].amount, src[i].count, src[i].island,
                                  src[i].models, src[i].weight};
  double sum = 0.0;
  for (size_t i = 0; i < p->nmix; i++)
    sum += p->mix[i].w;
  for (size_t i = 0; i < p->nmix && sum > 0.0; i++)
    p->mix[i].w /= sum;
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

static void prepare(sf_packer_t *p, sf_index_t *idx, const sf_policy_t *pol, const sf_demand_t *d,
                    unsigned flags)
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
      p->cs[p->ncs++] = (cstate_t){c, k, a ? sf_index_str(idx, a) : NULL, 0, {NULL}, 0};
    }
  uint64_t dm = demand_models(p);
  p->flexible = __builtin_popcountll(dm) >= 2;
  if (flags & SF_EVAL_LEARN) {
    sf__shape_t own[SF__MIX_MAX];
    size_t n = demand_shapes(p, __builtin_popcountll(dm) == (int)idx->nmodels ? 0 : dm, own, SF__MIX_MAX);
    for (size_t i = 0; i < n; i++)
      sf__index_observe(idx, &own[i], pol->mix_halflife);
  }
  mix_load(p, dm);
  scarcity_load(p);
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

/* Explains why request r (its first alternative) cannot be placed; false if it alone could be. */
static bool request_reason(sf_packer_t *p, size_t r, char *out, size_t len)
{
  const freq_t *f = &p->fr[r];
  int32_t alt = f->top->nalts ? 0 : -1;
  const sf_request_t *s = spec_of(f, alt);
  size_t slot = slot_of(p, r, alt);
  stats_t *st = &p->st[slot];
  const char *claim = p->dem->claims[f->claim].name ? p->dem->claims[f->claim].name : "";
  const char *rn = f->top->name ? f->top->name : "";
  uint32_t want = s->all ? (uint32_t)(p->clen[slot] ? p->clen[slot] : 1) : s->count, avail = 0;
  const cand_t *cs = p->cands ? p->cands + p->coff[slot] : NULL;
  for (size_t i = 0; i < p->clen[slot]; i++)
    avail += available(p, &cs[i], st);
  char a[32], b[32];
  if (p->ndevs == 0)
    snprintf(out, len, "node has no DRA devices for claim %s", claim);
  else if (st->match == 0)
    snprintf(out, len, "no device on the node matches request %s of claim %s", rn, claim);
  else if (p->clen[slot] == 0 && st->tainted)
    snprintf(out, len, "request %s of claim %s does not tolerate taint %s=%s:%s on %u matching device(s)", rn,
             claim, st->taint->key, st->taint->value, effect_name(st->taint->effect), st->tainted);
  else if (p->clen[slot] == 0)
    snprintf(out, len, "no matching device offers the capacity request %s of claim %s asks for", rn, claim);
  else if (avail >= want)
    return false;
  else if (st->short_cap && st->capname && want == 1) {
    qty(st->want, a, sizeof(a));
    qty(st->best_free < 0 ? 0 : st->best_free, b, sizeof(b));
    snprintf(out, len, "request %s of claim %s needs %s of %s; the most free on a matching device is %s", rn,
             claim, a, strrchr(st->capname, '/') ? strrchr(st->capname, '/') + 1 : st->capname, b);
  } else if (st->sharers)
    snprintf(out, len, "matching devices already have %u sharers (policy max_sharers)", p->pol->max_sharers);
  else if (st->counters && avail == 0)
    snprintf(out, len, "request %s of claim %s: the shared counters of the partitionable devices are used up",
             rn, claim);
  else
    snprintf(out, len, "request %s of claim %s needs %u device(s); %u of %zu matching are free", rn, claim,
             want, avail, p->clen[slot]);
  return true;
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
    snprintf(out, len, "needs %u GPUs in one NVLink island; the largest free island has %u", want, best);
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
    snprintf(v->reason, sizeof(v->reason), "a selector cannot be evaluated here; left to the DRA plugin");
    return;
  }
  for (size_t r = 0; r < p->nfr; r++)
    if (request_reason(p, r, v->reason, sizeof(v->reason)))
      return;
  constraint_reason(p, v->reason, sizeof(v->reason));
}

/* A single request for one device with no constraint: try every candidate (packer) or the first. */
static bool simple(const sf_packer_t *p)
{
  return p->nfr == 1 && p->ncs == 0 && p->fr[0].top->nalts == 0 && !p->fr[0].top->all &&
         p->fr[0].top->count == 1;
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
    out[i].score = (int)lround(x * SF_SCORE_MAX);
  }
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
