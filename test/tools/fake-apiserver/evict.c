/*
 * The pods/eviction subresource (policy/v1 Eviction), as kube-apiserver
 * answers it: the body must be an Eviction naming the pod of the path; an
 * unknown pod is a 404; a pod a test has put under a disruption budget
 * ("pdb" on the control channel) is refused with 429 TooManyRequests and
 * kube-apiserver's words; otherwise the pod is deleted (watchers see
 * DELETED) and the answer is a 201 Status Success. Every eviction asked for
 * is recorded, in order, for "evictions".
 */
#include "fake.h"

/* "NS/NAME" of /api/v1/namespaces/NS/pods/NAME/eviction, in key; false for any other path. */
bool fk_eviction_path(const char *url, char *key, size_t cap)
{
  char ns[256], name[256];
  int n = 0;
  if (sscanf(url, "/api/v1/namespaces/%255[^/]/pods/%255[^/]/eviction%n", ns, name, &n) != 2 ||
      url[n] != '\0')
    return false;
  snprintf(key, cap, "%s/%s", ns, name);
  return true;
}

/* The upload of a POST, gathered across MHD's calls; NULL until the last. */
typedef struct {
  char *p;
  size_t len;
} upload_t;

static json_t *refusal(void)
{
  json_t *st = fk_status_obj(429, "TooManyRequests",
                             "Cannot evict pod as it would violate the pod's disruption budget.");
  json_object_set_new(st, "details",
                      json_pack("{s:[{s:s, s:s}]}", "causes", "reason", "DisruptionBudget", "message",
                                "The disruption budget test-pdb needs 1 healthy pods and has 1 "
                                "currently"));
  return st;
}

/* The answer to a whole eviction request for pod `key` with body `b` (under fk_S.mu). */
static enum MHD_Result evict(struct MHD_Connection *c, const char *key, const upload_t *b)
{
  json_t *ev = json_loadb(b->p ? b->p : "", b->len, 0, NULL);
  const char *slash = strchr(key, '/');
  const char *kind = json_string_value(json_object_get(ev, "kind"));
  const char *gv = json_string_value(json_object_get(ev, "apiVersion"));
  const char *name = fk_meta_str(ev, "name");
  enum MHD_Result ret;
  json_array_append_new(fk_S.evictions, json_string(key));
  if (!kind || strcmp(kind, "Eviction") || !gv || strcmp(gv, "policy/v1"))
    ret = fk_send_status(c, 400, "BadRequest", "expected a policy/v1 Eviction", 0);
  else if (!name || strcmp(name, slash + 1))
    ret = fk_send_status(c, 400, "BadRequest", "name in URL does not match name in Eviction object",
                         0);
  else if (!json_object_get(fk_S.store[fk_res_by_name("pods")], key)) {
    char *msg = fk_fmt("pods \"%s\" not found", slash + 1);
    ret = fk_send_status(c, 404, "NotFound", msg, 0);
    free(msg);
  } else if (fk_S.pdb_all || json_object_get(fk_S.pdb, key))
    ret = fk_send_json(c, 429, refusal());
  else {
    fk_del(fk_res_by_name("pods"), key);
    pthread_cond_broadcast(&fk_S.cv);
    ret = fk_send_json(c, 201,
                       json_pack("{s:s, s:s, s:{}, s:s, s:i}", "kind", "Status", "apiVersion", "v1",
                                 "metadata", "status", "Success", "code", 201));
  }
  json_decref(ev);
  return ret;
}

enum MHD_Result fk_eviction(struct MHD_Connection *c, const char *key, const char *upload,
                            size_t *upload_size, void **con_cls)
{
  upload_t *b = *con_cls;
  if (b == NULL) {
    if ((*con_cls = calloc(1, sizeof *b)) == NULL)
      fk_die("out of memory");
    return MHD_YES;
  }
  if (*upload_size > 0) {
    if (b->len + *upload_size > (1u << 20))
      return MHD_NO;
    b->p = realloc(b->p, b->len + *upload_size + 1);
    if (!b->p)
      fk_die("out of memory");
    memcpy(b->p + b->len, upload, *upload_size);
    b->len += *upload_size;
    b->p[b->len] = '\0';
    *upload_size = 0;
    return MHD_YES;
  }
  pthread_mutex_lock(&fk_S.mu);
  enum MHD_Result ret = evict(c, key, b);
  pthread_mutex_unlock(&fk_S.mu);
  free(b->p);
  free(b);
  *con_cls = NULL;
  return ret;
}
