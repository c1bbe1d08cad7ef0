/*
 * What --search prints (replay_search_out.c): the ConfigMap of the winner
 * parses as YAML into the policy ConfigMap of manifests/ (same name,
 * namespace, labels and keys), every value a string, and its data read back
 * through sf_policy_from_kv is the very policy; kubectl accepts it against
 * the fake kube-apiserver; the table states the split and the winner.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml.h>
#include "slicefit/replay_search.h"

/* ---- YAML through libyaml ---- */

typedef struct {
  yaml_document_t doc;
  yaml_node_t *root;
} ydoc_t;

static void yparse(ydoc_t *d, const char *text, const char *what)
{
  yaml_parser_t p;
  cr_assert(yaml_parser_initialize(&p));
  yaml_parser_set_input_string(&p, (const unsigned char *)text, strlen(text));
  cr_assert(yaml_parser_load(&p, &d->doc), "%s is not YAML: %s (line %zu)", what, p.problem,
            p.problem_mark.line + 1);
  d->root = yaml_document_get_root_node(&d->doc);
  cr_assert(d->root != NULL && d->root->type == YAML_MAPPING_NODE, "%s: not one mapping", what);
  yaml_parser_delete(&p);
}

static const char *scalar(const yaml_node_t *n)
{
  return n != NULL && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static yaml_node_t *get(ydoc_t *d, const yaml_node_t *map, const char *key)
{
  if (map == NULL || map->type != YAML_MAPPING_NODE)
    return NULL;
  for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
    const char *k = scalar(yaml_document_get_node(&d->doc, p->key));
    if (k != NULL && strcmp(k, key) == 0)
      return yaml_document_get_node(&d->doc, p->value);
  }
  return NULL;
}

static const char *str_at(ydoc_t *d, const char *k1, const char *k2)
{
  yaml_node_t *n = get(d, d->root, k1);
  return scalar(k2 ? get(d, n, k2) : n);
}

static char *slurp(FILE *f)
{
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
    fwrite(chunk, 1, n, m);
  fclose(m);
  return buf;
}

static char *configmap_text(const sf_policy_t *pol, const char *head)
{
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  sf_search_configmap(m, pol, head);
  fclose(m);
  return buf;
}

/* A policy far from the defaults, with characters YAML must quote. */
static void odd_policy(sf_policy_t *p)
{
  static const char *const kv[][2] = {{"strategy", "fgd"},
                                      {"device_choice", "packer"},
                                      {"model_attribute", "we\"ird\\name:#x"},
                                      {"island_map", "gpu-a100-:A100=2"},
                                      {"fgd_mix", "4Gix1=6,wholex2@H100!=1"},
                                      {"weight_frag", "0.4153"},
                                      {"weight_island", "3.853"},
                                      {"weight_model", "0"},
                                      {"max_sharers", "7"},
                                      {"headroom_pct", "12"}};
  char err[256];
  sf_policy_init(p);
  for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
    cr_assert_eq(sf_policy_set(p, kv[i][0], kv[i][1], err, sizeof err), 0, "%s", err);
}

/* Reads `data` back with sf_policy_from_kv and compares every key with `want`. */
static void same_policy(const char *const *keys, const char *const *vals, size_t n,
                        const sf_policy_t *want)
{
  sf_policy_t got;
  char err[256], a[4096], b[4096];
  size_t nkeys;
  const sf_policy_key_t *pk = sf_policy_keys(&nkeys);
  cr_assert_eq(n, nkeys, "%zu data keys for %zu policy keys", n, nkeys);
  cr_assert_eq(sf_policy_from_kv(&got, keys, vals, n, err, sizeof err), 0, "%s", err);
  for (size_t k = 0; k < nkeys; k++) {
    cr_assert_eq(sf_policy_get(want, pk[k].key, a, sizeof a), 0);
    cr_assert_eq(sf_policy_get(&got, pk[k].key, b, sizeof b), 0);
    cr_expect_str_eq(b, a, "key %s", pk[k].key);
  }
  sf_policy_dispose(&got);
}

