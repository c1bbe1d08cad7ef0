/*
 * fake-apiserver's parts (the program is described in test/tools/fake-apiserver.c):
 * the store (store.c), HTTP requests on resources and their dispatch (http.c), watches
 * (watch.c); the control channel and main in fake-apiserver.c. Every shared field is
 * under fk_S.mu.
 */
#ifndef SF_FAKE_APISERVER_H
#define SF_FAKE_APISERVER_H

#include <arpa/inet.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NRES 7

typedef struct {
  const char *name, *kind, *gv; /* gv: the apiVersion */
  bool namespaced;
} rdef_t;

extern const rdef_t fk_RES[NRES];

typedef struct {
  unsigned long long rv;
  int res;
  char *ns, *name;
  const char *type;
  json_t *obj;  /* with kind and apiVersion */
  json_t *prev; /* MODIFIED: the object before, for field selectors; else NULL */
} event_t;

typedef struct {
  json_t *items; /* array, serialized lazily per page */
  unsigned long long rv;
  int res;
} snap_t;

typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  json_t *store[NRES]; /* "ns/name" -> object */
  unsigned long long rv, compacted;
  event_t *log;
  size_t nlog, caplog;
  snap_t *snaps;
  size_t nsnaps;
  char *token;
  bool no_watch_list, ignore_watch_list, shutting;
  bool no_taint_rules; /* --no-device-taint-rules: a cluster without the alpha API */
  bool discover_all;   /* --discover-all: discovery also names the kinds manifests/ holds */
  int fail_code, fail_n, fail_secs;
  unsigned long drop_gen, close_gen, bookmark_gen, expire_gen, trunc_gen;
  int split_left, stall_ms;
  int stall_res; /* the resource whose next list takes the stall; -1: the next request's */
  bool droplist, hang;
  bool no_paging; /* "paging off": limit is ignored */
  unsigned long requests;
  int nwatches;
  unsigned port;
  json_t *pdb;       /* "ns/name" of the pods whose evictions a disruption budget refuses */
  bool pdb_all;      /* every pod's */
  json_t *evictions; /* "ns/name" of every eviction asked for, in order */
} fake_state_t;

extern fake_state_t fk_S;

typedef struct {
  int res;
  char ns[256];   /* "" = all namespaces */
  char name[256]; /* a single object, or "" */
  struct {
    char field[32], value[128];
    bool ne;
  } sel[4]; /* fieldSelector requirements */
  int nsel;
  bool table;
} target_t;

/* fake-apiserver.c */
void fk_die(const char *msg);
char *fk_fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));

/* store.c (callers hold fk_S.mu) */
int fk_res_by_name(const char *name);
const char *fk_meta_str(const json_t *obj, const char *key);
const char *fk_put(int res, json_t *obj, bool logged);
const char *fk_del(int res, const char *nsname);

/* http.c */
/** Sends v (stolen) as the JSON body of a `code` answer. */
enum MHD_Result fk_send_json(struct MHD_Connection *c, unsigned code, json_t *v);
json_t *fk_status_obj(unsigned code, const char *reason, const char *msg);
enum MHD_Result fk_send_status(struct MHD_Connection *c, unsigned code, const char *reason,
                               const char *msg, int retry_after);
bool fk_match_obj(const target_t *t, const json_t *obj);
json_t *fk_table_of(json_t *objs, bool header);
enum MHD_Result fk_on_request(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls);

/* evict.c */
/** "NS/NAME" of an eviction subresource path in key; false for any other path. */
bool fk_eviction_path(const char *url, char *key, size_t cap);
/** Answers a POST on pods/NAME/eviction (MHD's calls with the upload, then the answer). */
enum MHD_Result fk_eviction(struct MHD_Connection *c, const char *key, const char *upload,
                            size_t *upload_size, void **con_cls);

/* watch.c */
enum MHD_Result fk_watch(struct MHD_Connection *c, const target_t *t);

#endif
