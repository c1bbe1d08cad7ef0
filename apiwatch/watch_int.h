/*
 * The reflector's private layout and the functions its three files share:
 * watch.c (helpers, libcurl on libuv, lifecycle), watch_http.c (requests and
 * the bytes of their responses), watch_sync.c (lists, events to the sink,
 * retries and backoff, finished transfers). Not a public header.
 */
#ifndef SF_APIWATCH_WATCH_INT_H
#define SF_APIWATCH_WATCH_INT_H

#include <curl/curl.h>
#include "curl_int.h"
#include "slicefit/apiwatch.h"
#include "slicefit/listscan.h"
#include "slicefit/log.h"


/* Nodes, DeviceClasses, ResourceSlices, ResourceClaims, DeviceTaintRules and the policy ConfigMap. */
#define MAX_RES 7
#define MAX_ERR_BODY ((size_t)64 << 10)
#define INITIAL_END "k8s.io/initial-events-end"

typedef enum { PH_IDLE, PH_LIST, PH_STREAM, PH_WATCH } phase_t;
typedef enum { ACT_NONE, ACT_RELIST, ACT_FAIL } action_t;

typedef struct {
  char *p;
  size_t len, cap;
} buf_t;

typedef struct poll_ctx {
  uv_poll_t h;
  curl_socket_t s;
  sf_apiwatch_t *w;
  struct poll_ctx *next, *prev;
} poll_ctx_t;

typedef struct {
  sf_apiwatch_t *w;
  char name[80];  /* for logs: "resourceslices", "configmap ns/name" */
  char *path;     /* "/apis/resource.k8s.io/v1/resourceslices" */
  char *selector; /* fieldSelector, or NULL */
  sf_kind_t kind;
  bool policy;    /* the policy ConfigMap, not an object of the cluster */
  bool streaming; /* try watch-list */
  phase_t phase;
  char rv[64];
  json_t *items; /* the list being gathered */
  char *cont;
  CURL *easy;
  struct curl_slist *hdrs;
  buf_t body;         /* an error's body */
  sf_listscan_t scan; /* a LIST page's body, item by item */
  size_t list_bytes;  /* of the page so far */
  sf_framer_t framer;
  bool in_initial; /* streaming, before the initial-events-end bookmark */
  bool direct;     /* this list applies objects as they come (see relist) */
  bool touched;    /* the sink has seen objects of this resource */
  size_t listed;   /* objects in the list so far */
  int after;       /* index of the resource whose first sync starts this one; -1 none */
  action_t action;
  char action_why[160];
  bool synced;
  bool broken;              /* a failure since the last good watch, at broken_since */
  bool confirmed;           /* confirmed current at least once, last at confirmed_ms */
  uint64_t broken_since;    /* loop ms (monotonic) of the first failure since the last good watch */
  uint64_t confirmed_ms;    /* loop ms (monotonic) the resource was last confirmed current */
  uint64_t stream_again_ms; /* loop ms from which watch-list is tried again; 0 = not off */
  uint64_t truncated;       /* framer's count when the current transfer started */
  uint64_t started_ms;
  uint32_t events_now; /* events in the current watch */
  uint32_t attempt;    /* failures in a row */
  uv_timer_t timer;
} res_t;

typedef struct sf__apireq sf__apireq_t;

struct sf_apiwatch {
  uv_loop_t *loop;
  sf_apiwatch_opts_t o;
  sf_apiwatch_sink_t sink;
  CURLM *multi;
  uv_timer_t curl_timer;
  res_t res[MAX_RES];
  size_t nres;
  poll_ctx_t *polls;
  sf_apiwatch_stats_t st;
  bool started, stopping;
  int open_handles;
  void (*done)(void *ud);
  void *done_ud;
  uint64_t rng;
  char *cm_name;      /* the policy ConfigMap's name */
  sf__apireq_t *reqs; /* sf_apiwatch_request's in flight (request.c) */
};

uint64_t sf__watch_next_rand(sf_apiwatch_t *w);
const char *sf__watch_logq(const char *s, char *out, size_t n);
/** Records that r is current as of now (the loop's time). */
void sf__watch_confirm(res_t *r);
/** Records r's first failure since its last good watch (a later one keeps the first time). */
void sf__watch_broken(res_t *r);
/** Milliseconds from `since` to `now`, both monotonic loop ms; 0 when since is not earlier. */
uint64_t sf__watch_age_ms(uint64_t now, uint64_t since);
/** Whether r counts as current at `now`: synced, confirmed and not broken for over staleness_ms. */
bool sf__watch_res_current(const res_t *r, uint64_t now, uint64_t staleness_ms);

/* request.c */
/** If `easy` is a request's (not a watch's): calls its callback, frees it, true. */
bool sf__request_done(sf_apiwatch_t *w, CURL *easy, CURLcode result);
/** Frees the requests in flight without calling them back (the watcher stops). */
void sf__requests_abort(sf_apiwatch_t *w);

/* watch_http.c */
void sf__watch_issue(res_t *r, phase_t ph);
void sf__watch_detach(res_t *r);
void sf__watch_stream_off(res_t *r);

/* watch_sync.c */
void sf__watch_retry(res_t *r, uint32_t delay_ms);
void sf__watch_relist(res_t *r);
int sf__watch_fail_event(res_t *r, action_t act, const char *why);
int sf__watch_on_event(res_t *r, const char *ev, size_t len);
/** Bytes of a LIST page: each item that ends within them goes on as listed; 0 or -1 (failed). */
int sf__watch_list_bytes(res_t *r, const char *p, size_t len);
void sf__watch_finished(res_t *r, CURLcode cc);

#endif
