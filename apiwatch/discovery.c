/*
 * API discovery, once at start: which version of a group serves a resource
 * (DeviceTaintRules are resource.k8s.io/v1alpha3 on 1.33-1.35 clusters that
 * enable the alpha API, later versions elsewhere, absent on most), and the
 * server's Kubernetes version (whose default feature gates decide some of
 * the allocator's answers). Blocking
 * libcurl easy calls with a deadline, before the loop runs. The bytes come
 * from the API server: parsed with jansson, sizes capped.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "curl_int.h"
#include "slicefit/apiwatch.h"

#define MAX_BODY (4u << 20)

typedef struct {
  char *p;
  size_t n;
} body_t;

static size_t on_body(char *d, size_t size, size_t nmemb, void *ud)
{
  body_t *b = ud;
  size_t len = size * nmemb;
  if (b->n + len > MAX_BODY)
    return 0;
  b->p = sf_xrealloc(b->p, b->n + len + 1);
  memcpy(b->p + b->n, d, len);
  b->n += len;
  b->p[b->n] = '\0';
  return len;
}

/* GET path: the HTTP status with *out (new JSON, NULL unless 200 and JSON), or -1 on transport. */
static long get_json(const sf_kubeconfig_t *kc, const char *path, unsigned timeout_ms, json_t **out,
                     char *err, size_t errlen)
{
  char url[1024], cerr[CURL_ERROR_SIZE] = "";
  body_t b = {NULL, 0};
  long code = -1;
  struct curl_slist *h = curl_slist_append(NULL, "Accept: application/json");
  char *tok = sf_kubeconfig_token(kc, err, errlen);
  *out = NULL;
  if (tok) {
    size_t n = strlen(tok) + 32;
    char *line = sf_xmalloc(n);
    snprintf(line, n, "Authorization: Bearer %s", tok);
    h = curl_slist_append(h, line);
    free(line);
    free(tok);
  }
  CURL *e = curl_easy_init();
  snprintf(url, sizeof url, "%s%s", kc->server, path);
  curl_easy_setopt(e, CURLOPT_URL, url);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &b);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, cerr);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
  curl_easy_setopt(e, CURLOPT_USERAGENT, "slicefit/apiwatch");
  sf__curl_set_tls(e, kc);
  CURLcode cc = curl_easy_perform(e);
  if (cc == CURLE_OK) {
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
    if (code == 200 && b.p)
      *out = json_loads(b.p, 0, NULL);
  } else {
    snprintf(err, errlen, "GET %s: %s", path, cerr[0] ? cerr : curl_easy_strerror(cc));
  }
  curl_easy_cleanup(e);
  curl_slist_free_all(h);
  free(b.p);
  return code;
}

static bool lists_resource(const json_t *rl, const char *resource)
{
  size_t i;
  const json_t *r;
  json_array_foreach(json_object_get(rl, "resources"), i, r)
  {
    const char *name = json_string_value(json_object_get(r, "name"));
    if (name && strcmp(name, resource) == 0)
      return true;
  }
  return false;
}

/* The group's entry of an APIGroupList (borrowed), or NULL. */
static const json_t *group_of(const json_t *list, const char *group)
{
  size_t i;
  const json_t *g;
  json_array_foreach(json_object_get(list, "groups"), i, g)
  {
    const char *name = json_string_value(json_object_get(g, "name"));
    if (name && strcmp(name, group) == 0)
      return g;
  }
  return NULL;
}

int sf_apiwatch_discover(const sf_kubeconfig_t *kc, const char *group, const char *resource,
                         unsigned timeout_ms, char *version, size_t cap, char *err, size_t errlen)
{
  char path[512];
  json_t *groups = NULL;
  int rc = 0;
  version[0] = '\0';
  long code = get_json(kc, "/apis", timeout_ms, &groups, err, errlen);
  if (groups == NULL) {
    if (code >= 0)
      snprintf(err, errlen, "GET /apis: HTTP %ld", code);
    return SF_EINVAL;
  }
  /* The server lists a group's versions preferred first. */
  size_t i;
  const json_t *v;
  json_array_foreach(json_object_get(group_of(groups, group), "versions"), i, v)
  {
    const char *ver = json_string_value(json_object_get(v, "version"));
    json_t *rl = NULL;
    if (ver == NULL || strlen(ver) >= cap || strchr(ver, '/') || strchr(ver, '?'))
      continue;
    snprintf(path, sizeof path, "/apis/%s/%s", group, ver);
    code = get_json(kc, path, timeout_ms, &rl, err, errlen);
    bool found = lists_resource(rl, resource);
    json_decref(rl);
    if (found) {
      snprintf(version, cap, "%s", ver);
      break;
    }
    if (code < 0) {
      rc = SF_EINVAL;
      break;
    }
  }
  json_decref(groups);
  return rc;
}

/* A decimal number of 1 to 3 digits at s, its end in *end; -1 when there is none. */
static int small_number(const char *s, const char **end)
{
  int n = 0, digits = 0;
  for (; *s >= '0' && *s <= '9' && digits < 4; s++, digits++)
    n = n * 10 + (*s - '0');
  *end = s;
  return digits == 0 || digits > 3 ? -1 : n;
}

int sf_kube_version_parse(const char *text, int *minor)
{
  const char *p = text, *end;
  if (*p == 'v')
    p++;
  if (small_number(p, &end) != 1 || *end != '.')
    return SF_EINVAL;
  int m = small_number(end + 1, &end);
  if (m < 0 || (*end != '\0' && *end != '.' && *end != '-' && *end != '+'))
    return SF_EINVAL;
  *minor = m;
  return 0;
}

int sf_apiwatch_server_minor(const sf_kubeconfig_t *kc, unsigned timeout_ms, int *minor, char *err,
                             size_t errlen)
{
  json_t *v = NULL;
  long code = get_json(kc, "/version", timeout_ms, &v, err, errlen);
  if (v == NULL) {
    if (code >= 0)
      snprintf(err, errlen, "GET /version: HTTP %ld", code);
    return SF_EINVAL;
  }
  const char *major = json_string_value(json_object_get(v, "major"));
  const char *mi = json_string_value(json_object_get(v, "minor")), *end = "";
  int m = mi ? small_number(mi, &end) : -1;
  int rc = 0;
  if (!major || strcmp(major, "1") || m < 0 || (*end && strcmp(end, "+"))) {
    /* Some distributions leave major and minor empty: gitVersion ("v1.34.2-gke.1") then. */
    const char *git = json_string_value(json_object_get(v, "gitVersion"));
    if (!git || sf_kube_version_parse(git, &m) != 0) {
      snprintf(err, errlen, "GET /version: no Kubernetes 1.x version in the answer");
      rc = SF_EINVAL;
    }
  }
  if (rc == 0)
    *minor = m;
  json_decref(v);
  return rc;
}
