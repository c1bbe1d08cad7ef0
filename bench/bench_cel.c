/*
 * bench_cel: how long one evaluation of a compiled DRA selector takes on one
 * device. A benchmark, never a test: it prints figures and exits 0.
 *
 * The device is an NVIDIA A100 as the NVIDIA DRA driver publishes it (12
 * attributes in two domains, one memory capacity). The main case is the
 * gpu.nvidia.com DeviceClass selector of the NVIDIA helm chart
 * (deployments/helm/dra-driver-nvidia-gpu/templates/deviceclass-gpu.yaml),
 * target < 1 us per evaluation after compilation. Other fixture selectors
 * are timed for comparison, and product-name selectors written with the
 * strings extension, sets, find(), two-variable comprehensions (a map built
 * by transformMap among them) and the format library, each with the same
 * < 1 us target. Each row is the median of RUNS runs of REPS
 * evaluations.
 *
 * usage: bench_cel [REPS [RUNS [NAME]]]     (defaults 1000000 and 7; NAME: only the cases
 * whose name contains it)
 * For instruction counts: valgrind --tool=callgrind build/release/bench/bench_cel 100000 1 NAME,
 * then callgrind_annotate --inclusive=yes: sf_cel_eval's count over its calls.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "slicefit/cel.h"

#define GI (1024LL * 1024 * 1024 * 1000)
#define NV "gpu.nvidia.com/"

static const struct {
  const char *name, *expr;
} cases[] = {
    {"nvidia gpu class",
     "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"},
    {"example model", "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA A100-SXM4-40GB'"},
    {"memory compareTo", "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('4Gi')) >= 0"},
    {"gpu-test6 regex",
     "device.attributes['gpu.nvidia.com'].productName.lowerAscii().matches('^.*a100.*$') && "
     "(device.attributes['gpu.nvidia.com'].index == 0 || device.attributes['gpu.nvidia.com'].index == 2 || "
     "device.attributes['gpu.nvidia.com'].index == 4 || device.attributes['gpu.nvidia.com'].index == 6)"},
    {"semver", "device.attributes['gpu.nvidia.com'].driverVersion.isGreaterThan(semver('550.0.0'))"},
    /* Product-name selectors written with the strings extension, sets and lists (Kubernetes 1.29+). */
    {"split product",
     "device.driver == 'gpu.nvidia.com' && "
     "device.attributes['gpu.nvidia.com'].productName.split(' ')[1].startsWith('A100')"},
    {"indexOf product",
     "device.attributes['gpu.nvidia.com'].productName.lowerAscii().indexOf('a100') >= 0"},
    {"substring uuid", "device.attributes['gpu.nvidia.com'].uuid.substring(0, 4) == 'GPU-'"},
    {"sets model", "sets.intersects(device.attributes['gpu.nvidia.com'].productName.split(' '), "
                   "['A100-SXM4-40GB', 'A100-SXM4-80GB', 'H100'])"},
    {"find memory", "device.attributes['gpu.nvidia.com'].productName.find('[0-9]+GB') == '40GB'"},
    {"two-var exists",
     "device.attributes['gpu.nvidia.com'].exists(k, v, k == 'architecture' && v == 'Ampere')"},
    /* The format library (1.31) and a map built by transformMap (1.32). */
    {"format uuid",
     "!format.uuid().validate(device.attributes['gpu.nvidia.com'].uuid.substring(4)).hasValue()"},
    {"transformMap",
     "device.attributes['gpu.nvidia.com'].transformMap(k, v, k.endsWith('Version'), v)"
     ".size() == 2"},
};

static sf_dev_id a100(sf_index_t *idx)
{
  static const sf_attr_t a[] = {{NV "type", SF_ATTR_STRING, 0, "gpu"},
                                {NV "productName", SF_ATTR_STRING, 0, "NVIDIA A100-SXM4-40GB"},
                                {NV "brand", SF_ATTR_STRING, 0, "Nvidia"},
                                {NV "architecture", SF_ATTR_STRING, 0, "Ampere"},
                                {NV "uuid", SF_ATTR_STRING, 0,
                                 "GPU-4cf8db2d-06c0-7d70-1a51-e59b25b2c16c"},
                                {NV "index", SF_ATTR_INT, 0, NULL},
                                {NV "minor", SF_ATTR_INT, 0, NULL},
                                {NV "cudaComputeCapability", SF_ATTR_VERSION, 0, "8.0.0"},
                                {NV "driverVersion", SF_ATTR_VERSION, 0, "550.54.15"},
                                {NV "cudaDriverVersion", SF_ATTR_VERSION, 0, "12.4.0"},
                                {NV "addressingMode", SF_ATTR_STRING, 0, "None"},
                                {"resource.kubernetes.io/pcieRoot", SF_ATTR_STRING, 0, "pci0000:00"}};
  static const sf_capacity_t mem = {NV "memory", 40 * GI, false, {0}};
  sf_device_spec_t d = {"gpu-0", a, sizeof a / sizeof a[0], &mem, 1, NULL, 0, NULL, 0, false};
  sf_node_spec_t ns = {"node-0", 0, 0};
  sf_node_id n;
  if (sf_index_node_upsert(idx, &ns, &n) != 0 ||
      sf_index_pool_set(idx, n, "gpu.nvidia.com", "node-0", &d, 1, NULL, 0) != 0)
    abort();
  return sf_index_dev_find(idx, "gpu.nvidia.com", "node-0", "gpu-0");
}

static double now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median nanoseconds per evaluation over `runs` runs of `reps`. */
static double median_ns(const sf_cel_prog_t *p, const sf_index_t *idx, sf_dev_id dev, long reps,
                        int runs)
{
  double t[64];
  volatile int sink = 0;
  for (int r = 0; r < runs; r++) {
    double t0 = now_ns();
    for (long i = 0; i < reps; i++)
      sink += (int)sf_cel_eval(p, idx, dev, NULL, 0);
    t[r] = (now_ns() - t0) / (double)reps;
  }
  (void)sink;
  qsort(t, (size_t)runs, sizeof t[0], cmp_double);
  return t[runs / 2];
}

int main(int argc, char **argv)
{
  long reps = argc > 1 ? atol(argv[1]) : 1000000;
  int runs = argc > 2 ? atoi(argv[2]) : 7;
  const char *only = argc > 3 ? argv[3] : NULL;
  if (reps < 1 || runs < 1 || runs > 64) {
    fprintf(stderr, "usage: bench_cel [REPS [RUNS (1-64) [NAME]]]\n");
    return 2;
  }
  sf_index_t *idx = sf_index_create();
  sf_cel_cache_t *cache = sf_cel_cache_create();
  sf_dev_id dev = a100(idx);
  printf("%-18s %10s %8s   (median of %d runs x %ld evaluations)\n", "selector", "ns/eval", "answer",
         runs, reps);
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    if (only != NULL && strstr(cases[k].name, only) == NULL)
      continue;
    const sf_cel_prog_t *p = sf_cel_compile(cache, cases[k].expr);
    char why[128] = "";
    sf_match_t m = sf_cel_eval(p, idx, dev, why, sizeof why);
    double ns = median_ns(p, idx, dev, k == 0 ? reps : reps / 4 + 1, runs);
    printf("%-18s %10.1f %8s%s%s%s\n", cases[k].name, ns,
           m == SF_MATCH_YES  ? "yes"
           : m == SF_MATCH_NO ? "no"
                              : "unknown",
           k == 0 || k >= 5 ? "   target < 1000 ns" : "", why[0] ? "  " : "", why);
  }
  sf_cel_cache_destroy(cache);
  sf_index_destroy(idx);
  return 0;
}
