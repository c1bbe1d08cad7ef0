/*
 * The end-to-end test's own pieces: a generated GPU cluster shaped as the
 * NVIDIA DRA driver publishes it, the workload, a first-fit allocator that
 * stands in for kube-scheduler's in-tree DRA plugin, and the processes the
 * test drives (the fake kube-apiserver, bin/slicefit) over stdin and HTTP.
 *
 * The allocator is deliberately independent of slicefit's code: it knows
 * the device classes as C predicates, not through CEL, and keeps its own
 * books of what every device has given out. The test then holds slicefit
 * against it.
 */
#ifndef SLICEFIT_TEST_E2E_H
#define SLICEFIT_TEST_E2E_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define E2E_DRIVER "gpu.nvidia.com"
#define E2E_NS "tenants"
#define E2E_MAX_DEVS 8
#define E2E_MAX_NODES 16
#define E2E_GI ((int64_t)1 << 30)
#define E2E_MI ((int64_t)1 << 20)

/* ---- the cluster (gen.c) ---- */

typedef struct {
  char name[16];                                   /* gpu-0 ... */
  const char *product;                             /* productName */
  const char *model;                               /* the replay trace's model name (no spaces) */
  bool shared;                                     /* allowMultipleAllocations */
  int64_t mem;                                     /* capacity memory, bytes */
  int64_t pol_default, pol_min, pol_step, pol_max; /* requestPolicy (shared only) */
  /* The allocator's books. */
  int64_t used; /* bytes consumed (shared devices) */
  int nalloc;   /* allocations holding the device */
} e2e_dev_t;

typedef struct {
  char name[32];
  e2e_dev_t devs[E2E_MAX_DEVS];
  size_t ndevs;
} e2e_node_t;

typedef struct {
  e2e_node_t nodes[E2E_MAX_NODES]; /* sorted by name */
  size_t nnodes;
} e2e_cluster_t;

/** The test's cluster: 2 nodes of 8 H100 (NVSwitch), 3 of 4 A100 (NVLink pairs), 7 of one shared 20475Mi card. */
void e2e_cluster_make(e2e_cluster_t *c);
/** `n` nodes of the test cluster's kinds in its proportions (3:2:7), kind after kind (the benchmark's). */
void e2e_nodes_make(e2e_node_t *nodes, size_t n);
/** The ResourceSlice of node `n`, the i-th of its cluster, as kube-apiserver serves it (new). */
json_t *e2e_node_slice(const e2e_node_t *n, size_t i);
/** The ResourceSlices of the cluster as kube-apiserver serves them (new JSON array). */
json_t *e2e_cluster_slices(const e2e_cluster_t *c);
/** The DeviceClasses (manifests/deviceclasses.yaml's menu plus the driver's own class), new array. */
json_t *e2e_device_classes(void);
/** The policy ConfigMap (namespace slicefit-system, name slicefit-policy) with `kv` pairs (NULL-ended). */
json_t *e2e_policy_configmap(const char *const *kv);

/* ---- the workload (gen.c) ---- */

typedef enum { E2E_SHARE, E2E_WHOLE, E2E_PAIR } e2e_shape_t;

typedef struct {
  char name[48];
  char claim[80]; /* the ResourceClaim made from the pod's template */
  char uid[40];
  e2e_shape_t shape;
  const char *product; /* WHOLE, PAIR: the model asked for */
  const char *model;
  int64_t share;     /* SHARE: memory asked, bytes (4Gi, or 4000Mi that rounds to 4Gi) */
  int64_t at, until; /* seconds; distinct times, until > at */
} e2e_pod_t;

/** `n` pods from `seed` (deterministic), in arrival order. */
void e2e_pods_make(e2e_pod_t *pods, size_t n, uint64_t seed);
/** The pod's ResourceClaim (no status), new. */
json_t *e2e_claim_json(const e2e_pod_t *p);
/** The Pod as kube-scheduler sends it to an extender (pending, claim status filled), new. */
json_t *e2e_pod_json(const e2e_pod_t *p);
/** Writes the cluster and pods as a native slicefit-replay trace (docs/replay-format.md). */
int e2e_trace_write(const char *path, const e2e_cluster_t *c, const e2e_pod_t *pods, size_t n);
void e2e_trace_fwrite(FILE *f, const e2e_cluster_t *c, const e2e_pod_t *pods, size_t n);

/* ---- the first-fit allocator (ffit.c) ---- */

typedef struct {
  size_t dev[2];       /* device indices on the node, in request order */
  int64_t consumed[2]; /* bytes consumed (shared devices), 0 otherwise */
  size_t n;
} e2e_alloc_t;

