/*
 * The placements of the search (pk_search.h): the packer's preference order
 * among candidates, the results, and the three searches.
 *
 * Placements. One device with no constraint: every available candidate is
 * scored and the best kept (device_choice packer under fgd), else the first
 * in the packer's preference (packer under the other strategies) or in node
 * order (first fit, what the in-tree allocator does). Under fragmentation
 * the node is scored by its tightest fit, not by its best-scoring device:
 * the plan of the shares would open an idle GPU for a share rather than
 * fill a part-used one off plan, and that loses (docs/research/packing.md,
 * "Why the packer takes the node's tightest fit"). N devices of one
 * island on a node without counters: the first candidate, in order, whose
 * island holds enough, exact and without a budget. Anything else: a
 * depth-first search request by request, honouring the claims' constraints
 * (matchAttribute, distinctAttribute, one island) and DRA's limit of
 * SF_CLAIM_RESULTS_MAX results per claim (allocation mode All counts every
 * matching device of the node), that counts its steps and gives up past the
 * policy's search_budget, so a hostile claim costs a bounded amount per node.
 */
#include <stdlib.h>
#include <string.h>
#include "packer_int.h"
#include "pk_avail.h"

/* ---- the tentative overlay ---- */

static void take(sf_packer_t *p, const cand_t *c, int sign)
{
  pk_search_t *s = &p->search;
  const hdev_t *d = &s->h->d[c->k];
  const sf__dev_t *dv = (d->fl & HD_COUNTERS) ? &p->idx->devs[d->dev] : NULL;
  bool counters = dv != NULL && dv->pool >= 0;
  if (sign > 0 && counters && d->holders + s->tcount[c->k] == 0)
    for (uint32_t u = 0; u < dv->ncuses; u++) {
      GROW(s->tcnt, s->tcntcap, s->ntcnt + 1);
      s->tcnt[s->ntcnt++] = (tcount_t){dv->pool, dv->cuses[u].counter, dv->cuses[u].value};
    }
  s->tcount[c->k] = (uint32_t)((int64_t)s->tcount[c->k] + sign);
  if (sign < 0 && counters && d->holders + s->tcount[c->k] == 0)
    s->ntcnt -= dv->ncuses;
  if (d->fl & HD_SHARED) {
    sf_milli_t *t = &s->tcap[(size_t)c->k * MAXCAPS];
    for (uint32_t i = 0; i < d->ncaps; i++)
      t[i] += sign * s->needs[c->noff + i];
  }
}

/* ---- the preference order ---- */

/*
 * The packer's preference: tightest fit first (spread: loosest), devices of
 * intact islands last, then node order.
 */
static int64_t key_of(const sf_packer_t *p, const cand_t *c)
{
  const hdev_t *d = &p->search.h->d[c->k];
  int64_t after;
  if (d->fl & HD_MEASURED)
    after = sf__permille(d->fa - p->search.needs[(size_t)c->noff + (size_t)(uint8_t)d->prim],
                         d->pval);
  else
    after = (!(d->fl & HD_SHARED) || d->holders > 0) ? 0 : 1000;
  int64_t key = p->pol->strategy == SF_STRATEGY_SPREAD ? -after : after;
  if (sf__view_intact(p->search.h, d->island))
    key += 1000000;
  return key * 4096 + c->k;
}

static int keyed_cmp(const void *a, const void *b)
{
  int64_t x = ((const keyed_t *)a)->key, y = ((const keyed_t *)b)->key;
  return (x > y) - (x < y);
}

