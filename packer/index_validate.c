/*
 * sf_index_validate: the index's invariants (index_int.h) checked from
 * scratch, for the tests and fuzzers to call after every mutation.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "index_priv.h"

/*
 * sf_index_validate recomputes, from the live allocations alone, what the
 * index keeps incrementally (free capacities, free counters, holders, a
 * node's cpu and memory, the live count) and compares. One checker per
 * invariant family; each fails through fail(), which writes the reason.
 */
typedef struct {
  size_t *capoff, *cntoff;       /* per device / pool: its first entry in capfree / cntfree */
  sf_milli_t *capfree, *cntfree; /* free amounts expected from the allocations */
  uint32_t *holders, *wholes;    /* per device */
  int64_t *cpu, *mem;            /* per node */
  size_t live;                   /* live allocations */
  char *err;                     /* the caller's buffer, or NULL */
  size_t errlen;
} recount_t;

__attribute__((format(printf, 2, 3))) static int fail(const recount_t *r, const char *fmt, ...)
{
  if (r->err != NULL && r->errlen > 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err, r->errlen, fmt, ap);
    va_end(ap);
  }
  return SF_EINVAL;
}

/* Lays out the expected free amounts, starting from every capacity and counter whole. */
static void recount_init(recount_t *r, const sf_index_t *idx, char *err, size_t errlen)
{
  size_t ncap = 0, ncnt = 0;
  *r = (recount_t){.err = err, .errlen = errlen};
  r->capoff = sf_xcalloc(idx->ndevs + 1, sizeof(*r->capoff));
  r->cntoff = sf_xcalloc(idx->npools + 1, sizeof(*r->cntoff));
  r->holders = sf_xcalloc(idx->ndevs + 1, sizeof(*r->holders));
  r->wholes = sf_xcalloc(idx->ndevs + 1, sizeof(*r->wholes));
  r->cpu = sf_xcalloc(idx->nnodes + 1, sizeof(*r->cpu));
  r->mem = sf_xcalloc(idx->nnodes + 1, sizeof(*r->mem));
  for (size_t d = 0; d < idx->ndevs; d++) {
    r->capoff[d] = ncap;
    ncap += idx->devs[d].used ? idx->devs[d].ncaps : 0;
  }
  for (size_t p = 0; p < idx->npools; p++) {
    r->cntoff[p] = ncnt;
    ncnt += idx->pools[p].used ? idx->pools[p].ncounters : 0;
  }
  r->capfree = sf_xcalloc(ncap + 1, sizeof(*r->capfree));
  r->cntfree = sf_xcalloc(ncnt + 1, sizeof(*r->cntfree));
  for (size_t d = 0; d < idx->ndevs; d++)
    for (uint32_t c = 0; idx->devs[d].used && c < idx->devs[d].ncaps; c++)
      r->capfree[r->capoff[d] + c] = idx->devs[d].caps[c].value;
  for (size_t p = 0; p < idx->npools; p++)
    for (uint32_t c = 0; idx->pools[p].used && c < idx->pools[p].ncounters; c++)
      r->cntfree[r->cntoff[p] + c] = idx->pools[p].counters[c].value;
}

static void recount_dispose(recount_t *r)
{
  SF__FREE_ALL(r->capoff, r->cntoff, r->holders, r->wholes, r->cpu, r->mem, r->capfree, r->cntfree);
}

/* Allocations sit on live nodes and hold live devices of that node; adds up what they take. */
static int check_allocs(const sf_index_t *idx, recount_t *r)
{
  for (size_t i = 0; i < idx->nallocs; i++) {
    const sf__alloc_t *a = &idx->allocs[i];
    if (!a->used)
      continue;
    r->live++;
    if (!sf_index_node_live(idx, a->node))
      return fail(r, "allocation %s on a dead node", a->holder);
    r->cpu[a->node] += a->cpu;
    r->mem[a->node] += a->mem;
    for (size_t k = 0; k < a->npicks; k++) {
      sf_dev_id d = a->picks[k].dev;
      const sf__dev_t *dv = &idx->devs[d];
      if (!dv->used || !sf__index_dev_on(idx, d, a->node))
        return fail(r, "allocation %s holds a bad device", a->holder);
      r->holders[d]++;
      r->wholes[d] += a->picks[k].whole;
      for (uint32_t c = 0; c < dv->ncaps; c++)
        r->capfree[r->capoff[d] + c] -= dv->shared ? a->picks[k].consumed[c] : dv->caps[c].value;
    }
  }
  return 0;
}

/* Each device's holders and free capacities match; a retired device is still held. Adds up
 * the counters that held devices consume. */
static int check_devices(const sf_index_t *idx, recount_t *r)
{
  for (size_t d = 0; d < idx->ndevs; d++) {
    const sf__dev_t *dv = &idx->devs[d];
    if (!dv->used)
      continue;
    if (r->holders[d] != dv->holders)
      return fail(r, "device %s: %u holders counted, %u kept", dv->name, r->holders[d], dv->holders);
    if (r->wholes[d] != dv->wholes)
      return fail(r, "device %s: %u whole holds counted, %u kept", dv->name, r->wholes[d],
                  dv->wholes);
    if (dv->retired && dv->holders == 0)
      return fail(r, "device %s retired with no holder", dv->name);
    for (uint32_t c = 0; c < dv->ncaps; c++)
      if (r->capfree[r->capoff[d] + c] != dv->caps[c].free)
        return fail(r, "device %s capacity %s: free %lld, expected %lld", dv->name, dv->caps[c].name,
                    (long long)dv->caps[c].free, (long long)r->capfree[r->capoff[d] + c]);
    for (uint32_t u = 0; dv->pool >= 0 && dv->holders > 0 && u < dv->ncuses; u++)
      r->cntfree[r->cntoff[dv->pool] + dv->cuses[u].counter] -= dv->cuses[u].value;
  }
  return 0;
}

/* Each pool's shared counters have the free amount their held devices leave. */
static int check_counters(const sf_index_t *idx, const recount_t *r)
{
  for (size_t p = 0; p < idx->npools; p++) {
    const sf__pool_t *pl = &idx->pools[p];
    for (uint32_t c = 0; pl->used && c < pl->ncounters; c++)
      if (r->cntfree[r->cntoff[p] + c] != pl->counters[c].free)
        return fail(r, "pool %s counter %s/%s: free %lld, expected %lld", pl->name,
                    pl->counters[c].set, pl->counters[c].name, (long long)pl->counters[c].free,
                    (long long)r->cntfree[r->cntoff[p] + c]);
  }
  return 0;
}

/* Each node's cpu and memory in use are its allocations' sums, and the live count is right. */
static int check_nodes(const sf_index_t *idx, const recount_t *r)
{
  for (size_t n = 0; n < idx->nnodes; n++)
    if (idx->nodes[n].used &&
        (r->cpu[n] != idx->nodes[n].cpu_used || r->mem[n] != idx->nodes[n].mem_used))
      return fail(r, "node %s: cpu/memory used disagrees with allocations", idx->nodes[n].name);
  if (r->live != idx->live_allocs)
    return fail(r, "%zu live allocations, %zu counted", r->live, idx->live_allocs);
  return 0;
}

int sf_index_validate(const sf_index_t *idx, char *err, size_t errlen)
{
  recount_t r;
  recount_init(&r, idx, err, errlen);
  int rc = check_allocs(idx, &r);
  if (rc == 0)
    rc = check_devices(idx, &r);
  if (rc == 0)
    rc = check_counters(idx, &r);
  if (rc == 0)
    rc = check_nodes(idx, &r);
  recount_dispose(&r);
  return rc;
}
