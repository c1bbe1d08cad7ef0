/*
 * The checks over rendered manifests (test_manifests.c says what must hold). Each explains a
 * failure in `why`.
 */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "slicefit/policy.h"
#include "slicefit/quantity.h"
#include "slicefit/cel.h"
#include "manifests.h"

static const char *const dra_resources[] = {"resourceslices", "resourceclaims", "deviceclasses",
                                            "devicetaintrules"};
#define NDRA (sizeof dra_resources / sizeof dra_resources[0])
const char *const mf_menu[] = {"gpu-whole-card", "gpu-shared-small", "gpu-fractional"};

/* ---- RBAC ---- */

/*
 * The one write: create on pods/eviction (--defrag-evict), cluster-wide, alone in its rule.
 * 1 for that rule, 0 for a rule without the subresource, -1 (why set) for anything else.
 */
static int eviction_rule(const yt_node_t *role, const yt_node_t *rule, char *why, size_t wl)
{
  const char *rname = mf_str_at(role, "metadata", "name");
  const yt_node_t *verbs = yt_get(rule, "verbs"), *groups = yt_get(rule, "apiGroups");
  const yt_node_t *res = yt_get(rule, "resources");
  if (!mf_seq_has(res, "pods/eviction"))
    return 0;
  if (yt_len(res) != 1 || yt_len(groups) != 1 || !mf_streq(yt_str(yt_at(groups, 0)), "") ||
      yt_len(verbs) != 1 || !mf_streq(yt_str(yt_at(verbs, 0)), "create") ||
      yt_get(rule, "resourceNames") != NULL ||
      !mf_streq(mf_str_at(role, "kind", NULL), "ClusterRole"))
    return mf_say(why, wl,
                  "role %s: pods/eviction must be alone in its rule, in group "
                  ", with the one "
                  "verb create, in a ClusterRole",
                  rname);
  return 1;
}

/* One rule of a role bound to slicefit: get/list/watch, on allowed objects. */
static int check_rule(const yt_node_t *role, const yt_node_t *rule, const char *policy_ns,
                      const char *policy_name, int *granted, char *why, size_t wl)
{
  const char *rname = mf_str_at(role, "metadata", "name");
  const yt_node_t *verbs = yt_get(rule, "verbs"), *groups = yt_get(rule, "apiGroups");
  const yt_node_t *res = yt_get(rule, "resources"), *names = yt_get(rule, "resourceNames");
  int ev = eviction_rule(role, rule, why, wl);
  if (ev != 0)
    return ev < 0 ? -1 : 0;
  if (yt_len(verbs) != 3 || !mf_seq_has(verbs, "get") || !mf_seq_has(verbs, "list") ||
      !mf_seq_has(verbs, "watch"))
    return mf_say(why, wl, "role %s: verbs must be exactly get, list, watch", rname);
  if (yt_get(rule, "nonResourceURLs") != NULL || yt_len(groups) != 1)
    return mf_say(why, wl, "role %s: a rule must name one API group and no URLs", rname);
  const char *group = yt_str(yt_at(groups, 0));
  for (size_t i = 0; i < yt_len(res); i++) {
    const char *r = yt_str(yt_at(res, i));
    size_t k = 0;
    while (k < NDRA && !mf_streq(r, dra_resources[k]))
      k++;
    if (mf_streq(group, "resource.k8s.io") && k < NDRA && names == NULL) {
      granted[k] = 1;
      continue;
    }
    if (mf_streq(group, "") && mf_streq(r, "configmaps") &&
        mf_streq(mf_str_at(role, "kind", NULL), "Role") &&
        mf_streq(mf_str_at(role, "metadata", "namespace"), policy_ns) && yt_len(names) == 1 &&
        mf_streq(yt_str(yt_at(names, 0)), policy_name)) {
      granted[NDRA] = 1;
      continue;
    }
    /* Nodes, cluster-wide: which slices reach a node (selectors, allNodes), which names are nodes. */
    if (mf_streq(group, "") && mf_streq(r, "nodes") &&
        mf_streq(mf_str_at(role, "kind", NULL), "ClusterRole") && names == NULL) {
      granted[NDRA + 1] = 1;
      continue;
    }
    /* Pods, cluster-wide: the CPU and memory they take on each node, the CPU behind each claim. */
    if (mf_streq(group, "") && mf_streq(r, "pods") &&
        mf_streq(mf_str_at(role, "kind", NULL), "ClusterRole") && names == NULL) {
      granted[NDRA + 2] = 1;
      continue;
    }
    return mf_say(why, wl,
                  "role %s grants %s in group \"%s\"%s: slicefit needs only the DRA objects "
                  "and its policy ConfigMap %s/%s by resourceNames",
                  rname, r ? r : "?", group ? group : "?", names ? " (by resourceNames)" : "",
                  policy_ns, policy_name);
  }
  return 0;
}

