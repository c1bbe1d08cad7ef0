/*
 * Node CPU and the pods on nodes (cluster_pods.c): Nodes' allocatable amounts
 * and bound pods' requests reach the index; sums equal a recomputation from
 * the pod set through any sequence of events and relists; a pod's CPU is in
 * its demand and its claim's learned shape; pods without claims are scored.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "slicefit/cluster.h"
#include "slicefit/mix.h"
#include "fixture.h"

static sf_cluster_t *C;
static char err[SF_ERR_MAX];

static void setup(void)
{
  C = sf_cluster_create(NULL);
}
static void teardown(void)
{
  sf_cluster_destroy(C);
}
TestSuite(cluster_pods, .init = setup, .fini = teardown);

static void check(void)
{
  char why[256];
  cr_assert_eq(sf_index_validate(sf_cluster_index(C), why, sizeof why), 0, "%s", why);
  cr_assert_eq(sf_cluster_pods_validate(C, why, sizeof why), 0, "%s", why);
}

static void apply(sf_kind_t kind, json_t *o)
{
  cr_assert_eq(sf_cluster_apply(C, kind, o, err, sizeof err), 0, "%s", err);
  json_decref(o);
  check();
}

static void del(sf_kind_t kind, json_t *o)
{
  cr_assert_eq(sf_cluster_delete(C, kind, o, err, sizeof err), 0, "%s", err);
  json_decref(o);
  check();
}

/* A Node as the kubelet reports it (the fields that matter here, and a few that do not). */
static json_t *node(const char *name, const char *cpu, const char *mem)
{
  return json_pack("{s:s,s:s,s:{s:s,s:{s:s}},s:{s:{s:s,s:s,s:s,s:s},s:{s:s,s:s}}}", "kind", "Node",
                   "apiVersion", "v1", "metadata", "name", name, "labels", "kubernetes.io/hostname",
                   name, "status", "allocatable", "cpu", cpu, "memory", mem, "pods", "110",
                   "ephemeral-storage", "95Gi", "capacity", "cpu", "64", "memory", "512Gi");
}

/* A slice of the example driver: `ndev` 80Gi GPUs on `node`. */
static json_t *slice(const char *node_name, int ndev)
{
  json_t *devs = json_array();
  for (int i = 0; i < ndev; i++) {
    char dn[32];
    snprintf(dn, sizeof dn, "gpu-%d", i);
    json_array_append_new(devs, json_pack("{s:s,s:{s:{s:s}},s:{s:{s:s}}}", "name", dn, "attributes",
                                          "productName", "string", "A100", "capacity", "memory",
                                          "value", "80Gi"));
  }
  char name[96];
  snprintf(name, sizeof name, "%s-gpu.example.com-x", node_name);
  return json_pack("{s:s,s:s,s:{s:s},s:{s:s,s:s,s:{s:s,s:i,s:i},s:o}}", "kind", "ResourceSlice",
                   "apiVersion", "resource.k8s.io/v1", "metadata", "name", name, "spec", "driver",
                   "gpu.example.com", "nodeName", node_name, "pool", "name", node_name, "generation",
                   1, "resourceSliceCount", 1, "devices", devs);
}

/* A pod with one container asking `cpu` and `mem` (NULL: nothing), bound to `node_name` (NULL: pending). */
static json_t *pod(const char *ns, const char *name, const char *node_name, const char *cpu,
                   const char *mem, const char *phase)
{
  json_t *req = json_object();
  if (cpu)
    json_object_set_new(req, "cpu", json_string(cpu));
  if (mem)
    json_object_set_new(req, "memory", json_string(mem));
  json_t *spec = json_pack("{s:[{s:s,s:s,s:{s:o}}],s:s}", "containers", "name", "main", "image",
                           "busybox", "resources", "requests", req, "schedulerName",
                           "default-scheduler");
  if (node_name)
    json_object_set_new(spec, "nodeName", json_string(node_name));
  return json_pack("{s:s,s:s,s:{s:s,s:s,s:s},s:o,s:{s:s}}", "kind", "Pod", "apiVersion", "v1",
                   "metadata", "name", name, "namespace", ns, "uid", name, "spec", spec, "status",
                   "phase", phase ? phase : "Running");
}

