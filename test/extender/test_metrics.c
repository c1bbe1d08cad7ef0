/*
 * The filter verdicts' counts by outcome and reason class (extender/metrics.c),
 * without a server: each verdict is counted under the class named by the
 * reason code the packer made its sentence from, whatever the sentence says.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../extender/ext_int.h"

static void verdict(sf_verdict_t *v, sf_fit_t fit, sf_reason_code_t code, const char *reason)
{
  memset(v, 0, sizeof(*v));
  v->fit = fit;
  v->code = code;
  snprintf(v->reason, sizeof(v->reason), "%s", reason);
}

/* Every code lands in its own class, under its own label; none in "other". */
Test(metrics, every_reason_code_lands_in_its_class)
{
  enum { N = 2 * SF_REASON_COUNT };
  sf_verdict_t v[N];
  for (int c = 0; c < SF_REASON_COUNT; c++) {
    sf_fit_t fit = c == SF_REASON_NONE ? SF_FIT_YES : SF_FIT_NO;
    /* The same sentence for every code: the class comes from the code alone. */
    verdict(&v[2 * c], fit, (sf_reason_code_t)c, "needs 6Gi of memory; the most free is 4Gi");
    verdict(&v[2 * c + 1], c == SF_REASON_NONE ? SF_FIT_YES : SF_FIT_UNSURE, (sf_reason_code_t)c, "");
  }
  uint64_t tab[3][SF__NREASON + 1] = {{0}};
  size_t counts[3] = {0, 0, 0};
  sf__verdicts_count(tab, v, N, counts);
  cr_assert_eq(counts[SF_FIT_YES], 2);
  cr_assert_eq(counts[SF_FIT_NO], SF_REASON_COUNT - 1);
  cr_assert_eq(tab[SF_FIT_YES][0], 2);
  for (int c = 1; c < SF_REASON_COUNT; c++) {
    cr_assert_eq(sf__reason_class(&v[2 * c]), (size_t)c);
    cr_assert_eq(tab[SF_FIT_NO][c], 1, "code %s", sf_reason_code_name((sf_reason_code_t)c));
    cr_assert_eq(tab[SF_FIT_UNSURE][c], 1);
  }
  cr_assert_eq(tab[SF_FIT_NO][SF__NREASON], 0, "a coded reason was counted as other");
  sf__buf_t b = {0};
  sf__metrics_verdicts(&b, (const uint64_t(*)[SF__NREASON + 1]) tab);
  for (int c = 1; c < SF_REASON_COUNT; c++) {
    char line[160];
    snprintf(line, sizeof line, "slicefit_filter_verdicts_total{outcome=\"no\",reason=\"%s\"} 1\n",
             sf_reason_code_name((sf_reason_code_t)c));
    cr_assert(strstr(b.p, line), "no line %s in:\n%s", line, b.p);
  }
  cr_assert(strstr(b.p, "{outcome=\"no\",reason=\"other\"} 0\n"), "%s", b.p);
  cr_assert(strstr(b.p, "{outcome=\"fit\",reason=\"none\"} 2\n"), "%s", b.p);
  sf__buf_dispose(&b);
}

/* A NO verdict without a code (never made by the packer) is "other", not a guess from its text. */
Test(metrics, uncoded_verdict_is_other)
{
  sf_verdict_t v;
  verdict(&v, SF_FIT_NO, SF_REASON_NONE, "matching devices already have 4 sharers");
  cr_assert_eq(sf__reason_class(&v), SF__NREASON);
  verdict(&v, SF_FIT_NO, SF_REASON_COUNT, "x");
  cr_assert_eq(sf__reason_class(&v), SF__NREASON);
}

/* ---- allocation by namespace ---- */

static double value_of(const char *text, const char *line_start)
{
  const char *p = strstr(text, line_start);
  cr_assert_not_null(p, "no line %s in:\n%s", line_start, text);
  return strtod(p + strlen(line_start), NULL);
}

static size_t lines_of(const char *text, const char *prefix)
{
  size_t n = 0;
  for (const char *p = text; (p = strstr(p, prefix)) != NULL; p++)
    n += p == text || p[-1] == '\n';
  return n;
}

/* The example cluster, plus 12 namespaces holding one H100 each (h100-1's gpu-0..7, h100-2's 0..3). */
static sf_cluster_t *tenants_cluster(void)
{
  char err[256];
  json_t *list = json_load_file("extender/example-cluster.json", 0, NULL);
  cr_assert_not_null(list, "run from the repository's top");
  sf_cluster_t *c = sf_cluster_create(NULL);
  cr_assert_eq(sf_cluster_load_list(c, list, err, sizeof err), 0, "%s", err);
  json_decref(list);
  for (int k = 0; k < 12; k++) {
    char ns[16], pool[16], dev[16];
    snprintf(ns, sizeof ns, "ns-%02d", k);
    snprintf(pool, sizeof pool, "h100-%d", k < 8 ? 1 : 2);
    snprintf(dev, sizeof dev, "gpu-%d", k % 8);
    json_t *claim = json_pack("{s:s,s:s,s:{s:s,s:s,s:s},s:{s:{s:[{s:s,s:{s:s,s:i,s:s}}]}},"
                              "s:{s:{s:{s:[{s:s,s:s,s:s,s:s}]}}}}",
                              "apiVersion", "resource.k8s.io/v1", "kind", "ResourceClaim", "metadata",
                              "name", "gpu", "namespace", ns, "uid", ns, "spec", "devices",
                              "requests", "name", "gpu", "exactly", "allocationMode", "ExactCount",
                              "count", 1, "deviceClassName", "gpu-h100", "status", "allocation",
                              "devices", "results", "device", dev, "driver", "gpu.nvidia.com", "pool",
                              pool, "request", "gpu");
    cr_assert_eq(sf_cluster_apply(c, SF_KIND_UNKNOWN, claim, err, sizeof err), 0, "%s", err);
    json_decref(claim);
  }
  return c;
}

