/*
 * fake-apiserver: a small kube-apiserver on loopback for apiwatch's tests and
 * benchmarks, and for kubectl. It serves ResourceSlices, ResourceClaims,
 * DeviceClasses, DeviceTaintRules (resource.k8s.io/v1), ConfigMaps, Nodes and Pods (v1)
 * with resourceVersions, paged lists (limit/continue over a snapshot),
 * watches (chunked streams of WatchEvents, bookmarks, watch-list with the
 * initial-events-end bookmark), discovery (/version, /api, /apis, the
 * APIResourceLists) and the Table form kubectl asks for. Field selectors take
 * metadata.name and metadata.namespace on every resource, spec.nodeName and
 * status.phase on pods (=, ==, !=, comma-joined; others are a 400); a watch
 * sees an object that starts or stops matching as ADDED or DELETED, as
 * kube-apiserver's watch cache sends it.
 *
 *   fake-apiserver [--token T] [--no-watch-list] [--no-device-taint-rules]
 *
 * prints "port N" and then reads commands on stdin, one per line, answering
 * each with one line ("ok ..." or "err ..."):
 *   put RES JSON            add or modify an object (ADDED/MODIFIED)
 *   del RES [NS/]NAME       delete it (DELETED)
 *   load RES FILE           bulk load a JSON array or List; history is compacted after it
 *   count RES | rv | dump RES (one line: JSON array of [ns/name, rv])
 *   compact                 forget history: older watches get ERROR 410
 *   expire                  every open watch gets ERROR 410 Expired and ends; continue tokens expire
 *   fail CODE N [SECS]      the next N requests get HTTP CODE (429: Retry-After SECS)
 *   drop                    every open watch sends half of its next event and drops the connection
 *   truncate                every open watch sends half of its next event, a newline, and goes on
 *   hang on|off             while on, watches send nothing (not even their end) and new requests
 *                           get no answer: a server that hangs with the connections open
 *   droplist                the next LIST body is cut in half and the connection dropped
 *   split N                 the next N events go out one byte per chunk
 *   stall MS                the next request stalls MS in the middle of its body
 *   bookmark | close        every open watch gets a BOOKMARK / ends cleanly
 *   token T                 only T is accepted from now on (others get 401)
 *   watchlist on|off|ignore serve sendInitialEvents, answer it 422, or ignore it (old servers)
 *   requests | watches      how many requests were served / watches are open
 *   quit
 *
 * One thread per connection (libmicrohttpd); every shared field is under
 * one mutex, and open watches wait on one condition variable.
 */
#define _GNU_SOURCE
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
  const char *name, *kind, *gv;  /* gv: the apiVersion */
  bool namespaced;
} rdef_t;

static const rdef_t RES[NRES] = {
    {"resourceslices", "ResourceSlice", "resource.k8s.io/v1", false},
    {"resourceclaims", "ResourceClaim", "resource.k8s.io/v1", true},
    {"deviceclasses", "DeviceClass", "resource.k8s.io/v1", false},
    {"devicetaintrules", "DeviceTaintRule", "resource.k8s.io/v1", false},
    {"configmaps", "ConfigMap", "v1", true},
    {"nodes", "Node", "v1", false},
    {"pods", "Pod", "v1", true},
};

typedef struct {
  unsigned long long rv;
  int res;
  char *ns, *name;
  const char *type;
  json_t *obj;                 /* with kind and apiVersion */
  json_t *prev;                /* MODIFIED: the object before, for field selectors; else NULL */
} event_t;

typedef struct {
  json_t *items;               /* array, serialized lazily per page */
  unsigned long long rv;
  int res;
} snap_t;

static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  json_t *store[NRES];         /* "ns/name" -> object */
  unsigned long long rv, compacted;
  event_t *log; size_t nlog, caplog;
  snap_t *snaps; size_t nsnaps;
  char *token;
  bool no_watch_list, ignore_watch_list, shutting;
  bool no_taint_rules;         /* --no-device-taint-rules: a cluster without the alpha API */
  int fail_code, fail_n, fail_secs;
  unsigned long drop_gen, close_gen, bookmark_gen, expire_gen, trunc_gen;
  int split_left, stall_ms;
  bool droplist, hang;
  unsigned long requests;
  int nwatches;
  unsigned port;
} S = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .rv = 1000};

static void die(const char *msg) {
  fprintf(stderr, "fake-apiserver: %s\n", msg);
  exit(2);
}

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  char *s = NULL;
  if (vasprintf(&s, f, ap) < 0) die("out of memory");
  va_end(ap);
  return s;
}

/* ---- the store (callers hold S.mu) ---- */

static int res_by_name(const char *name) {
  for (int i = 0; i < NRES; i++)
    if (!strcmp(RES[i].name, name)) return i;
  return -1;
}

static const char *meta_str(const json_t *obj, const char *key) {
  return json_string_value(json_object_get(json_object_get(obj, "metadata"), key));
}

static char *key_of(int res, const json_t *obj) {
  const char *ns = RES[res].namespaced ? meta_str(obj, "namespace") : NULL;
  return fmt("%s/%s", ns ? ns : (RES[res].namespaced ? "default" : ""), meta_str(obj, "name"));
}