static void cpu_of(const char *node_name, int64_t *alloc, int64_t *used)
{
  sf_index_t *idx = sf_cluster_index(C);
  sf_node_id id = sf_index_node_find(idx, node_name);
  cr_assert_geq(id, 0, "%s is not in the index", node_name);
  sf_index_node_cpu_mem(idx, id, alloc, used, NULL, NULL);
}

Test(cluster_pods, node_cpu_reaches_the_index_in_either_order)
{
  apply(SF_KIND_UNKNOWN, node("n1", "63500m", "500Gi"));
  apply(SF_KIND_UNKNOWN, slice("n1", 2));
  apply(SF_KIND_UNKNOWN, slice("n2", 2));
  apply(SF_KIND_UNKNOWN, node("n2", "32", "256Gi"));
  int64_t a, u;
  cpu_of("n1", &a, &u);
  cr_assert_eq(a, 63500);
  cpu_of("n2", &a, &u);
  cr_assert_eq(a, 32000);
  apply(SF_KIND_UNKNOWN, node("n2", "30", "256Gi")); /* the kubelet reserves more */
  cpu_of("n2", &a, &u);
  cr_assert_eq(a, 30000);
  del(SF_KIND_NODE, node("n2", "30", "256Gi"));
  cpu_of("n2", &a, &u);
  cr_assert_eq(a, 0, "a node without its Node has no CPU the core checks");
}

Test(cluster_pods, bound_pods_sum_per_node)
{
  apply(SF_KIND_UNKNOWN, node("n1", "64", "512Gi"));
  apply(SF_KIND_UNKNOWN, slice("n1", 2));
  apply(SF_KIND_UNKNOWN, pod("a", "p1", "n1", "3", "4Gi", NULL));
  apply(SF_KIND_UNKNOWN, pod("a", "p2", "n1", "500m", NULL, NULL));
  apply(SF_KIND_UNKNOWN, pod("a", "pending", NULL, "8", NULL, "Pending"));
  int64_t a, u;
  cpu_of("n1", &a, &u);
  cr_assert_eq(u, 3500, "a pending pod takes nothing");
  apply(SF_KIND_UNKNOWN, pod("a", "p2", "n1", "500m", NULL, "Succeeded"));
  cpu_of("n1", &a, &u);
  cr_assert_eq(u, 3000, "a pod that has ended frees its CPU");
  apply(SF_KIND_UNKNOWN, pod("a", "pending", "n1", "8", NULL, "Running"));
  cpu_of("n1", &a, &u);
  cr_assert_eq(u, 11000, "bound");
  cr_assert_eq(sf_cluster_pod_allocations(C), 1, "one allocation holds n1's pods");
  cr_assert_eq(sf_index_alloc_count(sf_cluster_index(C)), 1);
  del(SF_KIND_POD, pod("a", "p1", "n1", "3", "4Gi", NULL));
  cpu_of("n1", &a, &u);
  cr_assert_eq(u, 8000);
  cr_assert_eq(sf_cluster_count(C, SF_KIND_POD), 1, "the ended and deleted pods are forgotten");
  del(SF_KIND_POD, pod("a", "pending", "n1", "8", NULL, NULL));
  cr_assert_eq(sf_cluster_pod_allocations(C), 0, "no pods, no allocation");
  cr_assert_eq(sf_index_alloc_count(sf_cluster_index(C)), 0);
}