static int check_role(const yt_node_t *docs, const yt_node_t *ref, const char *bind_ns,
                      const char *policy_ns, const char *policy_name, int *granted, char *why,
                      size_t wl)
{
  const char *kind = mf_str_at(ref, "kind", NULL), *name = mf_str_at(ref, "name", NULL);
  const yt_node_t *role = mf_find(docs, kind, name);
  if (role == NULL ||
      (mf_streq(kind, "Role") && !mf_streq(mf_str_at(role, "metadata", "namespace"), bind_ns)))
    return mf_say(why, wl, "slicefit is bound to %s %s, which the manifests do not define", kind,
                  name);
  const yt_node_t *rules = yt_get(role, "rules");
  if (yt_get(role, "aggregationRule") != NULL || yt_len(rules) == 0)
    return mf_say(why, wl, "role %s must list its rules (no aggregation)", name);
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
    if (mf_streq(mf_str_at(s, "kind", NULL), "ServiceAccount") &&
        mf_streq(mf_str_at(s, "name", NULL), sa) && mf_streq(mf_str_at(s, "namespace", NULL), ns))
      return 1;
  }
  return 0;
}

/*
 * Every role bound to the Deployment's service account grants get, list and
 * watch on the DRA objects, on Nodes and Pods and on the policy ConfigMap named by
 * --policy-configmap, all of them, and nothing else but create on pods/eviction.
 */
int mf_check_rbac(const yt_node_t *docs, char *why, size_t wl)
{
  const yt_node_t *dep = mf_find(docs, "Deployment", "slicefit");
  char policy[256];
  if (dep == NULL ||
      mf_flag(mf_first_container(dep), "--policy-configmap", policy, sizeof policy) != 0 ||
      strchr(policy, '/') == NULL)
    return mf_say(why, wl, "Deployment slicefit with --policy-configmap NAMESPACE/NAME not found");
  *strchr(policy, '/') = '\0';
  const char *pname = policy + strlen(policy) + 1;
  const char *sa = mf_str_at(mf_pod_spec(dep), "serviceAccountName", NULL);
  const char *ns = mf_str_at(dep, "metadata", "namespace");
  int granted[NDRA + 3] = {0};
  for (size_t i = 0; i < yt_len(docs); i++) {
    const yt_node_t *b = yt_at(docs, i);
    const char *kind = mf_str_at(b, "kind", NULL);
    if ((mf_streq(kind, "RoleBinding") || mf_streq(kind, "ClusterRoleBinding")) &&
        bound_to(b, sa, ns) &&
        check_role(docs, yt_get(b, "roleRef"), mf_str_at(b, "metadata", "namespace"), policy, pname,
                   granted, why, wl) != 0)
      return -1;
  }
  for (size_t k = 0; k < NDRA; k++)
    if (!granted[k])
      return mf_say(why, wl, "slicefit cannot get/list/watch %s.resource.k8s.io", dra_resources[k]);
  if (!granted[NDRA])
    return mf_say(why, wl, "slicefit cannot get/list/watch its policy ConfigMap %s/%s", policy,
                  pname);
  if (!granted[NDRA + 1])
    return mf_say(why, wl, "slicefit cannot get/list/watch nodes");
  if (!granted[NDRA + 2])
    return mf_say(why, wl, "slicefit cannot get/list/watch pods");
  return 0;
}

/* ---- the Deployment ---- */

