/*
 * The fast path (pk_fast.h). Most calls ask for one device (a share of a
 * GPU, or a whole one), or N whole devices in one NVLink island, of nodes
 * whose devices are plain: no taints, no shared counters, at most one
 * capacity. For those the search needs no budget (one device: every
 * candidate is scored; one island: candidates grouped by island), so a
 * node the general search would leave UNSURE past its budget gets its exact
 * answer, with the same rules and the same kernel as any other node.
 *
 * The memo: sf_packer_evaluate keeps each such node's verdict with the
 * call's signature, and a later call with the same signature on an
 * unchanged node (same version) takes it from there. kube-scheduler sends
 * the pods of one workload, alike in all but their names, one after
 * another, and between two of them only the nodes that changed are
 * evaluated again; a node keeps FMEMO_WAYS verdicts, so the pods of two
 * workloads sent in turn each find theirs. Reasons are written anew for
 * each call's claim.
 */
#include <stdlib.h>
#include <string.h>
#include "packer_int.h"

static void sig_add(uint64_t *h, const void *data, size_t n)
{
  const unsigned char *b = data;
  for (size_t i = 0; i < n; i++)
    *h = (*h ^ b[i]) * 1099511628211ull;
}

/*
 * The signature of what a node's placement depends on besides the node's
 * own summary: the index, the request (count, capacity, selectors by their
 * cache keys) and the policy's keys that can move a placement (the device
 * choice, the availability limits, what the index derives devices from;
 * sf_policy_key_t.places). 0 (nothing remembered) when a selector has no
 * cache.
 */
static uint64_t placement_signature(const sf_packer_t *p)
{
  const slot_t *sl = &p->dem.slot[0];
  const sf_request_t *s = sl->s;
  uint64_t h = 1469598103934665603ull;
  sig_add(&h, &p->fast.kind, sizeof(p->fast.kind));
  sig_add(&h, &p->idx->serial, sizeof(p->idx->serial));
  sig_add(&h, &s->count, sizeof(s->count));
  sig_add(&h, &s->ncaps, sizeof(s->ncaps));
  if (s->ncaps) {
    sig_add(&h, &s->caps[0].value, sizeof(s->caps[0].value));
    sig_add(&h, &sl->capnames[0], sizeof(sl->capnames[0])); /* interned */
  }
  sig_add(&h, &s->nselectors, sizeof(s->nselectors));
  for (size_t i = 0; i < s->nselectors; i++) {
    if (sl->selc[i] == NULL || s->selectors[i].cache_key == 0)
      return 0;
    sig_add(&h, &s->selectors[i].cache_key, sizeof(s->selectors[i].cache_key));
  }
  h = sf_policy_hash(p->pol, true, h); /* the keys that can move a placement (policy.c's table) */
  return h ? h : 1;
}

/*
 * The signature of everything a node's fast verdict depends on besides the
 * node's own summary: its placement's (above), every key of the policy
 * (generated from its one table, so a key added there is in it), the
 * pod's CPU, the workload mix and the models' scarcity. Names are not in
 * it: reasons are written per call. 0 (nothing remembered) when the
 * placement's is.
 */
static uint64_t signature(const sf_packer_t *p, uint64_t place)
{
  uint64_t h = place;
  if (h == 0)
    return 0;
  h = sf_policy_hash(p->pol, false, h); /* every key of the policy's table */
  sig_add(&h, &p->dem.dem->cpu_milli, sizeof(p->dem.dem->cpu_milli));
  sig_add(&h, &p->mix.mixhash, sizeof(p->mix.mixhash));
  sig_add(&h, &p->dem.flexible, sizeof(p->dem.flexible));
  if (p->dem.flexible)
    sig_add(&h, p->mix.scarcity, sizeof(p->mix.scarcity));
  return h ? h : 1;
}

