/*
 * bin/slicefit-replay: replays a trace through the packing core and compares
 * policies. Flag parsing and wiring only; the work is in bench/replay/replay_*.c.
 */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>
#include "slicefit/replay.h"
#include "slicefit/replay_search.h"
#include "replay_churn_int.h"

#define DEFAULT_POLICIES "fgd,fragmentation,bestfit,packing,random"
#define CHURN_POLICIES "fragmentation,fgd,bestfit,random,kube-default"
#define BUNDLED_NODES "synthetic-nodes.csv"
#define BUNDLED_PODS "synthetic-pods.csv"
#define MAX_POLICIES 16

static const char usage[] =
    "usage: slicefit-replay [--nodes FILE --pods FILE | --trace FILE] [options]\n"
    "\n"
    "Replays a GPU workload trace through slicefit's packing core and compares policies.\n"
    "With no trace it replays the bundled synthetic trace (bench/data/, found next to the\n"
    "executable as ../bench/data, or in $SLICEFIT_DATA).\n"
    "\n"
    "  --nodes FILE          Alibaba node list CSV (sn,cpu_milli,memory_mib,gpu,model)\n"
    "  --pods FILE           Alibaba pod list CSV (name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec...])\n"
    "  --trace FILE          native JSON-lines trace (docs/replay-format.md): islands, departures\n"
    "  --policy LIST         comma-separated: fragmentation fgd binpack spread (core strategies),\n"
    "                        random dotprod clustering packing bestfit (the FGD paper's baselines)\n"
    "                        (default " DEFAULT_POLICIES ")\n"
    "  --policy-file FILE    JSON object of policy keys (as the extender's ConfigMap)\n"
    "  --snapshot FILE       starting cluster: a kubectl List of ResourceSlices, ResourceClaims\n"
    "                        and DeviceClasses (as bin/slicefit --snapshot reads); its nodes,\n"
    "                        devices and allocated claims are there before the first pod\n"
    "  --device-choice C     packer | first-fit: who picks the GPU inside a node (core strategies)\n"
    "  --ties MODE           equal node scores: perm (default; the FGD simulator: a node order\n"
    "                        drawn from the seed, first highest wins), sched (kube-scheduler\n"
    "                        1.20's parallel filter order), first (by node name) or random\n"
    "                        (upstream kube-scheduler's selectHost)\n"
    "  --cpu-blind           core strategies: a workload mix without CPU, as in a cluster without\n"
    "                        node CPU in the extender's index (CPU still filters)\n"
    "  --cpu-only-pods M     policy (default: the policy scores pods without GPU, as the FGD\n"
    "                        simulator and the extender do) or least-allocated (kube-scheduler's\n"
    "                        NodeResourcesLeastAllocated, as with cpu_only_pods: pass)\n"
    "  --extender-scores     core strategies: choose by the 0-10 score the extender sends\n"
    "                        kube-scheduler (use with --ties random to model upstream); slow\n"
    "  --mix-window W        fragmentation: learn the mix from the last W arrivals (failed ones\n"
    "                        included) instead of the pods present (0, the default)\n"
    "  --mix-every K         fragmentation: score against the learned mix as published every K\n"
    "                        arrivals (default 1: every arrival)\n"
    "  --seed N              one seed (default 42)\n"
    "  --seeds A-B           every seed from A to B; medians are reported\n"
    "  --tune R              grow/shrink the Alibaba workload to R x GPU capacity (default 1.3; 0 = as is)\n"
    "  --json                one JSON object per run, then one with the medians per policy\n"
    "  --svg FILE            plot GPU allocation against arrived load per policy\n"
    "  --node-price USD      monthly price of one node: adds tenants per GPU and $ per tenant-month\n"
    "\n"
    "Tuning the policy on a history (docs/replay.md, \"Tune from your own history\"):\n"
    "  --search N            search N candidate policies (candidate 0 = the base: --policy-file,\n"
    "                        --policy STRATEGY, --device-choice) on the first 70% of the pods,\n"
    "                        report them and the built-in strategies on the last 30% too, and\n"
    "                        print the winner as the policy ConfigMap (seeds default to 42-44)\n"
    "  --search-seed S       seed of the candidates' draws (default 1)\n"
    "  --search-keys LIST    the knobs to vary, comma-separated (default: all of the table)\n"
    "  --search-train PCT    the train part, percent of the pods by arrival (default 70)\n"
    "  --search-threads T    replays at once (default 2); the results do not depend on it\n"
    "  --search-out FILE     write the ConfigMap YAML to FILE instead of stdout\n";

