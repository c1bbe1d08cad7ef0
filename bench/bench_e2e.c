/*
 * bench_e2e: pods with claims placed end to end, as a cluster places them,
 * at a stated pods per second. A benchmark, never a test: it prints figures
 * and exits 0 whatever they are (1 only when the run itself breaks).
 *
 * It runs the end-to-end harness's pieces (test/e2e: the fake kube-apiserver,
 * bin/slicefit watching it, the first-fit allocator that stands in for the
 * in-tree DRA plugin) on a cluster of NODES nodes in the e2e cluster's
 * proportions (3 of 4 x A100 : 2 of 8 x H100 : 7 of one shared 20 GB card),
 * and places PODS pods of the e2e workload (60% 4Gi shares, 30% whole
 * cards, 10% pairs of H100), one after the other, each as kube-scheduler
 * with slicefit as its extender would:
 *
 *   1. the pod and its pending ResourceClaim are written to the API server
 *      (the claim controller), and the loop waits until slicefit's watches
 *      have applied both;
 *   2. the in-tree DRA filter: the nodes where first fit places the claim;
 *   3. POST /filter over those names (nodeCacheCapable), then POST
 *      /prioritize over the names that passed; the best score wins;
 *   4. Reserve/PreBind/Bind: the claim's status.allocation and the pod's
 *      spec.nodeName are written to the API server, and the loop waits until
 *      slicefit's watches have applied both before the next pod is placed.
 *
 * "Applied" is read from slicefit's log at -v=5, a line per watch event
 * applied (four per pod), polled every 50 us. The first WARM pods are placed
 * before the clock starts.
 *
 * usage: bench_e2e [PODS [NODES]]     (PODS default 1000, NODES 5000)
 *   BENCH_WARM=N pods placed before timing (default 50).
 *   BENCH_KEEP=1 keeps the scratch folder (logs) in /tmp.
 *   BENCH_HOLD=SECS waits that long, daemon ready, before timing: attach
 *   perf or callgrind_control to the pid it prints.
 *
 * It prints pods/s, the wall time of each step per pod (median, p99) and the
 * CPU per pod of each process (this loop, bin/slicefit, the fake API server).
 */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include "../test/e2e/e2e.h"
#include "bench_proc.h"

#define TOKEN "bench-e2e-token"
#define NSTEPS 8

static const char *const STEP[NSTEPS] = {"create pod+claim", "wait: watches",    "DRA first fit",
                                         "POST /filter",     "POST /prioritize", "JSON in the loop",
                                         "bind+allocate",    "wait: watches"};

/* The shipped policy with the islands of this cluster (test/e2e/test_e2e.c's SHIPPED). */
static const char *const POLICY[] = {"strategy",  "fragmentation", "device_choice",
                                     "first-fit", "island_map",    "H100=8,gpu-a100-:A100=2",
                                     NULL};

