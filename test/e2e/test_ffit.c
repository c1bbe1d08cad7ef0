/* The test's own first-fit allocator and generator: they judge slicefit, so they are tested first. */
#include <criterion/criterion.h>
#include <string.h>
#include "e2e.h"

static e2e_pod_t pod(e2e_shape_t shape, const char *product)
{
  e2e_pod_t p;
  memset(&p, 0, sizeof p);
  p.shape = shape;
  p.product = product;
  p.share = shape == E2E_SHARE ? 4 * E2E_GI : 0;
  snprintf(p.name, sizeof p.name, "p");
  return p;
}

static e2e_node_t *node_named(e2e_cluster_t *c, const char *name)
{
  for (size_t i = 0; i < c->nnodes; i++)
    if (strcmp(c->nodes[i].name, name) == 0)
      return &c->nodes[i];
  cr_assert_fail("no node %s", name);
  return NULL;
}

Test(ffit, cluster_is_sorted_and_shaped)
{
  e2e_cluster_t c;
  e2e_cluster_make(&c);
  cr_assert_eq(c.nnodes, 12);
  size_t gpus = 0, shared = 0;
  for (size_t i = 0; i < c.nnodes; i++) {
    if (i)
      cr_assert_lt(strcmp(c.nodes[i - 1].name, c.nodes[i].name), 0);
    gpus += c.nodes[i].ndevs;
    shared += c.nodes[i].devs[0].shared;
  }
  cr_assert_eq(gpus, 2 * 8 + 3 * 4 + 7);
  cr_assert_eq(shared, 7);
}

Test(ffit, rounding_follows_the_request_policy)
{
  e2e_dev_t d = {.shared = true,
                 .mem = 20 * E2E_GI,
                 .pol_default = 20 * E2E_GI,
                 .pol_min = E2E_GI,
                 .pol_step = E2E_GI,
                 .pol_max = 20 * E2E_GI};
  cr_assert_eq(e2e_round(&d, 4 * E2E_GI), 4 * E2E_GI);
  cr_assert_eq(e2e_round(&d, 1536 * E2E_MI), 2 * E2E_GI); /* up to the next step */
  cr_assert_eq(e2e_round(&d, 100 * E2E_MI), E2E_GI);      /* below min: min */
  cr_assert_eq(e2e_round(&d, 0), 20 * E2E_GI);            /* unnamed: the default */
  cr_assert_eq(e2e_round(&d, 20 * E2E_GI + 1), -1);       /* above max: ineligible */
  d.pol_min = 2 * E2E_GI;
  d.pol_step = 3 * E2E_GI;
  cr_assert_eq(e2e_round(&d, 4 * E2E_GI), 5 * E2E_GI); /* min + n*step */
}

Test(ffit, shares_fill_a_card_then_stop)
{
  e2e_cluster_t c;
  e2e_cluster_make(&c);
  e2e_node_t *n = node_named(&c, "gpu-rtx-0");
  e2e_pod_t p = pod(E2E_SHARE, NULL);
  e2e_alloc_t a;
  cr_assert_eq(n->devs[0].mem, 20475 * E2E_MI);
  for (int i = 0; i < 4; i++) {
    cr_assert(e2e_ffit(n, &p, &a), "share %d", i);
    cr_assert_eq(a.n, 1);
    cr_assert_eq(a.consumed[0], 4 * E2E_GI);
    e2e_ffit_take(n, &a);
  }
  cr_assert_not(e2e_ffit(n, &p, &a));
  cr_assert_eq(n->devs[0].used, 16 * E2E_GI);
  /* 4091Mi are left: 4000Mi would fit as asked, but it is rounded up to 4Gi first. */
  p.share = 4000 * E2E_MI;
  cr_assert_eq(e2e_round(&n->devs[0], p.share), 4 * E2E_GI);
  cr_assert_not(e2e_ffit(n, &p, &a), "4000Mi rounds to 4Gi, more than the 4091Mi left");
  p.share = 3 * E2E_GI;
  cr_assert(e2e_ffit(n, &p, &a));
  /* A share never lands on an exclusive card, nor a whole card on a shared one. */
  cr_assert_not(e2e_ffit(node_named(&c, "gpu-h100-0"), &p, &a));
  e2e_pod_t w = pod(E2E_WHOLE, n->devs[0].product);
  cr_assert_not(e2e_ffit(node_named(&c, "gpu-rtx-1"), &w, &a));
}