Test(cluster_pods, status_updates_change_nothing_kept)
{
  uint64_t v0 = sf_cluster_pod_changes(C);
  apply(SF_KIND_UNKNOWN, pod("a", "pending-web", NULL, "1", NULL, "Pending"));
  cr_assert_eq(sf_cluster_pod_changes(C), v0, "a pending pod without claims is not kept");
  apply(SF_KIND_UNKNOWN, pod("a", "p1", "n1", "2", NULL, "Pending"));
  uint64_t v1 = sf_cluster_pod_changes(C);
  cr_assert_gt(v1, v0);
  json_t *again = pod("a", "p1", "n1", "2", NULL, "Running"); /* containers started */
  json_object_set_new(json_object_get(again, "status"), "podIP", json_string("10.0.3.7"));
  apply(SF_KIND_UNKNOWN, again);
  cr_assert_eq(sf_cluster_pod_changes(C), v1, "a status update keeps the cached answers");
  apply(SF_KIND_UNKNOWN, pod("a", "p1", "n1", "3", NULL, "Running")); /* resized */
  cr_assert_gt(sf_cluster_pod_changes(C), v1);
  del(SF_KIND_POD, pod("a", "never-seen", NULL, "1", NULL, NULL));
  cr_assert_eq(sf_cluster_pod_changes(C), v1 + 2, "deleting a pod not kept changes nothing");
}

Test(cluster_pods, pods_before_their_node_enters_the_index)
{
  apply(SF_KIND_UNKNOWN, pod("a", "p1", "n1", "2", NULL, NULL));
  apply(SF_KIND_UNKNOWN, node("n1", "16", "64Gi"));
  apply(SF_KIND_UNKNOWN, slice("n1", 1));
  int64_t a, u;
  cpu_of("n1", &a, &u);
  cr_assert_eq(a, 16000);
  cr_assert_eq(u, 2000, "the node enters the index with its pods' CPU");
  /* The node leaves the index with its last device: the pods' CPU does not pin it there. */
  del(SF_KIND_RESOURCE_SLICE, slice("n1", 1));
  cr_assert_lt(sf_index_node_find(sf_cluster_index(C), "n1"), 0);
}

Test(cluster_pods, bad_pod_is_an_error_and_changes_nothing)
{
  apply(SF_KIND_UNKNOWN, node("n1", "16", "64Gi"));
  apply(SF_KIND_UNKNOWN, slice("n1", 1));
  apply(SF_KIND_UNKNOWN, pod("a", "p1", "n1", "2", NULL, NULL));
  json_t *bad = pod("a", "p1", "n1", "lots", NULL, NULL);
  cr_assert_eq(sf_cluster_apply(C, SF_KIND_POD, bad, err, sizeof err), SF_EINVAL);
  cr_assert_str_eq(err, "spec.containers[0].resources.requests.cpu: 'lots' is not a quantity");
  json_decref(bad);
  int64_t a, u;
  cpu_of("n1", &a, &u);
  cr_assert_eq(u, 2000);
  check();
}

/* ---- the property: sums are a function of the pod set ---- */

#define NP 24
#define NN 4