Test(replay_search_out, the_configmap_reads_back_through_sf_policy_from_kv)
{
  sf_policy_t pol;
  ydoc_t d;
  const char *keys[64], *vals[64];
  size_t n = 0;
  odd_policy(&pol);
  char *text = configmap_text(&pol, "found by a test\nsecond line");
  static const char head[] = "# found by a test\n# second line\napiVersion: v1\n";
  cr_expect(strncmp(text, head, strlen(head)) == 0, "header:\n%s", text);
  yparse(&d, text, "the ConfigMap");
  cr_expect_str_eq(str_at(&d, "apiVersion", NULL), "v1");
  cr_expect_str_eq(str_at(&d, "kind", NULL), "ConfigMap");
  cr_expect_str_eq(str_at(&d, "metadata", "name"), SF_SEARCH_CONFIGMAP_NAME);
  cr_expect_str_eq(str_at(&d, "metadata", "namespace"), SF_SEARCH_CONFIGMAP_NAMESPACE);
  yaml_node_t *data = get(&d, d.root, "data");
  cr_assert(data != NULL && data->type == YAML_MAPPING_NODE);
  for (yaml_node_pair_t *p = data->data.mapping.pairs.start; p < data->data.mapping.pairs.top; p++) {
    yaml_node_t *v = yaml_document_get_node(&d.doc, p->value);
    cr_assert_lt(n, 64);
    keys[n] = scalar(yaml_document_get_node(&d.doc, p->key));
    vals[n] = scalar(v);
    cr_assert(keys[n] != NULL && vals[n] != NULL);
    /* A plain 7 would be a YAML int, and the API server refuses a ConfigMap with one. */
    cr_expect_eq(v->data.scalar.style, YAML_DOUBLE_QUOTED_SCALAR_STYLE, "%s is not quoted", keys[n]);
    n++;
  }
  same_policy(keys, vals, n, &pol);
  yaml_document_delete(&d.doc);
  free(text);
  sf_policy_dispose(&pol);
}

Test(replay_search_out, the_configmap_is_the_one_in_manifests)
{
  char path[PATH_MAX];
  const char *top = getenv("SLICEFIT_TOP");
  snprintf(path, sizeof path, "%s/manifests/policy/policy-configmap.yaml", top ? top : ".");
  FILE *f = fopen(path, "r");
  cr_assert_not_null(f, "cannot open %s", path);
  char *shipped = slurp(f);
  fclose(f);
  sf_policy_t pol;
  sf_policy_init(&pol);
  char *ours = configmap_text(&pol, NULL);
  ydoc_t a, b;
  yparse(&a, shipped, path);
  yparse(&b, ours, "the search's ConfigMap");
  static const char *const fields[][2] = {{"apiVersion", NULL},
                                          {"kind", NULL},
                                          {"metadata", "name"},
                                          {"metadata", "namespace"}};
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
    const char *x = str_at(&a, fields[i][0], fields[i][1]),
               *y = str_at(&b, fields[i][0], fields[i][1]);
    cr_assert(x != NULL && y != NULL);
    cr_expect_str_eq(y, x, "%s.%s", fields[i][0], fields[i][1] ? fields[i][1] : "");
  }
  yaml_node_t *la = get(&a, get(&a, a.root, "metadata"), "labels");
  yaml_node_t *lb = get(&b, get(&b, b.root, "metadata"), "labels");
  cr_expect_str_eq(scalar(get(&b, lb, "app.kubernetes.io/name")),
                   scalar(get(&a, la, "app.kubernetes.io/name")));
  /* The same keys in the same order, and with the defaults, the same values. */
  yaml_node_t *da = get(&a, a.root, "data"), *db = get(&b, b.root, "data");
  cr_assert(da != NULL && db != NULL);
  size_t na = (size_t)(da->data.mapping.pairs.top - da->data.mapping.pairs.start);
  size_t nb = (size_t)(db->data.mapping.pairs.top - db->data.mapping.pairs.start);
  cr_expect_eq(nb, na);
  for (size_t i = 0; i < na && i < nb; i++) {
    yaml_node_pair_t *p = &da->data.mapping.pairs.start[i], *q = &db->data.mapping.pairs.start[i];
    const char *ka = scalar(yaml_document_get_node(&a.doc, p->key));
    cr_expect_str_eq(scalar(yaml_document_get_node(&b.doc, q->key)), ka);
    cr_expect_str_eq(scalar(yaml_document_get_node(&b.doc, q->value)),
                     scalar(yaml_document_get_node(&a.doc, p->value)), "key %s", ka);
  }
  yaml_document_delete(&a.doc);
  yaml_document_delete(&b.doc);
  free(shipped);
  free(ours);
  sf_policy_dispose(&pol);
}