static void log_event(int res, const char *type, json_t *obj, json_t *prev) {
  if (S.nlog == S.caplog) {
    S.caplog = S.caplog ? 2 * S.caplog : 1024;
    S.log = realloc(S.log, S.caplog * sizeof *S.log);
    if (!S.log) die("out of memory");
  }
  const char *ns = meta_str(obj, "namespace");
  S.log[S.nlog++] = (event_t){S.rv, res, strdup(ns ? ns : ""), strdup(meta_str(obj, "name")),
                              type, json_incref(obj), prev ? json_incref(prev) : NULL};
  pthread_cond_broadcast(&S.cv);
}

/* Stamps an object as the server does: kind, apiVersion, rv, uid, creation time. */
static void stamp(int res, json_t *obj, const json_t *old) {
  json_t *md = json_object_get(obj, "metadata");
  json_object_set_new(obj, "kind", json_string(RES[res].kind));
  json_object_set_new(obj, "apiVersion", json_string(RES[res].gv));
  if (RES[res].namespaced && !json_object_get(md, "namespace"))
    json_object_set_new(md, "namespace", json_string("default"));
  char rv[32];
  snprintf(rv, sizeof rv, "%llu", S.rv);
  json_object_set_new(md, "resourceVersion", json_string(rv));
  const char *uid = old ? meta_str(old, "uid") : NULL;
  char u[64];
  snprintf(u, sizeof u, "00000000-0000-4000-8000-%012llx", S.rv);
  json_object_set_new(md, "uid", json_string(uid ? uid : u));
  const char *ts = old ? meta_str(old, "creationTimestamp") : NULL;
  if (!json_object_get(md, "creationTimestamp"))
    json_object_set_new(md, "creationTimestamp", json_string(ts ? ts : "2026-12-02T12:00:00Z"));
}

/* Adds or replaces; steals obj. Returns NULL or an error text. */
static const char *put(int res, json_t *obj, bool logged) {
  if (!json_is_object(obj) || !meta_str(obj, "name")) {
    json_decref(obj);
    return "not an object with metadata.name";
  }
  char *key = key_of(res, obj);
  json_t *old = json_object_get(S.store[res], key);
  S.rv++;
  stamp(res, obj, old);
  if (logged) log_event(res, old ? "MODIFIED" : "ADDED", obj, old);
  json_object_set_new(S.store[res], key, obj);
  free(key);
  return NULL;
}

static const char *del(int res, const char *nsname) {
  const char *slash = strchr(nsname, '/');
  char *key = slash ? strdup(nsname) : fmt("%s/%s", RES[res].namespaced ? "default" : "", nsname);
  json_t *old = json_object_get(S.store[res], key);
  if (!old) {
    free(key);
    return "no such object";
  }
  json_t *copy = json_deep_copy(old);
  S.rv++;
  char rv[32];
  snprintf(rv, sizeof rv, "%llu", S.rv);
  json_object_set_new(json_object_get(copy, "metadata"), "resourceVersion", json_string(rv));
  log_event(res, "DELETED", copy, NULL);
  json_decref(copy);
  json_object_del(S.store[res], key);
  free(key);
  return NULL;
}

/* ---- HTTP helpers ---- */

static enum MHD_Result send_text(struct MHD_Connection *c, unsigned code, const char *ctype,
                                 char *body) {
  struct MHD_Response *r =
      MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
  MHD_add_response_header(r, "Content-Type", ctype);
  enum MHD_Result ret = MHD_queue_response(c, code, r);
  MHD_destroy_response(r);
  return ret;
}

static enum MHD_Result send_json(struct MHD_Connection *c, unsigned code, json_t *v) {
  char *s = json_dumps(v, JSON_COMPACT);
  json_decref(v);
  return send_text(c, code, "application/json", s);
}

static json_t *status_obj(unsigned code, const char *reason, const char *msg) {
  return json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:i}", "kind", "Status", "apiVersion", "v1",
                   "metadata", "status", "Failure", "message", msg, "reason", reason, "code",
                   (int)code);
}

static enum MHD_Result send_status(struct MHD_Connection *c, unsigned code, const char *reason,
                                   const char *msg, int retry_after) {
  json_t *st = status_obj(code, reason, msg);
  char *s = json_dumps(st, JSON_COMPACT);
  json_decref(st);
  struct MHD_Response *r = MHD_create_response_from_buffer(strlen(s), s, MHD_RESPMEM_MUST_FREE);
  MHD_add_response_header(r, "Content-Type", "application/json");
  if (retry_after > 0) {
    char ra[16];
    snprintf(ra, sizeof ra, "%d", retry_after);
    MHD_add_response_header(r, "Retry-After", ra);
  }
  enum MHD_Result ret = MHD_queue_response(c, code, r);
  MHD_destroy_response(r);
  return ret;
}

/* ---- bodies written by a callback: stall and drop faults ---- */

typedef struct {
  char *body;
  size_t len, stall_at;
  int stall_ms;
  bool drop;
} body_t;

