/*
 * bench_extender: bin/slicefit over HTTP, as kube-scheduler calls it. A
 * benchmark, never a test: it prints figures and exits 0 whatever they are.
 *
 * It starts bin/slicefit on loopback on a generated cluster (by default
 * build/cluster-5000.json, made by bench/gen-cluster.py --nodes 5000 if
 * missing), then one client sends, over one keep-alive connection, filter
 * then prioritize for one pod over every node name (nodeCacheCapable), back
 * to back: the pod is tenants/agent-sandbox-7, whose pending claim asks 6Gi
 * of a shared card. Targets: p99 under 2 ms per call;
 * at least 500 pods (filter+prioritize pairs) per second; the daemon's RSS
 * flat over the run (read from /proc before and after).
 *
 * usage: bench_extender [PAIRS [SNAPSHOT | NODES]]      (PAIRS default 3000)
 *   NODES (a number) uses build/cluster-NODES-x8.json, made if missing by
 *   bench/gen-cluster.py --nodes NODES --gpus 8 --allocations 5*NODES (the
 *   10,000 nodes x 8 GPUs with 50,000 allocations at 10000).
 *   BENCH_REPLY=pass sends queue/wait-any (any free GPU: the nodes with one
 *   pass), BENCH_REPLY=fail queue/wait-big (64Gi of a shared card: every node
 *   fails, with a reason each); both need such a generated cluster. The reply's
 *   size is printed.
 *   BENCH_URL=http://127.0.0.1:8888 uses a running daemon instead (RSS then
 *   needs BENCH_PID). BENCH_NODELIST=1 sends full Node objects (non-cache
 *   mode). BENCH_BODIES=DIR only writes the request body to
 *   DIR/extender-args.json, for wrk (bench/wrk-extender.lua, docs/benchmarks.md).
 *   BENCH_ALTERNATE=1 adds a second pending pod, tenants/agent-sandbox-8 asking
 *   2Gi, to a copy of the snapshot (build/cluster-alternate.json) and
 *   alternates the pairs between the two pods: the packer remembers two
 *   verdicts per node (packer/pk_fast.h FMEMO_WAYS), so each pod finds its
 *   own; a third shape in turn would not.
 */
#include <curl/curl.h>
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "bench_proc.h"
#include "slicefit/listscan.h"

static const char *pod_ns = "tenants";
static const char *pod_name = "agent-sandbox-7";
#define POD_B "agent-sandbox-8"
#define ALT_SNAPSHOT "build/cluster-alternate.json"

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
  fprintf(stderr, "bench_extender: %s\n", what);
  exit(1);
}

typedef struct {
  json_t *names;
  const char *pod;
  char *claim;
  size_t cap;
} scan_t;

static int scan_item(void *ud, const char *text, size_t len)
{
  scan_t *sc = ud;
  json_t *it = json_loadb(text, len, 0, NULL);
  const char *kind = json_string_value(json_object_get(it, "kind"));
  const json_t *md = json_object_get(it, "metadata");
  if (kind && strcmp(kind, "ResourceSlice") == 0)
    json_array_append(sc->names, json_object_get(json_object_get(it, "spec"), "nodeName"));
  const json_t *own = json_array_get(json_object_get(md, "ownerReferences"), 0);
  const char *on = json_string_value(json_object_get(own, "name"));
  if (kind && strcmp(kind, "ResourceClaim") == 0 && on && strcmp(on, sc->pod) == 0)
    snprintf(sc->claim, sc->cap, "%s", json_string_value(json_object_get(md, "name")));
  json_decref(it);
  return 0;
}

/* The node names of the snapshot's slices, and the claim pod `pod` owns, item by item. */
static json_t *scan(const char *snapshot, const char *pod, char *claim, size_t cap)
{
  scan_t sc = {json_array(), pod, claim, cap};
  sf_listscan_t ls;
  sf_listscan_init(&ls, 0);
  FILE *f = fopen(snapshot, "rb");
  if (f == NULL)
    die("cannot open the snapshot");
  static char buf[1 << 20];
  size_t got;
  while ((got = fread(buf, 1, sizeof buf, f)) > 0)
    if (sf_listscan_feed(&ls, buf, got, scan_item, &sc) != 0)
      die("the snapshot is not a List");
  fclose(f);
  sf_listscan_dispose(&ls);
  return sc.names;
}

