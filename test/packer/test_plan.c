/*
 * The plan of the shares (packer/plan.c): the configuration LP's prices
 * against another solver's, the table K and the loss it gives, and the
 * warm start that keeps a basis while it stays optimal.
 *
 * The expected prices were solved independently: the same LP (GPUs = the
 * shares' volume) by column generation with HiGHS (scipy.optimize.linprog,
 * Debian's python3-scipy), as bench/packing-bounds.py solves its LP.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>
#include "../../packer/pk_plan.h"

static plan_t plan; /* 8 KiB of K: not on the stack of a test */

static size_t items_of(const int32_t *size, const double *w, size_t n, plan_item_t *it)
{
  for (size_t i = 0; i < n; i++)
    it[i] = (plan_item_t){size[i], w[i]};
  return n;
}

static void prices_are(const int32_t *size, const double *w, size_t n, const double *want)
{
  plan_item_t it[PLAN_SIZES];
  int32_t r[PLAN_SIZES];
  items_of(size, w, n, it);
  memset(&plan, 0, sizeof(plan));
  cr_assert(sf__plan_prices(&plan, it, n, r), "the LP settles");
  for (size_t i = 0; i < n; i++)
    cr_assert(fabs(r[i] / (double)PLAN_ONE - want[i]) <= 0.5 / PLAN_ONE,
              "size %d: price %g, HiGHS %g", size[i], r[i] / (double)PLAN_ONE, want[i]);
  free(plan.binv);
}

/*
 * The one-GPU shares of the Alibaba default pod list (openb_pod_list_default.csv:
 * how many pods ask for each size, the sizes in milli-GPU): each share is
 * worth the part of an 810's GPU it takes when the shares pack tightly
 * (a 470 half, a 320 a third, a 650 two thirds), the slivers' fillers nothing.
 */
Test(plan, prices_of_the_default_lists_shares)
{
  static const int32_t size[] = {50,  110, 140, 160, 220, 230, 270, 290, 320, 330,
                                 350, 370, 440, 460, 470, 480, 550, 590, 650, 810};
  static const double count[] = {7, 24, 1, 74,  62,  140, 4,  1,  328, 7,
                                 6, 47, 2, 128, 750, 19,  72, 75, 253, 1078};
  static const double want[] = {0,   0,   0,   0,   67.5, 202.5, 202.5, 202.5, 270, 270,
                                270, 270, 270, 405, 405,  405,   540,   540,   540, 810};
  prices_are(size, count, 20, want);
}

Test(plan, prices_of_small_mixes)
{
  prices_are((const int32_t[]){470, 810}, (const double[]){1, 1}, 2, (const double[]){405, 810});
  prices_are((const int32_t[]){320, 650}, (const double[]){1, 1}, 2, (const double[]){320, 650});
  prices_are((const int32_t[]){230, 470, 810}, (const double[]){2, 3, 4}, 3,
             (const double[]){202.5, 405, 810});
  prices_are((const int32_t[]){100, 250, 330, 500, 700}, (const double[]){1, 2, 3, 1, 2}, 5,
             (const double[]){77.778, 233.333, 311.111, 466.667, 700});
}

/* K is what a free share can still hold at the prices; the loss what a placement spends beyond its share's worth. */
Test(plan, table_and_loss)
{
  plan_item_t it[2] = {{470, 1}, {810, 1}};
  memset(&plan, 0, sizeof(plan));
  cr_assert(sf__plan_set(&plan, it, 2), "a first plan moves K");
  cr_assert_eq(plan.k[1000], 810 * PLAN_ONE);
  cr_assert_eq(plan.k[940], 810 * PLAN_ONE); /* an 810, or two 470s */
  cr_assert_eq(plan.k[809], 405 * PLAN_ONE);
  cr_assert_eq(plan.k[469], 0);
  for (int c = 1; c <= PLAN_CELLS; c++)
    cr_assert_geq(plan.k[c], plan.k[c - 1]);
  /* A 470 on an idle GPU, or beside another 470: on plan. */
  cr_assert_eq(sf__plan_loss(&plan, 1000, 530), 0.0);
  cr_assert_eq(sf__plan_loss(&plan, 530, 60), 0.0);
  /* A 470 where an 810 still fits beside a 160's gap: 810 of worth gone for 405. */
  cr_assert_eq(sf__plan_loss(&plan, 840, 370), 405.0);
  /* Never below 0: K holds any two free parts' worth together. */
  for (int fb = 0; fb <= PLAN_CELLS; fb += 7)
    for (int fa = 0; fa <= fb; fa += 11)
      cr_assert_geq(sf__plan_loss(&plan, fb, fa), 0.0, "%d -> %d", fb, fa);
  cr_assert_eq(sf__plan_loss(&plan, 500, 600), 0.0, "a free share that grows loses nothing");
  free(plan.binv);
}

/* The prices depend on the basis, not on the weights: a move that keeps it feasible solves nothing. */
Test(plan, warm_start_keeps_a_basis_that_stands)
{
  plan_item_t it[3] = {{230, 2}, {470, 3}, {810, 4}};
  memset(&plan, 0, sizeof(plan));
  cr_assert(sf__plan_set(&plan, it, 3));
  int32_t k[PLAN_CELLS + 1];
  memcpy(k, plan.k, sizeof(k));
  uint64_t h = plan.hash;
  it[1].w = 3.01;
  cr_assert_not(sf__plan_set(&plan, it, 3), "a small move keeps K");
  cr_assert_eq(plan.hash, h);
  cr_assert_eq(memcmp(k, plan.k, sizeof(k)), 0);
  /* Other sizes: solved again (two 230s are worth what a 500 is: K itself stays). */
  it[1].size = 500;
  cr_assert_not(sf__plan_set(&plan, it, 3));
  cr_assert(plan.solved);
  cr_assert_eq(plan.size[1], 500, "the LP of the new sizes");
  /* The weights of a mix with no 810 at all: the GPUs' worth moves to what packs them. */
  plan_item_t two[2] = {{320, 1}, {650, 1}};
  cr_assert(sf__plan_set(&plan, two, 2));
  cr_assert_eq(plan.k[1000], 970 * PLAN_ONE, "a 650 and a 320 fill a GPU best");
  free(plan.binv);
}

Test(plan, no_items_no_plan)
{
  plan_item_t it[1] = {{470, 1}};
  memset(&plan, 0, sizeof(plan));
  cr_assert(sf__plan_set(&plan, it, 1));
  cr_assert_gt(plan.k[1000], 0);
  cr_assert(sf__plan_set(&plan, NULL, 0), "an empty plan replaces another");
  cr_assert_not(sf__plan_set(&plan, NULL, 0), "and stands");
  for (int c = 0; c <= PLAN_CELLS; c++)
    cr_assert_eq(plan.k[c], 0);
  cr_assert_eq(sf__plan_loss(&plan, 1000, 10), 0.0);
  free(plan.binv);
}