static ssize_t body_read(void *cls, uint64_t pos, char *buf, size_t max) {
  body_t *b = cls;
  size_t at = (size_t)pos;
  if (at >= b->len) return MHD_CONTENT_READER_END_OF_STREAM;
  if (at == b->stall_at && b->drop) return MHD_CONTENT_READER_END_WITH_ERROR;
  if (at == b->stall_at && b->stall_ms > 0) {
    usleep((useconds_t)b->stall_ms * 1000);
    b->stall_ms = 0;
  }
  size_t end = at < b->stall_at ? b->stall_at : b->len;
  size_t n = end - at < max ? end - at : max;
  memcpy(buf, b->body + at, n);
  return (ssize_t)n;
}

static void body_free(void *cls) {
  body_t *b = cls;
  free(b->body);
  free(b);
}

/* Sends `body` (steals it) whole, or with the pending stall/drop fault. */
static enum MHD_Result send_body(struct MHD_Connection *c, char *body) {
  pthread_mutex_lock(&S.mu);
  int stall = S.stall_ms;
  bool drop = S.droplist;
  S.stall_ms = 0;
  S.droplist = false;
  pthread_mutex_unlock(&S.mu);
  if (!stall && !drop) return send_text(c, 200, "application/json", body);
  body_t *b = calloc(1, sizeof *b);
  *b = (body_t){body, strlen(body), strlen(body) / 2, stall, drop};
  struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, body_read, b,
                                                             body_free);
  MHD_add_response_header(r, "Content-Type", "application/json");
  enum MHD_Result ret = MHD_queue_response(c, 200, r);
  MHD_destroy_response(r);
  return ret;
}

/* ---- discovery ---- */

static json_t *resource_list(const char *gv) {
  json_t *rs = json_array();
  for (int i = 0; i < NRES; i++) {
    if (strcmp(RES[i].gv, gv)) continue;
    if (S.no_taint_rules && !strcmp(RES[i].name, "devicetaintrules")) continue;
    json_array_append_new(
        rs, json_pack("{s:s, s:s, s:b, s:s, s:[s,s,s]}", "name", RES[i].name, "singularName", "",
                      "namespaced", RES[i].namespaced, "kind", RES[i].kind, "verbs", "get", "list",
                      "watch"));
  }
  return json_pack("{s:s, s:s, s:s, s:o}", "kind", "APIResourceList", "apiVersion", "v1",
                   "groupVersion", gv, "resources", rs);
}

static enum MHD_Result discovery(struct MHD_Connection *c, const char *url) {
  if (!strcmp(url, "/version"))
    return send_json(c, 200, json_pack("{s:s, s:s, s:s, s:s, s:s}", "major", "1", "minor", "34",
                                       "gitVersion", "v1.34.0-fake", "goVersion", "go1.24",
                                       "platform", "linux/amd64"));
  if (!strcmp(url, "/api"))
    return send_json(c, 200, json_pack("{s:s, s:[s], s:[{s:s, s:s}]}", "kind", "APIVersions",
                                       "versions", "v1", "serverAddressByClientCIDRs",
                                       "clientCIDR", "0.0.0.0/0", "serverAddress", "127.0.0.1"));
  if (!strcmp(url, "/apis"))
    return send_json(
        c, 200,
        json_pack("{s:s, s:s, s:[{s:s, s:[{s:s, s:s}], s:{s:s, s:s}}]}", "kind", "APIGroupList",
                  "apiVersion", "v1", "groups", "name", "resource.k8s.io", "versions",
                  "groupVersion", "resource.k8s.io/v1", "version", "v1", "preferredVersion",
                  "groupVersion", "resource.k8s.io/v1", "version", "v1"));
  if (!strcmp(url, "/api/v1")) return send_json(c, 200, resource_list("v1"));
  if (!strcmp(url, "/apis/resource.k8s.io/v1"))
    return send_json(c, 200, resource_list("resource.k8s.io/v1"));
  if (!strcmp(url, "/healthz") || !strcmp(url, "/readyz") || !strcmp(url, "/livez"))
    return send_text(c, 200, "text/plain", strdup("ok"));
  return send_status(c, 404, "NotFound", "the server could not find the requested resource", 0);
}

/* ---- requests on resources ---- */

typedef struct {
  int res;
  char ns[256];                /* "" = all namespaces */
  char name[256];              /* a single object, or "" */
  struct { char field[32], value[128]; bool ne; } sel[4];  /* fieldSelector requirements */
  int nsel;
  bool table;
} target_t;

/* Parses /api/v1/... and /apis/resource.k8s.io/v1/... paths; false if neither. */
static bool parse_target(const char *url, target_t *t) {
  const char *p;
  memset(t, 0, sizeof *t);
  if (!strncmp(url, "/api/v1/", 8)) p = url + 8;
  else if (!strncmp(url, "/apis/resource.k8s.io/v1/", 25)) p = url + 25;
  else return false;
  char a[5][256] = {{0}};
  int n = 0;
  for (const char *s = p; *s && n < 5; n++) {
    size_t len = strcspn(s, "/");
    if (len >= sizeof a[0]) return false;
    memcpy(a[n], s, len);
    s += len + (s[len] == '/');
  }
  int i = 0;
  if (n >= 3 && !strcmp(a[0], "namespaces")) {
    snprintf(t->ns, sizeof t->ns, "%s", a[1]);
    i = 2;
  }
  t->res = res_by_name(a[i]);
  if (t->res >= 0 && S.no_taint_rules && !strcmp(RES[t->res].name, "devicetaintrules")) return false;
  if (t->res < 0 || strcmp(RES[t->res].gv, p == url + 8 ? "v1" : "resource.k8s.io/v1")) return false;
  if (n > i + 2) return false;
  if (n == i + 2) snprintf(t->name, sizeof t->name, "%s", a[i + 1]);
  return true;
}