typedef struct {
  bool present;
  int node;
  int64_t cpu;
  bool ended;
} mpod_t;

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void)
{
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static json_t *mpod(int i, const mpod_t *m)
{
  char name[16], node_name[16], cpu[32];
  snprintf(name, sizeof name, "p%d", i);
  snprintf(node_name, sizeof node_name, "n%d", m->node);
  snprintf(cpu, sizeof cpu, "%lldm", (long long)m->cpu);
  return pod("ns", name, m->node >= 0 ? node_name : NULL, cpu, "1Gi",
             m->ended ? "Failed" : "Running");
}

/* What the model says each node has in use. */
static void expect(const mpod_t *pods)
{
  for (int n = 0; n < NN; n++) {
    char name[16];
    int64_t want = 0, a, u;
    snprintf(name, sizeof name, "n%d", n);
    for (int i = 0; i < NP; i++)
      if (pods[i].present && !pods[i].ended && pods[i].node == n)
        want += pods[i].cpu;
    cpu_of(name, &a, &u);
    cr_assert_eq(u, want, "node %s: %lld in use, the pod set says %lld", name, (long long)u,
                 (long long)want);
  }
}

Test(cluster_pods, sums_equal_a_recomputation_through_events_and_relists)
{
  mpod_t pods[NP] = {0};
  for (int n = 0; n < NN; n++) {
    char name[16];
    snprintf(name, sizeof name, "n%d", n);
    apply(SF_KIND_UNKNOWN, node(name, "64", "512Gi"));
    apply(SF_KIND_UNKNOWN, slice(name, 1));
  }
  for (int step = 0; step < 600; step++) {
    int i = (int)(next() % NP), op = (int)(next() % 10);
    if (op < 6) { /* add, bind, move, resize or end a pod */
      pods[i] = (mpod_t){true, (int)(next() % (NN + 1)) - 1, (int64_t)(next() % 4000),
                         next() % 8 == 0};
      apply(SF_KIND_POD, mpod(i, &pods[i]));
    } else if (op < 9) {
      del(SF_KIND_POD, mpod(i, &pods[i]));
      pods[i].present = false;
    } else { /* a relist (after a 410): the pods present, in a shuffled order */
      json_t *items = json_array();
      for (int k = 0; k < NP; k++) {
        int j = (k * 7 + step) % NP;
        if (pods[j].present)
          json_array_append_new(items, mpod(j, &pods[j]));
      }
      cr_assert_eq(sf_cluster_replace(C, SF_KIND_POD, items, err, sizeof err), 0, "%s", err);
      json_decref(items);
      check();
    }
    expect(pods);
  }
}

/* ---- the demand and the evaluation ---- */

static sf_pod_plan_t *plan(json_t *p)
{
  sf_pod_plan_t *pl = NULL;
  cr_assert_eq(sf_cluster_plan(C, p, &pl, err, sizeof err), 0, "%s", err);
  json_decref(p);
  return pl;
}

static json_t *class_gpu(void)
{
  return json_pack("{s:s,s:s,s:{s:s},s:{s:[{s:{s:s}}]}}", "kind", "DeviceClass", "apiVersion",
                   "resource.k8s.io/v1", "metadata", "name", "gpu.example.com", "spec", "selectors",
                   "cel", "expression", "device.driver == 'gpu.example.com'");
}

/* A claim for one whole GPU, and a pod naming it, asking `cpu`. */
static json_t *gpu_pod(const char *name, const char *node_name, const char *cpu)
{
  char claim[64];
  snprintf(claim, sizeof claim, "%s-gpu", name);
  apply(SF_KIND_UNKNOWN, json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:{s:[{s:s,s:{s:s}}]}}}", "kind",
                                   "ResourceClaim", "apiVersion", "resource.k8s.io/v1", "metadata",
                                   "name", claim, "namespace", "ml", "spec", "devices", "requests",
                                   "name", "gpu", "exactly", "deviceClassName", "gpu.example.com"));
  json_t *p = pod("ml", name, node_name, cpu, NULL, node_name ? "Running" : "Pending");
  json_object_set_new(json_object_get(p, "spec"), "resourceClaims",
                      json_pack("[{s:s,s:s}]", "name", "gpu", "resourceClaimName", claim));
  return p;
}

static const char *const TWO[] = {"n1", "n2"};

Test(cluster_pods, a_gpu_pod_short_of_cpu_passes_unscored)
{
  apply(SF_KIND_UNKNOWN, class_gpu());
  apply(SF_KIND_UNKNOWN, node("n1", "8", "64Gi"));
  apply(SF_KIND_UNKNOWN, node("n2", "8", "64Gi"));
  apply(SF_KIND_UNKNOWN, slice("n1", 2));
  apply(SF_KIND_UNKNOWN, slice("n2", 2));
  apply(SF_KIND_UNKNOWN, pod("batch", "cruncher", "n1", "7", NULL, NULL));
  sf_pod_plan_t *p = plan(gpu_pod("trainer", NULL, "2"));
  sf_verdict_t v[2];
  cr_assert_eq(sf_cluster_evaluate(C, p, TWO, 2, v), 0);
  cr_assert_eq(v[0].fit, SF_FIT_UNSURE, "n1 has 1 CPU free: kube-scheduler judges (%s)", v[0].reason);
  cr_assert_eq(v[0].score, 0);
  cr_assert_eq(v[1].fit, SF_FIT_YES, "%s", v[1].reason);
  cr_assert_eq(v[1].score, SF_SCORE_MAX);
  sf_pod_plan_free(p);
}

