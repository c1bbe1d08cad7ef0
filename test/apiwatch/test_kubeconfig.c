/* kubeconfig resolution and in-cluster config; errors name the file and the field. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "slicefit/apiwatch.h"

static int parse(sf_kubeconfig_t *kc, const char *yaml, char *err)
{
  return sf_kubeconfig_parse(kc, yaml, strlen(yaml), "kc.yaml", "/etc/kube", err, SF_ERR_MAX);
}

static const char FULL[] =
    "apiVersion: v1\nkind: Config\ncurrent-context: prod\n"
    "clusters:\n"
    "- name: dev\n  cluster:\n    server: http://127.0.0.1:1\n"
    "- name: prod\n  cluster:\n    server: https://10.0.0.1:6443/\n"
    "    certificate-authority-data: LS0tLS1CRUdJTg==\n"
    "contexts:\n"
    "- name: prod\n  context:\n    cluster: prod\n    user: admin\n    namespace: x\n"
    "users:\n"
    "- name: admin\n  user:\n    client-certificate: certs/admin.crt\n"
    "    client-key: /abs/admin.key\n    tokenFile: tok\n";

Test(kubeconfig, resolves_the_current_context)
{
  sf_kubeconfig_t kc;
  char err[SF_ERR_MAX] = "";
  cr_assert_eq(parse(&kc, FULL, err), 0, "%s", err);
  cr_assert_str_eq(kc.server, "https://10.0.0.1:6443");
  cr_assert_eq(kc.ca_len, 10);
  cr_assert_eq(memcmp(kc.ca_data, "-----BEGIN", 10), 0);
  cr_assert_null(kc.ca_file);
  cr_assert_str_eq(kc.cert_file, "/etc/kube/certs/admin.crt");
  cr_assert_str_eq(kc.key_file, "/abs/admin.key");
  cr_assert_str_eq(kc.token_file, "/etc/kube/tok");
  cr_assert_not(kc.insecure);
  sf_kubeconfig_dispose(&kc);
}

Test(kubeconfig, insecure_and_fixed_token)
{
  sf_kubeconfig_t kc;
  char err[SF_ERR_MAX] = "";
  const char *y = "current-context: c\nclusters:\n- name: k\n  cluster:\n    server: https://h\n"
                  "    insecure-skip-tls-verify: true\ncontexts:\n- name: c\n  context:\n"
                  "    cluster: k\n    user: u\nusers:\n- name: u\n  user:\n    token: abc\n";
  cr_assert_eq(parse(&kc, y, err), 0, "%s", err);
  cr_assert(kc.insecure);
  char *tok = sf_kubeconfig_token(&kc, err, sizeof err);
  cr_assert_str_eq(tok, "abc");
  free(tok);
  sf_kubeconfig_dispose(&kc);
}

static void bad(const char *yaml, const char *want)
{
  sf_kubeconfig_t kc;
  char err[SF_ERR_MAX] = "";
  cr_assert_neq(parse(&kc, yaml, err), 0, "accepted: %s", yaml);
  cr_assert(strstr(err, "kc.yaml"), "names the file: %s", err);
  cr_assert(strstr(err, want), "want '%s' in: %s", want, err);
  cr_assert_null(kc.server, "zeroed on error");
}

Test(kubeconfig, errors_name_the_field)
{
  bad("- a list", "not a YAML mapping");
  bad("a: [1", "line");
  bad("kind: Config\n", "current-context: missing");
  bad("current-context: nope\ncontexts: []\n", "contexts: no entry named \"nope\"");
  bad("current-context: c\ncontexts:\n- name: c\n  context:\n    cluster: k\n", "clusters: no entry");
  bad("current-context: c\ncontexts:\n- name: c\n  context:\n    cluster: k\nclusters:\n- name: k\n"
      "  cluster:\n    server: ftp://x\n",
      "clusters[name=k].cluster.server");
  bad("current-context: c\ncontexts:\n- name: c\n  context:\n    cluster: k\nclusters:\n- name: k\n"
      "  cluster:\n    server: http://x\n    insecure-skip-tls-verify: maybe\n",
      "insecure-skip-tls-verify: 'maybe' is not a boolean");
  bad("current-context: c\ncontexts:\n- name: c\n  context:\n    cluster: k\nclusters:\n- name: k\n"
      "  cluster:\n    server: http://x\n    certificate-authority-data: '!!!'\n",
      "certificate-authority-data: not base64");
  bad("current-context: c\ncontexts:\n- name: c\n  context:\n    cluster: k\n    user: u\n"
      "clusters:\n- name: k\n  cluster:\n    server: http://x\nusers:\n- name: u\n  user:\n"
      "    exec: {command: aws}\n",
      "users[name=u].user.exec: not supported");
  bad("current-context: c\ncontexts:\n- name: c\n  context:\n    cluster: k\n    user: u\n"
      "clusters:\n- name: k\n  cluster:\n    server: http://x\nusers:\n- name: u\n  user:\n"
      "    client-certificate: a.crt\n",
      "client-key: missing");
  bad("current-context: [x]\n", "current-context: not a string");
}

Test(kubeconfig, load_names_a_missing_file)
{
  sf_kubeconfig_t kc;
  char err[SF_ERR_MAX] = "";
  cr_assert_eq(sf_kubeconfig_load(&kc, "/nonexistent/kc", err, sizeof err), SF_ENOENT);
  cr_assert(strstr(err, "/nonexistent/kc"), "%s", err);
}

Test(kubeconfig, in_cluster_rereads_the_rotated_token)
{
  char dir[] = "/tmp/sf-sa-XXXXXX", tok[64], ca[64];
  cr_assert(mkdtemp(dir));
  snprintf(tok, sizeof tok, "%s/token", dir);
  snprintf(ca, sizeof ca, "%s/ca.crt", dir);
  FILE *f = fopen(tok, "w");
  fputs("one\n", f);
  fclose(f);
  setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  sf_incluster_paths_t paths = {tok, ca};
  sf_kubeconfig_t kc;
  char err[SF_ERR_MAX] = "";
  cr_assert_eq(sf_kubeconfig_incluster(&kc, &paths, err, sizeof err), 0, "%s", err);
  cr_assert_str_eq(kc.server, "https://[fd00::1]:443");
  cr_assert_str_eq(kc.ca_file, ca);
  char *t = sf_kubeconfig_token(&kc, err, sizeof err);
  cr_assert_str_eq(t, "one");
  free(t);
  f = fopen(tok, "w");
  fputs("two", f);
  fclose(f);
  t = sf_kubeconfig_token(&kc, err, sizeof err);
  cr_assert_str_eq(t, "two", "the rotated token is read");
  free(t);
  unlink(tok);
  cr_assert_null(sf_kubeconfig_token(&kc, err, sizeof err));
  cr_assert(strstr(err, tok), "%s", err);
  sf_kubeconfig_dispose(&kc);
  rmdir(dir);
}

Test(kubeconfig, in_cluster_needs_both_variables)
{
  unsetenv("KUBERNETES_SERVICE_PORT");
  setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
  sf_kubeconfig_t kc;
  char err[SF_ERR_MAX] = "";
  cr_assert_eq(sf_kubeconfig_incluster(&kc, NULL, err, sizeof err), SF_ENOENT);
  cr_assert(strstr(err, "KUBERNETES_SERVICE_PORT"), "%s", err);
}

Test(kubeconfig, token_with_a_newline_inside_is_refused)
{
  sf_kubeconfig_t kc = {0};
  char err[SF_ERR_MAX] = "";
  kc.token = (char[]){"abc\r\nX-Evil: 1"};
  cr_assert_null(sf_kubeconfig_token(&kc, err, sizeof err));
  cr_assert(strstr(err, "control character"), "%s", err);
}

/* ---- inputs refused at start ---- */

