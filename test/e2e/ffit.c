/*
 * A simplified in-tree DRA allocator, written apart from slicefit so that
 * the test has its own judge: for one claim on one node it walks the
 * devices in slice order and takes the first that fits (first fit), with
 * backtracking over the claim's devices for matchAttribute, as the
 * scheduler's structured allocator does.
 *
 * What "fits" means (KEP-5075 consumable capacity, k8s-wire.md §2.10):
 * the class selector and the request's selector match; a device without
 * allowMultipleAllocations is free; a shared device has room for the
 * request rounded up by its requestPolicy (below min -> min, then up to
 * min + n*step, above max -> ineligible; an unnamed capacity consumes the
 * policy's default); capacity.requests also acts as a selector
 * (capacity >= request). The device classes are C predicates equal to the
 * CEL of e2e_device_classes().
 */
#include <inttypes.h>
#include <string.h>
#include "e2e.h"

void e2e_qty(int64_t bytes, char *buf, size_t len)
{
  if (bytes != 0 && bytes % E2E_GI == 0)
    snprintf(buf, len, "%" PRId64 "Gi", bytes / E2E_GI);
  else if (bytes != 0 && bytes % E2E_MI == 0)
    snprintf(buf, len, "%" PRId64 "Mi", bytes / E2E_MI);
  else
    snprintf(buf, len, "%" PRId64, bytes);
}

int64_t e2e_round(const e2e_dev_t *d, int64_t req)
{
  if (req == 0)
    return d->pol_default ? d->pol_default : d->mem;
  if (d->pol_step == 0)
    return req;
  int64_t v = req < d->pol_min ? d->pol_min : req;
  int64_t over = v - d->pol_min;
  v = d->pol_min + (over + d->pol_step - 1) / d->pol_step * d->pol_step;
  return v > d->pol_max ? -1 : v;
}

/* The class's and the request's selectors. */
static bool selected(const e2e_dev_t *d, const e2e_pod_t *p)
{
  if (p->shape == E2E_SHARE) /* gpu-shared-small: shared, memory <= 24Gi */
    return d->shared && d->mem <= 24 * E2E_GI;
  /* gpu-whole-card and productName == the model asked for */
  return !d->shared && strcmp(d->product, p->product) == 0;
}

static int64_t request_bytes(const e2e_pod_t *p)
{
  return p->shape == E2E_SHARE ? p->share : 0;
}

/* Whether device d can serve one device of the request now; *consumed gets what it would take. */
static bool fits(const e2e_dev_t *d, const e2e_pod_t *p, int64_t *consumed)
{
  int64_t req = request_bytes(p);
  *consumed = 0;
  if (!selected(d, p) || d->mem < req)
    return false;
  if (!d->shared)
    return d->nalloc == 0;
  int64_t c = e2e_round(d, req);
  if (c < 0 || d->used + c > d->mem)
    return false;
  *consumed = c;
  return true;
}

/* Backtracking over the request's count, devices in slice order, each device at most once. */
static bool pick(const e2e_node_t *n, const e2e_pod_t *p, size_t need, size_t from, e2e_alloc_t *a)
{
  if (a->n == need)
    return true;
  for (size_t i = from; i < n->ndevs; i++) {
    const e2e_dev_t *d = &n->devs[i];
    int64_t c;
    if (!fits(d, p, &c))
      continue;
    /* matchAttribute gpu.nvidia.com/productName: every device has the first one's value. */
    if (p->shape == E2E_PAIR && a->n > 0 && strcmp(n->devs[a->dev[0]].product, d->product) != 0)
      continue;
    a->dev[a->n] = i;
    a->consumed[a->n++] = c;
    if (pick(n, p, need, i + 1, a))
      return true;
    a->n--;
  }
  return false;
}

bool e2e_ffit(const e2e_node_t *node, const e2e_pod_t *p, e2e_alloc_t *out)
{
  memset(out, 0, sizeof *out);
  return pick(node, p, p->shape == E2E_PAIR ? 2 : 1, 0, out);
}

void e2e_ffit_take(e2e_node_t *node, const e2e_alloc_t *a)
{
  for (size_t i = 0; i < a->n; i++) {
    node->devs[a->dev[i]].used += a->consumed[i];
    node->devs[a->dev[i]].nalloc++;
  }
}

void e2e_ffit_give(e2e_node_t *node, const e2e_alloc_t *a)
{
  for (size_t i = 0; i < a->n; i++) {
    node->devs[a->dev[i]].used -= a->consumed[i];
    node->devs[a->dev[i]].nalloc--;
  }
}

json_t *e2e_status_json(const e2e_node_t *node, const e2e_pod_t *p, const e2e_alloc_t *a,
                        unsigned share_seq)
{
  json_t *results = json_array();
  for (size_t i = 0; i < a->n; i++) {
    const e2e_dev_t *d = &node->devs[a->dev[i]];
    json_t *r = json_pack("{s:s,s:s,s:s,s:s}", "request", "gpu", "driver", E2E_DRIVER, "pool",
                          node->name, "device", d->name);
    if (d->shared) {
      char q[32], share[48];
      e2e_qty(a->consumed[i], q, sizeof q);
      snprintf(share, sizeof share, "a671734a-0000-4000-8000-%012x", share_seq * 2 + (unsigned)i);
      json_object_set_new(r, "shareID", json_string(share));
      json_object_set_new(r, "consumedCapacity", json_pack("{s:s}", "memory", q));
    }
    json_array_append_new(results, r);
  }
  json_t *alloc = json_pack("{s:{s:o},s:{s:[{s:[{s:s,s:s,s:[s]}]}]},s:s}", "devices", "results",
                            results, "nodeSelector", "nodeSelectorTerms", "matchFields", "key",
                            "metadata.name", "operator", "In", "values", node->name,
                            "allocationTimestamp", "2026-12-02T13:00:00Z");
  return json_pack("{s:o,s:[{s:s,s:s,s:s,s:s}]}", "allocation", alloc, "reservedFor", "apiGroup", "",
                   "resource", "pods", "name", p->name, "uid", p->uid);
}
