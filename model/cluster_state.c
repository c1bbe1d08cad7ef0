/* GET /debug/state: the cluster as JSON (nodes, devices, free capacity, allocations, pools, policy). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "slicefit/mix.h"
#include "cluster_int.h"

static json_t *policy_json(const sf_policy_t *pol)
{
  json_t *o = json_object();
  size_t n;
  const sf_policy_key_t *keys = sf_policy_keys(&n);
  char buf[1024];
  for (size_t i = 0; i < n; i++)
    if (sf_policy_get(pol, keys[i].key, buf, sizeof buf) == 0)
      json_object_set_new(o, keys[i].key, json_string(buf));
  return o;
}

static json_t *device_json(const sf_index_t *idx, sf_dev_id d)
{
  json_t *caps = json_object(), *taints = json_array();
  for (size_t i = 0; i < sf_index_dev_ncaps(idx, d); i++) {
    sf_milli_t value, free_amount;
    const char *name = sf_index_dev_cap(idx, d, i, &value, &free_amount);
    json_object_set_new(caps, name,
                        json_pack("{s:I,s:I}", "value_milli", (json_int_t)value, "free_milli",
                                  (json_int_t)free_amount));
  }
  for (size_t i = 0; i < sf_index_dev_ntaints(idx, d); i++) {
    const sf_taint_t *t = sf_index_dev_taint(idx, d, i);
    json_array_append_new(taints, json_pack("{s:s,s:s,s:i}", "key", t->key, "value",
                                            t->value ? t->value : "", "effect", (int)t->effect));
  }
  return json_pack("{s:s,s:s,s:s,s:b,s:i,s:i,s:o,s:o}", "driver", sf_index_dev_driver(idx, d), "pool",
                   sf_index_dev_pool(idx, d), "name", sf_index_dev_name(idx, d), "shared",
                   sf_index_dev_shared(idx, d), "holders", (int)sf_index_dev_holders(idx, d),
                   "free_permille", (int)sf_index_dev_free_permille(idx, d), "capacity", caps,
                   "taints", taints);
}

static json_t *nodes_json(const sf_index_t *idx)
{
  json_t *arr = json_array();
  for (sf_node_id n = 0; n < sf_index_node_end(idx); n++) {
    if (!sf_index_node_live(idx, n))
      continue;
    size_t nd;
    const sf_dev_id *devs = sf_index_node_devices(idx, n, &nd);
    json_t *dj = json_array();
    for (size_t i = 0; i < nd; i++)
      json_array_append_new(dj, device_json(idx, devs[i]));
    int64_t ca, cu, ma, mu;
    sf_index_node_cpu_mem(idx, n, &ca, &cu, &ma, &mu);
    /* Allocatable from the Node (0: not known), requested by the pods bound to the node. */
    json_array_append_new(arr, json_pack("{s:s,s:o,s:{s:I,s:I},s:{s:I,s:I}}", "name",
                                         sf_index_node_name(idx, n), "devices", dj, "cpu_milli",
                                         "allocatable", (json_int_t)ca, "requested", (json_int_t)cu,
                                         "memory_bytes", "allocatable", (json_int_t)ma, "requested",
                                         (json_int_t)mu));
  }
  return arr;
}

static json_t *allocations_json(const sf_cluster_t *c)
{
  json_t *arr = json_array();
  char key[512];
  const store_t *s = &c->stores[SF_KIND_RESOURCE_CLAIM];
  for (size_t i = 0; i < s->n; i++) {
    const sf_rclaim_t *cl = &s->objs[i]->u.claim;
    if (!cl->allocated)
      continue;
    sf_alloc_id a = sf_index_alloc_find(c->idx, sf__obj_key(&cl->meta, key, sizeof key));
    json_t *devs = json_array();
    size_t n = 0;
    const sf_pick_t *picks = a >= 0 ? sf_index_alloc_picks(c->idx, a, &n) : NULL;
    for (size_t k = 0; k < n; k++)
      json_array_append_new(devs, json_string(sf_index_dev_name(c->idx, picks[k].dev)));
    json_array_append_new(arr, json_pack("{s:s,s:s?,s:b,s:o}", "claim", key, "node",
                                         a >= 0 ? sf_index_node_name(c->idx,
                                                                     sf_index_alloc_node(c->idx, a))
                                                : cl->alloc_node,
                                         "recorded", a >= 0, "devices", devs));
  }
  return arr;
}

