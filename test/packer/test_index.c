/* The index: exact free amounts, counters, retirement, invariants. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include "cluster.h"
#include "slicefit/policy.h"

Test(index, nodes_devices_and_lookup)
{
  sf_index_t *idx = sf_index_create();
  sf_node_id n = tc_node(idx, "node-a", 4, "NVIDIA A100", 40 * GiB, true);
  cr_assert_eq(sf_index_node_find(idx, "node-a"), n);
  cr_assert_eq(sf_index_node_find(idx, "nope"), -1);
  size_t nd;
  const sf_dev_id *devs = sf_index_node_devices(idx, n, &nd);
  cr_assert_eq(nd, 4);
  cr_assert_str_eq(sf_index_dev_name(idx, devs[2]), "gpu-2");
  cr_assert_eq(sf_index_dev_find(idx, DRV, "node-a", "gpu-3"), devs[3]);
  const sf_attr_t *a = sf_index_dev_attr(idx, devs[0], DRV "/productName");
  cr_assert_not_null(a);
  cr_assert_str_eq(a->s, "NVIDIA A100");
  sf_milli_t v, f;
  cr_assert_str_eq(sf_index_dev_cap(idx, devs[1], 0, &v, &f), DRV "/memory");
  cr_assert_eq(v, 40 * GiB);
  cr_assert_eq(f, 40 * GiB);
  cr_assert_eq(sf_index_dev_free_permille(idx, devs[1]), 1000);
  tc_valid(idx);
  sf_index_destroy(idx);
}

Test(index, shared_allocations_are_exact)
{
  sf_index_t *idx = sf_index_create();
  sf_node_id n = tc_node(idx, "node-a", 2, "RTX", 20 * GiB, true);
  size_t nd;
  const sf_dev_id *devs = sf_index_node_devices(idx, n, &nd);
  sf_milli_t four = 4 * GiB, twenty = 20 * GiB;
  sf_pick_t p1 = {devs[0], &four, false}, p2 = {devs[0], &twenty, false};
  sf_alloc_id a1, a2;
  cr_assert_eq(sf_index_alloc_add(idx, "ns/c1", n, 0, 0, &p1, 1, 0, &a1), 0);
  tc_valid(idx);
  cr_assert_eq(sf_index_alloc_add(idx, "ns/c1", n, 0, 0, &p1, 1, 0, NULL), SF_EEXIST);
  /* 4 + 20 > 20: refused and nothing changes. */
  cr_assert_eq(sf_index_alloc_add(idx, "ns/c2", n, 0, 0, &p2, 1, 0, &a2), SF_ENOSPC);
  tc_valid(idx);
  sf_milli_t f;
  sf_index_dev_cap(idx, devs[0], 0, NULL, &f);
  cr_assert_eq(f, 16 * GiB);
  cr_assert_eq(sf_index_dev_free_permille(idx, devs[0]), 800);
  cr_assert_eq(sf_index_dev_holders(idx, devs[0]), 1);
  /* The API server is the truth: a forced allocation is recorded, free goes negative. */
  cr_assert_eq(sf_index_alloc_add(idx, "ns/c2", n, 0, 0, &p2, 1, SF_ALLOC_FORCE, &a2), 0);
  sf_index_dev_cap(idx, devs[0], 0, NULL, &f);
  cr_assert_eq(f, -4 * GiB);
  tc_valid(idx);
  cr_assert_eq(sf_index_alloc_remove(idx, a2), 0);
  cr_assert_eq(sf_index_alloc_remove(idx, a1), 0);
  cr_assert_eq(sf_index_alloc_remove(idx, a1), SF_ENOENT);
  sf_index_dev_cap(idx, devs[0], 0, NULL, &f);
  cr_assert_eq(f, 20 * GiB);
  cr_assert_eq(sf_index_alloc_count(idx), 0);
  tc_valid(idx);
  sf_index_destroy(idx);
}