static const char churn_usage[] =
    "\n"
    "Churn: pods that come and go (docs/replay.md, \"Churn: pods that come and go\"):\n"
    "  --churn               time-driven replay: every pod arrives, runs its lifetime and\n"
    "                        leaves; a pod that fits nowhere waits in a pending queue (retried\n"
    "                        when a departure frees capacity, backoff 1 s doubling to 10 s).\n"
    "                        Policies add kube-default (kube-scheduler's scores, DRA first fit)\n"
    "  --load R              offered load: arrival rate x mean(GPUs x lifetime) / fleet GPUs\n"
    "                        (default 0.9; a native trace keeps its own times unless given)\n"
    "  --duration S          simulated seconds (default 7200)\n"
    "  --horizon S           lifetimes are capped at S seconds (default 604800, a week)\n"
    "  --give-up S           a pod waiting longer than S seconds fails (default: never)\n"
    "  --slo S               the p99 wait sustainable load holds (default 60)\n"
    "  --sustainable         find sustainable_load per policy (bisection to 0.01)\n"
    "  --lifetimes FILE      a pod list with creation_time and deletion_time that lends its\n"
    "                        lifetimes to a list without them (default: openb_pod_list_default.csv\n"
    "                        beside --pods)\n"
    "  --threads T           churn runs at once (default 2)\n"
    "  --defrag              a pod waiting longer than --defrag-after gets a defragmentation\n"
    "                        plan (the fewest evictions that let it fit; the policy's defrag_\n"
    "                        keys limit it); evicted pods wait again\n"
    "  --defrag-after S      how long a pod waits before a plan is asked for (default 600)\n"
    "  --restart-cost S      what an evicted pod loses: it runs its remaining lifetime plus S\n"
    "                        seconds once placed again (default 30)\n"
    "  --help                this text\n";

/* The usage, then every policy key --policy-file takes, from the policy's one table. */
static void help(void)
{
  size_t n;
  const sf_policy_key_t *keys = sf_policy_keys(&n);
  fputs(usage, stdout);
  fputs(churn_usage, stdout);
  fputs("\nPolicy keys (--policy-file, as the extender's ConfigMap):\n", stdout);
  for (size_t i = 0; i < n; i++)
    printf("  %-22s %s (default %s)\n", keys[i].key, keys[i].doc,
           keys[i].def[0] ? keys[i].def : "empty");
}

typedef struct {
  const char *nodes, *pods, *trace, *policy_file, *svg, *snapshot;
  char *policies;
  int device_choice;
  sf_replay_ties_t ties;
  bool extender, cpu_blind, cpu_only_la;
  uint64_t mix_window, mix_every;
  uint64_t seed_lo, seed_hi;
  double tune;
  bool tune_set, json, seeds_set, policy_set;
  double node_price;
  uint64_t search, search_seed, search_train, search_threads;
  const char *search_out, *search_opt; /* search_opt: the first --search-* option given */
  char *search_keys;
  bool churn, load_set, sustainable;
  double load, horizon, duration, give_up, slo;
  bool defrag;
  double defrag_after, restart_cost;
  const char *lifetimes, *churn_opt; /* churn_opt: the first churn-only option given */
  uint64_t threads;
} flags_t;

static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int bad(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "slicefit-replay: ");
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n(try --help)\n");
  return 2;
}

static int parse_u64(const char *s, uint64_t *out)
{
  char *end;
  errno = 0;
  if (*s < '0' || *s > '9')
    return -1;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0')
    return -1;
  *out = v;
  return 0;
}

static int parse_double(const char *s, double lo, double hi, double *out)
{
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno != 0 || end == s || *end != '\0' || !(v >= lo && v <= hi))
    return -1;
  *out = v;
  return 0;
}

static int parse_seeds(const char *s, flags_t *f)
{
  char buf[64];
  snprintf(buf, sizeof(buf), "%s", s);
  char *dash = strchr(buf, '-');
  if (dash == NULL)
    return -1;
  *dash = '\0';
  if (parse_u64(buf, &f->seed_lo) != 0 || parse_u64(dash + 1, &f->seed_hi) != 0 ||
      f->seed_hi < f->seed_lo || f->seed_hi - f->seed_lo >= 1000)
    return -1;
  return 0;
}

/* The --search options alone, or --search with options it cannot honour. */
static int check_search_flags(flags_t *f)
{
  if (f->search == 0) {
    if (f->search_opt != NULL)
      return bad("%s goes with --search N", f->search_opt);
    return 0;
  }
  if (f->json || f->svg || f->snapshot || f->node_price > 0)
    return bad("%s", "--search prints its own table and ConfigMap: it does not take --json, "
                     "--svg, --snapshot or --node-price");
  if (!f->seeds_set) {
    f->seed_lo = 42;
    f->seed_hi = 44;
  }
  if (f->seed_hi - f->seed_lo + 1 > SF_SEARCH_MAX_SEEDS)
    return bad("--search: at most %d seeds", SF_SEARCH_MAX_SEEDS);
  if (f->search_train == 0)
    f->search_train = 70;
  if (f->search_threads == 0)
    f->search_threads = 2;
  return 0;
}

