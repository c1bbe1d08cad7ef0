/*
 * Mirrored devices: a device homed on one node (its pool's) that other
 * nodes offer too (network-attached), set per node and pool by
 * sf_index_mirror_set. The link is kept both ways: d is in nodes[m].mdevs
 * exactly when m is in devs[d].mirrors. A change of a mirrored device moves
 * the version of every node that offers it.
 */
#include <stdlib.h>
#include <string.h>
#include "index_priv.h"

/* Takes d off `node`'s mirrored devices (and `node` off d's mirrors). */
void sf__index_mirror_unlink(sf_index_t *idx, sf_node_id node, sf_dev_id d, bool reorder)
{
  sf__node_t *n = &idx->nodes[node];
  sf__dev_t *dv = &idx->devs[d];
  sf__i32_remove(n->mdevs, &n->nmdevs, d);
  for (uint32_t k = 0; k < dv->nmirrors; k++)
    if (dv->mirrors[k] == node) {
      dv->mirrors[k] = dv->mirrors[--dv->nmirrors];
      break;
    }
  if (reorder)
    sf__index_node_reorder(idx, node);
}

/* Every node that offers d learns that its state moved. */
void sf__index_dev_nodes_touch(sf_index_t *idx, const sf__dev_t *dv)
{
  idx->nodes[dv->node].version = ++idx->stamp;
  for (uint32_t k = 0; k < dv->nmirrors; k++)
    idx->nodes[dv->mirrors[k]].version = ++idx->stamp;
}

int sf_index_mirror_set(sf_index_t *idx, sf_node_id node, const char *driver, const char *pool,
                        const char *const *names, size_t n)
{
  if (!sf_index_node_live(idx, node) || driver == NULL || pool == NULL || (n > 0 && names == NULL))
    return SF_EINVAL;
  sf__node_t *nd = &idx->nodes[node];
  for (size_t k = nd->nmdevs; k-- > 0;) {
    const sf__dev_t *dv = &idx->devs[nd->mdevs[k]];
    if (strcmp(dv->driver, driver) == 0 && strcmp(dv->poolname, pool) == 0)
      sf__index_mirror_unlink(idx, node, nd->mdevs[k], false);
  }
  for (size_t i = 0; i < n; i++) {
    sf_dev_id d = sf_index_dev_find(idx, driver, pool, names[i]);
    if (d < 0 || !sf_index_dev_live(idx, d) || idx->devs[d].node == node)
      continue;
    sf__dev_t *dv = &idx->devs[d];
    bool have = false;
    for (uint32_t k = 0; k < dv->nmirrors && !have; k++)
      have = dv->mirrors[k] == node;
    if (have)
      continue;
    uint32_t cap = dv->nmirrors; /* exact-size growth: most devices are offered by few nodes */
    dv->mirrors = sf_xrealloc(dv->mirrors, (cap + 1) * sizeof(*dv->mirrors));
    dv->mirrors[dv->nmirrors++] = node;
    GROW(nd->mdevs, nd->mdevcap, nd->nmdevs + 1);
    nd->mdevs[nd->nmdevs++] = d;
  }
  sf__index_node_reorder(idx, node);
  return 0;
}
