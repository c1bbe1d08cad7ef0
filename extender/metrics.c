/*
 * Prometheus text exposition (format 0.0.4) of the extender's requests and
 * of the cluster it holds. Request counters are updated on the loop as each
 * response is queued; cluster figures are computed at scrape time from the
 * index, which costs O(devices) plus the fragmentation of each node.
 */
#include <stdio.h>
#include <string.h>
#include "ext_int.h"

/*
 * Seconds: from 50 µs (an empty pod) to 5 s (kube-scheduler's default
 * httpTimeout); 1.5 and 2 let histogram_quantile see a p99 near the 2 s
 * the shipped scheduler config sets (the SlicefitFilterSlow alert).
 */
static const double bounds[SF__NBUCKETS] = {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.002,
                                            0.005,   0.01,   0.025,   0.05,   0.1,   0.25,
                                            0.5,     1.0,    1.5,     2.0,    5.0};

void sf__stats_record(sf__verb_stats_t *st, unsigned status, double secs)
{
  size_t b = 0;
  while (b < SF__NBUCKETS && secs > bounds[b])
    b++;
  if (b < SF__NBUCKETS)
    st->buckets[b]++;
  st->count++;
  st->sum_s += secs;
  for (size_t i = 0; i < SF__NCODES; i++) {
    if (st->codes[i] == status || st->codes[i] == 0) {
      st->codes[i] = status;
      st->code_count[i]++;
      return;
    }
  }
  st->code_other++;
}

static void put_verb(sf__buf_t *b, const sf__verb_stats_t *st)
{
  for (size_t i = 0; i < SF__NCODES && st->codes[i]; i++)
    sf__buf_printf(b, "slicefit_http_requests_total{verb=\"%s\",code=\"%u\"} %llu\n", st->verb,
                   st->codes[i], (unsigned long long)st->code_count[i]);
  if (st->code_other)
    sf__buf_printf(b, "slicefit_http_requests_total{verb=\"%s\",code=\"other\"} %llu\n", st->verb,
                   (unsigned long long)st->code_other);
}

static void put_hist(sf__buf_t *b, const sf__verb_stats_t *st)
{
  uint64_t cum = 0;
  for (size_t i = 0; i < SF__NBUCKETS; i++) {
    cum += st->buckets[i];
    sf__buf_printf(b, "slicefit_http_request_duration_seconds_bucket{verb=\"%s\",le=\"%g\"} %llu\n",
                   st->verb, bounds[i], (unsigned long long)cum);
  }
  sf__buf_printf(b, "slicefit_http_request_duration_seconds_bucket{verb=\"%s\",le=\"+Inf\"} %llu\n",
                 st->verb, (unsigned long long)st->count);
  sf__buf_printf(b, "slicefit_http_request_duration_seconds_sum{verb=\"%s\"} %.9f\n", st->verb,
                 st->sum_s);
  sf__buf_printf(b, "slicefit_http_request_duration_seconds_count{verb=\"%s\"} %llu\n", st->verb,
                 (unsigned long long)st->count);
}

void sf__metrics_requests(sf__buf_t *b, const sf__verb_stats_t *st, size_t n)
{
  sf__buf_puts(b, "# HELP slicefit_http_requests_total HTTP requests answered, by verb and "
                  "status code.\n# TYPE slicefit_http_requests_total counter\n");
  for (size_t i = 0; i < n; i++)
    put_verb(b, &st[i]);
  sf__buf_puts(b, "# HELP slicefit_http_request_duration_seconds Time from a request's headers "
                  "to its response, by verb.\n"
                  "# TYPE slicefit_http_request_duration_seconds histogram\n");
  for (size_t i = 0; i < n; i++)
    put_hist(b, &st[i]);
}

static void put_gauge(sf__buf_t *b, const char *name, const char *help, double v)
{
  sf__buf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n%s %.10g\n", name, help, name, name, v);
}

