/*
 * End to end: the fake kube-apiserver serving a generated NVIDIA GPU
 * cluster, two bin/slicefit replicas watching it as the manifests
 * configure them (kubeconfig, the policy ConfigMap), and a scheduler driver
 * (driver.c) that places a few hundred arriving and leaving pods through
 * them. Checked on the way: no device overcommitted (the driver's books and
 * every replica's /debug/state), no pod Pending unless the in-tree DRA
 * filter found no node, the replicas answering every call alike, a
 * restarted replica rebuilding the same index and answers, the replicas
 * converging again after their watches expire (410) or drop mid-event; at
 * the end the run agrees with bin/slicefit-replay on the same trace.
 * Smaller tests: consumable-capacity rounding over the wire, the policy
 * ConfigMap hot-reloaded (and a bad one refused), replicas with different
 * histories answering alike.
 *
 * Each test runs in its own folder under /tmp (logs of every process);
 * SLICEFIT_E2E_KEEP=1 keeps it. bin/slicefit, bin/slicefit-replay and
 * build/<variant>/tools/fake-apiserver must be built (make test does).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>
#include "driver.h"
#include "replay_cmp.h"

#define NPODS 300
#define SEED 20261202

/*
 * The policies under test, as the ConfigMap holds them and --policy-file
 * reads them. SHIPPED is manifests/policy/policy-configmap.yaml's (strategy
 * fragmentation, first-fit) with the island map this cluster needs: the
 * NVIDIA driver publishes no NVLink attribute, so island_map says where
 * islands are. FIXED_MIX is plain FGD against a given workload mix.
 *
 * The replay is held to the daemon under both. Under SHIPPED they part
 * when one of them learns the workload mix and the other does not: the
 * replay evaluates fragmentation with SF_EVAL_LEARN (bench/replay/replay_run.c,
 * since 7c075d7), the daemon without (sf_cluster_evaluate in
 * model/cluster_plan.c). A daemon that learned from the calls it serves
 * would in turn fail the restart and replica checks; learning from the
 * claims it watches would satisfy all three.
 */
static const char *const SHIPPED[] = {"strategy",  "fragmentation", "device_choice",
                                      "first-fit", "island_map",    "H100=8,gpu-a100-:A100=2",
                                      NULL};

static const char *const FIXED_MIX[] = {"strategy",
                                        "fgd",
                                        "device_choice",
                                        "first-fit",
                                        "capacity",
                                        "memory",
                                        "model_attribute",
                                        "productName",
                                        "island_map",
                                        "H100=8,gpu-a100-:A100=2",
                                        "fgd_mix",
                                        "4Gix1=6,wholex1=3,wholex2!=1",
                                        NULL};

static drv_t D;

static void teardown(void)
{
  drv_teardown(&D);
}

/* Probe pods: one of each shape, with claims that stay pending. */
static void probes(e2e_pod_t *pr, size_t n)
{
  e2e_pods_make(pr, n, SEED ^ 0x9e37);
  for (size_t i = 0; i < n; i++) {
    pr[i].shape = (e2e_shape_t)(i % 3);
    pr[i].share = pr[i].shape == E2E_SHARE ? 4000 * E2E_MI : 0; /* rounds to 4Gi */
    pr[i].product = pr[i].shape == E2E_SHARE ? "NVIDIA RTX 4000 SFF Ada Generation"
                    : i % 2                  ? "NVIDIA A100 80GB PCIe"
                                             : "NVIDIA H100 80GB HBM3";
    snprintf(pr[i].name, sizeof pr[i].name, "probe-%zu", i);
    snprintf(pr[i].claim, sizeof pr[i].claim, "probe-%zu-gpu-x7k2p", i);
  }
}

/*
 * Over every node, slicefit's filter must pass exactly the nodes the in-tree
 * DRA filter (first fit) finds feasible, and give a reason for each other.
 */
