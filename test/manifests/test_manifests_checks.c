/* The manifests/ checks on small broken inputs: they catch what they are meant to. */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "slicefit/policy.h"
#include "slicefit/quantity.h"
#include "slicefit/cel.h"
#include "manifests.h"

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
  yt_node_t *docs = mf_docs_of(yaml);
  int rc = mf_check_rbac(docs, why, wl);
  yt_free(docs);
  return rc;
}

#define DRA_RULE \
  "- {apiGroups: [resource.k8s.io], resources: [resourceslices, resourceclaims, deviceclasses, devicetaintrules], "
#define NODE_RULE "- {apiGroups: [''], resources: [nodes, pods], verbs: [get, list, watch]}\n"

Test(manifests_checks, rbac_check_accepts_the_minimal_grant)
{
  CHECK(rbac_with, DRA_RULE "verbs: [get, list, watch]}\n" NODE_RULE);
  CHECK(rbac_with, DRA_RULE "verbs: [get, list, watch]}\n" NODE_RULE
                            "- {apiGroups: [''], resources: [pods/eviction], verbs: [create]}\n");
}

Test(manifests_checks, rbac_check_allows_evictions_and_no_other_write)
{
  const char *bad[][2] = {
      {"- {apiGroups: [''], resources: [pods/eviction], verbs: [create, delete]}\n",
       "pods/eviction must be alone"},
      {"- {apiGroups: [''], resources: [pods/eviction, pods], verbs: [create]}\n",
       "pods/eviction must be alone"},
      {"- {apiGroups: [policy], resources: [pods/eviction], verbs: [create]}\n",
       "pods/eviction must be alone"},
      {"- {apiGroups: [''], resources: [pods/eviction], resourceNames: [a], verbs: [create]}\n",
       "pods/eviction must be alone"},
      {"- {apiGroups: [''], resources: [pods], verbs: [create]}\n", "verbs must be exactly"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char rules[1024], why[512] = "";
    snprintf(rules, sizeof rules, DRA_RULE "verbs: [get, list, watch]}\n" NODE_RULE "%s", bad[i][0]);
    cr_assert_neq(rbac_with(rules, why, sizeof why), 0, "accepted: %s", bad[i][0]);
    cr_assert(strstr(why, bad[i][1]) != NULL, "%s: %s", bad[i][0], why);
  }
}

Test(manifests_checks, rbac_check_rejects_more)
{
  const char *bad[][2] = {
      {DRA_RULE "verbs: [get, list, watch, update]}\n", "verbs must be exactly"},
      {DRA_RULE "verbs: ['*']}\n", "verbs must be exactly"},
      {DRA_RULE "verbs: [get, list]}\n", "verbs must be exactly"},
      {DRA_RULE
       "verbs: [get, list, watch]}\n- {apiGroups: [''], resources: [nodes, pods/log], verbs: [get, list, watch]}\n",
       "grants pods/log"},
      {DRA_RULE
       "verbs: [get, list, watch]}\n- {apiGroups: [''], resources: [nodes, secrets], verbs: [get, list, watch]}\n",
       "grants secrets"},
      {DRA_RULE
       "verbs: [get, list, watch]}\n- {apiGroups: [''], resources: [nodes], verbs: [get, list, watch]}\n",
       "cannot get/list/watch pods"},
      {DRA_RULE
       "verbs: [get, list, watch]}\n- {apiGroups: [''], resources: [configmaps], verbs: [get, list, watch]}\n",
       "grants configmaps"},
      {"- {apiGroups: [resource.k8s.io], resources: [resourceslices, resourceclaims, deviceclasses], "
       "verbs: [get, list, watch]}\n",
       "cannot get/list/watch devicetaintrules"},
      {"- {apiGroups: [resource.k8s.io], resources: ['*'], verbs: [get, list, watch]}\n", "grants *"},
      {DRA_RULE
       "verbs: [get, list, watch]}\n- {nonResourceURLs: ['/metrics'], verbs: [get, list, watch]}\n",
       "no URLs"},
      {DRA_RULE "verbs: [get, list, watch]}\n", "cannot get/list/watch nodes"},
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
      {"urlPrefix: https://slicefit.other.svc:8888", "is not the Service's"},
      {"urlPrefix: http://slicefit.ns.svc:8888", "is not the Service's"},
      {"urlPrefix: https://slicefit.ns.svc:9999", "is not the Service's"},
      {"urlPrefix: https://slicefit.ns.svc:8888\n  weight: 0", "positive weight"},
      {"urlPrefix: https://slicefit.ns.svc:8888\n  nodeCacheCapable: false", "nodeCacheCapable"},
      {"urlPrefix: https://slicefit.ns.svc:8888\n  managedResources: [{name: nvidia.com/gpu}]",
       "managedResources"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char yaml[2048], w[WHY] = "";
    /* A later duplicate key would be ignored by yt_get, so the case's keys come first. */
    snprintf(yaml, sizeof yaml,
             "extenders:\n- %s\n  urlPrefix: x\n  filterVerb: filter\n"
             "  prioritizeVerb: prioritize\n  weight: 1\n  nodeCacheCapable: true\n  enableHTTPS: true\n"
             "  tlsConfig: {caFile: /ca.crt}\n  httpTimeout: 2s\n  ignorable: false\n",
             cases[i][0]);
    yt_node_t *cfg = mf_docs_of(yaml);
    cr_expect(mf_check_extender(cfg, "https://slicefit.ns.svc:8888", w, sizeof w) != 0,
              "accepted: %s", cases[i][0]);
    cr_expect(strstr(w, cases[i][1]) != NULL, "case %zu: \"%s\" does not say \"%s\"", i, w,
              cases[i][1]);
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
      snprintf(yaml + strlen(yaml), sizeof yaml - strlen(yaml), "  %s: \"%s\"\n", keys[i].key,
               keys[i].def);
  snprintf(yaml + strlen(yaml), sizeof yaml - strlen(yaml), "%s", extra);
  return mf_docs_of(yaml);
}

Test(manifests_checks, policy_check_accepts_the_defaults)
{
  yt_node_t *docs = policy_doc("", "");
  CHECK(mf_check_policy, docs);
  yt_free(docs);
}

Test(manifests_checks, policy_check_rejects_missing_unknown_and_bad_keys)
{
  const char *cases[][3] = {
      {"strategy", "", "lacks the key strategy"},
      {"", "  colour: blue\n", "keys, the daemon accepts"},
      {"weight_frag", "  weight_frag: \"-1\"\n", "weight_frag"},
      {"strategy", "  strategy: pack\n", "pack"},
      {"max_sharers", "  max_sharers: \"4\"\n", "the default is"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char w[WHY] = "";
    yt_node_t *docs = policy_doc(cases[i][0], cases[i][1]);
    cr_expect(mf_check_policy(docs, w, sizeof w) != 0, "accepted case %zu", i);
    cr_expect(strstr(w, cases[i][2]) != NULL, "case %zu: \"%s\" does not say \"%s\"", i, w,
              cases[i][2]);
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
  yt_node_t *docs = mf_docs_of(yaml);
  char w[WHY] = "";
  cr_expect(mf_check_security(yt_at(docs, 0), w, sizeof w) != 0);
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
  cr_expect(mf_check_policy_comments(text, w, sizeof w) != 0);
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
