/*
 * Taint rules: taints a DeviceTaintRule puts on devices, kept after the
 * slice's own taints of each device (which republishing a pool keeps) and
 * cleared by rule. Each change moves the version of every node that offers
 * the device.
 */
#include <stdlib.h>
#include "index_priv.h"

int sf_index_taint_rule_add(sf_index_t *idx, const char *rule, sf_dev_id d, const sf_taint_t *t)
{
  if (sf__index_dev_at(idx, d) == NULL || rule == NULL || rule[0] == '\0' || t == NULL ||
      t->key == NULL)
    return SF_EINVAL;
  sf__dev_t *dv = &idx->devs[d];
  dv->taints = sf_xrealloc(dv->taints, (dv->ntaints + 1) * sizeof(*dv->taints));
  dv->taints[dv->ntaints++] = (sf__taint_t){sf_index_intern(idx, rule),
                                            {sf__index_istr(idx, t->key),
                                             sf__index_istr(idx, t->value), t->effect}};
  sf__index_dev_nodes_touch(idx, dv);
  return 0;
}

void sf_index_taint_rule_clear(sf_index_t *idx, const char *rule)
{
  sf_str_id r = sf_index_lookup(idx, rule);
  if (r == 0)
    return;
  for (size_t d = 0; d < idx->ndevs; d++) {
    sf__dev_t *dv = &idx->devs[d];
    uint32_t j = 0;
    for (uint32_t i = 0; dv->used && i < dv->ntaints; i++)
      if (dv->taints[i].rule != r)
        dv->taints[j++] = dv->taints[i];
    if (dv->used && j != dv->ntaints) {
      dv->ntaints = j;
      sf__index_dev_nodes_touch(idx, dv);
    }
  }
}
