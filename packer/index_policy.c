/*
 * What the index derives from the policy, per device: the capacity that
 * measures its share (the primary capacity), its model (an attribute, as a
 * bit among at most 63 models) and its node-local island (devices with an
 * equal island attribute, or groups of a model's devices by the island
 * map). Applying a policy re-derives every node; a node's device order
 * change re-derives that node.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "index_priv.h"

/* Does the qualified `full` name have the id part (or the whole name) `want`? */
static bool name_is(const char *full, const char *want)
{
  if (want[0] == '\0')
    return false;
  if (strcmp(full, want) == 0)
    return true;
  const char *slash = strrchr(full, '/');
  return slash != NULL && strchr(want, '/') == NULL && strcmp(slash + 1, want) == 0;
}

static const sf_attr_t *attr_named(const sf__dev_t *d, const char *want)
{
  for (uint32_t a = 0; a < d->nattrs; a++)
    if (name_is(d->attrs[a].name, want))
      return &d->attrs[a];
  return NULL;
}

uint8_t sf__index_model_bit(sf_index_t *idx, sf_str_id model)
{
  if (model == 0)
    return SF__MODELS;
  for (uint32_t i = 0; i < idx->nmodels; i++)
    if (idx->model_ids[i] == model)
      return (uint8_t)i;
  if (idx->nmodels >= SF__MODELS)
    return SF__MODELS;
  idx->model_ids[idx->nmodels] = model;
  return (uint8_t)idx->nmodels++;
}

sf_dev_id sf__index_model_dev(sf_index_t *idx, uint32_t b)
{
  sf_dev_id d = idx->model_rep[b];
  if (idx->model_devs[b] == 0)
    return -1;
  if (d < 0 || (size_t)d >= idx->ndevs || !idx->devs[d].used || idx->devs[d].model_bit != b) {
    for (d = 0; (size_t)d < idx->ndevs; d++)
      if (idx->devs[d].used && !idx->devs[d].retired && idx->devs[d].model_bit == b)
        break;
    if ((size_t)d >= idx->ndevs)
      return -1;
    idx->model_rep[b] = d;
  }
  return d;
}

static bool ci_contains(const char *hay, const char *needle)
{
  size_t n = strlen(needle);
  for (; *hay; hay++)
    if (strncasecmp(hay, needle, n) == 0)
      return true;
  return false;
}

static const sf_island_rule_t *island_rule(const sf_index_t *idx, const sf__node_t *n,
                                           const char *model)
{
  for (size_t i = 0; i < idx->nrules; i++) {
    const sf_island_rule_t *r = &idx->rules[i];
    if (strncmp(n->name, r->node_prefix, strlen(r->node_prefix)) == 0 && ci_contains(model, r->model))
      return r;
  }
  return NULL;
}

/* Recomputes model, primary capacity and islands for every device of a node. */
void sf__index_derive_node(sf_index_t *idx, sf_node_id node)
{
  sf__node_t *n = &idx->nodes[node];
  int16_t next_island = 0;
  for (size_t k = 0; k < n->ndevs; k++) {
    sf__dev_t *d = &idx->devs[n->devs[k]];
    d->primary = -1;
    for (uint32_t c = 0; c < d->ncaps && d->primary < 0; c++)
      if (name_is(d->caps[c].name, idx->capacity))
        d->primary = (int16_t)c;
    if (d->counted)
      idx->model_devs[d->model_bit]--;
    d->counted = true;
    d->model = 0;
    d->island = -1;
    for (uint32_t a = 0; a < d->nattrs; a++)
      if (name_is(d->attrs[a].name, idx->model_attr) && d->attrs[a].s != NULL &&
          d->attrs[a].type != SF_ATTR_LIST)
        d->model = sf_index_lookup(idx, d->attrs[a].s);
    d->model_bit = sf__index_model_bit(idx, d->model);
    idx->model_devs[d->model_bit]++;
    idx->model_rep[d->model_bit] = n->devs[k];
  }
  /* Islands from an attribute: equal values share an island. A device that several nodes
   * offer (network-attached) is its own island: it is no node's NVLink peer. */
  for (size_t k = 0; k < n->ndevs && idx->island_attr[0]; k++) {
    sf__dev_t *d = &idx->devs[n->devs[k]];
    const sf_attr_t *a = attr_named(d, idx->island_attr);
    if (a == NULL || a->type == SF_ATTR_UNKNOWN || d->island >= 0 || d->nmirrors > 0)
      continue;
    d->island = next_island;
    for (size_t j = k + 1; j < n->ndevs; j++) {
      const sf_attr_t *b = attr_named(&idx->devs[n->devs[j]], idx->island_attr);
      if (b != NULL && idx->devs[n->devs[j]].nmirrors == 0 && b->type == a->type && b->i == a->i &&
          b->s == a->s)
        idx->devs[n->devs[j]].island = next_island;
    }
    next_island++;
  }
  /* Islands from the map: groups of SIZE devices of a model, in device order. */
  for (size_t k = 0; k < n->ndevs && idx->nrules; k++) {
    sf__dev_t *d = &idx->devs[n->devs[k]];
    if (d->island >= 0 || d->model == 0 || d->nmirrors > 0)
      continue;
    const sf_island_rule_t *r = island_rule(idx, n, sf_index_str(idx, d->model));
    if (r == NULL)
      continue;
    uint32_t in = 0;
    for (size_t j = k; j < n->ndevs && in < r->size; j++) {
      sf__dev_t *e = &idx->devs[n->devs[j]];
      if (e->island < 0 && e->model == d->model && e->nmirrors == 0) {
        e->island = next_island;
        in++;
      }
    }
    next_island++;
  }
  n->version = ++idx->stamp;
}

void sf_index_apply_policy(sf_index_t *idx, const sf_policy_t *pol)
{
  memcpy(idx->capacity, pol->capacity, sizeof(idx->capacity));
  memcpy(idx->model_attr, pol->model_attribute, sizeof(idx->model_attr));
  memcpy(idx->island_attr, pol->island_attribute, sizeof(idx->island_attr));
  free(idx->rules);
  idx->rules = NULL;
  idx->nrules = pol->nisland_rules;
  if (idx->nrules) {
    idx->rules = sf_xmalloc(idx->nrules * sizeof(*idx->rules));
    memcpy(idx->rules, pol->island_rules, idx->nrules * sizeof(*idx->rules));
  }
  for (sf_node_id i = 0; i < (sf_node_id)idx->nnodes; i++)
    if (idx->nodes[i].used)
      sf__index_derive_node(idx, i);
}
