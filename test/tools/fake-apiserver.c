/*
 * fake-apiserver: a small kube-apiserver on loopback for apiwatch's tests and
 * benchmarks, and for kubectl. It serves ResourceSlices, ResourceClaims,
 * DeviceClasses, DeviceTaintRules (resource.k8s.io/v1), ConfigMaps, Nodes and Pods (v1),
 * and pods' eviction subresource (POST, policy/v1 Eviction: the pod is deleted)
 * with resourceVersions, paged lists (limit/continue over a snapshot),
 * watches (chunked streams of WatchEvents, bookmarks, watch-list with the
 * initial-events-end bookmark), discovery (/version, /api, /apis, the
 * APIResourceLists) and the Table form kubectl asks for. Field selectors take
 * metadata.name and metadata.namespace on every resource, spec.nodeName and
 * status.phase on pods (=, ==, !=, comma-joined; others are a 400); a watch
 * sees an object that starts or stops matching as ADDED or DELETED, as
 * kube-apiserver's watch cache sends it.
 *
 *   fake-apiserver [--token T] [--no-watch-list] [--no-device-taint-rules] [--discover-all]
 *
 * --discover-all adds to discovery every other kind manifests/ creates
 * (Deployments, RBAC, PodDisruptionBudgets, the Prometheus Operator's and
 * cert-manager's kinds, ...), discovery only: enough for kubectl's client
 * dry run to map each object; requests on them get 404.
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
 *   stall MS [RES]          the next request (or the next list of RES) stalls MS in the middle
 *                           of its body
 *   bookmark | close        every open watch gets a BOOKMARK / ends cleanly
 *   token T                 only T is accepted from now on (others get 401)
 *   watchlist on|off|ignore serve sendInitialEvents, answer it 422, or ignore it (old servers)
 *   paging on|off           honour limit on lists, or send every object in one page (as a
 *                           server answering from its watch cache may)
 *   requests | watches      how many requests were served / watches are open
 *   pdb NS/NAME | all | off a disruption budget refuses evictions of the pod (or of every
 *                           pod) with 429 TooManyRequests, as kube-apiserver does; off: none
 *   evictions               every eviction asked for (one line: JSON array of ns/name)
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

#include "fake-apiserver/fake.h"

const rdef_t fk_RES[NRES] = {
    {"resourceslices", "ResourceSlice", "resource.k8s.io/v1", false},
    {"resourceclaims", "ResourceClaim", "resource.k8s.io/v1", true},
    {"deviceclasses", "DeviceClass", "resource.k8s.io/v1", false},
    {"devicetaintrules", "DeviceTaintRule", "resource.k8s.io/v1", false},
    {"configmaps", "ConfigMap", "v1", true},
    {"nodes", "Node", "v1", false},
    {"pods", "Pod", "v1", true},
};

fake_state_t fk_S = {.mu = PTHREAD_MUTEX_INITIALIZER,
                     .cv = PTHREAD_COND_INITIALIZER,
                     .rv = 1000,
                     .stall_res = -1};

void fk_die(const char *msg)
{
  fprintf(stderr, "fake-apiserver: %s\n", msg);
  exit(2);
}

char *fk_fmt(const char *f, ...)
{
  va_list ap;
  va_start(ap, f);
  char *s = NULL;
  if (vasprintf(&s, f, ap) < 0)
    fk_die("out of memory");
  va_end(ap);
  return s;
}

/* ---- the control channel ---- */

static json_t *load_file(const char *path)
{
  json_error_t je;
  json_t *v = json_load_file(path, 0, &je);
  if (json_is_object(v)) {
    json_t *items = json_incref(json_object_get(v, "items"));
    json_decref(v);
    v = items;
  }
  return json_is_array(v) ? v : NULL;
}

static void cmd_load(int res, const char *path)
{
  json_t *items = load_file(path);
  if (!items) {
    printf("err cannot load %s\n", path);
    return;
  }
  size_t i;
  json_t *o;
  json_array_foreach(items, i, o) fk_put(res, json_incref(o), false);
  fk_S.compacted = fk_S.rv;
  printf("ok %zu\n", json_array_size(items));
  json_decref(items);
}

static void cmd_dump(int res)
{
  json_t *out = json_array();
  const char *k;
  json_t *o;
  json_object_foreach(fk_S.store[res], k, o)
      json_array_append_new(out, json_pack("[s,s]", k, fk_meta_str(o, "resourceVersion")));
  char *s = json_dumps(out, JSON_COMPACT);
  printf("ok %s\n", s);
  free(s);
  json_decref(out);
}