/* The fields a field selector may name here (kube-apiserver's pods allow these and more). */
static const char *const SEL_FIELDS[] = {"metadata.name", "metadata.namespace", "spec.nodeName",
                                         "status.phase"};

static const char *field_of(const json_t *obj, const char *field) {
  const char *dot = strchr(field, '.');
  char top[32];
  snprintf(top, sizeof top, "%.*s", (int)(dot - field), field);
  const char *v = json_string_value(json_object_get(json_object_get(obj, top), dot + 1));
  return v ? v : "";
}

/* Parses "f=v,f!=v,f==v"; false (with why) for a field it does not serve, as kube-apiserver answers 400. */
static bool parse_selector(const char *fs, target_t *t, char *why, size_t wl) {
  char buf[512];
  snprintf(buf, sizeof buf, "%s", fs);
  for (char *save = NULL, *req = strtok_r(buf, ",", &save); req; req = strtok_r(NULL, ",", &save)) {
    char *op = strpbrk(req, "!=");
    if (!op || t->nsel == 4) {
      snprintf(why, wl, "invalid selector: '%s'", fs);
      return false;
    }
    bool ne = *op == '!';
    char *val = op + (ne || op[1] == '=' ? 2 : 1);
    *op = '\0';
    bool known = false;
    for (size_t i = 0; i < sizeof SEL_FIELDS / sizeof SEL_FIELDS[0]; i++) known |= !strcmp(req, SEL_FIELDS[i]);
    if (!known || (strcmp(RES[t->res].name, "pods") && strncmp(req, "metadata.", 9))) {
      snprintf(why, wl, "field label not supported: %s", req);
      return false;
    }
    snprintf(t->sel[t->nsel].field, sizeof t->sel[0].field, "%s", req);
    snprintf(t->sel[t->nsel].value, sizeof t->sel[0].value, "%s", val);
    t->sel[t->nsel++].ne = ne;
  }
  return true;
}

static bool match_obj(const target_t *t, const json_t *obj) {
  const char *ns = meta_str(obj, "namespace");
  if (t->ns[0] && strcmp(t->ns, ns ? ns : "")) return false;
  for (int i = 0; i < t->nsel; i++)
    if ((strcmp(field_of(obj, t->sel[i].field), t->sel[i].value) == 0) == t->sel[i].ne) return false;
  return true;
}

/* A Table of `objs` (kubectl's server-side printing): name and age. */
static json_t *table_of(json_t *objs, bool header) {
  json_t *rows = json_array();
  size_t i;
  json_t *o;
  json_array_foreach(objs, i, o) {
    json_t *pom = json_pack("{s:s, s:s, s:O}", "kind", "PartialObjectMetadata", "apiVersion",
                            "meta.k8s.io/v1", "metadata", json_object_get(o, "metadata"));
    json_array_append_new(rows, json_pack("{s:[s,s], s:o}", "cells", meta_str(o, "name"), "1m",
                                          "object", pom));
  }
  json_t *t = json_pack("{s:s, s:s, s:{}, s:o}", "kind", "Table", "apiVersion", "meta.k8s.io/v1",
                        "metadata", "rows", rows);
  if (header)
    json_object_set_new(t, "columnDefinitions",
                        json_pack("[{s:s, s:s, s:s, s:s, s:i}, {s:s, s:s, s:s, s:s, s:i}]", "name",
                                  "Name", "type", "string", "format", "name", "description",
                                  "Name of the object", "priority", 0, "name", "Age", "type",
                                  "string", "format", "", "description", "Age", "priority", 0));
  return t;
}

static json_t *strip_kind(json_t *o) {
  json_t *c = json_copy(o);
  json_object_del(c, "kind");
  json_object_del(c, "apiVersion");
  return c;
}

/* The page of a list from offset `off` of snapshot `si`; NULL cont when the last. */
static json_t *page(const target_t *t, size_t si, size_t off, size_t limit) {
  snap_t *sn = &S.snaps[si];
  size_t n = json_array_size(sn->items), end = limit && off + limit < n ? off + limit : n;
  json_t *items = json_array();
  for (size_t i = off; i < end; i++) json_array_append(items, json_array_get(sn->items, i));
  char rv[32], cont[64] = "";
  snprintf(rv, sizeof rv, "%llu", sn->rv);
  if (end < n) snprintf(cont, sizeof cont, "snap-%zu-%zu", si, end);
  if (t->table) {
    json_t *tb = table_of(items, true);
    json_decref(items);
    json_object_set_new(json_object_get(tb, "metadata"), "resourceVersion", json_string(rv));
    if (cont[0]) json_object_set_new(json_object_get(tb, "metadata"), "continue", json_string(cont));
    return tb;
  }
  char kind[64];
  snprintf(kind, sizeof kind, "%sList", RES[t->res].kind);
  json_t *md = json_pack("{s:s}", "resourceVersion", rv);
  if (cont[0]) {
    json_object_set_new(md, "continue", json_string(cont));
    json_object_set_new(md, "remainingItemCount", json_integer((json_int_t)(n - end)));
  }
  return json_pack("{s:s, s:s, s:o, s:o}", "kind", kind, "apiVersion", RES[t->res].gv, "metadata",
                   md, "items", items);
}

