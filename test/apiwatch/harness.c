/* See harness.h. */
#define _GNU_SOURCE
#include "harness.h"
#include <criterion/criterion.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

const char *tool_path(const char *name)
{
  static char path[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 64);
  cr_assert(n > 0);
  path[n] = '\0';
  char *slash = strrchr(path, '/');
  snprintf(slash + 1, sizeof path - (size_t)(slash + 1 - path), "tools/%s", name);
  return path;
}

void fake_start(fake_t *f, const char *const *args)
{
  int to[2], from[2];
  cr_assert(pipe(to) == 0 && pipe(from) == 0);
  const char *argv[8] = {tool_path("fake-apiserver")};
  for (int i = 0; args && args[i] && i < 6; i++)
    argv[i + 1] = args[i];
  f->pid = fork();
  cr_assert(f->pid >= 0);
  if (f->pid == 0) {
    dup2(to[0], 0);
    dup2(from[1], 1);
    close(to[1]);
    close(from[0]);
    execv(argv[0], (char *const *)(uintptr_t)argv);
    _exit(127);
  }
  close(to[0]);
  close(from[1]);
  f->in = fdopen(to[1], "w");
  f->out = fdopen(from[0], "r");
  char line[64];
  cr_assert(fgets(line, sizeof line, f->out) && sscanf(line, "port %u", &f->port) == 1,
            "fake-apiserver did not start");
  snprintf(f->url, sizeof f->url, "http://127.0.0.1:%u", f->port);
}

const char *fake_cmd(fake_t *f, const char *fmt, ...)
{
  static char line[1 << 20];
  va_list ap;
  va_start(ap, fmt);
  vfprintf(f->in, fmt, ap);
  va_end(ap);
  fputc('\n', f->in);
  fflush(f->in);
  cr_assert(fgets(line, sizeof line, f->out), "fake-apiserver gave no answer");
  cr_assert(!strncmp(line, "ok", 2), "fake-apiserver: %s", line);
  line[strcspn(line, "\n")] = '\0';
  return line;
}

void fake_stop(fake_t *f)
{
  if (!f->pid)
    return;
  fputs("quit\n", f->in);
  fclose(f->in);
  fclose(f->out);
  int st;
  waitpid(f->pid, &st, 0);
  f->pid = 0;
}

/* ---- the recording sink ---- */

static char *rec_key(sf_kind_t kind, const json_t *obj)
{
  const json_t *md = json_object_get(obj, "metadata");
  const char *ns = json_string_value(json_object_get(md, "namespace"));
  const char *name = json_string_value(json_object_get(md, "name"));
  char *k = NULL;
  cr_assert(name, "an object without a name reached the sink");
  cr_assert(asprintf(&k, "%d|%s/%s", (int)kind, ns ? ns : "", name) > 0);
  return k;
}

static const char *rv_of(const json_t *obj)
{
  return json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
}

static int rec_apply(void *ud, sf_kind_t kind, const json_t *obj, char *err, size_t errlen)
{
  rec_t *r = ud;
  (void)err;
  (void)errlen;
  char *k = rec_key(kind, obj);
  const char *old = json_string_value(json_object_get(r->objs, k));
  if (old && rv_of(obj) && !strcmp(old, rv_of(obj)))
    r->duplicates++;
  json_object_set_new(r->objs, k, json_string(rv_of(obj) ? rv_of(obj) : ""));
  r->applies++;
  free(k);
  return 0;
}

static int rec_remove(void *ud, sf_kind_t kind, const json_t *obj, char *err, size_t errlen)
{
  rec_t *r = ud;
  (void)err;
  (void)errlen;
  char *k = rec_key(kind, obj);
  if (json_object_del(r->objs, k))
    r->unknown_deletes++;
  r->removes++;
  free(k);
  return 0;
}

static int rec_replace(void *ud, sf_kind_t kind, const json_t *items, char *err, size_t errlen)
{
  rec_t *r = ud;
  char prefix[16];
  snprintf(prefix, sizeof prefix, "%d|", (int)kind);
  const char *k;
  json_t *v, *tmp;
  json_object_foreach_safe(r->objs, tmp, k, v) if (!strncmp(k, prefix, strlen(prefix)))
      json_object_del(r->objs, k);
  size_t i;
  json_t *o;
  json_array_foreach(items, i, o) rec_apply(ud, kind, o, err, errlen);
  r->applies -= (unsigned)json_array_size(items);
  r->replaces++;
  return 0;
}

void rec_init(rec_t *r)
{
  memset(r, 0, sizeof *r);
  r->objs = json_object();
}

void rec_dispose(rec_t *r)
{
  json_decref(r->objs);
}

