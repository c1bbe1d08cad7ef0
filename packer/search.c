/*
 * The search for a placement on one node (pk_search.h).
 *
 * Candidates. For every slot (a request or one of its firstAvailable
 * alternatives) the node's devices are matched against the slot's
 * selectors (cached per device by the index), taints against the request's
 * tolerations, and capacity requests rounded as DRA rounds them
 * (validValues / validRange / default / whole; worked out once per
 * capacity class and call). Each candidate keeps what it would consume and
 * whether it is available now.
 *
 * Availability is checked against the node's summary plus a tentative
 * overlay of what earlier picks of the same placement hold: holders per
 * device, consumption per capacity, and shared counters charged when a
 * device gets its first holder. The policy's max_sharers and headroom
 * apply.
 *
 * Placements: search_place.c. The availability rule, shared with it, is
 * in pk_avail.h.
 */
#include <stdlib.h>
#include <string.h>
#include "packer_int.h"
#include "pk_avail.h"

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

/* What one capacity needs for request s: its default (or all of it) unless s names it. */
static sf_milli_t cap_default(const sf__cap_t *c)
{
  return (c->has_policy && c->policy.has_default) ? c->policy.def : c->value;
}

/* The needs of a device with one capacity of class `cls`, memoised per class and call. */
SF_HOT bool class_need(sf_packer_t *p, uint32_t slot, int32_t cls, sf_milli_t *need)
{
  hmemo_t *mo = &p->search.memo[cls]; /* sized for every class by sf__search_gather */
  if (mo->stamp != p->stamp || mo->slot != slot) {
    const slot_t *sl = &p->dem.slot[slot];
    const hcls_t *c = &p->view.cls[cls];
    mo->stamp = p->stamp;
    mo->slot = slot;
    mo->ok = true;
    mo->need = cap_default(&c->cap);
    if (sl->s->ncaps == 1) {
      sf_milli_t v = c->shared ? round_request(&c->cap, sl->s->caps[0].value) : sl->s->caps[0].value;
      mo->ok = c->cap.name == sl->capnames[0] && v >= 0 && v <= c->cap.value;
      mo->need = v;
    }
  }
  *need = mo->need;
  return mo->ok;
}

/* need_of for a device with taints or capacities not in one class, or a request of several capacities. */
static bool need_slow(sf_packer_t *p, uint32_t slot, const slot_t *sl, const hdev_t *d,
                      sf_milli_t *need, stats_t *st)
{
  const sf_request_t *s = sl->s;
  const sf__dev_t *dv = &p->idx->devs[d->dev];
  for (uint32_t i = 0; (d->fl & HD_TAINTED) && i < dv->ntaints; i++) {
    const sf_taint_t *t = &dv->taints[i].t;
    if (t->effect != SF_TAINT_NONE && !tolerated(s, t)) {
      st->tainted++;
      st->taint = t;
      return false;
    }
  }
  bool ok = true;
  if (d->ncaps > MAXCAPS) {
    ok = false;
  } else if (d->cls >= 0 && s->ncaps <= 1) {
    ok = class_need(p, slot, d->cls, need);
  } else if (d->ncaps == 0) {
    need[0] = 0;
    ok = s->ncaps == 0;
  } else {
    for (uint32_t c = 0; c < dv->ncaps; c++)
      need[c] = cap_default(&dv->caps[c]);
    for (size_t r = 0; r < s->ncaps && ok; r++) {
      int32_t c = -1;
      for (uint32_t j = 0; j < dv->ncaps && c < 0; j++)
        if (dv->caps[j].name == sl->capnames[r])
          c = (int32_t)j;
      sf_milli_t v = c < 0        ? -1
                     : dv->shared ? round_request(&dv->caps[c], s->caps[r].value)
                                  : s->caps[r].value;
      ok = c >= 0 && v >= 0 && v <= dv->caps[c].value;
      if (ok)
        need[c] = v;
    }
  }
  if (!ok)
    st->shape++;
  return ok;
}

/*
 * One gather's slot, as need_of reads it, and the needs of the capacity
 * class it met last (a node's devices are mostly of one class, so most
 * devices skip even the call's memo).
 */
typedef struct {
  sf_packer_t *p;
  uint32_t slot;
  const slot_t *sl;
  bool several; /* the slot requests several capacities */
  bool nocaps;  /* ... none */
  int32_t cls;  /* the class met last; -1: none yet */
  sf_milli_t need;
  bool ok;
} slotneed_t;

/*
 * Can device d serve the slot at all (ignoring what is in use)? Fills
 * need[] with what it would consume of each capacity. False with the
 * reason counted in st.
 */
SF_HOT bool need_of(slotneed_t *g, const hdev_t *d, sf_milli_t *need, stats_t *st, bool plain)
{
  if ((!plain && (d->fl & (HD_TAINTED | HD_CAPS))) || g->several)
    return need_slow(g->p, g->slot, g->sl, d, need, st);
  /* one capacity, of a class, or none */
  bool ok = g->nocaps;
  need[0] = 0;
  if (d->cls >= 0) {
    if (d->cls != g->cls) {
      g->ok = class_need(g->p, g->slot, d->cls, &g->need);
      g->cls = d->cls;
    }
    need[0] = g->need;
    ok = g->ok;
  }
  if (!ok)
    st->shape++;
  return ok;
}

/* ---- candidates ---- */

/*
 * A shared device whose free capacity (what other claims left) cannot take
 * `need`: allocation mode All leaves it out instead of failing on it, as
 * DRA does. Not one held whole: DRA counts it among the allocated devices,
 * not the shares, so All keeps it and then cannot have it.
 */