/* ExtenderArgs for pod `name` over every node, in the mode asked. */
static char *build_body(const char *snapshot, const char *name, bool nodelist, size_t *nnodes)
{
  json_error_t je;
  char claim[256] = "";
  json_t *names = scan(snapshot, name, claim, sizeof claim);
  json_t *pod = json_load_file("test/extender/data/pod-gpu-test1.json", 0, &je);
  if (pod == NULL || claim[0] == '\0')
    die("no pod (run from the repository) or no claim for it in the snapshot");
  json_t *md = json_object_get(pod, "metadata");
  json_object_set_new(md, "namespace", json_string(pod_ns));
  json_object_set_new(md, "name", json_string(name));
  json_object_set_new(md, "uid", json_string(name)); /* the verdict cache tells pods apart */
  json_object_set_new(json_object_get(pod, "status"), "resourceClaimStatuses",
                      json_pack("[{s:s,s:s}]", "name", "gpu", "resourceClaimName", claim));
  *nnodes = json_array_size(names);
  json_t *args;
  if (nodelist) {
    json_t *items = json_array();
    size_t i;
    const json_t *n;
    json_array_foreach(names, i, n)
        json_array_append_new(items,
                              json_pack("{s:{s:O,s:{s:O}},s:{},s:{}}", "metadata", "name", n,
                                        "labels", "kubernetes.io/hostname", n, "spec", "status"));
    args = json_pack("{s:o,s:{s:{},s:o},s:n}", "Pod", pod, "Nodes", "metadata", "items", items,
                     "NodeNames");
    json_decref(names);
  } else {
    args = json_pack("{s:o,s:n,s:o}", "Pod", pod, "Nodes", "NodeNames", names);
  }
  char *body = json_dumps(args, JSON_COMPACT);
  json_decref(args);
  return body;
}

/* BENCH_ALTERNATE: our pod's claim, copied for POD_B and asking 2Gi (new text), or NULL. */
static char *alternate_claim(const char *text, size_t len)
{
  json_t *it = json_loadb(text, len, 0, NULL);
  json_t *md = json_object_get(it, "metadata");
  const char *on = json_string_value(
      json_object_get(json_array_get(json_object_get(md, "ownerReferences"), 0), "name"));
  char *out = NULL;
  if (on && strcmp(on, pod_name) == 0) {
    json_object_set_new(md, "name", json_string(POD_B "-gpu-alt"));
    json_object_set_new(md, "uid", json_string("bench-alternate-claim"));
    json_object_set_new(json_array_get(json_object_get(md, "ownerReferences"), 0), "name",
                        json_string(POD_B));
    const json_t *devices = json_object_get(json_object_get(it, "spec"), "devices");
    const json_t *req = json_object_get(json_array_get(json_object_get(devices, "requests"), 0),
                                        "exactly");
    json_t *caps = json_object_get(json_object_get(req, "capacity"), "requests");
    if (caps == NULL || json_object_set_new(caps, "memory", json_string("2Gi")) != 0)
      die("the claim of the pod asks no memory");
    out = json_dumps(it, JSON_COMPACT);
  }
  json_decref(it);
  return out;
}

typedef struct {
  FILE *out;
  size_t items;
  char *copy;
} alt_t;

static int copy_item(void *ud, const char *text, size_t len)
{
  alt_t *a = ud;
  fputs(a->items++ ? ",\n" : "", a->out);
  fwrite(text, 1, len, a->out);
  if (a->copy == NULL)
    a->copy = alternate_claim(text, len);
  return 0;
}

/*
 * BENCH_ALTERNATE: the snapshot with a copy of our pod's claim for POD_B,
 * asking 2Gi. Item by item: the 10,000-node snapshot parsed whole would take
 * about 3 GB.
 */
