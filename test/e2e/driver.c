/*
 * The scheduler driver: for each arriving pod it does what kube-scheduler
 * does for a DRA pod with slicefit as its extender (k8s-wire.md part 1 and
 * §1.5), in the order the scheduler does it:
 *
 *   1. the pod's ResourceClaim is created (the claim controller, from the
 *      pod's template), and the driver waits until every slicefit replica
 *      holds it (slicefit_objects{kind="ResourceClaim"} on /metrics);
 *   2. the in-tree DRA filter: the nodes where the driver's own first-fit
 *      allocator can place the claim (ffit.c); none -> the pod stays
 *      Pending and is withdrawn (its claim deleted), as the replay drops it;
 *   3. POST /filter with ExtenderArgs {Pod, Nodes: null, NodeNames} (the
 *      manifests set nodeCacheCapable: true); every replica is asked and
 *      must answer alike;
 *   4. with one node left the scheduler takes it; otherwise POST /prioritize
 *      on the filtered names, and the best score wins (ties: first by name);
 *   5. Reserve/PreBind: the first-fit allocator allocates on that node and
 *      the driver writes status.allocation back to the API server (devices
 *      with consumedCapacity and shareID, nodeSelector, reservedFor), then
 *      waits until every replica holds the allocation.
 *
 * A departure deletes the pod's claim. After each arrival the driver
 * measures allocation as slicefit-replay's mark() does, so the run can be
 * held against the replay of the same trace.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "driver.h"

#define TOKEN "e2e-token-3f9a"
#define SEEN_DEADLINE_MS 10000

static const int THRESH[9] = {50, 80, 90, 95, 100, 105, 110, 120, 130};

void drv_problem(drv_t *d, const char *fmt, ...)
{
  if (d->first_problem[0])
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(d->first_problem, sizeof d->first_problem, fmt, ap);
  va_end(ap);
}

static int cmp_event(const void *a, const void *b)
{
  const drv_event_t *x = a, *y = b;
  if (x->t != y->t)
    return x->t < y->t ? -1 : 1;
  if (x->leave != y->leave)
    return x->leave ? -1 : 1; /* departures first, as the replay orders them */
  return (x->pod > y->pod) - (x->pod < y->pod);
}

static void load(drv_t *d, const char *res, json_t *items)
{
  char path[160], buf[256];
  snprintf(path, sizeof path, "%s/%s.json", d->dir, res);
  cr_assert_eq(json_dump_file(items, path, JSON_COMPACT), 0);
  cr_assert_eq(e2e_apiserver_cmd(&d->api, buf, sizeof buf, "load %s %s", res, path), 0, "load %s: %s",
               res, buf);
  json_decref(items);
}

/* True when /debug/state shows every key of the driver's policy with its value. */
bool drv_policy_in_force(const drv_t *d, unsigned port, char *why, size_t len)
{
  json_t *st = e2e_http_json(port, "GET", "/debug/state", NULL, NULL);
  const json_t *pol = json_object_get(st, "policy");
  bool ok = pol != NULL;
  snprintf(why, len, "no policy in /debug/state");
  for (size_t i = 0; ok && d->policy[i]; i += 2) {
    const char *v = json_string_value(json_object_get(pol, d->policy[i]));
    ok = v && strcmp(v, d->policy[i + 1]) == 0;
    snprintf(why, len, "%s is '%s', the ConfigMap says '%s'", d->policy[i], v ? v : "(none)",
             d->policy[i + 1]);
  }
  json_decref(st);
  return ok;
}

/*
 * The daemon's flags as manifests/deployment.yaml gives them, the kubeconfig standing in for
 * in-cluster auth (its token goes to the loopback fake over plain http, which takes a flag).
 */
