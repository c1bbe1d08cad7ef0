/* fake-apiserver's store: objects by resource and name, and the event log (callers hold fk_S.mu). */
#define _GNU_SOURCE
#include "fake.h"

/* ---- the store (callers hold fk_S.mu) ---- */

int fk_res_by_name(const char *name)
{
  for (int i = 0; i < NRES; i++)
    if (!strcmp(fk_RES[i].name, name))
      return i;
  return -1;
}

const char *fk_meta_str(const json_t *obj, const char *key)
{
  return json_string_value(json_object_get(json_object_get(obj, "metadata"), key));
}

static char *key_of(int res, const json_t *obj)
{
  const char *ns = fk_RES[res].namespaced ? fk_meta_str(obj, "namespace") : NULL;
  return fk_fmt("%s/%s", ns ? ns : (fk_RES[res].namespaced ? "default" : ""),
                fk_meta_str(obj, "name"));
}

static void log_event(int res, const char *type, json_t *obj, json_t *prev)
{
  if (fk_S.nlog == fk_S.caplog) {
    fk_S.caplog = fk_S.caplog ? 2 * fk_S.caplog : 1024;
    fk_S.log = realloc(fk_S.log, fk_S.caplog * sizeof *fk_S.log);
    if (!fk_S.log)
      fk_die("out of memory");
  }
  const char *ns = fk_meta_str(obj, "namespace");
  fk_S.log[fk_S.nlog++] = (event_t){fk_S.rv,
                                    res,
                                    strdup(ns ? ns : ""),
                                    strdup(fk_meta_str(obj, "name")),
                                    type,
                                    json_incref(obj),
                                    prev ? json_incref(prev) : NULL};
  pthread_cond_broadcast(&fk_S.cv);
}

/* Stamps an object as the server does: kind, apiVersion, rv, uid, creation time. */
static void stamp(int res, json_t *obj, const json_t *old)
{
  json_t *md = json_object_get(obj, "metadata");
  json_object_set_new(obj, "kind", json_string(fk_RES[res].kind));
  json_object_set_new(obj, "apiVersion", json_string(fk_RES[res].gv));
  if (fk_RES[res].namespaced && !json_object_get(md, "namespace"))
    json_object_set_new(md, "namespace", json_string("default"));
  char rv[32];
  snprintf(rv, sizeof rv, "%llu", fk_S.rv);
  json_object_set_new(md, "resourceVersion", json_string(rv));
  const char *uid = old ? fk_meta_str(old, "uid") : NULL;
  char u[64];
  snprintf(u, sizeof u, "00000000-0000-4000-8000-%012llx", fk_S.rv);
  json_object_set_new(md, "uid", json_string(uid ? uid : u));
  const char *ts = old ? fk_meta_str(old, "creationTimestamp") : NULL;
  if (!json_object_get(md, "creationTimestamp"))
    json_object_set_new(md, "creationTimestamp", json_string(ts ? ts : "2026-12-02T12:00:00Z"));
}

/* Adds or replaces; steals obj. Returns NULL or an error text. */
const char *fk_put(int res, json_t *obj, bool logged)
{
  if (!json_is_object(obj) || !fk_meta_str(obj, "name")) {
    json_decref(obj);
    return "not an object with metadata.name";
  }
  char *key = key_of(res, obj);
  json_t *old = json_object_get(fk_S.store[res], key);
  fk_S.rv++;
  stamp(res, obj, old);
  if (logged)
    log_event(res, old ? "MODIFIED" : "ADDED", obj, old);
  json_object_set_new(fk_S.store[res], key, obj);
  free(key);
  return NULL;
}

const char *fk_del(int res, const char *nsname)
{
  const char *slash = strchr(nsname, '/');
  char *key = slash ? strdup(nsname)
                    : fk_fmt("%s/%s", fk_RES[res].namespaced ? "default" : "", nsname);
  json_t *old = json_object_get(fk_S.store[res], key);
  if (!old) {
    free(key);
    return "no such object";
  }
  json_t *copy = json_deep_copy(old);
  fk_S.rv++;
  char rv[32];
  snprintf(rv, sizeof rv, "%llu", fk_S.rv);
  json_object_set_new(json_object_get(copy, "metadata"), "resourceVersion", json_string(rv));
  log_event(res, "DELETED", copy, NULL);
  json_decref(copy);
  json_object_del(fk_S.store[res], key);
  free(key);
  return NULL;
}
