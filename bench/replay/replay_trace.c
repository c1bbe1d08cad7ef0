/*
 * Trace loading for the replay: the Alibaba GPU-sharing trace's two CSV
 * files and slicefit's native JSON-lines format (docs/replay-format.md).
 * This file has what both loaders share; the parsers are replay_csv.c and
 * replay_native.c.
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
#include "replay_trace_int.h"

const int sf_replay_thresholds[SF_REPLAY_NTHRESH] = {50, 80, 90, 95, 100, 105, 110, 120, 130};

void sf__replay_fail(char *err, size_t errlen, const char *file, size_t line, size_t col,
                     const char *fmt, ...)
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

void sf__replay_trace_reset(sf_replay_trace_t *t)
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

/* ---- names and files ---- */

bool sf__replay_name_ok(const char *s)
{
  if (*s == '\0' || strlen(s) > 253)
    return false;
  for (; *s; s++)
    if ((unsigned char)*s <= ' ' || *s == '|' || (unsigned char)*s >= 0x7f)
      return false;
  return true;
}

FILE *sf__replay_open_input(const char *path, char *err, size_t errlen)
{
  FILE *f = fopen(path, "r");
  if (f == NULL)
    sf__replay_fail(err, errlen, path, 0, 0, "cannot open: %s", strerror(errno));
  return f;
}