void drv_start_replica(drv_t *d, size_t r)
{
  char cm[] = "--policy-configmap=slicefit-system/slicefit-policy", kc[200], crt[200], key[200];
  snprintf(kc, sizeof kc, "--kubeconfig=%s", d->kubeconfig);
  snprintf(crt, sizeof crt, "--tls-cert-file=%s", d->cert);
  snprintf(key, sizeof key, "--tls-private-key-file=%s", d->key);
  const char *args[] = {kc, cm, "--allow-token-over-http", d->tls ? crt : NULL, key, NULL};
  cr_assert_eq(e2e_slicefit_start(&d->sf[r], d->dir, args), 0);
  cr_assert_eq(e2e_slicefit_wait_ready(&d->sf[r], 15000), 0,
               "slicefit replica %zu not ready on port %u (log %s; SLICEFIT_E2E_KEEP=1 keeps it)", r,
               d->sf[r].port, d->sf[r].log);
  /* Ready means synced, the policy ConfigMap included. */
  char why[300];
  cr_assert(drv_policy_in_force(d, d->sf[r].port, why, sizeof why), "replica %zu ready, but %s", r,
            why);
}

/* bin/slicefit exists once extender/main.c does; until then the loop has nothing to drive. */
static void need_daemon(void)
{
  char bin[512], main_c[512];
  snprintf(bin, sizeof bin, "%s", e2e_bin("slicefit"));
  snprintf(main_c, sizeof main_c, "%s/extender/main.c", e2e_top());
  if (access(bin, X_OK) != 0 && access(main_c, R_OK) != 0)
    cr_skip_test("no bin/slicefit: extender/main.c is not in this tree yet");
  cr_assert_eq(access(bin, X_OK), 0, "%s is not built", bin);
  /* The flags the manifests run it with; without them there is no live source to watch. */
  char cmd[600], *help = NULL;
  size_t len = 0;
  snprintf(cmd, sizeof cmd, "%s --help 2>&1", bin);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p);
  if (getdelim(&help, &len, '\0', p) < 0) { /* nothing read: the check below fails */
    free(help);
    help = NULL;
  }
  pclose(p);
  bool ok = help && strstr(help, "--kubeconfig") && strstr(help, "--policy-configmap");
  free(help);
  cr_assert(ok, "bin/slicefit --help lists no --kubeconfig or --policy-configmap: the daemon "
                "cannot watch an API server yet (extender/main.c, extender/daemon.c)");
}

void drv_restart(drv_t *d, size_t r)
{
  cr_assert_eq(e2e_slicefit_stop(&d->sf[r]), 0, "SIGTERM: slicefit did not exit 0 (log %s)",
               d->sf[r].log);
  drv_start_replica(d, r);
}

void drv_setup(drv_t *d, const char *const *policy, size_t nreplicas, size_t npods, uint64_t seed,
               unsigned flags)
{
  need_daemon();
  memset(d, 0, sizeof *d);
  d->tls = flags & DRV_TLS;
  d->policy = policy;
  d->nreplicas = nreplicas;
  d->npods = npods;
  snprintf(d->dir, sizeof d->dir, "/tmp/slicefit-e2e-XXXXXX");
  cr_assert_not_null(mkdtemp(d->dir));
  e2e_cluster_make(&d->cl);
  e2e_pods_make(d->pods, npods, seed);
  for (uint32_t i = 0; i < npods; i++) {
    d->ev[d->nev++] = (drv_event_t){d->pods[i].at, i, false};
    d->ev[d->nev++] = (drv_event_t){d->pods[i].until, i, true};
    d->node_of[i] = -1;
  }
  qsort(d->ev, d->nev, sizeof d->ev[0], cmp_event);
  for (size_t i = 0; i < d->cl.nnodes; i++)
    for (size_t g = 0; g < d->cl.nodes[i].ndevs; g++)
      d->cap_milli += 1000;
  char log[160];
  snprintf(log, sizeof log, "%s/fake-apiserver.log", d->dir);
  cr_assert_eq(e2e_apiserver_start(&d->api, TOKEN, log), 0, "fake-apiserver did not start (%s)",
               e2e_tool("fake-apiserver"));
  load(d, "resourceslices", e2e_cluster_slices(&d->cl));
  load(d, "deviceclasses", e2e_device_classes());
  json_t *cm = e2e_policy_configmap(policy);
  cr_assert_eq(e2e_apiserver_put(&d->api, "configmaps", cm), 0);
  json_decref(cm);
  snprintf(d->kubeconfig, sizeof d->kubeconfig, "%s/kubeconfig", d->dir);
  if (d->tls)
    cr_assert_eq(e2e_tls_make(d->dir, d->cert, d->key, sizeof d->cert), 0,
                 "openssl could not make a certificate (%s/openssl.log)", d->dir);
  e2e_http_use_ca(d->tls ? d->cert : NULL);
  cr_assert_eq(e2e_kubeconfig_write(d->kubeconfig, d->api.port, TOKEN), 0);
  /* DRV_LATE: the test starts replicas 1.. itself, after what it wants them not to see. */
  for (size_t r = 0; r < ((flags & DRV_LATE) ? 1 : nreplicas); r++)
    drv_start_replica(d, r);
}