static void put_sizes(sf__buf_t *b, sf_cluster_t *c)
{
  const sf_index_t *idx = sf_cluster_index(c);
  size_t ndev = 0;
  for (sf_dev_id d = 0; d < sf_index_dev_end(idx); d++)
    ndev += sf_index_dev_live(idx, d);
  put_gauge(b, "slicefit_index_nodes", "Nodes in the index.", (double)sf_index_node_count(idx));
  put_gauge(b, "slicefit_index_devices", "Devices offered in the index.", (double)ndev);
  put_gauge(b, "slicefit_index_allocations", "Allocations (claims holding devices) in the index.",
            (double)(sf_index_alloc_count(idx) - sf_cluster_pod_allocations(c)));
  put_gauge(b, "slicefit_index_bytes", "Heap bytes the index holds.",
            (double)sf_index_mem_bytes(idx));
  put_gauge(b, "slicefit_pools_invalid",
            "Resource pools invalid for some node (duplicate devices, unknown counter sets); "
            "/debug/state says which and why.",
            (double)sf_cluster_invalid_pools(c));
  sf__buf_puts(b, "# HELP slicefit_objects Kubernetes objects held, by kind.\n"
                  "# TYPE slicefit_objects gauge\n");
  for (int k = SF_KIND_UNKNOWN + 1; k < SF_KIND_COUNT; k++)
    sf__buf_printf(b, "slicefit_objects{kind=\"%s\"} %zu\n", sf_kind_name((sf_kind_t)k),
                   sf_cluster_count(c, (sf_kind_t)k));
  sf__buf_puts(b, "# HELP slicefit_objects_rejected_total Objects refused as bad input (snapshot or "
                  "watch), by kind; each is logged as \"object rejected\".\n"
                  "# TYPE slicefit_objects_rejected_total counter\n");
  for (int k = SF_KIND_UNKNOWN + 1; k < SF_KIND_COUNT; k++)
    sf__buf_printf(b, "slicefit_objects_rejected_total{kind=\"%s\"} %llu\n",
                   sf_kind_name((sf_kind_t)k),
                   (unsigned long long)sf_cluster_rejected(c, (sf_kind_t)k));
}

typedef struct {
  double devices, used, frag, starved;
} node_fig_t;

/* A node's devices, the device-equivalents allocated on them, FGD's fragmentation, what CPU starves. */
static node_fig_t node_figures(sf_cluster_t *c, sf_packer_t *pk, sf_node_id node)
{
  sf_index_t *idx = sf_cluster_index(c);
  node_fig_t f = {0};
  size_t n;
  const sf_dev_id *devs = sf_index_node_devices(idx, node, &n);
  for (size_t i = 0; i < n; i++) {
    if (!sf_index_dev_live(idx, devs[i]))
      continue;
    f.devices += 1;
    f.used += (1000.0 - sf_index_dev_free_permille(idx, devs[i])) / 1000.0;
  }
  f.frag = n ? sf_packer_node_frag(pk, idx, sf_cluster_policy(c), node) / 1000.0 : 0;
  f.starved = n ? sf_packer_node_starved(pk, idx, sf_cluster_policy(c), node) / 1000.0 : 0;
  return f;
}

static void put_node_line(sf__buf_t *b, const char *metric, const char *node, double v)
{
  sf__buf_printf(b, "%s{node=", metric);
  sf__buf_json_str(b, node); /* a node name is a DNS subdomain: no escapes in practice */
  sf__buf_printf(b, "} %.6g\n", v);
}

/* ---- by node pool and GPU model ---- */

/* Node labels that name a node pool, first found wins, when --node-pool-label is not given. */
static const char *const pool_labels[] = {"karpenter.sh/nodepool", "cloud.google.com/gke-nodepool",
                                          "eks.amazonaws.com/nodegroup",
                                          "kubernetes.azure.com/agentpool"};

static const char *node_pool(sf_cluster_t *c, const char *node, const char *label)
{
  const char *v = NULL;
  if (label && *label)
    v = sf_cluster_node_label(c, node, label);
  else
    for (size_t i = 0; v == NULL && i < sizeof pool_labels / sizeof *pool_labels; i++)
      v = sf_cluster_node_label(c, node, pool_labels[i]);
  return v && *v ? v : "none";
}

/* agg["pool\tmodel"] += {devices, allocated, fragmentation}. */
static void agg_add(json_t *agg, const char *pool, const char *model, double dev, double used,
                    double frag)
{
  char key[512];
  snprintf(key, sizeof key, "%s\t%s", pool, model && *model ? model : "unknown");
  json_t *a = json_object_get(agg, key);
  if (a == NULL) {
    a = json_pack("[f,f,f]", 0.0, 0.0, 0.0);
    json_object_set_new(agg, key, a);
  }
  const double add[3] = {dev, used, frag};
  for (size_t i = 0; i < 3; i++)
    json_array_set_new(a, i, json_real(json_real_value(json_array_get(a, i)) + add[i]));
}

