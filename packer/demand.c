/*
 * The demand's side of a packer call. The pod's claims are flattened in
 * order (claim by claim, request by request) and every request becomes one
 * slot, or one slot per firstAvailable alternative, each with its capacity
 * names interned against the index and its selectors' per-device caches.
 * Nothing here depends on a node.
 */
#include <stdlib.h>
#include <string.h>
#include "packer_int.h"

static const sf_request_t *spec_of(const sf_request_t *top, size_t a)
{
  return top->nalts ? &top->alts[a] : top;
}

static void add_slot(sf_packer_t *p, uint32_t r, size_t a)
{
  pk_demand_t *d = &p->dem;
  const sf_request_t *top = d->fr[r].top, *s = spec_of(top, a);
  GROW(d->slot, d->slotcap, d->nslot + 1);
  slot_t *sl = &d->slot[d->nslot++];
  /* capnames and selc point into arrays that may still grow: offsets until the end */
  *sl = (slot_t){r, top->nalts ? (int32_t)a : -1, s, (const char **)(uintptr_t)d->nnames,
                 (uint8_t **)(uintptr_t)d->nselc};
  GROW(d->names, d->namecap, d->nnames + s->ncaps + 1);
  for (size_t k = 0; k < s->ncaps; k++) {
    sf_str_id id = s->caps[k].name ? sf_index_lookup(p->idx, s->caps[k].name) : 0;
    d->names[d->nnames++] = id ? sf_index_str(p->idx, id) : NULL;
  }
  GROW(d->selc, d->selccap, d->nselc + s->nselectors + 1);
  d->nselc += s->nselectors;
}

static void flatten(sf_packer_t *p, const sf_demand_t *dm)
{
  pk_demand_t *d = &p->dem;
  d->nfr = d->nslot = d->nnames = d->nselc = 0;
  for (uint32_t c = 0; c < dm->nclaims; c++)
    for (uint32_t r = 0; r < dm->claims[c].nreqs; r++) {
      GROW(d->fr, d->frcap, d->nfr + 1);
      const sf_request_t *top = &dm->claims[c].reqs[r];
      uint32_t n = top->nalts ? (uint32_t)top->nalts : 1;
      d->fr[d->nfr] = (freq_t){c, r, top, (uint32_t)d->nslot, n};
      for (uint32_t a = 0; a < n; a++)
        add_slot(p, (uint32_t)d->nfr, a);
      d->nfr++;
    }
  for (size_t i = 0; i < d->nslot; i++) {
    d->slot[i].capnames = d->names + (uintptr_t)d->slot[i].capnames;
    d->slot[i].selc = d->selc + (uintptr_t)d->slot[i].selc;
  }
}

void sf__demand_resolve(sf_packer_t *p)
{
  pk_demand_t *d = &p->dem;
  uint64_t gen;
  do {
    gen = p->idx->cache_gen;
    for (size_t i = 0; i < d->nslot; i++)
      for (size_t k = 0; k < d->slot[i].s->nselectors; k++)
        d->slot[i].selc[k] = sf__index_selcache(p->idx, &d->slot[i].s->selectors[k]);
  } while (gen != p->idx->cache_gen);
}

bool sf__demand_refers(const sf_constraint_t *c, uint32_t req, int32_t alt)
{
  if (c->nrefs == 0)
    return true;
  for (size_t i = 0; i < c->nrefs; i++)
    if (c->refs[i].req == req && (c->refs[i].alt < 0 || c->refs[i].alt == alt))
      return true;
  return false;
}

/* Is a representative device of model bit b eligible for the first request's selectors? */
static bool model_eligible(sf_packer_t *p, uint32_t b)
{
  sf_index_t *idx = p->idx;
  sf_dev_id d = sf__index_model_dev(idx, b);
  if (d < 0)
    return false;
  const sf_request_t *s = sf__demand_first(&p->dem, 0)->s;
  for (size_t i = 0; i < s->nselectors; i++)
    if (sf__index_select(idx, &s->selectors[i], d) != SF_MATCH_YES)
      return false;
  return true;
}

static void constraints(sf_packer_t *p, const sf_demand_t *dm)
{
  pk_demand_t *d = &p->dem;
  d->ncs = 0;
  for (uint32_t c = 0; c < dm->nclaims; c++)
    for (size_t i = 0; i < dm->claims[c].ncons; i++) {
      const sf_constraint_t *k = &dm->claims[c].cons[i];
      GROW(d->cs, d->cscap, d->ncs + 1);
      sf_str_id a = k->attr ? sf_index_lookup(p->idx, k->attr) : 0;
      d->cs[d->ncs++] = (cstate_t){c, k, a ? sf_index_str(p->idx, a) : NULL, 0, {NULL}, 0, 0};
    }
}

void sf__demand_prepare(sf_packer_t *p, sf_index_t *idx, const sf_demand_t *dm)
{
  pk_demand_t *d = &p->dem;
  p->idx = idx;
  d->dem = dm;
  flatten(p, dm);
  constraints(p, dm);
  d->models = 0;
  for (uint32_t b = 0; d->nfr > 0 && b < idx->nmodels; b++)
    if (model_eligible(p, b))
      d->models |= 1ull << b;
  d->flexible = __builtin_popcountll(d->models) >= 2;
}

/* The amount of the policy's primary capacity a request asks for (0: whole devices). */
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
  const sf_claim_t *c = &p->dem.dem->claims[f->claim];
  for (size_t i = 0; i < c->ncons; i++)
    if (c->cons[i].kind == SF_CONSTRAINT_ISLAND && sf__demand_refers(&c->cons[i], f->req, -1))
      return true;
  return false;
}

size_t sf__demand_shapes(const sf_packer_t *p, uint64_t models, sf__shape_t *out, size_t max)
{
  const pk_demand_t *d = &p->dem;
  size_t n = 0;
  if (d->nfr == 0 && max > 0)
    out[n++] = (sf__shape_t){d->dem->cpu_milli, 0, 0, false, 0, 1.0};
  for (size_t r = 0; r < d->nfr && n < max; r++) {
    const sf_request_t *s = sf__demand_first(d, r)->s;
    out[n++] = (sf__shape_t){r == 0 ? d->dem->cpu_milli : 0,
                             primary_request(p, s),
                             s->all ? 1 : s->count,
                             needs_island(p, &d->fr[r]),
                             models,
                             1.0};
  }
  return n;
}

void sf__demand_dispose(pk_demand_t *d)
{
  SF__FREE_ALL(d->fr, d->slot, d->names, d->selc, d->cs);
}