Test(index, exclusive_devices_and_cpu)
{
  sf_index_t *idx = sf_index_create();
  sf_node_id n = tc_node(idx, "node-a", 1, "H100", 80 * GiB, false);
  sf_node_spec_t ns = {"node-a", 8000, 1LL << 34};
  cr_assert_eq(sf_index_node_upsert(idx, &ns, NULL), 0);
  size_t nd;
  const sf_dev_id *devs = sf_index_node_devices(idx, n, &nd);
  sf_pick_t p = {devs[0], NULL, false};
  cr_assert_eq(sf_index_alloc_add(idx, "a", n, 4000, 0, &p, 1, 0, NULL), 0);
  cr_assert_eq(sf_index_alloc_add(idx, "b", n, 0, 0, &p, 1, 0, NULL), SF_ENOSPC);
  cr_assert_eq(sf_index_alloc_add(idx, "c", n, 5000, 0, NULL, 0, 0, NULL), SF_ENOSPC);
  cr_assert_eq(sf_index_alloc_add(idx, "d", n, 4000, 0, NULL, 0, 0, NULL), 0);
  cr_assert_eq(sf_index_dev_free_permille(idx, devs[0]), 0);
  cr_assert_eq(sf_index_node_remove(idx, n), SF_EBUSY);
  tc_valid(idx);
  sf_index_destroy(idx);
}

/* Partitionable devices: a full GPU and two halves share counters. */
Test(index, shared_counters)
{
  sf_index_t *idx = sf_index_create();
  sf_node_id n;
  sf_node_spec_t ns = {"mig", 0, 0};
  sf_index_node_upsert(idx, &ns, &n);
  sf_counter_t cs[] = {{"gpu-0-counter-set", "memory", 40 * GiB}};
  sf_counter_use_t full = {"gpu-0-counter-set", "memory", 40 * GiB};
  sf_counter_use_t half = {"gpu-0-counter-set", "memory", 20 * GiB};
  sf_device_spec_t devs[] = {
      {"gpu-0", NULL, 0, NULL, 0, &full, 1, NULL, 0, false},
      {"gpu-0-mig-a", NULL, 0, NULL, 0, &half, 1, NULL, 0, false},
      {"gpu-0-mig-b", NULL, 0, NULL, 0, &half, 1, NULL, 0, false},
  };
  cr_assert_eq(sf_index_pool_set(idx, n, DRV, "mig", devs, 3, cs, 1), 0);
  sf_dev_id g = sf_index_dev_find(idx, DRV, "mig", "gpu-0");
  sf_dev_id a = sf_index_dev_find(idx, DRV, "mig", "gpu-0-mig-a");
  sf_dev_id b = sf_index_dev_find(idx, DRV, "mig", "gpu-0-mig-b");
  sf_pick_t pa = {a, NULL, false}, pb = {b, NULL, false}, pg = {g, NULL, false};
  sf_alloc_id ia;
  cr_assert_eq(sf_index_alloc_add(idx, "a", n, 0, 0, &pa, 1, 0, &ia), 0);
  cr_assert_eq(sf_index_alloc_add(idx, "g", n, 0, 0, &pg, 1, 0, NULL), SF_ENOSPC);
  cr_assert_eq(sf_index_alloc_add(idx, "b", n, 0, 0, &pb, 1, 0, NULL), 0);
  tc_valid(idx);
  /* A dangling counter set is rejected, leaving the pool as it was. */
  sf_counter_use_t bad = {"no-such-set", "memory", 1};
  sf_device_spec_t bdev = {"gpu-9", NULL, 0, NULL, 0, &bad, 1, NULL, 0, false};
  cr_assert_eq(sf_index_pool_set(idx, n, DRV, "mig", &bdev, 1, cs, 1), SF_EINVAL);
  cr_assert_eq(sf_index_dev_find(idx, DRV, "mig", "gpu-9"), -1);
  cr_assert(sf_index_dev_live(idx, a));
  sf_index_alloc_remove(idx, ia);
  tc_valid(idx);
  sf_index_destroy(idx);
}

Test(index, duplicate_device_names_rejected)
{
  sf_index_t *idx = sf_index_create();
  sf_node_id n;
  sf_node_spec_t ns = {"x", 0, 0};
  sf_index_node_upsert(idx, &ns, &n);
  sf_device_spec_t devs[] = {{"gpu-0", NULL, 0, NULL, 0, NULL, 0, NULL, 0, false},
                             {"gpu-0", NULL, 0, NULL, 0, NULL, 0, NULL, 0, false}};
  cr_assert_eq(sf_index_pool_set(idx, n, DRV, "x", devs, 2, NULL, 0), SF_EINVAL);
  size_t nd;
  sf_index_node_devices(idx, n, &nd);
  cr_assert_eq(nd, 0);
  sf_index_destroy(idx);
}

