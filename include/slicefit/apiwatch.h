/*
 * slicefit apiwatch: keeps a cluster in step with kube-apiserver.
 *
 * For each watched resource (nodes, resourceslices, resourceclaims,
 * deviceclasses, optionally pods and devicetaintrules, and the policy ConfigMap) it runs the
 * reflector protocol of k8s-wire.md §2.15: a streaming list
 * (sendInitialEvents) when the server offers it, else a paged LIST; then a
 * WATCH from the list's resourceVersion with bookmarks. 410 relists and
 * replaces the resource's objects in one step; other failures back off with
 * jitter. HTTP runs on libcurl's multi interface driven by the caller's
 * libuv loop: every callback, and every call below, happens on that loop's
 * thread. No other thread is started.
 *
 * Objects reach the cluster through a sink (sf_cluster_apply / _delete /
 * _replace by default); tests may pass their own.
 */
#ifndef SLICEFIT_APIWATCH_H
#define SLICEFIT_APIWATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>
#include <uv.h>
#include "slicefit/cluster.h"
#include "slicefit/policy.h"

/* ---- where the API server is and who we are (kubeconfig.c) ---- */

#define SF_KUBE_PATH_MAX 1024

/*
 * A resolved connection. Strings belong to the struct (sf_kubeconfig_dispose frees
 * them); NULL when absent. Parsing refuses a server URL without a host and
 * insecure-skip-tls-verify together with a CA. *_data fields hold decoded PEM bytes (the
 * kubeconfig's base64 *-data fields), *_file fields paths.
 */
typedef struct {
  char *server; /* "https://host:port" or "http://..." without a trailing '/' */
  char *ca_file, *ca_data;
  size_t ca_len;
  bool insecure;    /* insecure-skip-tls-verify */
  char *token;      /* a fixed token, or */
  char *token_file; /* a file re-read before each request (rotation) */
  char *cert_file, *cert_data;
  size_t cert_len;
  char *key_file, *key_data;
  size_t key_len;
} sf_kubeconfig_t;

/* Paths in-cluster config reads; tests point them elsewhere. NULL: the defaults. */
typedef struct {
  const char *token_file; /* /var/run/secrets/kubernetes.io/serviceaccount/token */
  const char *ca_file;    /* /var/run/secrets/kubernetes.io/serviceaccount/ca.crt */
} sf_incluster_paths_t;

/**
 * Loads `path` (a kubeconfig, YAML) and resolves its current-context to a
 * cluster and user. Relative file paths in it are taken relative to the
 * file's folder. On error returns SF_EINVAL/SF_ENOENT and writes a message
 * naming the file and the field into err; *out is then zeroed.
 */
int sf_kubeconfig_load(sf_kubeconfig_t *out, const char *path, char *err, size_t errlen);
/** Same, from a YAML text in memory; `name` stands for the file in errors and `dir` resolves relative paths. */
int sf_kubeconfig_parse(sf_kubeconfig_t *out, const char *text, size_t len, const char *name,
                        const char *dir, char *err, size_t errlen);
/**
 * In-cluster config from KUBERNETES_SERVICE_HOST/PORT (both required) and
 * the service-account token (re-read per request) and CA. `paths` may be NULL.
 */
int sf_kubeconfig_incluster(sf_kubeconfig_t *out, const sf_incluster_paths_t *paths, char *err,
                            size_t errlen);
/**
 * SF_EINVAL (err says why) when a bearer token would be sent over plain
 * http, unless allow_plain_token (tests against a loopback fake). 0 otherwise.
 */
int sf_kubeconfig_check_transport(const sf_kubeconfig_t *kc, bool allow_plain_token, char *err,
                                  size_t errlen);
void sf_kubeconfig_dispose(sf_kubeconfig_t *kc);
/**
 * The bearer token to send now: the fixed token, or the token file's
 * current content (trimmed). New string, or NULL with err set (SF_ENOENT)
 * when the file cannot be read; NULL without error when there is no token.
 */
char *sf_kubeconfig_token(const sf_kubeconfig_t *kc, char *err, size_t errlen);

/* ---- the watcher ---- */

typedef struct sf_apiwatch sf_apiwatch_t;

/*
 * Where objects go. Every function returns 0 or an SF_E* code with err set;
 * an error is logged and counted (decode_errors), never retried. replace
 * steals nothing: `items` is borrowed.
 */
typedef struct {
  int (*apply)(void *ud, sf_kind_t kind, const json_t *obj, char *err, size_t errlen);
  int (*remove)(void *ud, sf_kind_t kind, const json_t *obj, char *err, size_t errlen);
  int (*replace)(void *ud, sf_kind_t kind, const json_t *items, char *err, size_t errlen);
  void *ud;
} sf_apiwatch_sink_t;