int mf_check_probes(const yt_node_t *docs, char *why, size_t wl)
{
  const yt_node_t *ctr = mf_first_container(mf_find(docs, "Deployment", "slicefit"));
  char listen[128];
  if (mf_flag(ctr, "--listen", listen, sizeof listen) != 0 || !mf_streq(listen, "0.0.0.0:8888"))
    return mf_say(why, wl, "slicefit must run with --listen 0.0.0.0:8888");
  /*
   * The probes go to --probe-listen, served on its own thread: a flood of
   * connections on 8888 or a long request on the loop must not turn into
   * liveness restarts.
   */
  char probe[128];
  if (mf_flag(ctr, "--probe-listen", probe, sizeof probe) != 0 || !mf_streq(probe, "0.0.0.0:8891"))
    return mf_say(why, wl, "slicefit must run with --probe-listen 0.0.0.0:8891");
  const char *probes[] = {"livenessProbe", "readinessProbe"}, *paths[] = {"/healthz", "/readyz"};
  for (size_t i = 0; i < 2; i++) {
    const yt_node_t *get = yt_dig(ctr, probes[i], "httpGet", NULL);
    if (!mf_streq(mf_str_at(get, "path", NULL), paths[i]))
      return mf_say(why, wl, "%s must GET %s", probes[i], paths[i]);
    if (mf_port_of(ctr, mf_str_at(get, "port", NULL)) != 8891)
      return mf_say(why, wl, "%s must probe the --probe-listen port 8891", probes[i]);
    const char *scheme = mf_str_at(get, "scheme", NULL);
    if (scheme && !mf_streq(scheme, "HTTP"))
      return mf_say(why, wl, "%s must use HTTP: the probe listener serves plain HTTP", probes[i]);
  }
  /* The Service stops sending before SIGTERM: a sleep the kubelet runs (the image has no shell). */
  const char *sleep = mf_str_at(yt_dig(ctr, "lifecycle", "preStop", "sleep", NULL), "seconds", NULL);
  if (sleep == NULL || atoi(sleep) < 5)
    return mf_say(why, wl, "slicefit needs a preStop sleep of at least 5 s");
  const yt_node_t *pod = yt_dig(mf_find(docs, "Deployment", "slicefit"), "spec", "template", "spec",
                                NULL);
  const char *grace = mf_str_at(pod, "terminationGracePeriodSeconds", NULL);
  if (grace == NULL || atoi(grace) < atoi(sleep) + 10)
    return mf_say(why, wl,
                  "terminationGracePeriodSeconds must cover the preStop sleep and the drain");
  return 0;
}

int mf_check_tls_flags(const yt_node_t *docs, char *why, size_t wl)
{
  const yt_node_t *dep = mf_find(docs, "Deployment", "slicefit");
  const yt_node_t *ctr = mf_first_container(dep);
  const char *flags[] = {"--tls-cert-file", "--tls-private-key-file"},
             *keys[] = {"tls.crt", "tls.key"};
  char path[PATHMAX], policy[256];
  for (size_t i = 0; i < 2; i++) {
    if (mf_flag(ctr, flags[i], path, sizeof path) != 0)
      return mf_say(why, wl, "slicefit needs %s", flags[i]);
    if (!mf_secret_file(mf_volume_for(dep, ctr, path), NULL, keys[i], mf_base(path)))
      return mf_say(why, wl, "%s %s is not the %s key of a mounted Secret", flags[i], path, keys[i]);
  }
  if (mf_flag(ctr, "--client-ca-file", path, sizeof path) != 0)
    return mf_say(why, wl, "slicefit needs --client-ca-file: callers must prove who they are");
  if (!mf_secret_file(mf_volume_for(dep, ctr, path), NULL, "ca.crt", mf_base(path)))
    return mf_say(why, wl, "--client-ca-file %s is not the ca.crt key of a mounted Secret", path);
  if (mf_flag(ctr, "--debug-state-over-tls", path, sizeof path) == 0 && !mf_streq(path, "false"))
    return mf_say(why, wl, "/debug/state must stay off the serving port");
  if (mf_flag(ctr, "--policy-configmap", policy, sizeof policy) != 0 ||
      !mf_streq(policy, "slicefit-system/slicefit-policy"))
    return mf_say(why, wl, "slicefit must watch --policy-configmap slicefit-system/slicefit-policy");
  /* Re-applying the base must not reset a tuned policy: the ConfigMap lives in policy/. */
  if (mf_find(docs, "ConfigMap", "slicefit-policy") != NULL)
    return mf_say(why, wl, "the policy ConfigMap must not be in the base kustomization");
  return 0;
}

static int quantity_le(const yt_node_t *res, const char *what)
{
  sf_milli_t req, lim;
  return sf_quantity_parse(mf_str_at(yt_get(res, "requests"), what, NULL), &req) == 0 &&
         sf_quantity_parse(mf_str_at(yt_get(res, "limits"), what, NULL), &lim) == 0 && req <= lim;
}

