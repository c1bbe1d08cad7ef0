/*
 * README.md's example is true: the daemon starts as `make run` starts it (the
 * example cluster and policy, on ephemeral ports), the README's example block
 * runs under /bin/sh in the top folder with its addresses pointed at that
 * daemon, and each curl line prints what the README shows under it.
 *
 * The block is the first ```sh block that calls /filter. Its lines that start
 * with "curl" are the commands; the "# " lines after a command are what it
 * prints. Whitespace is not compared (the README wraps long JSON where it
 * likes), and "..." stands for any text (a clock-dependent figure, or lines
 * the README leaves out).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cases.h"
#include "harness.h"

#define MAXCMD 16
#define MARK "@@readme-command@@"

typedef struct {
  char *script;          /* the block as a shell script, a marker before each command */
  char *want[MAXCMD];    /* what each command prints, as the README shows it */
  char *cmdline[MAXCMD]; /* the command, for the failure message */
  size_t ncmd;
} example_t;

static void append(char **s, const char *a, size_t n)
{
  size_t len = *s ? strlen(*s) : 0;
  *s = realloc(*s, len + n + 1);
  memcpy(*s + len, a, n);
  (*s)[len + n] = '\0';
}

/* The line with the README's ports replaced by the daemon's. */
static void append_ported(char **s, const char *line, size_t n, const sfx_t *d)
{
  char main_addr[32], debug_addr[32];
  snprintf(main_addr, sizeof main_addr, "127.0.0.1:%u", d->port);
  snprintf(debug_addr, sizeof debug_addr, "127.0.0.1:%u", d->debug_port);
  for (size_t i = 0; i < n;) {
    if (n - i >= 14 && strncmp(line + i, "localhost:8888", 14) == 0) {
      append(s, main_addr, strlen(main_addr));
      i += 14;
    } else if (n - i >= 14 && strncmp(line + i, "localhost:8889", 14) == 0) {
      append(s, debug_addr, strlen(debug_addr));
      i += 14;
    } else {
      append(s, line + i, 1);
      i++;
    }
  }
}

/* Parses the example block of `readme` into `ex` against daemon `d`. */
static void parse(const char *readme, const sfx_t *d, example_t *ex)
{
  memset(ex, 0, sizeof *ex);
  const char *at = strstr(readme, "localhost:8888/filter");
  cr_assert_not_null(at, "README.md has no example calling localhost:8888/filter");
  const char *start = at;
  while (start > readme && strncmp(start, "```sh\n", 6) != 0)
    start--;
  cr_assert(strncmp(start, "```sh\n", 6) == 0, "the /filter example is not in a ```sh block");
  start += 6;
  const char *end = strstr(start, "\n```");
  cr_assert_not_null(end, "the example block is not closed");
  for (const char *p = start; p < end;) {
    const char *nl = memchr(p, '\n', (size_t)(end - p) + 1);
    size_t n = (size_t)(nl - p);
    if (strncmp(p, "curl", 4) == 0) {
      cr_assert_lt(ex->ncmd, MAXCMD, "more than %d commands in the example", MAXCMD);
      append(&ex->script, "printf '\\n" MARK "\\n'\n", strlen("printf '\\n" MARK "\\n'\n"));
      ex->cmdline[ex->ncmd] = strndup(p, n);
      ex->want[ex->ncmd] = strdup("");
      ex->ncmd++;
      append_ported(&ex->script, p, n, d);
      append(&ex->script, "\n", 1);
    } else if (n >= 1 && p[0] == '#') {
      /* What the last command prints; comments before the first command are notes. */
      if (ex->ncmd > 0)
        append(&ex->want[ex->ncmd - 1], p + 1, n - 1);
    } else {
      append_ported(&ex->script, p, n, d);
      append(&ex->script, "\n", 1);
    }
    p = nl + 1;
  }
  cr_assert_geq(ex->ncmd, 5,
                "the example has %zu commands, expected filter, prioritize, "
                "metrics and debug state",
                ex->ncmd);
}

static char *squeeze(const char *s, size_t n)
{
  char *out = malloc(n + 1);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
      out[k++] = s[i];
  out[k] = '\0';
  return out;
}

/* True when `got` is `want` with each "..." in want standing for any text. */
static bool matches(const char *want, const char *got)
{
  const char *w = want, *g = got;
  const char *dots = strstr(w, "...");
  if (dots == NULL)
    return strcmp(w, g) == 0;
  if (strncmp(g, w, (size_t)(dots - w)) != 0)
    return false;
  g += dots - w;
  w = dots + 3;
  while ((dots = strstr(w, "...")) != NULL) {
    char *piece = strndup(w, (size_t)(dots - w));
    const char *hit = strstr(g, piece);
    free(piece);
    if (hit == NULL)
      return false;
    g = hit + (dots - w);
    w = dots + 3;
  }
  size_t wl = strlen(w), gl = strlen(g);
  return gl >= wl && strcmp(g + gl - wl, w) == 0;
}

