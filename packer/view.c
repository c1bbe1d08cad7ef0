/*
 * Node views: per node, the summary every feasibility and scoring rule of
 * the packer reads (pk_view.h). A summary is rebuilt from the index when
 * the node's version moves (every change of the node's devices,
 * allocations or taints moves it) or when the index is another one (its
 * serial). Capacity classes group devices whose only capacity is alike, so
 * DRA's rounding of a request is worked out once per class and call.
 */
#include <stdlib.h>
#include <string.h>
#include "packer_int.h"

static bool policy_eq(const sf_request_policy_t *a, const sf_request_policy_t *b)
{
  return a->has_default == b->has_default && a->def == b->def && a->nvalid == b->nvalid &&
         (a->nvalid == 0 || memcmp(a->valid, b->valid, a->nvalid * sizeof(*a->valid)) == 0) &&
         a->has_range == b->has_range && a->min == b->min && a->step == b->step && a->max == b->max;
}

#define MAXCLS 4096

/* The capacity class of a device's only capacity; -1 when the table is full. */
static int32_t cls_of(pk_view_t *v, const sf__dev_t *dv)
{
  const sf__cap_t *c = &dv->caps[0];
  for (size_t i = 0; i < v->ncls; i++) {
    const hcls_t *h = &v->cls[i];
    if (h->cap.name == c->name && h->cap.value == c->value && h->shared == dv->shared &&
        h->cap.has_policy == c->has_policy &&
        (!c->has_policy || policy_eq(&h->cap.policy, &c->policy)))
      return (int32_t)i;
  }
  if (v->ncls >= MAXCLS)
    return -1;
  GROW(v->cls, v->clscap, v->ncls + 1);
  hcls_t *h = &v->cls[v->ncls];
  h->cap = *c;
  h->shared = dv->shared;
  h->cap.policy.valid = NULL;
  if (c->has_policy && c->policy.nvalid > 0) {
    sf_milli_t *val = sf_xmalloc(c->policy.nvalid * sizeof(*val));
    memcpy(val, c->policy.valid, c->policy.nvalid * sizeof(*val));
    h->cap.policy.valid = val;
  }
  return (int32_t)v->ncls++;
}

static void cls_clear(pk_view_t *v)
{
  for (size_t i = 0; i < v->ncls; i++)
    free((void *)(uintptr_t)v->cls[i].cap.policy.valid);
  v->ncls = 0;
}

/* Fills the summary of one device (as sf_index_dev_free_permille for its share). */
static void hdev_fill(pk_view_t *v, hdev_t *h, const sf__dev_t *dv, sf_dev_id d)
{
  memset(h, 0, sizeof(*h));
  h->dev = d;
  h->holders = dv->holders;
  h->island = dv->island < 0 ? -1 : dv->island;
  h->prim = (int8_t)(dv->primary >= 0 && dv->primary < INT8_MAX ? dv->primary : -1);
  h->ncaps = (uint8_t)(dv->ncaps <= MAXCAPS ? dv->ncaps : MAXCAPS + 1);
  h->nneed = (uint8_t)(h->ncaps ? h->ncaps : 1);
  h->model_bit = dv->model_bit;
  h->cls = -1;
  unsigned fl = (dv->primary >= 0 || dv->model != 0 ? HD_GPU : 0) | (dv->shared ? HD_SHARED : 0) |
                (dv->holders == 0 ? HD_IDLE : 0) | (dv->ntaints ? HD_TAINTED : 0) |
                (dv->ncuses ? HD_COUNTERS : 0) | (dv->shared && dv->wholes ? HD_WHOLE : 0);
  if (dv->ncaps == 1) {
    h->capfree = dv->caps[0].free;
    h->cls = cls_of(v, dv);
  }
  if (dv->ncaps > 1 || (dv->ncaps == 1 && h->cls < 0))
    fl |= HD_CAPS; /* and so past MAXCAPS */
  if (h->prim >= 0)
    h->pval = dv->caps[h->prim].value;
  if (h->prim >= 0 && dv->shared) {
    fl |= HD_MEASURED;
    h->fa = dv->caps[h->prim].free;
    h->fp = sf__permille(h->fa, h->pval);
  } else {
    h->fa = dv->holders ? 0 : h->prim >= 0 ? h->pval : INT64_MAX;
    h->fp = dv->holders ? 0 : 1000;
  }
  h->fl = (uint8_t)fl;
}