void drv_stop_all(drv_t *d)
{
  for (size_t r = 0; r < d->nreplicas; r++) {
    int st = e2e_slicefit_stop(&d->sf[r]);
    cr_expect_eq(st, 0, "replica %zu exited %d on SIGTERM (sanitizer report? log %s)", r, st,
                 d->sf[r].log);
  }
  /* Checked here, in the test's body: an assertion in .fini does not fail a test. */
  e2e_apiserver_stop(&d->api);
  char why[200];
  size_t strays = e2e_reap_strays(why, sizeof why);
  cr_expect_eq(strays, 0, "%zu process(es) the test started would have outlived it (pids %s)", strays,
               why);
}

void drv_teardown(drv_t *d)
{
  for (size_t r = 0; r < d->nreplicas; r++)
    if (d->sf[r].pid > 0)
      e2e_slicefit_stop(&d->sf[r]);
  e2e_apiserver_stop(&d->api);
  /* A failed test may leave some: kill them, as the report already says it failed. */
  e2e_reap_strays(NULL, 0);
  if (d->dir[0])
    e2e_rmdir(d->dir);
}

size_t drv_nevents(const drv_t *d)
{
  return d->nev;
}

/* ---- waiting for the replicas ---- */

static bool holds(unsigned port, size_t claims, size_t allocs)
{
  static const char *const series[2] = {"slicefit_objects{kind=\"ResourceClaim\"}",
                                        "slicefit_index_allocations"};
  double v[2];
  return e2e_metrics(port, series, v, 2) == 0 && v[0] == (double)claims && v[1] == (double)allocs;
}

void drv_wait_seen(drv_t *d)
{
  for (size_t r = 0; r < d->nreplicas && d->sf[r].pid > 0; r++) {
    int64_t end = e2e_now_ms() + SEEN_DEADLINE_MS;
    while (!holds(d->sf[r].port, d->claims, d->allocs)) {
      cr_assert_lt(e2e_now_ms(), end,
                   "replica %zu never showed %zu claims and %zu allocations (log %s)", r, d->claims,
                   d->allocs, d->sf[r].log);
      e2e_sleep_ms(2);
    }
  }
}

/* ---- the extender calls ---- */

json_t *drv_call(unsigned port, const char *verb, const e2e_pod_t *p, json_t *names, long *status)
{
  json_t *args = json_pack("{s:o,s:n,s:O}", "Pod", e2e_pod_json(p), "Nodes", "NodeNames", names);
  json_t *r = e2e_http_json(port, "POST", verb, args, status);
  json_decref(args);
  return r;
}

/* Through the Service: the next replica in turn, retried after a back-off while calls fail. */
static json_t *call_service(drv_t *d, const char *verb, const e2e_pod_t *p, json_t *names)
{
  int64_t first_refusal = -1;
  int backoff = d->backoff_ms;
  for (int attempt = 0; attempt < 20; attempt++) {
    long st = 0;
    json_t *rep = drv_call(d->sf[d->next_replica++ % d->nreplicas].port, verb, p, names, &st);
    if (st == 200 && rep) {
      if (first_refusal >= 0) {
        int64_t waited = e2e_now_ms() - first_refusal;
        d->max_wait_ms = waited > d->max_wait_ms ? waited : d->max_wait_ms;
        d->retried_calls++;
      }
      return rep;
    }
    json_decref(rep);
    d->failed_calls++;
    if (first_refusal < 0)
      first_refusal = e2e_now_ms();
    e2e_sleep_ms(backoff);
    backoff = backoff * 2 > 10 * d->backoff_ms ? 10 * d->backoff_ms : backoff * 2;
  }
  cr_assert_fail("%s %s: no replica answered in 20 attempts", verb, p->name);
  return NULL;
}