void sf__search_order(sf_packer_t *p, uint32_t slot)
{
  pk_search_t *s = &p->search;
  cand_t *cs = s->cands + s->coff[slot];
  size_t n = s->clen[slot];
  if (p->pol->device_choice != SF_CHOICE_PACKER || n < 2)
    return;
  GROW(s->keyed, s->keyedcap, n);
  keyed_t *kc = s->keyed;
  for (size_t i = 0; i < n; i++)
    kc[i] = (keyed_t){key_of(p, &cs[i]), cs[i]};
  if (n > 32) {
    qsort(kc, n, sizeof(*kc), keyed_cmp);
  } else {
    for (size_t i = 1; i < n; i++) /* insertion sort: short lists */
      for (size_t j = i; j > 0 && kc[j].key < kc[j - 1].key; j--) {
        keyed_t t = kc[j];
        kc[j] = kc[j - 1];
        kc[j - 1] = t;
      }
  }
  for (size_t i = 0; i < n; i++)
    cs[i] = kc[i].c;
}

/* ---- results ---- */

static void push_result(sf_packer_t *p, uint32_t slot, const cand_t *c)
{
  pk_search_t *s = &p->search;
  const slot_t *sl = &p->dem.slot[slot];
  const freq_t *f = &p->dem.fr[sl->r];
  GROW(s->res, s->rescap, s->nres + 1);
  GROW(s->rk, s->rkcap, s->nres + 1);
  if ((s->nres + 1) * MAXCAPS > s->rconscap) {
    size_t need = (s->nres + 1) * MAXCAPS * 2;
    s->rcons = sf_xrealloc(s->rcons, need * sizeof(*s->rcons));
    s->rconscap = need;
  }
  const hdev_t *d = &s->h->d[c->k];
  for (uint32_t i = 0; i < (d->ncaps ? d->ncaps : 1u); i++)
    s->rcons[s->nres * MAXCAPS + i] = s->needs[c->noff + i];
  s->res[s->nres] = (sf_result_t){f->claim, f->req, sl->alt, {d->dev, NULL, false}};
  s->rk[s->nres] = c->k;
  s->nres++;
}

void sf__search_end(sf_packer_t *p)
{
  pk_search_t *s = &p->search;
  for (size_t i = 0; s->taken && i < s->nres; i++) {
    uint32_t k = s->rk[i];
    const hdev_t *d = &s->h->d[k];
    s->tcount[k]--;
    if (d->fl & HD_SHARED)
      for (uint32_t c = 0; c < d->ncaps; c++)
        s->tcap[(size_t)k * MAXCAPS + c] -= s->rcons[i * MAXCAPS + c];
  }
  s->ntcnt = 0;
}

/* What candidate c takes of its device's primary capacity. */
static pick_t pick_of(const sf_packer_t *p, uint32_t k, const sf_milli_t *need)
{
  const hdev_t *d = &p->search.h->d[k];
  return (pick_t){k, d->prim >= 0 ? need[d->prim] : 0};
}

double sf__search_score(sf_packer_t *p)
{
  pk_search_t *s = &p->search;
  GROW(s->picks, s->pickcap, s->nres + 1);
  for (size_t i = 0; i < s->nres; i++)
    s->picks[i] = pick_of(p, s->rk[i], &s->rcons[i * MAXCAPS]);
  return sf__score(p, s->h, s->picks, s->nres);
}

/* ---- one device ---- */

bool sf__search_by_score(const sf_packer_t *p)
{
  return p->pol->device_choice == SF_CHOICE_PACKER && p->pol->strategy == SF_STRATEGY_FGD;
}