void sf__fast_prepare(sf_packer_t *p)
{
  pk_fast_t *f = &p->fast;
  const pk_demand_t *d = &p->dem;
  f->kind = FAST_NONE;
  f->sig = 0;
  f->clock++;
  f->served = 0;
  if (!f->on || d->nfr != 1)
    return;
  const sf_request_t *s = d->fr[0].top;
  if (s->nalts || s->all || s->admin || s->count < 1 || s->count > SF_CLAIM_RESULTS_MAX ||
      s->ncaps > 1)
    return; /* past DRA's limit of results: the general search says so */
  if (d->ncs == 0 && s->count == 1)
    f->kind = FAST_SIMPLE;
  else if (d->ncs == 1 && d->cs[0].c->kind == SF_CONSTRAINT_ISLAND &&
           sf__demand_refers(d->cs[0].c, d->fr[0].req, -1))
    f->kind = FAST_ISLAND;
  uint64_t place = f->kind == FAST_NONE ? 0 : placement_signature(p);
  f->sig = signature(p, place);
  f->psig = f->kind == FAST_SIMPLE && !sf__search_by_score(p) ? place : 0;
  f->selsig = 0;
  if (f->sig != 0 && d->slot[0].s->nselectors > 0) {
    const sf_request_t *rq = d->slot[0].s;
    uint64_t h = 1469598103934665603ull;
    sig_add(&h, &p->idx->serial, sizeof(p->idx->serial));
    for (size_t i = 0; i < rq->nselectors; i++)
      sig_add(&h, &rq->selectors[i].cache_key, sizeof(rq->selectors[i].cache_key));
    f->selsig = h ? h : 1;
  }
  size_t want = 64;
  while (want < p->idx->nnodes / 2 && want < 8192)
    want *= 2;
  if (f->sig != 0 && f->alike && f->lkcap < want) {
    f->lk = sf_xrealloc(f->lk, want * sizeof(*f->lk));
    for (size_t i = 0; i < want; i++)
      f->lk[i] = (falike_t){0, -1};
    f->lkcap = want;
  }
}

/* ---- the memo ---- */

static __attribute__((noinline)) void memo_grow(pk_fast_t *f, size_t cap)
{
  f->memo = sf_xrealloc(f->memo, cap * FMEMO_WAYS * sizeof(*f->memo));
  memset(f->memo + f->memocap * FMEMO_WAYS, 0, (cap - f->memocap) * FMEMO_WAYS * sizeof(*f->memo));
  f->memocap = cap;
}

/* Node's FMEMO_WAYS remembered verdicts. */
static fmemo_t *memo_of(pk_fast_t *f, sf_node_id node, size_t nnodes)
{
  if ((size_t)node >= f->memocap)
    memo_grow(f, (size_t)node + 1 > nnodes ? (size_t)node + 1 : nnodes);
  return &f->memo[(size_t)node * FMEMO_WAYS];
}

/* Of a node's verdicts, the one that holds for this call at the node's version; NULL: none. */
static fmemo_t *memo_hit(const pk_fast_t *f, fmemo_t *ways, uint64_t version)
{
  for (int i = 0; i < FMEMO_WAYS; i++)
    if (ways[i].sig == f->sig && ways[i].version == version)
      return &ways[i];
  return NULL;
}

/*
 * Where a verdict of this call is kept: a way no longer of use (this call's
 * signature at an older version, none, or the node changed since), else
 * the least recently used.
 */
static fmemo_t *memo_slot(const pk_fast_t *f, fmemo_t *ways, uint64_t version)
{
  fmemo_t *lru = &ways[0];
  for (int i = 0; i < FMEMO_WAYS; i++) {
    fmemo_t *w = &ways[i];
    if (w->sig == f->sig || w->sig == 0 || w->version != version)
      return w;
    if ((int32_t)(w->used - lru->used) < 0)
      lru = w;
  }
  return lru;
}

/* ---- nodes alike ---- */

/*
 * Nodes in the same state (sf__view_same) whose devices the request's
 * selectors answer alike get the same verdict, but for the node order in
 * the score: in a fleet, the idle nodes of a pool, or the full ones. A
 * table keeps, by the hash of both, a node evaluated last in that state;
 * another node alike copies its remembered verdict when that verdict holds
 * for this call (the call's signature, the node's version), so the entry
 * needs no clearing between calls. A node's answers are kept in its summary
 * (selbits) for the selectors' signature, which holds only when every
 * selector has a cache, as the call's signature does: worked out once per
 * node version, as the gather would, and compared exactly. The table is
 * small (at most 64 KiB) so that a probe stays in cache; a collision only
 * costs the node a verdict worked out in full.
 */
static uint64_t alike_hash(uint64_t shash, uint64_t selbits)
{
  uint64_t key = (shash ^ selbits) * 0x9e3779b97f4a7c15ull;
  return key ^ key >> 29;
}

static uint64_t alike_key(sf_packer_t *p, hnode_t *h)
{
  const pk_fast_t *f = &p->fast;
  if (f->selsig != 0 && h->selsig != f->selsig) {
    const slot_t *sl = &p->dem.slot[0];
    uint64_t bits = 0;
    for (uint32_t k = 0; k < h->n; k++)
      bits |= (uint64_t)sf__demand_match(p->idx, sl, h->d[k].dev) << (2 * k);
    h->selbits = bits;
    h->selsig = f->selsig;
  }
  return alike_hash(h->shash, f->selsig ? h->selbits : 0);
}