static void write_alternate(const char *snapshot)
{
  FILE *in = fopen(snapshot, "rb");
  alt_t a = {fopen(ALT_SNAPSHOT, "w"), 0, NULL};
  if (in == NULL || a.out == NULL)
    die("cannot read the snapshot or write " ALT_SNAPSHOT);
  fputs("{\"apiVersion\":\"v1\",\"kind\":\"List\",\"metadata\":{\"resourceVersion\":\"\"},"
        "\"items\":[\n",
        a.out);
  sf_listscan_t ls;
  sf_listscan_init(&ls, 0);
  static char buf[1 << 20];
  size_t got;
  while ((got = fread(buf, 1, sizeof buf, in)) > 0)
    if (sf_listscan_feed(&ls, buf, got, copy_item, &a) != 0)
      die("the snapshot is not a List");
  sf_listscan_dispose(&ls);
  fclose(in);
  if (a.copy == NULL)
    die("no claim of the pod in the snapshot");
  fprintf(a.out, ",\n%s\n]}\n", a.copy);
  free(a.copy);
  if (fclose(a.out) != 0)
    die("cannot write " ALT_SNAPSHOT);
}

/* ---- the daemon ---- */

static pid_t spawn(const char *snapshot, unsigned *port)
{
  const char *log = "build/bench-extender.log";
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (freopen(log, "w", stderr) == NULL)
      _exit(127);
    execl("bin/slicefit", "slicefit", "--snapshot", snapshot, "--policy",
          "extender/example-policy.json", "--listen", "127.0.0.1:0", (char *)NULL);
    _exit(127);
  }
  for (int i = 0; i < 6000 && *port == 0; i++) { /* loading 5,000 nodes takes a while */
    struct timespec ts = {0, 10000000L};
    nanosleep(&ts, NULL);
    FILE *f = fopen(log, "r");
    char line[2048];
    while (f && fgets(line, sizeof line, f)) {
      const char *p = strstr(line, "] \"serving\""); /* klog: the message follows the source */
      if (p && strstr(p, " port="))
        *port = (unsigned)atoi(strstr(p, " port=") + 6);
    }
    if (f)
      fclose(f);
    if (waitpid(pid, NULL, WNOHANG) == pid)
      die("bin/slicefit exited; see build/bench-extender.log");
  }
  return pid;
}

static long rss_kib(pid_t pid)
{
  char path[64], line[256];
  long kib = -1;
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  FILE *f = fopen(path, "r");
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "VmRSS:", 6) == 0)
      kib = atol(line + 6);
  if (f)
    fclose(f);
  return kib;
}

/* ---- the client ---- */

typedef struct {
  CURL *c;
  struct curl_slist *hdr;
  char url[256];
  size_t got;
} client_t;

static size_t sink(char *d, size_t sz, size_t n, void *ud)
{
  (void)d;
  ((client_t *)ud)->got += sz * n;
  return sz * n;
}

typedef struct {
  char *p;
  size_t len;
} reply_t;

static size_t keep(char *d, size_t sz, size_t n, void *ud)
{
  reply_t *r = ud;
  r->p = realloc(r->p, r->len + sz * n + 1);
  memcpy(r->p + r->len, d, sz * n);
  r->len += sz * n;
  return sz * n;
}