int sf__search_one(sf_packer_t *p, double *raw)
{
  pk_search_t *s = &p->search;
  const cand_t *cs = s->cands + s->coff[0];
  bool packer = p->pol->device_choice == SF_CHOICE_PACKER;
  bool all = sf__search_by_score(p);
  int64_t best = -1, bkey = 0;
  double bs = 0.0;
  for (size_t i = 0; i < s->clen[0]; i++) {
    if (!cs[i].avail)
      continue;
    if (!packer) {
      best = (int64_t)i;
      break;
    }
    /* A device in the same state as an earlier one would tie with it and lose on node order. */
    bool dup = false;
    for (size_t e = 0; e < i && !dup; e++)
      dup = cs[e].avail && sf__view_same_dev(&s->h->d[cs[e].k], &s->h->d[cs[i].k]);
    if (dup)
      continue;
    int64_t key = key_of(p, &cs[i]);
    if (!all) {
      if (best < 0 || key < bkey) {
        best = (int64_t)i;
        bkey = key;
      }
      continue;
    }
    pick_t pk = pick_of(p, cs[i].k, &s->needs[cs[i].noff]);
    double sc = sf__score(p, s->h, &pk, 1);
    if (best < 0 || sc > bs || (sc == bs && key < bkey)) {
      best = (int64_t)i;
      bs = sc;
      bkey = key;
    }
  }
  if (best < 0)
    return SEARCH_FAIL;
  const cand_t *c = &cs[best];
  push_result(p, 0, c); /* nothing is searched after it: no overlay to keep */
  if (!all) {
    pick_t pk = pick_of(p, c->k, &s->needs[c->noff]);
    bs = sf__score(p, s->h, &pk, 1);
  }
  *raw = bs;
  return SEARCH_OK;
}

/* ---- N devices of one island ---- */

int sf__search_island(sf_packer_t *p, uint32_t want)
{
  pk_search_t *s = &p->search;
  const cand_t *cs = s->cands + s->coff[0];
  size_t n = s->clen[0];
  uint32_t nisl = s->h->nisl;
  if (want == 0 || want > s->st[0].navail)
    return SEARCH_FAIL; /* fewer available than wanted, in any island */
  /*
   * The first available candidate, in order, whose island has `want`
   * available (a device in none: when one is wanted). All of its island's
   * available candidates come after it, so counting them once per node
   * is the same as counting from it on.
   */
  GROW(s->icnt, s->icntcap, (size_t)nisl + 1);
  uint32_t *cnt = s->icnt;
  for (uint32_t j = 0; j < nisl; j++)
    cnt[j] = 0;
  for (size_t i = 0; i < n; i++)
    if (cs[i].avail && cs[i].island >= 0)
      cnt[cs[i].island]++;
  for (size_t i = 0; i < n; i++) {
    int32_t isl = cs[i].island;
    if (!cs[i].avail || (isl < 0 ? want > 1 : cnt[isl] < want))
      continue;
    /* Nothing is searched after it: the picks need no overlay. */
    for (size_t j = i, got = 0; got < want; j++)
      if (cs[j].avail && (j == i || (isl >= 0 && cs[j].island == isl))) {
        push_result(p, 0, &cs[j]);
        got++;
      }
    return SEARCH_OK;
  }
  return SEARCH_FAIL;
}

uint32_t sf__search_largest(sf_packer_t *p, uint32_t slot)
{
  pk_search_t *s = &p->search;
  const cand_t *cs = s->cands + s->coff[slot];
  GROW(s->icnt, s->icntcap, (size_t)s->h->nisl + 1);
  memset(s->icnt, 0, s->h->nisl * sizeof(*s->icnt));
  uint32_t best = 0;
  for (size_t i = 0; i < s->clen[slot]; i++) {
    if (!cs[i].avail)
      continue;
    int16_t isl = cs[i].island;
    uint32_t c = isl < 0 ? 1 : ++s->icnt[isl];
    best = c > best ? c : best;
  }
  return best;
}

/* ---- constraints ---- */

static bool attr_eq(const sf_attr_t *a, const sf_attr_t *b)
{
  return a->type == b->type && a->i == b->i && a->s == b->s;
}

static const sf_attr_t *dev_attr_named(const sf__dev_t *dv, const char *name)
{
  for (uint32_t i = 0; name && i < dv->nattrs; i++)
    if (dv->attrs[i].name == name)
      return &dv->attrs[i];
  return NULL;
}

static int32_t island_of(const hdev_t *d, uint32_t k)
{
  return d->island >= 0 ? d->island : -2 - (int32_t)k; /* no island: its own */
}

