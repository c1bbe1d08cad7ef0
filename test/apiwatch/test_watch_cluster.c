/*
 * apiwatch wired to a real cluster (sf_apiwatch_create): after faults the
 * cluster holds exactly the fake server's objects, the index the newest
 * slices, and the ConfigMap's policy is in force.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "slicefit/log.h"

static uv_loop_t loop;
static fake_t fake;
static sf_cluster_t *cluster;
static sf_apiwatch_t *w;

static void setup(void)
{
  sf_log_set_verbosity(getenv("SF_TEST_V") ? atoi(getenv("SF_TEST_V")) : -1);
  if (!getenv("SF_TEST_V"))
    cr_assert(freopen("/dev/null", "w", stderr)); /* the fault logs */
  uv_loop_init(&loop);
  fake_start(&fake, NULL);
  cluster = sf_cluster_create(NULL);
}

static void teardown(void)
{
  if (w)
    watcher_free(&loop, w);
  fake_stop(&fake);
  sf_cluster_destroy(cluster);
  uv_loop_close(&loop);
}

static void put_slice(unsigned i, unsigned ndev, unsigned gen)
{
  char *s = slice_json(i, ndev, gen);
  fake_cmd(&fake, "put resourceslices %s", s);
  free(s);
}

static void start(const char *policy_cm)
{
  sf_apiwatch_opts_t o = {.backoff_min_ms = 20,
                          .backoff_max_ms = 200,
                          .watch_timeout_s = 30,
                          .request_timeout_ms = 2000,
                          .policy_configmap = policy_cm};
  o.kube.server = fake.url;
  char err[SF_ERR_MAX];
  w = sf_apiwatch_create(&loop, cluster, &o, err, sizeof err);
  cr_assert(w, "%s", err);
  cr_assert_eq(sf_apiwatch_start(w), 0);
}

static size_t fake_count(const char *res)
{
  return strtoul(fake_cmd(&fake, "count %s", res) + 3, NULL, 10);
}

static bool counts_match(void *ud)
{
  (void)ud;
  return sf_apiwatch_synced(w) &&
         sf_cluster_count(cluster, SF_KIND_RESOURCE_SLICE) == fake_count("resourceslices") &&
         sf_cluster_count(cluster, SF_KIND_RESOURCE_CLAIM) == fake_count("resourceclaims") &&
         sf_cluster_count(cluster, SF_KIND_DEVICE_CLASS) == fake_count("deviceclasses");
}

/* Devices the index holds, from the state JSON. */
static size_t devices(void)
{
  json_t *st = sf_cluster_state_json(cluster);
  size_t n = 0, i;
  json_t *node;
  json_array_foreach(json_object_get(st, "nodes"), i, node)
      n += json_array_size(json_object_get(node, "devices"));
  json_decref(st);
  return n;
}

static bool devices_are(void *ud)
{
  return counts_match(NULL) && devices() == *(size_t *)ud;
}

TestSuite(cluster_watch, .init = setup, .fini = teardown, .timeout = 60);

Test(cluster_watch, faults_leave_the_cluster_equal_to_the_server)
{
  for (unsigned i = 0; i < 4; i++)
    put_slice(i, 2, 1);
  for (unsigned i = 0; i < 5; i++) {
    char *c = claim_json(i);
    fake_cmd(&fake, "put resourceclaims %s", c);
    free(c);
  }
  fake_cmd(&fake,
           "put deviceclasses {\"metadata\":{\"name\":\"gpu.nvidia.com\"},\"spec\":{\"selectors\":"
           "[{\"cel\":{\"expression\":\"device.driver == 'gpu.nvidia.com'\"}}]}}");
  start(NULL);
  size_t want = 8;
  cr_assert(run_until(&loop, devices_are, &want, 10000), "initial sync: %zu devices", devices());
  fake_cmd(&fake, "drop");
  put_slice(0, 4, 2); /* a new generation with more devices */
  fake_cmd(&fake, "del resourceclaims ns-1/claim-1");
  want = 10;
  cr_assert(run_until(&loop, devices_are, &want, 10000), "after a drop: %zu devices", devices());
  fake_cmd(&fake, "expire");
  fake_cmd(&fake, "del resourceslices node-3-gpu.nvidia.com");
  want = 8;
  cr_assert(run_until(&loop, devices_are, &want, 10000), "after a 410: %zu devices", devices());
}

static bool strategy_is(void *ud)
{
  return sf_cluster_policy(cluster)->strategy == *(sf_strategy_t *)ud;
}