Test(index, oversized_devices_rejected)
{
  sf_index_t *idx = sf_index_create();
  sf_node_id n;
  sf_node_spec_t ns = {"x", 0, 0};
  sf_index_node_upsert(idx, &ns, &n);
  sf_capacity_t caps[SF_DEVICE_FIELDS_MAX + 1];
  char names[SF_DEVICE_FIELDS_MAX + 1][32];
  for (int i = 0; i <= SF_DEVICE_FIELDS_MAX; i++) {
    snprintf(names[i], sizeof(names[i]), DRV "/cap%d", i);
    caps[i] = (sf_capacity_t){names[i], 1000, false, {0}};
  }
  sf_device_spec_t d = {"gpu-0", NULL, 0, caps, SF_DEVICE_FIELDS_MAX + 1, NULL, 0, NULL, 0, true};
  cr_assert_eq(sf_index_pool_set(idx, n, DRV, "x", &d, 1, NULL, 0), SF_E2BIG);
  cr_assert_eq(sf_index_dev_find(idx, DRV, "x", "gpu-0"), -1);
  d.ncaps = SF_DEVICE_FIELDS_MAX;
  cr_assert_eq(sf_index_pool_set(idx, n, DRV, "x", &d, 1, NULL, 0), 0);
  tc_valid(idx);
  sf_index_destroy(idx);
}

/* A device that disappears from its slice while allocated is retired, then freed. */
Test(index, retire_and_republish)
{
  sf_index_t *idx = sf_index_create();
  sf_node_id n = tc_node(idx, "node-a", 2, "RTX", 20 * GiB, true);
  sf_dev_id d1 = sf_index_dev_find(idx, DRV, "node-a", "gpu-1");
  sf_milli_t two = 2 * GiB;
  sf_pick_t p = {d1, &two, false};
  sf_alloc_id a;
  cr_assert_eq(sf_index_alloc_add(idx, "c", n, 0, 0, &p, 1, 0, &a), 0);
  /* Republish with only gpu-0. */
  sf_capacity_t cap = {DRV "/memory", 20 * GiB, false, {0}};
  sf_device_spec_t only = {"gpu-0", NULL, 0, &cap, 1, NULL, 0, NULL, 0, true};
  cr_assert_eq(sf_index_pool_set(idx, n, DRV, "node-a", &only, 1, NULL, 0), 0);
  size_t nd;
  sf_index_node_devices(idx, n, &nd);
  cr_assert_eq(nd, 1);
  cr_assert_not(sf_index_dev_live(idx, d1));
  tc_valid(idx);
  cr_assert_eq(sf_index_alloc_remove(idx, a), 0);
  cr_assert_eq(sf_index_dev_find(idx, DRV, "node-a", "gpu-1"), -1);
  tc_valid(idx);
  /* Growing capacity keeps what is consumed. */
  sf_dev_id d0 = sf_index_dev_find(idx, DRV, "node-a", "gpu-0");
  sf_pick_t p0 = {d0, &two, false};
  cr_assert_eq(sf_index_alloc_add(idx, "c0", n, 0, 0, &p0, 1, 0, NULL), 0);
  cap.value = 24 * GiB;
  cr_assert_eq(sf_index_pool_set(idx, n, DRV, "node-a", &only, 1, NULL, 0), 0);
  sf_milli_t f;
  sf_index_dev_cap(idx, d0, 0, NULL, &f);
  cr_assert_eq(f, 22 * GiB);
  tc_valid(idx);
  cr_assert_eq(sf_index_pool_remove(idx, n, DRV, "node-a"), 0);
  tc_valid(idx);
  sf_index_destroy(idx);
}

Test(index, islands_from_the_map_and_attribute)
{
  sf_index_t *idx = sf_index_create();
  sf_node_id n = tc_node(idx, "a100-node", 4, "NVIDIA A100-SXM4-40GB", 40 * GiB, false);
  sf_policy_t pol;
  sf_policy_init(&pol);
  char err[200];
  cr_assert_eq(sf_policy_set(&pol, "island_map", "a100=2", err, sizeof(err)), 0, "%s", err);
  sf_index_apply_policy(idx, &pol);
  size_t nd;
  const sf_dev_id *d = sf_index_node_devices(idx, n, &nd);
  cr_assert_eq(sf_index_dev_island(idx, d[0]), sf_index_dev_island(idx, d[1]));
  cr_assert_eq(sf_index_dev_island(idx, d[2]), sf_index_dev_island(idx, d[3]));
  cr_assert_neq(sf_index_dev_island(idx, d[0]), sf_index_dev_island(idx, d[2]));
  cr_assert_geq(sf_index_dev_island(idx, d[0]), 0);
  /* By attribute: uuids all differ, so every device is its own island. */
  cr_assert_eq(sf_policy_set(&pol, "island_attribute", "uuid", err, sizeof(err)), 0, "%s", err);
  sf_index_apply_policy(idx, &pol);
  cr_assert_neq(sf_index_dev_island(idx, d[0]), sf_index_dev_island(idx, d[1]));
  sf_policy_dispose(&pol);
  sf_index_destroy(idx);
}

