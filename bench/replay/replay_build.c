/*
 * The trace on a fresh index (the mapping is in replay_run.c): nodes, their
 * pools and devices, the model selectors, and a pod's demand.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "replay_run_int.h"

sf_match_t sf__replay_match_model(void *ctx, const sf_index_t *idx, sf_dev_id dev)
{
  const specsel_t *s = ctx;
  sf_str_id m = sf_index_dev_model(idx, dev);
  for (size_t i = 0; i < s->n; i++)
    if (s->ids[i] == m && m != 0)
      return SF_MATCH_YES;
  return SF_MATCH_NO;
}

int64_t sf__replay_now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int build_node(run_t *r, const sf_replay_node_t *n, char *err, size_t errlen)
{
  sf_node_spec_t spec = {n->name, n->cpu_milli, n->mem_bytes};
  sf_node_id id;
  int rc = sf_index_node_upsert(r->idx, &spec, &id);
  if (rc == 0 && n->ngpu > 0) {
    sf_device_spec_t devs[SF_REPLAY_MAX_GPUS];
    sf_attr_t attrs[SF_REPLAY_MAX_GPUS][2];
    sf_capacity_t caps[SF_REPLAY_MAX_GPUS];
    char names[SF_REPLAY_MAX_GPUS][16];
    memset(devs, 0, sizeof(devs));
    memset(caps, 0, sizeof(caps));
    for (uint32_t g = 0; g < n->ngpu; g++) {
      snprintf(names[g], sizeof(names[g]), "gpu-%u", g);
      attrs[g][0] = (sf_attr_t){SF_REPLAY_ATTR_MODEL, SF_ATTR_STRING, 0, n->model};
      attrs[g][1] = (sf_attr_t){SF_REPLAY_ATTR_ISLAND, SF_ATTR_INT,
                                n->island_of ? n->island_of[g] : 0, NULL};
      caps[g].name = SF_REPLAY_CAP_MEMORY;
      caps[g].value = n->gpu_mem > 0 ? n->gpu_mem : 1000;
      devs[g] = (sf_device_spec_t){.name = names[g],
                                   .attrs = attrs[g],
                                   .nattrs = n->island_of ? 2 : 1,
                                   .caps = &caps[g],
                                   .ncaps = 1,
                                   .allow_multiple = true};
    }
    rc = sf_index_pool_set(r->idx, id, SF_REPLAY_DRIVER, n->name, devs, n->ngpu, NULL, 0);
  }
  if (rc != 0)
    snprintf(err, errlen, "node %s: the index refused it: %s", n->name, sf_strerror(rc));
  return rc;
}

static _Thread_local const sf_replay_trace_t *name_trace;
static int cmp_node_name(const void *a, const void *b)
{
  const sf_replay_node_t *x = &name_trace->nodes[*(const uint32_t *)a];
  const sf_replay_node_t *y = &name_trace->nodes[*(const uint32_t *)b];
  return strcmp(x->name, y->name);
}

static _Thread_local const sf_index_t *name_idx;
static int cmp_id_name(const void *a, const void *b)
{
  return strcmp(sf_index_node_name(name_idx, *(const sf_node_id *)a),
                sf_index_node_name(name_idx, *(const sf_node_id *)b));
}

/* With a snapshot: every node of the index (the snapshot's and the trace's), by name. */
static void all_nodes(run_t *r)
{
  sf_node_id end = sf_index_node_end(r->idx);
  free(r->nodes);
  r->nodes = sf_xcalloc((size_t)end + 1, sizeof(*r->nodes));
  r->nnodes = 0;
  for (sf_node_id n = 0; n < end; n++)
    if (sf_index_node_live(r->idx, n))
      r->nodes[r->nnodes++] = n;
  name_idx = r->idx;
  qsort(r->nodes, r->nnodes, sizeof(*r->nodes), cmp_id_name);
}

/*
 * The index a run starts from: empty, or the snapshot's cluster. Its GPUs
 * (devices with a model) and their allocated share count in the capacity.
 */
int sf__replay_open_index(run_t *r, char *err, size_t errlen)
{
  char msg[SF_ERR_MAX];
  if (r->o->snapshot == NULL) {
    r->idx = sf_index_create();
    return 0;
  }
  r->cluster = sf_cluster_create(&r->pol);
  int rc = sf_cluster_load_list(r->cluster, r->o->snapshot, msg, sizeof(msg));
  if (rc != 0) {
    snprintf(err, errlen, "%s: %s", r->o->snapshot_name ? r->o->snapshot_name : "snapshot", msg);
    return rc;
  }
  r->idx = sf_cluster_index(r->cluster);
  return 0;
}