void sf__fast_prefetch(const sf_packer_t *p, sf_node_id node)
{
  const pk_fast_t *f = &p->fast;
  if (!f->evaluating || f->sig == 0 || !f->alike || (size_t)node >= p->view.hncap)
    return;
  const hnode_t *h = &p->view.hn[node];
  if (h->version != p->idx->nodes[node].version || (f->selsig != 0 && h->selsig != f->selsig))
    return; /* its key is not known before the node is evaluated */
  uint64_t key = alike_hash(h->shash, f->selsig ? h->selbits : 0);
  __builtin_prefetch(&f->lk[key & (f->lkcap - 1)]);
}

/* The remembered verdict of the node e names, when it holds for this call and for node h. */
static const fmemo_t *alike_verdict(const sf_packer_t *p, const falike_t *e, uint32_t tag,
                                    const hnode_t *h)
{
  const pk_fast_t *f = &p->fast;
  sf_node_id a = e->node;
  if (e->tag != tag || a < 0 || (size_t)a >= f->memocap || (size_t)a >= p->view.hncap ||
      (size_t)a >= p->idx->nnodes)
    return NULL;
  const hnode_t *ah = &p->view.hn[a];
  if (ah == h || ah->version != p->idx->nodes[a].version ||
      (f->selsig != 0 && (ah->selsig != f->selsig || ah->selbits != h->selbits)))
    return NULL;
  const fmemo_t *am = memo_hit(f, &f->memo[(size_t)a * FMEMO_WAYS], ah->version);
  return am != NULL && sf__view_same(ah, h) ? am : NULL;
}

/* Node h's memo from a node alike's: what replay reads, and what its reason is made from. */
static void alike_copy(fmemo_t *m, const fmemo_t *am, uint64_t version)
{
  m->version = version;
  m->sig = am->sig;
  m->psig = am->psig;
  m->fit = am->fit;
  m->raw = am->raw;
  m->cost = am->cost;
  memcpy(m->sens, am->sens, sizeof(m->sens));
  m->pk = am->pk;
  m->puse = am->puse;
  if (am->fit == SF_FIT_NO) {
    m->st = am->st;
    m->n = am->n;
    m->clen = am->clen;
    m->largest = am->largest;
  }
}

/* The reason of a remembered verdict other than FIT, written anew for this call's claim and request. */
static __attribute__((noinline)) void replay_reason(sf_packer_t *p, const fmemo_t *m, sf_verdict_t *v)
{
  const sf_request_t *s = p->dem.fr[0].top;
  if (v->fit == SF_FIT_UNSURE) {
    sf__reason_say(p, R_UNKNOWN, 0, 0, 0, 0, v->reason, sizeof(v->reason));
  } else if (v->fit == SF_FIT_NO) {
    stats_t st = m->st; /* its capacity and counter names are interned: still the index's */
    if (!sf__reason_request(p, 0, &st, m->n, m->clen, v->reason, sizeof(v->reason)))
      sf__reason_say(p, R_ISLAND, 0, s->count, m->largest, 0, v->reason, sizeof(v->reason));
  }
}

/*
 * A remembered verdict (on every node of a call alike with the last one:
 * kept short, the reason apart).
 */
static inline void replay(sf_packer_t *p, const fmemo_t *m, sf_verdict_t *v)
{
  v->fit = (sf_fit_t)m->fit;
  v->raw = m->raw;
  v->cost = m->cost;
  memcpy(v->sens, m->sens, sizeof(v->sens));
  if (v->fit != SF_FIT_YES)
    replay_reason(p, m, v);
}

/* Places the call's one request on the node; the verdict, or the reason it does not fit. */
static uint32_t place(sf_packer_t *p, sf_verdict_t *v)
{
  const sf_request_t *s = p->dem.fr[0].top;
  const pk_search_t *sr = &p->search;
  bool first_fit = p->pol->device_choice != SF_CHOICE_PACKER;
  double raw = 0.0;
  int rc;
  if (p->fast.kind == FAST_SIMPLE) {
    sf__search_gather(p, 0, first_fit);
    rc = sf__search_one(p, &raw);
  } else {
    sf__search_gather(p, 0, false);
    sf__search_order(p, 0);
    rc = sf__search_island(p, s->count);
    if (rc == SEARCH_OK)
      raw = sf__search_score(p);
  }
  if (rc == SEARCH_OK) {
    v->fit = SF_FIT_YES;
    v->raw = raw;
    if (p->score.bounds)
      sf__score_sens(p, &v->cost, v->sens);
    return 0;
  }
  if (sr->unknown) {
    v->fit = SF_FIT_UNSURE;
    sf__reason_say(p, R_UNKNOWN, 0, 0, 0, 0, v->reason, sizeof(v->reason));
    return 0;
  }
  if (sf__reason_request(p, 0, &sr->st[0], sr->h->n, sr->clen[0], v->reason, sizeof(v->reason)))
    return 0;
  uint32_t largest = sf__search_largest(p, 0);
  sf__reason_say(p, R_ISLAND, 0, s->count, largest, 0, v->reason, sizeof(v->reason));
  return largest;
}

