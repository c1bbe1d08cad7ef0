/*
 * Tests of manifests/: renders the kustomization with `kubectl kustomize`
 * (as an operator would), loads the YAML and checks what must hold for the
 * daemon, kube-scheduler and the tenants to work together: RBAC limited to
 * get/list/watch on the DRA objects and the one policy ConfigMap; the
 * Deployment's flags, probes and security settings; the extender URL naming
 * the Service; the policy ConfigMap holding exactly the keys the daemon
 * accepts, each value accepted; the DeviceClass menu and the examples.
 *
 * Each check is a function over the rendered documents that explains a
 * failure in `why`; the checks also run on small broken inputs, to show they
 * catch what they are meant to catch.
 */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "slicefit/policy.h"
#include "slicefit/quantity.h"
#include "ytree.h"
#include "slicefit/cel.h"

#define WHY 1024
#define PATHMAX 4096

static const char *const dra_resources[] = { "resourceslices", "resourceclaims", "deviceclasses",
                                              "devicetaintrules" };
#define NDRA (sizeof dra_resources / sizeof dra_resources[0])
static const char *const menu[] = { "gpu-whole-card", "gpu-shared-small", "gpu-fractional" };
#define NMENU (sizeof menu / sizeof menu[0])

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
static yt_node_t *render(const char *dir)
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
                "docs/operators.md says how to install it)", criterion_current_test->name);
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

static char *read_file(const char *rel, size_t *len)
{
  char path[PATHMAX];
  snprintf(path, sizeof path, "%s/%s", top(), rel);
  FILE *f = fopen(path, "r");
  cr_assert(f != NULL, "cannot open %s", path);
  char *text = slurp(f, len);
  fclose(f);
  return text;
}

static yt_node_t *load(const char *rel)
{
  size_t len;
  char *text = read_file(rel, &len);
  yt_node_t *docs = parse_or_fail(text, len, rel);
  free(text);
  return docs;
}

static yt_node_t *docs_of(const char *yaml)
{
  return parse_or_fail(yaml, strlen(yaml), "the inline test input");
}

/* ---- lookups ---- */

static int streq(const char *a, const char *b)
{
  return a != NULL && b != NULL && strcmp(a, b) == 0;
}

static const char *str_at(const yt_node_t *n, const char *k1, const char *k2)
{
  return yt_str(k2 ? yt_dig(n, k1, k2, NULL) : yt_get(n, k1));
}

/* The document of `kind` named `name` (any name when NULL), or NULL. */
static const yt_node_t *find(const yt_node_t *docs, const char *kind, const char *name)
{
  for (size_t i = 0; i < yt_len(docs); i++) {
    const yt_node_t *d = yt_at(docs, i);
    if (streq(str_at(d, "kind", NULL), kind) &&
        (name == NULL || streq(str_at(d, "metadata", "name"), name)))
      return d;
  }
  return NULL;
}

static int seq_has(const yt_node_t *seq, const char *s)
{
  for (size_t i = 0; i < yt_len(seq); i++)
    if (streq(yt_str(yt_at(seq, i)), s))
      return 1;
  return 0;
}

static const yt_node_t *named(const yt_node_t *seq, const char *name)
{
  for (size_t i = 0; i < yt_len(seq); i++)
    if (streq(str_at(yt_at(seq, i), "name", NULL), name))
      return yt_at(seq, i);
  return NULL;
}

static const yt_node_t *pod_spec(const yt_node_t *deploy)
{
  return yt_dig(deploy, "spec", "template", "spec", NULL);
}

static const yt_node_t *first_container(const yt_node_t *deploy)
{
  return yt_at(yt_get(pod_spec(deploy), "containers"), 0);
}

/*
 * The value of a flag in command + args, in either "--f=v" or "--f v" form,
 * copied into out; 0 when found.
 */