typedef struct {
  e2e_node_t *nodes;
  size_t nnodes;
  json_t *node_at; /* name -> index */
  e2e_apiserver_t api;
  e2e_slicefit_t sf;
  char dir[64];
  unsigned seq;      /* shareID sequence */
  double events;     /* watch events written so far: what slicefit must show applied */
  size_t polls;      /* looks at the log while waiting */
  size_t no_node;    /* pods DRA found no node for */
  size_t single;     /* filter left one node: no prioritize */
  size_t names_sent; /* node names sent to filter, in all */
  int logfd;         /* slicefit's log, read as it grows */
  char *logbuf;      /* what was read of it after the last whole line */
  size_t loglen, logcap;
  double applied; /* watch events the log shows applied */
} bench_t;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "bench_e2e: ");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  e2e_reap_strays(NULL, 0);
  exit(1);
}

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double self_cpu_s(void)
{
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* ---- setup ---- */

static void load(bench_t *b, const char *res, json_t *items)
{
  char path[160], buf[256];
  snprintf(path, sizeof path, "%s/%s.json", b->dir, res);
  if (json_dump_file(items, path, JSON_COMPACT) != 0)
    die("cannot write %s", path);
  json_decref(items);
  if (e2e_apiserver_cmd(&b->api, buf, sizeof buf, "load %s %s", res, path) != 0)
    die("fake-apiserver: %s", buf);
}

static void setup(bench_t *b, size_t nnodes)
{
  snprintf(b->dir, sizeof b->dir, "/tmp/slicefit-bench-e2e-XXXXXX");
  if (mkdtemp(b->dir) == NULL)
    die("cannot make %s", b->dir);
  b->nnodes = nnodes;
  b->nodes = calloc(nnodes, sizeof *b->nodes);
  b->node_at = json_object();
  e2e_nodes_make(b->nodes, nnodes);
  json_t *slices = json_array();
  for (size_t i = 0; i < nnodes; i++) {
    json_array_append_new(slices, e2e_node_slice(&b->nodes[i], i));
    json_object_set_new(b->node_at, b->nodes[i].name, json_integer((json_int_t)i));
  }
  char log[160], kc[160];
  snprintf(log, sizeof log, "%s/fake-apiserver.log", b->dir);
  if (e2e_apiserver_start(&b->api, TOKEN, log) != 0)
    die("fake-apiserver did not start (%s)", e2e_tool("fake-apiserver"));
  load(b, "resourceslices", slices);
  load(b, "deviceclasses", e2e_device_classes());
  json_t *cm = e2e_policy_configmap(POLICY);
  if (e2e_apiserver_put(&b->api, "configmaps", cm) != 0)
    die("fake-apiserver refused the %s", "ConfigMap");
  json_decref(cm);
  snprintf(kc, sizeof kc, "%s/kubeconfig", b->dir);
  if (e2e_kubeconfig_write(kc, b->api.port, TOKEN) != 0)
    die("cannot write %s", kc);
  char kcarg[200];
  snprintf(kcarg, sizeof kcarg, "--kubeconfig=%s", kc);
  const char *args[] = {kcarg, "--policy-configmap=slicefit-system/slicefit-policy",
                        "--allow-token-over-http", "-v=5", NULL};
  if (e2e_slicefit_start(&b->sf, b->dir, args) != 0 || e2e_slicefit_wait_ready(&b->sf, 300000) != 0)
    die("bin/slicefit did not become ready (log %s)", b->sf.log);
  b->logfd = open(b->sf.log, O_RDONLY | O_CLOEXEC);
  if (b->logfd < 0)
    die("cannot read %s", b->sf.log);
}

static void teardown(bench_t *b)
{
  int st = e2e_slicefit_stop(&b->sf);
  e2e_apiserver_stop(&b->api);
  if (st != 0)
    fprintf(stderr, "bench_e2e: slicefit exited %d on SIGTERM (log %s)\n", st, b->sf.log);
  if (!getenv("BENCH_KEEP"))
    e2e_rmdir(b->dir);
  json_decref(b->node_at);
  free(b->nodes);
  free(b->logbuf);
  close(b->logfd);
}

/* ---- the watches ---- */

/*
 * Watch events slicefit has applied so far: the lines its -v=5 log writes
 * for each, read from the log as it grows. slicefit's loop applies an event
 * before it serves the next request, so a line read here means the next
 * call sees the event. (Polling GET /metrics instead would cost the daemon
 * more than the placement itself: at 5,000 nodes it renders every node's
 * series.)
 */
static double events_applied(bench_t *b)
{
  static const char mark[] = "\"watch event\" op=";
  b->polls++;
  for (;;) {
    if (b->loglen + 4096 > b->logcap) {
      b->logcap = b->logcap ? 2 * b->logcap : 65536;
      b->logbuf = realloc(b->logbuf, b->logcap);
    }
    ssize_t got = read(b->logfd, b->logbuf + b->loglen, b->logcap - b->loglen - 1);
    if (got <= 0)
      break;
    b->loglen += (size_t)got;
  }
  b->logbuf[b->loglen] = '\0';
  char *line = b->logbuf, *nl;
  while ((nl = strchr(line, '\n')) != NULL) { /* whole lines only: a line may be half written */
    *nl = '\0';
    b->applied += strstr(line, mark) != NULL;
    line = nl + 1;
  }
  b->loglen -= (size_t)(line - b->logbuf);
  memmove(b->logbuf, line, b->loglen);
  return b->applied;
}

/* Until slicefit has applied every event written so far (b->events). */
static void wait_applied(bench_t *b)
{
  double end = now_s() + 30;
  struct timespec ts = {0, 50000L};
  while (events_applied(b) < b->events) {
    if (now_s() > end)
      die("slicefit did not apply the events written within 30 s (log %s)", b->sf.log);
    nanosleep(&ts, NULL);
  }
}

/*
 * Writes obj (steals it) with a creationTimestamp of now, as kube-apiserver
 * stamps it: the fake's fixed default would make every pending claim look
 * days old, and slicefit's pending-claim sweep would evaluate it again.
 */
static void put(bench_t *b, const char *res, json_t *obj)
{
  char stamp[32];
  time_t t = time(NULL);
  struct tm tm;
  strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
  json_object_set_new(json_object_get(obj, "metadata"), "creationTimestamp", json_string(stamp));
  if (e2e_apiserver_put(&b->api, res, obj) != 0)
    die("fake-apiserver refused a put on %s", res);
  json_decref(obj);
  b->events += 1;
}

/* ---- one pod ---- */

static json_t *post(bench_t *b, const char *verb, const e2e_pod_t *p, json_t *names, double *http)
{
  json_t *args = json_pack("{s:o,s:n,s:O}", "Pod", e2e_pod_json(p), "Nodes", "NodeNames", names);
  char *body = json_dumps(args, JSON_COMPACT), *out = NULL;
  json_decref(args);
  double t0 = now_s();
  long st = e2e_http(b->sf.port, "POST", verb, body, &out);
  *http = now_s() - t0;
  free(body);
  json_t *rep = st == 200 && out ? json_loads(out, 0, NULL) : NULL;
  free(out);
  if (rep == NULL)
    die("%s: no reply", verb);
  return rep;
}

/* The best score of a HostPriorityList, ties to the first host in `names`' order. */
static const char *best(const json_t *names, const json_t *prio)
{
  json_t *score = json_object();
  size_t i;
  json_t *hp, *n;
  json_array_foreach(prio, i, hp)
      json_object_set(score, json_string_value(json_object_get(hp, "Host")),
                      json_object_get(hp, "Score"));
  const char *pick = NULL;
  json_int_t top = -1;
  json_array_foreach(names, i, n)
  {
    json_int_t s = json_integer_value(json_object_get(score, json_string_value(n)));
    if (s > top) {
      top = s;
      pick = json_string_value(n);
    }
  }
  json_decref(score);
  return pick;
}

/* Reserve and bind on node k: the allocation, then the binding, as the scheduler writes them. */
static void bind_pod(bench_t *b, const e2e_pod_t *p, size_t k)
{
  e2e_node_t *n = &b->nodes[k];
  e2e_alloc_t a;
  if (!e2e_ffit(n, p, &a))
    die("the chosen node %s cannot take the claim", n->name);
  e2e_ffit_take(n, &a);
  json_t *claim = e2e_claim_json(p);
  json_object_set_new(claim, "status", e2e_status_json(n, p, &a, b->seq++));
  put(b, "resourceclaims", claim);
  json_t *pod = e2e_pod_json(p);
  json_object_set_new(json_object_get(pod, "spec"), "nodeName", json_string(n->name));
  put(b, "pods", pod);
}

/*
 * One pod, its steps' wall times in t (STEP's order): what the loop does
 * itself is the first fit and the JSON of the calls (encoding the
 * ExtenderArgs, decoding the replies, choosing the best score).
 */
static void place(bench_t *b, const e2e_pod_t *p, double *t)
{
  double t0 = now_s(), http;
  memset(t, 0, NSTEPS * sizeof *t);
  put(b, "resourceclaims", e2e_claim_json(p));
  put(b, "pods", e2e_pod_json(p));
  t[0] = now_s() - t0;
  t0 = now_s();
  wait_applied(b);
  t[1] = now_s() - t0;
  t0 = now_s();
  json_t *feasible = json_array();
  e2e_alloc_t a;
  for (size_t k = 0; k < b->nnodes; k++)
    if (e2e_ffit(&b->nodes[k], p, &a))
      json_array_append_new(feasible, json_string(b->nodes[k].name));
  t[2] = now_s() - t0;
  if (json_array_size(feasible) == 0) { /* Pending: the cluster is full for this shape */
    b->no_node++;
    json_decref(feasible);
    return;
  }
  b->names_sent += json_array_size(feasible);
  t0 = now_s();
  json_t *rep = post(b, "/filter", p, feasible, &http);
  json_t *passed = json_object_get(rep, "NodeNames");
  if (!json_is_array(passed) || json_array_size(passed) == 0)
    die("filter passed no DRA-feasible node for %s", p->name);
  t[3] = http;
  t[5] = now_s() - t0 - http;
  const char *pick = json_string_value(json_array_get(passed, 0));
  json_t *prio = NULL;
  if (json_array_size(passed) > 1) {
    t0 = now_s();
    prio = post(b, "/prioritize", p, passed, &http);
    pick = best(passed, prio);
    t[4] = http;
    t[5] += now_s() - t0 - http;
  } else {
    b->single++;
  }
  t0 = now_s();
  bind_pod(b, p, (size_t)json_integer_value(json_object_get(b->node_at, pick)));
  t[6] = now_s() - t0;
  t0 = now_s();
  wait_applied(b);
  t[7] = now_s() - t0;
  json_decref(prio);
  json_decref(rep);
  json_decref(feasible);
}

/* ---- report ---- */

static int cmp_d(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void report_steps(double *t, size_t n)
{
  double *col = calloc(n, sizeof *col);
  for (size_t s = 0; s < NSTEPS; s++) {
    double sum = 0;
    for (size_t i = 0; i < n; i++)
      sum += col[i] = t[i * NSTEPS + s];
    qsort(col, n, sizeof *col, cmp_d);
    printf("  %-18s mean %7.3f ms   p50 %7.3f ms   p99 %7.3f ms\n", STEP[s], sum / (double)n * 1e3,
           col[n / 2] * 1e3, col[n * 99 / 100] * 1e3);
  }
  free(col);
}

/* The e2e workload, renamed so that every pod and claim of a long run is unique. */
static e2e_pod_t *pods_make(size_t n)
{
  e2e_pod_t *pods = calloc(n, sizeof *pods);
  e2e_pods_make(pods, n, 20261208);
  for (size_t i = 0; i < n; i++) {
    char *name = pods[i].name;
    name[strlen(name) - 4] = '\0'; /* its "-%03u" */
    snprintf(name + strlen(name), sizeof pods[i].name - strlen(name), "-%06zu", i);
    snprintf(pods[i].claim, sizeof pods[i].claim, "%s-gpu-%05zx", name, i * 7919 % 0xfffff);
  }
  return pods;
}

int main(int argc, char **argv)
{
  size_t npods = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000;
  size_t nnodes = argc > 2 ? strtoul(argv[2], NULL, 10) : 5000;
  size_t warm = getenv("BENCH_WARM") ? strtoul(getenv("BENCH_WARM"), NULL, 10) : 50;
  if (npods == 0 || nnodes == 0)
    die("usage: bench_e2e [PODS [NODES]] (both positive)");
  if (getenv("SLICEFIT_TOP") && chdir(getenv("SLICEFIT_TOP")) != 0)
    die("cannot enter %s", getenv("SLICEFIT_TOP"));
  curl_global_init(CURL_GLOBAL_DEFAULT);
  bench_t b = {0};
  double t0 = now_s();
  setup(&b, nnodes);
  printf("bench_e2e: %zu nodes, ready %.1f s after the fake API server started; slicefit pid %d\n",
         nnodes, now_s() - t0, (int)b.sf.pid);
  b.events = events_applied(&b);
  e2e_pod_t *pods = pods_make(warm + npods);
  double *t = calloc(npods * NSTEPS, sizeof *t), scratch[NSTEPS];
  for (size_t i = 0; i < warm; i++)
    place(&b, &pods[i], scratch);
  if (getenv("BENCH_HOLD")) {
    printf("  holding %s s\n", getenv("BENCH_HOLD"));
    fflush(stdout);
    sleep((unsigned)atoi(getenv("BENCH_HOLD")));
  }
  size_t polls0 = b.polls, names0 = b.names_sent;
  double c_self = self_cpu_s(), c_sf = bench_cpu_s(b.sf.pid), c_api = bench_cpu_s(b.api.pid);
  t0 = now_s();
  for (size_t i = 0; i < npods; i++)
    place(&b, &pods[warm + i], &t[i * NSTEPS]);
  double total = now_s() - t0;
  c_self = self_cpu_s() - c_self;
  c_sf = bench_cpu_s(b.sf.pid) - c_sf;
  c_api = bench_cpu_s(b.api.pid) - c_api;
  printf("  %zu pods placed in %.2f s: %.0f pods/s (%zu warm-up pods before)\n", npods, total,
         (double)npods / total, warm);
  printf("  %.0f node names per filter call on average; %zu pods found no DRA-feasible node, %zu "
         "had one node left after filter\n",
         (double)(b.names_sent - names0) / (double)npods, b.no_node, b.single);
  report_steps(t, npods);
  printf("  CPU per pod: this loop %.3f ms, slicefit %.3f ms, fake API server %.3f ms; %.1f looks "
         "at the log per pod\n",
         c_self * 1e3 / (double)npods, c_sf * 1e3 / (double)npods, c_api * 1e3 / (double)npods,
         (double)(b.polls - polls0) / (double)npods);
  free(t);
  free(pods);
  teardown(&b);
  curl_global_cleanup();
  return 0;
}