/* The options of --churn alone (getopt codes 1001-1011). */
static int churn_flag(flags_t *f, int c)
{
  static const char *const names[] = {"--load",   "--duration",     "--horizon",     "--give-up",
                                      "--slo",    "--sustainable",  "--lifetimes",   "--threads",
                                      "--defrag", "--defrag-after", "--restart-cost"};
  const char *name = names[c - 1001];
  f->churn_opt = f->churn_opt ? f->churn_opt : name;
  switch (c) {
  case 1001:
    if (parse_double(optarg, 0, 1.5, &f->load) != 0 || f->load <= 0)
      return bad("--load: expected a load above 0 and at most 1.5, got '%s'", optarg);
    f->load_set = true;
    return 0;
  case 1002:
    if (parse_double(optarg, 60, 1e8, &f->duration) != 0)
      return bad("--duration: expected 60 to 1e8 seconds, got '%s'", optarg);
    return 0;
  case 1003:
    if (parse_double(optarg, 1, 1e9, &f->horizon) != 0)
      return bad("--horizon: expected 1 to 1e9 seconds, got '%s'", optarg);
    return 0;
  case 1004:
    if (parse_double(optarg, 0, 1e9, &f->give_up) != 0 || f->give_up <= 0)
      return bad("--give-up: expected a positive number of seconds, got '%s'", optarg);
    return 0;
  case 1005:
    if (parse_double(optarg, 0, 1e9, &f->slo) != 0 || f->slo <= 0)
      return bad("--slo: expected a positive number of seconds, got '%s'", optarg);
    return 0;
  case 1006: f->sustainable = true; return 0;
  case 1007: f->lifetimes = optarg; return 0;
  case 1009: f->defrag = true; return 0;
  case 1010:
    if (parse_double(optarg, 0, 1e9, &f->defrag_after) != 0)
      return bad("--defrag-after: expected 0 to 1e9 seconds, got '%s'", optarg);
    return 0;
  case 1011:
    if (parse_double(optarg, 0, 1e9, &f->restart_cost) != 0)
      return bad("--restart-cost: expected 0 to 1e9 seconds, got '%s'", optarg);
    return 0;
  default:
    if (parse_u64(optarg, &f->threads) != 0 || f->threads < 1 || f->threads > 64)
      return bad("--threads: expected 1 to 64 threads, got '%s'", optarg);
    return 0;
  }
}

/* --churn's options without it, or --churn with options it cannot honour. */
static int check_churn_flags(const flags_t *f)
{
  if (!f->churn)
    return f->churn_opt != NULL ? bad("%s goes with --churn", f->churn_opt) : 0;
  if (f->tune_set || f->snapshot || f->node_price > 0 || f->extender)
    return bad("%s", "--churn does not take --tune, --snapshot, --node-price or --extender-scores "
                     "(its load is --load)");
  return 0;
}

