/*
 * bench_watch: how fast apiwatch keeps a cluster in step.
 *
 *   bench_watch [RUNS] [EVENTS] [events|slices|sync]
 *
 * 1. Event apply rate on one core: a watch stream of EVENTS ResourceClaim
 *    events (ADDED pending, MODIFIED with an allocation, DELETED, cycling over
 *    40,000 claims) against a cluster of 10,000 nodes (10,000 slices of 8
 *    GPUs), fed in 64 KiB chunks through the framer, jansson and
 *    sf_cluster_apply / _delete: the path a watch event takes. One filter
 *    is served first, as in the daemon, so that the learned mix is live.
 *    Prints page faults per event too (the allocator's behaviour shows).
 * 2. Initial sync against test/tools/fake-apiserver (started here): 10,000
 *    slices of 8 devices and 40,000 claims, from start to synced(), by
 *    watch-list and by paged LIST (500 a page).
 *
 * Prints the median of RUNS runs (default 5) and the spread. Build with
 * `make bench` or `make build/release/bench/bench_watch`; run from the
 * repository's top (the fake is found under build/release/tools/).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "slicefit/apiwatch.h"
#include "slicefit/log.h"

#define NODES 10000u
#define DEVS 8u
#define CLAIMS 40000u
#define MAXRUNS 15

static double now_s(clockid_t clk)
{
  struct timespec ts;
  clock_gettime(clk, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long minor_faults(void)
{
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n)
{
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- objects ---- */

