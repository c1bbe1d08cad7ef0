/*
 * The scheduler driver of the end-to-end test: what kube-scheduler does for
 * a DRA pod, with slicefit as its extender, against the fake kube-apiserver.
 */
#ifndef SLICEFIT_TEST_E2E_DRIVER_H
#define SLICEFIT_TEST_E2E_DRIVER_H

#include "e2e.h"

#define DRV_MAX_PODS 400
#define DRV_REPLICAS 2

typedef enum {
  OUT_NONE = 0,
  OUT_PLACED,
  OUT_NO_NODE,        /* the in-tree DRA filter found no node: Pending, rightly */
  OUT_EXTENDER_EMPTY, /* the extender rejected every DRA-feasible node */
  OUT_ERROR           /* the extender failed the call */
} outcome_t;

typedef struct {
  int64_t t;
  uint32_t pod;
  bool leave;
} drv_event_t;

typedef struct {
  e2e_cluster_t cl; /* the driver's books: what the scheduler's DRA plugin knows */
  e2e_pod_t pods[DRV_MAX_PODS];
  size_t npods;
  drv_event_t ev[2 * DRV_MAX_PODS];
  size_t nev;
  outcome_t out[DRV_MAX_PODS];
  int node_of[DRV_MAX_PODS];
  e2e_alloc_t alloc[DRV_MAX_PODS];
  char node_name[DRV_MAX_PODS][32];
  e2e_apiserver_t api;
  e2e_slicefit_t sf[DRV_REPLICAS];
  size_t nreplicas;
  const char *const *policy; /* key, value, ..., NULL */
  char dir[96], kubeconfig[160];
  bool tls; /* serve over TLS, as the manifests do */
  char cert[160], key[160];
  size_t claims, allocs; /* objects in the API server */
  unsigned share_seq;
  /* The replay's allocation measure (its mark()), for the comparison. */
  int64_t cap_milli, alloc_milli, arrived_milli;
  double alloc_pct_at[9];
  size_t next_thresh;
  /* What went wrong, counted and described (the first few). */
  size_t filter_calls, prioritize_calls, single_node;
  size_t dropped_feasible; /* a DRA-feasible node missing from filter's NodeNames */
  size_t replica_diffs;    /* the replicas answered one call differently */
  size_t state_checks;
  char first_problem[512];
  /*
   * As kube-scheduler calls slicefit through the Service: each call goes
   * to the next replica in turn, a failed call fails the attempt, which is
   * retried after a back-off that doubles (kube-scheduler: 1 s, up to 10 s).
   * Otherwise every call goes to every replica, which must agree.
   */
  bool service;
  int backoff_ms;
  size_t next_replica;
  size_t failed_calls, retried_calls; /* calls refused; calls answered after a refusal */
  int64_t max_wait_ms;                /* longest from a call's first refusal to its answer */
} drv_t;

#define DRV_TLS 1u  /* the replicas serve https with a certificate the driver verifies */
#define DRV_LATE 2u /* only replica 0 starts; drv_start_replica starts the others */

/** Starts the fake apiserver with the cluster and policy, and `nreplicas` of bin/slicefit. */
void drv_setup(drv_t *d, const char *const *policy, size_t nreplicas, size_t npods, uint64_t seed,
               unsigned flags);
/** Starts replica r as the manifests run it and waits until it is ready with the policy. */
void drv_start_replica(drv_t *d, size_t r);
/** Stops replica r (it must exit 0 on SIGTERM) and starts it again; waits until it is ready. */
void drv_restart(drv_t *d, size_t r);
/** SIGTERM to every replica (each must drain and exit 0; under make check: no sanitizer report),
 * then stops the API server; fails the test if any process it started is still alive. */
void drv_stop_all(drv_t *d);
void drv_teardown(drv_t *d);
/** Waits until every replica holds exactly the claims and allocations the API server has. */
void drv_wait_seen(drv_t *d);
/** Replays every arrival and departure in time order; check_every > 0 compares /debug/state that often. */
void drv_run(drv_t *d, size_t first_event, size_t last_event, size_t check_every);
/** Number of events (arrivals and departures). */
size_t drv_nevents(const drv_t *d);
/** True when /debug/state on port shows every key of d->policy with its value; else why not. */
bool drv_policy_in_force(const drv_t *d, unsigned port, char *why, size_t len);
/** Creates the (pending) claims of n pods and waits until every replica holds them. */
void drv_add_claims(drv_t *d, const e2e_pod_t *pods, size_t n);
/** Pod i's claim created and allocated on `node` by first fit, without asking the extender. */
void drv_place(drv_t *d, uint32_t i, const char *node);
/** No device over its limit in the driver's books, recomputed from the live allocations. */
void drv_check_books(const drv_t *d);
/** slicefit's /debug/state on `port` agrees with the driver's books. */
void drv_check_state(drv_t *d, unsigned port);
/** POSTs ExtenderArgs for pod `p` with `names` to verb on port; the reply (new) and status. */
json_t *drv_call(unsigned port, const char *verb, const e2e_pod_t *p, json_t *names, long *status);
/** /debug/state with every array sorted (order-free comparison), new. */
json_t *drv_state_canonical(unsigned port);
void drv_problem(drv_t *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