/* A node's devices by model into agg; its fragmentation under the model of its first device. */
static void agg_node(json_t *agg, sf_cluster_t *c, sf_node_id node, double frag, const char *label)
{
  sf_index_t *idx = sf_cluster_index(c);
  const char *pool = node_pool(c, sf_index_node_name(idx, node), label), *first = NULL;
  size_t n;
  const sf_dev_id *devs = sf_index_node_devices(idx, node, &n);
  for (size_t i = 0; i < n; i++) {
    if (!sf_index_dev_live(idx, devs[i]))
      continue;
    const char *model = sf_index_str(idx, sf_index_dev_model(idx, devs[i]));
    first = first ? first : model;
    agg_add(agg, pool, model, 1, (1000.0 - sf_index_dev_free_permille(idx, devs[i])) / 1000.0, 0);
  }
  if (first)
    agg_add(agg, pool, first, 0, 0, frag);
}

static void put_pools(sf__buf_t *b, json_t *agg)
{
  static const char *const names[3] = {"slicefit_pool_devices", "slicefit_pool_devices_allocated",
                                       "slicefit_pool_fragmentation_devices"};
  static const char *const helps[3] =
      {"Devices offered, by node pool (--node-pool-label) and GPU model.",
       "Devices allocated, shared devices by the share used, by node pool and GPU model.",
       "Free device capacity the expected workload cannot use (FGD), in devices, by node pool "
       "and the GPU model of each node's first device."};
  for (size_t m = 0; m < 3; m++) {
    sf__buf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n", names[m], helps[m], names[m]);
    const char *k;
    json_t *v;
    json_object_foreach(agg, k, v)
    {
      const char *tab = strchr(k, '\t');
      sf__buf_printf(b, "%s{pool=", names[m]);
      char pool[256];
      snprintf(pool, sizeof pool, "%.*s", (int)(tab - k), k);
      sf__buf_json_str(b, pool);
      sf__buf_puts(b, ",model=");
      sf__buf_json_str(b, tab + 1);
      sf__buf_printf(b, "} %.6g\n", json_real_value(json_array_get(v, m)));
    }
  }
}

void sf__metrics_cluster(sf__buf_t *b, sf_cluster_t *c, sf_packer_t *pk, const char *pool_label)
{
  sf_index_t *idx = sf_cluster_index(c);
  put_sizes(b, c);
  static const char *const names[3] = {"slicefit_node_devices", "slicefit_node_devices_allocated",
                                       "slicefit_node_fragmentation_devices"};
  static const char *const helps[3] =
      {"Devices the node offers.",
       "Devices allocated on the node, shared devices counted by the share of their capacity used.",
       "Free device capacity the expected workload cannot use (FGD), in devices."};
  node_fig_t tot = {0};
  sf__buf_t parts[3] = {{0}};
  json_t *agg = json_object();
  for (sf_node_id nd = 0; nd < sf_index_node_end(idx); nd++) {
    if (!sf_index_node_live(idx, nd))
      continue;
    node_fig_t f = node_figures(c, pk, nd);
    const char *name = sf_index_node_name(idx, nd);
    put_node_line(&parts[0], names[0], name, f.devices);
    put_node_line(&parts[1], names[1], name, f.used);
    put_node_line(&parts[2], names[2], name, f.frag);
    tot.devices += f.devices;
    tot.used += f.used;
    tot.frag += f.frag;
    tot.starved += f.starved;
    agg_node(agg, c, nd, f.frag, pool_label);
  }
  put_pools(b, agg);
  json_decref(agg);
  for (int i = 0; i < 3; i++) {
    sf__buf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n", names[i], helps[i], names[i]);
    if (parts[i].len)
      sf__buf_put(b, parts[i].p, parts[i].len);
    sf__buf_dispose(&parts[i]);
  }
  put_gauge(b, "slicefit_cluster_devices", "Devices in the cluster.", tot.devices);
  put_gauge(b, "slicefit_cluster_devices_allocated", "Devices allocated in the cluster.", tot.used);
  put_gauge(b, "slicefit_cluster_fragmentation_devices",
            "Free device capacity the expected workload cannot use (FGD), in devices.", tot.frag);
  put_gauge(b, "slicefit_cluster_devices_starved",
            "Free device capacity a one-device claim of the expected workload fits but its "
            "node's free CPU cannot feed, in devices.",
            tot.starved);
}

/* ---- filter verdicts: how often slicefit narrows what DRA allowed ---- */

/*
 * The class of a verdict is the reason code the packer made its sentence
 * from (slicefit/packer.h); a NO or UNSURE verdict without one, which the
 * packer never gives, is counted as "other".
 */