static double call(client_t *cl, const char *path, const char *body, size_t len)
{
  char url[300];
  snprintf(url, sizeof url, "%s%s", cl->url, path);
  curl_easy_setopt(cl->c, CURLOPT_URL, url);
  curl_easy_setopt(cl->c, CURLOPT_POSTFIELDS, body);
  curl_easy_setopt(cl->c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
  double t0 = now_s();
  CURLcode rc = curl_easy_perform(cl->c);
  double dt = now_s() - t0;
  long status = 0;
  curl_easy_getinfo(cl->c, CURLINFO_RESPONSE_CODE, &status);
  if (rc != CURLE_OK || status != 200) {
    fprintf(stderr, "bench_extender: %s: %s, HTTP %ld\n", path, curl_easy_strerror(rc), status);
    exit(1);
  }
  return dt;
}

static int cmp_d(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void report(const char *verb, double *v, size_t n)
{
  qsort(v, n, sizeof *v, cmp_d);
  printf("  %-10s p50 %7.3f ms   p99 %7.3f ms   max %7.3f ms   (%zu calls)\n", verb, v[n / 2] * 1e3,
         v[n * 99 / 100] * 1e3, v[n - 1] * 1e3, n);
}

static void write_bodies(const char *dir, const char *body)
{
  char path[512];
  snprintf(path, sizeof path, "%s/extender-args.json", dir);
  FILE *f = fopen(path, "w");
  if (f == NULL)
    die("BENCH_BODIES: cannot write");
  fputs(body, f);
  fclose(f);
  printf("wrote %s\n", path);
}

/* kube-scheduler sends prioritize the nodes that passed filter: build that body once. */
static char *prioritize_body(client_t *cl, const char *body)
{
  reply_t r = {0};
  curl_easy_setopt(cl->c, CURLOPT_WRITEFUNCTION, keep);
  curl_easy_setopt(cl->c, CURLOPT_WRITEDATA, &r);
  call(cl, "/filter", body, strlen(body));
  curl_easy_setopt(cl->c, CURLOPT_WRITEFUNCTION, sink);
  curl_easy_setopt(cl->c, CURLOPT_WRITEDATA, cl);
  json_t *res = json_loadb(r.p, r.len, 0, NULL), *args = json_loads(body, 0, NULL);
  free(r.p);
  json_t *names = json_object_get(res, "NodeNames");
  if (!json_is_array(names))
    die("filter gave no NodeNames");
  printf("  filter passes %zu nodes, fails %zu; reply %zu bytes; prioritize is sent those\n",
         json_array_size(names), json_object_size(json_object_get(res, "FailedNodes")), r.len);
  json_object_set(args, "NodeNames", names);
  char *out = json_dumps(args, JSON_COMPACT);
  json_decref(res);
  json_decref(args);
  return out;
}

/* Pairs back to back; with a second body (BENCH_ALTERNATE) they alternate between the two. */
static void run(client_t *cl, char *const *body, size_t nbodies, size_t pairs, pid_t pid)
{
  size_t len[2], plen[2], warm = pairs / 10 + 10;
  char *pbody[2];
  for (size_t k = 0; k < nbodies; k++) {
    len[k] = strlen(body[k]);
    pbody[k] = prioritize_body(cl, body[k]);
    plen[k] = strlen(pbody[k]);
  }
  double *tf = calloc(pairs, sizeof *tf), *tp = calloc(pairs, sizeof *tp);
  for (size_t i = 0; i < warm; i++) {
    size_t k = i % nbodies;
    call(cl, "/filter", body[k], len[k]);
    call(cl, "/prioritize", pbody[k], plen[k]);
  }
  long rss0 = pid > 0 ? rss_kib(pid) : -1;
  double c0 = pid > 0 ? bench_cpu_s(pid) : -1;
  double t0 = now_s();
  for (size_t i = 0; i < pairs; i++) {
    size_t k = i % nbodies;
    tf[i] = call(cl, "/filter", body[k], len[k]);
    tp[i] = call(cl, "/prioritize", pbody[k], plen[k]);
  }
  double total = now_s() - t0;
  double c1 = pid > 0 ? bench_cpu_s(pid) : -1;
  long rss1 = pid > 0 ? rss_kib(pid) : -1;
  report("filter", tf, pairs);
  report("prioritize", tp, pairs);
  printf("  one client: %.0f pods/s (filter+prioritize pairs), %.2f s for %zu pairs\n",
         (double)pairs / total, total, pairs);
  if (c0 >= 0)
    printf("  daemon CPU: %.3f ms per pair (user+system; steadier than wall time)\n",
           (c1 - c0) * 1e3 / (double)pairs);
  if (rss0 > 0)
    printf("  daemon RSS: %ld KiB after %zu warm-up pairs, %ld KiB after %zu more (%+ld KiB)\n", rss0,
           warm, rss1, pairs, rss1 - rss0);
  free(tf);
  free(tp);
  for (size_t k = 0; k < nbodies; k++)
    free(pbody[k]);
}

/* NODES given as the second argument: the generated cluster of that many nodes of 8 GPUs. */
static const char *sized_snapshot(const char *arg, char *buf, size_t cap)
{
  char *end;
  unsigned long n = strtoul(arg, &end, 10);
  if (*arg == '\0' || *end != '\0')
    return arg;
  if (n == 0)
    die("NODES must be positive");
  snprintf(buf, cap, "build/cluster-%lu-x8.json", n);
  if (access(buf, R_OK) == 0)
    return buf;
  char cmd[512];
  snprintf(cmd, sizeof cmd,
           "python3 bench/gen-cluster.py --nodes %lu --gpus 8 --allocations %lu --out %s", n, 5 * n,
           buf);
  printf("generating %s\n", buf);
  if (system(cmd) != 0)
    die("cannot generate the cluster");
  return buf;
}

/* BENCH_REPLY: which pod the calls are for. */
static void choose_pod(void)
{
  const char *r = getenv("BENCH_REPLY");
  if (r == NULL || *r == '\0')
    return;
  if (strcmp(r, "pass") && strcmp(r, "fail"))
    die("BENCH_REPLY is pass or fail");
  pod_ns = "queue";
  pod_name = strcmp(r, "pass") == 0 ? "wait-any" : "wait-big";
}

int main(int argc, char **argv)
{
  size_t pairs = argc > 1 ? strtoul(argv[1], NULL, 10) : 3000;
  char sized[128];
  const char *snapshot = argc > 2 ? sized_snapshot(argv[2], sized, sizeof sized)
                                  : "build/cluster-5000.json";
  choose_pod();
  const char *url = getenv("BENCH_URL");
  bool nodelist = getenv("BENCH_NODELIST") && strcmp(getenv("BENCH_NODELIST"), "1") == 0;
  if (getenv("SLICEFIT_TOP") && chdir(getenv("SLICEFIT_TOP")) != 0)
    die("cannot enter SLICEFIT_TOP");
  if (pairs == 0)
    die("PAIRS must be positive");
  if (access(snapshot, R_OK) != 0 && strcmp(snapshot, "build/cluster-5000.json") == 0 &&
      system("python3 bench/gen-cluster.py --nodes 5000 --out build/cluster-5000.json") != 0)
    die("cannot generate build/cluster-5000.json");
  bool alternate = getenv("BENCH_ALTERNATE") && strcmp(getenv("BENCH_ALTERNATE"), "1") == 0;
  if (alternate && url == NULL) {
    write_alternate(snapshot);
    snapshot = ALT_SNAPSHOT;
  }
  size_t nnodes, nbodies = alternate ? 2 : 1;
  char *body[2] = {build_body(snapshot, pod_name, nodelist, &nnodes), NULL};
  if (alternate)
    body[1] = build_body(snapshot, POD_B, nodelist, &nnodes);
  if (getenv("BENCH_BODIES")) { /* only write the body, for wrk */
    write_bodies(getenv("BENCH_BODIES"), body[0]);
    free(body[0]);
    free(body[1]);
    return 0;
  }
  client_t cl = {.c = curl_easy_init()};
  pid_t pid = getenv("BENCH_PID") ? (pid_t)atoi(getenv("BENCH_PID")) : 0;
  unsigned port = 0;
  if (url == NULL) {
    pid = spawn(snapshot, &port);
    snprintf(cl.url, sizeof cl.url, "http://127.0.0.1:%u", port);
  } else {
    snprintf(cl.url, sizeof cl.url, "%s", url);
  }
  cl.hdr = curl_slist_append(curl_slist_append(NULL, "Content-Type: application/json"), "Expect:");
  curl_easy_setopt(cl.c, CURLOPT_HTTPHEADER, cl.hdr);
  curl_easy_setopt(cl.c, CURLOPT_WRITEFUNCTION, sink);
  curl_easy_setopt(cl.c, CURLOPT_WRITEDATA, &cl);
  curl_easy_setopt(cl.c, CURLOPT_TCP_NODELAY, 1L);
  printf("bench_extender: %s over %zu nodes (%s mode), body %zu bytes, %s\n",
         alternate ? "two pods in turn" : "one pod", nnodes, nodelist ? "NodeList" : "NodeNames",
         strlen(body[0]), cl.url);
  run(&cl, body, nbodies, pairs, pid);
  curl_slist_free_all(cl.hdr);
  curl_easy_cleanup(cl.c);
  free(body[0]);
  free(body[1]);
  if (url == NULL) {
    kill(pid, SIGTERM);
    int st;
    waitpid(pid, &st, 0);
    printf("  daemon exit status after SIGTERM: %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  }
  return 0;
}
