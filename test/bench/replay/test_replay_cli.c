/*
 * bin/slicefit-replay on bad input: a malformed CSV row or JSON line is
 * reported on stderr with FILE:LINE:COL, an empty or missing file is an
 * error, and every one of them ends the run with a non-zero exit status and
 * nothing on stdout (no empty result that looks like a measurement).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[64];

static void make_dir(void)
{
  snprintf(dir, sizeof(dir), "/tmp/sf-replay-cli-XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void)
{
  char cmd[128];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
}

TestSuite(replay_cli, .init = make_dir, .fini = remove_dir);

static const char *file(const char *name, const char *text)
{
  static char paths[4][128];
  static int next;
  char *p = paths[next++ % 4];
  snprintf(p, sizeof(paths[0]), "%s/%s", dir, name);
  FILE *f = fopen(p, "w");
  cr_assert_not_null(f);
  fputs(text, f);
  fclose(f);
  return p;
}

/* Runs the tool with `args`; returns its exit status, stderr in err, stdout's size in *outlen. */
static int run(const char *args, char *err, size_t errlen, long *outlen)
{
  const char *top = getenv("SLICEFIT_TOP"), *bin = getenv("SLICEFIT_BIN");
  char cmd[2048], ep[128], op[128], exe[1024];
  if (bin && *bin)
    snprintf(exe, sizeof exe, "%s/slicefit-replay", bin);
  else
    snprintf(exe, sizeof exe, "%s/bin/slicefit-replay", top ? top : ".");
  snprintf(ep, sizeof(ep), "%s/stderr", dir);
  snprintf(op, sizeof(op), "%s/stdout", dir);
  snprintf(cmd, sizeof(cmd), "'%s' %s >'%s' 2>'%s'", exe, args, op, ep);
  int st = system(cmd);
  cr_assert(st != -1 && WIFEXITED(st), "%s did not exit normally", cmd);
  FILE *f = fopen(ep, "r");
  cr_assert_not_null(f);
  size_t n = fread(err, 1, errlen - 1, f);
  err[n] = '\0';
  fclose(f);
  f = fopen(op, "r");
  cr_assert_not_null(f);
  fseek(f, 0, SEEK_END);
  *outlen = ftell(f);
  fclose(f);
  return WEXITSTATUS(st);
}

static void expect_failure(const char *args, const char *want)
{
  char err[4096];
  long out;
  int st = run(args, err, sizeof(err), &out);
  cr_expect_neq(st, 0, "exit 0 for %s", args);
  cr_expect(strstr(err, want) != NULL, "stderr '%s' lacks '%s'", err, want);
  cr_expect_eq(out, 0, "%ld bytes on stdout for %s", out, args);
}

static const char nodes[] = "sn,cpu_milli,memory_mib,gpu,model\nn-0,96000,393216,8,G2\n";
static const char pods[] = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np-0,8000,16384,1,500\n";

Test(replay_cli, good_files_run)
{
  char args[512], err[4096];
  long out;
  snprintf(args, sizeof(args), "--nodes %s --pods %s --json", file("n.csv", nodes), file("p.csv", pods));
  cr_expect_eq(run(args, err, sizeof(err), &out), 0, "%s", err);
  cr_expect_gt(out, 0);
}

Test(replay_cli, malformed_csv_row_names_file_line_and_column)
{
  char args[512], want[256];
  const char *np = file("n.csv", "sn,cpu_milli,memory_mib,gpu,model\nn-0,96000,393216,8,G2\nn-1,9x,1,1,T4\n");
  snprintf(args, sizeof(args), "--nodes %s --pods %s", np, file("p.csv", pods));
  snprintf(want, sizeof(want), "%s:3:5: column 'cpu_milli'", np);
  expect_failure(args, want);
  const char *pp = file("p2.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np-0,1,1,1,500\np-1,1,1\n");
  snprintf(args, sizeof(args), "--nodes %s --pods %s", file("n2.csv", nodes), pp);
  snprintf(want, sizeof(want), "%s:3:", pp);
  expect_failure(args, want);
}