/* Non-root, read-only, no escalation, no capabilities, RuntimeDefault, bounded. */
int mf_check_security(const yt_node_t *dep, char *why, size_t wl)
{
  const char *name = mf_str_at(dep, "metadata", "name");
  const yt_node_t *pod = yt_get(mf_pod_spec(dep), "securityContext");
  const yt_node_t *ctrs = yt_get(mf_pod_spec(dep), "containers");
  for (size_t i = 0; i < yt_len(ctrs); i++) {
    const yt_node_t *c = yt_at(ctrs, i), *sc = yt_get(c, "securityContext");
    const char *seccomp = mf_str_at(yt_get(sc, "seccompProfile"), "type", NULL);
    if (seccomp == NULL)
      seccomp = mf_str_at(yt_get(pod, "seccompProfile"), "type", NULL);
    if (!mf_streq(mf_str_at(sc, "runAsNonRoot", NULL), "true") &&
        !mf_streq(mf_str_at(pod, "runAsNonRoot", NULL), "true"))
      return mf_say(why, wl, "%s: runAsNonRoot must be true", name);
    if (!mf_streq(mf_str_at(sc, "readOnlyRootFilesystem", NULL), "true"))
      return mf_say(why, wl, "%s: readOnlyRootFilesystem must be true", name);
    if (!mf_streq(mf_str_at(sc, "allowPrivilegeEscalation", NULL), "false") ||
        mf_streq(mf_str_at(sc, "privileged", NULL), "true"))
      return mf_say(why, wl,
                    "%s: allowPrivilegeEscalation must be false and the container unprivileged",
                    name);
    if (!mf_seq_has(yt_dig(sc, "capabilities", "drop", NULL), "ALL") ||
        yt_dig(sc, "capabilities", "add", NULL))
      return mf_say(why, wl, "%s: capabilities must drop ALL and add none", name);
    if (!mf_streq(seccomp, "RuntimeDefault"))
      return mf_say(why, wl, "%s: seccompProfile must be RuntimeDefault", name);
    if (!quantity_le(yt_get(c, "resources"), "cpu") || !quantity_le(yt_get(c, "resources"), "memory"))
      return mf_say(why, wl, "%s: cpu and memory need requests and limits, requests <= limits", name);
  }
  return yt_len(ctrs) > 0 ? 0 : mf_say(why, wl, "%s has no containers", name);
}

/* Whether every matchLabels pair of `sel` is among `labels`. */
static int selects(const yt_node_t *sel, const yt_node_t *labels)
{
  const yt_node_t *ml = yt_get(sel, "matchLabels");
  for (size_t i = 0; i < yt_len(ml); i++)
    if (!mf_streq(yt_str(yt_get(labels, ml->keys[i])), yt_str(yt_at(ml, i))))
      return 0;
  return yt_len(ml) > 0;
}

static yt_node_t *scheduler_config(const yt_node_t *docs, const yt_node_t **dep_out);

/* Two replicas of Deployment `name` on two nodes, critical priority, a PodDisruptionBudget keeping one. */
static int available(const yt_node_t *docs, const char *name, char *why, size_t wl)
{
  const yt_node_t *dep = mf_find(docs, "Deployment", name);
  const yt_node_t *labels = yt_dig(dep, "spec", "template", "metadata", "labels", NULL);
  const yt_node_t *anti = yt_dig(mf_pod_spec(dep), "affinity", "podAntiAffinity",
                                 "requiredDuringSchedulingIgnoredDuringExecution", NULL);
  if (!mf_streq(mf_str_at(dep, "spec", "replicas"), "2"))
    return mf_say(why, wl, "%s must run 2 replicas", name);
  if (!mf_streq(mf_str_at(mf_pod_spec(dep), "priorityClassName", NULL), "system-cluster-critical"))
    return mf_say(why, wl, "%s needs priorityClassName system-cluster-critical", name);
  int spread = 0;
  for (size_t i = 0; i < yt_len(anti); i++)
    spread |= mf_streq(mf_str_at(yt_at(anti, i), "topologyKey", NULL), "kubernetes.io/hostname") &&
              selects(yt_get(yt_at(anti, i), "labelSelector"), labels);
  if (!spread)
    return mf_say(why, wl, "%s replicas need pod anti-affinity on kubernetes.io/hostname", name);
  for (size_t i = 0; i < yt_len(docs); i++) {
    const yt_node_t *pdb = yt_at(docs, i);
    if (mf_streq(mf_str_at(pdb, "kind", NULL), "PodDisruptionBudget") &&
        mf_streq(mf_str_at(pdb, "spec", "minAvailable"), "1") &&
        selects(yt_dig(pdb, "spec", "selector", NULL), labels))
      return 0;
  }
  return mf_say(why, wl, "a PodDisruptionBudget with minAvailable 1 must select %s's pods", name);
}

