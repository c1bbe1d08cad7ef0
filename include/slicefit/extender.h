/*
 * slicefit extender: kube-scheduler's HTTP extender (filter, prioritize)
 * plus health, readiness, Prometheus metrics and a debug view, served by
 * libmicrohttpd in external-poll mode on one libuv loop.
 *
 * Threading: everything here runs on the loop's thread. libmicrohttpd is
 * driven by a uv_poll on its epoll descriptor and a uv_timer for its
 * timeouts, so the request handlers run inside the loop and always see a
 * whole cluster index (no locks, no other threads).
 *
 * Shell code (libuv, libmicrohttpd, jansson).
 */
#ifndef SLICEFIT_EXTENDER_H
#define SLICEFIT_EXTENDER_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>
#include "slicefit/cluster.h"

typedef struct {
  const char *listen;        /* "HOST:PORT"; port 0 picks a free one (borrowed) */
  const char *tls_cert_file; /* PEM; with tls_key_file enables HTTPS (borrowed, may be NULL) */
  const char *tls_key_file;
  const char *tls_client_ca_file; /* PEM CA: clients must present a certificate it signed (or NULL) */
  size_t max_body_bytes;          /* a larger request body gets 413 */
  size_t max_nodelist_bytes;      /* a larger body that is not NodeNames (a NodeList) gets 413;
                                    0 = max_body_bytes */
  size_t max_nodes;               /* more nodes in one request gets 413 */
  unsigned max_depth;             /* deeper JSON nesting gets 400 */
  unsigned conn_timeout_s;        /* keep-alive: an idle connection is closed after this */
  unsigned max_connections;
  unsigned drain_timeout_ms; /* SIGTERM: most time given to in-flight requests */
  bool debug_only;   /* the --debug-listen listener: /debug/state, /debug/defrag and /healthz only */
  bool metrics_only; /* the --metrics-listen listener: /metrics and /healthz only */
  bool debug_over_tls; /* a TLS listener serves /debug/state and /debug/defrag too (default false; needs a client CA) */
  unsigned header_timeout_s;   /* a request's headers must be complete within this */
  unsigned request_timeout_s;  /* headers complete to answer sent */
  unsigned keepalive_requests; /* answers per connection; the last says Connection: close */
  unsigned max_connections_per_ip;
  size_t max_buffered_bytes;   /* bodies and replies held across all requests; 503 past it */
  unsigned retry_after_s;      /* Retry-After of that 503 */
  size_t offload_bytes;        /* filter/prioritize bodies larger are decoded off the loop */
  const char *probe_listen;    /* "HOST:PORT" of the /healthz, /readyz listener, or NULL */
  unsigned liveness_stall_ms;  /* /healthz fails once the loop has not turned for this */
  const char *tls_min_version; /* "1.2" or "1.3" */
  unsigned tls_reload_s;       /* how often the certificate files are checked for changes */
  const char *node_pool_label; /* Node label naming a node pool in /metrics; NULL: well-known ones */
  double gpu_price_month;      /* price of one GPU for a month; > 0 adds each namespace's cost */
} sf_extender_config_t;

/*
 * The default per-body limit: 100,000 node names of up to 253 characters
 * (a DNS subdomain) with their quotes and commas, plus 1 MiB for the pod.
 */
#define SF_EXTENDER_MAX_BODY_DEFAULT ((size_t)100000 * 256 + ((size_t)1 << 20))

typedef struct sf_extender sf_extender_t;

/**
 * Fills in the defaults: 127.0.0.1:8888, SF_EXTENDER_MAX_BODY_DEFAULT, NodeLists 12 MiB,
 * 100,000 nodes, depth 64, keep-alive idle 30 s, 1,024 connections, 64 per
 * client address, drain 5 s, headers 10 s, request 30 s, 1,000 requests per
 * connection, 64 MiB buffered, Retry-After 1 s, off-loop decoding past
 * 1 MiB, liveness stall 10 s, TLS 1.2 and up, certificate checked every 10 s.
 */
