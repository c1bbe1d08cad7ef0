/*
 * Internals of extender/: the HTTP glue (http.c), the extender protocol
 * codec (codec.c), the metrics (metrics.c), the handlers (service.c) and a
 * growable text buffer (buf.c). Module-internal symbols are sf__ prefixed.
 * Everything runs on the loop's thread.
 */
#ifndef SLICEFIT_EXTENDER_INT_H
#define SLICEFIT_EXTENDER_INT_H

#include <stdarg.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <jansson.h>
#include <microhttpd.h>
#include <uv.h>
#include "slicefit/cluster.h"
#include "slicefit/extender.h"

/* ---- a growable text buffer ---- */

typedef struct {
  char *p; /* NUL-terminated when len > 0 or after any append */
  size_t len, cap;
} sf__buf_t;

/** 1 for the bytes a JSON string carries as they are: not '"', '\\', a control byte or NUL. */
extern const unsigned char sf__json_plain[256];
/** Makes room for `more` bytes and the NUL after them (p may move). */
void sf__buf_reserve(sf__buf_t *b, size_t more);
void sf__buf_put(sf__buf_t *b, const char *s, size_t n);
void sf__buf_puts(sf__buf_t *b, const char *s);
void sf__buf_printf(sf__buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/** Appends `s` as a JSON string literal (quoted, escaped). */
void sf__buf_json_str(sf__buf_t *b, const char *s);
/** Returns the text (new, malloc'd; "" when empty) and resets the buffer. */
char *sf__buf_steal(sf__buf_t *b, size_t *len);
void sf__buf_dispose(sf__buf_t *b);

/* ---- the extender protocol (codec.c) ---- */

typedef struct {
  size_t max_nodes;
  unsigned max_depth;
  size_t max_general_bytes; /* bodies the jansson path decodes (a NodeList); 0 = any size */
} sf__limits_t;

/*
 * The NodeNames array of the last call of a verb, kept as it came (names.c):
 * kube-scheduler sends the same names, in the same order, call after call,
 * so an array whose bytes are the same is taken whole, without decoding a
 * name, and `id` tells the cluster and the verdict cache that it is the
 * list they saw last (their per-name work is then skipped too). Loop-owned.
 */
typedef struct {
  char *text; /* the array's bytes, '[' through ']' */
  size_t len;
  char *arena;        /* the decoded names' text */
  const char **names; /* n names, into arena */
  uint32_t *raw;      /* per name, its quoted JSON form in text: raw[2i] offset, raw[2i+1] length */
  size_t n;
  uint64_t id; /* nonzero, unique per distinct array */
} sf__names_t;

/** Takes `a`'s decoded names (moved) and the array's bytes (copied) as the list for next time. */
void sf__names_keep(sf__names_t *l, const char *text, size_t len, char **arena, const char ***names,
                    size_t n);
void sf__names_dispose(sf__names_t *l);

/* A decoded ExtenderArgs. */
typedef struct {
  const sf__names_t *list; /* borrowed: names and arena are the list's (not owned), or NULL */
  json_t *root;            /* owned */
  const json_t *pod;       /* borrowed from root */
  bool cache_mode;         /* NodeNames given (nodeCacheCapable); else Nodes */
  const char **names;      /* n names (owned array, strings borrowed from root) */
  json_t **items;          /* non-cache mode: the n Node objects (owned array, borrowed items) */
  char *arena;             /* owned: the names' text when decoded without jansson */
  size_t n;
  char *items_text;  /* owned, after sf__args_detach: the Node objects as JSON text, */
  size_t *items_off; /* item i is items_text[items_off[i] .. items_off[i + 1]) */
} sf__args_t;

/** True when the JSON text nests arrays and objects no deeper than `max` (strings skipped). */
bool sf__json_depth_ok(const char *text, size_t len, unsigned max);

/**
 * Decodes ExtenderArgs from untrusted bytes. Keys match case-insensitively
 * (an exact match wins), unknown keys are ignored, trailing bytes after the
 * value are ignored (as Go's decoder does). Returns 0; SF_EINVAL for
 * malformed JSON, nesting past max_depth or wrong types; SF_E2BIG for more
 * than max_nodes nodes. `err` then says why, naming the JSON path.
 */
int sf__args_parse(sf__args_t *a, const char *body, size_t len, const sf__limits_t *lim, char *err,
                   size_t errlen);
/**
 * The same, taking a NodeNames array whose bytes are those of `*list` from
 * it, and keeping any other in it (a->list then points there). Loop only.
 */
int sf__args_parse_list(sf__args_t *a, const char *body, size_t len, const sf__limits_t *lim,
                        sf__names_t *list, char *err, size_t errlen);
/** The same with jansson over the whole body (sf__args_parse's fallback; the fuzzer compares). */
int sf__args_parse_general(sf__args_t *a, const char *body, size_t len, const sf__limits_t *lim,
                           char *err, size_t errlen);
void sf__args_dispose(sf__args_t *a);
/**
 * Leaves the arguments independent of the decoded body: the names copied,
 * each Node object serialised once (for the reply), and the JSON tree but
 * the Pod freed. Run on the thread that decoded, it keeps a NodeList's
 * large tree off the loop entirely.
 */
void sf__args_detach(sf__args_t *a);

/** Case-insensitive member lookup: an exact match first, then any casing. Borrowed. */
json_t *sf__json_get_ci(const json_t *obj, const char *key);

/**
 * ExtenderFilterResult in the mode of the call: NodeNames (cache mode) or
 * the passing Node objects echoed in Nodes. v NULL: every node passes.
 * NO nodes go to FailedNodes with the verdict's reason; UNSURE ones pass.
 */
void sf__filter_reply(sf__buf_t *b, const sf__args_t *a, const sf_verdict_t *v);
/** HostPriorityList: every node, FIT nodes with their score, others 0. v NULL: all 0. */
void sf__prioritize_reply(sf__buf_t *b, const sf__args_t *a, const sf_verdict_t *v);

/* ---- metrics (metrics.c) ---- */

#define SF__NBUCKETS 17
#define SF__NCODES 8

typedef struct {
  const char *verb;
  uint64_t buckets[SF__NBUCKETS]; /* cumulative at render time; here per bucket */
  uint64_t count;
  double sum_s;
  unsigned codes[SF__NCODES];
  uint64_t code_count[SF__NCODES];
  uint64_t code_other;
} sf__verb_stats_t;

/** Records one request of `st` that answered `status` after `secs`. */
void sf__stats_record(sf__verb_stats_t *st, unsigned status, double secs);
/** Request counters and latency histograms in Prometheus text format. */
void sf__metrics_requests(sf__buf_t *b, const sf__verb_stats_t *st, size_t n);
/**
 * Index sizes, per-node, per node pool and GPU model, and cluster device
 * allocation and fragmentation. pool_label: the Node label naming a node
 * pool, or NULL for the well-known ones (Karpenter, GKE, EKS, AKS).
 */
void sf__metrics_cluster(sf__buf_t *b, sf_cluster_t *c, sf_packer_t *pk, const char *pool_label);
/**
 * Allocation by namespace (the SF__PENDING_TOP_NS holding most devices, the
 * rest as other): device-equivalents and claims held, and with a GPU price
 * (> 0, per device and month) what each namespace's share costs a month.
 */
void sf__metrics_tenants(sf__buf_t *b, sf_cluster_t *c, double gpu_price_month);

/* Reason classes of filter verdicts: 0 none (fit), 1..SF__NREASON-1 the packer's codes, SF__NREASON other. */
#define SF__NREASON SF_REASON_COUNT

/** The reason class of a verdict (0 for FIT). */
size_t sf__reason_class(const sf_verdict_t *v);
/** Adds n verdicts to tab[fit][class] and counts[fit]. */
void sf__verdicts_count(uint64_t (*tab)[SF__NREASON + 1], const sf_verdict_t *v, size_t n,
                        size_t counts[3]);
/** slicefit_filter_verdicts_total{outcome,reason}: every series, zeros included. */
void sf__metrics_verdicts(sf__buf_t *b, const uint64_t (*tab)[SF__NREASON + 1]);
/** slicefit_build_info{version,revision} 1. */
void sf__metrics_build(sf__buf_t *b);
/** process_* from /proc (procstat.c): CPU seconds, memory, fds, start time. */
void sf__metrics_process(sf__buf_t *b);

/* ---- pending claims (pending.c): a JSON object "ns/name" -> creation time ---- */

/** Seconds since the epoch of an RFC 3339 UTC time ("2026-11-30T09:00:00Z"); 0 when unreadable. */
int64_t sf__rfc3339_seconds(const char *s);
/** Records a ResourceClaim: pending without status.allocation, forgotten with one. */
void sf__pending_apply(json_t *pending, const json_t *claim);
void sf__pending_delete(json_t *pending, const json_t *claim);
/** Replaces every claim with `items` (a relist). */
void sf__pending_replace(json_t *pending, const json_t *items);
/**
 * Loads the List in file `path` into the cluster item by item (snapshot.c),
 * its pending claims into `pending`. SF_EINVAL or SF_ENOENT with
 * "path: reason" in `err`; the cluster is unchanged then.
 */
int sf__snapshot_load(sf_cluster_t *c, json_t *pending, const char *path, bool strict, char *err,
                      size_t errlen);
#define SF__PENDING_TOP_NS 10 /* namespaces with their own series; the rest: other */
#define SF__PENDING_TOP_NS_TEXT "10"

typedef struct {
  int64_t warn_after_s;    /* --pending-warn-after */
  uint64_t too_long_total; /* claims that crossed it, each once */
} sf__pending_stats_t;

/** By namespace (top SF__PENDING_TOP_NS, then other), oldest age, too long now and ever. */
void sf__metrics_pending(sf__buf_t *b, const json_t *pending, int64_t now_s,
                         const sf__pending_stats_t *st);

typedef void (*sf__pending_fn)(const char *key, int64_t age_s, void *ud);
/**
 * Calls fn (may be NULL) once for each claim pending longer than
 * st->warn_after_s that is not in `warned` yet, adds it there and counts it
 * in st->too_long_total; drops from `warned` the claims no longer pending.
 * Returns how many were new. O(pending + warned).
 */
size_t sf__pending_sweep(const json_t *pending, json_t *warned, int64_t now_s,
                         sf__pending_stats_t *st, sf__pending_fn fn, void *ud);

/* ---- defragmentation plans carried out (defrag_run.c) ---- */

/* Why a plan stopped before its last eviction: the eviction's answer. */
typedef enum {
  SF__ABORT_BUDGET,      /* 429: a PodDisruptionBudget refused it */
  SF__ABORT_FORBIDDEN,   /* 401, 403: RBAC */
  SF__ABORT_NOT_FOUND,   /* 404: the pod went meanwhile */
  SF__ABORT_SERVER,      /* 5xx */
  SF__ABORT_UNREACHABLE, /* no answer */
  SF__ABORT_OTHER,
  SF__ABORT_COUNT
} sf__abort_t;

typedef struct {
  bool enabled;    /* --defrag-evict */
  int64_t after_s; /* --defrag-after */
  uint64_t found, carried_out, evicted;
  uint64_t aborted[SF__ABORT_COUNT];
  uint64_t no_plan, over_limit; /* pending claims planned for without a plan; plans held back */
} sf__defrag_stats_t;

typedef struct sf__defrag sf__defrag_t;
struct sf_apiwatch;
/** The runner of plans for `cluster` (borrowed), evicting through `w` (borrowed), on w's loop. */
sf__defrag_t *sf__defrag_create(sf_cluster_t *cluster, struct sf_apiwatch *w, int64_t after_s);
/**
 * Unless a plan is under way or the policy's defrag_max_per_hour plans were
 * started in the last hour: plans for the claim of `pending` waiting longest
 * past after_s (and not tried in the last after_s), and when there is a
 * plan, starts its evictions, one at a time. Loop thread.
 */
void sf__defrag_tick(sf__defrag_t *r, const json_t *pending, int64_t now_s, uint64_t now_ms);
const sf__defrag_stats_t *sf__defrag_stats(const sf__defrag_t *r);
/** After the watcher stopped (no eviction answer can come any more); NULL accepted. */
void sf__defrag_destroy(sf__defrag_t *r);
/** slicefit_defrag_*: plans found, carried out, aborted by reason, held back; pods evicted. */
void sf__metrics_defrag(sf__buf_t *b, const sf__defrag_stats_t *st);

/* ---- the last filter's verdicts (evcache.c) ---- */

#define SF__EVKEY_MAX 512

typedef struct {
  bool valid;
  char key[SF__EVKEY_MAX]; /* the pod: uid/resourceVersion/namespace/name */
  uint64_t gen;            /* the cluster generation evaluated */
  size_t n, nfit;
  char *arena; /* the names' text */
  const char **names;
  sf_verdict_t *v;
  size_t vcap;
  uint32_t *slots; /* name -> index + 1; 0 = empty */
  size_t nslots;
  uint64_t list; /* the names' list id (sf__names_t), 0 when unknown */
  uint32_t *map; /* for the prioritize list map_list: its name i is names[map[i]] */
  size_t nmap, capmap;
  uint64_t map_list; /* 0: no map */
} sf__evcache_t;

/** The cache key of a pod into key; false when the pod has no uid (not cached). */
bool sf__evcache_key(const json_t *pod, char *key, size_t cap);
/**
 * Keeps `v` (n verdicts, capacity *vcap, steals it) for `names` (copied);
 * returns the cache's previous array (new to the caller, capacity in *vcap).
 */
sf_verdict_t *sf__evcache_store(sf__evcache_t *ec, const char *key, uint64_t gen,
                                const char *const *names, size_t n, sf_verdict_t *v, size_t *vcap);
/** The same for names of list `list` (0: unknown): names of the list stored last are not compared. */
sf_verdict_t *sf__evcache_store_list(sf__evcache_t *ec, const char *key, uint64_t gen,
                                     const char *const *names, size_t n, uint64_t list,
                                     sf_verdict_t *v, size_t *vcap);
/** Fills out[i] for names[i] from the cache; false on any miss (out is then garbage). */
bool sf__evcache_lookup(const sf__evcache_t *ec, const char *key, uint64_t gen,
                        const char *const *names, size_t n, sf_verdict_t *out);
/**
 * The same for names of list `list` (0: unknown): the positions found for
 * that list are kept, and the next lookup of it copies by them, finding no
 * name again while the stored names stay those of one list. Fills only
 * fit, raw and score of out[i] (a prioritize reads no more).
 */
bool sf__evcache_lookup_list(sf__evcache_t *ec, const char *key, uint64_t gen,
                             const char *const *names, size_t n, uint64_t list, sf_verdict_t *out);
void sf__evcache_dispose(sf__evcache_t *ec);

/* ---- HTTP (http.c) and handlers (service.c) ---- */

typedef struct {
  const char *method, *path;
  struct MHD_Connection *mc; /* for the query's arguments (sf__req_arg) */
  const char *body;          /* NUL-terminated copy of the body */
  size_t len;
  sf__args_t *args; /* the body already decoded off the loop (moved out), or NULL */
  int args_rc;      /* with args: sf__args_parse's result, and its error in args_err */
  const char *args_err;
} sf__req_t;

/*
 * A reply to build off the loop (a large filter or prioritize): the handler
 * has the verdicts; serialising 100,000 nodes is left to the thread pool.
 */
typedef struct {
  sf__args_t args; /* owned (moved from the handler) */
  sf_verdict_t *v; /* owned copy, args.n of them, or NULL (every node passes) */
  bool filter;     /* else prioritize */
} sf__later_t;

typedef struct {
  unsigned status;
  sf__later_t *later; /* set by a handler of an off-loop request: build the body later */
  sf__buf_t body;
  const char *ctype;       /* static; NULL = application/json */
  const char *allow;       /* 405: the Allow header */
  bool close;              /* the connection closes after this answer */
  char reason[SF_ERR_MAX]; /* errors: logged in one line */
} sf__reply_t;

typedef void (*sf__handler_fn)(sf_extender_t *x, const sf__req_t *req, sf__reply_t *rep);

typedef struct {
  const char *path, *method;
  sf__handler_fn fn;
  size_t stats; /* index into the extender's stats */
  bool offload; /* a large body is decoded as ExtenderArgs off the loop */
} sf__route_t;

/** The query argument `key` of the request, unescaped (borrowed), or NULL when absent. */
const char *sf__req_arg(const sf__req_t *req, const char *key);

/** Sets an error reply: status, {"Error": "..."} body and the logged reason. */
void sf__reply_error(sf__reply_t *rep, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

enum {
  SF__V_FILTER,
  SF__V_PRIORITIZE,
  SF__V_HEALTHZ,
  SF__V_READYZ,
  SF__V_METRICS,
  SF__V_DEBUG,
  SF__V_DEFRAG,
  SF__V_OTHER,
  SF__V_COUNT
};

/*
 * One accepted connection (conns.c), from MHD's NOTIFY_CONNECTION started to
 * closed. The deadlines are enforced by shutting the socket down, which MHD
 * then sees as the peer going away.
 */
typedef struct sf__conn {
  struct sf__conn *next, *prev;
  struct MHD_Connection *mc;
  int fd;
  uint64_t since_ms;  /* loop ms: opened, or when its last answer completed */
  uint64_t line_ms;   /* when the current request line arrived */
  uint64_t req_ms;    /* when the current request's headers were complete */
  unsigned requests;  /* requests begun on it */
  bool line_seen;     /* a request line arrived since since_ms */
  bool in_request;    /* headers parsed, answer not yet completed */
  bool bad_uri;       /* the raw request target holds %00 */
  const char *killed; /* why we shut it down, or NULL */
} sf__conn_t;

enum { SF__KILL_HEADERS, SF__KILL_IDLE, SF__KILL_REQUEST, SF__KILL_DRAIN, SF__KILL_COUNT };

struct sf__tls;

/*
 * A listener short of descriptors (conns.c): set when accept() fails with
 * EMFILE, ENFILE, ENOBUFS or ENOMEM, cleared once accept() finds the backlog
 * empty (Linux takes the descriptor first, so EAGAIN proves there is one):
 * a connection taken in between does not end it. Each change is logged once; `events` counts the shortages. Written by
 * the thread that accepts, read by any (the probe thread answers /healthz
 * from the serving port's).
 */
typedef struct {
  const char *listener; /* "serving", "probe": the log's and the metric's label */
  _Atomic bool on;
  _Atomic uint64_t since_ms; /* monotonic ms the shortage began (valid while on) */
  _Atomic uint64_t events;   /* shortages since start */
} sf__fdshort_t;

/*
 * libmicrohttpd's own messages through our log, at most SF__MHD_LOG_BURST
 * per SF__MHD_LOG_WINDOW_MS; what is left out is counted and said at the
 * next window. One per daemon, used by the thread that runs it.
 */
#define SF__MHD_LOG_BURST 5
#define SF__MHD_LOG_WINDOW_MS 10000
typedef struct {
  const char *listener;
  bool started;        /* after start: messages at debug level, else warnings */
  uint64_t window_ms;  /* monotonic ms the window began */
  unsigned in_window;  /* messages logged in it */
  uint64_t suppressed; /* left out since the last one logged */
} sf__mhd_log_t;

struct sf_extender {
  uv_loop_t *loop;
  sf_cluster_t *cluster; /* borrowed */
  sf_extender_config_t cfg;
  struct MHD_Daemon *mhd;
  uv_poll_t poll;
  uv_timer_t timer, drain_timer;
  uv_idle_t again; /* MHD_run in the next turn when MHD has work at once (http.c) */
  int nhandles;    /* libuv handles still open */
  bool ready, draining, stopped, destroyed;
  unsigned inflight;
  uint64_t drain_deadline;
  sf_extender_drained_cb drained;
  void *drained_arg;
  const sf__route_t *routes;
  size_t nroutes;
  sf__verb_stats_t stats[SF__V_COUNT];
  sf_packer_t *packer;       /* fragmentation in /metrics */
  sf_extender_t *metrics_of; /* a --metrics-listen listener: whose /metrics it serves */
  void (*metrics_hook)(sf__buf_t *b, void *ud); /* more /metrics (the daemon's watch), or NULL */
  void *metrics_ud;
  sf__buf_t spare[4]; /* request and reply buffers kept for the next requests */
  size_t nspare;
  sf_verdict_t *verdicts; /* scratch reused across requests */
  size_t nverdicts;
  sf__evcache_t evcache; /* the last filter's verdicts */
  sf__names_t lists[2];  /* the NodeNames of the last filter and the last prioritize */
  uint64_t generation;   /* bumped by sf_extender_invalidate */
  uint64_t cache_hits, cache_misses;
  uint64_t verdicts_total[3][SF__NREASON + 1]; /* filter verdicts by sf_fit_t and reason class */
  uint64_t started_ns;
  /* connections and the limits across them (conns.c) */
  sf__conn_t *conns;
  unsigned nconns;
  uv_timer_t reaper;
  size_t buffered;                    /* body and reply bytes held by live requests */
  uint64_t busy_rejects;              /* 503s for the buffered-bytes bound */
  uint64_t kills[SF__KILL_COUNT];     /* connections shut down, by deadline */
  unsigned jobs;                      /* bodies being decoded on the thread pool (0 or 1) */
  unsigned queued;                    /* bodies suspended until decoded, that one included */
  void *decode_head, *decode_tail;    /* requests waiting for the pool, in arrival order */
  struct MHD_Daemon *probe;           /* the probe listener (probe.c), or NULL */
  struct sf__tls *tls;                /* the serving certificate (tls.c), or NULL */
  uint64_t last_sweep_ns, max_lag_ns; /* the sweep timer's lateness: the loop's longest hold */

  /* Readiness and liveness: the loop writes them, the probe thread reads the atomics. */
  _Atomic bool probe_ready;    /* ready and not draining (sf_extender_set_ready) */
  _Atomic uint64_t probe_beat; /* monotonic ms of the loop's last turn (the sweep timer) */
  uint64_t ready_changes;      /* readiness transitions since start */

  /* The serving port's listen socket, accepted from by the loop (conns.c). */
  int listen_fd;                   /* -1 when closed */
  uv_poll_t accept_poll;           /* readable listen_fd, while accepting */
  bool accept_inited, poll_inited; /* accept_poll and poll are handles to close */
  bool accept_paused;              /* at max_connections or out of descriptors: the backlog waits */
  sf__fdshort_t serve_short;       /* accept() failing for want of descriptors */
  sf__mhd_log_t serve_log;         /* MHD's own messages */

  /* The probe listener (probe.c): its socket, accepted from by a thread of its own. */
  int probe_fd, probe_wake; /* listen socket, and an eventfd that stops the thread; -1 none */
  _Atomic int probe_spare;  /* a descriptor kept for a probe when there is no other; -1 none */
  pthread_t probe_thread;
  bool probe_thread_on;
  sf__fdshort_t probe_short;
  sf__mhd_log_t probe_log;
};

/* ---- connections (conns.c) ---- */

/** MHD_OPTION_NOTIFY_CONNECTION: tracks each connection. */
void sf__conn_notify(void *cls, struct MHD_Connection *mc, void **socket_context,
                     enum MHD_ConnectionNotificationCode toe);
/** MHD_OPTION_URI_LOG_CALLBACK: a request line arrived (raw target, before unescaping). */
void *sf__conn_uri(void *cls, const char *uri, struct MHD_Connection *mc);
/** The tracked connection of an MHD connection, or NULL. */
sf__conn_t *sf__conn_of(struct MHD_Connection *mc);
/** Enforces the deadlines, and while draining closes connections with no request. */
void sf__conns_sweep(sf_extender_t *x);
/** Starts the sweep timer (a libuv handle of the extender). */
void sf__conns_start(sf_extender_t *x);
/**
 * Opens a non-blocking listen socket on ss (SO_REUSEADDR, the kernel's
 * largest backlog). Returns the descriptor, or -1 with errno set.
 */
int sf__listen_socket(const struct sockaddr_storage *ss);
/**
 * Takes connections from the serving port's backlog and hands them to MHD,
 * until the backlog is empty, max_connections is reached or descriptors run
 * out; in the last two cases accepting pauses and the sweep (or a closed
 * connection) resumes it. On the loop.
 */
void sf__conns_accept(sf_extender_t *x);
/** Starts watching the listen socket (a libuv handle of the extender). */
void sf__conns_listen(sf_extender_t *x);
/** Accepts what is in the backlog, then closes the listen socket. */
void sf__conns_unlisten(sf_extender_t *x);
/** True when errno from accept() means the process or system is out of a resource. */
bool sf__fd_low(int err);
/** Records a failed accept() on s: its errno, or 0 for EAGAIN (descriptors free, none waiting). */
void sf__fdshort_note(sf__fdshort_t *s, int err);
/** Monotonic milliseconds (CLOCK_MONOTONIC), for any thread. */
uint64_t sf__mono_ms(void);

/* ---- libmicrohttpd's messages (http.c) ---- */

/** MHD_OPTION_EXTERNAL_LOGGER: cls is an sf__mhd_log_t. */
void sf__mhd_log(void *cls, const char *fmt, va_list ap);

/* ---- the probe listener (probe.c) ---- */

/** Starts the probe listener's own thread when cfg.probe_listen is set. */
int sf__probe_start(sf_extender_t *x, char *err, size_t errlen);
/** The loop turned: called by a timer; the probe thread reads the time. */
void sf__probe_beat(sf_extender_t *x);
/** Mirrors readiness (ready and not draining) for the probe thread. */
void sf__probe_set_ready(sf_extender_t *x, bool ready);
/** Whether the process is alive: the loop turns and the serving port can accept; else why. */
bool sf__alive(const sf_extender_t *x, char *why, size_t cap);
/** Milliseconds since the loop of x last turned (any thread). */
uint64_t sf__probe_stall_ms(const sf_extender_t *x);
void sf__probe_stop(sf_extender_t *x);
/** Reopens the probes' spare descriptor if it was given up (any thread). */
void sf__probe_spare_fill(sf_extender_t *x);

/* ---- the file descriptor budget (fdlimit.c) ---- */

/** Descriptors the daemon may hold at once with these options (connections of every listener). */
unsigned long sf__fd_need(const sf_daemon_options_t *opt);
/**
 * Checks RLIMIT_NOFILE against sf__fd_need: raises the soft limit when the
 * hard one allows (logged), else SF_EINVAL with err naming both figures.
 */
int sf__fd_budget(const sf_daemon_options_t *opt, char *err, size_t errlen);

/* ---- serving TLS (tls.c) ---- */

/**
 * Loads the certificate and key files, checks they match, and fills the
 * MHD options for them (cert callback, priorities) into opts[0..3]; watches
 * the files for changes every cfg.tls_reload_s. 0 or SF_EINVAL with err.
 */
int sf__tls_start(sf_extender_t *x, struct MHD_OptionItem *opts, char *err, size_t errlen);
/** Checks the files now; a changed, valid pair replaces the served one. */
void sf__tls_check(sf_extender_t *x);
void sf__tls_stop(sf_extender_t *x);
/** Certificate and client CA reloads, clients refused (zeros without TLS). */
void sf__metrics_tls(sf__buf_t *b, const sf_extender_t *x);


/** Resolves "HOST:PORT" for a listener; errors name `flag`. */
int sf__resolve(const char *listen, const char *flag, struct sockaddr_storage *ss, char *err,
                size_t errlen);
/** The local port a socket is bound to; 0 for -1 or on error. */
uint16_t sf__socket_port(int fd);
/** Runs MHD now and arms the loop for its next work (http.c). */
void sf__http_pump(sf_extender_t *x);
/** Starts libmicrohttpd on the loop (http.c). */
int sf__http_start(sf_extender_t *x, char *err, size_t errlen);
/** Stops accepting new connections and closes the listen socket; connections in flight go on. */
void sf__http_quiesce(sf_extender_t *x);
/** Frees the request and reply buffers kept for reuse. */
void sf__http_spares_dispose(sf_extender_t *x);
/** Stops libmicrohttpd (closes every connection). */
void sf__http_stop(sf_extender_t *x);

#endif