static int flag(const yt_node_t *ctr, const char *name, char *out, size_t len)
{
  size_t nl = strlen(name);
  const char *lists[] = { "command", "args" };
  for (size_t l = 0; l < 2; l++) {
    const yt_node_t *seq = yt_get(ctr, lists[l]);
    for (size_t i = 0; i < yt_len(seq); i++) {
      const char *a = yt_str(yt_at(seq, i));
      const char *v = NULL;
      if (a && strncmp(a, name, nl) == 0 && a[nl] == '=')
        v = a + nl + 1;
      else if (streq(a, name))
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
static long port_of(const yt_node_t *ctr, const char *ref)
{
  const yt_node_t *ports = yt_get(ctr, "ports");
  for (size_t i = 0; ref && i < yt_len(ports); i++) {
    const yt_node_t *p = yt_at(ports, i);
    const char *num = str_at(p, "containerPort", NULL);
    if (streq(str_at(p, "name", NULL), ref) || streq(num, ref))
      return num ? strtol(num, NULL, 10) : 0;
  }
  return 0;
}

/* The volume mounted at the directory of `path` in the container, or NULL. */
static const yt_node_t *volume_for(const yt_node_t *deploy, const yt_node_t *ctr, const char *path)
{
  const yt_node_t *mounts = yt_get(ctr, "volumeMounts");
  for (size_t i = 0; i < yt_len(mounts); i++) {
    const char *mp = str_at(yt_at(mounts, i), "mountPath", NULL);
    size_t ml = mp ? strlen(mp) : 0;
    if (mp && strncmp(path, mp, ml) == 0 && path[ml] == '/' && strchr(path + ml + 1, '/') == NULL)
      return named(yt_get(pod_spec(deploy), "volumes"), str_at(yt_at(mounts, i), "name", NULL));
  }
  return NULL;
}

/* Whether the volume is the Secret `secret` and holds file `file` from key `key`. */
static int secret_file(const yt_node_t *vol, const char *secret, const char *key, const char *file)
{
  const yt_node_t *s = yt_get(vol, "secret");
  if (s == NULL || (secret && !streq(str_at(s, "secretName", NULL), secret)))
    return 0;
  const yt_node_t *items = yt_get(s, "items");
  if (items == NULL)
    return streq(key, file);
  for (size_t i = 0; i < yt_len(items); i++)
    if (streq(str_at(yt_at(items, i), "key", NULL), key) &&
        streq(str_at(yt_at(items, i), "path", NULL), file))
      return 1;
  return 0;
}

static const char *base(const char *path)
{
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

static int say(char *why, size_t wl, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int say(char *why, size_t wl, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, wl, fmt, ap);
  va_end(ap);
  return -1;
}

/* ---- RBAC ---- */

/* One rule of a role bound to slicefit: get/list/watch, on allowed objects. */
static int check_rule(const yt_node_t *role, const yt_node_t *rule, const char *policy_ns,
                      const char *policy_name, int *granted, char *why, size_t wl)
{
  const char *rname = str_at(role, "metadata", "name");
  const yt_node_t *verbs = yt_get(rule, "verbs"), *groups = yt_get(rule, "apiGroups");
  const yt_node_t *res = yt_get(rule, "resources"), *names = yt_get(rule, "resourceNames");
  if (yt_len(verbs) != 3 || !seq_has(verbs, "get") || !seq_has(verbs, "list") || !seq_has(verbs, "watch"))
    return say(why, wl, "role %s: verbs must be exactly get, list, watch", rname);
  if (yt_get(rule, "nonResourceURLs") != NULL || yt_len(groups) != 1)
    return say(why, wl, "role %s: a rule must name one API group and no URLs", rname);
  const char *group = yt_str(yt_at(groups, 0));
  for (size_t i = 0; i < yt_len(res); i++) {
    const char *r = yt_str(yt_at(res, i));
    size_t k = 0;
    while (k < NDRA && !streq(r, dra_resources[k]))
      k++;
    if (streq(group, "resource.k8s.io") && k < NDRA && names == NULL) {
      granted[k] = 1;
      continue;
    }
    if (streq(group, "") && streq(r, "configmaps") && streq(str_at(role, "kind", NULL), "Role") &&
        streq(str_at(role, "metadata", "namespace"), policy_ns) && yt_len(names) == 1 &&
        streq(yt_str(yt_at(names, 0)), policy_name)) {
      granted[NDRA] = 1;
      continue;
    }
    /* Nodes, cluster-wide: which slices reach a node (selectors, allNodes), which names are nodes. */
    if (streq(group, "") && streq(r, "nodes") && streq(str_at(role, "kind", NULL), "ClusterRole") &&
        names == NULL) {
      granted[NDRA + 1] = 1;
      continue;
    }
    /* Pods, cluster-wide: the CPU and memory they take on each node, the CPU behind each claim. */
    if (streq(group, "") && streq(r, "pods") && streq(str_at(role, "kind", NULL), "ClusterRole") &&
        names == NULL) {
      granted[NDRA + 2] = 1;
      continue;
    }
    return say(why, wl, "role %s grants %s in group \"%s\"%s: slicefit needs only the DRA objects "
               "and its policy ConfigMap %s/%s by resourceNames", rname, r ? r : "?",
               group ? group : "?", names ? " (by resourceNames)" : "", policy_ns, policy_name);
  }
  return 0;
}

static int check_role(const yt_node_t *docs, const yt_node_t *ref, const char *bind_ns,
                      const char *policy_ns, const char *policy_name, int *granted, char *why,
                      size_t wl)
{
  const char *kind = str_at(ref, "kind", NULL), *name = str_at(ref, "name", NULL);
  const yt_node_t *role = find(docs, kind, name);
  if (role == NULL || (streq(kind, "Role") && !streq(str_at(role, "metadata", "namespace"), bind_ns)))
    return say(why, wl, "slicefit is bound to %s %s, which the manifests do not define", kind, name);
  const yt_node_t *rules = yt_get(role, "rules");
  if (yt_get(role, "aggregationRule") != NULL || yt_len(rules) == 0)
    return say(why, wl, "role %s must list its rules (no aggregation)", name);
  for (size_t i = 0; i < yt_len(rules); i++)
    if (check_rule(role, yt_at(rules, i), policy_ns, policy_name, granted, why, wl) != 0)
      return -1;
  return 0;
}

static int bound_to(const yt_node_t *binding, const char *sa, const char *ns)
{
  const yt_node_t *subjects = yt_get(binding, "subjects");
  for (size_t i = 0; i < yt_len(subjects); i++) {
    const yt_node_t *s = yt_at(subjects, i);
    if (streq(str_at(s, "kind", NULL), "ServiceAccount") && streq(str_at(s, "name", NULL), sa) &&
        streq(str_at(s, "namespace", NULL), ns))
      return 1;
  }
  return 0;
}

/*
 * Every role bound to the Deployment's service account grants get, list and
 * watch on the DRA objects, on Nodes and Pods and on the policy ConfigMap named by
 * --policy-configmap, all of them, and nothing else.
 */
static int check_rbac(const yt_node_t *docs, char *why, size_t wl)
{
  const yt_node_t *dep = find(docs, "Deployment", "slicefit");
  char policy[256];
  if (dep == NULL || flag(first_container(dep), "--policy-configmap", policy, sizeof policy) != 0 ||
      strchr(policy, '/') == NULL)
    return say(why, wl, "Deployment slicefit with --policy-configmap NAMESPACE/NAME not found");
  *strchr(policy, '/') = '\0';
  const char *pname = policy + strlen(policy) + 1;
  const char *sa = str_at(pod_spec(dep), "serviceAccountName", NULL);
  const char *ns = str_at(dep, "metadata", "namespace");
  int granted[NDRA + 3] = { 0 };
  for (size_t i = 0; i < yt_len(docs); i++) {
    const yt_node_t *b = yt_at(docs, i);
    const char *kind = str_at(b, "kind", NULL);
    if ((streq(kind, "RoleBinding") || streq(kind, "ClusterRoleBinding")) && bound_to(b, sa, ns) &&
        check_role(docs, yt_get(b, "roleRef"), str_at(b, "metadata", "namespace"), policy, pname,
                   granted, why, wl) != 0)
      return -1;
  }
  for (size_t k = 0; k < NDRA; k++)
    if (!granted[k])
      return say(why, wl, "slicefit cannot get/list/watch %s.resource.k8s.io", dra_resources[k]);
  if (!granted[NDRA])
    return say(why, wl, "slicefit cannot get/list/watch its policy ConfigMap %s/%s", policy, pname);
  if (!granted[NDRA + 1])
    return say(why, wl, "slicefit cannot get/list/watch nodes");
  if (!granted[NDRA + 2])
    return say(why, wl, "slicefit cannot get/list/watch pods");
  return 0;
}

/* ---- the Deployment ---- */

static int check_probes(const yt_node_t *docs, char *why, size_t wl)
{
  const yt_node_t *ctr = first_container(find(docs, "Deployment", "slicefit"));
  char listen[128];
  if (flag(ctr, "--listen", listen, sizeof listen) != 0 || !streq(listen, "0.0.0.0:8888"))
    return say(why, wl, "slicefit must run with --listen 0.0.0.0:8888");
  /*
   * The probes go to --probe-listen, served on its own thread: a flood of
   * connections on 8888 or a long request on the loop must not turn into
   * liveness restarts (issue 16).
   */
  char probe[128];
  if (flag(ctr, "--probe-listen", probe, sizeof probe) != 0 || !streq(probe, "0.0.0.0:8891"))
    return say(why, wl, "slicefit must run with --probe-listen 0.0.0.0:8891");
  const char *probes[] = { "livenessProbe", "readinessProbe" }, *paths[] = { "/healthz", "/readyz" };
  for (size_t i = 0; i < 2; i++) {
    const yt_node_t *get = yt_dig(ctr, probes[i], "httpGet", NULL);
    if (!streq(str_at(get, "path", NULL), paths[i]))
      return say(why, wl, "%s must GET %s", probes[i], paths[i]);
    if (port_of(ctr, str_at(get, "port", NULL)) != 8891)
      return say(why, wl, "%s must probe the --probe-listen port 8891", probes[i]);
    const char *scheme = str_at(get, "scheme", NULL);
    if (scheme && !streq(scheme, "HTTP"))
      return say(why, wl, "%s must use HTTP: the probe listener serves plain HTTP", probes[i]);
  }
  /* The Service stops sending before SIGTERM: a sleep the kubelet runs (the image has no shell). */
  const char *sleep = str_at(yt_dig(ctr, "lifecycle", "preStop", "sleep", NULL), "seconds", NULL);
  if (sleep == NULL || atoi(sleep) < 5)
    return say(why, wl, "slicefit needs a preStop sleep of at least 5 s");
  const yt_node_t *pod = yt_dig(find(docs, "Deployment", "slicefit"), "spec", "template", "spec",
                                NULL);
  const char *grace = str_at(pod, "terminationGracePeriodSeconds", NULL);
  if (grace == NULL || atoi(grace) < atoi(sleep) + 10)
    return say(why, wl, "terminationGracePeriodSeconds must cover the preStop sleep and the drain");
  return 0;
}

static int check_tls_flags(const yt_node_t *docs, char *why, size_t wl)
{
  const yt_node_t *dep = find(docs, "Deployment", "slicefit");
  const yt_node_t *ctr = first_container(dep);
  const char *flags[] = { "--tls-cert-file", "--tls-private-key-file" }, *keys[] = { "tls.crt", "tls.key" };
  char path[PATHMAX], policy[256];
  for (size_t i = 0; i < 2; i++) {
    if (flag(ctr, flags[i], path, sizeof path) != 0)
      return say(why, wl, "slicefit needs %s", flags[i]);
    if (!secret_file(volume_for(dep, ctr, path), NULL, keys[i], base(path)))
      return say(why, wl, "%s %s is not the %s key of a mounted Secret", flags[i], path, keys[i]);
  }
  if (flag(ctr, "--policy-configmap", policy, sizeof policy) != 0 ||
      !streq(policy, "slicefit-system/slicefit-policy"))
    return say(why, wl, "slicefit must watch --policy-configmap slicefit-system/slicefit-policy");
  const yt_node_t *cm = find(docs, "ConfigMap", "slicefit-policy");
  if (!streq(str_at(cm, "metadata", "namespace"), "slicefit-system"))
    return say(why, wl, "the policy ConfigMap slicefit-system/slicefit-policy is missing");
  return 0;
}

static int quantity_le(const yt_node_t *res, const char *what)
{
  sf_milli_t req, lim;
  return sf_quantity_parse(str_at(yt_get(res, "requests"), what, NULL), &req) == 0 &&
         sf_quantity_parse(str_at(yt_get(res, "limits"), what, NULL), &lim) == 0 && req <= lim;
}

/* Non-root, read-only, no escalation, no capabilities, RuntimeDefault, bounded. */
static int check_security(const yt_node_t *dep, char *why, size_t wl)
{
  const char *name = str_at(dep, "metadata", "name");
  const yt_node_t *pod = yt_get(pod_spec(dep), "securityContext");
  const yt_node_t *ctrs = yt_get(pod_spec(dep), "containers");
  for (size_t i = 0; i < yt_len(ctrs); i++) {
    const yt_node_t *c = yt_at(ctrs, i), *sc = yt_get(c, "securityContext");
    const char *seccomp = str_at(yt_get(sc, "seccompProfile"), "type", NULL);
    if (seccomp == NULL)
      seccomp = str_at(yt_get(pod, "seccompProfile"), "type", NULL);
    if (!streq(str_at(sc, "runAsNonRoot", NULL), "true") && !streq(str_at(pod, "runAsNonRoot", NULL), "true"))
      return say(why, wl, "%s: runAsNonRoot must be true", name);
    if (!streq(str_at(sc, "readOnlyRootFilesystem", NULL), "true"))
      return say(why, wl, "%s: readOnlyRootFilesystem must be true", name);
    if (!streq(str_at(sc, "allowPrivilegeEscalation", NULL), "false") || streq(str_at(sc, "privileged", NULL), "true"))
      return say(why, wl, "%s: allowPrivilegeEscalation must be false and the container unprivileged", name);
    if (!seq_has(yt_dig(sc, "capabilities", "drop", NULL), "ALL") || yt_dig(sc, "capabilities", "add", NULL))
      return say(why, wl, "%s: capabilities must drop ALL and add none", name);
    if (!streq(seccomp, "RuntimeDefault"))
      return say(why, wl, "%s: seccompProfile must be RuntimeDefault", name);
    if (!quantity_le(yt_get(c, "resources"), "cpu") || !quantity_le(yt_get(c, "resources"), "memory"))
      return say(why, wl, "%s: cpu and memory need requests and limits, requests <= limits", name);
  }
  return yt_len(ctrs) > 0 ? 0 : say(why, wl, "%s has no containers", name);
}

/* Whether every matchLabels pair of `sel` is among `labels`. */
static int selects(const yt_node_t *sel, const yt_node_t *labels)
{
  const yt_node_t *ml = yt_get(sel, "matchLabels");
  for (size_t i = 0; i < yt_len(ml); i++)
    if (!streq(yt_str(yt_get(labels, ml->keys[i])), yt_str(yt_at(ml, i))))
      return 0;
  return yt_len(ml) > 0;
}

/* Two replicas on two nodes, a PodDisruptionBudget keeping one. */
static int check_availability(const yt_node_t *docs, char *why, size_t wl)
{
  const yt_node_t *dep = find(docs, "Deployment", "slicefit");
  const yt_node_t *labels = yt_dig(dep, "spec", "template", "metadata", "labels", NULL);
  const yt_node_t *anti = yt_dig(pod_spec(dep), "affinity", "podAntiAffinity",
                                 "requiredDuringSchedulingIgnoredDuringExecution", NULL);
  if (!streq(str_at(dep, "spec", "replicas"), "2"))
    return say(why, wl, "slicefit must run 2 replicas");
  int spread = 0;
  for (size_t i = 0; i < yt_len(anti); i++)
    spread |= streq(str_at(yt_at(anti, i), "topologyKey", NULL), "kubernetes.io/hostname") &&
              selects(yt_get(yt_at(anti, i), "labelSelector"), labels);
  if (!spread)
    return say(why, wl, "slicefit replicas need pod anti-affinity on kubernetes.io/hostname");
  const yt_node_t *pdb = find(docs, "PodDisruptionBudget", NULL);
  if (!streq(str_at(pdb, "spec", "minAvailable"), "1") ||
      !selects(yt_dig(pdb, "spec", "selector", NULL), labels))
    return say(why, wl, "a PodDisruptionBudget with minAvailable 1 must select slicefit's pods");
  return 0;
}

/* ---- the Service and the extender configuration ---- */

/* "https://NAME.NAMESPACE.svc:PORT" of the Service that reaches slicefit's --listen port. */
static int service_url(const yt_node_t *docs, char *url, size_t len, char *why, size_t wl)
{
  const yt_node_t *dep = find(docs, "Deployment", "slicefit");
  const yt_node_t *labels = yt_dig(dep, "spec", "template", "metadata", "labels", NULL);
  for (size_t i = 0; i < yt_len(docs); i++) {
    const yt_node_t *svc = yt_at(docs, i), *sel = yt_dig(svc, "spec", "selector", NULL);
    const yt_node_t *port = yt_at(yt_dig(svc, "spec", "ports", NULL), 0);
    if (!streq(str_at(svc, "kind", NULL), "Service") || yt_len(sel) == 0)
      continue;
    int match = 1;
    for (size_t k = 0; k < yt_len(sel); k++)
      match &= streq(yt_str(yt_get(labels, sel->keys[k])), yt_str(yt_at(sel, k)));
    if (match && port_of(first_container(dep), str_at(port, "targetPort", NULL)) == 8888) {
      snprintf(url, len, "https://%s.%s.svc:%s", str_at(svc, "metadata", "name"),
               str_at(svc, "metadata", "namespace"), str_at(port, "port", NULL));
      return 0;
    }
  }
  return say(why, wl, "no Service selects slicefit's pods and targets its port 8888");
}

/* The KubeSchedulerConfiguration the scheduler Deployment reads with --config (new). */
static yt_node_t *scheduler_config(const yt_node_t *docs, const yt_node_t **dep_out)
{
  const yt_node_t *dep = find(docs, "Deployment", "slicefit-scheduler");
  const yt_node_t *ctr = first_container(dep);
  char path[PATHMAX];
  if (flag(ctr, "--config", path, sizeof path) != 0)
    return NULL;
  const char *cm = str_at(yt_get(volume_for(dep, ctr, path), "configMap"), "name", NULL);
  const char *text = yt_str(yt_dig(find(docs, "ConfigMap", cm), "data", base(path), NULL));
  *dep_out = dep;
  return text ? docs_of(text) : NULL;
}

/* What both scheduler configurations must say of slicefit. */
static int check_extender(const yt_node_t *cfg, const char *url, char *why, size_t wl)
{
  const yt_node_t *exts = yt_get(yt_at(cfg, 0), "extenders"), *e = yt_at(exts, 0);
  if (yt_len(exts) != 1)
    return say(why, wl, "the configuration must name one extender, slicefit");
  if (!streq(str_at(e, "urlPrefix", NULL), url))
    return say(why, wl, "urlPrefix %s is not the Service's %s", str_at(e, "urlPrefix", NULL), url);
  if (!streq(str_at(e, "filterVerb", NULL), "filter") || !streq(str_at(e, "prioritizeVerb", NULL), "prioritize"))
    return say(why, wl, "filterVerb must be filter and prioritizeVerb prioritize");
  const char *w = str_at(e, "weight", NULL);
  if (w == NULL || atol(w) <= 0)
    return say(why, wl, "prioritize needs a positive weight");
  if (!streq(str_at(e, "nodeCacheCapable", NULL), "true") || !streq(str_at(e, "enableHTTPS", NULL), "true"))
    return say(why, wl, "nodeCacheCapable and enableHTTPS must be true");
  if (str_at(e, "tlsConfig", "caFile") == NULL || streq(str_at(e, "tlsConfig", "insecure"), "true"))
    return say(why, wl, "tlsConfig must name a caFile and verify the certificate");
  if (str_at(e, "httpTimeout", NULL) == NULL || str_at(e, "ignorable", NULL) == NULL)
    return say(why, wl, "httpTimeout and ignorable must be set on purpose");
  if (yt_len(yt_get(e, "managedResources")) > 0 || yt_get(e, "bindVerb") || yt_get(e, "preemptVerb"))
    return say(why, wl, "no managedResources (they would hide claim-only pods), no bind or preempt");
  return 0;
}

static int has_profile(const yt_node_t *cfg, const char *name)
{
  const yt_node_t *profiles = yt_get(yt_at(cfg, 0), "profiles");
  for (size_t i = 0; i < yt_len(profiles); i++)
    if (streq(str_at(yt_at(profiles, i), "schedulerName", NULL), name))
      return 1;
  return 0;
}

/* The second scheduler: the profile, the extender, and the CA file mounted from the Secret. */
static int check_second_scheduler(const yt_node_t *docs, char *why, size_t wl)
{
  char url[512];
  const yt_node_t *dep = NULL;
  if (service_url(docs, url, sizeof url, why, wl) != 0)
    return -1;
  yt_node_t *cfg = scheduler_config(docs, &dep);
  int rc = -1;
  if (cfg == NULL)
    return say(why, wl, "the slicefit-scheduler Deployment must read its --config from a mounted ConfigMap");
  if (!has_profile(cfg, "slicefit-scheduler"))
    say(why, wl, "the scheduler configuration needs the profile slicefit-scheduler");
  else if (check_extender(cfg, url, why, wl) == 0) {
    const char *ca = str_at(yt_get(yt_at(yt_get(yt_at(cfg, 0), "extenders"), 0), "tlsConfig"), "caFile", NULL);
    const yt_node_t *slicefit = find(docs, "Deployment", "slicefit");
    char cert[PATHMAX] = "";
    flag(first_container(slicefit), "--tls-cert-file", cert, sizeof cert);
    const char *secret = str_at(yt_get(volume_for(slicefit, first_container(slicefit), cert), "secret"),
                                "secretName", NULL);
    if (secret_file(volume_for(dep, first_container(dep), ca), secret, "ca.crt", base(ca)))
      rc = 0;
    else
      say(why, wl, "caFile %s is not the ca.crt of slicefit's Secret %s, mounted", ca, secret ? secret : "?");
  }
  yt_free(cfg);
  return rc;
}

/* ---- the policy ConfigMap ---- */

static int check_policy(const yt_node_t *docs, char *why, size_t wl)
{
  const yt_node_t *data = yt_get(find(docs, "ConfigMap", "slicefit-policy"), "data");
  size_t nk;
  const sf_policy_key_t *keys = sf_policy_keys(&nk);
  for (size_t i = 0; i < nk; i++)
    if (yt_str(yt_get(data, keys[i].key)) == NULL)
      return say(why, wl, "the policy ConfigMap lacks the key %s", keys[i].key);
  if (yt_len(data) != nk)
    return say(why, wl, "the policy ConfigMap has %zu keys, the daemon accepts %zu", yt_len(data), nk);
  const char *k[64], *v[64];
  if (nk > 64)
    return say(why, wl, "more policy keys than this test handles");
  for (size_t i = 0; i < nk; i++) {
    k[i] = data->keys[i];
    v[i] = yt_str(yt_at(data, i));
  }
  sf_policy_t pol, def;
  if (sf_policy_from_kv(&pol, k, v, nk, why, wl) != 0)
    return -1;
  sf_policy_init(&def);
  int rc = 0;
  for (size_t i = 0; i < nk && rc == 0; i++) {
    char a[512], b[512];
    sf_policy_get(&pol, keys[i].key, a, sizeof a);
    sf_policy_get(&def, keys[i].key, b, sizeof b);
    if (strcmp(a, b) != 0)
      rc = say(why, wl, "policy %s is \"%s\" but the default is \"%s\": the file promises defaults",
               keys[i].key, a, b);
  }
  sf_policy_dispose(&pol);
  sf_policy_dispose(&def);
  return rc;
}

/* Each key in the source file has a comment right above it (or above its blank line). */
static int check_policy_comments(const char *text, char *why, size_t wl)
{
  size_t nk;
  const sf_policy_key_t *keys = sf_policy_keys(&nk);
  for (size_t i = 0; i < nk; i++) {
    char pat[192];
    snprintf(pat, sizeof pat, "\n  %s:", keys[i].key);
    const char *at = strstr(text, pat);
    if (at == NULL)
      return say(why, wl, "policy-configmap.yaml has no line for %s", keys[i].key);
    const char *prev = at;
    while (prev > text && prev[-1] != '\n')
      prev--;
    if (strncmp(prev, "  #", 3) != 0)
      return say(why, wl, "policy-configmap.yaml: %s has no comment above it", keys[i].key);
  }
  return 0;
}

/* ---- DeviceClasses ---- */

static void squeeze(const char *s, char *out, size_t len)
{
  size_t n = 0;
  for (; *s && n + 1 < len; s++)
    if (*s != ' ' && *s != '\n' && *s != '\t')
      out[n++] = *s == '"' ? '\'' : *s;
  out[n] = '\0';
}

/* Calls fn on every CEL expression of a selector list. */
static int each_cel(const yt_node_t *selectors, int (*fn)(const char *, char *, size_t), char *why, size_t wl)
{
  for (size_t i = 0; i < yt_len(selectors); i++) {
    const char *e = str_at(yt_at(selectors, i), "cel", "expression");
    if (e == NULL || fn(e, why, wl) != 0)
      return e == NULL ? say(why, wl, "a selector without a CEL expression") : -1;
  }
  return 0;
}

static int nvidia_driver(const char *expr, char *why, size_t wl)
{
  char s[4096];
  squeeze(expr, s, sizeof s);
  return strstr(s, "device.driver=='gpu.nvidia.com'") ? 0
         : say(why, wl, "selector does not require device.driver == \"gpu.nvidia.com\": %s", expr);
}

static int check_classes(const yt_node_t *docs, char *why, size_t wl)
{
  size_t legacy = 0;
  for (size_t i = 0; i < NMENU; i++) {
    const yt_node_t *dc = find(docs, "DeviceClass", menu[i]);
    const yt_node_t *sel = yt_dig(dc, "spec", "selectors", NULL);
    if (dc == NULL || yt_len(sel) == 0)
      return say(why, wl, "DeviceClass %s with a CEL selector is missing", menu[i]);
    if (!streq(str_at(dc, "apiVersion", NULL), "resource.k8s.io/v1"))
      return say(why, wl, "DeviceClass %s must be resource.k8s.io/v1", menu[i]);
    if (each_cel(sel, nvidia_driver, why, wl) != 0)
      return -1;
    legacy += streq(str_at(dc, "spec", "extendedResourceName"), "nvidia.com/gpu");
  }
  if (legacy != 1 || !streq(str_at(find(docs, "DeviceClass", "gpu-whole-card"), "spec", "extendedResourceName"),
                            "nvidia.com/gpu"))
    return say(why, wl, "gpu-whole-card, and only it, must serve nvidia.com/gpu (extendedResourceName)");
  return 0;
}

static int cel_compiles(const char *expr, char *why, size_t wl)
{
  sf_cel_cache_t *c = sf_cel_cache_create();
  const char *err = sf_cel_prog_error(sf_cel_compile(c, expr));
  int rc = err ? say(why, wl, "CEL does not compile: %s: %s", err, expr) : 0;
  sf_cel_cache_destroy(c);
  return rc;
}

/* ---- examples ---- */

static int in_menu(const char *cls)
{
  for (size_t i = 0; i < NMENU; i++)
    if (streq(cls, menu[i]))
      return 1;
  return 0;
}

/* Every request of a claim template asks for a class of the menu. */
static int check_template(const yt_node_t *rct, char *why, size_t wl)
{
  const yt_node_t *reqs = yt_dig(rct, "spec", "spec", "devices", "requests", NULL);
  for (size_t i = 0; i < yt_len(reqs); i++)
    if (!in_menu(str_at(yt_get(yt_at(reqs, i), "exactly"), "deviceClassName", NULL)))
      return say(why, wl, "template %s asks for a class outside the menu", str_at(rct, "metadata", "name"));
  return yt_len(reqs) ? 0 : say(why, wl, "template %s has no request", str_at(rct, "metadata", "name"));
}

/* A pod opts into slicefit-scheduler and each of its claims comes from a template here. */
static int check_pod(const yt_node_t *docs, const yt_node_t *pod, char *why, size_t wl)
{
  const char *name = str_at(pod, "metadata", "name");
  const yt_node_t *claims = yt_dig(pod, "spec", "resourceClaims", NULL);
  if (!streq(str_at(pod, "spec", "schedulerName"), "slicefit-scheduler"))
    return say(why, wl, "example pod %s must set schedulerName: slicefit-scheduler", name);
  for (size_t i = 0; i < yt_len(claims); i++) {
    const yt_node_t *rct = find(docs, "ResourceClaimTemplate",
                                str_at(yt_at(claims, i), "resourceClaimTemplateName", NULL));
    if (rct == NULL || check_template(rct, why, wl) != 0)
      return rct ? -1 : say(why, wl, "pod %s names a claim template the examples lack", name);
  }
  return 0;
}

/* The first claim template whose first request satisfies `want`, or NULL. */
static const yt_node_t *template_where(const yt_node_t *docs, int (*want)(const yt_node_t *))
{
  for (size_t i = 0; i < yt_len(docs); i++) {
    const yt_node_t *d = yt_at(docs, i);
    const yt_node_t *req = yt_at(yt_dig(d, "spec", "spec", "devices", "requests", NULL), 0);
    if (streq(str_at(d, "kind", NULL), "ResourceClaimTemplate") && want(yt_get(req, "exactly")))
      return d;
  }
  return NULL;
}

static int is_4gi_share(const yt_node_t *ex)
{
  sf_milli_t v;
  return streq(str_at(ex, "deviceClassName", NULL), "gpu-shared-small") &&
         sf_quantity_parse(yt_str(yt_dig(ex, "capacity", "requests", "memory", NULL)), &v) == 0 &&
         v == (sf_milli_t)4 * 1024 * 1024 * 1024 * 1000;
}

static int is_model_card(const yt_node_t *ex)
{
  const char *e = str_at(yt_at(yt_get(ex, "selectors"), 0), "cel", "expression");
  return streq(str_at(ex, "deviceClassName", NULL), "gpu-whole-card") && e && strstr(e, "productName") &&
         str_at(ex, "count", NULL) == NULL;
}

static int is_pair(const yt_node_t *ex)
{
  return streq(str_at(ex, "count", NULL), "2");
}

/* A pod with `nvidia.com/gpu: 1` and no claims, served by a class of the menu. */
static int has_legacy_pod(const yt_node_t *docs, const yt_node_t *main_docs)
{
  for (size_t i = 0; i < yt_len(docs); i++) {
    const yt_node_t *d = yt_at(docs, i);
    const yt_node_t *ctr = yt_at(yt_dig(d, "spec", "containers", NULL), 0);
    if (streq(str_at(d, "kind", NULL), "Pod") && yt_dig(d, "spec", "resourceClaims", NULL) == NULL &&
        streq(yt_str(yt_dig(ctr, "resources", "limits", "nvidia.com/gpu", NULL)), "1"))
      return streq(str_at(find(main_docs, "DeviceClass", "gpu-whole-card"), "spec", "extendedResourceName"),
                   "nvidia.com/gpu");
  }
  return 0;
}

static int check_examples(const yt_node_t *ex, const yt_node_t *main_docs, char *why, size_t wl)
{
  for (size_t i = 0; i < yt_len(ex); i++)
    if (streq(str_at(yt_at(ex, i), "kind", NULL), "Pod") && check_pod(ex, yt_at(ex, i), why, wl) != 0)
      return -1;
  if (template_where(ex, is_4gi_share) == NULL)
    return say(why, wl, "no example asks gpu-shared-small for capacity.requests.memory 4Gi");
  if (template_where(ex, is_model_card) == NULL)
    return say(why, wl, "no example asks for one whole card of a model (productName)");
  const yt_node_t *devs = yt_dig(template_where(ex, is_pair), "spec", "spec", "devices", NULL);
  const yt_node_t *cons = yt_at(yt_get(devs, "constraints"), 0);
  const char *attr = str_at(cons, "matchAttribute", NULL);
  if (attr == NULL || strchr(attr, '/') == NULL ||
      !seq_has(yt_get(cons, "requests"), str_at(yt_at(yt_get(devs, "requests"), 0), "name", NULL)))
    return say(why, wl, "the 2-GPU example needs a matchAttribute on a fully qualified attribute over its request");
  if (!has_legacy_pod(ex, main_docs))
    return say(why, wl, "no legacy nvidia.com/gpu: 1 pod served through extendedResourceName");
  return 0;
}

/* ---- tests over the real manifests ---- */

/* Runs fn(args..., why, wl) and fails the test with its explanation. */
#define CHECK(fn, ...)                                                                             \
  do {                                                                                             \
    char why_[WHY] = "";                                                                           \
    cr_assert(fn(__VA_ARGS__, why_, sizeof why_) == 0, "%s", why_);                                \
  } while (0)

/* The rendered main kustomization, for the tests of the suite "manifests". */
static yt_node_t *rendered;

static void setup(void)
{
  rendered = render("manifests");
}

static void teardown(void)
{
  yt_free(rendered);
}

Test(manifests, renders_the_expected_objects, .init = setup, .fini = teardown)
{
  const char *want[][2] = { { "Namespace", "slicefit-system" }, { "ServiceAccount", "slicefit" },
                            { "Deployment", "slicefit" }, { "Service", "slicefit" },
                            { "PodDisruptionBudget", "slicefit" }, { "ConfigMap", "slicefit-policy" },
                            { "Deployment", "slicefit-scheduler" }, { "ClusterRole", "slicefit" } };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    cr_expect(find(rendered, want[i][0], want[i][1]) != NULL, "%s %s is missing", want[i][0], want[i][1]);
  for (size_t i = 0; i < yt_len(rendered); i++) {
    const yt_node_t *d = yt_at(rendered, i);
    const char *kind = str_at(d, "kind", NULL);
    int cluster = streq(kind, "Namespace") || streq(kind, "ClusterRole") ||
                  streq(kind, "ClusterRoleBinding") || streq(kind, "DeviceClass");
    cr_expect(cluster || str_at(d, "metadata", "namespace") != NULL, "%s %s has no namespace", kind,
              str_at(d, "metadata", "name"));
  }
}

Test(manifests, rbac_is_get_list_watch_on_the_dra_objects_and_the_policy_only, .init = setup, .fini = teardown)
{
  CHECK(check_rbac, rendered);
}

Test(manifests, deployment_probes_and_flags, .init = setup, .fini = teardown)
{
  CHECK(check_probes, rendered);
  CHECK(check_tls_flags, rendered);
}

Test(manifests, deployments_are_locked_down, .init = setup, .fini = teardown)
{
  CHECK(check_security, find(rendered, "Deployment", "slicefit"));
  CHECK(check_security, find(rendered, "Deployment", "slicefit-scheduler"));
  CHECK(check_availability, rendered);
}

Test(manifests, extender_url_names_the_service, .init = setup, .fini = teardown)
{
  CHECK(check_second_scheduler, rendered);
}

Test(manifests, default_scheduler_file_configures_the_same_extender, .init = setup, .fini = teardown)
{
  yt_node_t *cfg = load("manifests/default-scheduler/kube-scheduler-config.yaml");
  char url[512];
  const yt_node_t *e = yt_at(yt_get(yt_at(cfg, 0), "extenders"), 0);
  CHECK(service_url, rendered, url, sizeof url);
  CHECK(check_extender, cfg, url);
  cr_expect(has_profile(cfg, "default-scheduler"), "the file must configure default-scheduler");
  cr_expect(streq(str_at(e, "tlsConfig", "serverName"), "slicefit.slicefit-system.svc"),
            "serverName must be the Service's name, so a ClusterIP urlPrefix still verifies");
  cr_expect(streq(str_at(e, "ignorable", NULL), "true"),
            "the default scheduler also places slicefit's own pods: ignorable must be true");
  yt_free(cfg);
}

Test(manifests, policy_configmap_holds_every_key_the_daemon_accepts, .init = setup, .fini = teardown)
{
  size_t len;
  char *text = read_file("manifests/policy-configmap.yaml", &len);
  CHECK(check_policy, rendered);
  CHECK(check_policy_comments, text);
  free(text);
}

Test(manifests, deviceclass_menu_for_the_nvidia_driver, .init = setup, .fini = teardown)
{
  CHECK(check_classes, rendered);
}

Test(manifests, deviceclass_and_example_cel_compiles, .init = setup, .fini = teardown)
{
  yt_node_t *ex = render("manifests/examples");
  for (size_t i = 0; i < NMENU; i++)
    CHECK(each_cel, yt_dig(find(rendered, "DeviceClass", menu[i]), "spec", "selectors", NULL), cel_compiles);
  for (size_t i = 0; i < yt_len(ex); i++) {
    const yt_node_t *reqs = yt_dig(yt_at(ex, i), "spec", "spec", "devices", "requests", NULL);
    for (size_t r = 0; r < yt_len(reqs); r++)
      CHECK(each_cel, yt_dig(yt_at(reqs, r), "exactly", "selectors", NULL), cel_compiles);
  }
  yt_free(ex);
}

Test(manifests, examples_cover_the_four_shapes, .init = setup, .fini = teardown)
{
  yt_node_t *ex = render("manifests/examples");
  CHECK(check_examples, ex, rendered);
  yt_free(ex);
}

/* ---- the checks catch what they are meant to ---- */

static const char base_rbac[] =
  "kind: Deployment\nmetadata: {name: slicefit, namespace: ns}\n"
  "spec:\n  template:\n    spec:\n      serviceAccountName: sa\n"
  "      containers: [{name: c, args: [--policy-configmap, ns/pol]}]\n"
  "---\nkind: ClusterRoleBinding\nmetadata: {name: b}\nroleRef: {kind: ClusterRole, name: r}\n"
  "subjects: [{kind: ServiceAccount, name: sa, namespace: ns}]\n"
  "---\nkind: RoleBinding\nmetadata: {name: b2, namespace: ns}\nroleRef: {kind: Role, name: p}\n"
  "subjects: [{kind: ServiceAccount, name: sa, namespace: ns}]\n"
  "---\nkind: Role\nmetadata: {name: p, namespace: ns}\n"
  "rules: [{apiGroups: [''], resources: [configmaps], resourceNames: [pol], verbs: [get, list, watch]}]\n"
  "---\nkind: ClusterRole\nmetadata: {name: r}\nrules:\n";

static int rbac_with(const char *rules, char *why, size_t wl)
{
  char yaml[4096];
  snprintf(yaml, sizeof yaml, "%s%s", base_rbac, rules);
  yt_node_t *docs = docs_of(yaml);
  int rc = check_rbac(docs, why, wl);
  yt_free(docs);
  return rc;
}

#define DRA_RULE "- {apiGroups: [resource.k8s.io], resources: [resourceslices, resourceclaims, deviceclasses, devicetaintrules], "
#define NODE_RULE "- {apiGroups: [''], resources: [nodes, pods], verbs: [get, list, watch]}\n"

Test(manifests_checks, rbac_check_accepts_the_minimal_grant)
{
  CHECK(rbac_with, DRA_RULE "verbs: [get, list, watch]}\n" NODE_RULE);
}

Test(manifests_checks, rbac_check_rejects_more)
{
  const char *bad[][2] = {
    { DRA_RULE "verbs: [get, list, watch, update]}\n", "verbs must be exactly" },
    { DRA_RULE "verbs: ['*']}\n", "verbs must be exactly" },
    { DRA_RULE "verbs: [get, list]}\n", "verbs must be exactly" },
    { DRA_RULE "verbs: [get, list, watch]}\n- {apiGroups: [''], resources: [nodes, pods/log], verbs: [get, list, watch]}\n",
      "grants pods/log" },
    { DRA_RULE "verbs: [get, list, watch]}\n- {apiGroups: [''], resources: [nodes, secrets], verbs: [get, list, watch]}\n",
      "grants secrets" },
    { DRA_RULE "verbs: [get, list, watch]}\n- {apiGroups: [''], resources: [nodes], verbs: [get, list, watch]}\n",
      "cannot get/list/watch pods" },
    { DRA_RULE "verbs: [get, list, watch]}\n- {apiGroups: [''], resources: [configmaps], verbs: [get, list, watch]}\n",
      "grants configmaps" },
    { "- {apiGroups: [resource.k8s.io], resources: [resourceslices, resourceclaims, deviceclasses], "
      "verbs: [get, list, watch]}\n", "cannot get/list/watch devicetaintrules" },
    { "- {apiGroups: [resource.k8s.io], resources: ['*'], verbs: [get, list, watch]}\n", "grants *" },
    { DRA_RULE "verbs: [get, list, watch]}\n- {nonResourceURLs: ['/metrics'], verbs: [get, list, watch]}\n",
      "no URLs" },
    { DRA_RULE "verbs: [get, list, watch]}\n", "cannot get/list/watch nodes" },
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char w[WHY] = "";
    cr_expect(rbac_with(bad[i][0], w, sizeof w) != 0, "accepted: %s", bad[i][0]);
    cr_expect(strstr(w, bad[i][1]) != NULL, "case %zu: \"%s\" does not say \"%s\"", i, w, bad[i][1]);
  }
}

Test(manifests_checks, extender_check_rejects_a_wrong_url_or_setting)
{
  const char *cases[][2] = {
    { "urlPrefix: https://slicefit.other.svc:8888", "is not the Service's" },
    { "urlPrefix: http://slicefit.ns.svc:8888", "is not the Service's" },
    { "urlPrefix: https://slicefit.ns.svc:9999", "is not the Service's" },
    { "urlPrefix: https://slicefit.ns.svc:8888\n  weight: 0", "positive weight" },
    { "urlPrefix: https://slicefit.ns.svc:8888\n  nodeCacheCapable: false", "nodeCacheCapable" },
    { "urlPrefix: https://slicefit.ns.svc:8888\n  managedResources: [{name: nvidia.com/gpu}]", "managedResources" },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char yaml[2048], w[WHY] = "";
    /* A later duplicate key would be ignored by yt_get, so the case's keys come first. */
    snprintf(yaml, sizeof yaml, "extenders:\n- %s\n  urlPrefix: x\n  filterVerb: filter\n"
             "  prioritizeVerb: prioritize\n  weight: 1\n  nodeCacheCapable: true\n  enableHTTPS: true\n"
             "  tlsConfig: {caFile: /ca.crt}\n  httpTimeout: 2s\n  ignorable: false\n", cases[i][0]);
    yt_node_t *cfg = docs_of(yaml);
    cr_expect(check_extender(cfg, "https://slicefit.ns.svc:8888", w, sizeof w) != 0, "accepted: %s", cases[i][0]);
    cr_expect(strstr(w, cases[i][1]) != NULL, "case %zu: \"%s\" does not say \"%s\"", i, w, cases[i][1]);
    yt_free(cfg);
  }
}

/* A policy ConfigMap with every key at its default but `drop`, then `extra` lines. */
static yt_node_t *policy_doc(const char *drop, const char *extra)
{
  size_t nk;
  const sf_policy_key_t *keys = sf_policy_keys(&nk);
  char yaml[8192] = "kind: ConfigMap\nmetadata: {name: slicefit-policy}\ndata:\n";
  for (size_t i = 0; i < nk; i++)
    if (strcmp(keys[i].key, drop) != 0)
      snprintf(yaml + strlen(yaml), sizeof yaml - strlen(yaml), "  %s: \"%s\"\n", keys[i].key, keys[i].def);
  snprintf(yaml + strlen(yaml), sizeof yaml - strlen(yaml), "%s", extra);
  return docs_of(yaml);
}

Test(manifests_checks, policy_check_accepts_the_defaults)
{
  yt_node_t *docs = policy_doc("", "");
  CHECK(check_policy, docs);
  yt_free(docs);
}

Test(manifests_checks, policy_check_rejects_missing_unknown_and_bad_keys)
{
  const char *cases[][3] = {
    { "strategy", "", "lacks the key strategy" },
    { "", "  colour: blue\n", "keys, the daemon accepts" },
    { "weight_frag", "  weight_frag: \"-1\"\n", "weight_frag" },
    { "strategy", "  strategy: pack\n", "pack" },
    { "max_sharers", "  max_sharers: \"4\"\n", "the default is" },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char w[WHY] = "";
    yt_node_t *docs = policy_doc(cases[i][0], cases[i][1]);
    cr_expect(check_policy(docs, w, sizeof w) != 0, "accepted case %zu", i);
    cr_expect(strstr(w, cases[i][2]) != NULL, "case %zu: \"%s\" does not say \"%s\"", i, w, cases[i][2]);
    yt_free(docs);
  }
}

Test(manifests_checks, security_check_rejects_a_writable_root)
{
  static const char yaml[] =
    "kind: Deployment\nmetadata: {name: d}\nspec:\n  template:\n    spec:\n"
    "      securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}\n"
    "      containers:\n      - name: c\n"
    "        securityContext: {readOnlyRootFilesystem: false, allowPrivilegeEscalation: false, "
    "capabilities: {drop: [ALL]}}\n"
    "        resources: {requests: {cpu: 1, memory: 1Gi}, limits: {cpu: 1, memory: 1Gi}}\n";
  yt_node_t *docs = docs_of(yaml);
  char w[WHY] = "";
  cr_expect(check_security(yt_at(docs, 0), w, sizeof w) != 0);
  cr_expect(strstr(w, "readOnlyRootFilesystem") != NULL, "%s", w);
  yt_free(docs);
}

Test(manifests_checks, policy_comment_check_finds_an_undocumented_key)
{
  size_t nk;
  const sf_policy_key_t *keys = sf_policy_keys(&nk);
  char text[8192] = "data:\n";
  for (size_t i = 0; i < nk; i++)
    snprintf(text + strlen(text), sizeof text - strlen(text), "%s  %s: \"%s\"\n",
             i == nk - 1 ? "\n" : "  # what it does\n", keys[i].key, keys[i].def);
  char w[WHY] = "";
  cr_expect(check_policy_comments(text, w, sizeof w) != 0);
  cr_expect(strstr(w, keys[nk - 1].key) != NULL, "%s", w);
}

Test(manifests_checks, yaml_loader_reports_the_line_of_an_error)
{
  char err[WHY] = "";
  static const char bad[] = "a: 1\nb: [1, 2\nc: 3\n";
  cr_expect(yt_parse(bad, strlen(bad), err, sizeof err) == NULL);
  cr_expect(strstr(err, "line ") != NULL, "%s", err);
  static const char alias[] = "a: &x 1\nb: *x\n";
  cr_expect(yt_parse(alias, strlen(alias), err, sizeof err) == NULL);
  cr_expect(strstr(err, "aliases") != NULL, "%s", err);
  char deep[4 * YT_DEPTH_MAX + 8] = "";
  for (int i = 0; i <= YT_DEPTH_MAX + 1; i++)
    strcat(deep, "[");
  cr_expect(yt_parse(deep, strlen(deep), err, sizeof err) == NULL);
  cr_expect(strstr(err, "deeply") != NULL, "%s", err);
}