static enum MHD_Result list(struct MHD_Connection *c, const target_t *t) {
  const char *lim = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "limit");
  const char *cont = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "continue");
  size_t limit = lim ? strtoul(lim, NULL, 10) : 0, si, off = 0;
  pthread_mutex_lock(&S.mu);
  if (cont && *cont) {
    if (sscanf(cont, "snap-%zu-%zu", &si, &off) != 2 || si >= S.nsnaps || !S.snaps[si].items) {
      pthread_mutex_unlock(&S.mu);
      return send_status(c, 410, "Expired",
                         "The provided continue parameter is too old to display a consistent list "
                         "result. You can start a new list without the continue parameter.", 0);
    }
  } else {
    S.snaps = realloc(S.snaps, (S.nsnaps + 1) * sizeof *S.snaps);
    si = S.nsnaps++;
    S.snaps[si] = (snap_t){json_array(), S.rv, t->res};
    const char *k;
    json_t *o;
    json_object_foreach(S.store[t->res], k, o)
      if (match_obj(t, o)) json_array_append_new(S.snaps[si].items, strip_kind(o));
  }
  json_t *body = page(t, si, off, limit);
  if (!json_object_get(json_object_get(body, "metadata"), "continue")) {
    json_decref(S.snaps[si].items);  /* the last page: the snapshot is done */
    S.snaps[si].items = NULL;
  }
  char *s = json_dumps(body, JSON_COMPACT);
  json_decref(body);
  pthread_mutex_unlock(&S.mu);
  return send_body(c, s);
}

static enum MHD_Result get_one(struct MHD_Connection *c, const target_t *t) {
  pthread_mutex_lock(&S.mu);
  char *key = fmt("%s/%s", RES[t->res].namespaced ? (t->ns[0] ? t->ns : "default") : "", t->name);
  json_t *o = json_object_get(S.store[t->res], key);
  free(key);
  if (!o) {
    pthread_mutex_unlock(&S.mu);
    char *msg = fmt("%s \"%s\" not found", RES[t->res].name, t->name);
    enum MHD_Result r = send_status(c, 404, "NotFound", msg, 0);
    free(msg);
    return r;
  }
  json_t *out;
  if (t->table) {
    json_t *one = json_pack("[O]", o);
    out = table_of(one, true);
    json_decref(one);
  } else {
    out = json_incref(o);
  }
  char *s = json_dumps(out, JSON_COMPACT);
  json_decref(out);
  pthread_mutex_unlock(&S.mu);
  return send_text(c, 200, "application/json", s);
}

/* ---- watches ---- */

typedef struct {
  target_t t;
  size_t logpos;
  char *out;
  size_t outlen, outoff;
  bool end_after, drop_after, drop_armed, trunc_armed, header_sent;
  unsigned long drop_gen, close_gen, bookmark_gen, expire_gen, trunc_gen;
  int split_left, stall_ms;
  time_t deadline;
} watch_t;

static void emit(watch_t *wt, const char *type, json_t *obj) {
  json_t *o = obj;
  if (wt->t.table) {
    json_t *one = json_pack("[O]", obj);
    o = table_of(one, !wt->header_sent);
    json_decref(one);
    wt->header_sent = true;
  } else {
    json_incref(o);
  }
  json_t *ev = json_pack("{s:s, s:o}", "type", type, "object", o);
  char *s = json_dumps(ev, JSON_COMPACT);
  json_decref(ev);
  free(wt->out);
  wt->out = fmt("%s\n", s);
  free(s);
  wt->outlen = strlen(wt->out);
  wt->outoff = 0;
  if (S.split_left > 0) {
    S.split_left--;
    wt->split_left = (int)wt->outlen;
  }
}

static void emit_bookmark(watch_t *wt, bool initial_end) {
  char rv[32];
  snprintf(rv, sizeof rv, "%llu", S.rv);
  json_t *o = json_pack("{s:s, s:s, s:{s:s}}", "kind", RES[wt->t.res].kind, "apiVersion",
                        RES[wt->t.res].gv, "metadata", "resourceVersion", rv);
  if (initial_end)
    json_object_set_new(json_object_get(o, "metadata"), "annotations",
                        json_pack("{s:s}", "k8s.io/initial-events-end", "true"));
  emit(wt, "BOOKMARK", o);
  json_decref(o);
}

static void emit_expired(watch_t *wt, const char *msg) {
  json_t *st = status_obj(410, "Expired", msg);
  emit(wt, "ERROR", st);
  json_decref(st);
  wt->end_after = true;
}