/**
 * Called with each new valid policy from the ConfigMap (borrowed; copy it
 * to keep it). The default (policy_cb NULL with a cluster) is
 * sf_cluster_set_policy.
 */
typedef void (*sf_apiwatch_policy_cb)(void *ud, const sf_policy_t *pol);

typedef struct {
  sf_kubeconfig_t kube;         /* borrowed; must outlive the watcher */
  const char *policy_configmap; /* "NAMESPACE/NAME" or NULL */
  sf_apiwatch_policy_cb policy_cb;
  void *policy_ud;
  const char *device_taint_rules; /* version to watch devicetaintrules at ("v1",
                                    "v1beta2", "v1alpha3"); NULL = not watched */
  bool watch_pods;                /* watch pods that have not ended (status.phase!=Succeeded,
                                    status.phase!=Failed): node CPU in use, claims' CPU */
  bool no_streaming_list;         /* never try sendInitialEvents */
  uint32_t page_size;             /* LIST limit; 0 = 500 */
  uint32_t staleness_ms;          /* synced() is false while a resource has gone unconfirmed
                                    (or its watch broken) this long; 0 = 30000 */
  uint32_t silent_ms;             /* a transfer with no byte for this long is restarted; 0 = 30000 */
  uint32_t stream_retry_ms;       /* watch-list is tried again this long after a fallback to
                                    LIST; 0 = 600000 */
  uint32_t backoff_min_ms;        /* first retry delay; 0 = 200 */
  uint32_t backoff_max_ms;        /* cap, also of a 429's Retry-After; 0 = 30000 */
  uint32_t watch_timeout_s;       /* timeoutSeconds of each watch; 0 = random 10..20 */
  uint32_t request_timeout_ms;    /* a LIST page's limit, and a watch's past its timeoutSeconds
                                    (a stalled server); 0 = 60000 */
  size_t max_event_bytes;         /* framer cap per event; 0 = 64 MiB */
  size_t max_list_bytes;          /* cap on one LIST page body; 0 = 1 GiB */
  const sf_apiwatch_sink_t *sink; /* NULL: the cluster */
} sf_apiwatch_opts_t;

/** Counters for /metrics; monotonic since create. */
typedef struct {
  uint64_t events; /* ADDED/MODIFIED/DELETED applied */
  uint64_t bookmarks;
  uint64_t lists;           /* completed full lists (paged or streaming) */
  uint64_t stream_lists;    /* of which by watch-list */
  uint64_t relists_expired; /* 410 Gone/Expired seen */
  uint64_t watch_resumes;   /* watches restarted from the last rv after an end */
  uint64_t err_http_5xx, err_http_429, err_auth, err_connect, err_tls, err_other;
  uint64_t decode_errors;  /* objects the sink rejected */
  uint64_t framing_errors; /* a malformed or oversized event */
  uint64_t policy_applied, policy_invalid;
  uint64_t streaming_fallbacks; /* servers without watch-list */
  uint64_t silent_restarts;     /* transfers restarted after silent_ms without a byte */
} sf_apiwatch_stats_t;

/* How long ago a resource was last confirmed current (for a gauge). */
typedef struct {
  const char *resource; /* borrowed: "resourceslices", "configmap ns/name", ... */
  uint64_t age_ms;      /* UINT64_MAX: never */
} sf_apiwatch_age_t;

/**
 * New watcher on `loop` feeding `cluster` (borrowed; must outlive the
 * watcher) unless opts->sink is set. Starts nothing. NULL with err set on
 * bad options (policy_configmap not "NS/NAME", no server).
 */
sf_apiwatch_t *sf_apiwatch_create(uv_loop_t *loop, sf_cluster_t *cluster,
                                  const sf_apiwatch_opts_t *opts, char *err, size_t errlen);
/** As create, with opts->sink required and no cluster (tests, benchmarks). */
sf_apiwatch_t *sf_apiwatch_create_sink(uv_loop_t *loop, const sf_apiwatch_opts_t *opts, char *err,
                                       size_t errlen);
/**
 * Discovery, blocking (before the loop runs; each GET at most timeout_ms):
 * the version of `group` that serves `resource`, preferred versions first,
 * into version ("" when no version serves it, or the group is absent).
 * Returns 0, or SF_EINVAL with err set when the server could not be asked
 * (common.h has no I/O error code; the caller logs it and goes on).
 */
int sf_apiwatch_discover(const sf_kubeconfig_t *kc, const char *group, const char *resource,
                         unsigned timeout_ms, char *version, size_t cap, char *err, size_t errlen);
