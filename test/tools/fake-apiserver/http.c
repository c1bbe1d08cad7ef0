/* fake-apiserver's HTTP side: answers, bodies with faults, discovery, lists and gets, and the
 * dispatch of every request. */
#define _GNU_SOURCE
#include "fake.h"

/* ---- HTTP helpers ---- */

static enum MHD_Result send_text(struct MHD_Connection *c, unsigned code, const char *ctype,
                                 char *body)
{
  struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
  MHD_add_response_header(r, "Content-Type", ctype);
  enum MHD_Result ret = MHD_queue_response(c, code, r);
  MHD_destroy_response(r);
  return ret;
}

enum MHD_Result fk_send_json(struct MHD_Connection *c, unsigned code, json_t *v)
{
  char *s = json_dumps(v, JSON_COMPACT);
  json_decref(v);
  return send_text(c, code, "application/json", s);
}

json_t *fk_status_obj(unsigned code, const char *reason, const char *msg)
{
  return json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:i}", "kind", "Status", "apiVersion", "v1",
                   "metadata", "status", "Failure", "message", msg, "reason", reason, "code",
                   (int)code);
}

enum MHD_Result fk_send_status(struct MHD_Connection *c, unsigned code, const char *reason,
                               const char *msg, int retry_after)
{
  json_t *st = fk_status_obj(code, reason, msg);
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

static ssize_t body_read(void *cls, uint64_t pos, char *buf, size_t max)
{
  body_t *b = cls;
  size_t at = (size_t)pos;
  if (at >= b->len)
    return MHD_CONTENT_READER_END_OF_STREAM;
  if (at == b->stall_at && b->drop)
    return MHD_CONTENT_READER_END_WITH_ERROR;
  if (at == b->stall_at && b->stall_ms > 0) {
    usleep((useconds_t)b->stall_ms * 1000);
    b->stall_ms = 0;
  }
  size_t end = at < b->stall_at ? b->stall_at : b->len;
  size_t n = end - at < max ? end - at : max;
  memcpy(buf, b->body + at, n);
  return (ssize_t)n;
}

static void body_free(void *cls)
{
  body_t *b = cls;
  free(b->body);
  free(b);
}

/* Sends `body` of a list of resource `res` (steals it) whole, or with the pending stall/drop fault. */
static enum MHD_Result send_body(struct MHD_Connection *c, char *body, int res)
{
  pthread_mutex_lock(&fk_S.mu);
  bool mine = fk_S.stall_res < 0 || fk_S.stall_res == res;
  int stall = mine ? fk_S.stall_ms : 0;
  bool drop = fk_S.droplist;
  fk_S.stall_ms = mine ? 0 : fk_S.stall_ms;
  fk_S.droplist = false;
  pthread_mutex_unlock(&fk_S.mu);
  if (!stall && !drop)
    return send_text(c, 200, "application/json", body);
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

/* --discover-all: kinds served in discovery only. */
static const struct {
  const char *gv, *name, *kind;
  bool namespaced;
} more[] = {
    {"v1", "namespaces", "Namespace", false},
    {"v1", "serviceaccounts", "ServiceAccount", true},
    {"v1", "services", "Service", true},
    {"v1", "secrets", "Secret", true},
    {"resource.k8s.io/v1", "resourceclaimtemplates", "ResourceClaimTemplate", true},
    {"apps/v1", "deployments", "Deployment", true},
    {"policy/v1", "poddisruptionbudgets", "PodDisruptionBudget", true},
    {"rbac.authorization.k8s.io/v1", "clusterroles", "ClusterRole", false},
    {"rbac.authorization.k8s.io/v1", "clusterrolebindings", "ClusterRoleBinding", false},
    {"rbac.authorization.k8s.io/v1", "roles", "Role", true},
    {"rbac.authorization.k8s.io/v1", "rolebindings", "RoleBinding", true},
    {"networking.k8s.io/v1", "networkpolicies", "NetworkPolicy", true},
    {"scheduling.k8s.io/v1", "priorityclasses", "PriorityClass", false},
    {"monitoring.coreos.com/v1", "servicemonitors", "ServiceMonitor", true},
    {"monitoring.coreos.com/v1", "prometheusrules", "PrometheusRule", true},
    {"cert-manager.io/v1", "issuers", "Issuer", true},
    {"cert-manager.io/v1", "certificates", "Certificate", true},
};
#define NMORE (sizeof more / sizeof more[0])

static json_t *resource_entry(const char *name, bool namespaced, const char *kind)
{
  return json_pack("{s:s, s:s, s:b, s:s, s:[s,s,s]}", "name", name, "singularName", "", "namespaced",
                   namespaced, "kind", kind, "verbs", "get", "list", "watch");
}

/* The API groups discovery lists, each with its one version. */
static json_t *group_list(void)
{
  json_t *groups = json_array();
  const char *gvs[NMORE + 1] = {"resource.k8s.io/v1"};
  size_t n = 1;
  for (size_t i = 0; fk_S.discover_all && i < NMORE; i++) {
    bool seen = strchr(more[i].gv, '/') == NULL; /* core v1 is no group */
    for (size_t k = 0; k < n && !seen; k++)
      seen = strcmp(gvs[k], more[i].gv) == 0;
    if (!seen)
      gvs[n++] = more[i].gv;
  }
  for (size_t k = 0; k < n; k++) {
    char group[128];
    snprintf(group, sizeof group, "%.*s", (int)(strchr(gvs[k], '/') - gvs[k]), gvs[k]);
    const char *v = strchr(gvs[k], '/') + 1;
    json_array_append_new(groups,
                          json_pack("{s:s, s:[{s:s, s:s}], s:{s:s, s:s}}", "name", group, "versions",
                                    "groupVersion", gvs[k], "version", v, "preferredVersion",
                                    "groupVersion", gvs[k], "version", v));
  }
  return json_pack("{s:s, s:s, s:o}", "kind", "APIGroupList", "apiVersion", "v1", "groups", groups);
}

static json_t *resource_list(const char *gv)
{
  json_t *rs = json_array();
  for (size_t i = 0; fk_S.discover_all && i < NMORE; i++)
    if (!strcmp(more[i].gv, gv))
      json_array_append_new(rs, resource_entry(more[i].name, more[i].namespaced, more[i].kind));
  for (int i = 0; i < NRES; i++) {
    if (strcmp(fk_RES[i].gv, gv))
      continue;
    if (fk_S.no_taint_rules && !strcmp(fk_RES[i].name, "devicetaintrules"))
      continue;
    json_array_append_new(rs, resource_entry(fk_RES[i].name, fk_RES[i].namespaced, fk_RES[i].kind));
  }
  return json_pack("{s:s, s:s, s:s, s:o}", "kind", "APIResourceList", "apiVersion", "v1",
                   "groupVersion", gv, "resources", rs);
}

static enum MHD_Result discovery(struct MHD_Connection *c, const char *url)
{
  if (!strcmp(url, "/version"))
    return fk_send_json(c, 200,
                        json_pack("{s:s, s:s, s:s, s:s, s:s}", "major", "1", "minor", "34",
                                  "gitVersion", "v1.34.0-fake", "goVersion", "go1.24", "platform",
                                  "linux/amd64"));
  if (!strcmp(url, "/api"))
    return fk_send_json(c, 200,
                        json_pack("{s:s, s:[s], s:[{s:s, s:s}]}", "kind", "APIVersions", "versions",
                                  "v1", "serverAddressByClientCIDRs", "clientCIDR", "0.0.0.0/0",
                                  "serverAddress", "127.0.0.1"));
  if (!strcmp(url, "/apis"))
    return fk_send_json(c, 200, group_list());
  if (!strcmp(url, "/api/v1"))
    return fk_send_json(c, 200, resource_list("v1"));
  if (!strcmp(url, "/apis/resource.k8s.io/v1"))
    return fk_send_json(c, 200, resource_list("resource.k8s.io/v1"));
  for (size_t i = 0; fk_S.discover_all && i < NMORE; i++)
    if (!strncmp(url, "/apis/", 6) && !strcmp(url + 6, more[i].gv))
      return fk_send_json(c, 200, resource_list(more[i].gv));
  if (!strcmp(url, "/healthz") || !strcmp(url, "/readyz") || !strcmp(url, "/livez"))
    return send_text(c, 200, "text/plain", strdup("ok"));
  return fk_send_status(c, 404, "NotFound", "the server could not find the requested resource", 0);
}

/* ---- requests on resources ---- */

/* Parses /api/v1/... and /apis/resource.k8s.io/v1/... paths; false if neither. */
static bool parse_target(const char *url, target_t *t)
{
  const char *p;
  memset(t, 0, sizeof *t);
  if (!strncmp(url, "/api/v1/", 8))
    p = url + 8;
  else if (!strncmp(url, "/apis/resource.k8s.io/v1/", 25))
    p = url + 25;
  else
    return false;
  char a[5][256] = {{0}};
  int n = 0;
  for (const char *s = p; *s && n < 5; n++) {
    size_t len = strcspn(s, "/");
    if (len >= sizeof a[0])
      return false;
    memcpy(a[n], s, len);
    s += len + (s[len] == '/');
  }
  int i = 0;
  if (n >= 3 && !strcmp(a[0], "namespaces")) {
    snprintf(t->ns, sizeof t->ns, "%s", a[1]);
    i = 2;
  }
  t->res = fk_res_by_name(a[i]);
  if (t->res >= 0 && fk_S.no_taint_rules && !strcmp(fk_RES[t->res].name, "devicetaintrules"))
    return false;
  if (t->res < 0 || strcmp(fk_RES[t->res].gv, p == url + 8 ? "v1" : "resource.k8s.io/v1"))
    return false;
  if (n > i + 2)
    return false;
  if (n == i + 2)
    snprintf(t->name, sizeof t->name, "%s", a[i + 1]);
  return true;
}

/* The fields a field selector may name here (kube-apiserver's pods allow these and more). */
static const char *const SEL_FIELDS[] = {"metadata.name", "metadata.namespace", "spec.nodeName",
                                         "status.phase"};

static const char *field_of(const json_t *obj, const char *field)
{
  const char *dot = strchr(field, '.');
  char top[32];
  snprintf(top, sizeof top, "%.*s", (int)(dot - field), field);
  const char *v = json_string_value(json_object_get(json_object_get(obj, top), dot + 1));
  return v ? v : "";
}

/* Parses "f=v,f!=v,f==v"; false (with why) for a field it does not serve, as kube-apiserver answers 400. */
static bool parse_selector(const char *fs, target_t *t, char *why, size_t wl)
{
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
    for (size_t i = 0; i < sizeof SEL_FIELDS / sizeof SEL_FIELDS[0]; i++)
      known |= !strcmp(req, SEL_FIELDS[i]);
    if (!known || (strcmp(fk_RES[t->res].name, "pods") && strncmp(req, "metadata.", 9))) {
      snprintf(why, wl, "field label not supported: %s", req);
      return false;
    }
    snprintf(t->sel[t->nsel].field, sizeof t->sel[0].field, "%s", req);
    snprintf(t->sel[t->nsel].value, sizeof t->sel[0].value, "%s", val);
    t->sel[t->nsel++].ne = ne;
  }
  return true;
}

bool fk_match_obj(const target_t *t, const json_t *obj)
{
  const char *ns = fk_meta_str(obj, "namespace");
  if (t->ns[0] && strcmp(t->ns, ns ? ns : ""))
    return false;
  for (int i = 0; i < t->nsel; i++)
    if ((strcmp(field_of(obj, t->sel[i].field), t->sel[i].value) == 0) == t->sel[i].ne)
      return false;
  return true;
}

/* A Table of `objs` (kubectl's server-side printing): name and age. */
json_t *fk_table_of(json_t *objs, bool header)
{
  json_t *rows = json_array();
  size_t i;
  json_t *o;
  json_array_foreach(objs, i, o)
  {
    json_t *pom = json_pack("{s:s, s:s, s:O}", "kind", "PartialObjectMetadata", "apiVersion",
                            "meta.k8s.io/v1", "metadata", json_object_get(o, "metadata"));
    json_array_append_new(rows, json_pack("{s:[s,s], s:o}", "cells", fk_meta_str(o, "name"), "1m",
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

static json_t *strip_kind(json_t *o)
{
  json_t *c = json_copy(o);
  json_object_del(c, "kind");
  json_object_del(c, "apiVersion");
  return c;
}

/* The page of a list from offset `off` of snapshot `si`; NULL cont when the last. */
static json_t *page(const target_t *t, size_t si, size_t off, size_t limit)
{
  snap_t *sn = &fk_S.snaps[si];
  size_t n = json_array_size(sn->items), end = limit && off + limit < n ? off + limit : n;
  json_t *items = json_array();
  for (size_t i = off; i < end; i++)
    json_array_append(items, json_array_get(sn->items, i));
  char rv[32], cont[64] = "";
  snprintf(rv, sizeof rv, "%llu", sn->rv);
  if (end < n)
    snprintf(cont, sizeof cont, "snap-%zu-%zu", si, end);
  if (t->table) {
    json_t *tb = fk_table_of(items, true);
    json_decref(items);
    json_object_set_new(json_object_get(tb, "metadata"), "resourceVersion", json_string(rv));
    if (cont[0])
      json_object_set_new(json_object_get(tb, "metadata"), "continue", json_string(cont));
    return tb;
  }
  char kind[64];
  snprintf(kind, sizeof kind, "%sList", fk_RES[t->res].kind);
  json_t *md = json_pack("{s:s}", "resourceVersion", rv);
  if (cont[0]) {
    json_object_set_new(md, "continue", json_string(cont));
    json_object_set_new(md, "remainingItemCount", json_integer((json_int_t)(n - end)));
  }
  return json_pack("{s:s, s:s, s:o, s:o}", "kind", kind, "apiVersion", fk_RES[t->res].gv, "metadata",
                   md, "items", items);
}

static enum MHD_Result list(struct MHD_Connection *c, const target_t *t)
{
  const char *lim = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "limit");
  const char *cont = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "continue");
  size_t limit = lim ? strtoul(lim, NULL, 10) : 0, si, off = 0;
  pthread_mutex_lock(&fk_S.mu);
  if (fk_S.no_paging)
    limit = 0;
  if (cont && *cont) {
    if (sscanf(cont, "snap-%zu-%zu", &si, &off) != 2 || si >= fk_S.nsnaps || !fk_S.snaps[si].items) {
      pthread_mutex_unlock(&fk_S.mu);
      return fk_send_status(c, 410, "Expired",
                            "The provided continue parameter is too old to display a consistent list "
                            "result. You can start a new list without the continue parameter.",
                            0);
    }
  } else {
    fk_S.snaps = realloc(fk_S.snaps, (fk_S.nsnaps + 1) * sizeof *fk_S.snaps);
    si = fk_S.nsnaps++;
    fk_S.snaps[si] = (snap_t){json_array(), fk_S.rv, t->res};
    const char *k;
    json_t *o;
    json_object_foreach(fk_S.store[t->res], k, o) if (fk_match_obj(t, o))
        json_array_append_new(fk_S.snaps[si].items, strip_kind(o));
  }
  json_t *body = page(t, si, off, limit);
  if (!json_object_get(json_object_get(body, "metadata"), "continue")) {
    json_decref(fk_S.snaps[si].items); /* the last page: the snapshot is done */
    fk_S.snaps[si].items = NULL;
  }
  char *s = json_dumps(body, JSON_COMPACT);
  json_decref(body);
  pthread_mutex_unlock(&fk_S.mu);
  return send_body(c, s, t->res);
}

static enum MHD_Result get_one(struct MHD_Connection *c, const target_t *t)
{
  pthread_mutex_lock(&fk_S.mu);
  char *key = fk_fmt("%s/%s", fk_RES[t->res].namespaced ? (t->ns[0] ? t->ns : "default") : "",
                     t->name);
  json_t *o = json_object_get(fk_S.store[t->res], key);
  free(key);
  if (!o) {
    pthread_mutex_unlock(&fk_S.mu);
    char *msg = fk_fmt("%s \"%s\" not found", fk_RES[t->res].name, t->name);
    enum MHD_Result r = fk_send_status(c, 404, "NotFound", msg, 0);
    free(msg);
    return r;
  }
  json_t *out;
  if (t->table) {
    json_t *one = json_pack("[O]", o);
    out = fk_table_of(one, true);
    json_decref(one);
  } else {
    out = json_incref(o);
  }
  char *s = json_dumps(out, JSON_COMPACT);
  json_decref(out);
  pthread_mutex_unlock(&fk_S.mu);
  return send_text(c, 200, "application/json", s);
}

/* ---- dispatch ---- */

static bool authorized(struct MHD_Connection *c)
{
  const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
  pthread_mutex_lock(&fk_S.mu);
  bool ok = !fk_S.token || (h && !strncmp(h, "Bearer ", 7) && !strcmp(h + 7, fk_S.token));
  pthread_mutex_unlock(&fk_S.mu);
  return ok;
}

/* The pending "fail" fault, if any: its code and Retry-After. */
static unsigned take_fault(int *retry_after)
{
  pthread_mutex_lock(&fk_S.mu);
  fk_S.requests++;
  unsigned code = 0;
  if (fk_S.fail_n > 0) {
    fk_S.fail_n--;
    code = (unsigned)fk_S.fail_code;
    *retry_after = fk_S.fail_secs;
  }
  pthread_mutex_unlock(&fk_S.mu);
  return code;
}

enum MHD_Result fk_on_request(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
  (void)cls;
  (void)version;
  char key[520];
  /* A hung server: the request waits, unanswered, until "hang off" (or shutdown). */
  pthread_mutex_lock(&fk_S.mu);
  while (fk_S.hang && !fk_S.shutting)
    pthread_cond_wait(&fk_S.cv, &fk_S.mu);
  pthread_mutex_unlock(&fk_S.mu);
  bool evicting = !strcmp(method, "POST") && fk_eviction_path(url, key, sizeof key);
  if (evicting && *con_cls != NULL) /* the upload of an eviction, then its answer */
    return fk_eviction(c, key, upload, upload_size, con_cls);
  if (strcmp(method, "GET") && !evicting)
    return fk_send_status(c, 405, "MethodNotAllowed", "only GET, and POST on pods/eviction", 0);
  if (!authorized(c))
    return fk_send_status(c, 401, "Unauthorized", "Unauthorized", 0);
  int ra = 0;
  unsigned code = take_fault(&ra);
  if (code)
    return fk_send_status(c, code,
                          code == 410   ? "Expired"
                          : code == 429 ? "TooManyRequests"
                                        : "InternalError",
                          "injected by the test", ra);
  if (evicting)
    return fk_eviction(c, key, upload, upload_size, con_cls);
  target_t t;
  if (!parse_target(url, &t))
    return discovery(c, url);
  const char *acc = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept");
  t.table = acc && strstr(acc, "as=Table");
  const char *fs = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "fieldSelector");
  char why[256];
  if (fs && *fs && !parse_selector(fs, &t, why, sizeof why))
    return fk_send_status(c, 400, "BadRequest", why, 0);
  if (t.name[0])
    return get_one(c, &t);
  const char *w = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "watch");
  if (w && (!strcmp(w, "1") || !strcmp(w, "true")))
    return fk_watch(c, &t);
  return list(c, &t);
}