/* Puts the next output of a watch in wt->out; false when there is none yet (S.mu held). */
static bool next_output(watch_t *wt) {
  if (S.hang && !S.shutting) return false;
  if (S.trunc_gen != wt->trunc_gen) {
    wt->trunc_gen = S.trunc_gen;
    wt->trunc_armed = true;
  }
  if (S.shutting || time(NULL) >= wt->deadline || S.close_gen != wt->close_gen) {
    wt->end_after = true;
    return true;
  }
  if (S.expire_gen != wt->expire_gen) {
    emit_expired(wt, "too old resource version (expired by the test)");
    return true;
  }
  if (S.drop_gen != wt->drop_gen) {
    S.nwatches++;
  wt->drop_gen = S.drop_gen;
    wt->drop_armed = true;
  }
  if (S.bookmark_gen != wt->bookmark_gen) {
    wt->bookmark_gen++;
    emit_bookmark(wt, false);
    return true;
  }
  for (; wt->logpos < S.nlog; wt->logpos++) {
    event_t *e = &S.log[wt->logpos];
    if (e->res != wt->t.res) continue;
    /* As kube-apiserver's watch cache: an object that starts matching the selector is ADDED,
     * one that stops is DELETED (its previous content, at the event's resourceVersion). */
    bool now = match_obj(&wt->t, e->obj), before = e->prev && match_obj(&wt->t, e->prev);
    if (!now && !before) continue;
    if (!strcmp(e->type, "MODIFIED") && now != before) {
      json_t *o = now ? json_incref(e->obj) : json_deep_copy(e->prev);
      if (!now)
        json_object_set(json_object_get(o, "metadata"), "resourceVersion",
                        json_object_get(json_object_get(e->obj, "metadata"), "resourceVersion"));
      emit(wt, now ? "ADDED" : "DELETED", o);
      json_decref(o);
    } else {
      emit(wt, e->type, e->obj);
    }
    wt->logpos++;
    if (wt->trunc_armed) {
      wt->trunc_armed = false;
      wt->outlen /= 2;
      wt->out[wt->outlen++] = '\n';
    }
    if (wt->drop_armed) {
      wt->outlen /= 2;
      wt->drop_after = true;
    }
    return true;
  }
  return false;
}

static ssize_t watch_read(void *cls, uint64_t pos, char *buf, size_t max) {
  watch_t *wt = cls;
  (void)pos;
  if (wt->stall_ms) {
    usleep((useconds_t)wt->stall_ms * 1000);
    wt->stall_ms = 0;
  }
  pthread_mutex_lock(&S.mu);
  while (wt->outoff == wt->outlen) {
    if (wt->end_after || wt->drop_after) {
      pthread_mutex_unlock(&S.mu);
      return wt->drop_after ? MHD_CONTENT_READER_END_WITH_ERROR : MHD_CONTENT_READER_END_OF_STREAM;
    }
    if (next_output(wt)) continue;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 100 * 1000 * 1000;
    if (ts.tv_nsec >= 1000000000) { ts.tv_sec++; ts.tv_nsec -= 1000000000; }
    pthread_cond_timedwait(&S.cv, &S.mu, &ts);
  }
  size_t n = wt->outlen - wt->outoff;
  bool split = wt->split_left > 0;
  if (split) { n = 1; wt->split_left--; }
  if (n > max) n = max;
  memcpy(buf, wt->out + wt->outoff, n);
  wt->outoff += n;
  pthread_mutex_unlock(&S.mu);
  if (split) usleep(100);
  return (ssize_t)n;
}

static void watch_free(void *cls) {
  watch_t *wt = cls;
  pthread_mutex_lock(&S.mu);
  S.nwatches--;
  pthread_mutex_unlock(&S.mu);
  free(wt->out);
  free(wt);
}

/* The initial events (old behaviour or watch-list) go out as one block. */
static void initial_events(watch_t *wt, bool watch_list) {
  char *all = NULL;
  size_t len = 0;
  int split = S.split_left;
  FILE *f = open_memstream(&all, &len);
  const char *k;
  json_t *o;
  json_object_foreach(S.store[wt->t.res], k, o) {
    if (!match_obj(&wt->t, o)) continue;
    emit(wt, "ADDED", o);
    fwrite(wt->out, 1, wt->outlen, f);
  }
  if (watch_list) {
    emit_bookmark(wt, true);
    fwrite(wt->out, 1, wt->outlen, f);
  }
  fclose(f);
  free(wt->out);
  wt->out = all;
  wt->outlen = len;
  wt->outoff = 0;
  wt->split_left = 0;
  S.split_left = split;
}

/* Where a watch from `rv` starts in the log; false when rv is compacted away. */
static bool start_at(watch_t *wt, unsigned long long rv) {
  if (rv < S.compacted) return false;
  size_t lo = 0, hi = S.nlog;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (S.log[mid].rv <= rv) lo = mid + 1;
    else hi = mid;
  }
  wt->logpos = lo;
  return true;
}