static void check_probe_filter(drv_t *d, const e2e_pod_t *p, const json_t *rep)
{
  const json_t *passed = json_object_get(rep, "NodeNames");
  const json_t *failed = json_object_get(rep, "FailedNodes");
  for (size_t k = 0; k < d->cl.nnodes; k++) {
    e2e_alloc_t a;
    const char *n = d->cl.nodes[k].name;
    bool dra = e2e_ffit(&d->cl.nodes[k], p, &a), sf = false;
    size_t i;
    json_t *v;
    json_array_foreach(passed, i, v) sf = sf || strcmp(json_string_value(v), n) == 0;
    cr_expect_eq(sf, dra, "probe %s on %s: slicefit %s, first fit %s", p->name, n,
                 sf ? "passes" : "rejects", dra ? "places it" : "cannot");
    if (!sf)
      cr_expect(json_string_length(json_object_get(failed, n)) > 0, "%s on %s: no reason", p->name,
                n);
  }
}

/* Filter and prioritize answers of one replica for the probes over every node (new array). */
static json_t *probe_answers(drv_t *d, unsigned port, const e2e_pod_t *pr, size_t n)
{
  json_t *all = json_array(), *names = json_array();
  for (size_t k = 0; k < d->cl.nnodes; k++)
    json_array_append_new(names, json_string(d->cl.nodes[k].name));
  for (size_t i = 0; i < n; i++) {
    long st;
    json_t *f = drv_call(port, "/filter", &pr[i], names, &st);
    cr_assert_eq(st, 200);
    check_probe_filter(d, &pr[i], f);
    json_t *p = drv_call(port, "/prioritize", &pr[i], names, &st);
    cr_assert_eq(st, 200);
    json_array_append_new(all, json_pack("{s:s,s:o,s:o}", "pod", pr[i].name, "filter", f,
                                         "prioritize", p));
  }
  json_decref(names);
  return all;
}

static void expect_same(const json_t *a, const json_t *b, const char *what)
{
  if (json_equal(a, b))
    return;
  /* Arrays: show the first element that differs, not the whole of both. */
  for (size_t i = 0; json_is_array(a) && i < json_array_size(a); i++)
    if (!json_equal(json_array_get(a, i), json_array_get(b, i))) {
      a = json_array_get(a, i);
      b = json_array_get(b, i);
      break;
    }
  char *x = json_dumps(a, JSON_COMPACT), *y = json_dumps(b, JSON_COMPACT);
  cr_expect_fail("%s differ:\n  before %.1500s\n  after  %.1500s", what, x, y);
  free(x);
  free(y);
}

/* Restarts replica 0 with probe claims present: same index, same answers. */
static void restart_check(drv_t *d)
{
  enum { NPROBE = 6 };
  e2e_pod_t pr[NPROBE];
  probes(pr, NPROBE);
  drv_add_claims(d, pr, NPROBE);
  json_t *state0 = drv_state_canonical(d->sf[0].port);
  json_t *ans0 = probe_answers(d, d->sf[0].port, pr, NPROBE);
  if (d->nreplicas > 1) {
    json_t *other = drv_state_canonical(d->sf[1].port);
    expect_same(state0, other, "the two replicas' /debug/state");
    json_decref(other);
  }
  drv_restart(d, 0);
  drv_wait_seen(d);
  json_t *state1 = drv_state_canonical(d->sf[0].port);
  json_t *ans1 = probe_answers(d, d->sf[0].port, pr, NPROBE);
  expect_same(state0, state1, "/debug/state before and after the restart");
  expect_same(ans0, ans1, "probe answers before and after the restart");
  json_decref(state0);
  json_decref(state1);
  json_decref(ans0);
  json_decref(ans1);
  char buf[256];
  for (size_t i = 0; i < NPROBE; i++) {
    cr_assert_eq(e2e_apiserver_cmd(&d->api, buf, sizeof buf, "del resourceclaims %s/%s", E2E_NS,
                                   pr[i].claim),
                 0);
    d->claims--;
  }
  drv_wait_seen(d);
}

