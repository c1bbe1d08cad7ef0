#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include "cluster.h"

static sf_node_id node_with(sf_index_t *idx, const char *name, int n, const char *model,
                            sf_milli_t mem, bool shared, const sf_request_policy_t *rp)
{
  sf_node_id id;
  sf_node_spec_t ns = {name, 0, 0};
  cr_assert_eq(sf_index_node_upsert(idx, &ns, &id), 0);
  sf_device_spec_t devs[16];
  sf_attr_t attrs[16][2];
  sf_capacity_t caps[16];
  char names[16][16], uuids[16][64];
  for (int i = 0; i < n; i++) {
    snprintf(names[i], sizeof(names[i]), "gpu-%d", i);
    snprintf(uuids[i], sizeof(uuids[i]), "GPU-%s-%d", name, i);
    attrs[i][0] = (sf_attr_t){DRV "/productName", SF_ATTR_STRING, 0, model};
    attrs[i][1] = (sf_attr_t){DRV "/uuid", SF_ATTR_STRING, 0, uuids[i]};
    caps[i] = (sf_capacity_t){DRV "/memory", mem, rp != NULL, rp ? *rp : (sf_request_policy_t){0}};
    devs[i] = (sf_device_spec_t){names[i], attrs[i], 2, &caps[i], 1, NULL, 0, NULL, 0, shared};
  }
  cr_assert_eq(sf_index_pool_set(idx, id, DRV, name, devs, (size_t)n, NULL, 0), 0);
  return id;
}

sf_node_id tc_node(sf_index_t *idx, const char *name, int n, const char *model, sf_milli_t mem,
                   bool shared)
{
  return node_with(idx, name, n, model, mem, shared, NULL);
}

sf_node_id tc_node_range(sf_index_t *idx, const char *name, int n, const char *model, sf_milli_t mem,
                         sf_milli_t min, sf_milli_t step)
{
  sf_request_policy_t rp = {0};
  rp.has_range = true;
  rp.min = min;
  rp.step = step;
  rp.max = mem;
  return node_with(idx, name, n, model, mem, true, &rp);
}

static sf_match_t by_driver(void *ctx, const sf_index_t *idx, sf_dev_id d)
{
  (void)ctx;
  return strcmp(sf_index_dev_driver(idx, d), DRV) == 0 ? SF_MATCH_YES : SF_MATCH_NO;
}

static sf_match_t unknown(void *ctx, const sf_index_t *idx, sf_dev_id d)
{
  (void)ctx;
  (void)idx;
  (void)d;
  return SF_MATCH_UNKNOWN;
}

static sf_match_t by_model(void *ctx, const sf_index_t *idx, sf_dev_id d)
{
  const sf_attr_t *a = sf_index_dev_attr(idx, d, DRV "/productName");
  return a && strcmp(a->s, ctx) == 0 ? SF_MATCH_YES : SF_MATCH_NO;
}

const sf_selector_t tc_sel_driver = {by_driver, NULL, 1};
const sf_selector_t tc_sel_unknown = {unknown, NULL, 0};

sf_selector_t tc_sel_model(const char *model)
{
  uint64_t h = 1469598103934665603ull;
  for (const char *s = model; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return (sf_selector_t){by_model, (void *)(uintptr_t)model, h | 2};
}

void tc_claim(tc_claim_t *c, uint32_t count, sf_milli_t mem)
{
  memset(c, 0, sizeof(*c));
  c->cap = (sf_cap_request_t){DRV "/memory", mem};
  c->req.name = "gpu";
  c->req.selectors = &tc_sel_driver;
  c->req.nselectors = 1;
  c->req.count = count;
  c->req.caps = mem ? &c->cap : NULL;
  c->req.ncaps = mem ? 1 : 0;
  c->claim = (sf_claim_t){"default/claim", &c->req, 1, NULL, 0};
  c->dem = (sf_demand_t){&c->claim, 1, 0, 0};
}

void tc_claim_island(tc_claim_t *c, uint32_t count)
{
  tc_claim(c, count, 0);
  c->con = (sf_constraint_t){SF_CONSTRAINT_ISLAND, NULL, NULL, 0};
  c->claim.cons = &c->con;
  c->claim.ncons = 1;
}

void tc_valid(const sf_index_t *idx)
{
  char why[256];
  int rc = sf_index_validate(idx, why, sizeof(why));
  cr_assert_eq(rc, 0, "index invalid: %s", why);
}
