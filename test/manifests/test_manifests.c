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
 *
 * The checks are in manifests_checks.c, the YAML loading in manifests_yaml.c,
 * the tests on broken inputs in test_manifests_checks.c.
 */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "slicefit/policy.h"
#include "slicefit/quantity.h"
#include "slicefit/cel.h"
#include "manifests.h"

/* ---- tests over the real manifests ---- */

/* The rendered main kustomization, for the tests of the suite "manifests". */
static yt_node_t *rendered;

static void setup(void)
{
  rendered = mf_render("manifests");
}

static void teardown(void)
{
  yt_free(rendered);
}

Test(manifests, renders_the_expected_objects, .init = setup, .fini = teardown)
{
  const char *want[][2] = {{"Namespace", "slicefit-system"},
                           {"ServiceAccount", "slicefit"},
                           {"Deployment", "slicefit"},
                           {"Service", "slicefit"},
                           {"PodDisruptionBudget", "slicefit"},
                           {"Deployment", "slicefit-scheduler"},
                           {"ClusterRole", "slicefit"},
                           {"PodDisruptionBudget", "slicefit-scheduler"}};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    cr_expect(mf_find(rendered, want[i][0], want[i][1]) != NULL, "%s %s is missing", want[i][0],
              want[i][1]);
  for (size_t i = 0; i < yt_len(rendered); i++) {
    const yt_node_t *d = yt_at(rendered, i);
    const char *kind = mf_str_at(d, "kind", NULL);
    int cluster = mf_streq(kind, "Namespace") || mf_streq(kind, "ClusterRole") ||
                  mf_streq(kind, "ClusterRoleBinding") || mf_streq(kind, "DeviceClass");
    cr_expect(cluster || mf_str_at(d, "metadata", "namespace") != NULL, "%s %s has no namespace",
              kind, mf_str_at(d, "metadata", "name"));
  }
}

Test(manifests, rbac_is_get_list_watch_on_the_dra_objects_and_the_policy_only, .init = setup,
     .fini = teardown)
{
  CHECK(mf_check_rbac, rendered);
}

Test(manifests, deployment_probes_and_flags, .init = setup, .fini = teardown)
{
  CHECK(mf_check_probes, rendered);
  CHECK(mf_check_tls_flags, rendered);
}

Test(manifests, deployments_are_locked_down, .init = setup, .fini = teardown)
{
  CHECK(mf_check_security, mf_find(rendered, "Deployment", "slicefit"));
  CHECK(mf_check_security, mf_find(rendered, "Deployment", "slicefit-scheduler"));
  CHECK(mf_check_availability, rendered);
}

Test(manifests, extender_url_names_the_service, .init = setup, .fini = teardown)
{
  CHECK(mf_check_second_scheduler, rendered);
}

Test(manifests, default_scheduler_file_configures_the_same_extender, .init = setup, .fini = teardown)
{
  yt_node_t *cfg = mf_load("manifests/default-scheduler/kube-scheduler-config.yaml");
  char url[512];
  const yt_node_t *e = yt_at(yt_get(yt_at(cfg, 0), "extenders"), 0);
  CHECK(mf_service_url, rendered, url, sizeof url);
  CHECK(mf_check_extender, cfg, url);
  cr_expect(mf_has_profile(cfg, "default-scheduler"), "the file must configure default-scheduler");
  cr_expect(mf_streq(mf_str_at(e, "tlsConfig", "serverName"), "slicefit.slicefit-system.svc"),
            "serverName must be the Service's name, so a ClusterIP urlPrefix still verifies");
  cr_expect(mf_streq(mf_str_at(e, "ignorable", NULL), "true"),
            "the default scheduler also places slicefit's own pods: ignorable must be true");
  yt_free(cfg);
}

Test(manifests, policy_configmap_holds_every_key_the_daemon_accepts, .init = setup, .fini = teardown)
{
  size_t len;
  char *text = mf_read_file("manifests/policy/policy-configmap.yaml", &len);
  yt_node_t *policy = mf_render("manifests/policy");
  CHECK(mf_check_policy, policy);
  CHECK(mf_check_policy_comments, text);
  cr_assert_eq(yt_len(policy), 1, "manifests/policy holds the policy ConfigMap alone");
  cr_assert_null(mf_find(rendered, "ConfigMap", "slicefit-policy"),
                 "re-applying the base would reset a tuned policy");
  yt_free(policy);
  free(text);
}

Test(manifests, deviceclass_menu_for_the_nvidia_driver, .init = setup, .fini = teardown)
{
  CHECK(mf_check_classes, rendered);
}

