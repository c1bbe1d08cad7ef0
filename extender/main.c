/*
 * bin/slicefit: flags in, modules wired, sf_daemon_run does the rest.
 * Flags follow Kubernetes components (pflag): --name=value or --name value.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "slicefit/apiwatch.h"
#include "slicefit/extender.h"
#include "slicefit/log.h"
#include "slicefit/policy.h"

static void usage(FILE *f)
{
  fprintf(f, "Usage: slicefit [flags]\n"
             "\n"
             "kube-scheduler extender that packs GPU DRA claims (POST /filter, POST /prioritize;\n"
             "GET /healthz, /readyz, /metrics; /debug/state, /debug/defrag, see --debug-listen).\n"
             "\n"
             "Sources of state. Without --snapshot or --kubeconfig: the in-cluster API server\n"
             "when KUBERNETES_SERVICE_HOST is set, else the example cluster\n"
             "  " SF_DAEMON_DEFAULT_SNAPSHOT " (when run from the repository).\n"
             "      --snapshot FILE             JSON List of ResourceSlices, ResourceClaims and\n"
             "                                  DeviceClasses, as `kubectl get resourceslices,\n"
             "                                  resourceclaims,deviceclasses -A -o json` prints it;\n"
             "                                  an object that does not decode is rejected alone\n"
             "                                  and logged, as a live cluster's\n"
             "      --strict                    with --snapshot: refuse to start on one bad object\n"
             "      --kubeconfig FILE           watch a live cluster (ResourceSlices,\n"
             "                                  ResourceClaims, DeviceClasses, DeviceTaintRules)\n"
             "      --policy-configmap NS/NAME  live cluster: watch this ConfigMap for the policy\n"
             "      --policy FILE               JSON object of policy keys (listed below)\n"
             "      --stale-after SECS          /readyz fails once a watched resource has not been\n"
             "                                  confirmed current for this long (default 30)\n"
             "      --watch-silence SECS        restart a watch that sends no byte for this long\n"
             "                                  (default 30)\n"
             "      --allow-token-over-http     tests only: send a kubeconfig's bearer token to an\n"
             "                                  http:// server (refused by default)\n"
             "      --kubernetes-version 1.N    answer as the allocator of that version with its\n"
             "                                  default feature gates (default: a live cluster's\n"
             "                                  /version; with --snapshot, every gate on)\n"
             "\n");
  fprintf(f,
          "Serving:\n"
          "      --listen HOST:PORT          address to serve on (default 127.0.0.1:8888)\n"
          "      --tls-cert-file FILE        PEM certificate: serve HTTPS (enableHTTPS)\n"
          "      --tls-private-key-file FILE PEM private key matching --tls-cert-file\n"
          "      --debug-listen HOST:PORT    serve /debug/state (every claim's name) and\n"
          "                                  /debug/defrag?claim=NS/NAME (its plan) on this\n"
          "                                  separate plain-HTTP address; \":PORT\" means\n"
          "                                  127.0.0.1 (default: not served, except below)\n"
          "      --metrics-listen HOST:PORT  also serve /metrics (and /healthz) on this plain-HTTP\n"
          "                                  address, for a NetworkPolicy that opens it to\n"
          "                                  Prometheus alone; \":PORT\" means 127.0.0.1\n"
          "      --client-ca-file FILE       PEM CA: with TLS, a client must present a certificate\n"
          "                                  it signed, or the handshake fails (reloaded on change)\n"
          "      --debug-state-over-tls BOOL also serve /debug/state and /debug/defrag on\n"
          "                                  --listen, to verified clients only: needs TLS\n"
          "                                  and --client-ca-file\n"
          "                                  (default false)\n"
          "      --tls-min-version V         oldest TLS version served: 1.2 or 1.3 (default 1.2)\n"
          "      --tls-reload-interval SECS  check the certificate files for changes (default 10)\n"
          "      --probe-listen HOST:PORT    serve /healthz and /readyz there too, on their own\n"
          "                                  thread (default: off)\n"
          "\n");
  fprintf(f, "Metrics:\n"
             "      --node-pool-label KEY       Node label that names a node pool in the per-pool\n"
             "                                  metrics (default: karpenter.sh/nodepool,\n"
             "                                  cloud.google.com/gke-nodepool,\n"
             "                                  eks.amazonaws.com/nodegroup or\n"
             "                                  kubernetes.azure.com/agentpool, first found)\n"
             "      --gpu-price PRICE           price of one GPU for a month (a node's price over\n"
             "                                  its GPUs): adds slicefit_namespace_monthly_cost\n"
             "\n");
  fprintf(f,
          "Limits (docs/operators.md lists each with its default):\n"
          "      --max-body-bytes N          larger request bodies get 413 (default 26648576:\n"
          "                                  100,000 node names of up to 253 characters)\n"
          "      --max-nodelist-bytes N      larger bodies that are not NodeNames calls (a NodeList\n"
          "                                  decodes to ~20x its size) get 413 (default 12582912;\n"
          "                                  0: --max-body-bytes)\n"
          "      --max-buffered-bytes N      bodies and replies held across all requests; past\n"
          "                                  it 503 with Retry-After (default 67108864)\n"
          "      --retry-after SECS          Retry-After of that 503 (default 1)\n"
          "      --max-nodes N               more nodes in one request get 413 (default 100000)\n"
          "      --header-timeout SECS       request headers complete within (default 10)\n"
          "      --request-timeout SECS      headers to answer sent (default 30)\n"
          "      --connection-timeout SECS   close an idle keep-alive connection (default 30)\n"
          "      --keepalive-requests N      answers per connection (default 1000)\n"
          "      --max-connections N         concurrent connections (default 1024)\n"
          "      --max-connections-per-ip N  concurrent connections from one address (default 64)\n"
          "      --offload-bytes N           decode larger bodies off the loop (default 1048576)\n"
          "      --liveness-stall-ms N       /healthz fails when the loop is stuck this long\n"
          "                                  (default 10000)\n"
          "      --drain-timeout SECS        on SIGTERM, time for in-flight requests (default 5)\n"
          "\n"
          "Logging (as Kubernetes components):\n"
          "  -v, --v N                       verbosity 0..5 (default 0): 0 start, stop, state\n"
          "                                  and policy changes; 2 claims pending too long;\n"
          "                                  4 each filter/prioritize call and request; 5 each\n"
          "                                  watch event. Errors and warnings always print.\n"
          "      --logging-format FORMAT     text (klog, default) or json\n"
          "      --pending-warn-after DUR    log (at -v=2) each claim pending longer than this,\n"
          "                                  with the filter's reason per node (default 5m;\n"
          "                                  seconds, or with s, m or h)\n"
          "\n"
          "Defragmentation (see /debug/defrag and docs/operators.md):\n"
          "      --defrag-evict[=BOOL]       live cluster: carry out the plan for a claim pending\n"
          "                                  longer than --defrag-after, evicting its pods through\n"
          "                                  the Eviction API (PodDisruptionBudgets hold), at most\n"
          "                                  defrag_max_per_hour plans an hour (default false)\n"
          "      --defrag-after DUR          how long a claim waits before it gets a plan\n"
          "                                  (default 10m; seconds, or with s, m or h)\n"
          "\n"
          "      --version                   print the version and the git commit, and exit\n"
          "  -h, --help                      this help\n"
          "\n"
          "Policy keys (--policy FILE, or the data of the --policy-configmap ConfigMap):\n");
  size_t n;
  const sf_policy_key_t *keys = sf_policy_keys(&n);
  for (size_t i = 0; i < n; i++)
    fprintf(f, "  %-22s %s (default %s)\n", keys[i].key, keys[i].doc,
            keys[i].def[0] ? keys[i].def : "empty");
}

/* A price: a finite non-negative decimal number (exits with a message otherwise). */
static double price(const char *name, const char *v)
{
  char *end;
  double p = strtod(v, &end);
  if (*v == '\0' || *end != '\0' || !(p >= 0 && p < 1e12)) {
    fprintf(stderr, "slicefit: --%s %s: expected a non-negative number (a price per month)\n", name,
            v);
    exit(2);
  }
  return p;
}