/* Calls every replica, checks they agree, returns replica 0's reply (or through the Service). */
static json_t *call_all(drv_t *d, const char *verb, const e2e_pod_t *p, json_t *names)
{
  if (d->service)
    return call_service(d, verb, p, names);
  long st;
  json_t *first = drv_call(d->sf[0].port, verb, p, names, &st);
  cr_assert_eq(st, 200, "%s %s: HTTP %ld", verb, p->name, st);
  cr_assert_not_null(first, "%s %s: no JSON reply", verb, p->name);
  for (size_t r = 1; r < d->nreplicas && d->sf[r].pid > 0; r++) {
    json_t *other = drv_call(d->sf[r].port, verb, p, names, &st);
    if (st != 200 || !json_equal(first, other)) {
      d->replica_diffs++;
      char *a = json_dumps(first, JSON_COMPACT), *b = json_dumps(other, JSON_COMPACT);
      drv_problem(d, "%s %s: replica 0 said %s, replica %zu said %s", verb, p->name, a, r,
                  b ? b : "(nothing)");
      free(a);
      free(b);
    }
    json_decref(other);
  }
  return first;
}

static bool in_array(const json_t *arr, const char *s)
{
  size_t i;
  json_t *v;
  json_array_foreach(arr, i,
                     v) if (json_is_string(v) && strcmp(json_string_value(v), s) == 0) return true;
  return false;
}

/* POST /filter; the names that passed (new array). */
static json_t *filter(drv_t *d, const e2e_pod_t *p, json_t *feasible)
{
  json_t *rep = call_all(d, "/filter", p, feasible);
  d->filter_calls++;
  const char *err = json_string_value(json_object_get(rep, "Error"));
  cr_assert(err == NULL || *err == '\0', "filter %s: Error %s", p->name, err);
  json_t *names = json_object_get(rep, "NodeNames");
  cr_assert(json_is_array(names), "filter %s: NodeNames is not an array", p->name);
  size_t i;
  json_t *v;
  json_array_foreach(names, i, v)
      cr_assert(in_array(feasible, json_string_value(v)), "filter %s returned %s, not asked", p->name,
                json_string_value(v));
  json_array_foreach(feasible, i, v)
  {
    if (in_array(names, json_string_value(v)))
      continue;
    /* The default policy has no platform rule: dropping a feasible node has no reason. */
    d->dropped_feasible++;
    json_t *why = json_object_get(json_object_get(rep, "FailedNodes"), json_string_value(v));
    drv_problem(d, "filter %s dropped DRA-feasible node %s: %s", p->name, json_string_value(v),
                why ? json_string_value(why) : "(no reason given)");
  }
  json_t *out = json_incref(names);
  json_decref(rep);
  return out;
}

/* POST /prioritize; the best-scored name (ties: first in name order). */
static const char *prioritize(drv_t *d, const e2e_pod_t *p, json_t *names)
{
  json_t *rep = call_all(d, "/prioritize", p, names);
  d->prioritize_calls++;
  cr_assert(json_is_array(rep), "prioritize %s: not a HostPriorityList", p->name);
  const char *best = NULL;
  json_int_t top = -1;
  size_t i, j;
  json_t *n, *hp;
  json_array_foreach(names, i, n)
  {
    json_int_t score = 0; /* a host left out scores 0 */
    json_array_foreach(rep, j, hp) if (strcmp(json_string_value(json_object_get(hp, "Host")),
                                              json_string_value(n)) == 0)
        score = json_integer_value(json_object_get(hp, "Score"));
    cr_assert(score >= 0 && score <= 10, "prioritize %s: score %lld", p->name, (long long)score);
    if (score > top) {
      top = score;
      best = json_string_value(n);
    }
  }
  static char pick[32];
  snprintf(pick, sizeof pick, "%s", best);
  json_decref(rep);
  return pick;
}

/* ---- arrivals and departures ---- */

/* A pod's share of whole GPUs in milli-GPUs, rounded as the replay rounds it. */
static int64_t share_milli(const drv_t *d, const e2e_pod_t *p)
{
  if (p->shape != E2E_SHARE)
    return p->shape == E2E_PAIR ? 2000 : 1000;
  const e2e_dev_t *card = &d->cl.nodes[d->cl.nnodes - 1].devs[0];
  return (int64_t)((double)e2e_round(card, p->share) * 1000.0 / (double)card->mem + 0.5);
}