static void replay_check(drv_t *d)
{
  char trace[160], pol[160], first[256];
  snprintf(trace, sizeof trace, "%s/trace.jsonl", d->dir);
  snprintf(pol, sizeof pol, "%s/policy.json", d->dir);
  cr_assert_eq(e2e_trace_write(trace, &d->cl, d->pods, d->npods), 0);
  cr_assert_eq(rc_policy_file(pol, d->policy), 0);
  size_t failed = 0;
  for (size_t i = 0; i < d->npods; i++)
    failed += d->out[i] != OUT_PLACED;
  json_t *run = rc_run_binary(d, trace, pol);
  cr_expect_eq(json_integer_value(json_object_get(run, "pods_arrived")), (json_int_t)d->npods);
  cr_expect_eq(json_integer_value(json_object_get(run, "pods_failed")), (json_int_t)failed,
               "bin/slicefit-replay failed %lld pods, the live run %zu",
               (long long)json_integer_value(json_object_get(run, "pods_failed")), failed);
  cr_expect_eq(json_integer_value(json_object_get(run, "pods_departed")),
               (json_int_t)(d->npods - failed));
  const json_t *at = json_object_get(run, "alloc_pct_at");
  static const char *const keys[9] = {"50", "80", "90", "95", "100", "105", "110", "120", "130"};
  for (int k = 0; k < 9; k++) {
    /* The replay prints percentages rounded to 3 decimals. */
    double r = json_number_value(json_object_get(at, keys[k]));
    cr_expect(fabs(r - round(d->alloc_pct_at[k] * 1000.0) / 1000.0) < 1e-9,
              "allocation at %s%% arrived load: replay %.4f%%, live %.4f%%", keys[k], r,
              d->alloc_pct_at[k]);
  }
  json_decref(run);
  size_t diffs = rc_compare_per_pod(d, first, sizeof first);
  cr_expect_eq(diffs, 0, "%zu pods fared differently in the replay; first: %s", diffs, first);
}

static void whole_loop(drv_t *d, const char *const *policy, uint64_t seed, unsigned flags)
{
  drv_setup(d, policy, 2, NPODS, seed, flags);
  size_t n = drv_nevents(d);
  char buf[256];
  drv_run(d, 0, n / 4, 40);
  /* Every watch gets 410 Expired: the replicas relist and must converge on the same state. */
  cr_assert_eq(e2e_apiserver_cmd(&d->api, buf, sizeof buf, "expire"), 0, "%s", buf);
  drv_run(d, n / 4, n / 2, 40);
  restart_check(d);
  drv_run(d, n / 2, 3 * n / 4, 40);
  /* Every watch drops its connection half-way through an event: they resume from the last rv. */
  cr_assert_eq(e2e_apiserver_cmd(&d->api, buf, sizeof buf, "drop"), 0, "%s", buf);
  drv_run(d, 3 * n / 4, n, 40);
  for (size_t r = 0; r < d->nreplicas; r++)
    drv_check_state(d, d->sf[r].port);

  size_t placed = 0, no_node = 0, rejected = 0;
  for (size_t i = 0; i < d->npods; i++) {
    placed += d->out[i] == OUT_PLACED;
    no_node += d->out[i] == OUT_NO_NODE;
    rejected += d->out[i] == OUT_EXTENDER_EMPTY;
  }
  cr_log_info("e2e: %zu pods: %zu placed, %zu pending with no DRA-feasible node, %zu rejected "
              "by the extender; %zu filter and %zu prioritize calls (%zu single-node), %zu state "
              "checks",
              d->npods, placed, no_node, rejected, d->filter_calls, d->prioritize_calls,
              d->single_node, d->state_checks);
  cr_expect_eq(rejected, 0, "pods left Pending although DRA could place them: %s", d->first_problem);
  cr_expect_eq(d->dropped_feasible, 0, "%zu DRA-feasible nodes filtered out: %s", d->dropped_feasible,
               d->first_problem);
  cr_expect_eq(d->replica_diffs, 0, "the replicas disagreed %zu times: %s", d->replica_diffs,
               d->first_problem);
  /* The workload must reach saturation, or the checks above prove little. */
  cr_expect_gt(no_node, 0, "no pod ever found the cluster full");
  cr_expect_gt(placed, d->npods / 2);
  drv_stop_all(d);
  replay_check(d);
}

/* As the manifests run it: the shipped policy, TLS with a certificate the scheduler verifies. */
Test(e2e, loop_under_the_shipped_policy, .fini = teardown)
{
  whole_loop(&D, SHIPPED, SEED, DRV_TLS);
}

Test(e2e, loop_under_fgd_with_a_fixed_mix, .fini = teardown)
{
  whole_loop(&D, FIXED_MIX, SEED + 1, 0);
}

/* The first n pods become 4Gi shares allocated on `node`, without the extender. */
static void place_shares(drv_t *d, uint32_t n, const char *node)
{
  for (uint32_t i = 0; i < n; i++) {
    d->pods[i].shape = E2E_SHARE;
    d->pods[i].share = 4 * E2E_GI;
    d->pods[i].product = "NVIDIA RTX 4000 SFF Ada Generation";
    drv_place(d, i, node);
  }
}