/* Matches --name=value or --name value; *i advances past what was used. */
static const char *flag(int argc, char **argv, int *i, const char *name)
{
  const char *a = argv[*i];
  size_t n = strlen(name);
  if (strncmp(a, "--", 2) != 0 || strncmp(a + 2, name, n) != 0)
    return NULL;
  if (a[2 + n] == '=')
    return a + 3 + n;
  if (a[2 + n] != '\0')
    return NULL;
  if (*i + 1 >= argc) {
    fprintf(stderr, "slicefit: flag --%s needs a value\n", name);
    exit(2);
  }
  return argv[++*i];
}

static unsigned long number(const char *name, const char *v)
{
  char *end;
  unsigned long n = strtoul(v, &end, 10);
  if (*v == '\0' || *v == '-' || (*end != '\0' && strcmp(end, "s") != 0)) {
    fprintf(stderr, "slicefit: --%s %s: expected a non-negative number\n", name, v);
    exit(2);
  }
  return n;
}

/* A Go-style duration: "300", "300s", "5m", "1h". */
static unsigned duration_s(const char *name, const char *v)
{
  char *end;
  unsigned long n = strtoul(v, &end, 10);
  unsigned long mul = strcmp(end, "h") == 0 ? 3600 : strcmp(end, "m") == 0 ? 60 : 1;
  if (*v < '0' || *v > '9' || (*end != '\0' && strcmp(end, "s") != 0 && mul == 1) || n > 86400 * 30) {
    fprintf(stderr, "slicefit: --%s %s: expected a duration such as 300s, 5m or 1h\n", name, v);
    exit(2);
  }
  return (unsigned)(n * mul);
}

