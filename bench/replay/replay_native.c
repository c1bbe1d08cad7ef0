/*
 * slicefit's native JSON-lines trace (docs/replay-format.md; replay_trace.c
 * says how input is checked).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "slicefit/quantity.h"
#include "slicefit/replay.h"
#include "replay_trace_int.h"

/* ---- native JSON lines ---- */

typedef struct {
  const char *file;
  size_t line;
  const char *text; /* the raw line, to point at a key's column */
  char *err;
  size_t errlen;
} jctx_t;

/* Column of the first occurrence of "key" in the line, for messages. */
static size_t key_col(const jctx_t *j, const char *key)
{
  char pat[80];
  snprintf(pat, sizeof(pat), "\"%s\"", key);
  const char *p = strstr(j->text, pat);
  return p != NULL ? (size_t)(p - j->text) + 1 : 1;
}

static int jfail(const jctx_t *j, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int jfail(const jctx_t *j, const char *key, const char *fmt, ...)
{
  char what[SF_REPLAY_ERR_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof(what), fmt, ap);
  va_end(ap);
  sf__replay_fail(j->err, j->errlen, j->file, j->line, key != NULL ? key_col(j, key) : 1, "%s", what);
  return SF_EINVAL;
}

static int check_keys(const jctx_t *j, json_t *obj, const char *const *known, const char *what)
{
  const char *k;
  json_t *v;
  json_object_foreach(obj, k, v)
  {
    bool ok = false;
    for (size_t i = 0; known[i] != NULL && !ok; i++)
      ok = strcmp(k, known[i]) == 0;
    if (!ok)
      return jfail(j, k, "unknown key '%s' in a %s", k, what);
  }
  return 0;
}

/* A quantity given as a string ("80Gi", "500m") or a JSON integer. */
static int jquantity(const jctx_t *j, json_t *obj, const char *key, bool required, sf_milli_t *out)
{
  json_t *v = json_object_get(obj, key);
  if (v == NULL) {
    if (required)
      return jfail(j, NULL, "missing key '%s'", key);
    *out = 0;
    return 0;
  }
  if (json_is_integer(v)) {
    json_int_t i = json_integer_value(v);
    if (i < 0 || i > INT64_MAX / 1000)
      return jfail(j, key, "'%s': %" JSON_INTEGER_FORMAT " is out of range", key, i);
    *out = (sf_milli_t)i * 1000;
    return 0;
  }
  if (!json_is_string(v))
    return jfail(j, key, "'%s': expected a quantity such as \"80Gi\"", key);
  int rc = sf_quantity_parse(json_string_value(v), out);
  if (rc != 0 || *out < 0)
    return jfail(j, key, "'%s': bad quantity '%s' (%s)", key, json_string_value(v),
                 rc != 0 ? sf_strerror(rc) : "negative");
  return 0;
}

static int juint(const jctx_t *j, json_t *obj, const char *key, bool required, int64_t min,
                 int64_t max, int64_t def, int64_t *out)
{
  json_t *v = json_object_get(obj, key);
  if (v == NULL) {
    if (required)
      return jfail(j, NULL, "missing key '%s'", key);
    *out = def;
    return 0;
  }
  if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
    return jfail(j, key, "'%s': expected an integer from %" PRId64 " to %" PRId64, key, min, max);
  *out = json_integer_value(v);
  return 0;
}

static int jname(const jctx_t *j, json_t *obj, const char *key, const char **out)
{
  json_t *v = json_object_get(obj, key);
  if (v == NULL)
    return jfail(j, NULL, "missing key '%s'", key);
  if (!json_is_string(v) || !sf__replay_name_ok(json_string_value(v)))
    return jfail(j, key, "'%s': expected a non-empty name without spaces or '|'", key);
  *out = json_string_value(v);
  return 0;
}

static int native_islands(const jctx_t *j, json_t *obj, sf_replay_node_t *n)
{
  json_t *v = json_object_get(obj, "islands");
  if (v == NULL)
    return 0;
  if (!json_is_array(v) || json_array_size(v) == 0)
    return jfail(j, "islands", "'islands': expected an array of island sizes, e.g. [4,4]");
  n->island_of = sf_xcalloc(n->ngpu ? n->ngpu : 1, sizeof(*n->island_of));
  uint32_t g = 0;
  for (size_t i = 0; i < json_array_size(v); i++) {
    json_t *s = json_array_get(v, i);
    if (!json_is_integer(s) || json_integer_value(s) < 1 ||
        json_integer_value(s) > (json_int_t)(n->ngpu - g))
      return jfail(j, "islands",
                   "'islands'[%zu]: island sizes must be >= 1 and add up to 'gpus' (%u)", i, n->ngpu);
    for (json_int_t k = 0; k < json_integer_value(s); k++)
      n->island_of[g++] = (uint32_t)i;
  }
  if (g != n->ngpu)
    return jfail(j, "islands", "'islands': sizes add up to %u, but the node has %u GPUs", g, n->ngpu);
  return 0;
}

static int native_node(sf_replay_trace_t *t, const jctx_t *j, json_t *obj)
{
  static const char *const known[] = {"kind",  "name",       "cpu",     "memory", "gpus",
                                      "model", "gpu_memory", "islands", NULL};
  const char *name, *model = "";
  sf_milli_t cpu, mem, gmem;
  int64_t gpus;
  int rc;
  if ((rc = check_keys(j, obj, known, "node")) != 0 || (rc = jname(j, obj, "name", &name)) != 0 ||
      (rc = jquantity(j, obj, "cpu", true, &cpu)) != 0 ||
      (rc = jquantity(j, obj, "memory", true, &mem)) != 0 ||
      (rc = juint(j, obj, "gpus", false, 0, SF_REPLAY_MAX_GPUS, 0, &gpus)) != 0 ||
      (rc = jquantity(j, obj, "gpu_memory", gpus > 0, &gmem)) != 0)
    return rc;
  if (gpus > 0 && (rc = jname(j, obj, "model", &model)) != 0)
    return rc;
  if (gpus > 0 && gmem <= 0)
    return jfail(j, "gpu_memory", "'gpu_memory' must be positive");
  for (size_t i = 0; i < t->nnodes; i++)
    if (strcmp(t->nodes[i].name, name) == 0)
      return jfail(j, "name", "node '%s' appears twice", name);
  t->nodes = sf_xrealloc(t->nodes, (t->nnodes + 1) * sizeof(*t->nodes));
  sf_replay_node_t *n = &t->nodes[t->nnodes++];
  memset(n, 0, sizeof(*n));
  n->name = sf_xstrdup(name);
  n->model = sf_xstrdup(model);
  n->cpu_milli = cpu;
  n->mem_bytes = mem / 1000;
  n->ngpu = (uint32_t)gpus;
  n->gpu_mem = gmem;
  if ((rc = native_islands(j, obj, n)) != 0)
    return rc;
  if (n->island_of != NULL)
    t->has_islands = true;
  return 0;
}

static int native_models(sf_replay_trace_t *t, const jctx_t *j, json_t *req, uint32_t *spec)
{
  json_t *v = json_object_get(req, "models");
  *spec = 0;
  if (v == NULL)
    return 0;
  if (!json_is_array(v))
    return jfail(j, "models", "'models': expected an array of model names");
  size_t len = 1;
  for (size_t i = 0; i < json_array_size(v); i++) {
    json_t *m = json_array_get(v, i);
    if (!json_is_string(m) || !sf__replay_name_ok(json_string_value(m)))
      return jfail(j, "models", "'models'[%zu]: expected a model name", i);
    len += strlen(json_string_value(m)) + 1;
  }
  char *joined = sf_xcalloc(1, len);
  for (size_t i = 0; i < json_array_size(v); i++) {
    if (i > 0)
      strcat(joined, "|");
    strcat(joined, json_string_value(json_array_get(v, i)));
  }
  *spec = sf_replay_spec_intern(t, joined);
  free(joined);
  return 0;
}

static int native_claim(sf_replay_trace_t *t, const jctx_t *j, json_t *obj, sf_replay_claim_t *c)
{
  static const char *const kclaim[] = {"requests", "island", NULL};
  static const char *const kreq[] = {"count", "memory", "models", NULL};
  int rc;
  if (!json_is_object(obj))
    return jfail(j, "claims", "'claims': each claim must be an object");
  if ((rc = check_keys(j, obj, kclaim, "claim")) != 0)
    return rc;
  json_t *isl = json_object_get(obj, "island"), *reqs = json_object_get(obj, "requests");
  if (isl != NULL && !json_is_boolean(isl))
    return jfail(j, "island", "'island': expected true or false");
  c->island = isl != NULL && json_is_true(isl);
  if (!json_is_array(reqs) || json_array_size(reqs) == 0 || json_array_size(reqs) > 16)
    return jfail(j, "requests", "'requests': expected an array of 1 to 16 requests");
  c->reqs = sf_xcalloc(json_array_size(reqs), sizeof(*c->reqs));
  for (size_t i = 0; i < json_array_size(reqs); i++) {
    json_t *r = json_array_get(reqs, i);
    int64_t count;
    sf_replay_req_t *q = &c->reqs[c->nreqs++];
    if (!json_is_object(r))
      return jfail(j, "requests", "'requests'[%zu]: expected an object", i);
    if ((rc = check_keys(j, r, kreq, "request")) != 0 ||
        (rc = juint(j, r, "count", false, 1, SF_REPLAY_MAX_GPUS, 1, &count)) != 0 ||
        (rc = jquantity(j, r, "memory", false, &q->amount)) != 0 ||
        (rc = native_models(t, j, r, &q->spec)) != 0)
      return rc;
    q->count = (uint32_t)count;
  }
  return 0;
}

static int native_pod(sf_replay_trace_t *t, const jctx_t *j, json_t *obj)
{
  static const char *const known[] = {"kind", "name", "at", "until", "cpu", "memory", "claims", NULL};
  const char *name;
  sf_milli_t cpu, mem;
  int64_t at, until;
  int rc;
  if ((rc = check_keys(j, obj, known, "pod")) != 0 || (rc = jname(j, obj, "name", &name)) != 0 ||
      (rc = juint(j, obj, "at", true, 0, INT64_MAX / 4, 0, &at)) != 0 ||
      (rc = juint(j, obj, "until", false, 0, INT64_MAX / 4, -1, &until)) != 0 ||
      (rc = jquantity(j, obj, "cpu", false, &cpu)) != 0 ||
      (rc = jquantity(j, obj, "memory", false, &mem)) != 0)
    return rc;
  if (until >= 0 && until <= at)
    return jfail(j, "until", "'until' (%" PRId64 ") must be after 'at' (%" PRId64 ")", until, at);
  json_t *claims = json_object_get(obj, "claims");
  if (claims != NULL && (!json_is_array(claims) || json_array_size(claims) > 16))
    return jfail(j, "claims", "'claims': expected an array of at most 16 claims");
  t->pods = sf_xrealloc(t->pods, (t->npods + 1) * sizeof(*t->pods));
  sf_replay_pod_t *p = &t->pods[t->npods++];
  memset(p, 0, sizeof(*p));
  p->name = sf_xstrdup(name);
  p->cpu_milli = cpu;
  p->mem_bytes = mem / 1000;
  p->at = at;
  p->until = until;
  size_t nc = claims != NULL ? json_array_size(claims) : 0;
  p->claims = nc ? sf_xcalloc(nc, sizeof(*p->claims)) : NULL;
  for (size_t i = 0; i < nc; i++) {
    p->nclaims++;
    if ((rc = native_claim(t, j, json_array_get(claims, i), &p->claims[i])) != 0)
      return rc;
  }
  return 0;
}

static int native_line(sf_replay_trace_t *t, const jctx_t *j, size_t len)
{
  json_error_t jerr;
  json_t *obj = json_loadb(j->text, len, JSON_REJECT_DUPLICATES, &jerr);
  int rc;
  if (obj == NULL) {
    sf__replay_fail(j->err, j->errlen, j->file, j->line, jerr.column > 0 ? (size_t)jerr.column : 1,
                    "bad JSON: %s", jerr.text);
    return SF_EINVAL;
  }
  json_t *kind = json_object_get(obj, "kind");
  if (!json_is_object(obj))
    rc = jfail(j, NULL, "each line must be a JSON object");
  else if (!json_is_string(kind))
    rc = jfail(j, NULL, "missing key 'kind' (\"node\" or \"pod\")");
  else if (strcmp(json_string_value(kind), "node") == 0)
    rc = native_node(t, j, obj);
  else if (strcmp(json_string_value(kind), "pod") == 0)
    rc = native_pod(t, j, obj);
  else
    rc = jfail(j, "kind", "'kind': expected \"node\" or \"pod\", got \"%s\"",
               json_string_value(kind));
  json_decref(obj);
  return rc;
}

/*
 * The x-axis of a native trace: a request's share of one GPU is its memory
 * over the memory of the smallest GPU it may take (whole GPUs count 1000).
 */
static void native_loads(sf_replay_trace_t *t)
{
  for (size_t i = 0; i < t->npods; i++) {
    sf_replay_pod_t *p = &t->pods[i];
    p->load_milli = 0;
    for (size_t c = 0; c < p->nclaims; c++) {
      for (size_t r = 0; r < p->claims[c].nreqs; r++) {
        const sf_replay_req_t *q = &p->claims[c].reqs[r];
        sf_milli_t ref = 0;
        for (size_t n = 0; n < t->nnodes; n++) {
          const sf_replay_node_t *nd = &t->nodes[n];
          bool ok = q->spec == 0;
          for (size_t m = 0; !ok && m < t->specs[q->spec].n; m++)
            ok = strcmp(t->specs[q->spec].models[m], nd->model) == 0;
          if (ok && nd->ngpu > 0 && (ref == 0 || nd->gpu_mem < ref))
            ref = nd->gpu_mem;
        }
        int64_t share = 1000;
        if (q->amount > 0 && ref > 0 && q->amount < ref)
          share = (int64_t)((double)q->amount * 1000.0 / (double)ref + 0.5);
        p->load_milli += (int64_t)q->count * share;
      }
    }
    if (p->nclaims == 1 && p->claims[0].nreqs == 1) {
      p->num_gpu = p->claims[0].reqs[0].count;
      p->gpu_milli = (int32_t)(p->load_milli / p->num_gpu);
      p->spec = p->claims[0].reqs[0].spec;
    }
  }
}

int sf_replay_parse_native(sf_replay_trace_t *t, FILE *f, const char *name, char *err, size_t errlen)
{
  char *buf = NULL;
  size_t cap = 0, line = 0;
  ssize_t len;
  int rc = 0;
  t->native = true;
  while ((len = getline(&buf, &cap, f)) >= 0) {
    line++;
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
      buf[--len] = '\0';
    size_t skip = strspn(buf, " \t");
    if (buf[skip] == '\0' || buf[skip] == '#')
      continue;
    jctx_t j = {name, line, buf, err, errlen};
    if ((rc = native_line(t, &j, (size_t)len)) != 0)
      break;
  }
  free(buf);
  if (rc == 0 && line == 0) {
    sf__replay_fail(err, errlen, name, 0, 0, "empty file: expected JSON lines of nodes and pods");
    rc = SF_EINVAL;
  } else if (rc == 0 && (t->nnodes == 0 || t->npods == 0)) {
    sf__replay_fail(err, errlen, name, 0, 0,
                    "the trace needs at least one node and one pod (found %zu and %zu)", t->nnodes,
                    t->npods);
    rc = SF_EINVAL;
  }
  if (rc == 0)
    native_loads(t);
  return rc;
}

int sf_replay_load_native(sf_replay_trace_t *t, const char *path, char *err, size_t errlen)
{
  FILE *f = sf__replay_open_input(path, err, errlen);
  int rc = SF_ENOENT;
  if (f == NULL)
    goto out;
  rc = sf_replay_parse_native(t, f, path, err, errlen);
  fclose(f);
  if (rc == 0) {
    free(t->source);
    t->source = sf_xstrdup(path);
  }
out:
  if (rc != 0)
    sf__replay_trace_reset(t);
  return rc;
}