/* Counts every island's devices and holders, inline up to NISL_IN islands, else in owned arrays. */
static void islands(hnode_t *h, uint32_t n)
{
  if (n > NISL_IN && n > h->islcap) {
    if (h->islcap <= NISL_IN)
      h->isize = NULL, h->iheld = NULL;
    h->isize = sf_xrealloc(h->isize, n * sizeof(*h->isize));
    h->iheld = sf_xrealloc(h->iheld, n * sizeof(*h->iheld));
    h->islcap = n;
  }
  uint16_t *size = h->islcap > NISL_IN ? h->isize : h->isize_in;
  uint8_t *held = h->islcap > NISL_IN ? h->iheld : h->iheld_in;
  h->nisl = n;
  memset(size, 0, n * sizeof(*size));
  memset(held, 0, n * sizeof(*held));
  for (uint32_t k = 0; k < h->n; k++) {
    const hdev_t *d = &h->d[k];
    if (d->island < 0)
      continue;
    if (size[d->island] < UINT16_MAX)
      size[d->island]++;
    held[d->island] |= d->holders > 0;
  }
}

static uint64_t mix64(uint64_t h, uint64_t v)
{
  h = (h ^ v) * 0x9e3779b97f4a7c15ull;
  return h ^ (h >> 29);
}

/* What sf__view_same compares, hashed: each device's state (the bytes before `dev`), the CPU. */
static uint64_t state_hash(const hnode_t *h)
{
  uint64_t x = mix64(mix64(h->n, (uint64_t)h->cpu_free), h->nisl);
  for (uint32_t k = 0; k < h->n; k++) {
    unsigned char b[48] = {0};
    memcpy(b, &h->d[k], offsetof(hdev_t, dev));
    for (size_t i = 0; i < sizeof(b); i += 8) {
      uint64_t w;
      memcpy(&w, b + i, sizeof(w));
      x = mix64(x, w);
    }
  }
  return x;
}

bool sf__view_same(const hnode_t *a, const hnode_t *b)
{
  if (a->shash != b->shash || a->n != b->n || a->cpu_free != b->cpu_free || a->nisl != b->nisl ||
      !a->plain || !b->plain)
    return false;
  for (uint32_t k = 0; k < a->n; k++)
    if (!sf__view_same_dev(&a->d[k], &b->d[k]))
      return false;
  /* the islands' sizes and holders follow from the devices' islands and holders */
  return true;
}

static void build(sf_packer_t *p, hnode_t *h, const sf__node_t *n)
{
  if (n->ndevs > h->cap) {
    h->d = sf_xrealloc(h->d, n->ndevs * sizeof(*h->d));
    h->cap = (uint32_t)n->ndevs;
  }
  h->n = (uint32_t)n->ndevs;
  h->plain = true;
  h->total = h->used = 0;
  h->ngpu = 0;
  uint32_t nisl = 0;
  for (uint32_t k = 0; k < h->n; k++) {
    hdev_t *d = &h->d[k];
    hdev_fill(&p->view, d, &p->idx->devs[n->devs[k]], n->devs[k]);
    if (d->island >= 0 && (uint32_t)d->island >= nisl)
      nisl = (uint32_t)d->island + 1;
    h->plain = h->plain && !(d->fl & (HD_TAINTED | HD_COUNTERS | HD_CAPS));
    if (d->fl & HD_GPU) {
      h->total += d->fp;
      h->used += 1000 - d->fp;
      h->ngpu++;
    }
  }
  islands(h, nisl);
  h->cpu_free = n->cpu_alloc > 0 ? n->cpu_alloc - n->cpu_used : -1;
  h->shash = state_hash(h);
  h->selsig = 0;
}

hnode_t *sf__view_build(sf_packer_t *p, sf_node_id node)
{
  pk_view_t *v = &p->view;
  if (v->serial != p->idx->serial) {
    for (size_t i = 0; i < v->hncap; i++)
      v->hn[i].version = 0;
    cls_clear(v);
    v->serial = p->idx->serial;
  }
  if ((size_t)node >= v->hncap) {
    size_t old = v->hncap;
    GROW(v->hn, v->hncap,
         p->idx->nnodes > (size_t)node ? p->idx->nnodes : (size_t)node + 1); /* all at once */
    memset(v->hn + old, 0, (v->hncap - old) * sizeof(*v->hn));
  }
  hnode_t *h = &v->hn[node];
  const sf__node_t *n = &p->idx->nodes[node];
  if (h->version != n->version) {
    h->version = n->version;
    h->fversion = 0;
    build(p, h, n);
  }
  return h;
}

void sf__view_dispose(pk_view_t *v)
{
  for (size_t i = 0; i < v->hncap; i++) {
    free(v->hn[i].d);
    free(v->hn[i].fs);
    if (v->hn[i].islcap > NISL_IN) {
      free(v->hn[i].isize);
      free(v->hn[i].iheld);
    }
  }
  free(v->hn);
  cls_clear(v);
  free(v->cls);
}