static int parse_flags(int argc, char **argv, flags_t *f)
{
  static const struct option opts[] = {{"nodes", required_argument, NULL, 'n'},
                                       {"pods", required_argument, NULL, 'p'},
                                       {"trace", required_argument, NULL, 't'},
                                       {"policy", required_argument, NULL, 'P'},
                                       {"policy-file", required_argument, NULL, 'F'},
                                       {"device-choice", required_argument, NULL, 'd'},
                                       {"seed", required_argument, NULL, 's'},
                                       {"seeds", required_argument, NULL, 'S'},
                                       {"tune", required_argument, NULL, 'u'},
                                       {"json", no_argument, NULL, 'j'},
                                       {"svg", required_argument, NULL, 'g'},
                                       {"node-price", required_argument, NULL, 'c'},
                                       {"ties", required_argument, NULL, 'T'},
                                       {"extender-scores", no_argument, NULL, 'E'},
                                       {"cpu-blind", no_argument, NULL, 'B'},
                                       {"cpu-only-pods", required_argument, NULL, 'C'},
                                       {"snapshot", required_argument, NULL, 'Z'},
                                       {"mix-window", required_argument, NULL, 'W'},
                                       {"mix-every", required_argument, NULL, 'K'},
                                       {"search", required_argument, NULL, 'X'},
                                       {"search-seed", required_argument, NULL, 'Y'},
                                       {"search-keys", required_argument, NULL, 'k'},
                                       {"search-train", required_argument, NULL, 'r'},
                                       {"search-threads", required_argument, NULL, 'x'},
                                       {"search-out", required_argument, NULL, 'o'},
                                       {"churn", no_argument, NULL, 1000},
                                       {"load", required_argument, NULL, 1001},
                                       {"duration", required_argument, NULL, 1002},
                                       {"horizon", required_argument, NULL, 1003},
                                       {"give-up", required_argument, NULL, 1004},
                                       {"slo", required_argument, NULL, 1005},
                                       {"sustainable", no_argument, NULL, 1006},
                                       {"lifetimes", required_argument, NULL, 1007},
                                       {"threads", required_argument, NULL, 1008},
                                       {"defrag", no_argument, NULL, 1009},
                                       {"defrag-after", required_argument, NULL, 1010},
                                       {"restart-cost", required_argument, NULL, 1011},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
    case 'n': f->nodes = optarg; break;
    case 'p': f->pods = optarg; break;
    case 't': f->trace = optarg; break;
    case 'P':
      free(f->policies);
      f->policies = sf_xstrdup(optarg);
      f->policy_set = true;
      break;
    case 'F': f->policy_file = optarg; break;
    case 'g': f->svg = optarg; break;
    case 'j': f->json = true; break;
    case 'E': f->extender = true; break;
    case 'Z': f->snapshot = optarg; break;
    case 'd':
      if (strcmp(optarg, "packer") == 0)
        f->device_choice = SF_CHOICE_PACKER;
      else if (strcmp(optarg, "first-fit") == 0)
        f->device_choice = SF_CHOICE_FIRST_FIT;
      else
        return bad("--device-choice: expected packer or first-fit, got '%s'", optarg);
      break;
    case 'B': f->cpu_blind = true; break;
    case 'C':
      if (strcmp(optarg, "policy") == 0)
        f->cpu_only_la = false;
      else if (strcmp(optarg, "least-allocated") == 0)
        f->cpu_only_la = true;
      else
        return bad("--cpu-only-pods: expected policy or least-allocated, got '%s'", optarg);
      break;
    case 'T':
      if (strcmp(optarg, "perm") == 0)
        f->ties = SF_REPLAY_TIES_PERM;
      else if (strcmp(optarg, "sched") == 0)
        f->ties = SF_REPLAY_TIES_SCHED;
      else if (strcmp(optarg, "first") == 0)
        f->ties = SF_REPLAY_TIES_FIRST;
      else if (strcmp(optarg, "random") == 0)
        f->ties = SF_REPLAY_TIES_RANDOM;
      else
        return bad("--ties: expected perm, sched, first or random, got '%s'", optarg);
      break;
    case 'W':
      if (parse_u64(optarg, &f->mix_window) != 0 || f->mix_window > 1000000)
        return bad("--mix-window: expected 0 (pods present) to 1000000 arrivals, got '%s'", optarg);
      break;
    case 'K':
      if (parse_u64(optarg, &f->mix_every) != 0 || f->mix_every > 1000000)
        return bad("--mix-every: expected 0 to 1000000 arrivals, got '%s'", optarg);
      break;
    case 's':
      if (parse_u64(optarg, &f->seed_lo) != 0)
        return bad("--seed: expected a non-negative integer, got '%s'", optarg);
      f->seed_hi = f->seed_lo;
      f->seeds_set = true;
      break;
    case 'S':
      if (parse_seeds(optarg, f) != 0)
        return bad("--seeds: expected A-B with A <= B (at most 1000 seeds), got '%s'", optarg);
      f->seeds_set = true;
      break;
    case 'X':
      if (parse_u64(optarg, &f->search) != 0 || f->search < 1 || f->search > 100000)
        return bad("--search: expected 1 to 100000 candidates, got '%s'", optarg);
      break;
    case 'Y':
      f->search_opt = f->search_opt ? f->search_opt : "--search-seed";
      if (parse_u64(optarg, &f->search_seed) != 0)
        return bad("--search-seed: expected a non-negative integer, got '%s'", optarg);
      break;
    case 'k':
      f->search_opt = f->search_opt ? f->search_opt : "--search-keys";
      free(f->search_keys);
      f->search_keys = sf_xstrdup(optarg);
      break;
    case 'r':
      f->search_opt = f->search_opt ? f->search_opt : "--search-train";
      if (parse_u64(optarg, &f->search_train) != 0 || f->search_train < 1 || f->search_train > 99)
        return bad("--search-train: expected a percentage from 1 to 99, got '%s'", optarg);
      break;
    case 'x':
      f->search_opt = f->search_opt ? f->search_opt : "--search-threads";
      if (parse_u64(optarg, &f->search_threads) != 0 || f->search_threads < 1 ||
          f->search_threads > 64)
        return bad("--search-threads: expected 1 to 64 threads, got '%s'", optarg);
      break;
    case 'o':
      f->search_opt = f->search_opt ? f->search_opt : "--search-out";
      f->search_out = optarg;
      break;
    case 'u':
      if (parse_double(optarg, 0, 100, &f->tune) != 0)
        return bad("--tune: expected a ratio from 0 to 100, got '%s'", optarg);
      f->tune_set = true;
      break;
    case 'c':
      if (parse_double(optarg, 0, 1e9, &f->node_price) != 0 || f->node_price <= 0)
        return bad("--node-price: expected a positive price in USD, got '%s'", optarg);
      break;
    case 'h': help(); exit(0);
    case 1000: f->churn = true; break;
    default:
      if (c > 1000 && c <= 1011) {
        int rc = churn_flag(f, c);
        if (rc != 0)
          return rc;
        break;
      }
      return bad("unknown or incomplete option '%s'", argv[optind - 1]);
    }
  }
  if (optind < argc)
    return bad("unexpected argument '%s'", argv[optind]);
  if ((f->nodes == NULL) != (f->pods == NULL))
    return bad("%s", "--nodes and --pods go together");
  if (f->trace != NULL && f->nodes != NULL)
    return bad("%s", "give either --trace or --nodes/--pods, not both");
  if (f->trace != NULL && f->tune_set)
    return bad("%s", "--tune applies to Alibaba CSV traces only (a native trace has times)");
  int rc = check_churn_flags(f);
  return rc != 0 ? rc : check_search_flags(f);
}

