/*
 * Tests of sf_index_validate (packer/index_validate.c): each invariant family it
 * checks is broken by hand, through the index's private layout, and the
 * checker must name it. The rest of the index's tests call it after every
 * mutation and expect it to pass.
 */
#include <criterion/criterion.h>
#include <string.h>
#include "../../packer/index_int.h"
#include "cluster.h"

typedef struct {
  sf_index_t *idx;
  sf_node_id node;
  sf_dev_id dev;
} fixture_t;

/* One node with two shared 20 GiB cards, 4 GiB of the first held by ns/c1. */
static fixture_t setup_one(void)
{
  fixture_t f = {sf_index_create(), 0, 0};
  f.node = tc_node(f.idx, "node-a", 2, "RTX", 20 * GiB, true);
  size_t nd;
  f.dev = sf_index_node_devices(f.idx, f.node, &nd)[0];
  static const sf_milli_t four = 4 * GiB;
  sf_pick_t p = {f.dev, &four, false};
  cr_assert_eq(sf_index_alloc_add(f.idx, "ns/c1", f.node, 1000, 0, &p, 1, 0, NULL), 0);
  tc_valid(f.idx);
  return f;
}

static void expect_broken(const sf_index_t *idx, const char *want)
{
  char err[256] = "";
  cr_assert_eq(sf_index_validate(idx, err, sizeof err), SF_EINVAL, "validate passed; want '%s'",
               want);
  cr_expect(strstr(err, want) != NULL, "'%s' lacks '%s'", err, want);
  cr_assert_eq(sf_index_validate(idx, NULL, 0), SF_EINVAL, "without a buffer too");
}

Test(index_validate, free_capacity)
{
  fixture_t f = setup_one();
  f.idx->devs[f.dev].caps[0].free += 1;
  expect_broken(f.idx, "capacity");
  f.idx->devs[f.dev].caps[0].free -= 1;
  tc_valid(f.idx);
  sf_index_destroy(f.idx);
}

Test(index_validate, holders)
{
  fixture_t f = setup_one();
  f.idx->devs[f.dev].holders++;
  expect_broken(f.idx, "holders counted");
  f.idx->devs[f.dev].holders--;
  tc_valid(f.idx);
  sf_index_destroy(f.idx);
}

Test(index_validate, node_cpu)
{
  fixture_t f = setup_one();
  f.idx->nodes[f.node].cpu_used += 1;
  expect_broken(f.idx, "node node-a: cpu/memory");
  f.idx->nodes[f.node].cpu_used -= 1;
  tc_valid(f.idx);
  sf_index_destroy(f.idx);
}

Test(index_validate, live_count)
{
  fixture_t f = setup_one();
  f.idx->live_allocs++;
  expect_broken(f.idx, "live allocations");
  f.idx->live_allocs--;
  tc_valid(f.idx);
  sf_index_destroy(f.idx);
}