int mf_check_availability(const yt_node_t *docs, char *why, size_t wl)
{
  if (available(docs, "slicefit", why, wl) != 0 ||
      available(docs, "slicefit-scheduler", why, wl) != 0)
    return -1;
  /* Two scheduler replicas are safe only under leader election. */
  const yt_node_t *dep = NULL;
  yt_node_t *cfg = scheduler_config(docs, &dep);
  int rc = mf_streq(mf_str_at(yt_get(yt_at(cfg, 0), "leaderElection"), "leaderElect", NULL), "true")
               ? 0
               : mf_say(why, wl, "two scheduler replicas need leaderElection.leaderElect: true");
  yt_free(cfg);
  return rc;
}

/* ---- the Service and the extender configuration ---- */

/* "https://NAME.NAMESPACE.svc:PORT" of the Service that reaches slicefit's --listen port. */
int mf_service_url(const yt_node_t *docs, char *url, size_t len, char *why, size_t wl)
{
  const yt_node_t *dep = mf_find(docs, "Deployment", "slicefit");
  const yt_node_t *labels = yt_dig(dep, "spec", "template", "metadata", "labels", NULL);
  for (size_t i = 0; i < yt_len(docs); i++) {
    const yt_node_t *svc = yt_at(docs, i), *sel = yt_dig(svc, "spec", "selector", NULL);
    const yt_node_t *port = yt_at(yt_dig(svc, "spec", "ports", NULL), 0);
    if (!mf_streq(mf_str_at(svc, "kind", NULL), "Service") || yt_len(sel) == 0)
      continue;
    int match = 1;
    for (size_t k = 0; k < yt_len(sel); k++)
      match &= mf_streq(yt_str(yt_get(labels, sel->keys[k])), yt_str(yt_at(sel, k)));
    if (match && mf_port_of(mf_first_container(dep), mf_str_at(port, "targetPort", NULL)) == 8888) {
      snprintf(url, len, "https://%s.%s.svc:%s", mf_str_at(svc, "metadata", "name"),
               mf_str_at(svc, "metadata", "namespace"), mf_str_at(port, "port", NULL));
      return 0;
    }
  }
  return mf_say(why, wl, "no Service selects slicefit's pods and targets its port 8888");
}

/* The KubeSchedulerConfiguration the scheduler Deployment reads with --config (new). */
static yt_node_t *scheduler_config(const yt_node_t *docs, const yt_node_t **dep_out)
{
  const yt_node_t *dep = mf_find(docs, "Deployment", "slicefit-scheduler");
  const yt_node_t *ctr = mf_first_container(dep);
  char path[PATHMAX];
  if (mf_flag(ctr, "--config", path, sizeof path) != 0)
    return NULL;
  const char *cm = mf_str_at(yt_get(mf_volume_for(dep, ctr, path), "configMap"), "name", NULL);
  const char *text = yt_str(yt_dig(mf_find(docs, "ConfigMap", cm), "data", mf_base(path), NULL));
  *dep_out = dep;
  return text ? mf_docs_of(text) : NULL;
}

/* What both scheduler configurations must say of slicefit. */
int mf_check_extender(const yt_node_t *cfg, const char *url, char *why, size_t wl)
{
  const yt_node_t *exts = yt_get(yt_at(cfg, 0), "extenders"), *e = yt_at(exts, 0);
  if (yt_len(exts) != 1)
    return mf_say(why, wl, "the configuration must name one extender, slicefit");
  if (!mf_streq(mf_str_at(e, "urlPrefix", NULL), url))
    return mf_say(why, wl, "urlPrefix %s is not the Service's %s", mf_str_at(e, "urlPrefix", NULL),
                  url);
  if (!mf_streq(mf_str_at(e, "filterVerb", NULL), "filter") ||
      !mf_streq(mf_str_at(e, "prioritizeVerb", NULL), "prioritize"))
    return mf_say(why, wl, "filterVerb must be filter and prioritizeVerb prioritize");
  const char *w = mf_str_at(e, "weight", NULL);
  if (w == NULL || atol(w) <= 0)
    return mf_say(why, wl, "prioritize needs a positive weight");
  if (!mf_streq(mf_str_at(e, "nodeCacheCapable", NULL), "true") ||
      !mf_streq(mf_str_at(e, "enableHTTPS", NULL), "true"))
    return mf_say(why, wl, "nodeCacheCapable and enableHTTPS must be true");
  if (mf_str_at(e, "tlsConfig", "caFile") == NULL ||
      mf_streq(mf_str_at(e, "tlsConfig", "insecure"), "true"))
    return mf_say(why, wl, "tlsConfig must name a caFile and verify the certificate");
  if (mf_str_at(e, "httpTimeout", NULL) == NULL || mf_str_at(e, "ignorable", NULL) == NULL)
    return mf_say(why, wl, "httpTimeout and ignorable must be set on purpose");
  if (yt_len(yt_get(e, "managedResources")) > 0 || yt_get(e, "bindVerb") || yt_get(e, "preemptVerb"))
    return mf_say(why, wl,
                  "no managedResources (they would hide claim-only pods), no bind or preempt");
  return 0;
}