/* A JSON file that did not load: FILE:LINE:COL when jansson knows where, else FILE. */
static void json_fail(const char *path, const json_error_t *jerr)
{
  if (jerr->line > 0)
    fprintf(stderr, "slicefit-replay: %s:%d:%d: %s\n", path, jerr->line, jerr->column, jerr->text);
  else
    fprintf(stderr, "slicefit-replay: %s: %s\n", path, jerr->text);
}

/* The policy file: a JSON object of policy keys, values as strings or numbers. */
static int load_policy_file(const char *path, sf_policy_t *pol, char **strategy)
{
  json_error_t jerr;
  json_t *o = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
  const char *keys[64], *vals[64];
  char bufs[64][64], err[256];
  size_t n = 0;
  int rc = 1;
  if (o == NULL) {
    json_fail(path, &jerr);
    return 1;
  }
  if (!json_is_object(o) || json_object_size(o) > 64) {
    fprintf(stderr, "slicefit-replay: %s: expected a JSON object of policy keys\n", path);
    goto out;
  }
  const char *k;
  json_t *v;
  json_object_foreach(o, k, v)
  {
    keys[n] = k;
    if (json_is_string(v))
      vals[n] = json_string_value(v);
    else if (json_is_integer(v) || json_is_real(v)) {
      snprintf(bufs[n], sizeof(bufs[n]), "%.17g", json_number_value(v));
      vals[n] = bufs[n];
    } else {
      fprintf(stderr, "slicefit-replay: %s: key '%s': expected a string or a number\n", path, k);
      goto out;
    }
    n++;
  }
  if (sf_policy_from_kv(pol, keys, vals, n, err, sizeof(err)) != 0) {
    fprintf(stderr, "slicefit-replay: %s: %s\n", path, err);
    goto out;
  }
  v = json_object_get(o, "strategy");
  if (json_is_string(v))
    *strategy = sf_xstrdup(json_string_value(v));
  rc = 0;
out:
  json_decref(o);
  return rc;
}

/* Finds a bundled file: $SLICEFIT_DATA, then ../bench/data next to the executable, then ./bench/data. */
static char *bundled(const char *file)
{
  char exe[PATH_MAX], path[PATH_MAX + 64];
  const char *env = getenv("SLICEFIT_DATA");
  if (env != NULL && *env) {
    snprintf(path, sizeof(path), "%s/%s", env, file);
    return sf_xstrdup(path);
  }
  ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (len > 0) {
    exe[len] = '\0';
    snprintf(path, sizeof(path), "%s/../bench/data/%s", dirname(exe), file);
    if (access(path, R_OK) == 0)
      return sf_xstrdup(path);
  }
  snprintf(path, sizeof(path), "bench/data/%s", file);
  return sf_xstrdup(path);
}

typedef struct {
  const char *policy;
  uint64_t seed;
  size_t run, runs;
} progress_t;

static void progress(void *ctx, size_t done, size_t total)
{
  const progress_t *p = ctx;
  int width = 30, fill = total ? (int)((double)done / (double)total * width) : width;
  fprintf(stderr, "\r%-13s seed %-6llu run %zu/%zu [%.*s%*s] %3d%%", p->policy,
          (unsigned long long)p->seed, p->run, p->runs, fill, "##############################",
          width - fill, "", total ? (int)(100.0 * (double)done / (double)total) : 100);
  fflush(stderr);
}