/* Top 10 namespaces by devices held, the rest as other; the sums are the cluster's. */
Test(metrics, allocation_by_namespace_is_bounded_and_priced)
{
  sf_cluster_t *c = tenants_cluster();
  sf_packer_t *pk = sf_packer_create();
  sf__buf_t b = {0};
  sf__metrics_cluster(&b, c, pk, NULL);
  sf__metrics_tenants(&b, c, 205.0);
  const char *text = b.p;
  /* train: a 4-GPU claim and one whole A100; tenants: 5 claims on shared RTX cards. */
  cr_assert_float_eq(value_of(text, "slicefit_namespace_devices_allocated{namespace=\"train\"} "),
                     5.0, 1e-9);
  cr_assert_float_eq(value_of(text, "slicefit_namespace_claims_allocated{namespace=\"train\"} "), 2.0,
                     1e-9);
  cr_assert_float_eq(value_of(text, "slicefit_namespace_monthly_cost{namespace=\"train\"} "),
                     5.0 * 205.0, 1e-6);
  /* 14 namespaces: 10 series of their own, and other with the last 4 (ns-08..ns-11, by name). */
  cr_assert_eq(lines_of(text, "slicefit_namespace_devices_allocated{"), 11, "%s", text);
  cr_assert_eq(lines_of(text, "slicefit_namespace_monthly_cost{"), 11);
  cr_assert_not_null(strstr(text, "slicefit_namespace_devices_allocated{namespace=\"ns-07\"} 1\n"));
  cr_assert_null(strstr(text, "namespace=\"ns-08\""));
  cr_assert_float_eq(value_of(text, "slicefit_namespace_devices_allocated{namespace=\"other\"} "),
                     4.0, 1e-9);
  cr_assert_float_eq(value_of(text, "slicefit_namespace_claims_allocated{namespace=\"other\"} "), 4.0,
                     1e-9);
  /* Every device-equivalent held is some namespace's. */
  double sum = 0;
  for (const char *p = text; (p = strstr(p, "\nslicefit_namespace_devices_allocated{")) != NULL; p++)
    sum += strtod(strchr(p, '}') + 1, NULL);
  cr_assert_float_eq(sum, value_of(text, "\nslicefit_cluster_devices_allocated "), 1e-6);
  /* Without a price, no cost series. */
  sf__buf_t nb = {0};
  sf__metrics_tenants(&nb, c, 0);
  cr_assert_null(strstr(nb.p, "monthly_cost"));
  sf__buf_dispose(&nb);
  sf__buf_dispose(&b);
  sf_packer_destroy(pk);
  sf_cluster_destroy(c);
}

/* Per node pool and model: the pool from a Node label, the sums the cluster's. */
Test(metrics, allocation_by_pool_and_model)
{
  sf_cluster_t *c = tenants_cluster();
  char err[256];
  json_t *node = json_pack("{s:s,s:s,s:{s:s,s:{s:s}},s:{s:{s:s,s:s}}}", "apiVersion", "v1", "kind",
                           "Node", "metadata", "name", "h100-1", "labels", "karpenter.sh/nodepool",
                           "h100-pool", "status", "allocatable", "cpu", "64", "memory", "512Gi");
  cr_assert_eq(sf_cluster_apply(c, SF_KIND_NODE, node, err, sizeof err), 0, "%s", err);
  json_decref(node);
  sf_packer_t *pk = sf_packer_create();
  sf__buf_t b = {0};
  sf__metrics_cluster(&b, c, pk, NULL);
  const char *h100 = "model=\"NVIDIA H100 80GB HBM3\"} ";
  char line[160];
  snprintf(line, sizeof line, "slicefit_pool_devices_allocated{pool=\"h100-pool\",%s", h100);
  cr_assert_float_eq(value_of(b.p, line), 8.0, 1e-9, "h100-1's eight GPUs, one per ns-00..07");
  snprintf(line, sizeof line, "slicefit_pool_devices{pool=\"h100-pool\",%s", h100);
  cr_assert_float_eq(value_of(b.p, line), 8.0, 1e-9);
  snprintf(line, sizeof line, "slicefit_pool_devices{pool=\"none\",%s", h100);
  cr_assert_float_eq(value_of(b.p, line), 24.0, 1e-9);
  double sum = 0;
  for (const char *p = b.p; (p = strstr(p, "\nslicefit_pool_devices_allocated{")) != NULL; p++)
    sum += strtod(strchr(p, '}') + 1, NULL);
  cr_assert_float_eq(sum, value_of(b.p, "\nslicefit_cluster_devices_allocated "), 1e-6);
  /* An explicit label that no Node has: every node in pool none. */
  sf__buf_t nb = {0};
  sf__metrics_cluster(&nb, c, pk, "example.com/pool");
  cr_assert_null(strstr(nb.p, "h100-pool"));
  sf__buf_dispose(&nb);
  sf__buf_dispose(&b);
  sf_packer_destroy(pk);
  sf_cluster_destroy(c);
}