/* Capacity and allocated share over every GPU of the index (with a snapshot). */
void sf__replay_count_gpus(run_t *r)
{
  r->cap_milli = r->alloc_milli = 0;
  for (size_t i = 0; i < r->nnodes; i++) {
    size_t nd;
    const sf_dev_id *devs = sf_index_node_devices(r->idx, r->nodes[i], &nd);
    for (size_t k = 0; k < nd; k++) {
      if (sf_index_dev_model(r->idx, devs[k]) == 0)
        continue;
      r->cap_milli += 1000;
      r->alloc_milli += 1000 - sf_index_dev_free_permille(r->idx, devs[k]);
    }
  }
}

int sf__replay_build_index(run_t *r, char *err, size_t errlen)
{
  const sf_replay_trace_t *t = r->t;
  uint32_t *byname = sf_xcalloc(t->nnodes + 1, sizeof(*byname));
  int rc = 0;
  for (uint32_t i = 0; i < t->nnodes; i++)
    byname[i] = i;
  name_trace = t;
  qsort(byname, t->nnodes, sizeof(*byname), cmp_node_name);
  r->nodes = sf_xcalloc(t->nnodes + 1, sizeof(*r->nodes));
  for (size_t i = 0; i < t->nnodes && rc == 0; i++) {
    if ((rc = build_node(r, &t->nodes[byname[i]], err, errlen)) == 0)
      r->nodes[r->nnodes++] = sf_index_node_find(r->idx, t->nodes[byname[i]].name);
  }
  free(byname);
  if (rc != 0)
    return rc;
  if (r->cluster != NULL)
    all_nodes(r);
  sf_index_apply_policy(r->idx, &r->pol);
  sf_node_id end = sf_index_node_end(r->idx);
  r->pos_of = sf_xcalloc((size_t)end + 1, sizeof(*r->pos_of));
  for (size_t i = 0; i < r->nnodes; i++)
    r->pos_of[r->nodes[i]] = (int32_t)i;
  r->aff = sf_xcalloc(r->nnodes + 1, sizeof(*r->aff));
  r->naff = sf_xcalloc(r->nnodes + 1, sizeof(*r->naff));
  r->specsel = sf_xcalloc(t->nspecs, sizeof(*r->specsel));
  r->sels = sf_xcalloc(t->nspecs, sizeof(*r->sels));
  for (size_t s = 1; s < t->nspecs; s++) {
    for (size_t m = 0; m < t->specs[s].n && m < sizeof(r->specsel[s].ids) / sizeof(sf_str_id); m++)
      r->specsel[s].ids[r->specsel[s].n++] = sf_index_intern(r->idx, t->specs[s].models[m]);
    r->sels[s] = (sf_selector_t){sf__replay_match_model, &r->specsel[s], SPEC_CACHE_BASE + s};
  }
  return 0;
}

void sf__replay_build_demand(run_t *r, const sf_replay_pod_t *p, sf_demand_t *d)
{
  memset(d, 0, sizeof(*d));
  d->cpu_milli = p->cpu_milli;
  d->mem_bytes = p->mem_bytes;
  d->claims = r->claims;
  d->nclaims = p->nclaims;
  for (size_t c = 0; c < p->nclaims; c++) {
    const sf_replay_claim_t *pc = &p->claims[c];
    sf_claim_t *cl = &r->claims[c];
    memset(cl, 0, sizeof(*cl));
    cl->name = p->name;
    cl->reqs = r->reqs[c];
    cl->nreqs = pc->nreqs;
    for (size_t q = 0; q < pc->nreqs; q++) {
      const sf_replay_req_t *rq = &pc->reqs[q];
      sf_request_t *req = &r->reqs[c][q];
      memset(req, 0, sizeof(*req));
      req->name = "gpu";
      req->count = rq->count;
      if (rq->amount > 0) {
        r->caps[c][q] = (sf_cap_request_t){SF_REPLAY_CAP_MEMORY, rq->amount};
        req->caps = &r->caps[c][q];
        req->ncaps = 1;
      }
      if (rq->spec != 0) {
        req->selectors = &r->sels[rq->spec];
        req->nselectors = 1;
      }
    }
    if (pc->island) {
      r->cons[c] = (sf_constraint_t){SF_CONSTRAINT_ISLAND, NULL, NULL, 0};
      cl->cons = &r->cons[c];
      cl->ncons = 1;
    }
  }
}