int mf_has_profile(const yt_node_t *cfg, const char *name)
{
  const yt_node_t *profiles = yt_get(yt_at(cfg, 0), "profiles");
  for (size_t i = 0; i < yt_len(profiles); i++)
    if (mf_streq(mf_str_at(yt_at(profiles, i), "schedulerName", NULL), name))
      return 1;
  return 0;
}

/* The second scheduler: the profile, the extender, and the CA file mounted from the Secret. */
/* The extender's certFile and keyFile: tls.crt and tls.key of the mounted slicefit-scheduler-client. */
static int client_cert(const yt_node_t *cfg, const yt_node_t *dep, char *why, size_t wl)
{
  const yt_node_t *tls = yt_get(yt_at(yt_get(yt_at(cfg, 0), "extenders"), 0), "tlsConfig");
  const char *names[] = {"certFile", "keyFile"}, *keys[] = {"tls.crt", "tls.key"};
  for (int i = 0; i < 2; i++) {
    const char *f = mf_str_at(tls, names[i], NULL);
    if (f == NULL || !mf_secret_file(mf_volume_for(dep, mf_first_container(dep), f),
                                     "slicefit-scheduler-client", keys[i], mf_base(f)))
      return mf_say(why, wl,
                    "tlsConfig.%s must be the %s of the mounted Secret "
                    "slicefit-scheduler-client",
                    names[i], keys[i]);
  }
  return 0;
}

int mf_check_second_scheduler(const yt_node_t *docs, char *why, size_t wl)
{
  char url[512];
  const yt_node_t *dep = NULL;
  if (mf_service_url(docs, url, sizeof url, why, wl) != 0)
    return -1;
  yt_node_t *cfg = scheduler_config(docs, &dep);
  int rc = -1;
  if (cfg == NULL)
    return mf_say(why, wl,
                  "the slicefit-scheduler Deployment must read its --config from a mounted ConfigMap");
  if (!mf_has_profile(cfg, "slicefit-scheduler"))
    mf_say(why, wl, "the scheduler configuration needs the profile slicefit-scheduler");
  else if (mf_check_extender(cfg, url, why, wl) == 0) {
    const char *ca = mf_str_at(yt_get(yt_at(yt_get(yt_at(cfg, 0), "extenders"), 0), "tlsConfig"),
                               "caFile", NULL);
    const yt_node_t *slicefit = mf_find(docs, "Deployment", "slicefit");
    char cert[PATHMAX] = "";
    mf_flag(mf_first_container(slicefit), "--tls-cert-file", cert, sizeof cert);
    const char *secret = mf_str_at(yt_get(mf_volume_for(slicefit, mf_first_container(slicefit), cert),
                                          "secret"),
                                   "secretName", NULL);
    if (mf_secret_file(mf_volume_for(dep, mf_first_container(dep), ca), secret, "ca.crt",
                       mf_base(ca)))
      rc = client_cert(cfg, dep, why, wl);
    else
      mf_say(why, wl, "caFile %s is not the ca.crt of slicefit's Secret %s, mounted", ca,
             secret ? secret : "?");
  }
  yt_free(cfg);
  return rc;
}

/* ---- the policy ConfigMap ---- */

int mf_check_policy(const yt_node_t *docs, char *why, size_t wl)
{
  const yt_node_t *data = yt_get(mf_find(docs, "ConfigMap", "slicefit-policy"), "data");
  size_t nk;
  const sf_policy_key_t *keys = sf_policy_keys(&nk);
  for (size_t i = 0; i < nk; i++)
    if (yt_str(yt_get(data, keys[i].key)) == NULL)
      return mf_say(why, wl, "the policy ConfigMap lacks the key %s", keys[i].key);
  if (yt_len(data) != nk)
    return mf_say(why, wl, "the policy ConfigMap has %zu keys, the daemon accepts %zu", yt_len(data),
                  nk);
  const char *k[64], *v[64];
  if (nk > 64)
    return mf_say(why, wl, "more policy keys than this test handles");
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
      rc = mf_say(why, wl,
                  "policy %s is \"%s\" but the default is \"%s\": the file promises defaults",
                  keys[i].key, a, b);
  }
  sf_policy_dispose(&pol);
  sf_policy_dispose(&def);
  return rc;
}