/*
 * Consumable capacity is rounded before it is compared: with four 4Gi
 * shares on a 20475Mi card, 4091Mi are left, and a 4000Mi request (4Gi
 * once rounded by the card's requestPolicy) no longer fits there, while a
 * 3Gi one does. slicefit's filter must say what DRA says, on every node.
 */
Test(e2e, filter_rounds_consumable_capacity, .fini = teardown)
{
  drv_t *d = &D;
  drv_setup(d, SHIPPED, 1, 6, SEED, 0);
  place_shares(d, 4, "gpu-rtx-0");
  drv_check_state(d, d->sf[0].port);
  e2e_pod_t pr[2];
  probes(pr, 2);
  pr[1] = pr[0];
  pr[1].share = 3 * E2E_GI;
  snprintf(pr[1].claim, sizeof pr[1].claim, "probe-3gi-gpu-x7k2p");
  drv_add_claims(d, pr, 2);
  json_t *ans = probe_answers(d, d->sf[0].port, pr, 2); /* checks every node against first fit */
  json_t *names = json_object_get(json_object_get(json_array_get(ans, 0), "filter"), "NodeNames");
  cr_assert_eq(json_array_size(names), 6, "4000Mi: the six other cards, not gpu-rtx-0");
  names = json_object_get(json_object_get(json_array_get(ans, 1), "filter"), "NodeNames");
  cr_assert_eq(json_array_size(names), 7, "3Gi: every card");
  json_decref(ans);
  drv_stop_all(d);
}

/* Polls until the file at `path` contains every one of `words`; 0, or -1 at the deadline. */
static int log_says(const char *path, const char *const *words, int deadline_ms)
{
  int64_t end = e2e_now_ms() + deadline_ms;
  do {
    FILE *f = fopen(path, "r");
    char *text = NULL;
    size_t len = 0;
    if (f && getdelim(&text, &len, '\0', f) > 0) {
      bool all = true;
      for (size_t i = 0; words[i]; i++)
        all = all && strstr(text, words[i]);
      if (all) {
        free(text);
        fclose(f);
        return 0;
      }
    }
    free(text);
    if (f)
      fclose(f);
    e2e_sleep_ms(5);
  } while (e2e_now_ms() < end);
  return -1;
}

static void put_policy(drv_t *d, const char *const *kv)
{
  json_t *cm = e2e_policy_configmap(kv);
  cr_assert_eq(e2e_apiserver_put(&d->api, "configmaps", cm), 0);
  json_decref(cm);
}

/*
 * The policy ConfigMap is hot-reloaded by every replica: max_sharers 2, a
 * platform rule DRA cannot express, makes the filter turn away a card that
 * already has two tenants, with a reason; a bad value is then rejected with
 * a log line naming it, and the last good policy stays in force.
 */
