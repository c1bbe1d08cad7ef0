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
  snprintf(args, sizeof(args), "--nodes %s --pods %s --json", file("n.csv", nodes),
           file("p.csv", pods));
  cr_expect_eq(run(args, err, sizeof(err), &out), 0, "%s", err);
  cr_expect_gt(out, 0);
}

Test(replay_cli, malformed_csv_row_names_file_line_and_column)
{
  char args[512], want[256];
  const char *np = file("n.csv",
                        "sn,cpu_milli,memory_mib,gpu,model\nn-0,96000,393216,8,G2\nn-1,9x,1,1,T4\n");
  snprintf(args, sizeof(args), "--nodes %s --pods %s", np, file("p.csv", pods));
  snprintf(want, sizeof(want), "%s:3:5: column 'cpu_milli'", np);
  expect_failure(args, want);
  const char *pp = file("p2.csv",
                        "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np-0,1,1,1,500\np-1,1,1\n");
  snprintf(args, sizeof(args), "--nodes %s --pods %s", file("n2.csv", nodes), pp);
  snprintf(want, sizeof(want), "%s:3:", pp);
  expect_failure(args, want);
}

Test(replay_cli, malformed_json_line_names_file_line_and_column)
{
  char args[512], want[256];
  const char *tp =
      file("t.jsonl", "{\"kind\":\"node\",\"name\":\"n\",\"cpu\":\"8\",\"memory\":\"8Gi\",\"gpus\":1,"
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
  sp = file("snap2.json",
            "{\"kind\": \"List\", \"items\": [{\"kind\": \"ResourceSlice\", \"spec\": 7}]}\n");
  snprintf(args, sizeof(args), "--nodes %s --pods %s --snapshot %s", np, pp, sp);
  snprintf(want, sizeof(want), "%s: items[0]", sp);
  expect_failure(args, want);
  snprintf(args, sizeof(args), "--nodes %s --pods %s --snapshot %s/none.json", np, pp, dir);
  expect_failure(args, "none.json: unable to open");
}

/* ---- --search ---- */

static void expect_bad_flag(const char *args, const char *want)
{
  char err[4096];
  long out;
  cr_expect_eq(run(args, err, sizeof(err), &out), 2, "exit status for %s", args);
  cr_expect(strstr(err, want) != NULL, "%s: stderr '%s' lacks '%s'", args, err, want);
  cr_expect_eq(out, 0, "%ld bytes on stdout for %s", out, args);
}

Test(replay_cli, bad_search_options_exit_2)
{
  expect_bad_flag("--search 0", "--search: expected 1 to 100000 candidates, got '0'");
  expect_bad_flag("--search many", "--search: expected 1 to 100000 candidates, got 'many'");
  expect_bad_flag("--search 100001", "--search: expected 1 to 100000");
  expect_bad_flag("--search 4 --search-train 100",
                  "--search-train: expected a percentage from 1 to 99");
  expect_bad_flag("--search 4 --search-train 0",
                  "--search-train: expected a percentage from 1 to 99");
  expect_bad_flag("--search 4 --search-threads 0", "--search-threads: expected 1 to 64 threads");
  expect_bad_flag("--search 4 --search-seed -1", "--search-seed: expected a non-negative integer");
  expect_bad_flag("--search-seed 5", "--search-seed goes with --search N");
  expect_bad_flag("--search-out x.yaml", "--search-out goes with --search N");
  expect_bad_flag("--search 4 --json", "--search prints its own table and ConfigMap");
  expect_bad_flag("--search 4 --seeds 1-65", "--search: at most 64 seeds");
  expect_bad_flag("--search 4 --policy bestfit", "--policy names the base's strategy");
  expect_bad_flag("--search 4 --policy fgd,binpack", "--policy names the base's strategy");
  expect_bad_flag("--search 4 --search-keys weight_frag,colour",
                  "'colour' is not a knob the search varies");
  expect_bad_flag("--search 4 --search-keys ,", "--search-keys: empty list");
}

static char *read_all(const char *path)
{
  FILE *f = fopen(path, "r");
  cr_assert_not_null(f, "%s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = calloc(1, (size_t)n + 1);
  cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  return s;
}

/*
 * A small search on the bundled trace: the table on stdout, the ConfigMap in
 * --search-out, progress on stderr, and the same bytes on stdout twice.
 */
Test(replay_cli, a_search_prints_the_table_and_writes_the_configmap, .timeout = 120)
{
  char args[512], err[8192], path[128], sp[128];
  long out;
  snprintf(path, sizeof(path), "%s/policy.yaml", dir);
  snprintf(sp, sizeof(sp), "%s/stdout", dir);
  snprintf(args, sizeof(args), "--search 4 --seeds 42-43 --search-seed 9 --search-out %s", path);
  cr_assert_eq(run(args, err, sizeof(err), &out), 0, "%s", err);
  char *first = read_all(sp), *yaml = read_all(path);
  cr_expect(strstr(first, "split: by arrival") != NULL, "%s", first);
  cr_expect(strstr(first, "\nwinner: ") != NULL, "%s", first);
  cr_expect(strstr(first, "apiVersion") == NULL, "the ConfigMap went to --search-out, not stdout");
  cr_expect(strstr(yaml, "kind: ConfigMap\n") != NULL && strstr(yaml, "  name: slicefit-policy\n"),
            "%s", yaml);
  cr_expect(strstr(err, "search: stage 1/3, 1/") != NULL, "progress on stderr: %s", err);
  cr_expect(strstr(err, "search: stage 3/3") != NULL, "%s", err);
  cr_assert_eq(run(args, err, sizeof(err), &out), 0, "%s", err);
  char *second = read_all(sp);
  cr_expect_str_eq(second, first, "the same search, the same output");
  /* Without --search-out the ConfigMap follows the table on stdout. */
  cr_assert_eq(run("--search 4 --seeds 42-43 --search-seed 9", err, sizeof(err), &out), 0, "%s", err);
  char *both = read_all(sp);
  cr_expect(strncmp(both, first, strlen(first)) == 0, "the table first");
  /* The same ConfigMap; only the header's apply line names the file or not. */
  const char *doc = strstr(yaml, "apiVersion: v1\n");
  cr_assert_not_null(doc, "%s", yaml);
  cr_expect(strstr(both, doc) != NULL, "then the same ConfigMap");
  cr_expect(strstr(yaml, "kubectl apply -f ") != NULL && strstr(yaml, path) != NULL,
            "the apply line names %s: %s", path, yaml);
  free(first);
  free(second);
  free(both);
  free(yaml);
}

Test(replay_cli, bad_churn_options_exit_2)
{
  expect_bad_flag("--load 0.9", "--load goes with --churn");
  expect_bad_flag("--sustainable", "--sustainable goes with --churn");
  expect_bad_flag("--churn --load 0", "--load: expected a load above 0 and at most 1.5");
  expect_bad_flag("--churn --load 2", "--load: expected a load above 0 and at most 1.5");
  expect_bad_flag("--churn --load x", "--load: expected a load above 0");
  expect_bad_flag("--churn --duration 10", "--duration: expected 60 to 1e8 seconds");
  expect_bad_flag("--churn --horizon 0", "--horizon: expected 1 to 1e9 seconds");
  expect_bad_flag("--churn --give-up -5", "--give-up: expected a positive number of seconds");
  expect_bad_flag("--churn --slo 0", "--slo: expected a positive number of seconds");
  expect_bad_flag("--churn --threads 0", "--threads: expected 1 to 64 threads");
  expect_bad_flag("--churn --tune 1.1", "--churn does not take --tune");
}

/* A list without times and no list to lend them: the churn replay says which flag gives one. */
Test(replay_cli, a_churn_list_without_times_needs_lifetimes)
{
  char args[512];
  snprintf(args, sizeof(args), "--churn --nodes %s --pods %s", file("n.csv", nodes),
           file("p.csv", pods));
  expect_failure(args, "--lifetimes FILE");
}

Test(replay_cli, a_churn_run_prints_its_figures_in_json, .timeout = 60)
{
  char args[1024], err[4096];
  long out;
  snprintf(args, sizeof(args),
           "--churn --nodes %s --pods %s --duration 600 --seeds 1-2 --json --svg %s/c.svg "
           "--policy fragmentation,kube-default",
           file("n.csv", nodes),
           file("pt.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,creation_time,"
                          "deletion_time\np-0,8000,16384,1,500,,0,300\np-1,4000,8192,2,1000,,0,"
                          "900\n"),
           dir);
  cr_assert_eq(run(args, err, sizeof(err), &out), 0, "%s", err);
  char path[128];
  snprintf(path, sizeof(path), "%s/stdout", dir);
  char *json = read_all(path);
  cr_expect(strstr(json, "\"alloc_time_avg_pct\"") && strstr(json, "\"pending_s\"") &&
                strstr(json, "\"idle_while_waiting_gpu_h\"") && strstr(json, "\"never_placed\"") &&
                strstr(json, "\"evicted\":0") && strstr(json, "\"sustainable_load\":null") &&
                strstr(json, "\"policy\":\"kube-default\""),
            "%s", json);
  free(json);
  snprintf(path, sizeof(path), "%s/c.svg", dir);
  char *svg = read_all(path);
  cr_expect(strstr(svg, "<svg") && strstr(svg, "pods waiting") && strstr(svg, "kube-default"));
  free(svg);
}
