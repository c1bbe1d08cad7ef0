/*
 * The Alibaba GPU-sharing trace's two CSV files (replay_trace.c says how
 * input is checked).
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

#define MAX_FIELDS 32
#define MAX_LINE (1u << 20)

/* ---- CSV ---- */

typedef struct {
  const char *file;
  size_t line;
  char *buf;
  size_t cap;
  char *fields[MAX_FIELDS];
  size_t cols[MAX_FIELDS]; /* 1-based byte column of each field */
  size_t n;
  size_t len; /* length of the line before it was split */
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
      sf__replay_fail(err, errlen, c->file, c->line, 1, "line longer than %u bytes", MAX_LINE);
      return -1;
    }
    while (len > 0 && (c->buf[len - 1] == '\n' || c->buf[len - 1] == '\r'))
      c->buf[--len] = '\0';
    if (strlen(c->buf) != (size_t)len) {
      sf__replay_fail(err, errlen, c->file, c->line, strlen(c->buf) + 1, "NUL byte in a text file");
      return -1;
    }
    if (len == 0)
      continue;
    c->len = (size_t)len;
    c->n = 0;
    char *p = c->buf;
    for (;;) {
      if (c->n == MAX_FIELDS) {
        sf__replay_fail(err, errlen, c->file, c->line, (size_t)(p - c->buf) + 1,
                        "more than %d fields", MAX_FIELDS);
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
        sf__replay_fail(err, errlen, c->file, c->line, c->cols[i] + (size_t)(q - c->fields[i]),
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
  int at; /* column index in the file, or -1 */
} col_t;

static int csv_header(csv_t *c, FILE *f, col_t *cols, size_t ncols, const char *what, char *err,
                      size_t errlen)
{
  int r = csv_next(c, f, err, errlen);
  if (r < 0)
    return SF_EINVAL;
  if (r == 0) {
    sf__replay_fail(err, errlen, c->file, 0, 0, "empty file: expected a %s CSV with a header row",
                    what);
    return SF_EINVAL;
  }
  for (size_t k = 0; k < ncols; k++)
    cols[k].at = -1;
  for (size_t i = 0; i < c->n; i++) {
    for (size_t k = 0; k < ncols; k++) {
      if (strcmp(c->fields[i], cols[k].name) != 0)
        continue;
      if (cols[k].at >= 0) {
        sf__replay_fail(err, errlen, c->file, c->line, c->cols[i], "column '%s' appears twice",
                        cols[k].name);
        return SF_EINVAL;
      }
      cols[k].at = (int)i;
    }
  }
  for (size_t k = 0; k < ncols; k++) {
    if (cols[k].required && cols[k].at < 0) {
      sf__replay_fail(err, errlen, c->file, c->line, 1,
                      "missing column '%s' in the header of a %s CSV", cols[k].name, what);
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
    sf__replay_fail(err, errlen, c->file, c->line, c->cols[col->at],
                    "column '%s': expected an integer from 0 to %" PRId64 ", got '%s'", col->name,
                    max, s);
    return SF_EINVAL;
  }
  return 0;
}

static int csv_width(csv_t *c, size_t want, char *err, size_t errlen)
{
  if (c->n == want)
    return 0;
  sf__replay_fail(err, errlen, c->file, c->line, c->n > want ? c->cols[want] : c->len + 1,
                  "expected %zu fields as in the header, found %zu", want, c->n);
  return SF_EINVAL;
}

enum { N_SN, N_CPU, N_MEM, N_GPU, N_MODEL };

static int node_row(sf_replay_trace_t *t, csv_t *c, const col_t *cols, size_t width, char *err,
                    size_t errlen)
{
  int64_t cpu, mem, gpu;
  int rc;
  if ((rc = csv_width(c, width, err, errlen)) != 0)
    return rc;
  const char *name = c->fields[cols[N_SN].at];
  const char *model = cols[N_MODEL].at >= 0 ? c->fields[cols[N_MODEL].at] : "";
  if (!sf__replay_name_ok(name)) {
    sf__replay_fail(err, errlen, c->file, c->line, c->cols[cols[N_SN].at],
                    "column 'sn': bad node name '%s'", name);
    return SF_EINVAL;
  }
  if ((rc = csv_int(c, &cols[N_CPU], INT64_MAX / 4, &cpu, err, errlen)) != 0 ||
      (rc = csv_int(c, &cols[N_MEM], INT64_MAX >> 22, &mem, err, errlen)) != 0 ||
      (rc = csv_int(c, &cols[N_GPU], SF_REPLAY_MAX_GPUS, &gpu, err, errlen)) != 0)
    return rc;
  if (gpu > 0 && !sf__replay_name_ok(model)) {
    sf__replay_fail(err, errlen, c->file, c->line,
                    cols[N_MODEL].at >= 0 ? c->cols[cols[N_MODEL].at] : 1,
                    "column 'model': a node with %" PRId64 " GPUs needs a model name, got '%s'", gpu,
                    model);
    return SF_EINVAL;
  }
  if (gpu == 0 && *model != '\0') {
    sf__replay_fail(err, errlen, c->file, c->line, c->cols[cols[N_MODEL].at],
                    "column 'model': '%s' given for a node with no GPU", model);
    return SF_EINVAL;
  }
  for (size_t i = 0; i < t->nnodes; i++) {
    if (strcmp(t->nodes[i].name, name) == 0) {
      sf__replay_fail(err, errlen, c->file, c->line, c->cols[cols[N_SN].at],
                      "node '%s' appears twice", name);
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

typedef int (*row_fn)(sf_replay_trace_t *t, csv_t *c, const col_t *cols, size_t width, char *err,
                      size_t errlen);

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
    sf__replay_fail(err, errlen, name, 0, 0, "no %s rows after the header", what);
    rc = SF_EINVAL;
  }
out:
  free(c.buf);
  return rc;
}

int sf_replay_parse_nodes_csv(sf_replay_trace_t *t, FILE *f, const char *name, char *err,
                              size_t errlen)
{
  col_t cols[] = {{"sn", true, -1},
                  {"cpu_milli", true, -1},
                  {"memory_mib", true, -1},
                  {"gpu", true, -1},
                  {"model", false, -1}};
  return parse_csv(t, f, name, cols, sizeof(cols) / sizeof(cols[0]), "node", node_row, &t->nnodes,
                   err, errlen);
}

enum { P_NAME, P_CPU, P_MEM, P_NGPU, P_MILLI, P_SPEC, P_CREATED, P_DELETED };

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

static int pod_row(sf_replay_trace_t *t, csv_t *c, const col_t *cols, size_t width, char *err,
                   size_t errlen)
{
  int64_t cpu, mem, ngpu, milli, created = 0, deleted = -1;
  int rc;
  if ((rc = csv_width(c, width, err, errlen)) != 0)
    return rc;
  const char *name = c->fields[cols[P_NAME].at];
  if (!sf__replay_name_ok(name)) {
    sf__replay_fail(err, errlen, c->file, c->line, c->cols[cols[P_NAME].at],
                    "column 'name': bad pod name '%s'", name);
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
  /* The deletion time gives the churn replay its lifetime; empty: unknown (-1). */
  if (cols[P_DELETED].at >= 0 && c->fields[cols[P_DELETED].at][0] != '\0') {
    if ((rc = csv_int(c, &cols[P_DELETED], INT64_MAX / 4, &deleted, err, errlen)) != 0)
      return rc;
    if (deleted < created) {
      sf__replay_fail(err, errlen, c->file, c->line, c->cols[cols[P_DELETED].at],
                      "column 'deletion_time': %" PRId64 " before creation_time %" PRId64, deleted,
                      created);
      return SF_EINVAL;
    }
  }
  size_t mcol = c->cols[cols[P_MILLI].at];
  if (ngpu == 0 && milli != 0) {
    sf__replay_fail(err, errlen, c->file, c->line, mcol,
                    "column 'gpu_milli': %" PRId64 " for a pod with num_gpu 0", milli);
    return SF_EINVAL;
  }
  if (ngpu > 0 && milli == 0) {
    sf__replay_fail(err, errlen, c->file, c->line, mcol,
                    "column 'gpu_milli': 0 for a pod with num_gpu %" PRId64, ngpu);
    return SF_EINVAL;
  }
  if (ngpu > 1 && milli != 1000) {
    sf__replay_fail(err, errlen, c->file, c->line, mcol,
                    "column 'gpu_milli': a multi-GPU pod (num_gpu %" PRId64
                    ") must take whole GPUs (1000), got %" PRId64,
                    ngpu, milli);
    return SF_EINVAL;
  }
  const char *spec = cols[P_SPEC].at >= 0 ? c->fields[cols[P_SPEC].at] : "";
  for (const char *s = spec; *s; s++) {
    if ((unsigned char)*s <= ' ' || (unsigned char)*s >= 0x7f) {
      sf__replay_fail(err, errlen, c->file, c->line, c->cols[cols[P_SPEC].at] + (size_t)(s - spec),
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
  p->until = deleted;
  p->load_milli = ngpu * milli;
  pod_claims_alibaba(p);
  return 0;
}

int sf_replay_parse_pods_csv(sf_replay_trace_t *t, FILE *f, const char *name, char *err,
                             size_t errlen)
{
  col_t cols[] = {{"name", true, -1},           {"cpu_milli", true, -1},     {"memory_mib", true, -1},
                  {"num_gpu", true, -1},        {"gpu_milli", true, -1},     {"gpu_spec", false, -1},
                  {"creation_time", false, -1}, {"deletion_time", false, -1}};
  return parse_csv(t, f, name, cols, sizeof(cols) / sizeof(cols[0]), "pod", pod_row, &t->npods, err,
                   errlen);
}

static char *join_source(const char *a, const char *b)
{
  size_t n = strlen(a) + strlen(b) + 4;
  char *s = sf_xmalloc(n);
  snprintf(s, n, "%s + %s", a, b);
  return s;
}

int sf_replay_load_csv(sf_replay_trace_t *t, const char *nodes_path, const char *pods_path, char *err,
                       size_t errlen)
{
  FILE *f = NULL;
  int rc = SF_ENOENT;
  if ((f = sf__replay_open_input(nodes_path, err, errlen)) == NULL)
    goto out;
  if ((rc = sf_replay_parse_nodes_csv(t, f, nodes_path, err, errlen)) != 0)
    goto out;
  fclose(f);
  rc = SF_ENOENT;
  if ((f = sf__replay_open_input(pods_path, err, errlen)) == NULL)
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
    sf__replay_trace_reset(t);
  return rc;
}