size_t sf__reason_class(const sf_verdict_t *v)
{
  if (v->fit == SF_FIT_YES)
    return 0;
  return v->code > SF_REASON_NONE && v->code < SF_REASON_COUNT ? (size_t)v->code : SF__NREASON;
}

void sf__verdicts_count(uint64_t (*tab)[SF__NREASON + 1], const sf_verdict_t *v, size_t n,
                        size_t counts[3])
{
  for (size_t i = 0; i < n; i++) {
    tab[v[i].fit][sf__reason_class(&v[i])]++;
    counts[v[i].fit]++;
  }
}

void sf__metrics_verdicts(sf__buf_t *b, const uint64_t (*tab)[SF__NREASON + 1])
{
  static const char *const outcome[3] = {"no", "fit", "unsure"};
  sf__buf_puts(b, "# HELP slicefit_filter_verdicts_total Nodes judged by filter calls, by "
                  "outcome (fit, no: filtered out, unsure: passed to the DRA plugin) and "
                  "reason class.\n# TYPE slicefit_filter_verdicts_total counter\n");
  for (int f = 0; f < 3; f++)
    for (size_t c = 0; c <= SF__NREASON; c++) {
      const char *cls = c == SF__NREASON ? "other" : sf_reason_code_name((sf_reason_code_t)c);
      /* fit has no reason; no and unsure always have one. Series that never
       * happened are left out, but each outcome has one always, for rate(). */
      if ((f == SF_FIT_YES) != (c == 0) || (tab[f][c] == 0 && c != 0 && c != SF__NREASON))
        continue;
      sf__buf_printf(b, "slicefit_filter_verdicts_total{outcome=\"%s\",reason=\"%s\"} %llu\n",
                     outcome[f], cls, (unsigned long long)tab[f][c]);
    }
}

/* ---- build and process ---- */

void sf__metrics_build(sf__buf_t *b)
{
  sf__buf_puts(b, "# HELP slicefit_build_info The version and git commit of this binary.\n"
                  "# TYPE slicefit_build_info gauge\nslicefit_build_info{version=");
  sf__buf_json_str(b, sf_version());
  sf__buf_puts(b, ",revision=");
  sf__buf_json_str(b, sf_revision());
  sf__buf_puts(b, "} 1\n");
}

/* ---- defragmentation plans carried out ---- */

void sf__metrics_defrag(sf__buf_t *b, const sf__defrag_stats_t *st)
{
  static const char *const why[SF__ABORT_COUNT] = {"disruption_budget", "forbidden",   "not_found",
                                                   "server_error",      "unreachable", "other"};
  put_gauge(b, "slicefit_defrag_evict_enabled", "Whether plans are carried out (--defrag-evict).",
            st->enabled ? 1 : 0);
  sf__buf_printf(
      b,
      "# HELP slicefit_defrag_plans_total Defragmentation plans for claims pending longer than "
      "--defrag-after, by result: found (and started), carried_out (every eviction accepted), "
      "no_plan (none within the limits), held_back (a claim waited past the hourly limit; "
      "counted at each check, every 5 s).\n"
      "# TYPE slicefit_defrag_plans_total counter\n"
      "slicefit_defrag_plans_total{result=\"found\"} %llu\n"
      "slicefit_defrag_plans_total{result=\"carried_out\"} %llu\n"
      "slicefit_defrag_plans_total{result=\"no_plan\"} %llu\n"
      "slicefit_defrag_plans_total{result=\"held_back\"} %llu\n"
      "# HELP slicefit_defrag_pods_evicted_total Pods the Eviction API accepted to evict for "
      "defragmentation plans.\n# TYPE slicefit_defrag_pods_evicted_total counter\n"
      "slicefit_defrag_pods_evicted_total %llu\n"
      "# HELP slicefit_defrag_plans_aborted_total Plans ended by a refused eviction, by reason "
      "(disruption_budget: a PodDisruptionBudget, 429).\n"
      "# TYPE slicefit_defrag_plans_aborted_total counter\n",
      (unsigned long long)st->found, (unsigned long long)st->carried_out,
      (unsigned long long)st->no_plan, (unsigned long long)st->over_limit,
      (unsigned long long)st->evicted);
  for (int i = 0; i < SF__ABORT_COUNT; i++)
    sf__buf_printf(b, "slicefit_defrag_plans_aborted_total{reason=\"%s\"} %llu\n", why[i],
                   (unsigned long long)st->aborted[i]);
}