/* Would device k keep constraint cs satisfied? An attribute slicefit cannot read: no, and the
 * search is unsure (a failing search then passes the node). */
static bool cons_ok(sf_packer_t *p, const cstate_t *cs, uint32_t k)
{
  const hdev_t *d = &p->search.h->d[k];
  if (cs->c->kind == SF_CONSTRAINT_ISLAND)
    return cs->n == 0 || cs->isl == island_of(d, k);
  const sf_attr_t *a = dev_attr_named(&p->idx->devs[d->dev], cs->attr);
  if (a != NULL && a->type == SF_ATTR_UNKNOWN) {
    p->search.unknown = true;
    p->search.unknown_attr = cs->attr;
  }
  if (a == NULL || a->type == SF_ATTR_UNKNOWN || cs->n >= 64)
    return false;
  if (a->type == SF_ATTR_LIST || cs->lists) /* DRAListTypeAttributes: compared as sets */
    return cs->c->kind == SF_CONSTRAINT_MATCH ? sf__attrs_match(cs->vals, cs->n, a)
                                              : sf__attrs_distinct(cs->vals, cs->n, a);
  for (uint32_t j = 0; j < cs->n; j++) {
    bool eq = attr_eq(cs->vals[j], a);
    if (cs->c->kind == SF_CONSTRAINT_MATCH ? !eq : eq)
      return false;
  }
  return true;
}

static bool applies(const cstate_t *cs, const freq_t *f, int32_t alt)
{
  return cs->claim == f->claim && sf__demand_refers(cs->c, f->req, alt);
}

/* Checks, then records, device k in every constraint of the slot's request that refers to it. */
static bool cons_push(sf_packer_t *p, const slot_t *sl, uint32_t k)
{
  pk_demand_t *dm = &p->dem;
  const freq_t *f = &dm->fr[sl->r];
  for (size_t i = 0; i < dm->ncs; i++)
    if (applies(&dm->cs[i], f, sl->alt) && !cons_ok(p, &dm->cs[i], k))
      return false;
  for (size_t i = 0; i < dm->ncs; i++) {
    cstate_t *cs = &dm->cs[i];
    if (!applies(cs, f, sl->alt))
      continue;
    if (cs->c->kind == SF_CONSTRAINT_ISLAND)
      cs->isl = island_of(&p->search.h->d[k], k);
    else
      cs->vals[cs->n] = dev_attr_named(&p->idx->devs[p->search.h->d[k].dev], cs->attr);
    cs->lists += cs->c->kind != SF_CONSTRAINT_ISLAND && cs->vals[cs->n]->type == SF_ATTR_LIST;
    cs->n++;
  }
  return true;
}

static void cons_pop(sf_packer_t *p, const slot_t *sl)
{
  pk_demand_t *dm = &p->dem;
  const freq_t *f = &dm->fr[sl->r];
  for (size_t i = 0; i < dm->ncs; i++) {
    cstate_t *cs = &dm->cs[i];
    if (applies(cs, f, sl->alt) && cs->n > 0) {
      cs->n--;
      cs->lists -= cs->c->kind != SF_CONSTRAINT_ISLAND && cs->vals[cs->n]->type == SF_ATTR_LIST;
    }
  }
}

/* ---- the general search ---- */

static int search_req(sf_packer_t *p, size_t r);

/*
 * Admin access (as DRA): a device is available unless this claim already
 * took it; what others hold, or the pod's other claims take, does not
 * count, and the admin pick takes nothing from them.
 */
static bool admin_avail(const sf_packer_t *p, const slot_t *sl, uint32_t k)
{
  const pk_search_t *s = &p->search;
  uint32_t claim = p->dem.fr[sl->r].claim;
  for (size_t i = 0; i < s->nres; i++)
    if (s->res[i].claim == claim && s->rk[i] == k)
      return false;
  return true;
}

