/*
 * Reasons (pk_reason.h): one sentence for a node that does not fit, made
 * from the statistics the search gathered: no device, none matching, all
 * tainted, none offering the capacity, then why the matching ones are not
 * available (short of capacity, sharers, counters, held), then a claim past
 * DRA's limit of results, and last the claims' constraints. Sentences are formatted once per call, kind and
 * numbers: the failing nodes of one call mostly fail alike, and formatting
 * is most of what a failing node costs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "packer_int.h"
#include "slicefit/quantity.h"

static const char *effect_name(sf_taint_effect_t e)
{
  return e == SF_TAINT_NOEXECUTE ? "NoExecute" : e == SF_TAINT_NOSCHEDULE ? "NoSchedule" : "None";
}

/*
 * v in the family a request wrote `like` in, as far as its value tells: binary ("4Gi") when that
 * spells it shorter than decimal ("10G"), so a request of 10G is answered in G and one of 4Gi
 * in Gi.
 */
static void qty(sf_milli_t v, sf_milli_t like, char *buf, size_t len)
{
  char bin[32], dec[32];
  int nb = sf_quantity_format(like, 1, bin, sizeof bin),
      nd = sf_quantity_format(like, 0, dec, sizeof dec);
  if (sf_quantity_format(v, nb >= 0 && nb < nd, buf, len) < 0)
    snprintf(buf, len, "%lld", (long long)(v / 1000));
}

/* The unqualified part of a capacity or counter name. */
static const char *short_name(const char *n)
{
  const char *sl = strrchr(n, '/');
  return sl ? sl + 1 : n;
}

/* Formats reason `kind` about request r with numbers a, b, c into out[SF_REASON_MAX]. */
static void format(const sf_packer_t *p, int kind, size_t r, int64_t a, int64_t b, int64_t c,
                   char *out)
{
  const size_t len = SF_REASON_MAX;
  const pk_demand_t *d = &p->dem;
  const freq_t *f = d->nfr ? &d->fr[r < d->nfr ? r : 0] : NULL;
  const char *claim = f && d->dem->claims[f->claim].name ? d->dem->claims[f->claim].name : "";
  const char *rn = f && f->top->name ? f->top->name : "";
  const sf_taint_t *t = (const sf_taint_t *)(uintptr_t)b;
  char qa[32], qb[32];
  switch (kind) {
  case R_NODEVS: snprintf(out, len, "node has no DRA devices for claim %s", claim); break;
  case R_NOMATCH:
    snprintf(out, len, "no device on the node matches request %s of claim %s", rn, claim);
    break;
  case R_TAINT:
    snprintf(out, len,
             "request %s of claim %s does not tolerate taint %s=%s:%s on %u matching device(s)", rn,
             claim, t->key, t->value, effect_name(t->effect), (unsigned)a);
    break;
  case R_NOCAP:
    snprintf(out, len, "no matching device offers the capacity request %s of claim %s asks for", rn,
             claim);
    break;
  case R_SHORT: {
    /* c: the capacity found short (interned). The request names it, or the device's request
     * policy consumes its default (a): then that is what the request needs. */
    const char *cn = (const char *)(uintptr_t)c;
    sf_milli_t want = a;
    bool named = false;
    for (uint32_t k = 0; f && k < f->nslots && !named; k++) {
      const sf_request_t *alt = d->slot[f->slot + k].s;
      for (size_t i = 0; i < alt->ncaps && !named; i++)
        if (!strcmp(alt->caps[i].name, cn)) {
          want = alt->caps[i].value;
          named = true;
        }
    }
    qty(want, want, qa, sizeof(qa));
    qty(b, want, qb, sizeof(qb));
    snprintf(out, len,
             "request %s of claim %s needs %s of %s%s; the most free on a matching device is %s", rn,
             claim, qa, short_name(cn), named ? "" : " (the device's default)", qb);
    break;
  }
  case R_SHARERS:
    snprintf(out, len, "matching devices already have %u sharers (policy max_sharers)",
             p->pol->max_sharers);
    break;
  case R_COUNTERS: {
    const sf__counter_t *ct = (const sf__counter_t *)(uintptr_t)b;
    snprintf(out, len,
             "request %s of claim %s: the shared counters of the matching devices are used up "
             "(counter %s of set %s)",
             rn, claim, ct ? short_name(ct->name) : "", ct ? ct->set : "");
    break;
  }
  case R_FREE:
    snprintf(out, len, "request %s of claim %s needs %u device(s); %u of %zu matching are free", rn,
             claim, (unsigned)a, (unsigned)b, (size_t)c);
    break;
  case R_LIMIT:
    snprintf(out, len, "claim %s would get %u devices on this node; DRA allows %d per claim", claim,
             (unsigned)a, SF_CLAIM_RESULTS_MAX);
    break;
  case R_ISLAND:
    snprintf(out, len, "needs %u GPUs in one NVLink island; the largest free island has %u",
             (unsigned)a, (unsigned)b);
    break;
  default: snprintf(out, len, "a selector cannot be evaluated here; left to the DRA plugin"); break;
  }
}