/**
 * The API server's Kubernetes minor version (GET /version: "minor" of major "1", a provider's
 * "34+" read as 34), blocking like sf_apiwatch_discover. 0 or SF_EINVAL with err set.
 */
int sf_apiwatch_server_minor(const sf_kubeconfig_t *kc, unsigned timeout_ms, int *minor, char *err,
                             size_t errlen);
/** Reads "1.34", "v1.34" or "v1.34.2" into minor 34: 0, or SF_EINVAL for anything else. */
int sf_kube_version_parse(const char *text, int *minor);

/** Starts listing and watching every resource. 0 or SF_EINVAL if already started. */
int sf_apiwatch_start(sf_apiwatch_t *w);
/**
 * True once every resource has synced, and none has had a broken watch
 * for longer than the staleness bound (for /readyz).
 */
bool sf_apiwatch_synced(const sf_apiwatch_t *w);
void sf_apiwatch_stats(const sf_apiwatch_t *w, sf_apiwatch_stats_t *out);
/**
 * Fills out[] (up to cap) with each resource's age of last confirmation
 * (a list done, a watch answered, a byte on it); returns how many.
 */
size_t sf_apiwatch_ages(const sf_apiwatch_t *w, sf_apiwatch_age_t *out, size_t cap);
/**
 * Aborts every transfer and closes the loop handles. `done` (may be NULL)
 * runs once they are closed; only then may the watcher be destroyed.
 */
void sf_apiwatch_stop(sf_apiwatch_t *w, void (*done)(void *ud), void *ud);
/** Frees the watcher (NULL accepted); after stop's `done`, or if never started. */
void sf_apiwatch_destroy(sf_apiwatch_t *w);

/*
 * One request to the API server besides the watches (the Eviction API), on
 * the watcher's libcurl multi handle and so on its loop, never blocking it.
 * `status` is the HTTP status, 0 when no answer came (then `body` is
 * libcurl's error); `body` (borrowed for the call) is the answer, capped at
 * 64 KiB. The callback runs on the loop, once, unless the watcher stops
 * first: stopping aborts the requests in flight without calling them.
 */
typedef void (*sf_apiwatch_reply_cb)(void *ud, long status, const char *body, size_t len);
/**
 * Sends `method` `path` (from the server's root, "/api/v1/...") with the
 * JSON `body` (copied; may be NULL), authenticated as the watches are.
 * 0, or SF_EINVAL when the watcher is not running (cb is then not called).
 */
int sf_apiwatch_request(sf_apiwatch_t *w, const char *method, const char *path, const char *body,
                        sf_apiwatch_reply_cb cb, void *ud);

/* ---- the watch stream framer (framer.c) ---- */

/*
 * Splits a byte stream of concatenated JSON objects (one watch event each,
 * usually newline-separated) at arbitrary chunk boundaries. The framer
 * keeps the partial event; whitespace between objects is skipped. It only
 * tracks strings and brace depth: jansson parses each complete object.
 */
#define SF_FRAMER_MAX_DEPTH 512

typedef struct {
  char *buf;
  size_t len, cap;                           /* the current, incomplete event */
  size_t max;                                /* cap per event */
  uint32_t depth;                            /* nesting of braces and brackets scanned so far */
  uint8_t open[SF_FRAMER_MAX_DEPTH / 8 + 1]; /* bit per level: 1 = '[' */
  bool in_str, esc;
  bool emitted;       /* buf holds an event returned by the last call */
  size_t cut;         /* internal: where the line after a cut event starts */
  uint64_t truncated; /* events dropped because a line break cut them short */
} sf_framer_t;

void sf_framer_init(sf_framer_t *f, size_t max_event);
void sf_framer_dispose(sf_framer_t *f);
/**
 * Consumes up to `len` bytes of `data`. Returns bytes consumed (> 0) and
 * sets *ev and *evlen to a complete event (borrowed, valid until the next call)
 * when one ends within them; returns the bytes consumed with *ev NULL when
 * all of them were kept as a partial event (need more); 0 only for len 0.
 * SF_E2BIG past the size cap, SF_EINVAL when the stream is not a sequence of
 * objects (a stray byte between events, a bracket closed by a brace, depth
 * past SF_FRAMER_MAX_DEPTH);
 * after an error the framer must be reset.
 * A line break inside an event is not an error: the partial event is
 * dropped, f->truncated grows by one, and the bytes through the line break
 * count as consumed (*ev NULL); framing goes on at the next line.
 */
long sf_framer_feed(sf_framer_t *f, const char *data, size_t len, const char **ev, size_t *evlen);
/** Forgets any partial event (after a reconnect). */
void sf_framer_reset(sf_framer_t *f);
/** True when a partial event is kept. */
bool sf_framer_pending(const sf_framer_t *f);

#endif