/* The --snapshot file as JSON; NULL after printing FILE:LINE:COL and the problem. */
static json_t *load_snapshot(const char *path)
{
  json_error_t jerr;
  json_t *o = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
  if (o == NULL)
    json_fail(path, &jerr);
  return o;
}

static int load_trace(const flags_t *f, sf_replay_trace_t *t)
{
  char err[SF_REPLAY_ERR_MAX] = "";
  char *nodes = NULL, *pods = NULL;
  int rc;
  if (f->trace != NULL) {
    rc = sf_replay_load_native(t, f->trace, err, sizeof err);
  } else {
    nodes = f->nodes ? sf_xstrdup(f->nodes) : bundled(BUNDLED_NODES);
    pods = f->pods ? sf_xstrdup(f->pods) : bundled(BUNDLED_PODS);
    rc = sf_replay_load_csv(t, nodes, pods, err, sizeof err);
    if (rc != 0 && f->nodes == NULL)
      fprintf(stderr, "slicefit-replay: no trace given and the bundled one was not found "
                      "(set SLICEFIT_DATA to the bench/data folder)\n");
  }
  if (rc != 0)
    fprintf(stderr, "slicefit-replay: %s\n", err);
  free(nodes);
  free(pods);
  return rc;
}

static int split_policies(char *list, const char **names, size_t *n)
{
  char *save = NULL;
  *n = 0;
  for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    if (!sf_replay_policy_valid(tok, NULL, NULL)) {
      fprintf(stderr, "slicefit-replay: --policy: unknown policy '%s' (known: %s)\n", tok,
              sf_replay_policy_names());
      return 2;
    }
    if (*n == MAX_POLICIES)
      return bad("%s", "--policy: too many policies");
    names[(*n)++] = tok;
  }
  return *n ? 0 : bad("%s", "--policy: empty list");
}

static int write_svg(const flags_t *f, const sf_replay_trace_t *t,
                     const sf_replay_result_t *const *runs, const size_t *nruns, size_t np)
{
  char title[512];
  FILE *out = fopen(f->svg, "w");
  if (out == NULL) {
    fprintf(stderr, "slicefit-replay: --svg %s: %s\n", f->svg, strerror(errno));
    return 1;
  }
  /* The trace's file name, not its path: a short title. */
  const char *src = t->source ? t->source : "";
  const char *base = strrchr(src, '/');
  snprintf(title, sizeof(title), "GPU allocation vs arrived load: %s", base ? base + 1 : src);
  int rc = sf_replay_svg(out, runs, nruns, np, title);
  if (fclose(out) != 0 || rc != 0) {
    fprintf(stderr, "slicefit-replay: --svg %s: nothing to plot or write failed\n", f->svg);
    return 1;
  }
  return 0;
}

static int replay_all(const flags_t *f, const sf_replay_trace_t *t, const sf_policy_t *base,
                      const json_t *snapshot, const char **names, size_t np)
{
  size_t nseeds = (size_t)(f->seed_hi - f->seed_lo + 1), done = 0;
  sf_replay_result_t *runs[MAX_POLICIES] = {NULL};
  size_t nruns[MAX_POLICIES] = {0};
  bool tty = isatty(STDERR_FILENO);
  int rc = 0;
  for (size_t p = 0; p < np && rc == 0; p++) {
    runs[p] = sf_xcalloc(nseeds, sizeof(**runs));
    for (size_t s = 0; s < nseeds && rc == 0; s++) {
      progress_t pr = {names[p], f->seed_lo + s, ++done, np * nseeds};
      sf_replay_opts_t o = {.policy = names[p],
                            .base = base,
                            .device_choice = f->device_choice,
                            .seed = f->seed_lo + s,
                            .tune = f->trace ? 0 : f->tune,
                            .progress = tty ? progress : NULL,
                            .progress_ctx = &pr,
                            .ties = f->ties,
                            .extender_scores = f->extender,
                            .snapshot = snapshot,
                            .snapshot_name = f->snapshot,
                            .cpu_blind = f->cpu_blind,
                            .cpu_only_least_allocated = f->cpu_only_la,
                            .mix_window = (size_t)f->mix_window,
                            .mix_every = (size_t)f->mix_every};
      char err[SF_REPLAY_ERR_MAX] = "";
      if ((rc = sf_replay_run(t, &o, &runs[p][s], err, sizeof err)) != 0) {
        fprintf(stderr, "%sslicefit-replay: %s\n", tty ? "\n" : "", err);
        break;
      }
      nruns[p]++;
      if (f->json) {
        sf_replay_json_run(stdout, &runs[p][s], f->node_price);
        fflush(stdout);
      }
    }
    if (rc == 0 && f->json)
      sf_replay_json_medians(stdout, runs[p], nruns[p], f->node_price);
  }
  if (tty)
    fprintf(stderr, "\r%*s\r", 78, "");
  if (rc == 0 && !f->json) {
    printf("trace: %s\n%zu nodes, %u GPUs, %zu pods; tune %.2f; seeds %llu-%llu\n",
           t->source ? t->source : "-", t->nnodes, runs[0][0].gpus, t->npods,
           t->native ? 0.0 : f->tune, (unsigned long long)f->seed_lo, (unsigned long long)f->seed_hi);
    sf_replay_table(stdout, (const sf_replay_result_t *const *)runs, nruns, np, f->node_price);
  }
  if (rc == 0 && f->svg != NULL)
    rc = write_svg(f, t, (const sf_replay_result_t *const *)runs, nruns, np);
  for (size_t p = 0; p < np; p++) {
    for (size_t s = 0; s < nruns[p]; s++)
      sf_replay_result_dispose(&runs[p][s]);
    free(runs[p]);
  }
  return rc != 0;
}

