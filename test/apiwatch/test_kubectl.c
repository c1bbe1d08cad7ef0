/*
 * The fake apiserver follows the protocol closely enough for a real client:
 * kubectl lists (with paging), gets one object and watches through it.
 * Skipped when kubectl is not installed.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"

static fake_t F;
static char dir[] = "/tmp/sf-kubectl-XXXXXX";
static char kc[128], cache[128];

static void setup(void)
{
  if (system("command -v kubectl >/dev/null 2>&1") != 0) {
    /* A skip's reason is not printed by Criterion without --verbose: a warning is. */
    cr_log_warn("SKIPPED: %s: kubectl is not on PATH (it talks to the fake API server here)",
                criterion_current_test->name);
    cr_skip_test("kubectl is not installed");
  }
  fake_start(&F, NULL);
  cr_assert(mkdtemp(dir));
  snprintf(kc, sizeof kc, "%s/kubeconfig", dir);
  snprintf(cache, sizeof cache, "%s/cache", dir);
  FILE *f = fopen(kc, "w");
  fprintf(f,
          "apiVersion: v1\nkind: Config\ncurrent-context: fake\nclusters:\n- name: fake\n"
          "  cluster:\n    server: %s\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n"
          "    user: u\nusers:\n- name: u\n  user: {}\n",
          F.url);
  fclose(f);
  for (unsigned i = 0; i < 3; i++) {
    char *s = slice_json(i, 2, 1);
    fake_cmd(&F, "put resourceslices %s", s);
    free(s);
  }
  char *c = claim_json(3);
  fake_cmd(&F, "put resourceclaims %s", c);
  free(c);
}

static void teardown(void)
{
  fake_stop(&F);
  char *cmd = NULL;
  if (asprintf(&cmd, "rm -rf %s", dir) > 0 && system(cmd)) {
  }
  free(cmd);
}

/* Runs kubectl with `args` and returns its stdout (new string). */
static char *kubectl(const char *args)
{
  char *cmd = NULL, *out = NULL;
  size_t len = 0;
  cr_assert(asprintf(&cmd, "timeout 20 kubectl --kubeconfig %s --cache-dir %s %s 2>&1", kc, cache,
                     args) > 0);
  FILE *p = popen(cmd, "r");
  FILE *m = open_memstream(&out, &len);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0)
    fwrite(buf, 1, n, m);
  int st = pclose(p);
  fclose(m);
  cr_assert_eq(st, 0, "kubectl %s failed:\n%s", args, out);
  free(cmd);
  return out;
}

TestSuite(kubectl, .init = setup, .fini = teardown, .timeout = 60);

Test(kubectl, get_resourceslices_in_pages)
{
  char *out = kubectl("get resourceslices --chunk-size=2");
  cr_assert(strstr(out, "NAME"), "%s", out);
  for (unsigned i = 0; i < 3; i++) {
    char name[64];
    snprintf(name, sizeof name, "node-%u-gpu.nvidia.com", i);
    cr_assert(strstr(out, name), "%s missing from:\n%s", name, out);
  }
  free(out);
}

Test(kubectl, get_one_as_json_and_claims_by_namespace)
{
  char *out = kubectl("get resourceslice node-1-gpu.nvidia.com -o jsonpath={.spec.nodeName}");
  cr_assert_str_eq(out, "node-1");
  free(out);
  out = kubectl("get resourceclaims -n ns-3 -o name");
  cr_assert_str_eq(out, "resourceclaim.resource.k8s.io/claim-3\n");
  free(out);
}

Test(kubectl, watch_sees_a_new_slice)
{
  char *cmd = NULL;
  cr_assert(asprintf(&cmd,
                     "exec timeout 20 kubectl --kubeconfig %s --cache-dir %s get "
                     "resourceslices --watch -o name",
                     kc, cache) > 0);
  FILE *p = popen(cmd, "r");
  char line[256];
  for (int i = 0; i < 3; i++)
    cr_assert(fgets(line, sizeof line, p), "the initial list");
  char *s = slice_json(7, 1, 1);
  fake_cmd(&F, "put resourceslices %s", s);
  free(s);
  cr_assert(fgets(line, sizeof line, p), "no watch event");
  cr_assert_str_eq(line, "resourceslice.resource.k8s.io/node-7-gpu.nvidia.com\n");
  fake_cmd(&F, "close"); /* ends the watch; kubectl then exits */
  pclose(p);
  free(cmd);
}