static enum MHD_Result watch(struct MHD_Connection *c, const target_t *t) {
  const char *rvs = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "resourceVersion");
  const char *sie = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "sendInitialEvents");
  const char *rvm = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "resourceVersionMatch");
  const char *tos = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "timeoutSeconds");
  pthread_mutex_lock(&S.mu);
  bool ignore = S.ignore_watch_list;
  pthread_mutex_unlock(&S.mu);
  bool watch_list = sie && !strcmp(sie, "true") && !ignore;
  if (watch_list && (!rvm || strcmp(rvm, "NotOlderThan")))
    return send_status(c, 422, "Invalid", "sendInitialEvents requires resourceVersionMatch=NotOlderThan", 0);
  watch_t *wt = calloc(1, sizeof *wt);
  wt->t = *t;
  wt->deadline = time(NULL) + (tos ? atol(tos) : 1800);
  pthread_mutex_lock(&S.mu);
  if (watch_list && S.no_watch_list) {
    pthread_mutex_unlock(&S.mu);
    free(wt);
    return send_status(c, 422, "Invalid",
                       "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled", 0);
  }
  S.nwatches++;
  wt->drop_gen = S.drop_gen;
  wt->close_gen = S.close_gen;
  wt->bookmark_gen = S.bookmark_gen;
  wt->expire_gen = S.expire_gen;
  wt->trunc_gen = S.trunc_gen;
  wt->stall_ms = S.stall_ms;
  S.stall_ms = 0;
  unsigned long long rv = rvs && *rvs ? strtoull(rvs, NULL, 10) : 0;
  if (watch_list || rv == 0) {
    wt->logpos = S.nlog;
    initial_events(wt, watch_list);
  } else if (!start_at(wt, rv)) {
    char *msg = fmt("too old resource version: %llu (%llu)", rv, S.compacted);
    emit_expired(wt, msg);
    free(msg);
  }
  pthread_mutex_unlock(&S.mu);
  struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024,
                                                             watch_read, wt, watch_free);
  MHD_add_response_header(r, "Content-Type", "application/json");
  MHD_add_response_header(r, "Cache-Control", "no-cache, private");
  enum MHD_Result ret = MHD_queue_response(c, 200, r);
  MHD_destroy_response(r);
  return ret;
}

/* ---- dispatch ---- */

static bool authorized(struct MHD_Connection *c) {
  const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
  pthread_mutex_lock(&S.mu);
  bool ok = !S.token || (h && !strncmp(h, "Bearer ", 7) && !strcmp(h + 7, S.token));
  pthread_mutex_unlock(&S.mu);
  return ok;
}

/* The pending "fail" fault, if any: its code and Retry-After. */
static unsigned take_fault(int *retry_after) {
  pthread_mutex_lock(&S.mu);
  S.requests++;
  unsigned code = 0;
  if (S.fail_n > 0) {
    S.fail_n--;
    code = (unsigned)S.fail_code;
    *retry_after = S.fail_secs;
  }
  pthread_mutex_unlock(&S.mu);
  return code;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls) {
  (void)cls; (void)version; (void)upload; (void)upload_size; (void)con_cls;
  /* A hung server: the request waits, unanswered, until "hang off" (or shutdown). */
  pthread_mutex_lock(&S.mu);
  while (S.hang && !S.shutting) pthread_cond_wait(&S.cv, &S.mu);
  pthread_mutex_unlock(&S.mu);
  if (strcmp(method, "GET")) return send_status(c, 405, "MethodNotAllowed", "only GET", 0);
  if (!authorized(c)) return send_status(c, 401, "Unauthorized", "Unauthorized", 0);
  int ra = 0;
  unsigned code = take_fault(&ra);
  if (code) return send_status(c, code, code == 410 ? "Expired" : code == 429 ? "TooManyRequests" : "InternalError", "injected by the test", ra);
  target_t t;
  if (!parse_target(url, &t)) return discovery(c, url);
  const char *acc = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept");
  t.table = acc && strstr(acc, "as=Table");
  const char *fs = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "fieldSelector");
  char why[256];
  if (fs && *fs && !parse_selector(fs, &t, why, sizeof why))
    return send_status(c, 400, "BadRequest", why, 0);
  if (t.name[0]) return get_one(c, &t);
  const char *w = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "watch");
  if (w && (!strcmp(w, "1") || !strcmp(w, "true"))) return watch(c, &t);
  return list(c, &t);
}

/* ---- the control channel ---- */

static json_t *load_file(const char *path) {
  json_error_t je;
  json_t *v = json_load_file(path, 0, &je);
  if (json_is_object(v)) {
    json_t *items = json_incref(json_object_get(v, "items"));
    json_decref(v);
    v = items;
  }
  return json_is_array(v) ? v : NULL;
}

static void cmd_load(int res, const char *path) {
  json_t *items = load_file(path);
  if (!items) { printf("err cannot load %s\n", path); return; }
  size_t i;
  json_t *o;
  json_array_foreach(items, i, o) put(res, json_incref(o), false);
  S.compacted = S.rv;
  printf("ok %zu\n", json_array_size(items));
  json_decref(items);
}

static void cmd_dump(int res) {
  json_t *out = json_array();
  const char *k;
  json_t *o;
  json_object_foreach(S.store[res], k, o)
    json_array_append_new(out, json_pack("[s,s]", k, meta_str(o, "resourceVersion")));
  char *s = json_dumps(out, JSON_COMPACT);
  printf("ok %s\n", s);
  free(s);
  json_decref(out);
}