Test(cluster_watch, policy_configmap_reaches_the_cluster)
{
  fake_cmd(&fake,
           "put configmaps {\"metadata\":{\"name\":\"slicefit\",\"namespace\":\"kube-system\"},"
           "\"data\":{\"strategy\":\"binpack\"}}");
  start("kube-system/slicefit");
  sf_strategy_t s = SF_STRATEGY_BINPACK;
  cr_assert(run_until(&loop, strategy_is, &s, 5000));
  fake_cmd(&fake,
           "put configmaps {\"metadata\":{\"name\":\"slicefit\",\"namespace\":\"kube-system\"},"
           "\"data\":{\"strategy\":\"bogus\"}}");
  fake_cmd(&fake,
           "put configmaps {\"metadata\":{\"name\":\"slicefit\",\"namespace\":\"kube-system\"},"
           "\"data\":{\"strategy\":\"spread\"}}");
  s = SF_STRATEGY_SPREAD;
  cr_assert(run_until(&loop, strategy_is, &s, 10000), "applies without restart");
  sf_apiwatch_stats_t st;
  sf_apiwatch_stats(w, &st);
  cr_assert_eq(st.policy_invalid, 1);
  cr_assert_eq(st.policy_applied, 2);
}

/* ---- pods: node CPU through drops and relists ---- */

/* The model of the server's pods: node index (-1 pending), CPU in milli, ended. */
typedef struct {
  int node;
  int cpu;
  bool ended, present;
} wpod_t;
static wpod_t wpods[12];

static void put_pod(unsigned i)
{
  const wpod_t *p = &wpods[i];
  char node[48] = "";
  if (p->node >= 0)
    snprintf(node, sizeof node, "\"nodeName\":\"node-%d\",", p->node);
  fake_cmd(&fake,
           "put pods {\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p-%u\","
           "\"namespace\":\"batch\"},\"spec\":{%s\"containers\":[{\"name\":\"c\",\"resources\":"
           "{\"requests\":{\"cpu\":\"%dm\"}}}]},\"status\":{\"phase\":\"%s\"}}",
           i, node, p->cpu,
           p->ended       ? "Succeeded"
           : p->node >= 0 ? "Running"
                          : "Pending");
}

/* Every node's CPU in use is what the model's pods say, and the bookkeeping checks. */
static bool cpu_matches(void *ud)
{
  (void)ud;
  char why[256];
  if (!sf_apiwatch_synced(w) || sf_cluster_pods_validate(cluster, why, sizeof why) != 0)
    return false;
  for (int n = 0; n < 4; n++) {
    char name[32];
    int64_t want = 0, used = -1;
    snprintf(name, sizeof name, "node-%d", n);
    for (unsigned i = 0; i < 12; i++)
      if (wpods[i].present && !wpods[i].ended && wpods[i].node == n)
        want += wpods[i].cpu;
    sf_node_id id = sf_index_node_find(sf_cluster_index(cluster), name);
    if (id < 0)
      return false;
    sf_index_node_cpu_mem(sf_cluster_index(cluster), id, NULL, &used, NULL, NULL);
    if (used != want)
      return false;
  }
  return true;
}

static void start_pods(void)
{
  sf_apiwatch_opts_t o = {.backoff_min_ms = 20,
                          .backoff_max_ms = 200,
                          .watch_timeout_s = 30,
                          .request_timeout_ms = 2000,
                          .watch_pods = true};
  o.kube.server = fake.url;
  char err[SF_ERR_MAX];
  w = sf_apiwatch_create(&loop, cluster, &o, err, sizeof err);
  cr_assert(w, "%s", err);
  cr_assert_eq(sf_apiwatch_start(w), 0);
}

Test(cluster_watch, pods_keep_node_cpu_through_drops_and_relists)
{
  for (unsigned i = 0; i < 4; i++)
    put_slice(i, 2, 1);
  for (unsigned i = 0; i < 12; i++) {
    wpods[i] = (wpod_t){(int)(i % 5) - 1, 250 * (int)(i + 1), false, true};
    put_pod(i);
  }
  start_pods();
  cr_assert(run_until(&loop, cpu_matches, NULL, 10000), "initial sync");
  /* A drop mid-event, then a pod ends (the selector turns it into a DELETED) and one is bound. */
  fake_cmd(&fake, "drop");
  wpods[1].ended = true;
  put_pod(1);
  wpods[0].node = 3;
  put_pod(0);
  cr_assert(run_until(&loop, cpu_matches, NULL, 10000), "after a drop");
  /* A 410: the pods are listed again while they change. */
  fake_cmd(&fake, "expire");
  wpods[2].cpu = 4000;
  put_pod(2);
  fake_cmd(&fake, "del pods batch/p-3");
  wpods[3].present = false;
  wpods[5].node = 0;
  put_pod(5);
  cr_assert(run_until(&loop, cpu_matches, NULL, 10000), "after a 410");
  /* History compacted away: the watch from an old rv gets 410 and lists again. */
  fake_cmd(&fake, "close");
  fake_cmd(&fake, "compact");
  wpods[6].ended = true;
  put_pod(6);
  cr_assert(run_until(&loop, cpu_matches, NULL, 10000), "after a compaction");
  sf_apiwatch_stats_t st;
  sf_apiwatch_stats(w, &st);
  cr_assert_gt(st.relists_expired, 0);
  cr_assert_eq(st.decode_errors, 0);
}
