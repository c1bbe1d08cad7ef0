/* bin/slicefit-defrag: its answers on a snapshot, and a clear error for every bad invocation. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define SNAP "test/fixtures/defrag/fragmented.json"

/* Runs the tool from the top of the repository; its exit status, stdout and stderr together in out. */
static int run(const char *args, char *out, size_t len)
{
  const char *top = getenv("SLICEFIT_TOP"), *bin = getenv("SLICEFIT_BIN");
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "cd '%s' && '%s/slicefit-defrag' %s 2>&1", top ? top : ".",
           bin && *bin ? bin : "bin", args);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p);
  size_t n = fread(out, 1, len - 1, p);
  out[n] = '\0';
  int st = pclose(p);
  cr_assert(WIFEXITED(st), "%s", cmd);
  return WEXITSTATUS(st);
}

Test(defrag_cli, prints_the_plan_as_text_and_json)
{
  char out[8192];
  cr_assert_eq(run("--snapshot " SNAP " --claim team/big --now 2026-12-08T00:00:00Z", out,
                   sizeof out),
               0, "%s", out);
  cr_assert(strstr(out, "team/big: evicting 1 pod(s) on node-b lets the claim fit.") != NULL, "%s",
            out);
  cr_assert(strstr(out, "Evict team/infer-b (0.125 GPUs, running 3600 s) from node-b") != NULL, "%s",
            out);
  cr_assert_eq(run("--snapshot " SNAP " --claim team/big --json", out, sizeof out), 0, "%s", out);
  cr_assert(strstr(out, "\"to_node\": \"node-") != NULL && strstr(out, "\"fits_after\": true"), "%s",
            out);
}

Test(defrag_cli, a_claim_without_a_plan_is_an_answer_not_an_error)
{
  char out[8192];
  cr_assert_eq(run("--snapshot " SNAP " --claim team/missing", out, sizeof out), 0, "%s", out);
  cr_assert(strstr(out, "no ResourceClaim team/missing in the cluster") != NULL, "%s", out);
  cr_assert_eq(run("--snapshot " SNAP " --claim team/two --json", out, sizeof out), 0, "%s", out);
  cr_assert(strstr(out, "\"outcome\": \"never\"") != NULL, "%s", out);
}

Test(defrag_cli, bad_invocations_fail_with_a_reason)
{
  static const struct {
    const char *args, *want;
  } cases[] = {
      {"", "--snapshot and --claim are required"},
      {"--claim team/big", "--snapshot and --claim are required"},
      {"--snapshot", "missing value for --snapshot"},
      {"--snapshot " SNAP " --claim team/big --frobnicate", "unknown option --frobnicate"},
      {"--snapshot /nonexistent.json --claim team/big", "/nonexistent.json"},
      {"--snapshot Makefile --claim team/big", "Makefile: line 1"},
      {"--snapshot manifests/../test/fixtures/defrag/../../../Makefile --claim a/b", "line 1"},
      {"--snapshot " SNAP " --claim team/big --now tomorrow", "expected an RFC 3339 time"},
      {"--snapshot " SNAP " --claim team/big --policy " SNAP, "unknown policy key"},
  };
  char out[8192];
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    cr_assert_eq(run(cases[i].args, out, sizeof out), 2, "%s: %s", cases[i].args, out);
    cr_assert(strstr(out, cases[i].want) != NULL, "%s: %s", cases[i].args, out);
  }
}