Test(replay_cli, malformed_json_line_names_file_line_and_column)
{
  char args[512], want[256];
  const char *tp = file("t.jsonl",
                        "{\"kind\":\"node\",\"name\":\"n\",\"cpu\":\"8\",\"memory\":\"8Gi\",\"gpus\":1,"
                        "\"model\":\"L4\",\"gpu_memory\":\"24Gi\"}\n"
                        "{\"kind\":\"pod\",\"name\":\"p\",\"at\":0,\"colour\":1}\n");
  snprintf(args, sizeof(args), "--trace %s", tp);
  snprintf(want, sizeof(want), "%s:2:33: unknown key 'colour'", tp);
  expect_failure(args, want);
  tp = file("t2.jsonl", "{\"kind\":\"node\",\n");
  snprintf(args, sizeof(args), "--trace %s", tp);
  snprintf(want, sizeof(want), "%s:1:", tp);
  expect_failure(args, want);
}

Test(replay_cli, empty_and_missing_files_are_errors)
{
  char args[512];
  snprintf(args, sizeof(args), "--nodes %s --pods %s", file("n.csv", ""), file("p.csv", pods));
  expect_failure(args, "empty file");
  snprintf(args, sizeof(args), "--nodes %s --pods %s", file("n2.csv", nodes), file("p2.csv", ""));
  expect_failure(args, "empty file");
  snprintf(args, sizeof(args), "--trace %s", file("t.jsonl", ""));
  expect_failure(args, "empty file");
  snprintf(args, sizeof(args), "--nodes %s/none.csv --pods %s", dir, file("p3.csv", pods));
  expect_failure(args, "none.csv: cannot open");
  snprintf(args, sizeof(args), "--trace %s/none.jsonl", dir);
  expect_failure(args, "none.jsonl: cannot open");
}

Test(replay_cli, malformed_policy_file_names_file_line_and_column)
{
  char args[512], want[256];
  const char *pf = file("pol.json", "{\n  \"strategy\": \"fgd\",\n  \"max_sharers\": }\n");
  snprintf(args, sizeof(args), "--nodes %s --pods %s --policy-file %s", file("n.csv", nodes),
           file("p.csv", pods), pf);
  snprintf(want, sizeof(want), "%s:3:", pf);
  expect_failure(args, want);
}

Test(replay_cli, bad_flags_exit_2)
{
  char err[4096];
  long out;
  cr_expect_eq(run("--ties sometimes", err, sizeof(err), &out), 2);
  cr_expect(strstr(err, "--ties: expected perm, sched, first or random") != NULL, "%s", err);
  cr_expect_eq(run("--cpu-only-pods spread", err, sizeof(err), &out), 2);
  cr_expect(strstr(err, "--cpu-only-pods: expected policy or least-allocated") != NULL, "%s", err);
  cr_expect_eq(run("--policy tetris", err, sizeof(err), &out), 2);
  cr_expect(strstr(err, "unknown policy 'tetris'") != NULL, "%s", err);
}

Test(replay_cli, bad_snapshots_name_the_file)
{
  char args[512], want[256];
  const char *np = file("n.csv", nodes), *pp = file("p.csv", pods);
  const char *sp = file("snap.json", "{\"kind\": \"List\", \"items\": [\n  {,}\n]}\n");
  snprintf(args, sizeof(args), "--nodes %s --pods %s --snapshot %s", np, pp, sp);
  snprintf(want, sizeof(want), "%s:2:4: ", sp);
  expect_failure(args, want);
  sp = file("snap2.json", "{\"kind\": \"List\", \"items\": [{\"kind\": \"ResourceSlice\", \"spec\": 7}]}\n");
  snprintf(args, sizeof(args), "--nodes %s --pods %s --snapshot %s", np, pp, sp);
  snprintf(want, sizeof(want), "%s: items[0]", sp);
  expect_failure(args, want);
  snprintf(args, sizeof(args), "--nodes %s --pods %s --snapshot %s/none.json", np, pp, dir);
  expect_failure(args, "none.json: unable to open");
}
