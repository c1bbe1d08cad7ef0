/* The tests of manifests/: YAML rendered and loaded, and the lookups the checks use. */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "slicefit/policy.h"
#include "slicefit/quantity.h"
#include "slicefit/cel.h"
#include "manifests.h"

/* ---- loading ---- */

static const char *top(void)
{
  const char *t = getenv("SLICEFIT_TOP");
  if (t == NULL || t[0] == '\0' || strchr(t, '\'') != NULL)
    cr_assert_fail("SLICEFIT_TOP must name the repository (the Makefile exports it: run make test)");
  return t;
}

static char *slurp(FILE *f, size_t *len)
{
  size_t cap = 0, n = 0;
  char *buf = NULL;
  for (;;) {
    sf_xgrow(&buf, &cap, n + 4096, 1);
    size_t got = fread(buf + n, 1, cap - n - 1, f);
    n += got;
    if (got == 0)
      break;
  }
  buf[n] = '\0';
  *len = n;
  return buf;
}

static yt_node_t *parse_or_fail(const char *text, size_t len, const char *what)
{
  char err[WHY];
  yt_node_t *docs = yt_parse(text, len, err, sizeof err);
  if (docs == NULL)
    cr_assert_fail("%s is not YAML the loader accepts: %s", what, err);
  return docs;
}

/* `kubectl kustomize TOP/dir`, parsed. kubectl's own messages go to stderr. */
yt_node_t *mf_render(const char *dir)
{
  char cmd[PATHMAX + 64];
  /*
   * kubectl is on the development machines but comes from no registry this
   * project can install from (Debian's is 1.20, too old for kustomize v5),
   * so a machine without it skips loudly instead of failing the suite.
   */
  if (system("command -v kubectl >/dev/null 2>&1") != 0) {
    /* A skip's reason is not printed by Criterion without --verbose: a warning is. */
    cr_log_warn("SKIPPED: %s: kubectl is not on PATH (kubectl 1.27 or newer renders manifests/; "
                "docs/operators.md says how to install it)",
                criterion_current_test->name);
    cr_skip_test("kubectl is not on PATH");
  }
  snprintf(cmd, sizeof cmd, "kubectl kustomize '%s/%s'", top(), dir);
  FILE *p = popen(cmd, "r");
  cr_assert(p != NULL, "cannot run %s", cmd);
  size_t len;
  char *text = slurp(p, &len);
  int st = pclose(p);
  if (st != 0) {
    free(text);
    cr_assert_fail("`%s` failed (status %d); kubectl's message is above", cmd, st);
  }
  yt_node_t *docs = parse_or_fail(text, len, cmd);
  free(text);
  return docs;
}

char *mf_read_file(const char *rel, size_t *len)
{
  char path[PATHMAX];
  snprintf(path, sizeof path, "%s/%s", top(), rel);
  FILE *f = fopen(path, "r");
  cr_assert(f != NULL, "cannot open %s", path);
  char *text = slurp(f, len);
  fclose(f);
  return text;
}

yt_node_t *mf_load(const char *rel)
{
  size_t len;
  char *text = mf_read_file(rel, &len);
  yt_node_t *docs = parse_or_fail(text, len, rel);
  free(text);
  return docs;
}

yt_node_t *mf_docs_of(const char *yaml)
{
  return parse_or_fail(yaml, strlen(yaml), "the inline test input");
}

/* ---- lookups ---- */

int mf_streq(const char *a, const char *b)
{
  return a != NULL && b != NULL && strcmp(a, b) == 0;
}

const char *mf_str_at(const yt_node_t *n, const char *k1, const char *k2)
{
  return yt_str(k2 ? yt_dig(n, k1, k2, NULL) : yt_get(n, k1));
}

/* The document of `kind` named `name` (any name when NULL), or NULL. */
const yt_node_t *mf_find(const yt_node_t *docs, const char *kind, const char *name)
{
  for (size_t i = 0; i < yt_len(docs); i++) {
    const yt_node_t *d = yt_at(docs, i);
    if (mf_streq(mf_str_at(d, "kind", NULL), kind) &&
        (name == NULL || mf_streq(mf_str_at(d, "metadata", "name"), name)))
      return d;
  }
  return NULL;
}