static const char *cluster_only(char *buf, size_t cap, const char *cluster_lines)
{
  snprintf(buf, cap,
           "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
           "clusters:\n- name: k\n  cluster:\n%s"
           "contexts:\n- name: c\n  context:\n    cluster: k\n    user: u\n"
           "users:\n- name: u\n  user:\n    token: secret\n",
           cluster_lines);
  return buf;
}

Test(kubeconfig, server_without_a_host_is_refused)
{
  const char *bad[] = {"    server: https://\n", "    server: https:///\n",
                       "    server: https:///api\n", "    server: http://:6443\n"};
  char y[1024], err[SF_ERR_MAX];
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    sf_kubeconfig_t kc;
    cr_assert_eq(parse(&kc, cluster_only(y, sizeof y, bad[i]), err), SF_EINVAL, "%s", bad[i]);
    cr_assert(strstr(err, "names no host"), "%s", err);
  }
}

Test(kubeconfig, insecure_skip_verify_with_a_ca_is_refused)
{
  char y[1024], err[SF_ERR_MAX];
  sf_kubeconfig_t kc;
  cr_assert_eq(parse(&kc,
                     cluster_only(y, sizeof y,
                                  "    server: https://10.0.0.1:6443\n"
                                  "    insecure-skip-tls-verify: true\n"
                                  "    certificate-authority-data: LS0tLS1CRUdJTg==\n"),
                     err),
               SF_EINVAL);
  cr_assert(strstr(err, "insecure-skip-tls-verify and a certificate authority"), "%s", err);
  cr_assert_eq(parse(&kc,
                     cluster_only(y, sizeof y,
                                  "    server: https://10.0.0.1:6443\n"
                                  "    insecure-skip-tls-verify: true\n"),
                     err),
               0, "%s", err);
  sf_kubeconfig_dispose(&kc);
}

Test(kubeconfig, bearer_token_over_plain_http_is_refused_unless_allowed)
{
  char y[1024], err[SF_ERR_MAX];
  sf_kubeconfig_t kc;
  cr_assert_eq(parse(&kc, cluster_only(y, sizeof y, "    server: http://10.0.0.1:8080\n"), err), 0);
  cr_assert_eq(sf_kubeconfig_check_transport(&kc, false, err, sizeof err), SF_EINVAL);
  cr_assert(strstr(err, "plain http"), "%s", err);
  cr_assert_eq(sf_kubeconfig_check_transport(&kc, true, err, sizeof err), 0);
  sf_kubeconfig_dispose(&kc);
  cr_assert_eq(parse(&kc, cluster_only(y, sizeof y, "    server: https://10.0.0.1:6443\n"), err), 0);
  cr_assert_eq(sf_kubeconfig_check_transport(&kc, false, err, sizeof err), 0);
  sf_kubeconfig_dispose(&kc);
}