Test(e2e, policy_hot_reload, .fini = teardown)
{
  static const char *const TWO[] =
      {"strategy",   "fragmentation",           "device_choice", "first-fit",
       "island_map", "H100=8,gpu-a100-:A100=2", "max_sharers",   "2",
       NULL};
  static const char *const BAD[] = {"strategy", "fragmentation", "max_sharers", "lots", NULL};
  drv_t *d = &D;
  char why[300];
  drv_setup(d, SHIPPED, 2, 6, SEED, 0);
  place_shares(d, 2, "gpu-rtx-0");
  put_policy(d, TWO);
  d->policy = TWO;
  for (size_t r = 0; r < d->nreplicas; r++) {
    int64_t end = e2e_now_ms() + 10000;
    while (!drv_policy_in_force(d, d->sf[r].port, why, sizeof why))
      cr_assert_lt(e2e_now_ms(), end, "replica %zu never applied the new policy: %s", r, why);
  }
  e2e_pod_t pr[1];
  probes(pr, 1);
  pr[0].share = 4 * E2E_GI;
  json_t *names = json_array();
  drv_add_claims(d, pr, 1);
  for (size_t k = 0; k < d->cl.nnodes; k++)
    json_array_append_new(names, json_string(d->cl.nodes[k].name));
  e2e_alloc_t a;
  const e2e_node_t *rtx0 = &d->cl.nodes[0];
  while (strcmp(rtx0->name, "gpu-rtx-0") != 0)
    rtx0++;
  cr_assert(e2e_ffit(rtx0, &pr[0], &a), "DRA would still place it on gpu-rtx-0");
  for (size_t r = 0; r < d->nreplicas; r++) {
    long st;
    json_t *rep = drv_call(d->sf[r].port, "/filter", &pr[0], names, &st);
    const json_t *ok = json_object_get(rep, "NodeNames");
    cr_assert_eq(json_array_size(ok), 6, "replica %zu: the six cards with no tenant", r);
    const char *reason = json_string_value(
        json_object_get(json_object_get(rep, "FailedNodes"), "gpu-rtx-0"));
    cr_assert(reason && *reason, "replica %zu: gpu-rtx-0 turned away without a reason", r);
    cr_log_info("max_sharers 2 on gpu-rtx-0: %s", reason);
    json_decref(rep);
  }
  json_decref(names);
  put_policy(d, BAD);
  for (size_t r = 0; r < d->nreplicas; r++) {
    const char *words[] = {"policy rejected", "max_sharers", "lots", NULL};
    cr_assert_eq(log_says(d->sf[r].log, words, 10000), 0,
                 "replica %zu logged no rejection naming max_sharers and 'lots' (%s)", r,
                 d->sf[r].log);
    cr_assert(drv_policy_in_force(d, d->sf[r].port, why, sizeof why),
              "replica %zu dropped the last good policy: %s", r, why);
  }
  drv_stop_all(d);
}

/* Waits until replica r's index holds n nodes. */
static void wait_nodes(drv_t *d, size_t r, double n)
{
  static const char *const series[1] = {"slicefit_index_nodes"};
  double v = -1;
  int64_t end = e2e_now_ms() + 10000;
  while (e2e_metrics(d->sf[r].port, series, &v, 1) != 0 || v != n) {
    cr_assert_lt(e2e_now_ms(), end, "replica %zu holds %g nodes, expected %g", r, v, n);
    e2e_sleep_ms(2);
  }
}

/*
 * Two replicas with different histories must still answer alike: the second
 * starts after a node's slice has left and come back, which the first saw
 * happen. Only the API's current state may decide an answer (PRODUCT.md,
 * principle 2), not the order in which a replica met the nodes.
 */
Test(e2e, replicas_agree_after_node_churn, .fini = teardown)
{
  drv_t *d = &D;
  char buf[256];
  drv_setup(d, FIXED_MIX, 2, 6, SEED, DRV_LATE);
  json_t *slices = e2e_cluster_slices(&d->cl), *back = NULL;
  size_t i;
  json_t *sl;
  json_array_foreach(slices, i,
                     sl) if (strcmp(json_string_value(json_object_get(json_object_get(sl, "spec"),
                                                                      "nodeName")),
                                    "gpu-a100-0") == 0) back = sl;
  cr_assert_not_null(back);
  const char *name = json_string_value(json_object_get(json_object_get(back, "metadata"), "name"));
  cr_assert_eq(e2e_apiserver_cmd(&d->api, buf, sizeof buf, "del resourceslices %s", name), 0, "%s",
               buf);
  wait_nodes(d, 0, (double)d->cl.nnodes - 1);
  cr_assert_eq(e2e_apiserver_put(&d->api, "resourceslices", back), 0);
  wait_nodes(d, 0, (double)d->cl.nnodes);
  json_decref(slices);
  drv_start_replica(d, 1);
  e2e_pod_t pr[6];
  probes(pr, 6);
  drv_add_claims(d, pr, 6);
  json_t *a = probe_answers(d, d->sf[0].port, pr, 6), *b = probe_answers(d, d->sf[1].port, pr, 6);
  expect_same(a, b, "answers of the replica that saw the node come back and of a fresh one");
  json_decref(a);
  json_decref(b);
  drv_stop_all(d);
}