int mf_seq_has(const yt_node_t *seq, const char *s)
{
  for (size_t i = 0; i < yt_len(seq); i++)
    if (mf_streq(yt_str(yt_at(seq, i)), s))
      return 1;
  return 0;
}

static const yt_node_t *named(const yt_node_t *seq, const char *name)
{
  for (size_t i = 0; i < yt_len(seq); i++)
    if (mf_streq(mf_str_at(yt_at(seq, i), "name", NULL), name))
      return yt_at(seq, i);
  return NULL;
}

const yt_node_t *mf_pod_spec(const yt_node_t *deploy)
{
  return yt_dig(deploy, "spec", "template", "spec", NULL);
}

const yt_node_t *mf_first_container(const yt_node_t *deploy)
{
  return yt_at(yt_get(mf_pod_spec(deploy), "containers"), 0);
}

/*
 * The value of a flag in command + args, in either "--f=v" or "--f v" form,
 * copied into out; 0 when found.
 */
int mf_flag(const yt_node_t *ctr, const char *name, char *out, size_t len)
{
  size_t nl = strlen(name);
  const char *lists[] = {"command", "args"};
  for (size_t l = 0; l < 2; l++) {
    const yt_node_t *seq = yt_get(ctr, lists[l]);
    for (size_t i = 0; i < yt_len(seq); i++) {
      const char *a = yt_str(yt_at(seq, i));
      const char *v = NULL;
      if (a && strncmp(a, name, nl) == 0 && a[nl] == '=')
        v = a + nl + 1;
      else if (mf_streq(a, name))
        v = yt_str(yt_at(seq, i + 1));
      if (v != NULL) {
        snprintf(out, len, "%s", v);
        return 0;
      }
    }
  }
  return -1;
}

/* The container port a probe or Service names (by name or number), or 0. */
long mf_port_of(const yt_node_t *ctr, const char *ref)
{
  const yt_node_t *ports = yt_get(ctr, "ports");
  for (size_t i = 0; ref && i < yt_len(ports); i++) {
    const yt_node_t *p = yt_at(ports, i);
    const char *num = mf_str_at(p, "containerPort", NULL);
    if (mf_streq(mf_str_at(p, "name", NULL), ref) || mf_streq(num, ref))
      return num ? strtol(num, NULL, 10) : 0;
  }
  return 0;
}

/* The volume mounted at the directory of `path` in the container, or NULL. */
const yt_node_t *mf_volume_for(const yt_node_t *deploy, const yt_node_t *ctr, const char *path)
{
  const yt_node_t *mounts = yt_get(ctr, "volumeMounts");
  for (size_t i = 0; i < yt_len(mounts); i++) {
    const char *mp = mf_str_at(yt_at(mounts, i), "mountPath", NULL);
    size_t ml = mp ? strlen(mp) : 0;
    if (mp && strncmp(path, mp, ml) == 0 && path[ml] == '/' && strchr(path + ml + 1, '/') == NULL)
      return named(yt_get(mf_pod_spec(deploy), "volumes"), mf_str_at(yt_at(mounts, i), "name", NULL));
  }
  return NULL;
}

/* Whether the volume is the Secret `secret` and holds file `file` from key `key`. */
int mf_secret_file(const yt_node_t *vol, const char *secret, const char *key, const char *file)
{
  const yt_node_t *s = yt_get(vol, "secret");
  if (s == NULL || (secret && !mf_streq(mf_str_at(s, "secretName", NULL), secret)))
    return 0;
  const yt_node_t *items = yt_get(s, "items");
  if (items == NULL)
    return mf_streq(key, file);
  for (size_t i = 0; i < yt_len(items); i++)
    if (mf_streq(mf_str_at(yt_at(items, i), "key", NULL), key) &&
        mf_streq(mf_str_at(yt_at(items, i), "path", NULL), file))
      return 1;
  return 0;
}

const char *mf_base(const char *path)
{
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

int mf_say(char *why, size_t wl, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, wl, fmt, ap);
  va_end(ap);
  return -1;
}