const char *sf_reason_code_name(sf_reason_code_t code)
{
  static const char *const names[SF_REASON_COUNT] = {
      [SF_REASON_NONE] = "none",
      [SF_REASON_NO_DEVICES] = "no_devices",
      [SF_REASON_NO_MATCH] = "no_matching_device",
      [SF_REASON_TAINT] = "taint",
      [SF_REASON_NO_CAPACITY] = "no_capacity",
      [SF_REASON_CAPACITY_SHORT] = "device_capacity",
      [SF_REASON_SHARERS] = "max_sharers",
      [SF_REASON_COUNTERS] = "shared_counters",
      [SF_REASON_DEVICE_COUNT] = "device_count",
      [SF_REASON_ISLAND] = "island",
      [SF_REASON_CLAIM_LIMIT] = "claim_limit",
      [SF_REASON_SELECTOR] = "selector",
      [SF_REASON_CONSTRAINT] = "constraint",
      [SF_REASON_TOGETHER] = "claims_together",
      [SF_REASON_SEARCH_BUDGET] = "search_budget",
      [SF_REASON_NODE_CPU] = "node_cpu",
      [SF_REASON_NODE_MEMORY] = "node_memory",
  };
  return (unsigned)code < SF_REASON_COUNT ? names[code] : "unknown";
}

void sf__reason_mark(sf_packer_t *p, int kind)
{
  p->reason.last = kind;
}

void sf__reason_say(sf_packer_t *p, int kind, size_t r, int64_t a, int64_t b, int64_t c, char *out,
                    size_t len)
{
  pk_reason_t *rs = &p->reason;
  say_t *e = NULL;
  sf__reason_mark(p, kind);
  if (rs->off) {
    out[0] = '\0';
    return;
  }
  for (size_t i = 0; i < NSAY && e == NULL; i++) {
    say_t *x = &rs->says[i];
    if (x->stamp == p->stamp && x->kind == kind && x->r == r && x->a == a && x->b == b && x->c == c)
      e = x;
  }
  if (e == NULL) {
    e = &rs->says[rs->nsay++ % NSAY];
    *e = (say_t){p->stamp, kind, r, a, b, c, ""};
    format(p, kind, r, a, b, c, e->text);
  }
  size_t n = strlen(e->text);
  n = n < len ? n : len - 1;
  memcpy(out, e->text, n);
  out[n] = '\0';
}

/* sf__reason_request for request r's alternative s (the request itself without alternatives). */
static bool reason_alt(sf_packer_t *p, size_t r, const sf_request_t *s, const stats_t *st,
                       size_t ndevs, size_t clen, char *out, size_t len)
{
  uint32_t want = s->all ? (uint32_t)(clen ? clen : 1) : s->count, avail = st->navail;
  if (ndevs == 0)
    sf__reason_say(p, R_NODEVS, r, 0, 0, 0, out, len);
  else if (st->match == 0)
    sf__reason_say(p, R_NOMATCH, r, 0, 0, 0, out, len);
  else if (clen == 0 && st->tainted)
    sf__reason_say(p, R_TAINT, r, st->tainted, (int64_t)(uintptr_t)st->taint, 0, out, len);
  else if (clen == 0)
    sf__reason_say(p, R_NOCAP, r, 0, 0, 0, out, len);
  else if (st->nblocked) /* All: a device in its set is tainted */
    sf__reason_say(p, R_TAINT, r, st->tainted, (int64_t)(uintptr_t)st->taint, 0, out, len);
  else if (avail >= want)
    return false;
  else if (st->short_cap && st->capname && want == 1)
    sf__reason_say(p, R_SHORT, r, st->short_need, st->best_free < 0 ? 0 : st->best_free,
                   (int64_t)(uintptr_t)st->capname, out, len);
  else if (st->sharers)
    sf__reason_say(p, R_SHARERS, r, 0, 0, 0, out, len);
  else if (st->counters && avail == 0)
    sf__reason_say(p, R_COUNTERS, r, 0, (int64_t)(uintptr_t)st->counter, 0, out, len);
  else
    sf__reason_say(p, R_FREE, r, want, avail, (int64_t)clen, out, len);
  return true;
}

bool sf__reason_request(sf_packer_t *p, size_t r, const stats_t *st, size_t ndevs, size_t clen,
                        char *out, size_t len)
{
  return reason_alt(p, r, sf__demand_first(&p->dem, r)->s, st, ndevs, clen, out, len);
}

