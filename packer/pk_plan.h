/*
 * The packer's plan of the shares (plan.c, all of it): what the mix's
 * shares are worth when they pack as tightly as they can, what a GPU's free
 * share is worth for them, the plan's inputs (the mix's share sizes, the
 * CPU that feeds a free share, the device capacities planned for) and the
 * loss a placement pays against it. Its state is pk_plan_t, one per packer
 * in its mix (pk_mix_t.plan, whose hash the plan's K moves); packer.c frees
 * it with sf__plan_dispose. Private to packer/.
 *
 * The configuration LP of the mix's shares (Gilmore-Gomory): every GPU that
 * holds shares holds a pattern of them summing to at most its capacity;
 * choose how many GPUs take each pattern, with no more shares of a size than
 * the mix has and no more GPUs than their volume fills, to place the most.
 * Its dual prices value each share size by the part of a GPU it takes in
 * that packing (r), and K(f), the most a free share f can still hold at
 * those prices, is what a GPU with f free is worth. A placement that takes
 * m of a GPU's f free spends K(f) - K(f - m) of it; spending more than K(m),
 * what the share itself is worth, breaks a pattern that closes: that excess
 * is the plan's loss (sf__plan_loss), 0 for a placement on plan.
 */
#ifndef SF_PACKER_PK_PLAN_H
#define SF_PACKER_PK_PLAN_H

#include <stdbool.h>
#include <stdint.h>
#include "pk_view.h"
#include "slicefit/common.h"
#include "slicefit/packer.h"

#define PLAN_CELLS 1000 /* K in per-mille of the device's capacity */
#define PLAN_ONE 8      /* K and r in steps of 1/PLAN_ONE per-mille */
#define PLAN_CAPS 4     /* device capacities planned for; others get no plan term */
#define PLAN_SIZES 128  /* distinct share sizes the LP takes (the most common ones) */

/* One share size of the mix, in per-mille of a device's capacity, and its weight. */
typedef struct {
  int32_t size;
  double w;
} plan_item_t;

/* The plan for devices of one primary capacity. */
typedef struct {
  sf_milli_t cap;            /* 0: none */
  int32_t k[PLAN_CELLS + 1]; /* K(f), f per-mille free, in 1/PLAN_ONE per-mille */
  uint64_t hash;             /* of k[] */
  /*
   * What feeds a free share f: the least CPU (milli-cores) of a share of
   * the mix within f, INT64_MAX when none fits. A node with less CPU left
   * can put nothing more on that GPU: its worth K(f) is stranded.
   */
  int64_t feed[PLAN_CELLS + 1];
  int64_t feedmost;  /* its largest finite value (the smallest share's); -1: none */
  uint64_t feedhash; /* of feed[] */
  /* the LP it comes from: the sizes, and the optimal basis's inverse (m = n + 1 rows) */
  int32_t size[PLAN_SIZES];
  int32_t r[PLAN_SIZES]; /* each size's worth, in 1/PLAN_ONE per-mille */
  size_t n;
  double *binv;
  bool tried;  /* an LP of size[] was solved, or tried */
  bool solved; /* and settled: its prices are r[] */
} plan_t;

typedef struct {
  plan_t p[PLAN_CAPS];
  size_t n;
  int64_t starve; /* the most CPU a free share needs: a node left more strands none */
  uint64_t of;    /* the mix (sf__mix_load's hash of shapes and weights) the plans are for */
  uint64_t hash;  /* of every plan's k[] and feed[] */
  bool moved;     /* a plan's K or feed moved since the drift last looked (pk_mix.h) */
} pk_plan_t;

/*
 * Brings the plan to the items (sizes per-mille of its capacity, 1..999,
 * ascending, distinct): when the sizes are those of its last LP and that
 * LP's basis is still feasible for the new weights, its prices stand (they
 * depend on the basis, not on the weights) and nothing is solved; else the
 * LP is solved again. True when K moved. Pure and deterministic.
 */
bool sf__plan_set(plan_t *p, const plan_item_t *items, size_t n);
/*
 * Solves the configuration LP of items[0..n) and writes r (in 1/PLAN_ONE
 * per-mille) per item: the item's size less its dual price. False (r
 * untouched) when it did not settle within its pivot budget, or has no
 * item or more than PLAN_SIZES.
 */
bool sf__plan_prices(plan_t *p, const plan_item_t *items, size_t n, int32_t *r);
/* K(0..PLAN_CELLS) from the items' sizes and values r (an unbounded knapsack). */
void sf__plan_table(const plan_item_t *items, const int32_t *r, size_t n, int32_t *k);

/*
 * What a device of free fb (per-mille) left at fa after a placement loses
 * of the plan, per-mille, while its node can still feed what is left.
 */
static inline double sf__plan_loss(const plan_t *p, int32_t fb, int32_t fa)
{
  if (fb <= fa || fb > PLAN_CELLS || fa < 0)
    return 0.0;
  return (double)(p->k[fb] - p->k[fa] - p->k[fb - fa]) / PLAN_ONE;
}

/* Is a free share f (per-mille) stranded on a node with cpu milli-cores free (-1: not tracked)? */
static inline bool sf__plan_starved(const plan_t *p, int32_t f, int64_t cpu)
{
  return cpu >= 0 && f > 0 && f <= PLAN_CELLS && cpu < p->feed[f];
}

/*
 * Brings the plans (p->mix.plan) to the mix loaded and the index's
 * capacities, under a policy that weighs them; a plan whose K or feed moves
 * marks the drift (pk_plan_t.moved), and the mix's hash folds every K in.
 */
void sf__plan_load(sf_packer_t *p);
/* The plan for devices of primary capacity cap under the mix loaded; NULL: none. */
const plan_t *sf__plan_of(const sf_packer_t *p, sf_milli_t cap);

struct pk_after; /* a placement's devices after it (pk_score.h) */
/*
 * The plan's two terms of a placement on node h, per-mille (score.c weighs
 * them): *loss, what it spends of its GPUs' worth beyond the worth of the
 * shares it takes (weight_plan); *strand, the worth of the free shares it
 * leaves without the CPU for a share of the mix (weight_strand). cpu: the
 * node's free CPU after the pod (-1: not tracked). O(picks), or O(devices)
 * when the CPU left is short.
 */
void sf__plan_terms(const sf_packer_t *p, const hnode_t *h, const struct pk_after *af, int64_t cpu,
                    double *loss, double *strand);

void sf__plan_dispose(pk_plan_t *pl);

#endif