void sf_extender_config_init(sf_extender_config_t *cfg);

/**
 * Binds and starts serving on `loop`. `cluster` is borrowed for the
 * extender's life and only used on the loop's thread. Errors (a bad
 * address, a port in use, unreadable TLS files) return SF_EINVAL with the
 * reason in err.
 */
int sf_extender_start(uv_loop_t *loop, sf_cluster_t *cluster, const sf_extender_config_t *cfg,
                      sf_extender_t **out, char *err, size_t errlen);

/** GET /readyz answers 200 once set (the state has synced), 503 before. */
void sf_extender_set_ready(sf_extender_t *x, bool ready);

/**
 * Says the cluster changed (an object applied, a policy set): evaluations
 * kept from an earlier filter call are no longer used. Whoever mutates the
 * cluster while the extender serves must call it.
 */
void sf_extender_invalidate(sf_extender_t *x);

/** A metrics_only listener `x` serves the /metrics of `of` (both borrowed; on the loop). */
void sf_extender_metrics_of(sf_extender_t *x, sf_extender_t *of);

/** The bound TCP port (useful with port 0). */
uint16_t sf_extender_port(const sf_extender_t *x);
/** The probe listener's bound port, 0 without one. */
uint16_t sf_extender_probe_port(const sf_extender_t *x);

typedef void (*sf_extender_drained_cb)(sf_extender_t *x, void *arg);

/**
 * Stops accepting connections (those the kernel had already accepted are
 * still served) and answers every request already on the wire, each answer
 * with Connection: close, for at most drain_timeout_ms; then closes every
 * connection and calls `done` on the loop. Keep-alive connections with no
 * request under way are closed at once.
 */
void sf_extender_drain(sf_extender_t *x, sf_extender_drained_cb done, void *arg);

/**
 * Stops the server and closes its libuv handles; the memory is freed once
 * the loop has run their close callbacks. Accepts NULL.
 */
void sf_extender_destroy(sf_extender_t *x);

/* ---- the daemon (bin/slicefit) ---- */

typedef struct {
  sf_extender_config_t http;
  const char *snapshot;          /* kubectl List JSON file, or NULL */
  const char *policy;            /* JSON object of policy keys, or NULL */
  const char *kubeconfig;        /* live cluster (apiwatch), or NULL */
  const char *policy_configmap;  /* NAMESPACE/NAME watched for the policy, or NULL */
  const char *debug_listen;      /* HOST:PORT of a plain listener for /debug/state, or NULL */
  const char *metrics_listen;    /* HOST:PORT of a plain listener for /metrics, or NULL */
  unsigned pending_warn_after_s; /* a claim pending this long is logged at -v=2 (0: 300) */
  unsigned stale_after_s;        /* /readyz 503 once a resource is unconfirmed this long (30) */
  unsigned watch_silence_s;      /* a watch with no byte this long is restarted (30) */
  bool allow_token_over_http;    /* tests only: a bearer token to an http:// server */
  int kube_minor;                /* --kubernetes-version's minor; 0: live, the server's /version */
  bool strict;                   /* --strict: a snapshot with one bad object does not start */
  bool defrag_evict;             /* --defrag-evict: carry out plans (live cluster only) */
  unsigned defrag_after_s;       /* --defrag-after: a claim pending this long gets a plan (0: 600) */
} sf_daemon_options_t;

/** The release ("0.1.0") and the git commit it was built from ("unknown" outside git); static. */
const char *sf_version(void);
const char *sf_revision(void);

/** The example cluster `bin/slicefit` loads when run with no source of state. */
#define SF_DAEMON_DEFAULT_SNAPSHOT "extender/example-cluster.json"

/**
 * Loads the state and the policy, serves until SIGTERM or SIGINT, drains
 * and returns 0; or returns nonzero after logging why it could not start.
 */
int sf_daemon_run(const sf_daemon_options_t *opt);

#endif