/*
 * The alternative of request r whose failure says the most: the first that some device matches
 * (so devices that match but are in use are not reported as matching nothing), else the first.
 */
static uint32_t telling_slot(const sf_packer_t *p, size_t r)
{
  const freq_t *f = &p->dem.fr[r];
  for (uint32_t a = 0; a < f->nslots; a++)
    if (p->search.st[f->slot + a].match > 0)
      return f->slot + a;
  return f->slot;
}

/*
 * A claim past DRA's limit of results: for each of its requests the fewest
 * devices an alternative that could be placed alone needs. False when no
 * claim is past it (or one has a request that cannot be placed at all).
 */
static bool limit_reason(sf_packer_t *p, char *out, size_t len)
{
  const pk_demand_t *d = &p->dem;
  for (size_t r = 0; r < d->nfr;) {
    size_t first = r, total = 0;
    bool placeable = true;
    for (; r < d->nfr && d->fr[r].claim == d->fr[first].claim;
         r++) { /* a claim's requests are adjacent */
      uint32_t least = 0;
      for (uint32_t a = 0; a < d->fr[r].nslots; a++) {
        uint32_t want = sf__search_want(p, d->fr[r].slot + a);
        least = want && (!least || want < least) ? want : least;
      }
      placeable = placeable && least > 0;
      total += least;
    }
    if (placeable && total > SF_CLAIM_RESULTS_MAX) {
      sf__reason_say(p, R_LIMIT, first, (int64_t)total, 0, 0, out, len);
      return true;
    }
  }
  return false;
}

/* The island a constraint needs against the largest that is free; else the first attribute constraint. */
static void constraint_reason(sf_packer_t *p, char *out, size_t len)
{
  const pk_demand_t *d = &p->dem;
  for (size_t i = 0; i < d->ncs; i++) {
    const sf_constraint_t *c = d->cs[i].c;
    if (c->kind != SF_CONSTRAINT_ISLAND)
      continue;
    uint32_t want = 0, best = 0;
    for (size_t r = 0; r < d->nfr; r++)
      if (d->fr[r].claim == d->cs[i].claim && sf__demand_refers(c, d->fr[r].req, -1)) {
        uint32_t l = sf__search_largest(p, d->fr[r].slot);
        want += sf__demand_first(d, r)->s->count;
        best = l > best ? l : best;
      }
    sf__reason_say(p, R_ISLAND, 0, want, best, 0, out, len);
    return;
  }
  for (size_t i = 0; i < d->ncs; i++) {
    const sf_constraint_t *c = d->cs[i].c;
    const char *claim = d->dem->claims[d->cs[i].claim].name;
    sf__reason_mark(p, R_CONSTRAINT);
    snprintf(out, len,
             c->kind == SF_CONSTRAINT_MATCH
                 ? "no set of free devices shares one value of %s as claim %s requires"
                 : "not enough free devices with distinct values of %s for claim %s",
             c->attr ? c->attr : "", claim ? claim : "");
    return;
  }
  sf__reason_mark(p, R_TOGETHER);
  snprintf(out, len,
           "the requests of the pod's claims cannot all be satisfied together on this node");
}

void sf__reason_fail(sf_packer_t *p, int rc, sf_verdict_t *v)
{
  const pk_search_t *s = &p->search;
  v->fit = SF_FIT_NO;
  if (rc == SEARCH_BUDGET) {
    v->fit = SF_FIT_UNSURE;
    sf__reason_mark(p, R_BUDGET);
    if (!p->reason.off)
      snprintf(v->reason, sizeof(v->reason),
               "placement search passed its budget of %u steps; left to the DRA plugin",
               p->pol->search_budget);
    return;
  }
  if (s->unknown) {
    v->fit = SF_FIT_UNSURE;
    sf__reason_mark(p, R_UNKNOWN);
    if (s->unknown_attr && !p->reason.off)
      snprintf(v->reason, sizeof(v->reason),
               "a device's %s has no value slicefit can read, for a constraint; left to the DRA plugin",
               s->unknown_attr);
    else
      sf__reason_say(p, R_UNKNOWN, 0, 0, 0, 0, v->reason, sizeof(v->reason));
    return;
  }
  for (size_t r = 0; r < p->dem.nfr; r++) {
    uint32_t slot = telling_slot(p, r);
    if (reason_alt(p, r, p->dem.slot[slot].s, &s->st[slot], s->h->n, s->clen[slot], v->reason,
                   sizeof(v->reason)))
      return;
  }
  if (limit_reason(p, v->reason, sizeof(v->reason)))
    return;
  constraint_reason(p, v->reason, sizeof(v->reason));
}