static bool boolean(const char *name, const char *v)
{
  if (strcmp(v, "true") != 0 && strcmp(v, "false") != 0) {
    fprintf(stderr, "slicefit: --%s %s: expected true or false\n", name, v);
    exit(2);
  }
  return v[0] == 't';
}

static bool parse_log_flag(int argc, char **argv, int *i, sf_daemon_options_t *o)
{
  const char *v;
  sf_log_format_t f;
  if ((v = flag(argc, argv, i, "v")))
    sf_log_set_verbosity((int)number("v", v));
  else if ((v = flag(argc, argv, i, "logging-format"))) {
    if (sf_log_format_parse(v, &f) != 0) {
      fprintf(stderr, "slicefit: --logging-format %s: expected text or json\n", v);
      exit(2);
    }
    sf_log_set_format(f);
  } else if ((v = flag(argc, argv, i, "pending-warn-after")))
    o->pending_warn_after_s = duration_s("pending-warn-after", v);
  else if (strcmp(argv[*i], "--defrag-evict") == 0)
    o->defrag_evict = true;
  else if ((v = flag(argc, argv, i, "defrag-evict")))
    o->defrag_evict = boolean("defrag-evict", v);
  else if ((v = flag(argc, argv, i, "defrag-after"))) {
    o->defrag_after_s = duration_s("defrag-after", v);
    if (o->defrag_after_s == 0) {
      fprintf(stderr, "slicefit: --defrag-after %s: expected a duration above 0\n", v);
      exit(2);
    }
  } else
    return false;
  return true;
}

/* The limits and deadlines against hostile clients, and the TLS, probe and watch freshness flags. */
static bool parse_limits(int argc, char **argv, int *i, sf_daemon_options_t *o)
{
  const char *v;
  sf_extender_config_t *h = &o->http;
  if ((v = flag(argc, argv, i, "stale-after")))
    o->stale_after_s = (unsigned)number("stale-after", v);
  else if ((v = flag(argc, argv, i, "watch-silence")))
    o->watch_silence_s = (unsigned)number("watch-silence", v);
  else if (strcmp(argv[*i], "--allow-token-over-http") == 0)
    o->allow_token_over_http = true;
  else if (strcmp(argv[*i], "--strict") == 0)
    o->strict = true;
  else if ((v = flag(argc, argv, i, "kubernetes-version"))) {
    if (sf_kube_version_parse(v, &o->kube_minor) != 0 || o->kube_minor == 0) {
      fprintf(stderr, "slicefit: --kubernetes-version %s: expected a version such as 1.34\n", v);
      exit(2);
    }
  } else if ((v = flag(argc, argv, i, "max-nodelist-bytes")))
    h->max_nodelist_bytes = number("max-nodelist-bytes", v);
  else if ((v = flag(argc, argv, i, "max-buffered-bytes")))
    h->max_buffered_bytes = number("max-buffered-bytes", v);
  else if ((v = flag(argc, argv, i, "retry-after")))
    h->retry_after_s = (unsigned)number("retry-after", v);
  else if ((v = flag(argc, argv, i, "header-timeout")))
    h->header_timeout_s = (unsigned)number("header-timeout", v);
  else if ((v = flag(argc, argv, i, "request-timeout")))
    h->request_timeout_s = (unsigned)number("request-timeout", v);
  else if ((v = flag(argc, argv, i, "keepalive-requests")))
    h->keepalive_requests = (unsigned)number("keepalive-requests", v);
  else if ((v = flag(argc, argv, i, "max-connections-per-ip")))
    h->max_connections_per_ip = (unsigned)number("max-connections-per-ip", v);
  else if ((v = flag(argc, argv, i, "offload-bytes")))
    h->offload_bytes = number("offload-bytes", v);
  else if ((v = flag(argc, argv, i, "liveness-stall-ms")))
    h->liveness_stall_ms = (unsigned)number("liveness-stall-ms", v);
  else if ((v = flag(argc, argv, i, "probe-listen")))
    h->probe_listen = v;
  else if ((v = flag(argc, argv, i, "tls-min-version")))
    h->tls_min_version = v;
  else if ((v = flag(argc, argv, i, "tls-reload-interval")))
    h->tls_reload_s = (unsigned)number("tls-reload-interval", v);
  else
    return false;
  return true;
}