Test(cluster_pods, cpu_only_pods_are_scored_and_never_rejected)
{
  apply(SF_KIND_UNKNOWN, class_gpu());
  apply(SF_KIND_UNKNOWN, node("n1", "8", "64Gi"));
  apply(SF_KIND_UNKNOWN, node("n2", "8", "64Gi"));
  apply(SF_KIND_UNKNOWN, node("cpu-1", "96", "384Gi"));
  apply(SF_KIND_UNKNOWN, slice("n1", 1));
  apply(SF_KIND_UNKNOWN, slice("n2", 1));
  /* A typical GPU pod asks 4 CPUs: present (pending) with its claim, it teaches the mix that. */
  json_t *typical = gpu_pod("typical", NULL, "4");
  apply(SF_KIND_POD, json_incref(typical));
  sf_pod_plan_t *tp = plan(typical);
  sf_pod_plan_free(tp);
  apply(SF_KIND_UNKNOWN, pod("web", "busy", "n2", "3", NULL, NULL)); /* n2: 5 CPUs free */
  static const char *const THREE[] = {"n1", "n2", "cpu-1"};
  sf_verdict_t v[3];
  /* 2 CPUs on n2 would leave 3, short of the typical pod's 4: its GPU would be stranded.
   * On n1 they leave 6. The CPU-only node strands nothing. */
  sf_pod_plan_t *p = plan(pod("web", "frontend", NULL, "2", "1Gi", "Pending"));
  cr_assert_not(sf_pod_plan_empty(p), "a CPU-only pod is scored");
  cr_assert_eq(sf_cluster_evaluate(C, p, THREE, 3, v), 0);
  for (int i = 0; i < 3; i++)
    cr_assert_eq(v[i].fit, SF_FIT_YES, "%s: %s", THREE[i], v[i].reason);
  cr_assert_gt(v[0].score, v[1].score, "n1 keeps the typical pod's CPU, n2 does not");
  cr_assert_eq(v[2].score, SF_SCORE_MAX, "a node without GPUs strands nothing");
  sf_pod_plan_free(p);
  /* Too much CPU for n1 and n2: passed (kube-scheduler judges CPU), never rejected. */
  p = plan(pod("web", "big", NULL, "12", NULL, "Pending"));
  cr_assert_eq(sf_cluster_evaluate(C, p, THREE, 3, v), 0);
  cr_assert_eq(v[0].fit, SF_FIT_UNSURE, "%s", v[0].reason);
  cr_assert_eq(v[1].fit, SF_FIT_UNSURE, "%s", v[1].reason);
  sf_pod_plan_free(p);
  /* The policy can hand them back to kube-scheduler's scorers. */
  sf_policy_t pol;
  sf_policy_init(&pol);
  cr_assert_eq(sf_policy_set(&pol, "cpu_only_pods", "pass", err, sizeof err), 0, "%s", err);
  sf_cluster_set_policy(C, &pol);
  sf_policy_dispose(&pol);
  p = plan(pod("web", "frontend", NULL, "2", "1Gi", "Pending"));
  cr_assert(sf_pod_plan_empty(p));
  sf_pod_plan_free(p);
}

Test(cluster_pods, the_learned_mix_carries_the_pods_cpu)
{
  apply(SF_KIND_UNKNOWN, class_gpu());
  apply(SF_KIND_UNKNOWN, node("n1", "8", "64Gi"));
  apply(SF_KIND_UNKNOWN, slice("n1", 2));
  json_t *p = gpu_pod("typical", NULL, "4");
  sf_shape_t sh;
  sf_pod_plan_t *pl = plan(json_incref(p));
  sf_verdict_t v;
  static const char *const ONE[] = {"n1"};
  cr_assert_eq(sf_cluster_evaluate(C, pl, ONE, 1, &v), 0); /* the mix is learned before use */
  sf_pod_plan_free(pl);
  cr_assert_eq(sf_mix_size(sf_cluster_index(C)), 1);
  cr_assert_eq(sf_mix_shape(sf_cluster_index(C), 0, &sh), 0);
  cr_assert_eq(sh.cpu_milli, 0, "no pod seen yet");
  apply(SF_KIND_POD, json_incref(p));
  cr_assert_eq(sf_mix_shape(sf_cluster_index(C), 0, &sh), 0);
  cr_assert_eq(sh.cpu_milli, 4000, "the claim's shape carries its pod's CPU");
  cr_assert_eq(sf_mix_size(sf_cluster_index(C)), 1, "taken back, then taught again");
  del(SF_KIND_POD, p);
  cr_assert_eq(sf_mix_shape(sf_cluster_index(C), 0, &sh), 0);
  cr_assert_eq(sh.cpu_milli, 0);
}