static void search_progress(void *ctx, const char *line)
{
  (void)ctx;
  fprintf(stderr, "%s\n", line);
}

/* The ConfigMap of the winner, on stdout after the table or in --search-out. */
static int write_configmap(const flags_t *f, const sf_replay_trace_t *t,
                           const sf_search_result_t *res)
{
  const sf_search_row_t *w = &res->rows[res->winner], *b = &res->rows[res->reference];
  char head[2048];
  FILE *out = stdout;
  snprintf(head, sizeof(head),
           "The slicefit policy found by slicefit-replay --search %llu --search-seed %llu\n"
           "on %s.\n%s: %.2f%s on train, %.2f%s on the holdout;\n"
           "the base (%s): %.2f and %.2f.\nApply with: kubectl apply -f %s",
           (unsigned long long)f->search, (unsigned long long)f->search_seed,
           t->source ? t->source : "-", w->name, w->train100,
           f->churn ? " (sustainable load x 100, --churn)" : "% allocated at 100% load",
           w->holdout100, f->churn ? "" : "%", b->name, b->train100, b->holdout100,
           f->search_out ? f->search_out : "FILE");
  if (f->search_out != NULL && (out = fopen(f->search_out, "w")) == NULL) {
    fprintf(stderr, "slicefit-replay: --search-out %s: %s\n", f->search_out, strerror(errno));
    return 1;
  }
  if (out == stdout)
    fputc('\n', out);
  sf_search_configmap(out, &w->pol, head);
  if (out != stdout && fclose(out) != 0) {
    fprintf(stderr, "slicefit-replay: --search-out %s: %s\n", f->search_out, strerror(errno));
    return 1;
  }
  return 0;
}

static int search(const flags_t *f, const sf_replay_trace_t *t, const sf_policy_t *base,
                  const char **names, size_t np)
{
  uint64_t seeds[SF_SEARCH_MAX_SEEDS];
  const char *keys[SF_SEARCH_MAX_KNOBS];
  char *save = NULL, err[SF_REPLAY_ERR_MAX + 256];
  sf_search_result_t res;
  sf_policy_t pol;
  sf_replay_kind_t kind = SF_REPLAY_CORE;
  sf_strategy_t st = SF_STRATEGY_FRAGMENTATION;
  size_t nkeys = 0;
  int rc;
  if (f->policy_set &&
      (np != 1 || !sf_replay_policy_valid(names[0], &kind, &st) || kind != SF_REPLAY_CORE))
    return bad("%s", "--search: --policy names the base's strategy, one of fragmentation, fgd, "
                     "binpack or spread");
  for (char *k = f->search_keys ? strtok_r(f->search_keys, ",", &save) : NULL; k != NULL;
       k = strtok_r(NULL, ",", &save)) {
    if (nkeys == SF_SEARCH_MAX_KNOBS)
      return bad("--search-keys: at most %d knobs", SF_SEARCH_MAX_KNOBS);
    keys[nkeys++] = k;
  }
  if (f->search_keys != NULL && nkeys == 0)
    return bad("%s", "--search-keys: empty list");
  if (base != NULL)
    sf_policy_copy(&pol, base);
  else
    sf_policy_init(&pol);
  if (f->policy_set)
    pol.strategy = st;
  for (uint64_t s = f->seed_lo; s <= f->seed_hi; s++)
    seeds[s - f->seed_lo] = s;
  sf_search_opts_t o = {.ncandidates = (size_t)f->search,
                        .search_seed = f->search_seed,
                        .base = &pol,
                        .keys = f->search_keys ? keys : NULL,
                        .nkeys = nkeys,
                        .seeds = seeds,
                        .nseeds = (size_t)(f->seed_hi - f->seed_lo + 1),
                        .train_pct = (unsigned)f->search_train,
                        .threads = (unsigned)f->search_threads,
                        .tune = f->trace ? 0 : f->tune,
                        .device_choice = f->device_choice,
                        .ties = f->ties,
                        .cpu_blind = f->cpu_blind,
                        .cpu_only_least_allocated = f->cpu_only_la,
                        .extender_scores = f->extender,
                        .mix_window = (size_t)f->mix_window,
                        .mix_every = (size_t)f->mix_every,
                        .progress = search_progress};
  sf_search_churn_t ch = {f->duration, f->horizon, f->slo, NULL};
  sf_replay_trace_t ref;
  char path[PATH_MAX + 64];
  sf_churn_cli_t cc = {.nodes = f->nodes, .pods = f->pods, .lifetimes = f->lifetimes};
  sf_replay_trace_init(&ref);
  if (f->churn) {
    if ((rc = sf__churn_ref(&cc, t, &ref, path, sizeof(path))) != 0) {
      sf_policy_dispose(&pol);
      return rc;
    }
    ch.ref = ref.npods > 0 ? &ref : NULL;
    o.churn = &ch;
  }
  rc = sf_search_run(t, &o, &res, err, sizeof(err));
  sf_replay_trace_dispose(&ref);
  sf_policy_dispose(&pol);
  if (rc != 0) {
    fprintf(stderr, "slicefit-replay: --search: %s\n", err);
    return rc == SF_EINVAL && res.nrows == 0 ? 2 : 1;
  }
  sf_search_table(stdout, &res, &o);
  if (f->churn)
    printf("(--churn: the @100 and @130 columns are the sustainable load x 100)\n");
  rc = write_configmap(f, t, &res);
  sf_search_result_dispose(&res);
  return rc;
}

