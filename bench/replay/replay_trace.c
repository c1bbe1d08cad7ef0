/*
 * Trace loading for the replay: the Alibaba GPU-sharing trace's two CSV
 * files and slicefit's native JSON-lines format (docs/replay-format.md).
 *
 * Input becomes untrusted here. Every row is checked (column count, integer
 * syntax and range, the trace's own invariants such as "gpu_milli is 1000
 * for multi-GPU pods") and the first bad one stops the load with
 * "FILE:LINE:COL: problem". A failed load leaves the trace empty.
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

#define MAX_FIELDS 32
#define MAX_LINE (1u << 20)

const int sf_replay_thresholds[SF_REPLAY_NTHRESH] = {50, 80, 90, 95, 100, 105, 110, 120, 130};

static void fail(char *err, size_t errlen, const char *file, size_t line, size_t col, const char *fmt,
                 ...) __attribute__((format(printf, 6, 7)));

static void fail(char *err, size_t errlen, const char *file, size_t line, size_t col, const char *fmt, ...)
{
  int n;
  va_list ap;
  if (err == NULL || errlen == 0)
    return;
  if (line > 0)
    n = snprintf(err, errlen, "%s:%zu:%zu: ", file, line, col);
  else
    n = snprintf(err, errlen, "%s: ", file);
  if (n < 0 || (size_t)n >= errlen)
    return;
  va_start(ap, fmt);
  vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
  va_end(ap);
}

/* ---- trace lifecycle ---- */

void sf_replay_trace_init(sf_replay_trace_t *t)
{
  memset(t, 0, sizeof(*t));
  t->specs = sf_xcalloc(1, sizeof(*t->specs));
  t->specs[0].key = sf_xstrdup("");
  t->nspecs = 1;
}

static void pod_dispose(sf_replay_pod_t *p)
{
  for (size_t c = 0; c < p->nclaims; c++)
    free(p->claims[c].reqs);
  free(p->claims);
  free(p->name);
}

void sf_replay_trace_dispose(sf_replay_trace_t *t)
{
  for (size_t i = 0; i < t->nnodes; i++) {
    free(t->nodes[i].name);
    free(t->nodes[i].model);
    free(t->nodes[i].island_of);
  }
  for (size_t i = 0; i < t->npods; i++)
    pod_dispose(&t->pods[i]);
  for (size_t i = 0; i < t->nspecs; i++) {
    for (size_t j = 0; j < t->specs[i].n; j++)
      free(t->specs[i].models[j]);
    free(t->specs[i].models);
    free(t->specs[i].key);
  }
  free(t->nodes);
  free(t->pods);
  free(t->specs);
  free(t->source);
  memset(t, 0, sizeof(*t));
}

static void trace_reset(sf_replay_trace_t *t)
{
  sf_replay_trace_dispose(t);
  sf_replay_trace_init(t);
}

int64_t sf_replay_gpu_milli(const sf_replay_trace_t *t)
{
  int64_t sum = 0;
  for (size_t i = 0; i < t->nnodes; i++)
    sum += (int64_t)t->nodes[i].ngpu * 1000;
  return sum;
}

/* ---- model sets ---- */

static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

uint32_t sf_replay_spec_intern(sf_replay_trace_t *t, const char *spec)
{
  char *copy = sf_xstrdup(spec), *save = NULL;
  char **models = NULL;
  size_t n = 0, cap = 0, keylen = 1;
  for (char *tok = strtok_r(copy, "|", &save); tok != NULL; tok = strtok_r(NULL, "|", &save)) {
    if (*tok == '\0')
      continue;
    sf_xgrow(&models, &cap, n + 1, sizeof(*models));
    models[n++] = tok;
  }
  if (n > 1)
    qsort(models, n, sizeof(*models), cmp_str);
  /* The trace repeats models ("V100M16|V100M32|V100M32"): a set, not a list. */
  size_t u = 0;
  for (size_t i = 0; i < n; i++)
    if (u == 0 || strcmp(models[u - 1], models[i]) != 0)
      models[u++] = models[i];
  n = u;
  for (size_t i = 0; i < n; i++)
    keylen += strlen(models[i]) + 1;
  char *key = sf_xcalloc(1, keylen);
  for (size_t i = 0; i < n; i++) {
    if (i > 0)
      strcat(key, "|");
    strcat(key, models[i]);
  }
  uint32_t id = 0;
  for (size_t i = 0; i < t->nspecs && n > 0; i++)
    if (strcmp(t->specs[i].key, key) == 0)
      id = (uint32_t)i;
  if (id == 0 && n > 0) {
    t->specs = sf_xrealloc(t->specs, (t->nspecs + 1) * sizeof(*t->specs));
    sf_replay_spec_t *s = &t->specs[t->nspecs];
    s->models = sf_xcalloc(n, sizeof(*s->models));
    for (size_t i = 0; i < n; i++)
      s->models[i] = sf_xstrdup(models[i]);
    s->n = n;
    s->key = key;
    key = NULL;
    id = (uint32_t)t->nspecs++;
  }
  free(key);
  free(models);
  free(copy);
  return id;
}