/**
 * The in-tree DRA allocator's verdict on one node: devices tried in slice
 * order, first fit, consumable capacity rounded by the requestPolicy,
 * matchAttribute checked. True with *out filled when the claim fits.
 */
bool e2e_ffit(const e2e_node_t *node, const e2e_pod_t *p, e2e_alloc_t *out);
/** Books an allocation on the node / gives it back. */
void e2e_ffit_take(e2e_node_t *node, const e2e_alloc_t *a);
void e2e_ffit_give(e2e_node_t *node, const e2e_alloc_t *a);
/** The value a shared device consumes for a request of `req` bytes (0 = unnamed), or -1 if out of range. */
int64_t e2e_round(const e2e_dev_t *d, int64_t req);
/** A claim's status (allocation for `a` on `node`, reservedFor the pod), new. */
json_t *e2e_status_json(const e2e_node_t *node, const e2e_pod_t *p, const e2e_alloc_t *a,
                        unsigned share_seq);
/** Formats bytes as a canonical quantity ("4Gi", "1536Mi", "7"). */
void e2e_qty(int64_t bytes, char *buf, size_t len);

/* ---- processes and HTTP (proc.c) ---- */

typedef struct {
  pid_t pid;
  FILE *in, *out; /* the fake apiserver's command channel */
  unsigned port;
} e2e_apiserver_t;

typedef struct {
  pid_t pid;
  unsigned port;
  unsigned debug_port; /* its --debug-listen port: e2e_http sends /debug/ there */
  char log[256];       /* its stderr goes here */
} e2e_slicefit_t;

/** Where the binaries are: $SLICEFIT_TOP/bin and the test binary's tools/ folder. */
const char *e2e_top(void);
/** Path of build/<variant>/tools/NAME next to the test binary (static buffer). */
const char *e2e_tool(const char *name);
/** A program of the build under test: $SLICEFIT_BIN/name, else $SLICEFIT_TOP/bin/name (static buffer). */
const char *e2e_bin(const char *name);

/** Starts the fake apiserver requiring `token`; its stderr goes to `log`. */
int e2e_apiserver_start(e2e_apiserver_t *a, const char *token, const char *log);
/** Sends one command line and reads the reply line into buf; 0 when it begins with "ok". */
int e2e_apiserver_cmd(e2e_apiserver_t *a, char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/** put RES with the compact JSON of obj (borrowed). */
int e2e_apiserver_put(e2e_apiserver_t *a, const char *res, const json_t *obj);
void e2e_apiserver_stop(e2e_apiserver_t *a);

/** Writes a kubeconfig for the fake apiserver at `path`. */
int e2e_kubeconfig_write(const char *path, unsigned port, const char *token);
/** Starts bin/slicefit with `args` (NULL-ended) and --listen 127.0.0.1:0; logs in dir. */
int e2e_slicefit_start(e2e_slicefit_t *s, const char *dir, const char *const *args);
/** Learns the port from the log, then polls GET /readyz until 200 or deadline_ms; 0 when ready. */
int e2e_slicefit_wait_ready(e2e_slicefit_t *s, int deadline_ms);
/** SIGTERM, wait (SIGKILL after 5 s); the exit status, or -1. */
int e2e_slicefit_stop(e2e_slicefit_t *s);
/** SIGKILL, as a node failure or an OOM kill: no drain. Its port stays (calls to it are refused). */
int e2e_slicefit_kill(e2e_slicefit_t *s);

/**
 * Kills and reaps every process this test process started and has not
 * stopped (a lost pid included); returns how many there were, their pids in why.
 */
size_t e2e_reap_strays(char *why, size_t len);

/** Makes a self-signed serving certificate (tls.crt, tls.key) in dir with the openssl tool; 0 or -1. */
int e2e_tls_make(const char *dir, char *cert, char *key, size_t len);
/** From now on this process speaks https to slicefit, verifying against `ca` (NULL: plain http). */
void e2e_http_use_ca(const char *ca);
/** HTTP status of GET/POST http://127.0.0.1:port/path; *body new (may be NULL). */
long e2e_http(unsigned port, const char *method, const char *path, const char *body, char **out);
/** GET and parse JSON (new, NULL on failure). */
json_t *e2e_http_json(unsigned port, const char *method, const char *path, const json_t *body,
                      long *status);
/** Values of n Prometheus series (name and labels, exactly) from one GET /metrics; -1 when absent. */
int e2e_metrics(unsigned port, const char *const *series, double *out, size_t n);
/** Removes a folder of plain files, unless SLICEFIT_E2E_KEEP is set (to read the logs). */
void e2e_rmdir(const char *dir);
/** Milliseconds on a monotonic clock. */
int64_t e2e_now_ms(void);
/** Sleeps `ms` milliseconds. */
void e2e_sleep_ms(int ms);

#endif
