/*
 * The availability rule of the search against the node's summary and the
 * tentative overlay, shared by the gather (search.c) and the general search
 * (search_place.c). Its functions stay static in this header: avail is
 * SF_HOT, inlined into the gather's loop with constant `tent` and `plain`.
 * Private to packer/search*.c.
 */
#ifndef SF_PACKER_PK_AVAIL_H
#define SF_PACKER_PK_AVAIL_H

#include "packer_int.h"

/*
 * What the availability rule reads of the call: the policy's limits and the
 * capacity classes. Copied out of p once per node, because the search's
 * stores (candidates, needs, the overlay) could alias them, and the
 * compiler would read them again for every device.
 */
typedef struct {
  uint32_t max_sharers, headroom_pct;
  const hcls_t *cls;
} lim_t;

static lim_t lim_of(const sf_packer_t *p)
{
  return (lim_t){p->pol->max_sharers, p->pol->headroom_pct, p->view.cls};
}

static sf_milli_t reserve_of(const lim_t *l, sf_milli_t value)
{
  return l->headroom_pct ? value / 100 * l->headroom_pct : 0;
}

static sf_milli_t tcounter(const pk_search_t *s, int32_t pool, uint32_t counter)
{
  sf_milli_t v = 0;
  for (size_t i = 0; i < s->ntcnt; i++)
    if (s->tcnt[i].pool == pool && s->tcnt[i].counter == counter)
      v += s->tcnt[i].v;
  return v;
}

/* Is `left` of capacity `name` short of `need`? The statistics keep the first capacity found
 * short and the most any device has free of it, so the reason names what really is short. */
static bool short_of(sf_milli_t left, sf_milli_t need, const char *name, stats_t *st)
{
  if (left >= need)
    return false;
  if (st) {
    st->short_cap++;
    if (!st->capname) {
      st->capname = name;
      st->short_need = need;
    }
    if (st->capname == name && left > st->best_free)
      st->best_free = left;
  }
  return true;
}

/*
 * Is candidate c available given the node's state and, with `tent`, the
 * tentative overlay? (Without, as when candidates are gathered and the
 * overlay is empty, the compiler drops its reads.)
 */
SF_HOT bool avail(const sf_packer_t *p, const lim_t *l, const hdev_t *d, uint32_t k,
                  const sf_milli_t *need, stats_t *st, bool tent, bool plain)
{
  const pk_search_t *s = &p->search;
  uint32_t holders = d->holders + (tent ? s->tcount[k] : 0);
  if (!(d->fl & HD_SHARED)) {
    if (holders > 0) {
      if (st)
        st->busy++;
      return false;
    }
  } else {
    if (d->fl & HD_WHOLE) { /* DRA: allocated (not shared), so in use */
      if (st)
        st->busy++;
      return false;
    }
    if (l->max_sharers > 0 && holders >= l->max_sharers) {
      if (st)
        st->sharers++;
      return false;
    }
    const sf_milli_t *t = &s->tcap[(size_t)k * MAXCAPS];
    if (d->cls >= 0) {
      if (short_of(d->capfree - (tent ? t[0] : 0) - reserve_of(l, l->cls[d->cls].cap.value), need[0],
                   l->cls[d->cls].cap.name, st))
        return false;
    } else if (!plain && (d->fl & HD_CAPS)) {
      const sf__dev_t *dv = &p->idx->devs[d->dev];
      for (uint32_t i = 0; i < dv->ncaps; i++)
        if (short_of(dv->caps[i].free - (tent ? t[i] : 0) - reserve_of(l, dv->caps[i].value), need[i],
                     dv->caps[i].name, st))
          return false;
    }
  }
  if (!plain && holders == 0 && (d->fl & HD_COUNTERS)) {
    const sf__dev_t *dv = &p->idx->devs[d->dev];
    const sf__pool_t *pl = dv->pool >= 0 ? &p->idx->pools[dv->pool] : NULL;
    for (uint32_t u = 0; pl && u < dv->ncuses; u++)
      if (pl->counters[dv->cuses[u].counter].free -
              (tent ? tcounter(s, dv->pool, dv->cuses[u].counter) : 0) <
          dv->cuses[u].value) {
        if (st && !st->counters++)
          st->counter = &pl->counters[dv->cuses[u].counter];
        return false;
      }
  }
  return true;
}

#endif