/* ---- CSV ---- */

typedef struct {
  const char *file;
  size_t line;
  char *buf;
  size_t cap;
  char *fields[MAX_FIELDS];
  size_t cols[MAX_FIELDS];     /* 1-based byte column of each field */
  size_t n;
  size_t len;                  /* length of the line before it was split */
} csv_t;

/* Reads and splits the next non-blank line: 1, 0 at end of file, or -1 (err filled). */
static int csv_next(csv_t *c, FILE *f, char *err, size_t errlen)
{
  for (;;) {
    ssize_t len = getline(&c->buf, &c->cap, f);
    if (len < 0)
      return 0;
    c->line++;
    if ((size_t)len > MAX_LINE) {
      fail(err, errlen, c->file, c->line, 1, "line longer than %u bytes", MAX_LINE);
      return -1;
    }
    while (len > 0 && (c->buf[len - 1] == '\n' || c->buf[len - 1] == '\r'))
      c->buf[--len] = '\0';
    if (strlen(c->buf) != (size_t)len) {
      fail(err, errlen, c->file, c->line, strlen(c->buf) + 1, "NUL byte in a text file");
      return -1;
    }
    if (len == 0)
      continue;
    c->len = (size_t)len;
    c->n = 0;
    char *p = c->buf;
    for (;;) {
      if (c->n == MAX_FIELDS) {
        fail(err, errlen, c->file, c->line, (size_t)(p - c->buf) + 1, "more than %d fields", MAX_FIELDS);
        return -1;
      }
      c->fields[c->n] = p;
      c->cols[c->n++] = (size_t)(p - c->buf) + 1;
      char *comma = strchr(p, ',');
      if (comma == NULL)
        break;
      *comma = '\0';
      p = comma + 1;
    }
    for (size_t i = 0; i < c->n; i++) {
      char *q = strchr(c->fields[i], '"');
      if (q != NULL) {
        fail(err, errlen, c->file, c->line, c->cols[i] + (size_t)(q - c->fields[i]),
             "quoted fields are not supported in trace CSVs");
        return -1;
      }
    }
    return 1;
  }
}

/* Parses a whole non-negative decimal integer no larger than max. */
static int parse_uint(const char *s, int64_t max, int64_t *out)
{
  if (*s < '0' || *s > '9')
    return -1;
  int64_t v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9')
      return -1;
    if (v > (max - (*s - '0')) / 10)
      return -1;
    v = v * 10 + (*s - '0');
  }
  *out = v;
  return 0;
}

typedef struct {
  const char *name;
  bool required;
  int at;                      /* column index in the file, or -1 */
} col_t;

static int csv_header(csv_t *c, FILE *f, col_t *cols, size_t ncols, const char *what,
                      char *err, size_t errlen)
{
  int r = csv_next(c, f, err, errlen);
  if (r < 0)
    return SF_EINVAL;
  if (r == 0) {
    fail(err, errlen, c->file, 0, 0, "empty file: expected a %s CSV with a header row", what);
    return SF_EINVAL;
  }
  for (size_t k = 0; k < ncols; k++)
    cols[k].at = -1;
  for (size_t i = 0; i < c->n; i++) {
    for (size_t k = 0; k < ncols; k++) {
      if (strcmp(c->fields[i], cols[k].name) != 0)
        continue;
      if (cols[k].at >= 0) {
        fail(err, errlen, c->file, c->line, c->cols[i], "column '%s' appears twice", cols[k].name);
        return SF_EINVAL;
      }
      cols[k].at = (int)i;
    }
  }
  for (size_t k = 0; k < ncols; k++) {
    if (cols[k].required && cols[k].at < 0) {
      fail(err, errlen, c->file, c->line, 1, "missing column '%s' in the header of a %s CSV", cols[k].name,
           what);
      return SF_EINVAL;
    }
  }
  return 0;
}