int main(int argc, char **argv)
{
  flags_t f = {.device_choice = -1,
               .seed_lo = 42,
               .seed_hi = 42,
               .tune = 1.3,
               .search_seed = 1,
               .load = 0.9,
               .horizon = 604800,
               .duration = 7200,
               .slo = 60,
               .defrag_after = 600,
               .restart_cost = 30,
               .threads = 2};
  sf_replay_trace_t t;
  sf_policy_t base;
  bool have_base = false;
  char *strategy = NULL;
  json_t *snapshot = NULL;
  const char *names[MAX_POLICIES];
  size_t np = 0;
  int rc = parse_flags(argc, argv, &f);
  sf_replay_trace_init(&t);
  if (rc != 0)
    goto out;
  if (f.policy_file != NULL) {
    sf_policy_init(&base);
    have_base = true;
    if ((rc = load_policy_file(f.policy_file, &base, &strategy)) != 0)
      goto out;
  }
  if (f.policies == NULL)
    f.policies = sf_xstrdup(strategy ? strategy : f.churn ? CHURN_POLICIES : DEFAULT_POLICIES);
  if ((rc = split_policies(f.policies, names, &np)) != 0)
    goto out;
  if ((rc = load_trace(&f, &t)) != 0)
    goto out;
  if (f.snapshot != NULL && (snapshot = load_snapshot(f.snapshot)) == NULL) {
    rc = 1;
    goto out;
  }
  if (f.churn && f.search == 0) {
    sf_churn_cli_t c = {.nodes = f.nodes,
                        .pods = f.pods,
                        .lifetimes = f.lifetimes,
                        .svg = f.svg,
                        .policies = names,
                        .npolicies = np,
                        .base = have_base ? &base : NULL,
                        .device_choice = f.device_choice,
                        .ties = f.ties,
                        .seed_lo = f.seed_lo,
                        .seed_hi = f.seed_hi,
                        .load = f.load,
                        .horizon_s = f.horizon,
                        .duration_s = f.duration,
                        .give_up_s = f.give_up,
                        .slo_s = f.slo,
                        .defrag = f.defrag,
                        .defrag_after_s = f.defrag_after,
                        .restart_s = f.restart_cost,
                        .load_set = f.load_set,
                        .sustainable = f.sustainable,
                        .json = f.json,
                        .cpu_blind = f.cpu_blind,
                        .cpu_only_la = f.cpu_only_la,
                        .mix_window = (size_t)f.mix_window,
                        .mix_every = (size_t)f.mix_every,
                        .threads = (unsigned)f.threads};
    rc = sf__churn_cli(&c, &t);
  } else if (f.search > 0)
    rc = search(&f, &t, have_base ? &base : NULL, names, np);
  else
    rc = replay_all(&f, &t, have_base ? &base : NULL, snapshot, names, np);
out:
  if (have_base)
    sf_policy_dispose(&base);
  free(strategy);
  free(f.policies);
  free(f.search_keys);
  sf_replay_trace_dispose(&t);
  json_decref(snapshot);
  return rc == 0 ? 0 : rc == 2 ? 2 : 1;
}
