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
  const char *listen;            /* "HOST:PORT"; port 0 picks a free one (borrowed) */
  const char *tls_cert_file;     /* PEM; with tls_key_file enables HTTPS (borrowed, may be NULL) */
  const char *tls_key_file;
  size_t max_body_bytes;         /* a larger request body gets 413 */
  size_t max_nodes;              /* more nodes in one request gets 413 */
  unsigned max_depth;            /* deeper JSON nesting gets 400 */
  unsigned conn_timeout_s;       /* idle or stalled connections are closed after this */
  unsigned max_connections;
  unsigned drain_timeout_ms;     /* SIGTERM: most time given to in-flight requests */
  bool debug_only;               /* the --debug-listen listener: /debug/state and /healthz only */
  bool metrics_only;             /* the --metrics-listen listener: /metrics and /healthz only */
  bool debug_over_tls;           /* a TLS listener serves /debug/state too (default true) */
} sf_extender_config_t;

typedef struct sf_extender sf_extender_t;

/** Fills in the defaults (127.0.0.1:8888, 64 MiB, 100,000 nodes, depth 64, 30 s, 1024, 5 s). */
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

typedef void (*sf_extender_drained_cb)(sf_extender_t *x, void *arg);

/**
 * Stops accepting connections and lets in-flight requests finish (at most
 * drain_timeout_ms); then closes every connection and calls `done` on the
 * loop. Idle keep-alive connections are closed at once.
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