/* Fetches integer column k of the current row, checking its range. */
static int csv_int(csv_t *c, const col_t *col, int64_t max, int64_t *out, char *err, size_t errlen)
{
  const char *s = c->fields[col->at];
  if (parse_uint(s, max, out) != 0) {
    fail(err, errlen, c->file, c->line, c->cols[col->at],
         "column '%s': expected an integer from 0 to %" PRId64 ", got '%s'", col->name, max, s);
    return SF_EINVAL;
  }
  return 0;
}

static int csv_width(csv_t *c, size_t want, char *err, size_t errlen)
{
  if (c->n == want)
    return 0;
  fail(err, errlen, c->file, c->line, c->n > want ? c->cols[want] : c->len + 1,
       "expected %zu fields as in the header, found %zu", want, c->n);
  return SF_EINVAL;
}

static bool name_ok(const char *s)
{
  if (*s == '\0' || strlen(s) > 253)
    return false;
  for (; *s; s++)
    if ((unsigned char)*s <= ' ' || *s == '|' || (unsigned char)*s >= 0x7f)
      return false;
  return true;
}

enum { N_SN, N_CPU, N_MEM, N_GPU, N_MODEL };

static int node_row(sf_replay_trace_t *t, csv_t *c, const col_t *cols, size_t width,
                    char *err, size_t errlen)
{
  int64_t cpu, mem, gpu;
  int rc;
  if ((rc = csv_width(c, width, err, errlen)) != 0)
    return rc;
  const char *name = c->fields[cols[N_SN].at];
  const char *model = cols[N_MODEL].at >= 0 ? c->fields[cols[N_MODEL].at] : "";
  if (!name_ok(name)) {
    fail(err, errlen, c->file, c->line, c->cols[cols[N_SN].at], "column 'sn': bad node name '%s'", name);
    return SF_EINVAL;
  }
  if ((rc = csv_int(c, &cols[N_CPU], INT64_MAX / 4, &cpu, err, errlen)) != 0 ||
      (rc = csv_int(c, &cols[N_MEM], INT64_MAX >> 22, &mem, err, errlen)) != 0 ||
      (rc = csv_int(c, &cols[N_GPU], SF_REPLAY_MAX_GPUS, &gpu, err, errlen)) != 0)
    return rc;
  if (gpu > 0 && !name_ok(model)) {
    fail(err, errlen, c->file, c->line, cols[N_MODEL].at >= 0 ? c->cols[cols[N_MODEL].at] : 1,
         "column 'model': a node with %" PRId64 " GPUs needs a model name, got '%s'", gpu, model);
    return SF_EINVAL;
  }
  if (gpu == 0 && *model != '\0') {
    fail(err, errlen, c->file, c->line, c->cols[cols[N_MODEL].at],
         "column 'model': '%s' given for a node with no GPU", model);
    return SF_EINVAL;
  }
  for (size_t i = 0; i < t->nnodes; i++) {
    if (strcmp(t->nodes[i].name, name) == 0) {
      fail(err, errlen, c->file, c->line, c->cols[cols[N_SN].at], "node '%s' appears twice", name);
      return SF_EINVAL;
    }
  }
  t->nodes = sf_xrealloc(t->nodes, (t->nnodes + 1) * sizeof(*t->nodes));
  sf_replay_node_t *n = &t->nodes[t->nnodes++];
  memset(n, 0, sizeof(*n));
  n->name = sf_xstrdup(name);
  n->model = sf_xstrdup(model);
  n->cpu_milli = cpu;
  n->mem_bytes = mem << 20;
  n->ngpu = (uint32_t)gpu;
  return 0;
}

typedef int (*row_fn)(sf_replay_trace_t *t, csv_t *c, const col_t *cols, size_t width,
                      char *err, size_t errlen);

/* Reads a header naming `cols`, then every row through `row`; at least one row is required. */
static int parse_csv(sf_replay_trace_t *t, FILE *f, const char *name, col_t *cols, size_t ncols,
                     const char *what, row_fn row, const size_t *count, char *err, size_t errlen)
{
  csv_t c = {.file = name};
  size_t before = *count, width;
  int rc = csv_header(&c, f, cols, ncols, what, err, errlen);
  if (rc != 0)
    goto out;
  width = c.n;
  for (;;) {
    int r = csv_next(&c, f, err, errlen);
    if (r <= 0) {
      rc = r < 0 ? SF_EINVAL : 0;
      break;
    }
    if ((rc = row(t, &c, cols, width, err, errlen)) != 0)
      break;
  }
  if (rc == 0 && *count == before) {
    fail(err, errlen, name, 0, 0, "no %s rows after the header", what);
    rc = SF_EINVAL;
  }
out:
  free(c.buf);
  return rc;
}