Test(manifests, deviceclass_and_example_cel_compiles, .init = setup, .fini = teardown)
{
  yt_node_t *ex = mf_render("manifests/examples");
  for (size_t i = 0; i < NMENU; i++)
    CHECK(mf_each_cel,
          yt_dig(mf_find(rendered, "DeviceClass", mf_menu[i]), "spec", "selectors", NULL),
          mf_cel_compiles);
  for (size_t i = 0; i < yt_len(ex); i++) {
    const yt_node_t *reqs = yt_dig(yt_at(ex, i), "spec", "spec", "devices", "requests", NULL);
    for (size_t r = 0; r < yt_len(reqs); r++)
      CHECK(mf_each_cel, yt_dig(yt_at(reqs, r), "exactly", "selectors", NULL), mf_cel_compiles);
  }
  yt_free(ex);
}

Test(manifests, examples_cover_the_four_shapes, .init = setup, .fini = teardown)
{
  yt_node_t *ex = mf_render("manifests/examples");
  CHECK(mf_check_examples, ex, rendered);
  yt_free(ex);
}

/* Every kustomization under manifests/ renders, and each object names its apiVersion, kind, name. */
Test(manifests, every_directory_renders)
{
  char cmd[PATHMAX + 64], dir[PATHMAX];
  snprintf(cmd, sizeof cmd, "cd '%s' && find manifests -name kustomization.yaml | sort",
           getenv("SLICEFIT_TOP"));
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p);
  int dirs = 0;
  while (fgets(dir, sizeof dir, p)) {
    *strrchr(dir, '/') = '\0';
    yt_node_t *docs = mf_render(dir);
    cr_assert_gt(yt_len(docs), 0, "%s renders nothing", dir);
    for (size_t i = 0; i < yt_len(docs); i++) {
      const yt_node_t *d = yt_at(docs, i);
      cr_expect(mf_str_at(d, "apiVersion", NULL) && mf_str_at(d, "kind", NULL) &&
                    mf_str_at(d, "metadata", "name"),
                "%s: object %zu lacks apiVersion, kind or metadata.name", dir, i);
    }
    yt_free(docs);
    dirs++;
  }
  pclose(p);
  cr_assert_geq(dirs, 5, "manifests/, policy/, examples/, monitoring/, cert-manager/");
}

/*
 * kubectl's client dry run maps and accepts every object of every
 * kustomization, against the fake API server's discovery (--discover-all
 * names every kind manifests/ creates; the Prometheus Operator's and
 * cert-manager's as their CRDs would). Schemas are not checked: no server
 * here serves OpenAPI (--validate=false).
 */
Test(manifests, client_dry_run_accepts_every_object, .timeout = 120)
{
  if (system("command -v kubectl >/dev/null 2>&1") != 0) {
    cr_log_warn("SKIPPED: manifests::client_dry_run_accepts_every_object: kubectl is not on PATH");
    cr_skip_test("kubectl is not on PATH");
  }
  char dir[] = "/tmp/sf-dryrun-XXXXXX", kc[64];
  cr_assert_not_null(mkdtemp(dir));
  mf_fake_t api = {0};
  mf_fake_start(&api, "--discover-all");
  snprintf(kc, sizeof kc, "%s/kubeconfig", dir);
  mf_kubeconfig_write(kc, api.port, NULL);
  char cmd[PATHMAX * 2], path[PATHMAX];
  snprintf(cmd, sizeof cmd, "cd '%s' && find manifests -name kustomization.yaml | sort",
           getenv("SLICEFIT_TOP"));
  FILE *dirs = popen(cmd, "r");
  size_t objects = 0;
  while (fgets(path, sizeof path, dirs)) {
    *strrchr(path, '/') = '\0';
    yt_node_t *docs = mf_render(path);
    snprintf(cmd, sizeof cmd,
             "kubectl kustomize '%s/%s' | KUBECONFIG=%s kubectl create --dry-run=client "
             "--validate=false --cache-dir %s/cache -o name -f - 2>&1",
             getenv("SLICEFIT_TOP"), path, kc, dir);
    FILE *p = popen(cmd, "r");
    char got[512];
    size_t named = 0;
    while (fgets(got, sizeof got, p)) {
      named += strchr(got, '/') != NULL && strstr(got, " ") == NULL;
      cr_expect(strchr(got, '/') && !strstr(got, " "), "%s: %s", path, got);
    }
    cr_expect_eq(pclose(p), 0, "kubectl's client dry run refused an object of %s", path);
    cr_expect_eq(named, yt_len(docs), "%s: %zu objects accepted of %zu", path, named, yt_len(docs));
    objects += named;
    yt_free(docs);
  }
  pclose(dirs);
  mf_fake_stop(&api);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_expect_eq(system(cmd), 0);
  cr_log_info("kubectl's client dry run accepted %zu objects", objects);
}