/* Keeps the verdict just made with the call's signature. */
static void keep(const pk_fast_t *f, fmemo_t *m, const sf_verdict_t *v)
{
  m->sig = f->sig;
  m->used = f->clock;
  m->raw = v->raw;
  m->cost = v->cost;
  memcpy(m->sens, v->sens, sizeof(m->sens));
  m->fit = (uint8_t)v->fit;
}

/* Node h's verdict when its own remembered one does not serve: from a node alike, or worked out. */
static __attribute__((noinline)) void miss(sf_packer_t *p, sf_node_id node, hnode_t *h, fmemo_t *ways,
                                           sf_verdict_t *v)
{
  pk_fast_t *f = &p->fast;
  fmemo_t *m;
  falike_t *e = NULL;
  uint32_t tag = 0;
  if (ways != NULL && f->alike && h->n <= 32) { /* selbits hold 32 devices */
    uint64_t key = alike_key(p, h);
    e = &f->lk[key & (f->lkcap - 1)];
    tag = (uint32_t)(key >> 32);
    const fmemo_t *am = alike_verdict(p, e, tag, h);
    if (am != NULL) {
      m = memo_slot(f, ways, h->version);
      alike_copy(m, am, h->version);
      m->used = f->clock;
      replay(p, m, v);
      if (v->fit == SF_FIT_YES)
        v->raw = m->raw = sf__score_renode(p, m->raw);
      f->shared++;
      return;
    }
  }
  if (ways != NULL && f->psig != 0) {
    /*
     * The same placement under another mix or CPU (a pod of the same claim
     * after the learned mix moved, or asking other CPU): first fit, and
     * the packer's preference where it picks (sf__search_by_score), take
     * the same device, so only its score is new; a node without one fails
     * as it did.
     */
    const fmemo_t *pm = NULL;
    for (int i = 0; i < FMEMO_WAYS && pm == NULL; i++)
      if (ways[i].version == h->version && ways[i].psig == f->psig)
        pm = &ways[i];
    if (pm != NULL) {
      m = memo_slot(f, ways, h->version);
      if (m != pm)
        *m = *pm; /* the device, and what a reason is made from */
      if (m->fit == SF_FIT_YES) {
        pick_t pk = {m->pk, m->puse};
        v->fit = SF_FIT_YES;
        v->raw = sf__score(p, h, &pk, 1);
        if (p->score.bounds)
          sf__score_sens(p, &v->cost, v->sens);
      } else {
        replay(p, m, v);
      }
      keep(f, m, v);
      if (e != NULL)
        *e = (falike_t){tag, node};
      return;
    }
  }
  sf__search_begin(p, h);
  uint32_t largest = place(p, v);
  sf__search_end(p);
  if (ways == NULL)
    return;
  m = memo_slot(f, ways, h->version);
  m->version = h->version;
  keep(f, m, v);
  m->psig = f->psig;
  if (v->fit == SF_FIT_YES && m->psig != 0) { /* the device place took, not by score */
    const pk_search_t *s = &p->search;
    const hdev_t *d = &h->d[s->rk[0]];
    m->pk = s->rk[0];
    m->puse = d->prim >= 0 ? s->rcons[d->prim] : 0;
  }
  if (v->fit == SF_FIT_NO) { /* what its reason is made from */
    m->st = p->search.st[0];
    m->n = h->n;
    m->clen = (uint32_t)p->search.clen[0];
    m->largest = largest;
  }
  if (e != NULL)
    *e = (falike_t){tag, node};
}

bool sf__fast_eval(sf_packer_t *p, sf_node_id node, sf_verdict_t *v)
{
  pk_fast_t *f = &p->fast;
  hnode_t *h = sf__view_node(p, node, p->idx, &p->view);
  if (!h->plain)
    return false;
  /* Only sf_packer_evaluate's verdicts are kept, and only under a signature. */
  fmemo_t *ways = f->evaluating && f->sig != 0 ? memo_of(f, node, p->idx->nnodes) : NULL;
  fmemo_t *m = ways != NULL ? memo_hit(f, ways, h->version) : NULL;
  f->replayed = m != NULL;
  if (f->replayed) {
    m->used = f->clock;
    f->served++;
    replay(p, m, v);
  } else {
    miss(p, node, h, ways, v);
  }
  return true;
}