/* A value longer than any fixed buffer (here fgd_mix, 40 shapes) is written whole. */
Test(replay_search_out, long_values_are_written_whole)
{
  char mix[1024] = "", err[256];
  for (int i = 1; i <= 40; i++)
    snprintf(mix + strlen(mix), sizeof mix - strlen(mix), "%s%dGix1=%d", i > 1 ? "," : "", i, i);
  sf_policy_t pol;
  sf_policy_init(&pol);
  cr_assert_eq(sf_policy_set(&pol, "fgd_mix", mix, err, sizeof err), 0, "%s", err);
  char *v = sf_search_value(&pol, "fgd_mix");
  cr_assert_not_null(v);
  cr_expect_gt(strlen(v), 256, "%s", v);
  cr_expect(strstr(v, ",40Gix1=") != NULL, "the last shape: %s", v);
  char *text = configmap_text(&pol, NULL);
  char line[1100];
  snprintf(line, sizeof line, "  fgd_mix: \"%s\"\n", v);
  cr_expect(strstr(text, line) != NULL, "%s", text);
  cr_expect_null(sf_search_value(&pol, "colour"));
  free(v);
  free(text);
  sf_policy_dispose(&pol);
}

/* ---- kubectl against the fake kube-apiserver ---- */

typedef struct {
  pid_t pid;
  FILE *in, *out;
  unsigned port;
} fake_t;

static void fake_start(fake_t *f)
{
  char exe[PATH_MAX], tool[PATH_MAX + 32], line[64];
  int to[2], from[2];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  cr_assert_gt(n, 0);
  exe[n] = '\0';
  snprintf(tool, sizeof tool, "%s/tools/fake-apiserver", dirname(exe));
  cr_assert(access(tool, X_OK) == 0, "%s is not built (make test builds it)", tool);
  cr_assert(pipe(to) == 0 && pipe(from) == 0);
  f->pid = fork();
  cr_assert_geq(f->pid, 0);
  if (f->pid == 0) {
    dup2(to[0], 0);
    dup2(from[1], 1);
    close(to[1]);
    close(from[0]);
    execl(tool, tool, (char *)NULL);
    _exit(127);
  }
  close(to[0]);
  close(from[1]);
  f->in = fdopen(to[1], "w");
  f->out = fdopen(from[0], "r");
  cr_assert(fgets(line, sizeof line, f->out) && sscanf(line, "port %u", &f->port) == 1,
            "fake-apiserver did not start");
}

static void fake_stop(fake_t *f)
{
  int st;
  fputs("quit\n", f->in);
  fclose(f->in);
  fclose(f->out);
  waitpid(f->pid, &st, 0);
}