static bool filled(const sf_packer_t *p, const hdev_t *d, const sf_milli_t *need)
{
  if (!(d->fl & HD_SHARED) || (d->fl & HD_WHOLE))
    return false;
  if (d->cls >= 0)
    return d->capfree < need[0];
  const sf__dev_t *dv = &p->idx->devs[d->dev];
  for (uint32_t i = 0; (d->fl & HD_CAPS) && i < dv->ncaps; i++)
    if (dv->caps[i].free < need[i])
      return true;
  return false;
}

void sf__search_begin(sf_packer_t *p, hnode_t *h)
{
  pk_search_t *s = &p->search;
  s->h = h;
  if ((size_t)h->n + 1 > s->tccap) {
    size_t old = s->tccap;
    GROW(s->tcount, s->tccap, (size_t)h->n + 1);
    memset(s->tcount + old, 0, (s->tccap - old) * sizeof(*s->tcount));
  }
  if (((size_t)h->n + 1) * MAXCAPS > s->tcapcap) {
    size_t ncap = ((size_t)h->n + 1) * MAXCAPS * 2;
    s->tcap = sf_xrealloc(s->tcap, ncap * sizeof(*s->tcap));
    memset(s->tcap + s->tcapcap, 0, (ncap - s->tcapcap) * sizeof(*s->tcap));
    s->tcapcap = ncap;
  }
  size_t nslot = p->dem.nslot + 1;
  GROW(s->coff, s->coffcap, nslot);
  GROW(s->clen, s->clencap, nslot);
  GROW(s->st, s->stcap, nslot);
  s->ntcnt = 0;
  s->taken = false;
  s->ncands = s->nneeds = 0;
  s->nres = 0;
  s->steps = 0;
  s->unknown = false;
  s->unknown_attr = NULL;
  for (size_t i = 0; i < p->dem.ncs; i++)
    p->dem.cs[i].n = 0;
}

/*
 * The gather's loop over the node's devices. `plain` (the node has no
 * tainted, counter-using or multi-capacity device) lets the compiler drop
 * the index reads such devices need.
 */
SF_HOT void gather_devs(sf_packer_t *p, uint32_t slot, bool stop, bool plain)
{
  pk_search_t *s = &p->search;
  const hnode_t *h = s->h;
  const slot_t *sl = &p->dem.slot[slot];
  const sf_request_t *rq = sl->s;
  /*
   * What the loop reads, in locals: its stores (candidates, needs, a
   * selector's answer) could alias any field read through p, s or h, and
   * the compiler would read each again for every device.
   */
  sf_index_t *idx = p->idx;
  const hdev_t *dv = h->d;
  const uint32_t n = h->n;
  const lim_t lim = lim_of(p);
  const bool all = rq->all && !rq->admin;
  /* One selector with a cache (the common case): a YES there is the answer. */
  const uint8_t *sel1 = rq->nselectors == 1 ? sl->selc[0] : NULL;
  const bool nosel = rq->nselectors == 0;
  slotneed_t g = {p, slot, sl, rq->ncaps > 1, rq->ncaps == 0, -1, 0, false};
  cand_t *cands = s->cands;
  sf_milli_t *needs = s->needs;
  size_t nc = s->ncands, nn = s->nneeds;
  /* The statistics in place: a local copy would cost a copy out per node for little. */
  stats_t *t = &s->st[slot];
  *t = (stats_t){.best_free = -1};
  bool unknown = false;
  for (uint32_t k = 0; k < n; k++) {
    const hdev_t *d = &dv[k];
    if (!nosel && !(sel1 && sel1[d->dev] == 1 + SF_MATCH_YES)) {
      sf_match_t m = sf__demand_match(idx, sl, d->dev);
      if (m == SF_MATCH_UNKNOWN) {
        t->unknown++;
        unknown = true;
        continue;
      }
      if (m != SF_MATCH_YES)
        continue;
    }
    t->match++;
    uint32_t tainted = t->tainted;
    bool fits = need_of(&g, d, &needs[nn], t, plain);
    /* All keeps a device whose taint the request does not tolerate (DRA's set is made by the
     * selectors alone) and so cannot be satisfied; other misfits are left out of the set. */
    bool blocked = !fits && rq->all && t->tainted > tainted;
    if ((!fits && !blocked) || (fits && all && filled(p, d, &needs[nn])))
      continue;
    if (blocked)
      memset(&needs[nn], 0, d->nneed * sizeof(*needs));
    bool ok = !blocked && avail(p, &lim, d, k, &needs[nn], t, false, plain);
    t->nblocked += blocked;
    cands[nc++] = (cand_t){k, (uint32_t)nn, d->island, ok, blocked};
    nn += d->nneed;
    t->navail += ok;
    if (stop && ok)
      break;
  }
  s->unknown = s->unknown || unknown;
  s->clen[slot] = nc - s->ncands;
  s->ncands = nc;
  s->nneeds = nn;
}

void sf__search_gather(sf_packer_t *p, uint32_t slot, bool stop)
{
  pk_search_t *s = &p->search;
  const hnode_t *h = s->h;
  s->coff[slot] = s->ncands;
  if (p->view.ncls > s->memocap) {
    size_t old = s->memocap;
    GROW(s->memo, s->memocap, p->view.ncls);
    memset(s->memo + old, 0, (s->memocap - old) * sizeof(*s->memo));
  }
  GROW(s->cands, s->candcap, s->ncands + h->n + 1);
  GROW(s->needs, s->needcap, s->nneeds + ((size_t)h->n + 1) * MAXCAPS);
  if (h->plain)
    gather_devs(p, slot, stop, true);
  else
    gather_devs(p, slot, stop, false);
}

void sf__search_gather_all(sf_packer_t *p)
{
  for (uint32_t slot = 0; slot < p->dem.nslot; slot++) {
    sf__search_gather(p, slot, false);
    sf__search_order(p, slot);
  }
}