sf_apiwatch_sink_t rec_sink(rec_t *r)
{
  return (sf_apiwatch_sink_t){rec_apply, rec_remove, rec_replace, r};
}

bool rec_equals(rec_t *r, fake_t *f, const char *res, sf_kind_t kind)
{
  const char *line = fake_cmd(f, "dump %s", res);
  json_t *want = json_loads(line + 3, 0, NULL);
  cr_assert(json_is_array(want));
  size_t i, have = 0;
  json_t *e;
  bool same = true;
  char prefix[16];
  snprintf(prefix, sizeof prefix, "%d|", (int)kind);
  const char *k;
  json_t *v;
  json_object_foreach(r->objs, k, v) have += !strncmp(k, prefix, strlen(prefix));
  json_array_foreach(want, i, e)
  {
    char key[600];
    snprintf(key, sizeof key, "%s%s", prefix, json_string_value(json_array_get(e, 0)));
    const char *rv = json_string_value(json_object_get(r->objs, key));
    if (!rv || strcmp(rv, json_string_value(json_array_get(e, 1))))
      same = false;
  }
  same = same && have == json_array_size(want);
  json_decref(want);
  return same;
}

bool rec_equals_all(rec_t *r, fake_t *f)
{
  return rec_equals(r, f, "resourceslices", SF_KIND_RESOURCE_SLICE) &&
         rec_equals(r, f, "resourceclaims", SF_KIND_RESOURCE_CLAIM) &&
         rec_equals(r, f, "deviceclasses", SF_KIND_DEVICE_CLASS);
}

/* ---- the loop ---- */

typedef struct {
  bool (*cond)(void *);
  void *ud;
  bool met;
  uv_timer_t check, limit;
} until_t;

static void on_check(uv_timer_t *t)
{
  until_t *u = t->data;
  if (u->cond(u->ud)) {
    u->met = true;
    uv_stop(t->loop);
  }
}

static void on_limit(uv_timer_t *t)
{
  uv_stop(t->loop);
}

bool run_until(uv_loop_t *loop, bool (*cond)(void *), void *ud, unsigned ms)
{
  until_t u = {cond, ud, false, {0}, {0}};
  if (cond(ud))
    return true;
  uv_timer_init(loop, &u.check);
  uv_timer_init(loop, &u.limit);
  u.check.data = &u;
  uv_timer_start(&u.check, on_check, 10, 10);
  uv_timer_start(&u.limit, on_limit, ms, 0);
  uv_run(loop, UV_RUN_DEFAULT);
  uv_close((uv_handle_t *)&u.check, NULL);
  uv_close((uv_handle_t *)&u.limit, NULL);
  uv_run(loop, UV_RUN_NOWAIT);
  return u.met;
}

static void on_stopped(void *ud)
{
  *(bool *)ud = true;
}

void watcher_free(uv_loop_t *loop, sf_apiwatch_t *w)
{
  bool done = false;
  sf_apiwatch_stop(w, on_stopped, &done);
  while (!done)
    uv_run(loop, UV_RUN_ONCE);
  sf_apiwatch_destroy(w);
}

/* ---- objects ---- */

char *slice_json(unsigned i, unsigned ndev, unsigned gen)
{
  char *devs = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&devs, &len);
  for (unsigned d = 0; d < ndev; d++)
    fprintf(m,
            "%s{\"name\":\"gpu-%u\",\"attributes\":{\"productName\":{\"string\":\"NVIDIA H100\"},"
            "\"index\":{\"int\":%u}},\"capacity\":{\"memory\":{\"value\":\"80Gi\"}}}",
            d ? "," : "", d, d);
  fclose(m);
  char *s = NULL;
  cr_assert(asprintf(&s,
                     "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\","
                     "\"metadata\":{\"name\":\"node-%u-gpu.nvidia.com\"},\"spec\":{\"driver\":"
                     "\"gpu.nvidia.com\",\"nodeName\":\"node-%u\",\"pool\":{\"name\":\"node-%u\","
                     "\"generation\":%u,\"resourceSliceCount\":1},\"devices\":[%s]}}",
                     i, i, i, gen, devs) > 0);
  free(devs);
  return s;
}

char *claim_json(unsigned i)
{
  char *s = NULL;
  cr_assert(asprintf(&s,
                     "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\","
                     "\"metadata\":{\"name\":\"claim-%u\",\"namespace\":\"ns-%u\"},\"spec\":"
                     "{\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":{"
                     "\"deviceClassName\":\"gpu.nvidia.com\",\"count\":1}}]}}}",
                     i, i % 7) > 0);
  return s;
}