Test(ffit, whole_cards_first_fit_in_slice_order)
{
  e2e_cluster_t c;
  e2e_cluster_make(&c);
  e2e_node_t *n = node_named(&c, "gpu-a100-1");
  e2e_pod_t p = pod(E2E_WHOLE, n->devs[0].product);
  e2e_alloc_t a, b;
  cr_assert(e2e_ffit(n, &p, &a));
  cr_assert_eq(a.dev[0], 0);
  e2e_ffit_take(n, &a);
  cr_assert(e2e_ffit(n, &p, &b));
  cr_assert_eq(b.dev[0], 1);
  e2e_ffit_give(n, &a);
  cr_assert(e2e_ffit(n, &p, &a));
  cr_assert_eq(a.dev[0], 0);
  /* The wrong model never fits. */
  e2e_pod_t h = pod(E2E_WHOLE, "NVIDIA H100 80GB HBM3");
  cr_assert_not(e2e_ffit(n, &h, &a));
}

Test(ffit, pairs_take_two_free_cards_of_the_model)
{
  e2e_cluster_t c;
  e2e_cluster_make(&c);
  e2e_node_t *n = node_named(&c, "gpu-h100-0");
  e2e_pod_t p = pod(E2E_PAIR, n->devs[0].product);
  e2e_alloc_t a;
  n->devs[0].nalloc = n->devs[2].nalloc = 1;
  cr_assert(e2e_ffit(n, &p, &a));
  cr_assert_eq(a.n, 2);
  cr_assert_eq(a.dev[0], 1);
  cr_assert_eq(a.dev[1], 3);
  for (size_t i = 0; i < n->ndevs; i++)
    n->devs[i].nalloc = i != 5;
  cr_assert_not(e2e_ffit(n, &p, &a), "one free card is not a pair");
  cr_assert_not(e2e_ffit(node_named(&c, "gpu-a100-0"), &p, &a), "A100 is not the model asked");
}

Test(ffit, generated_objects_have_the_api_shape)
{
  e2e_cluster_t c;
  e2e_cluster_make(&c);
  json_t *slices = e2e_cluster_slices(&c);
  cr_assert_eq(json_array_size(slices), 12);
  json_t *s = json_array_get(slices, 11);
  cr_assert_str_eq(json_string_value(json_object_get(json_object_get(s, "spec"), "nodeName")),
                   "gpu-rtx-6");
  json_t *dev = json_array_get(json_object_get(json_object_get(s, "spec"), "devices"), 0);
  cr_assert(json_is_true(json_object_get(dev, "allowMultipleAllocations")));
  json_t *mem = json_object_get(json_object_get(dev, "capacity"), "memory");
  cr_assert_str_eq(json_string_value(json_object_get(mem, "value")), "20475Mi");
  cr_assert_str_eq(json_string_value(
                       json_object_get(json_object_get(mem, "requestPolicy"), "default")),
                   "19Gi");
  cr_assert_str_eq(json_string_value(
                       json_object_get(json_object_get(json_object_get(mem, "requestPolicy"),
                                                       "validRange"),
                                       "step")),
                   "1Gi");
  json_decref(slices);

  e2e_pod_t pods[50];
  e2e_pods_make(pods, 50, 7);
  size_t shapes[3] = {0};
  for (size_t i = 0; i < 50; i++) {
    shapes[pods[i].shape]++;
    cr_assert_gt(pods[i].until, pods[i].at);
    if (i)
      cr_assert_gt(pods[i].at, pods[i - 1].at);
  }
  cr_assert(shapes[0] && shapes[1] && shapes[2], "every shape appears");
  e2e_pod_t again[50];
  e2e_pods_make(again, 50, 7);
  cr_assert_eq(memcmp(pods, again, sizeof pods), 0, "same seed, same pods");
  json_t *claim = e2e_claim_json(&pods[0]);
  cr_assert_str_eq(json_string_value(json_object_get(json_object_get(claim, "metadata"), "name")),
                   pods[0].claim);
  json_decref(claim);
}