/* Chooses the m-th of `want` devices for the slot, from candidate `from` on. */
static int search_dev(sf_packer_t *p, uint32_t slot, uint32_t m, uint32_t want, size_t from)
{
  pk_search_t *s = &p->search;
  const slot_t *sl = &p->dem.slot[slot];
  bool admin = sl->s->admin;
  const lim_t lim = lim_of(p);
  if (m == want)
    return search_req(p, sl->r + 1);
  for (size_t i = from; i < s->clen[slot]; i++) {
    const cand_t *c = &s->cands[s->coff[slot] + i];
    if (++s->steps > p->pol->search_budget)
      return SEARCH_BUDGET;
    bool ok = c->blocked ? false
              : admin    ? admin_avail(p, sl, c->k)
                      : avail(p, &lim, &s->h->d[c->k], c->k, &s->needs[c->noff], NULL, true, false);
    if (!ok || !cons_push(p, sl, c->k))
      continue;
    if (!admin)
      take(p, c, +1);
    push_result(p, slot, c);
    int rc = search_dev(p, slot, m + 1, want, i + 1);
    if (rc == SEARCH_OK || rc == SEARCH_BUDGET)
      return rc;
    s->nres--;
    if (!admin)
      take(p, c, -1);
    cons_pop(p, sl);
    if (rc == SEARCH_LIMIT)
      return rc; /* the claim's count is past the limit whichever devices this request takes */
  }
  return SEARCH_FAIL;
}

uint32_t sf__search_want(const sf_packer_t *p, uint32_t slot)
{
  const sf_request_t *s = p->dem.slot[slot].s;
  uint32_t want = s->all ? (uint32_t)p->search.clen[slot] : s->count;
  size_t can = s->admin ? p->search.clen[slot] - p->search.st[slot].nblocked
                        : p->search.st[slot].navail;
  /* All needs one device at least; ExactCount, enough available (the overlay only takes) */
  return want > can ? 0 : want;
}

/* Results the placement being built already has for `claim` (from its earlier requests). */
static size_t claim_results(const pk_search_t *s, uint32_t claim)
{
  size_t n = 0;
  for (size_t i = 0; i < s->nres; i++)
    n += s->res[i].claim == claim;
  return n;
}

/*
 * Places request r and every one after it. DRA's limit of results per claim
 * depends only on which alternative each request of the claim takes (a
 * count is fixed once its alternative is; All takes every candidate), so,
 * as upstream's errAllocationResultMaxSizeExceeded, SEARCH_LIMIT skips the
 * devices of the claim's earlier requests and moves on to their next
 * alternative; past the claim's first request it is a plain failure.
 */
static int search_req(sf_packer_t *p, size_t r)
{
  if (r == p->dem.nfr)
    return SEARCH_OK;
  const freq_t *f = &p->dem.fr[r];
  size_t have = claim_results(&p->search, f->claim);
  int rc = SEARCH_FAIL;
  bool limited = true; /* every alternative so far ended past the limit */
  for (uint32_t a = 0; a < f->nslots; a++) {
    uint32_t slot = f->slot + a;
    uint32_t want = sf__search_want(p, slot);
    if (want > 0 && have + want > SF_CLAIM_RESULTS_MAX)
      continue;
    rc = want == 0 ? SEARCH_FAIL : search_dev(p, slot, 0, want, 0);
    if (rc == SEARCH_OK || rc == SEARCH_BUDGET)
      return rc;
    limited = limited && rc == SEARCH_LIMIT;
  }
  bool first = r == 0 || p->dem.fr[r - 1].claim != f->claim;
  return limited && !first ? SEARCH_LIMIT : SEARCH_FAIL;
}

int sf__search_all(sf_packer_t *p)
{
  p->search.taken = true;
  return search_req(p, 0);
}

void sf__search_dispose(pk_search_t *s)
{
  SF__FREE_ALL(s->tcount, s->tcap, s->tcnt, s->cands, s->needs, s->coff, s->clen, s->st, s->memo,
               s->res, s->rcons, s->rk, s->picks, s->icnt, s->keyed);
}