int sf_replay_parse_nodes_csv(sf_replay_trace_t *t, FILE *f, const char *name, char *err, size_t errlen)
{
  col_t cols[] = {{"sn", true, -1}, {"cpu_milli", true, -1}, {"memory_mib", true, -1},
                  {"gpu", true, -1}, {"model", false, -1}};
  return parse_csv(t, f, name, cols, sizeof(cols) / sizeof(cols[0]), "node", node_row, &t->nnodes, err, errlen);
}

enum { P_NAME, P_CPU, P_MEM, P_NGPU, P_MILLI, P_SPEC, P_CREATED };

static void pod_claims_alibaba(sf_replay_pod_t *p)
{
  if (p->num_gpu == 0)
    return;
  p->claims = sf_xcalloc(1, sizeof(*p->claims));
  p->nclaims = 1;
  p->claims[0].reqs = sf_xcalloc(1, sizeof(sf_replay_req_t));
  p->claims[0].nreqs = 1;
  p->claims[0].reqs[0].count = p->num_gpu;
  p->claims[0].reqs[0].amount = p->gpu_milli;
  p->claims[0].reqs[0].spec = p->spec;
}

static int pod_row(sf_replay_trace_t *t, csv_t *c, const col_t *cols, size_t width,
                   char *err, size_t errlen)
{
  int64_t cpu, mem, ngpu, milli, created = 0;
  int rc;
  if ((rc = csv_width(c, width, err, errlen)) != 0)
    return rc;
  const char *name = c->fields[cols[P_NAME].at];
  if (!name_ok(name)) {
    fail(err, errlen, c->file, c->line, c->cols[cols[P_NAME].at], "column 'name': bad pod name '%s'", name);
    return SF_EINVAL;
  }
  if ((rc = csv_int(c, &cols[P_CPU], INT64_MAX / 4, &cpu, err, errlen)) != 0 ||
      (rc = csv_int(c, &cols[P_MEM], INT64_MAX >> 22, &mem, err, errlen)) != 0 ||
      (rc = csv_int(c, &cols[P_NGPU], SF_REPLAY_MAX_GPUS, &ngpu, err, errlen)) != 0 ||
      (rc = csv_int(c, &cols[P_MILLI], 1000, &milli, err, errlen)) != 0)
    return rc;
  /* The creation time orders the history for --search's split; an empty cell counts as 0. */
  if (cols[P_CREATED].at >= 0 && c->fields[cols[P_CREATED].at][0] != '\0' &&
      (rc = csv_int(c, &cols[P_CREATED], INT64_MAX / 4, &created, err, errlen)) != 0)
    return rc;
  size_t mcol = c->cols[cols[P_MILLI].at];
  if (ngpu == 0 && milli != 0) {
    fail(err, errlen, c->file, c->line, mcol, "column 'gpu_milli': %" PRId64 " for a pod with num_gpu 0",
         milli);
    return SF_EINVAL;
  }
  if (ngpu > 0 && milli == 0) {
    fail(err, errlen, c->file, c->line, mcol, "column 'gpu_milli': 0 for a pod with num_gpu %" PRId64,
         ngpu);
    return SF_EINVAL;
  }
  if (ngpu > 1 && milli != 1000) {
    fail(err, errlen, c->file, c->line, mcol,
         "column 'gpu_milli': a multi-GPU pod (num_gpu %" PRId64 ") must take whole GPUs (1000), got %" PRId64,
         ngpu, milli);
    return SF_EINVAL;
  }
  const char *spec = cols[P_SPEC].at >= 0 ? c->fields[cols[P_SPEC].at] : "";
  for (const char *s = spec; *s; s++) {
    if ((unsigned char)*s <= ' ' || (unsigned char)*s >= 0x7f) {
      fail(err, errlen, c->file, c->line, c->cols[cols[P_SPEC].at] + (size_t)(s - spec),
           "column 'gpu_spec': unexpected character in '%s'", spec);
      return SF_EINVAL;
    }
  }
  t->pods = sf_xrealloc(t->pods, (t->npods + 1) * sizeof(*t->pods));
  sf_replay_pod_t *p = &t->pods[t->npods++];
  memset(p, 0, sizeof(*p));
  p->name = sf_xstrdup(name);
  p->cpu_milli = cpu;
  p->mem_bytes = mem << 20;
  p->num_gpu = (uint32_t)ngpu;
  p->gpu_milli = (int32_t)milli;
  p->spec = ngpu > 0 ? sf_replay_spec_intern(t, spec) : 0;
  p->at = created;
  p->until = -1;
  p->load_milli = ngpu * milli;
  pod_claims_alibaba(p);
  return 0;
}