static void slice(FILE *f, unsigned i)
{
  fprintf(f,
          "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":{"
          "\"name\":\"node-%u-gpu.nvidia.com-x1\",\"resourceVersion\":\"1\"},\"spec\":{"
          "\"driver\":\"gpu.nvidia.com\",\"nodeName\":\"node-%u\",\"pool\":{\"name\":"
          "\"node-%u\",\"generation\":1,\"resourceSliceCount\":1},\"devices\":[",
          i, i, i);
  for (unsigned d = 0; d < DEVS; d++)
    fprintf(f,
            "%s{\"name\":\"gpu-%u\",\"attributes\":{\"productName\":{\"string\":"
            "\"NVIDIA H100 80GB HBM3\"},\"index\":{\"int\":%u},\"uuid\":{\"string\":"
            "\"GPU-%08x-%04x\"},\"driverVersion\":{\"version\":\"550.54.15\"}},"
            "\"capacity\":{\"memory\":{\"value\":\"80Gi\"}}}",
            d ? "," : "", d, d, i, d);
  fputs("]}}", f);
}

/* A claim; allocated on its node's device when `alloc`. */
static void claim(FILE *f, unsigned j, bool alloc, unsigned rv)
{
  unsigned node = j % NODES, dev = (j / NODES) % DEVS;
  fprintf(f,
          "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{"
          "\"name\":\"claim-%u\",\"namespace\":\"team-%u\",\"uid\":\"u-%u\","
          "\"resourceVersion\":\"%u\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\","
          "\"exactly\":{\"deviceClassName\":\"gpu.nvidia.com\",\"count\":1}}]}}",
          j, j % 50, j, rv);
  if (alloc)
    fprintf(f,
            ",\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpu\","
            "\"driver\":\"gpu.nvidia.com\",\"pool\":\"node-%u\",\"device\":\"gpu-%u\"}]},"
            "\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":"
            "\"metadata.name\",\"operator\":\"In\",\"values\":[\"node-%u\"]}]}]}}}",
            node, dev, node);
  fputc('}', f);
}

static const char CLASS[] = "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\","
                            "\"metadata\":{\"name\":\"gpu.nvidia.com\"},\"spec\":{\"selectors\":"
                            "[{\"cel\":{\"expression\":\"device.driver == 'gpu.nvidia.com'\"}}]}}";

/* ---- 1: the event apply rate ---- */

static char *event_stream(unsigned n, size_t *len)
{
  char *s = NULL;
  FILE *f = open_memstream(&s, len);
  static const char *const types[] = {"ADDED", "MODIFIED", "DELETED"};
  for (unsigned e = 0; e < n; e++) {
    unsigned j = e % CLAIMS, phase = (e / CLAIMS) % 3;
    fprintf(f, "{\"type\":\"%s\",\"object\":", types[phase]);
    claim(f, j, phase >= 1, 1000 + e);
    fputs("}\n", f);
  }
  fclose(f);
  return s;
}

static sf_cluster_t *base_cluster(void)
{
  sf_cluster_t *c = sf_cluster_create(NULL);
  char err[SF_ERR_MAX], *s = NULL;
  size_t len;
  FILE *f = open_memstream(&s, &len);
  fputc('[', f);
  for (unsigned i = 0; i < NODES; i++) {
    if (i)
      fputc(',', f);
    slice(f, i);
  }
  fputc(']', f);
  fclose(f);
  json_t *items = json_loads(s, 0, NULL), *cls = json_loads(CLASS, 0, NULL);
  if (sf_cluster_replace(c, SF_KIND_RESOURCE_SLICE, items, err, sizeof err) ||
      sf_cluster_apply(c, SF_KIND_DEVICE_CLASS, cls, err, sizeof err)) {
    fprintf(stderr, "bench_watch: %s\n", err);
    exit(1);
  }
  json_decref(items);
  json_decref(cls);
  free(s);
  return c;
}

/* Frames, parses and applies the stream (c NULL: parse only); returns events seen. */
static unsigned apply_stream(sf_cluster_t *c, const char *s, size_t len)
{
  sf_framer_t fr;
  sf_framer_init(&fr, 0);
  unsigned n = 0;
  char err[SF_ERR_MAX];
  for (size_t pos = 0; pos < len;) {
    size_t chunk = len - pos < 65536 ? len - pos : 65536;
    for (size_t off = 0; off < chunk;) {
      const char *ev;
      size_t evlen;
      long used = sf_framer_feed(&fr, s + pos + off, chunk - off, &ev, &evlen);
      if (used <= 0) {
        fprintf(stderr, "bench_watch: framing error\n");
        exit(1);
      }
      off += (size_t)used;
      if (!ev)
        continue;
      json_t *e = json_loadb(ev, evlen, 0, NULL);
      const char *type = json_string_value(json_object_get(e, "type"));
      json_t *obj = json_object_get(e, "object");
      int rc = !c ? 0
               : !strcmp(type, "DELETED")
                   ? sf_cluster_delete(c, SF_KIND_RESOURCE_CLAIM, obj, err, sizeof err)
                   : sf_cluster_apply(c, SF_KIND_RESOURCE_CLAIM, obj, err, sizeof err);
      if (rc) {
        fprintf(stderr, "bench_watch: %s\n", err);
        exit(1);
      }
      json_decref(e);
      n++;
    }
    pos += chunk;
  }
  sf_framer_dispose(&fr);
  return n;
}

/*
 * Serves one filter, as the daemon does all along: the learned workload mix is then built,
 * and every claim event after it adds or takes back its shapes (a cluster never filtered
 * skips that work).
 */
static void filter_once(sf_cluster_t *c)
{
  static const char pod[] = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":"
                            "\"p\",\"namespace\":\"team-0\"},\"spec\":{\"containers\":[]}}";
  json_t *j = json_loads(pod, 0, NULL);
  sf_pod_plan_t *p = NULL;
  char err[SF_ERR_MAX];
  if (sf_cluster_plan(c, j, &p, err, sizeof err) || sf_cluster_evaluate(c, p, NULL, 0, NULL)) {
    fprintf(stderr, "bench_watch: filter: %s\n", err);
    exit(1);
  }
  sf_pod_plan_free(p);
  json_decref(j);
}

static void bench_events(int runs, unsigned nevents)
{
  size_t len;
  char *s = event_stream(nevents, &len);
  double rate[MAXRUNS], cpu[MAXRUNS], faults[MAXRUNS];
  for (int r = 0; r < runs; r++) {
    sf_cluster_t *c = base_cluster();
    filter_once(c);
    long f0 = minor_faults();
    double t0 = now_s(CLOCK_MONOTONIC), c0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
    unsigned n = apply_stream(c, s, len);
    double t1 = now_s(CLOCK_MONOTONIC), c1 = now_s(CLOCK_PROCESS_CPUTIME_ID);
    rate[r] = n / (t1 - t0);
    cpu[r] = n / (c1 - c0);
    faults[r] = (double)(minor_faults() - f0) / n;
    sf_cluster_destroy(c);
  }
  double parse[MAXRUNS];
  for (int r = 0; r < runs; r++) {
    double c0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
    unsigned n = apply_stream(NULL, s, len);
    parse[r] = n / (now_s(CLOCK_PROCESS_CPUTIME_ID) - c0);
  }
  double lo = rate[0], hi = rate[0], best = cpu[0];
  for (int r = 0; r < runs; r++) {
    lo = rate[r] < lo ? rate[r] : lo;
    hi = rate[r] > hi ? rate[r] : hi;
    best = cpu[r] > best ? cpu[r] : best;
  }
  printf("events: %u claim events (%.0f bytes each) on %u nodes x %u GPUs\n", nevents,
         (double)len / nevents, NODES, DEVS);
  printf("  apply rate: median %.0f events/s wall (min %.0f, max %.0f), %.0f events/s CPU "
         "(best %.0f), %d runs\n",
         median(rate, runs), lo, hi, median(cpu, runs), best, runs);
  printf("  page faults: median %.2f per event\n", median(faults, runs));
  printf("  of which framer + jansson alone: median %.0f events/s CPU\n", median(parse, runs));
  free(s);
}

/*
 * Slice events on a cluster that holds CLAIMS allocated claims: each
 * republishes one node's slice (a new generation of the same devices), which
 * re-records only the claims on that pool.
 */
static void bench_slice_events(int runs, unsigned nevents)
{
  char *s = NULL, err[SF_ERR_MAX];
  size_t len;
  FILE *f = open_memstream(&s, &len);
  for (unsigned j = 0; j < CLAIMS; j++) {
    fputs("{\"type\":\"ADDED\",\"object\":", f);
    claim(f, j, true, 1000 + j);
    fputs("}\n", f);
  }
  fclose(f);
  json_t **ev = calloc(nevents, sizeof *ev);
  for (unsigned e = 0; e < nevents; e++) {
    char *t = NULL;
    size_t tl;
    FILE *g = open_memstream(&t, &tl);
    slice(g, e % NODES);
    fclose(g);
    ev[e] = json_loads(t, 0, NULL);
    json_object_set_new(json_object_get(json_object_get(ev[e], "spec"), "pool"), "generation",
                        json_integer(2 + e / NODES));
    free(t);
  }
  double rate[MAXRUNS];
  for (int r = 0; r < runs; r++) {
    sf_cluster_t *c = base_cluster();
    apply_stream(c, s, len);
    double c0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
    for (unsigned e = 0; e < nevents; e++)
      if (sf_cluster_apply(c, SF_KIND_RESOURCE_SLICE, ev[e], err, sizeof err)) {
        fprintf(stderr, "bench_watch: %s\n", err);
        exit(1);
      }
    rate[r] = nevents / (now_s(CLOCK_PROCESS_CPUTIME_ID) - c0);
    sf_cluster_destroy(c);
  }
  printf("slice events: %u slices republished among %u allocated claims: median %.0f events/s CPU, %d runs\n",
         nevents, CLAIMS, median(rate, runs), runs);
  for (unsigned e = 0; e < nevents; e++)
    json_decref(ev[e]);
  free(ev);
  free(s);
}

/* ---- 2: the initial sync against the fake ---- */

typedef struct {
  pid_t pid;
  FILE *in, *out;
  char url[64];
} fake_t;

static void fake_send(fake_t *f, const char *line)
{
  char ans[256];
  fprintf(f->in, "%s\n", line);
  fflush(f->in);
  if (!fgets(ans, sizeof ans, f->out) || strncmp(ans, "ok", 2)) {
    fprintf(stderr, "bench_watch: fake-apiserver: %s -> %s", line, ans);
    exit(1);
  }
}

static void fake_spawn(fake_t *f, const char *bin)
{
  int to[2], from[2];
  unsigned port = 0;
  char line[64];
  if (pipe(to) || pipe(from))
    exit(1);
  if ((f->pid = fork()) == 0) {
    dup2(to[0], 0);
    dup2(from[1], 1);
    close(to[1]);
    close(from[0]);
    execl(bin, bin, (char *)NULL);
    _exit(127);
  }
  close(to[0]);
  close(from[1]);
  f->in = fdopen(to[1], "w");
  f->out = fdopen(from[0], "r");
  if (!fgets(line, sizeof line, f->out) || sscanf(line, "port %u", &port) != 1) {
    fprintf(stderr, "bench_watch: cannot start %s (run from the repository's top after make)\n", bin);
    exit(1);
  }
  snprintf(f->url, sizeof f->url, "http://127.0.0.1:%u", port);
}

static void write_items(const char *path, bool slices)
{
  FILE *f = fopen(path, "w");
  fputc('[', f);
  for (unsigned i = 0; i < (slices ? NODES : CLAIMS); i++) {
    if (i)
      fputc(',', f);
    if (slices)
      slice(f, i);
    else
      claim(f, i, i % 2 == 0, 1);
  }
  fputs("]\n", f);
  fclose(f);
}

static void on_stopped(void *ud)
{
  *(bool *)ud = true;
}

/* One sync: seconds from start to synced, or a negative number on failure. */
static double sync_once(const char *url, bool streaming, double *cpu)
{
  uv_loop_t loop;
  uv_loop_init(&loop);
  sf_cluster_t *c = sf_cluster_create(NULL);
  sf_apiwatch_opts_t o = {.no_streaming_list = !streaming, .watch_timeout_s = 600};
  o.kube.server = (char *)(uintptr_t)url;
  char err[SF_ERR_MAX];
  sf_apiwatch_t *w = sf_apiwatch_create(&loop, c, &o, err, sizeof err);
  double t0 = now_s(CLOCK_MONOTONIC), c0 = now_s(CLOCK_PROCESS_CPUTIME_ID), t = -1;
  sf_apiwatch_start(w);
  while (now_s(CLOCK_MONOTONIC) - t0 < 60) {
    uv_run(&loop, UV_RUN_ONCE);
    if (sf_apiwatch_synced(w)) {
      t = now_s(CLOCK_MONOTONIC) - t0;
      break;
    }
  }
  *cpu = now_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
  if (getenv("SF_BENCH_V")) {
    sf_apiwatch_stats_t st;
    sf_apiwatch_stats(w, &st);
    fprintf(stderr, "events %llu lists %llu bookmarks %llu errors %llu/%llu/%llu\n",
            (unsigned long long)st.events, (unsigned long long)st.lists,
            (unsigned long long)st.bookmarks, (unsigned long long)st.err_connect,
            (unsigned long long)st.err_other, (unsigned long long)st.framing_errors);
  }
  if (sf_cluster_count(c, SF_KIND_RESOURCE_SLICE) != NODES ||
      sf_cluster_count(c, SF_KIND_RESOURCE_CLAIM) != CLAIMS) {
    fprintf(stderr, "bench_watch: synced %.1f s: %zu slices, %zu claims\n", t,
            sf_cluster_count(c, SF_KIND_RESOURCE_SLICE), sf_cluster_count(c, SF_KIND_RESOURCE_CLAIM));
    t = -1;
  }
  bool done = false;
  sf_apiwatch_stop(w, on_stopped, &done);
  while (!done)
    uv_run(&loop, UV_RUN_ONCE);
  sf_apiwatch_destroy(w);
  sf_cluster_destroy(c);
  uv_loop_close(&loop);
  return t;
}

static void bench_sync(int runs)
{
  fake_t f;
  char dir[] = "/tmp/bench-watch-XXXXXX", sl[64], cl[64], cmd[512];
  if (!mkdtemp(dir))
    exit(1);
  snprintf(sl, sizeof sl, "%s/slices.json", dir);
  snprintf(cl, sizeof cl, "%s/claims.json", dir);
  write_items(sl, true);
  write_items(cl, false);
  fake_spawn(&f, "build/release/tools/fake-apiserver");
  snprintf(cmd, sizeof cmd, "load resourceslices %s", sl);
  fake_send(&f, cmd);
  snprintf(cmd, sizeof cmd, "load resourceclaims %s", cl);
  fake_send(&f, cmd);
  snprintf(cmd, sizeof cmd, "put deviceclasses %s", CLASS);
  fake_send(&f, cmd);
  printf("initial sync: %u slices of %u devices, %u claims (half allocated), fake-apiserver on loopback\n",
         NODES, DEVS, CLAIMS);
  const char *only = getenv("SF_BENCH_SYNC"); /* "stream" or "list": one mode only */
  for (int mode = 0; mode < 2; mode++) {
    if (only && strcmp(only, mode == 0 ? "stream" : "list"))
      continue;
    double t[MAXRUNS], cpu[MAXRUNS];
    for (int r = 0; r < runs; r++) {
      t[r] = sync_once(f.url, mode == 0, &cpu[r]);
      if (t[r] < 0) {
        fprintf(stderr, "bench_watch: a sync failed\n");
        exit(1);
      }
    }
    printf("  %-18s median %.2f s wall, %.2f s CPU of the watcher's process (%d runs)\n",
           mode == 0 ? "watch-list:" : "paged LIST (500):", median(t, runs), median(cpu, runs), runs);
  }
  fprintf(f.in, "quit\n");
  fclose(f.in);
  fclose(f.out);
  waitpid(f.pid, NULL, 0);
  unlink(sl);
  unlink(cl);
  rmdir(dir);
}

int main(int argc, char **argv)
{
  int runs = argc > 1 ? atoi(argv[1]) : 5;
  unsigned nevents = argc > 2 ? (unsigned)atoi(argv[2]) : 3 * CLAIMS;
  if (runs < 1 || runs > MAXRUNS)
    runs = 5;
  sf_log_set_verbosity(getenv("SF_BENCH_V") ? atoi(getenv("SF_BENCH_V")) : -1);
  const char *only = argc > 3 ? argv[3] : "";
  bool all = !*only;
  if (all || !strcmp(only, "events"))
    bench_events(runs, nevents);
  if (all || !strcmp(only, "slices"))
    bench_slice_events(runs < 3 ? runs : 3, 2000);
  if (all || !strcmp(only, "sync"))
    bench_sync(runs < 3 ? runs : 3);
  return 0;
}