/* Each key in the source file has a comment right above it (or above its blank line). */
int mf_check_policy_comments(const char *text, char *why, size_t wl)
{
  size_t nk;
  const sf_policy_key_t *keys = sf_policy_keys(&nk);
  for (size_t i = 0; i < nk; i++) {
    char pat[192];
    snprintf(pat, sizeof pat, "\n  %s:", keys[i].key);
    const char *at = strstr(text, pat);
    if (at == NULL)
      return mf_say(why, wl, "policy-configmap.yaml has no line for %s", keys[i].key);
    const char *prev = at;
    while (prev > text && prev[-1] != '\n')
      prev--;
    if (strncmp(prev, "  #", 3) != 0)
      return mf_say(why, wl, "policy-configmap.yaml: %s has no comment above it", keys[i].key);
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
int mf_each_cel(const yt_node_t *selectors, int (*fn)(const char *, char *, size_t), char *why,
                size_t wl)
{
  for (size_t i = 0; i < yt_len(selectors); i++) {
    const char *e = mf_str_at(yt_at(selectors, i), "cel", "expression");
    if (e == NULL || fn(e, why, wl) != 0)
      return e == NULL ? mf_say(why, wl, "a selector without a CEL expression") : -1;
  }
  return 0;
}

static int nvidia_driver(const char *expr, char *why, size_t wl)
{
  char s[4096];
  squeeze(expr, s, sizeof s);
  return strstr(s, "device.driver=='gpu.nvidia.com'")
             ? 0
             : mf_say(why, wl, "selector does not require device.driver == \"gpu.nvidia.com\": %s",
                      expr);
}

int mf_check_classes(const yt_node_t *docs, char *why, size_t wl)
{
  size_t legacy = 0;
  for (size_t i = 0; i < NMENU; i++) {
    const yt_node_t *dc = mf_find(docs, "DeviceClass", mf_menu[i]);
    const yt_node_t *sel = yt_dig(dc, "spec", "selectors", NULL);
    if (dc == NULL || yt_len(sel) == 0)
      return mf_say(why, wl, "DeviceClass %s with a CEL selector is missing", mf_menu[i]);
    if (!mf_streq(mf_str_at(dc, "apiVersion", NULL), "resource.k8s.io/v1"))
      return mf_say(why, wl, "DeviceClass %s must be resource.k8s.io/v1", mf_menu[i]);
    if (mf_each_cel(sel, nvidia_driver, why, wl) != 0)
      return -1;
    legacy += mf_streq(mf_str_at(dc, "spec", "extendedResourceName"), "nvidia.com/gpu");
  }
  if (legacy != 1 || !mf_streq(mf_str_at(mf_find(docs, "DeviceClass", "gpu-whole-card"), "spec",
                                         "extendedResourceName"),
                               "nvidia.com/gpu"))
    return mf_say(why, wl,
                  "gpu-whole-card, and only it, must serve nvidia.com/gpu (extendedResourceName)");
  return 0;
}

int mf_cel_compiles(const char *expr, char *why, size_t wl)
{
  sf_cel_cache_t *c = sf_cel_cache_create();
  const char *err = sf_cel_prog_error(sf_cel_compile(c, expr));
  int rc = err ? mf_say(why, wl, "CEL does not compile: %s: %s", err, expr) : 0;
  sf_cel_cache_destroy(c);
  return rc;
}

/* ---- examples ---- */

static int in_menu(const char *cls)
{
  for (size_t i = 0; i < NMENU; i++)
    if (mf_streq(cls, mf_menu[i]))
      return 1;
  return 0;
}

/* Every request of a claim template asks for a class of the menu. */
static int check_template(const yt_node_t *rct, char *why, size_t wl)
{
  const yt_node_t *reqs = yt_dig(rct, "spec", "spec", "devices", "requests", NULL);
  for (size_t i = 0; i < yt_len(reqs); i++)
    if (!in_menu(mf_str_at(yt_get(yt_at(reqs, i), "exactly"), "deviceClassName", NULL)))
      return mf_say(why, wl, "template %s asks for a class outside the menu",
                    mf_str_at(rct, "metadata", "name"));
  return yt_len(reqs)
             ? 0
             : mf_say(why, wl, "template %s has no request", mf_str_at(rct, "metadata", "name"));
}

/* A pod opts into slicefit-scheduler and each of its claims comes from a template here. */
static int check_pod(const yt_node_t *docs, const yt_node_t *pod, char *why, size_t wl)
{
  const char *name = mf_str_at(pod, "metadata", "name");
  const yt_node_t *claims = yt_dig(pod, "spec", "resourceClaims", NULL);
  if (!mf_streq(mf_str_at(pod, "spec", "schedulerName"), "slicefit-scheduler"))
    return mf_say(why, wl, "example pod %s must set schedulerName: slicefit-scheduler", name);
  for (size_t i = 0; i < yt_len(claims); i++) {
    const yt_node_t *rct = mf_find(docs, "ResourceClaimTemplate",
                                   mf_str_at(yt_at(claims, i), "resourceClaimTemplateName", NULL));
    if (rct == NULL || check_template(rct, why, wl) != 0)
      return rct ? -1 : mf_say(why, wl, "pod %s names a claim template the examples lack", name);
  }
  return 0;
}

/* The first claim template whose first request satisfies `want`, or NULL. */
static const yt_node_t *template_where(const yt_node_t *docs, int (*want)(const yt_node_t *))
{
  for (size_t i = 0; i < yt_len(docs); i++) {
    const yt_node_t *d = yt_at(docs, i);
    const yt_node_t *req = yt_at(yt_dig(d, "spec", "spec", "devices", "requests", NULL), 0);
    if (mf_streq(mf_str_at(d, "kind", NULL), "ResourceClaimTemplate") && want(yt_get(req, "exactly")))
      return d;
  }
  return NULL;
}

static int is_4gi_share(const yt_node_t *ex)
{
  sf_milli_t v;
  return mf_streq(mf_str_at(ex, "deviceClassName", NULL), "gpu-shared-small") &&
         sf_quantity_parse(yt_str(yt_dig(ex, "capacity", "requests", "memory", NULL)), &v) == 0 &&
         v == (sf_milli_t)4 * 1024 * 1024 * 1024 * 1000;
}

static int is_model_card(const yt_node_t *ex)
{
  const char *e = mf_str_at(yt_at(yt_get(ex, "selectors"), 0), "cel", "expression");
  return mf_streq(mf_str_at(ex, "deviceClassName", NULL), "gpu-whole-card") && e &&
         strstr(e, "productName") && mf_str_at(ex, "count", NULL) == NULL;
}

static int is_pair(const yt_node_t *ex)
{
  return mf_streq(mf_str_at(ex, "count", NULL), "2");
}

/* A pod with `nvidia.com/gpu: 1` and no claims, served by a class of the menu. */
static int has_legacy_pod(const yt_node_t *docs, const yt_node_t *main_docs)
{
  for (size_t i = 0; i < yt_len(docs); i++) {
    const yt_node_t *d = yt_at(docs, i);
    const yt_node_t *ctr = yt_at(yt_dig(d, "spec", "containers", NULL), 0);
    if (mf_streq(mf_str_at(d, "kind", NULL), "Pod") &&
        yt_dig(d, "spec", "resourceClaims", NULL) == NULL &&
        mf_streq(yt_str(yt_dig(ctr, "resources", "limits", "nvidia.com/gpu", NULL)), "1"))
      return mf_streq(mf_str_at(mf_find(main_docs, "DeviceClass", "gpu-whole-card"), "spec",
                                "extendedResourceName"),
                      "nvidia.com/gpu");
  }
  return 0;
}

int mf_check_examples(const yt_node_t *ex, const yt_node_t *main_docs, char *why, size_t wl)
{
  for (size_t i = 0; i < yt_len(ex); i++)
    if (mf_streq(mf_str_at(yt_at(ex, i), "kind", NULL), "Pod") &&
        check_pod(ex, yt_at(ex, i), why, wl) != 0)
      return -1;
  if (template_where(ex, is_4gi_share) == NULL)
    return mf_say(why, wl, "no example asks gpu-shared-small for capacity.requests.memory 4Gi");
  if (template_where(ex, is_model_card) == NULL)
    return mf_say(why, wl, "no example asks for one whole card of a model (productName)");
  const yt_node_t *devs = yt_dig(template_where(ex, is_pair), "spec", "spec", "devices", NULL);
  const yt_node_t *cons = yt_at(yt_get(devs, "constraints"), 0);
  const char *attr = mf_str_at(cons, "matchAttribute", NULL);
  if (attr == NULL || strchr(attr, '/') == NULL ||
      !mf_seq_has(yt_get(cons, "requests"),
                  mf_str_at(yt_at(yt_get(devs, "requests"), 0), "name", NULL)))
    return mf_say(
        why, wl,
        "the 2-GPU example needs a matchAttribute on a fully qualified attribute over its request");
  if (!has_legacy_pod(ex, main_docs))
    return mf_say(why, wl, "no legacy nvidia.com/gpu: 1 pod served through extendedResourceName");
  return 0;
}