Test(replay_search_out, kubectl_applies_the_configmap, .timeout = 60)
{
  if (system("command -v kubectl >/dev/null 2>&1") != 0) {
    cr_log_warn("SKIPPED: %s: kubectl is not on PATH", criterion_current_test->name);
    cr_skip_test("kubectl is not on PATH");
  }
  char dir[] = "/tmp/sf-search-kubectl-XXXXXX", path[128], cmd[1024];
  cr_assert_not_null(mkdtemp(dir));
  fake_t fk;
  fake_start(&fk);
  snprintf(path, sizeof path, "%s/kubeconfig", dir);
  FILE *f = fopen(path, "w");
  fprintf(f,
          "apiVersion: v1\nkind: Config\ncurrent-context: fake\nclusters:\n- name: fake\n"
          "  cluster:\n    server: http://127.0.0.1:%u\ncontexts:\n- name: fake\n  context:\n"
          "    cluster: fake\n    user: u\nusers:\n- name: u\n  user: {}\n",
          fk.port);
  fclose(f);
  sf_policy_t pol;
  odd_policy(&pol);
  snprintf(path, sizeof path, "%s/policy.yaml", dir);
  f = fopen(path, "w");
  sf_search_configmap(f, &pol, "a test");
  fclose(f);
  /*
   * A client-side dry run of apply: kubectl parses the file, maps the kind
   * through the server's discovery and asks the server for the object (the
   * fake serves ConfigMaps read-only, so nothing is written).
   */
  snprintf(cmd, sizeof cmd,
           "timeout 30 kubectl --kubeconfig %s/kubeconfig --cache-dir %s/cache "
           "apply --dry-run=client --validate=false -o json -f %s 2>&1",
           dir, dir, path);
  FILE *p = popen(cmd, "r");
  char *out = slurp(p);
  int st = pclose(p);
  fake_stop(&fk);
  cr_assert_eq(st, 0, "%s\n%s", cmd, out);
  json_error_t jerr;
  json_t *o = json_loads(out, 0, &jerr);
  cr_assert_not_null(o, "kubectl printed no JSON: %s\n%s", jerr.text, out);
  cr_expect_str_eq(json_string_value(json_object_get(o, "kind")), "ConfigMap");
  json_t *md = json_object_get(o, "metadata");
  cr_expect_str_eq(json_string_value(json_object_get(md, "name")), SF_SEARCH_CONFIGMAP_NAME);
  cr_expect_str_eq(json_string_value(json_object_get(md, "namespace")),
                   SF_SEARCH_CONFIGMAP_NAMESPACE);
  const char *keys[64], *vals[64], *k;
  size_t n = 0;
  json_t *v;
  json_object_foreach(json_object_get(o, "data"), k, v)
  {
    cr_assert(json_is_string(v), "data.%s is not a string", k);
    cr_assert_lt(n, 64);
    keys[n] = k;
    vals[n++] = json_string_value(v);
  }
  same_policy(keys, vals, n, &pol);
  json_decref(o);
  free(out);
  sf_policy_dispose(&pol);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_expect_eq(system(cmd), 0);
}

/* ---- the table ---- */

Test(replay_search_out, the_table_states_the_split_the_rows_and_the_winner)
{
  static const uint64_t seeds[] = {42, 43, 44};
  sf_search_opts_t o = {.ncandidates = 10,
                        .search_seed = 5,
                        .seeds = seeds,
                        .nseeds = 3,
                        .train_pct = 70,
                        .tune = 1.3};
  sf_search_result_t r = {.nrows = 6,
                          .winner = 4,
                          .reference = 1,
                          .ntrain_pods = 7,
                          .nholdout_pods = 3,
                          .rung1 = 4,
                          .nknobs = 1,
                          .replays = 33};
  r.knobs[0] = "weight_frag";
  r.rows = calloc(6, sizeof(*r.rows));
  static const char *const names[] = {"fgd",    "fragmentation", "binpack",
                                      "spread", "candidate 3",   "candidate 0 (base)"};
  for (size_t i = 0; i < 6; i++) {
    snprintf(r.rows[i].name, sizeof r.rows[i].name, "%s", names[i]);
    sf_policy_init(&r.rows[i].pol);
    r.rows[i].train100 = 90 + (double)i;
    r.rows[i].holdout100 = 80 + (double)i;
    r.rows[i].train130 = r.rows[i].holdout130 = NAN;
  }
  char err[64];
  cr_assert_eq(sf_policy_set(&r.rows[4].pol, "weight_frag", "0.25", err, sizeof err), 0);
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  sf_search_table(m, &r, &o);
  fclose(m);
  cr_expect(strstr(buf, "train = the first 70% (7 pods), holdout = the last 30% (3 pods)") != NULL,
            "%s", buf);
  cr_expect(strstr(buf, "seeds 42-44: every candidate on train with seed 42; the best 4") != NULL,
            "%s", buf);
  cr_expect(strstr(buf, "(33 replays)") != NULL, "%s", buf);
  cr_expect(strstr(buf, "candidate 3                94.00         -     84.00") != NULL, "%s", buf);
  cr_expect(strstr(buf, "0.25") != NULL, "the winner's knob value: %s", buf);
  cr_expect(strstr(buf, "winner: candidate 3: +3.00 points @100 on train and +3.00 on the holdout "
                        "against the base (fragmentation)") != NULL,
            "%s", buf);
  free(buf);
  sf_search_result_dispose(&r);
}