static void command(char *line) {
  char verb[32] = "", arg[256] = "", *rest = NULL;
  int n = 0, x = 0, y = 0;
  sscanf(line, "%31s %255s %n", verb, arg, &n);
  rest = line + n;
  int res = res_by_name(arg);
  const char *err = NULL;
  pthread_mutex_lock(&S.mu);
  if (!strcmp(verb, "put") && res >= 0) {
    json_error_t je;
    json_t *o = json_loads(rest, 0, &je);
    err = o ? put(res, o, true) : je.text;
    if (!err) printf("ok %llu\n", S.rv);
  } else if (!strcmp(verb, "del") && res >= 0) {
    rest[strcspn(rest, " \n")] = '\0';
    if (!(err = del(res, rest))) printf("ok %llu\n", S.rv);
  } else if (!strcmp(verb, "load") && res >= 0) {
    rest[strcspn(rest, "\n")] = '\0';
    cmd_load(res, rest);
  } else if (!strcmp(verb, "count") && res >= 0) {
    printf("ok %zu\n", json_object_size(S.store[res]));
  } else if (!strcmp(verb, "dump") && res >= 0) {
    cmd_dump(res);
  } else if (!strcmp(verb, "rv")) {
    printf("ok %llu\n", S.rv);
  } else if (!strcmp(verb, "watches")) {
    printf("ok %d\n", S.nwatches);
  } else if (!strcmp(verb, "requests")) {
    printf("ok %lu\n", S.requests);
  } else if (!strcmp(verb, "compact")) {
    S.compacted = S.rv;
    printf("ok\n");
  } else if (!strcmp(verb, "expire")) {
    S.expire_gen++;
    for (size_t i = 0; i < S.nsnaps; i++) { json_decref(S.snaps[i].items); S.snaps[i].items = NULL; }
    printf("ok\n");
  } else if (!strcmp(verb, "fail") && sscanf(line, "fail %d %d %d", &x, &y, &S.fail_secs) >= 2) {
    S.fail_code = x;
    S.fail_n = y;
    printf("ok\n");
  } else if (!strcmp(verb, "drop")) {
    S.drop_gen++;
    printf("ok\n");
  } else if (!strcmp(verb, "truncate")) {
    S.trunc_gen++;
    printf("ok\n");
  } else if (!strcmp(verb, "hang")) {
    S.hang = !strcmp(arg, "on");
    printf("ok\n");
  } else if (!strcmp(verb, "droplist")) {
    S.droplist = true;
    printf("ok\n");
  } else if (!strcmp(verb, "split")) {
    S.split_left = atoi(arg);
    printf("ok\n");
  } else if (!strcmp(verb, "stall")) {
    S.stall_ms = atoi(arg);
    printf("ok\n");
  } else if (!strcmp(verb, "bookmark")) {
    S.bookmark_gen++;
    printf("ok\n");
  } else if (!strcmp(verb, "close")) {
    S.close_gen++;
    printf("ok\n");
  } else if (!strcmp(verb, "token") && arg[0]) {
    free(S.token);
    S.token = strdup(arg);
    printf("ok\n");
  } else if (!strcmp(verb, "watchlist")) {
    S.no_watch_list = !strcmp(arg, "off");
    S.ignore_watch_list = !strcmp(arg, "ignore");
    printf("ok\n");
  } else {
    err = "unknown command or resource";
  }
  if (err) printf("err %s\n", err);
  pthread_cond_broadcast(&S.cv);
  pthread_mutex_unlock(&S.mu);
  fflush(stdout);
}

int main(int argc, char **argv) {
  for (int i = 0; i < NRES; i++) S.store[i] = json_object();
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--token") && i + 1 < argc) S.token = strdup(argv[++i]);
    else if (!strcmp(argv[i], "--no-watch-list")) S.no_watch_list = true;
    else if (!strcmp(argv[i], "--no-device-taint-rules")) S.no_taint_rules = true;
    else die("usage: fake-apiserver [--token T] [--no-watch-list] [--no-device-taint-rules]");
  }
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  struct MHD_Daemon *d = MHD_start_daemon(
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, NULL,
      NULL, on_request, NULL, MHD_OPTION_CONNECTION_TIMEOUT, 0u, MHD_OPTION_SOCK_ADDR,
      (struct sockaddr *)&sa, MHD_OPTION_END);
  if (!d) die("cannot start the HTTP daemon");
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
  printf("port %u\n", info ? info->port : 0);
  fflush(stdout);
  char *line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, stdin) > 0) {
    if (!strncmp(line, "quit", 4)) break;
    command(line);
  }
  free(line);
  pthread_mutex_lock(&S.mu);
  S.shutting = true;
  pthread_cond_broadcast(&S.cv);
  pthread_mutex_unlock(&S.mu);
  MHD_stop_daemon(d);
  for (int i = 0; i < NRES; i++) json_decref(S.store[i]);
  for (size_t i = 0; i < S.nlog; i++) {
    free(S.log[i].ns);
    free(S.log[i].name);
    json_decref(S.log[i].obj);
    json_decref(S.log[i].prev);
  }
  for (size_t i = 0; i < S.nsnaps; i++) json_decref(S.snaps[i].items);
  free(S.log);
  free(S.snaps);
  free(S.token);
  return 0;
}