int sf_replay_parse_pods_csv(sf_replay_trace_t *t, FILE *f, const char *name, char *err, size_t errlen)
{
  col_t cols[] = {{"name", true, -1},    {"cpu_milli", true, -1}, {"memory_mib", true, -1},
                  {"num_gpu", true, -1}, {"gpu_milli", true, -1}, {"gpu_spec", false, -1},
                  {"creation_time", false, -1}};
  return parse_csv(t, f, name, cols, sizeof(cols) / sizeof(cols[0]), "pod", pod_row, &t->npods, err, errlen);
}

static FILE *open_input(const char *path, char *err, size_t errlen)
{
  FILE *f = fopen(path, "r");
  if (f == NULL)
    fail(err, errlen, path, 0, 0, "cannot open: %s", strerror(errno));
  return f;
}

static char *join_source(const char *a, const char *b)
{
  size_t n = strlen(a) + strlen(b) + 4;
  char *s = sf_xmalloc(n);
  snprintf(s, n, "%s + %s", a, b);
  return s;
}

int sf_replay_load_csv(sf_replay_trace_t *t, const char *nodes_path, const char *pods_path,
                       char *err, size_t errlen)
{
  FILE *f = NULL;
  int rc = SF_ENOENT;
  if ((f = open_input(nodes_path, err, errlen)) == NULL)
    goto out;
  if ((rc = sf_replay_parse_nodes_csv(t, f, nodes_path, err, errlen)) != 0)
    goto out;
  fclose(f);
  rc = SF_ENOENT;
  if ((f = open_input(pods_path, err, errlen)) == NULL)
    goto out;
  rc = sf_replay_parse_pods_csv(t, f, pods_path, err, errlen);
  if (rc == 0) {
    free(t->source);
    t->source = join_source(nodes_path, pods_path);
  }
out:
  if (f != NULL)
    fclose(f);
  if (rc != 0)
    trace_reset(t);
  return rc;
}

/* ---- native JSON lines ---- */

typedef struct {
  const char *file;
  size_t line;
  const char *text;            /* the raw line, to point at a key's column */
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
  fail(j->err, j->errlen, j->file, j->line, key != NULL ? key_col(j, key) : 1, "%s", what);
  return SF_EINVAL;
}

static int check_keys(const jctx_t *j, json_t *obj, const char *const *known, const char *what)
{
  const char *k;
  json_t *v;
  json_object_foreach(obj, k, v) {
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
  if (!json_is_string(v) || !name_ok(json_string_value(v)))
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
      return jfail(j, "islands", "'islands'[%zu]: island sizes must be >= 1 and add up to 'gpus' (%u)",
                   i, n->ngpu);
    for (json_int_t k = 0; k < json_integer_value(s); k++)
      n->island_of[g++] = (uint32_t)i;
  }
  if (g != n->ngpu)
    return jfail(j, "islands", "'islands': sizes add up to %u, but the node has %u GPUs", g, n->ngpu);
  return 0;
}

static int native_node(sf_replay_trace_t *t, const jctx_t *j, json_t *obj)
{
  static const char *const known[] = {"kind", "name", "cpu", "memory", "gpus", "model",
                                      "gpu_memory", "islands", NULL};
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
    if (!json_is_string(m) || !name_ok(json_string_value(m)))
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
    fail(j->err, j->errlen, j->file, j->line, jerr.column > 0 ? (size_t)jerr.column : 1, "bad JSON: %s",
         jerr.text);
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
    rc = jfail(j, "kind", "'kind': expected \"node\" or \"pod\", got \"%s\"", json_string_value(kind));
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
    fail(err, errlen, name, 0, 0, "empty file: expected JSON lines of nodes and pods");
    rc = SF_EINVAL;
  } else if (rc == 0 && (t->nnodes == 0 || t->npods == 0)) {
    fail(err, errlen, name, 0, 0, "the trace needs at least one node and one pod (found %zu and %zu)",
         t->nnodes, t->npods);
    rc = SF_EINVAL;
  }
  if (rc == 0)
    native_loads(t);
  return rc;
}

int sf_replay_load_native(sf_replay_trace_t *t, const char *path, char *err, size_t errlen)
{
  FILE *f = open_input(path, err, errlen);
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
    trace_reset(t);
  return rc;
}