/* The output of each command: the text between markers. */
static void check_outputs(const example_t *ex, const char *out)
{
  const char *p = strstr(out, "\n" MARK "\n");
  cr_assert_not_null(p, "the example printed no command output: %s", out);
  for (size_t i = 0; i < ex->ncmd; i++) {
    cr_assert_not_null(p, "command %zu (%s) did not run", i + 1, ex->cmdline[i]);
    p += strlen("\n" MARK "\n");
    const char *next = strstr(p, "\n" MARK "\n");
    size_t n = next ? (size_t)(next - p) : strlen(p);
    char *got = squeeze(p, n), *want = squeeze(ex->want[i], strlen(ex->want[i]));
    cr_expect(want[0] != '\0', "README shows nothing under %s", ex->cmdline[i]);
    cr_expect(matches(want, got),
              "README.md's example: %s\n  prints: %.*s\n  README shows (whitespace aside): %s",
              ex->cmdline[i], (int)n, p, want);
    free(got);
    free(want);
    p = next;
  }
}

Test(readme, the_example_prints_what_the_readme_shows, .timeout = 60)
{
  char *readme = sfx_read_file(sfx_path("README.md"));
  cr_assert(readme[0] != '\0', "README.md is missing or empty");

  sfx_t d;
  sfx_start_example(&d, NULL);
  cr_assert_gt(d.debug_port, 0u);
  example_t ex;
  parse(readme, &d, &ex);

  char script[] = "/tmp/sf-readme-XXXXXX", outp[] = "/tmp/sf-readme-out-XXXXXX";
  int fd = mkstemp(script), ofd = mkstemp(outp);
  cr_assert(fd >= 0 && ofd >= 0);
  cr_assert(write(fd, ex.script, strlen(ex.script)) == (ssize_t)strlen(ex.script));
  close(fd);
  close(ofd);
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "cd '%s' && /bin/sh '%s' > '%s' 2>&1", sfx_path(""), script, outp);
  int st = system(cmd);
  char *out = sfx_read_file(outp);
  unlink(script);
  unlink(outp);
  cr_expect_eq(st, 0, "the example block failed (status %d): %s", st, out);
  check_outputs(&ex, out);
  cr_expect_eq(sfx_stop(&d), 0);

  for (size_t i = 0; i < ex.ncmd; i++) {
    free(ex.want[i]);
    free(ex.cmdline[i]);
  }
  free(ex.script);
  free(out);
  free(readme);
}

/* The winner of the README's /prioritize between rtx-2 and rtx-5, under the example's policy
 * with `key` set to `value` (no key: the policy as it is). */
static const char *readme_winner(const char *key, const char *value)
{
  json_t *pol = sfx_load("extender/example-policy.json");
  if (key)
    json_object_set_new(pol, key, json_string(value));
  char path[] = "/tmp/sf-readme-policy-XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  close(fd);
  cr_assert_eq(json_dump_file(pol, path, 0), 0);
  json_decref(pol);
  char snap[1024];
  snprintf(snap, sizeof snap, "%s", sfx_path("extender/example-cluster.json"));
  const char *args[] = {"--snapshot", snap, "--policy", path, NULL};
  sfx_t d;
  sfx_start(&d, args);
  json_t *pod = sfx_pod("pod-gpu-test1.json", "tenants", "agent-sandbox-7");
  static const char *const names[] = {"rtx-2", "rtx-5"};
  json_t *req = sfx_args(pod, names, 2, true);
  long status = 0;
  json_t *reply = sfx_post_json(&d, "/prioritize", req, &status);
  cr_assert_eq(status, 200);
  cr_assert(json_is_array(reply) && json_array_size(reply) == 2);
  const char *winner = NULL;
  size_t i;
  json_t *e;
  json_array_foreach(reply, i, e)
  {
    if (json_integer_value(json_object_get(e, "Score")) == 10)
      winner = json_string_value(json_object_get(e, "Host"));
  }
  cr_assert_not_null(winner, "no node scored 10");
  winner = strcmp(winner, "rtx-2") == 0 ? "rtx-2" : "rtx-5";
  json_decref(reply);
  json_decref(req);
  json_decref(pod);
  cr_expect_eq(sfx_stop(&d), 0);
  unlink(path);
  return winner;
}

/*
 * The README's explanation of its /prioritize answer: the plan of the shares
 * (weight_plan) is what sends the 6Gi claim to rtx-5's idle card; without it,
 * or under plain fgd, the 8Gi left on rtx-2 wins.
 */
Test(readme, the_plan_of_the_shares_decides_the_example, .timeout = 60)
{
  cr_expect_str_eq(readme_winner(NULL, NULL), "rtx-5");
  cr_expect_str_eq(readme_winner("weight_plan", "0"), "rtx-2");
  cr_expect_str_eq(readme_winner("strategy", "fgd"), "rtx-2");
}

/* The matcher the README test relies on: "..." is any text, everything else must agree. */
Test(readme, the_matcher_is_exact_outside_its_gaps)
{
  cr_expect(matches("a...c", "abbbc"));
  cr_expect(matches("a...", "abc"));
  cr_expect(matches("...c", "abc"));
  cr_expect(matches("a...b...c", "a1b2c"));
  cr_expect(matches("abc", "abc"));
  cr_expect_not(matches("abc", "abd"));
  cr_expect_not(matches("a...c", "abcd"));
  cr_expect_not(matches("a...b...c", "a1c2b"));
  cr_expect_not(matches("ab...bc", "abc"));
}