static void mark(drv_t *d)
{
  while (d->next_thresh < 9 && THRESH[d->next_thresh] * d->cap_milli <= d->arrived_milli * 100)
    d->alloc_pct_at[d->next_thresh++] = 100.0 * (double)d->alloc_milli / (double)d->cap_milli;
}

static void reserve(drv_t *d, uint32_t i, const char *node)
{
  e2e_pod_t *p = &d->pods[i];
  size_t k = 0;
  while (strcmp(d->cl.nodes[k].name, node) != 0)
    k++;
  e2e_node_t *n = &d->cl.nodes[k];
  cr_assert(e2e_ffit(n, p, &d->alloc[i]), "the chosen node %s cannot take %s", node, p->name);
  e2e_ffit_take(n, &d->alloc[i]);
  d->node_of[i] = (int)k;
  snprintf(d->node_name[i], sizeof d->node_name[i], "%s", node);
  json_t *claim = e2e_claim_json(p);
  json_object_set_new(claim, "status", e2e_status_json(n, p, &d->alloc[i], d->share_seq++));
  cr_assert_eq(e2e_apiserver_put(&d->api, "resourceclaims", claim), 0);
  json_decref(claim);
  d->allocs++;
  d->out[i] = OUT_PLACED;
  d->alloc_milli += share_milli(d, p);
  drv_check_books(d);
}

static void withdraw(drv_t *d, uint32_t i, outcome_t why)
{
  char buf[256];
  d->out[i] = why;
  cr_assert_eq(e2e_apiserver_cmd(&d->api, buf, sizeof buf, "del resourceclaims %s/%s", E2E_NS,
                                 d->pods[i].claim),
               0, "del: %s", buf);
  d->claims--;
}

static void schedule(drv_t *d, uint32_t i)
{
  e2e_pod_t *p = &d->pods[i];
  e2e_alloc_t a;
  json_t *feasible = json_array();
  for (size_t k = 0; k < d->cl.nnodes; k++)
    if (e2e_ffit(&d->cl.nodes[k], p, &a))
      json_array_append_new(feasible, json_string(d->cl.nodes[k].name));
  if (json_array_size(feasible) == 0) {
    withdraw(d, i, OUT_NO_NODE);
  } else {
    json_t *passed = filter(d, p, feasible);
    size_t n = json_array_size(passed);
    if (n == 0) {
      withdraw(d, i, OUT_EXTENDER_EMPTY);
    } else if (n == 1) {
      d->single_node++;
      reserve(d, i, json_string_value(json_array_get(passed, 0)));
    } else {
      reserve(d, i, prioritize(d, p, passed));
    }
    json_decref(passed);
  }
  json_decref(feasible);
}

void drv_add_claims(drv_t *d, const e2e_pod_t *pods, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    json_t *claim = e2e_claim_json(&pods[i]);
    cr_assert_eq(e2e_apiserver_put(&d->api, "resourceclaims", claim), 0);
    json_decref(claim);
    d->claims++;
  }
  drv_wait_seen(d);
}

static void create_claim(drv_t *d, uint32_t i)
{
  drv_add_claims(d, &d->pods[i], 1);
}

void drv_place(drv_t *d, uint32_t i, const char *node)
{
  create_claim(d, i);
  reserve(d, i, node);
  drv_wait_seen(d);
}

static void arrive(drv_t *d, uint32_t i)
{
  create_claim(d, i);
  schedule(d, i);
  drv_wait_seen(d);
  d->arrived_milli += share_milli(d, &d->pods[i]);
  mark(d);
}

static void leave(drv_t *d, uint32_t i)
{
  char buf[256];
  if (d->node_of[i] < 0)
    return; /* never placed */
  cr_assert_eq(e2e_apiserver_cmd(&d->api, buf, sizeof buf, "del resourceclaims %s/%s", E2E_NS,
                                 d->pods[i].claim),
               0, "del: %s", buf);
  e2e_ffit_give(&d->cl.nodes[d->node_of[i]], &d->alloc[i]);
  d->alloc_milli -= share_milli(d, &d->pods[i]);
  d->node_of[i] = -1; /* gone; out[i] keeps what happened */
  d->claims--;
  d->allocs--;
  drv_wait_seen(d);
}