/*
 * The daemon's scores are the core's: sf_cluster_evaluate (what extender/
 * answers from) and sf_packer_evaluate as the replay calls it (a packer of
 * its own over the same index and policy, no flags: bench/replay/
 * replay_cache.c) agree on every node, for a pod with a claim and for a
 * CPU-only pod, whose scores only the core may shape. No node is short of
 * the pods' CPU: there the daemon alone passes a node (SF_EVAL_HOST_LAGS),
 * because its index lags kube-scheduler's and the replay's is the truth.
 */
static void same_as_replay(sf_pod_plan_t *p, const sf_demand_t *d, const char *const *names, size_t n)
{
  sf_verdict_t daemon[4], replay[4];
  sf_node_id ids[4];
  cr_assert_leq(n, 4);
  cr_assert_eq(sf_cluster_evaluate(C, p, names, n, daemon), 0);
  sf_index_t *idx = sf_cluster_index(C);
  for (size_t i = 0; i < n; i++)
    ids[i] = sf_index_node_find(idx, names[i]);
  sf_packer_t *pk = sf_packer_create();
  cr_assert_eq(sf_packer_evaluate(pk, idx, sf_cluster_policy(C), d, ids, n, 0, replay), 0);
  sf_packer_destroy(pk);
  for (size_t i = 0; i < n; i++) {
    cr_expect_eq(daemon[i].fit, replay[i].fit, "%s: %s / %s", names[i], daemon[i].reason,
                 replay[i].reason);
    cr_expect(daemon[i].raw == replay[i].raw, "%s: raw %.17g / %.17g", names[i], daemon[i].raw,
              replay[i].raw);
    cr_expect_eq(daemon[i].score, replay[i].score, "%s", names[i]);
  }
}

Test(cluster_pods, the_daemons_scores_are_the_replays)
{
  static const char *const NODES[] = {"n1", "n2", "n3"};
  apply(SF_KIND_UNKNOWN, class_gpu());
  for (int i = 0; i < 3; i++) {
    apply(SF_KIND_UNKNOWN, node(NODES[i], "16", "64Gi"));
    apply(SF_KIND_UNKNOWN, slice(NODES[i], 2));
  }
  apply(SF_KIND_UNKNOWN, pod("web", "busy", "n2", "11", NULL, NULL)); /* n2: 5 CPUs free */
  apply(SF_KIND_UNKNOWN, gpu_pod("held", "n3", "2"));                 /* n3: a GPU taken */
  json_t *typical = gpu_pod("typical", NULL, "4");
  apply(SF_KIND_POD, json_incref(typical));
  sf_pod_plan_free(plan(typical)); /* the mix learns a 4-CPU whole-GPU pod */
  /* A whole GPU and 2 CPUs, as the replay builds it from a trace row. */
  sf_request_t req = {.name = "gpu", .count = 1};
  sf_claim_t claim = {.name = "ml/next-gpu", .reqs = &req, .nreqs = 1};
  sf_demand_t d = {.claims = &claim, .nclaims = 1, .cpu_milli = 2000};
  sf_pod_plan_t *p = plan(gpu_pod("next", NULL, "2"));
  same_as_replay(p, &d, NODES, 3);
  sf_pod_plan_free(p);
  /* A pod without claims: 4 CPUs on n2 leave 1, short of the typical pod's 4. */
  sf_demand_t cpu_only = {.cpu_milli = 4000, .mem_bytes = (int64_t)1 << 30};
  p = plan(pod("web", "frontend", NULL, "4", "1Gi", "Pending"));
  same_as_replay(p, &cpu_only, NODES, 3);
  sf_pod_plan_free(p);
}