static void command(char *line)
{
  char verb[32] = "", arg[256] = "", *rest = NULL;
  int n = 0, x = 0, y = 0;
  sscanf(line, "%31s %255s %n", verb, arg, &n);
  rest = line + n;
  int res = fk_res_by_name(arg);
  const char *err = NULL;
  pthread_mutex_lock(&fk_S.mu);
  if (!strcmp(verb, "put") && res >= 0) {
    json_error_t je;
    json_t *o = json_loads(rest, 0, &je);
    err = o ? fk_put(res, o, true) : je.text;
    if (!err)
      printf("ok %llu\n", fk_S.rv);
  } else if (!strcmp(verb, "del") && res >= 0) {
    rest[strcspn(rest, " \n")] = '\0';
    if (!(err = fk_del(res, rest)))
      printf("ok %llu\n", fk_S.rv);
  } else if (!strcmp(verb, "load") && res >= 0) {
    rest[strcspn(rest, "\n")] = '\0';
    cmd_load(res, rest);
  } else if (!strcmp(verb, "count") && res >= 0) {
    printf("ok %zu\n", json_object_size(fk_S.store[res]));
  } else if (!strcmp(verb, "dump") && res >= 0) {
    cmd_dump(res);
  } else if (!strcmp(verb, "rv")) {
    printf("ok %llu\n", fk_S.rv);
  } else if (!strcmp(verb, "watches")) {
    printf("ok %d\n", fk_S.nwatches);
  } else if (!strcmp(verb, "requests")) {
    printf("ok %lu\n", fk_S.requests);
  } else if (!strcmp(verb, "compact")) {
    fk_S.compacted = fk_S.rv;
    printf("ok\n");
  } else if (!strcmp(verb, "expire")) {
    fk_S.expire_gen++;
    for (size_t i = 0; i < fk_S.nsnaps; i++) {
      json_decref(fk_S.snaps[i].items);
      fk_S.snaps[i].items = NULL;
    }
    printf("ok\n");
  } else if (!strcmp(verb, "fail") && sscanf(line, "fail %d %d %d", &x, &y, &fk_S.fail_secs) >= 2) {
    fk_S.fail_code = x;
    fk_S.fail_n = y;
    printf("ok\n");
  } else if (!strcmp(verb, "drop")) {
    fk_S.drop_gen++;
    printf("ok\n");
  } else if (!strcmp(verb, "truncate")) {
    fk_S.trunc_gen++;
    printf("ok\n");
  } else if (!strcmp(verb, "hang")) {
    fk_S.hang = !strcmp(arg, "on");
    printf("ok\n");
  } else if (!strcmp(verb, "droplist")) {
    fk_S.droplist = true;
    printf("ok\n");
  } else if (!strcmp(verb, "split")) {
    fk_S.split_left = atoi(arg);
    printf("ok\n");
  } else if (!strcmp(verb, "stall")) {
    char what[64] = "";
    fk_S.stall_ms = atoi(arg);
    fk_S.stall_res = sscanf(rest, "%63s", what) == 1 ? fk_res_by_name(what) : -1;
    printf("ok\n");
  } else if (!strcmp(verb, "bookmark")) {
    fk_S.bookmark_gen++;
    printf("ok\n");
  } else if (!strcmp(verb, "close")) {
    fk_S.close_gen++;
    printf("ok\n");
  } else if (!strcmp(verb, "token") && arg[0]) {
    free(fk_S.token);
    fk_S.token = strdup(arg);
    printf("ok\n");
  } else if (!strcmp(verb, "paging") && (!strcmp(arg, "on") || !strcmp(arg, "off"))) {
    fk_S.no_paging = !strcmp(arg, "off");
    printf("ok\n");
  } else if (!strcmp(verb, "pdb") && arg[0]) {
    fk_S.pdb_all = !strcmp(arg, "all");
    if (!strcmp(arg, "off"))
      json_object_clear(fk_S.pdb);
    else if (!fk_S.pdb_all)
      json_object_set_new(fk_S.pdb, arg, json_true());
    printf("ok\n");
  } else if (!strcmp(verb, "evictions")) {
    char *s = json_dumps(fk_S.evictions, JSON_COMPACT);
    printf("ok %s\n", s);
    free(s);
  } else if (!strcmp(verb, "watchlist")) {
    fk_S.no_watch_list = !strcmp(arg, "off");
    fk_S.ignore_watch_list = !strcmp(arg, "ignore");
    printf("ok\n");
  } else {
    err = "unknown command or resource";
  }
  if (err)
    printf("err %s\n", err);
  pthread_cond_broadcast(&fk_S.cv);
  pthread_mutex_unlock(&fk_S.mu);
  fflush(stdout);
}

int main(int argc, char **argv)
{
  for (int i = 0; i < NRES; i++)
    fk_S.store[i] = json_object();
  fk_S.pdb = json_object();
  fk_S.evictions = json_array();
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--token") && i + 1 < argc)
      fk_S.token = strdup(argv[++i]);
    else if (!strcmp(argv[i], "--no-watch-list"))
      fk_S.no_watch_list = true;
    else if (!strcmp(argv[i], "--no-device-taint-rules"))
      fk_S.no_taint_rules = true;
    else if (!strcmp(argv[i], "--discover-all"))
      fk_S.discover_all = true;
    else
      fk_die("usage: fake-apiserver [--token T] [--no-watch-list] [--no-device-taint-rules] "
             "[--discover-all]");
  }
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
                                              MHD_USE_THREAD_PER_CONNECTION,
                                          0, NULL, NULL, fk_on_request, NULL,
                                          MHD_OPTION_CONNECTION_TIMEOUT, 0u, MHD_OPTION_SOCK_ADDR,
                                          (struct sockaddr *)&sa, MHD_OPTION_END);
  if (!d)
    fk_die("cannot start the HTTP daemon");
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
  printf("port %u\n", info ? info->port : 0);
  fflush(stdout);
  char *line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, stdin) > 0) {
    if (!strncmp(line, "quit", 4))
      break;
    command(line);
  }
  free(line);
  pthread_mutex_lock(&fk_S.mu);
  fk_S.shutting = true;
  pthread_cond_broadcast(&fk_S.cv);
  pthread_mutex_unlock(&fk_S.mu);
  MHD_stop_daemon(d);
  for (int i = 0; i < NRES; i++)
    json_decref(fk_S.store[i]);
  for (size_t i = 0; i < fk_S.nlog; i++) {
    free(fk_S.log[i].ns);
    free(fk_S.log[i].name);
    json_decref(fk_S.log[i].obj);
    json_decref(fk_S.log[i].prev);
  }
  for (size_t i = 0; i < fk_S.nsnaps; i++)
    json_decref(fk_S.snaps[i].items);
  free(fk_S.log);
  free(fk_S.snaps);
  free(fk_S.token);
  json_decref(fk_S.pdb);
  json_decref(fk_S.evictions);
  return 0;
}