void drv_run(drv_t *d, size_t first, size_t last, size_t check_every)
{
  mark(d);
  for (size_t e = first; e < last && e < d->nev; e++) {
    if (d->ev[e].leave)
      leave(d, d->ev[e].pod);
    else
      arrive(d, d->ev[e].pod);
    if (check_every && (e + 1) % check_every == 0)
      for (size_t r = 0; r < d->nreplicas; r++)
        drv_check_state(d, d->sf[r].port);
  }
}

/* ---- the books ---- */

void drv_check_books(const drv_t *d)
{
  int64_t used[E2E_MAX_NODES][E2E_MAX_DEVS] = {{0}};
  int holders[E2E_MAX_NODES][E2E_MAX_DEVS] = {{0}};
  for (size_t i = 0; i < d->npods; i++) {
    if (d->node_of[i] < 0)
      continue;
    for (size_t k = 0; k < d->alloc[i].n; k++) {
      used[d->node_of[i]][d->alloc[i].dev[k]] += d->alloc[i].consumed[k];
      holders[d->node_of[i]][d->alloc[i].dev[k]]++;
    }
  }
  for (size_t n = 0; n < d->cl.nnodes; n++)
    for (size_t g = 0; g < d->cl.nodes[n].ndevs; g++) {
      const e2e_dev_t *dv = &d->cl.nodes[n].devs[g];
      cr_assert_eq(used[n][g], dv->used, "%s/%s: books %lld, allocations %lld", d->cl.nodes[n].name,
                   dv->name, (long long)dv->used, (long long)used[n][g]);
      cr_assert_eq(holders[n][g], dv->nalloc);
      if (dv->shared)
        cr_assert_leq(used[n][g], dv->mem, "%s/%s overcommitted", d->cl.nodes[n].name, dv->name);
      else
        cr_assert_leq(holders[n][g], 1, "%s/%s given twice", d->cl.nodes[n].name, dv->name);
    }
}

/* ---- slicefit's view: GET /debug/state ---- */

static const e2e_dev_t *book_dev(const drv_t *d, const char *pool, const char *dev)
{
  for (size_t n = 0; n < d->cl.nnodes; n++)
    for (size_t g = 0; strcmp(d->cl.nodes[n].name, pool) == 0 && g < d->cl.nodes[n].ndevs; g++)
      if (strcmp(d->cl.nodes[n].devs[g].name, dev) == 0)
        return &d->cl.nodes[n].devs[g];
  return NULL;
}

/* One device of the state against the books: holders, and free memory on shared cards. */
static void check_dev(drv_t *d, unsigned port, const json_t *jd)
{
  const char *pool = json_string_value(json_object_get(jd, "pool"));
  const char *name = json_string_value(json_object_get(jd, "name"));
  const e2e_dev_t *b = book_dev(d, pool, name);
  cr_assert_not_null(b, "port %u: /debug/state has a device %s/%s the cluster lacks", port, pool,
                     name);
  json_int_t holders = json_integer_value(json_object_get(jd, "holders"));
  cr_assert_eq(holders, b->nalloc, "port %u: %s/%s held by %lld, the driver's books say %d", port,
               pool, name, (long long)holders, b->nalloc);
  cr_assert_eq(json_is_true(json_object_get(jd, "shared")), b->shared, "%s/%s shared", pool, name);
  if (!b->shared) {
    cr_assert_leq(holders, 1, "port %u: exclusive %s/%s given to %lld", port, pool, name,
                  (long long)holders);
    return;
  }
  const json_t *mem = json_object_get(json_object_get(jd, "capacity"), E2E_DRIVER "/memory");
  cr_assert_not_null(mem, "port %u: %s/%s has no memory capacity in the state", port, pool, name);
  json_int_t fr = json_integer_value(json_object_get(mem, "free_milli"));
  json_int_t val = json_integer_value(json_object_get(mem, "value_milli"));
  cr_assert_eq(val, b->mem * 1000, "%s/%s value", pool, name);
  cr_assert_geq(fr, 0, "port %u: %s/%s overcommitted (free %lld)", port, pool, name, (long long)fr);
  cr_assert_eq(fr, (b->mem - b->used) * 1000, "port %u: %s/%s free %lld milli, books %lld bytes",
               port, pool, name, (long long)fr, (long long)(b->mem - b->used));
}