static json_t *pools_json(const sf_cluster_t *c)
{
  json_t *arr = json_array();
  for (size_t i = 0; i < c->npools; i++) {
    const pool_t *p = c->pools[i];
    if (p->nslices == 0)
      continue;
    json_t *nodes = json_array(), *bad = json_array();
    for (size_t k = 0; k < p->nnodes; k++)
      json_array_append_new(nodes, json_string(p->nodes[k]));
    for (size_t k = 0; k < p->ninvalid_nodes; k++)
      json_array_append_new(bad, json_string(p->invalid_nodes[k]));
    json_t *pj = json_pack("{s:s,s:s,s:I,s:b,s:i,s:i,s:o}", "driver", p->driver, "pool", p->name,
                           "generation", (json_int_t)p->generation, "complete", p->complete, "slices",
                           (int)p->nslices, "skipped_devices", (int)p->skipped, "nodes", nodes);
    /* A pool invalid for some node: why, and for which nodes (it offers nothing there). */
    if (p->invalid)
      json_object_set_new(pj, "invalid", json_pack("{s:s,s:o}", "reason", p->invalid, "nodes", bad));
    else
      json_decref(bad);
    json_array_append_new(arr, pj);
  }
  return arr;
}

/* One learned shape as text, "CPU:AMOUNTxCOUNT[@M|M][!]" (fgd_mix's grammar without the weight). */
static void shape_text(const sf_shape_t *sh, char *buf, size_t len)
{
  size_t n = (size_t)snprintf(buf, len, "%lldm:%lldx%u", (long long)sh->cpu_milli,
                              (long long)sh->amount, sh->count);
  for (uint32_t m = 0; m < sh->nmodels && n < len; m++)
    n += (size_t)snprintf(buf + n, len - n, "%c%s", m ? '|' : '@', sh->models[m]);
  if (sh->island && n < len)
    snprintf(buf + n, len - n, "!");
}

static int by_text(const void *a, const void *b)
{
  return strcmp(json_string_value(json_object_get(*(json_t *const *)a, "shape")),
                json_string_value(json_object_get(*(json_t *const *)b, "shape")));
}

/*
 * The learned workload mix the fragmentation strategy weighs nodes by, each
 * shape with its CPU (FGD's "lack CPU" rule fires only for shapes with some),
 * sorted by its text: two replicas that learned the same multiset in different
 * orders show the same list.
 */
static json_t *mix_json(const sf_index_t *idx)
{
  size_t n = sf_mix_size(idx), k = 0;
  json_t **v = sf_xcalloc(n + 1, sizeof(*v));
  sf_shape_t sh;
  char text[SF_POLICY_NAME_MAX * SF_POLICY_MODELS_MAX + 64];
  for (size_t i = 0; i < n && sf_mix_shape(idx, i, &sh) == 0; i++) {
    shape_text(&sh, text, sizeof text);
    v[k++] = json_pack("{s:s,s:I,s:f}", "shape", text, "cpu_milli", (json_int_t)sh.cpu_milli,
                       "weight", sh.weight);
  }
  qsort(v, k, sizeof(*v), by_text);
  json_t *arr = json_array();
  for (size_t i = 0; i < k; i++)
    json_array_append_new(arr, v[i]);
  free(v);
  return arr;
}

json_t *sf_cluster_state_json(sf_cluster_t *c)
{
  sf__mix_refresh(c); /* a relist or a restart leaves it to be rebuilt on first use */
  json_t *counts = json_object();
  for (int k = 1; k < SF_KIND_COUNT; k++)
    json_object_set_new(counts, sf_kind_name((sf_kind_t)k),
                        json_integer((json_int_t)sf_cluster_count(c, (sf_kind_t)k)));
  /* Objects refused as bad input (each logged once, "object rejected"), and list items of kinds
   * slicefit does not track: nothing is dropped without a trace. */
  json_t *rejected = json_object();
  for (int k = 1; k < SF_KIND_COUNT; k++)
    json_object_set_new(rejected, sf_kind_name((sf_kind_t)k),
                        json_integer((json_int_t)c->rejected[k]));
  return json_pack("{s:o,s:o,s:O,s:o,s:o,s:o,s:o,s:o}", "objects", counts, "rejected", rejected,
                   "ignored", c->ignored, "pools", pools_json(c), "nodes", nodes_json(c->idx),
                   "allocations", allocations_json(c), "policy", policy_json(&c->pol), "learned_mix",
                   mix_json(c->idx));
}