Test(index, taint_rules)
{
  sf_index_t *idx = sf_index_create();
  tc_node(idx, "n", 1, "RTX", 20 * GiB, true);
  sf_dev_id d = sf_index_dev_find(idx, DRV, "n", "gpu-0");
  sf_taint_t t = {"gpu.nvidia.com/xid", "79", SF_TAINT_NOSCHEDULE};
  cr_assert_eq(sf_index_taint_rule_add(idx, "rule-1", d, &t), 0);
  cr_assert_eq(sf_index_dev_ntaints(idx, d), 1);
  cr_assert_str_eq(sf_index_dev_taint(idx, d, 0)->value, "79");
  sf_index_taint_rule_clear(idx, "rule-1");
  cr_assert_eq(sf_index_dev_ntaints(idx, d), 0);
  sf_index_destroy(idx);
}

Test(index, mirrored_device_is_one_device_on_several_nodes)
{
  sf_index_t *idx = sf_index_create();
  sf_node_id home = tc_node(idx, "@net/fabric", 1, "NIC", 10 * GiB, true);
  sf_node_id a = tc_node(idx, "node-a", 1, "A100", 40 * GiB, false);
  sf_node_spec_t spec = {.name = "node-b"};
  sf_node_id b;
  cr_assert_eq(sf_index_node_upsert(idx, &spec, &b), 0);
  const char *names[] = {"gpu-0"};
  cr_assert_eq(sf_index_mirror_set(idx, a, DRV, "@net/fabric", names, 1), 0);
  cr_assert_eq(sf_index_mirror_set(idx, b, DRV, "@net/fabric", names, 1), 0);
  sf_dev_id d = sf_index_dev_find(idx, DRV, "@net/fabric", "gpu-0");
  size_t na, nb;
  sf_index_node_devices(idx, a, &na);
  const sf_dev_id *db = sf_index_node_devices(idx, b, &nb);
  cr_assert_eq(na, 2, "its own GPU and the mirrored one");
  cr_assert(nb == 1 && db[0] == d);
  /* An allocation through node-b holds the one device: node-a sees it taken. */
  sf_milli_t four = 4 * GiB;
  sf_pick_t pk = {d, &four, false};
  sf_alloc_id al;
  cr_assert_eq(sf_index_alloc_add(idx, "ns/c", b, 0, 0, &pk, 1, 0, &al), 0);
  cr_assert_eq(sf_index_dev_holders(idx, d), 1);
  sf_milli_t v, f;
  sf_index_dev_cap(idx, d, 0, &v, &f);
  cr_assert_eq(f, 6 * GiB);
  tc_valid(idx);
  /* The home pool republished (same device): still one device, still mirrored on both. */
  sf_device_spec_t spec2 = {.name = "gpu-0", .allow_multiple = true};
  sf_capacity_t cap = {DRV "/memory", 10 * GiB, false, {0}};
  spec2.caps = &cap;
  spec2.ncaps = 1;
  cr_assert_eq(sf_index_pool_set(idx, home, DRV, "@net/fabric", &spec2, 1, NULL, 0), 0);
  sf_index_node_devices(idx, b, &nb);
  cr_assert_eq(nb, 1);
  cr_assert_eq(sf_index_dev_find(idx, DRV, "@net/fabric", "gpu-0"), d);
  tc_valid(idx);
  /* Unmirrored from node-a; still offered on node-b. */
  cr_assert_eq(sf_index_mirror_set(idx, a, DRV, "@net/fabric", NULL, 0), 0);
  sf_index_node_devices(idx, a, &na);
  cr_assert_eq(na, 1);
  cr_assert_eq(sf_index_alloc_remove(idx, al), 0);
  /* The home pool going away takes the device off every node. */
  cr_assert_eq(sf_index_pool_remove(idx, home, DRV, "@net/fabric"), 0);
  sf_index_node_devices(idx, b, &nb);
  cr_assert_eq(nb, 0);
  tc_valid(idx);
  sf_index_destroy(idx);
}