/* The allocations of the state are exactly the driver's live placements, device for device. */
static void check_allocs(drv_t *d, unsigned port, const json_t *allocs)
{
  size_t live = 0, i;
  json_t *a;
  for (size_t k = 0; k < d->npods; k++)
    live += d->node_of[k] >= 0;
  cr_assert_eq(json_array_size(allocs), live, "port %u: %zu allocations, the driver has %zu", port,
               json_array_size(allocs), live);
  json_array_foreach(allocs, i, a)
  {
    const char *key = json_string_value(json_object_get(a, "claim"));
    size_t k = 0;
    while (k < d->npods && (d->node_of[k] < 0 || strcmp(key + strlen(E2E_NS) + 1, d->pods[k].claim)))
      k++;
    cr_assert_lt(k, d->npods, "port %u: allocation %s the driver never made", port, key);
    cr_assert(json_is_true(json_object_get(a, "recorded")), "port %u: %s not recorded", port, key);
    cr_assert_str_eq(json_string_value(json_object_get(a, "node")), d->node_name[k]);
    const json_t *devs = json_object_get(a, "devices");
    cr_assert_eq(json_array_size(devs), d->alloc[k].n, "%s: device count", key);
    for (size_t g = 0; g < d->alloc[k].n; g++)
      cr_assert_str_eq(json_string_value(json_array_get(devs, g)),
                       d->cl.nodes[d->node_of[k]].devs[d->alloc[k].dev[g]].name, "%s", key);
  }
}

void drv_check_state(drv_t *d, unsigned port)
{
  long st;
  json_t *s = e2e_http_json(port, "GET", "/debug/state", NULL, &st);
  cr_assert_eq(st, 200, "GET /debug/state on %u: HTTP %ld", port, st);
  const json_t *objs = json_object_get(s, "objects");
  cr_assert_eq(json_integer_value(json_object_get(objs, "ResourceClaim")), (json_int_t)d->claims);
  cr_assert_eq(json_integer_value(json_object_get(objs, "ResourceSlice")), (json_int_t)d->cl.nnodes);
  const json_t *nodes = json_object_get(s, "nodes");
  cr_assert_eq(json_array_size(nodes), d->cl.nnodes, "port %u: nodes in the state", port);
  size_t i, j, ndev = 0;
  json_t *n, *jd;
  json_array_foreach(nodes, i, n) json_array_foreach(json_object_get(n, "devices"), j, jd)
  {
    check_dev(d, port, jd);
    ndev++;
  }
  cr_assert_eq(ndev, (size_t)d->cap_milli / 1000, "port %u: devices in the state", port);
  check_allocs(d, port, json_object_get(s, "allocations"));
  d->state_checks++;
  json_decref(s);
}

static int strcmp_ptr(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts every array by its elements' canonical text, depth first. */
static void canon(json_t *v)
{
  const char *k;
  json_t *x;
  size_t i;
  if (json_is_object(v)) {
    json_object_foreach(v, k, x) canon(x);
    return;
  }
  if (!json_is_array(v))
    return;
  size_t n = json_array_size(v);
  char **txt = calloc(n + 1, sizeof *txt);
  json_array_foreach(v, i, x)
  {
    canon(x);
    txt[i] = json_dumps(x, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
  }
  qsort(txt, n, sizeof *txt, strcmp_ptr);
  json_array_clear(v);
  for (i = 0; i < n; i++) {
    json_array_append_new(v, json_loads(txt[i], JSON_DECODE_ANY, NULL));
    free(txt[i]);
  }
  free(txt);
}

json_t *drv_state_canonical(unsigned port)
{
  long st;
  json_t *s = e2e_http_json(port, "GET", "/debug/state", NULL, &st);
  cr_assert_eq(st, 200, "GET /debug/state on %u: HTTP %ld", port, st);
  canon(s);
  return s;
}