static bool parse_one(int argc, char **argv, int *i, sf_daemon_options_t *o)
{
  const char *v;
  sf_extender_config_t *h = &o->http;
  if ((v = flag(argc, argv, i, "listen")))
    h->listen = v;
  else if ((v = flag(argc, argv, i, "snapshot")))
    o->snapshot = v;
  else if ((v = flag(argc, argv, i, "policy-configmap")))
    o->policy_configmap = v;
  else if ((v = flag(argc, argv, i, "policy")))
    o->policy = v;
  else if ((v = flag(argc, argv, i, "kubeconfig")))
    o->kubeconfig = v;
  else if ((v = flag(argc, argv, i, "tls-cert-file")))
    h->tls_cert_file = v;
  else if ((v = flag(argc, argv, i, "tls-private-key-file")))
    h->tls_key_file = v;
  else if ((v = flag(argc, argv, i, "client-ca-file")))
    h->tls_client_ca_file = v;
  else if ((v = flag(argc, argv, i, "node-pool-label")))
    h->node_pool_label = v;
  else if ((v = flag(argc, argv, i, "gpu-price")))
    h->gpu_price_month = price("gpu-price", v);
  else if ((v = flag(argc, argv, i, "max-body-bytes")))
    h->max_body_bytes = number("max-body-bytes", v);
  else if ((v = flag(argc, argv, i, "max-nodes")))
    h->max_nodes = number("max-nodes", v);
  else if ((v = flag(argc, argv, i, "connection-timeout")))
    h->conn_timeout_s = (unsigned)number("connection-timeout", v);
  else if ((v = flag(argc, argv, i, "max-connections")))
    h->max_connections = (unsigned)number("max-connections", v);
  else if ((v = flag(argc, argv, i, "drain-timeout")))
    h->drain_timeout_ms = (unsigned)number("drain-timeout", v) * 1000u;
  else if ((v = flag(argc, argv, i, "debug-listen")))
    o->debug_listen = v;
  else if ((v = flag(argc, argv, i, "metrics-listen")))
    o->metrics_listen = v;
  else if ((v = flag(argc, argv, i, "debug-state-over-tls")))
    h->debug_over_tls = boolean("debug-state-over-tls", v);
  else
    return parse_limits(argc, argv, i, o) || parse_log_flag(argc, argv, i, o);
  return true;
}

/* --snapshot, --kubeconfig, in-cluster, or the example cluster, in that order. */
static bool pick_source(sf_daemon_options_t *o)
{
  if (o->snapshot && o->kubeconfig) {
    fprintf(stderr, "slicefit: --snapshot and --kubeconfig are two sources of state; give one\n");
    return false;
  }
  if (o->snapshot == NULL && o->kubeconfig == NULL && getenv("KUBERNETES_SERVICE_HOST") == NULL) {
    if (access(SF_DAEMON_DEFAULT_SNAPSHOT, R_OK) != 0) {
      fprintf(stderr, "slicefit: no source of state: give --snapshot FILE or --kubeconfig FILE "
                      "(or run from the repository to use " SF_DAEMON_DEFAULT_SNAPSHOT ")\n");
      return false;
    }
    o->snapshot = SF_DAEMON_DEFAULT_SNAPSHOT;
  }
  if (o->strict && o->kubeconfig) {
    fprintf(stderr, "slicefit: --strict applies to --snapshot; a live cluster rejects bad objects "
                    "one by one\n");
    return false;
  }
  if (o->defrag_evict && o->snapshot) {
    fprintf(stderr, "slicefit: --defrag-evict needs a live cluster (it evicts through the "
                    "Eviction API), not --snapshot\n");
    return false;
  }
  if (o->policy_configmap && o->snapshot) {
    fprintf(stderr, "slicefit: --policy-configmap needs a live cluster, not --snapshot\n");
    return false;
  }
  return true;
}

int main(int argc, char **argv)
{
  sf_daemon_options_t o = {0};
  sf_extender_config_init(&o.http);
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      usage(stdout);
      return 0;
    }
    if (strcmp(argv[i], "--version") == 0) {
      printf("slicefit %s (commit %s)\n", sf_version(), sf_revision());
      return 0;
    }
    /* -v N and -v=N, as pflag's shorthand; --v N and --v=N are flags like the others. */
    if (strcmp(argv[i], "-v") == 0 && i + 1 < argc) {
      sf_log_set_verbosity((int)number("v", argv[++i]));
      continue;
    }
    if (strncmp(argv[i], "-v=", 3) == 0) {
      sf_log_set_verbosity((int)number("v", argv[i] + 3));
      continue;
    }
    if (!parse_one(argc, argv, &i, &o)) {
      fprintf(stderr, "slicefit: unknown flag %s (see --help)\n", argv[i]);
      return 2;
    }
  }
  return pick_source(&o) ? sf_daemon_run(&o) : 2;
}