/* The prefix method finds as many failures as the whole run of the binary reports. */
Test(e2e, replay_prefixes_account_for_every_failure)
{
  static drv_t d;
  memset(&d, 0, sizeof d);
  d.policy = SHIPPED;
  d.npods = NPODS;
  snprintf(d.dir, sizeof d.dir, "/tmp/slicefit-e2e-XXXXXX");
  cr_assert_not_null(mkdtemp(d.dir));
  e2e_cluster_make(&d.cl);
  e2e_pods_make(d.pods, NPODS, SEED);
  static bool failed[NPODS];
  size_t n = rc_replay_failures(&d, failed), sum = 0;
  for (size_t i = 0; i < NPODS; i++)
    sum += failed[i];
  cr_assert_eq(sum, n);
  char trace[160], pol[160];
  snprintf(trace, sizeof trace, "%s/trace.jsonl", d.dir);
  snprintf(pol, sizeof pol, "%s/policy.json", d.dir);
  cr_assert_eq(e2e_trace_write(trace, &d.cl, d.pods, NPODS), 0);
  cr_assert_eq(rc_policy_file(pol, SHIPPED), 0);
  json_t *run = rc_run_binary(&d, trace, pol);
  cr_assert_eq(json_integer_value(json_object_get(run, "pods_failed")), (json_int_t)n);
  cr_assert_gt(n, 0, "the workload never fills the cluster");
  cr_log_info("replay: %zu of %d pods fail", n, NPODS);
  json_decref(run);
  e2e_rmdir(d.dir);
}

/*
 * High availability: kube-scheduler calls slicefit through its Service, and
 * one of the two replicas is killed (SIGKILL: a node failure, an OOM kill;
 * no drain) a third of the way through the run. The Service keeps sending
 * every other call to the dead replica until it is back (the worst case:
 * no endpoint removal); each refused call is retried after a back-off and
 * answered by the other replica. No pod is lost (every pod fares as in the
 * replay, which knows no failure; none is left Pending that DRA could
 * place), a pod waits at most one back-off and one call, and the restarted
 * replica rebuilds the same index from the API server. The figures are
 * logged (docs/operators.md, "High availability", quotes them).
 */
Test(e2e, replica_killed_mid_run_loses_no_pod, .fini = teardown)
{
  drv_t *d = &D;
  drv_setup(d, SHIPPED, 2, NPODS, SEED, DRV_TLS);
  d->service = true;
  d->backoff_ms = 100; /* kube-scheduler's is 1 s (podInitialBackoffSeconds), scaled down */
  size_t n = drv_nevents(d);
  drv_run(d, 0, n / 3, 0);
  cr_assert_eq(d->failed_calls, 0);
  cr_assert_eq(e2e_slicefit_kill(&d->sf[1]), 0, "SIGKILL of replica 1");
  drv_run(d, n / 3, n / 2, 0);
  size_t refused = d->failed_calls;
  int64_t t = e2e_now_ms();
  drv_start_replica(d, 1);
  int64_t ready_ms = e2e_now_ms() - t;
  drv_wait_seen(d);
  for (size_t r = 0; r < d->nreplicas; r++)
    drv_check_state(d, d->sf[r].port);
  drv_run(d, n / 2, n, 40);
  size_t placed = 0, rejected = 0;
  for (size_t i = 0; i < d->npods; i++) {
    placed += d->out[i] == OUT_PLACED;
    rejected += d->out[i] == OUT_EXTENDER_EMPTY || d->out[i] == OUT_ERROR;
  }
  cr_log_info("e2e HA: replica 1 killed after %zu of %zu events; %zu calls refused while it was "
              "down, each answered by replica 0 after one back-off (%zu retried, longest wait "
              "%lld ms with a %d ms back-off); the restarted replica was ready %lld ms after it "
              "started; %zu pods placed, %zu lost",
              n / 3, n, refused, d->retried_calls, (long long)d->max_wait_ms, d->backoff_ms,
              (long long)ready_ms, placed, rejected);
  cr_expect_gt(refused, 0, "no call reached the dead replica: the test proves nothing");
  cr_expect_eq(d->failed_calls, refused, "calls failed after the replica was back");
  cr_expect_eq(d->retried_calls, refused, "a refused call was retried more than once");
  cr_expect_lt(d->max_wait_ms, d->backoff_ms + 1000, "a pod waited %lld ms",
               (long long)d->max_wait_ms);
  cr_expect_eq(rejected, 0, "pods left Pending although DRA could place them: %s", d->first_problem);
  cr_expect_eq(d->dropped_feasible, 0, "%s", d->first_problem);
  drv_stop_all(d);
  replay_check(d);
}
