/*
 * The policy: every knob of the packer, set from the key/value strings of a
 * ConfigMap. The values are untrusted text.
 *
 * One static table (keys[], sf_policy_key_t) lists each key with its
 * default, its one-line doc, whether it can move a placement, the range a
 * policy search draws it from, and the rule that parses it: an enumeration,
 * a name (fixed char array), a weight (double), a bounded integer, or one
 * of the two lists. sf_policy_init applies every default through the same
 * parser, so the table is the only place a default lives; the tests check
 * it against policy.h. Everything else that lists keys is generated from
 * it: the fast path's memo signature (sf_policy_hash), the search's knobs,
 * the daemon's and the replay's --help; test/manifests checks that the
 * ConfigMap documents every key and no other.
 *
 * Values are trimmed of surrounding whitespace. Grammars of the lists, items
 * separated by ',' (an empty value means none, an empty item is an error):
 *
 *   island_map  item ::= [NODEPREFIX ":"] MODEL "=" SIZE          SIZE 1..64
 *   fgd_mix     item ::= [CPU ":"] AMOUNT "x" COUNT ["@" MODEL {"|" MODEL}] ["!"] "=" WEIGHT
 *               CPU a quantity >= 0 (cpu_milli), AMOUNT "whole" or a quantity > 0,
 *               COUNT 1..64, at most SF_POLICY_MODELS_MAX models, WEIGHT > 0.
 *
 * A MODEL is printable ASCII, may hold inner spaces (productName values such
 * as "NVIDIA A100 80GB PCIe" do) but none of the separators ",:=|@!". Names
 * (capacity, the attributes, node prefixes) are printable ASCII without
 * spaces. Every name is shorter than SF_POLICY_NAME_MAX.
 *
 * Numbers are read with strtod in the C locale (the daemon never calls
 * setlocale), rejecting NaN, infinities, empty text and trailing bytes.
 * sf_policy_get prints a double with the fewest digits that read back to
 * the same double, so get and set round-trip exactly.
 *
 * Atomicity: a setter parses into locals (or new arrays) and writes the
 * policy only once the whole value is valid.
 */
#include <assert.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h> /* snprintf only: make check-pure allows no other stdio symbol */
#include <stdlib.h>
#include <string.h>
#include "slicefit/policy.h"
#include "slicefit/quantity.h"

#define WHY_MAX 256
#define NUM_MAX 128
#define WEIGHT_MAX 1e6
#define MODEL_FORBID ",:=|@!"

typedef enum { K_STRATEGY, K_CHOICE, K_CPU_ONLY, K_NAME, K_ISLANDS, K_MIX, K_WEIGHT, K_UINT } kind_t;

typedef struct {
  const char *p;
  size_t n;
} span_t;

/* The output of sf_policy_get: writes what fits, counts everything. */
typedef struct {
  char *buf;
  size_t len, pos;
} out_t;

/*
 * Rows of the one table: key, default, whether it can move a placement,
 * the search's range (lo, hi, log scale, integer, share kept), the rule
 * and the doc: one line a key, left as written.
 */
#define RULE(kind, field, lo, hi)              \
  {                                            \
    kind, offsetof(sf_policy_t, field), lo, hi \
  }
#define RANGE(lo, hi, log, integer, keep) \
  {                                       \
    lo, hi, log, integer, keep            \
  }
#define NOSEARCH RANGE(0, 0, false, false, 0)
#define KEY(key, def, places, range, rule, doc) \
  {                                             \
    key, def, doc, places, range, rule          \
  }

/* clang-format off */
static const sf_policy_key_t keys[] = {
    KEY("strategy", "fragmentation", true, NOSEARCH, RULE(K_STRATEGY, strategy, 0, 0), "how nodes are scored: fragmentation | fgd | binpack | spread"),
    KEY("device_choice", "first-fit", true, NOSEARCH, RULE(K_CHOICE, device_choice, 0, 0), "first-fit scores the device the in-tree DRA allocator takes; packer lets the core pick"),
    KEY("capacity", "memory", true, NOSEARCH, RULE(K_NAME, capacity, 1, 0), "the shared capacity that measures a device's share"),
    KEY("model_attribute", "productName", true, NOSEARCH, RULE(K_NAME, model_attribute, 1, 0), "device attribute naming the GPU model"),
    KEY("island_attribute", "", true, NOSEARCH, RULE(K_NAME, island_attribute, 0, 0), "device attribute whose equal values form an NVLink island"),
    KEY("island_map", "", true, NOSEARCH, RULE(K_ISLANDS, island_rules, 0, 0), "islands by model when no attribute says: [NODEPREFIX:]MODEL=SIZE,..."),
    KEY("fgd_mix", "", false, NOSEARCH, RULE(K_MIX, mix, 0, 0), "target workload for strategy fgd: [CPU:]AMOUNTxCOUNT[@M1|M2][!]=WEIGHT,..."),
    /*
     * The weights: weight_frag over two orders of magnitude around its
     * default (only the ratios of the weights rank nodes), the penalties
     * from 0 to four times their defaults; weight_unfed from 0 (FGD's
     * measure) to 1, weight_plan and weight_strand from 1 to 64 on a log
     * scale (0 leaves the term out, which the base's value says), half of
     * the candidates keeping the base's value.
     */
    KEY("weight_frag", "1", false, RANGE(0.1, 10, true, false, 0), RULE(K_WEIGHT, weight_frag, 0, 0), "weight of the fragmentation term (and the size of the score's steps)"),
    KEY("weight_island", "1", false, RANGE(0, 4, false, false, 0), RULE(K_WEIGHT, weight_island, 0, 0), "penalty for breaking an intact NVLink island, in GPUs of fragmentation"),
    KEY("weight_model", "0.5", false, RANGE(0, 2, false, false, 0), RULE(K_WEIGHT, weight_model, 0, 0), "penalty for using a scarce model a flexible claim does not need"),
    KEY("weight_unfed", "0.25", false, RANGE(0, 1, false, false, 0.5), RULE(K_WEIGHT, weight_unfed, 0, 1), "fragmentation: share of an idle GPU the node's free CPU cannot feed that counts as fragmentation, 0..1"),
    KEY("weight_plan", "16", false, RANGE(1, 64, true, false, 0.5), RULE(K_WEIGHT, weight_plan, 0, 0), "fragmentation: weight of a share placement's loss against the plan of the mix's shares (their configuration LP), 0 = off"),
    KEY("weight_strand", "16", false, RANGE(1, 64, true, false, 0.5), RULE(K_WEIGHT, weight_strand, 0, 0), "fragmentation: weight of the worth of the part-used GPUs a placement leaves without CPU for a share of the mix, 0 = off"),
    KEY("weight_fill", "0.1", false, RANGE(0, 1, false, false, 0.5), RULE(K_WEIGHT, weight_fill, 0, 0), "fragmentation, where pods leave: weight of the free GPU (and a 64th of a GPU per free core) a placement leaves on its node, 0 = off"),
    /* mix_coverage from 80% to every shape; half keep FGD's 95, the published method. */
    KEY("mix_coverage", "95", false, RANGE(80, 100, false, true, 0.5), RULE(K_UINT, mix_coverage, 1, 100), "percent of the present pods the learned mix keeps, its most frequent shapes first (FGD's typical pods)"),
    /*
     * The limits are platform rules that the replay can only see cost
     * allocation (it models no interference), so half of the candidates
     * keep the base's value; the other half try them from mild to strict.
     */
    KEY("max_sharers", "0", true, RANGE(2, 16, false, true, 0.5), RULE(K_UINT, max_sharers, 0, 100000), "most allocations on one shared device, 0 = unlimited"),
    KEY("headroom_pct", "0", true, RANGE(1, 20, false, true, 0.5), RULE(K_UINT, headroom_pct, 0, 99), "percent of each shared device's capacity kept free"),
    /*
     * search_budget bounds the core's work per node: it changes no
     * placement unless the budget runs out, and then only for the worse, so
     * the search leaves it alone.
     */
    KEY("search_budget", "4096", true, NOSEARCH, RULE(K_UINT, search_budget, 16, 10000000), "most search steps per node before a node is passed as unsure"),
    KEY("cpu_only_pods", "score", false, NOSEARCH, RULE(K_CPU_ONLY, cpu_only_pods, 0, 0), "pods without claims: score places them by the strategy (FGD keeps a typical pod's CPU free); pass leaves them to kube-scheduler"),
    /* The defragmentation planner's limits (defrag.h): no placement depends on them. */
    KEY("defrag_max_evictions", "4", false, NOSEARCH, RULE(K_UINT, defrag_max_evictions, 1, SF_DEFRAG_EVICT_MAX), "most pods one defragmentation plan evicts"),
    KEY("defrag_protect_namespaces", "kube-system", false, NOSEARCH, RULE(K_NAME, defrag_protect_namespaces, 0, 0), "comma-separated namespaces whose pods a defragmentation plan never evicts"),
    KEY("defrag_max_per_hour", "6", false, NOSEARCH, RULE(K_UINT, defrag_max_per_hour, 0, 3600), "most defragmentation plans carried out per hour (the churn replay's --defrag)"),
    KEY("defrag_budget", "50000", false, NOSEARCH, RULE(K_UINT, defrag_budget, 1000, 100000000), "most node evaluations one defragmentation plan spends"),
};
/* clang-format on */

#define NKEYS (sizeof keys / sizeof keys[0])
typedef sf_policy_rule_t rule_t;
_Static_assert(sizeof(sf_strategy_t) == sizeof(int) && sizeof(sf_choice_t) == sizeof(int) &&
                   sizeof(sf_cpu_only_t) == sizeof(int),
               "the enumerations hash as int");

static const char *const strategies[] = {"fragmentation", "fgd", "binpack", "spread"};
static const char *const choices[] = {"first-fit", "packer"};
static const char *const cpu_only[] = {"score", "pass"};

/* ---- text spans ---- */

static span_t mkspan(const char *s)
{
  return (span_t){s, strlen(s)};
}

static bool isspc(char c)
{
  return c == ' ' || (c >= '\t' && c <= '\r');
}

static span_t trim(span_t s)
{
  while (s.n > 0 && isspc(s.p[0])) {
    s.p++;
    s.n--;
  }
  while (s.n > 0 && isspc(s.p[s.n - 1]))
    s.n--;
  return s;
}

/* Splits s at its first c into trimmed halves; false when there is no c. */
static bool cut(span_t s, char c, span_t *left, span_t *right)
{
  const char *at = s.n > 0 ? memchr(s.p, c, s.n) : NULL;
  if (at == NULL)
    return false;
  *left = trim((span_t){s.p, (size_t)(at - s.p)});
  *right = trim((span_t){at + 1, s.n - (size_t)(at - s.p) - 1});
  return true;
}

static bool eq(span_t s, const char *lit)
{
  /* strncmp, not memcmp: clang turns memcmp()==0 into bcmp, off the pure list. */
  return s.n == strlen(lit) && strncmp(s.p, lit, s.n) == 0;
}

/* Printable ASCII, none of `forbid`, spaces only inside when `spaces`. */
static bool name_ok(span_t s, size_t min, const char *forbid, bool spaces)
{
  if (s.n < min || s.n >= SF_POLICY_NAME_MAX)
    return false;
  for (size_t i = 0; i < s.n; i++) {
    char c = s.p[i];
    if (c < ' ' || c > '~' || (c == ' ' && !spaces) || strchr(forbid, c) != NULL)
      return false;
  }
  return true;
}

/* A constant message, cut to the buffer (snprintf(err, errlen, "%s", msg) without
 * the format). */
static void say(char *err, size_t errlen, const char *msg)
{
  size_t n = strlen(msg);
  if (errlen == 0)
    return;
  n = n < errlen - 1 ? n : errlen - 1;
  memcpy(err, msg, n);
  err[n] = '\0';
}

static void name_copy(char *dst, span_t s)
{
  assert(s.n < SF_POLICY_NAME_MAX);
  memcpy(dst, s.p, s.n);
  dst[s.n] = '\0';
}

/* ---- numbers ---- */

static int uint_in(span_t s, uint32_t lo, uint32_t hi, uint32_t *out)
{
  uint64_t v = 0;
  if (s.n == 0)
    return SF_EINVAL;
  for (size_t i = 0; i < s.n; i++) {
    if (s.p[i] < '0' || s.p[i] > '9')
      return SF_EINVAL;
    v = v * 10 + (uint64_t)(s.p[i] - '0');
    if (v > hi)
      return SF_EINVAL;
  }
  if (v < lo)
    return SF_EINVAL;
  *out = (uint32_t)v;
  return 0;
}

/* A finite number and nothing else. */
static int num(span_t s, double *out)
{
  char tmp[NUM_MAX], *end;
  double v;
  if (s.n == 0 || s.n >= sizeof tmp)
    return SF_EINVAL;
  memcpy(tmp, s.p, s.n);
  tmp[s.n] = '\0';
  v = strtod(tmp, &end);
  if (end != tmp + s.n || isspc(tmp[0]) || !isfinite(v))
    return SF_EINVAL;
  /* -0 would print as "-0"; it is the same weight as 0. */
  *out = v == 0 ? 0 : v;
  return 0;
}

/* ---- island_map ---- */

static const char *island_item(span_t it, sf_island_rule_t *r)
{
  span_t left, size, prefix, model;
  memset(r, 0, sizeof *r);
  if (!cut(it, '=', &left, &size))
    return "missing =SIZE";
  model = left;
  if (cut(left, ':', &prefix, &model)) {
    if (!name_ok(prefix, 1, ",:=", false))
      return "bad NODEPREFIX";
    name_copy(r->node_prefix, prefix);
  }
  if (!name_ok(model, 1, MODEL_FORBID, true))
    return "bad MODEL";
  name_copy(r->model, model);
  if (uint_in(size, 1, 64, &r->size) != 0)
    return "SIZE must be an integer in 1..64";
  return NULL;
}

/* ---- fgd_mix ---- */

static const char *mix_models(span_t s, sf_shape_t *sh)
{
  span_t m, rest = s;
  for (;;) {
    bool more = cut(s, '|', &m, &rest);
    if (!more)
      m = trim(s);
    if (!name_ok(m, 1, MODEL_FORBID, true))
      return "bad MODEL";
    if (sh->nmodels == SF_POLICY_MODELS_MAX)
      return "too many models";
    name_copy(sh->models[sh->nmodels++], m);
    if (!more)
      return NULL;
    s = rest;
  }
}

/* AMOUNTxCOUNT, split at the last 'x' (no quantity contains one). */
static const char *mix_size(span_t s, sf_shape_t *sh)
{
  const char *x = s.p + s.n;
  span_t amt, cnt;
  while (x > s.p && x[-1] != 'x')
    x--;
  if (x == s.p)
    return "expected AMOUNTxCOUNT";
  amt = trim((span_t){s.p, (size_t)(x - 1 - s.p)});
  cnt = trim((span_t){x, s.n - (size_t)(x - s.p)});
  if (!eq(amt, "whole") && (sf_quantity_parse_n(amt.p, amt.n, &sh->amount) != 0 || sh->amount <= 0))
    return "AMOUNT must be a positive quantity or whole";
  if (uint_in(cnt, 1, 64, &sh->count) != 0)
    return "COUNT must be an integer in 1..64";
  return NULL;
}

static const char *mix_item(span_t it, sf_shape_t *sh)
{
  span_t spec, w, head, models, cpu, size;
  const char *why;
  memset(sh, 0, sizeof *sh);
  if (!cut(it, '=', &spec, &w))
    return "missing =WEIGHT";
  if (num(w, &sh->weight) != 0 || !(sh->weight > 0))
    return "WEIGHT must be a positive number";
  if (spec.n > 0 && spec.p[spec.n - 1] == '!') {
    sh->island = true;
    spec = trim((span_t){spec.p, spec.n - 1});
  }
  head = spec;
  if (cut(spec, '@', &head, &models) && (why = mix_models(models, sh)) != NULL)
    return why;
  size = head;
  if (cut(head, ':', &cpu, &size) &&
      (sf_quantity_parse_n(cpu.p, cpu.n, &sh->cpu_milli) != 0 || sh->cpu_milli < 0))
    return "CPU must be a quantity >= 0";
  return mix_size(size, sh);
}

/* ---- the lists, all or nothing ---- */

typedef const char *(*item_fn)(span_t item, void *elem);

static const char *island_fn(span_t it, void *e)
{
  return island_item(it, e);
}

static const char *mix_fn(span_t it, void *e)
{
  return mix_item(it, e);
}

/* Parses a ','-separated list into a new array; on error *bad is the item. */
static const char *list(span_t v, size_t size, item_fn fn, void **arr, size_t *n, span_t *bad)
{
  size_t cap = 0;
  span_t it, rest = v;
  const char *why = NULL;
  *arr = NULL;
  *n = 0;
  while (v.n > 0 && why == NULL) {
    bool more = cut(rest, ',', &it, &rest);
    if (!more)
      it = trim(rest);
    sf_xgrow(arr, &cap, *n + 1, size);
    *bad = it;
    why = it.n == 0 ? "empty item" : fn(it, (char *)*arr + *n * size);
    (*n)++;
    if (!more)
      break;
  }
  if (why != NULL) {
    free(*arr);
    *arr = NULL;
    *n = 0;
  }
  return why;
}

static int set_list(sf_policy_t *pol, kind_t kind, span_t v, char *err, size_t errlen)
{
  bool isl = kind == K_ISLANDS;
  void *arr;
  size_t n;
  span_t bad = v;
  const char *r = isl ? list(v, sizeof(sf_island_rule_t), island_fn, &arr, &n, &bad)
                      : list(v, sizeof(sf_shape_t), mix_fn, &arr, &n, &bad);
  if (r != NULL) {
    snprintf(err, errlen, "expected %s,...: item \"%.*s\": %s",
             isl ? "[NODEPREFIX:]MODEL=SIZE" : "[CPU:]AMOUNTxCOUNT[@M1|M2][!]=WEIGHT",
             bad.n > 200 ? 200 : (int)bad.n, bad.p, r);
    return SF_EINVAL;
  }
  if (isl) {
    free(pol->island_rules);
    pol->island_rules = arr;
    pol->nisland_rules = n;
  } else {
    free(pol->mix);
    pol->mix = arr;
    pol->nmix = n;
  }
  return 0;
}

/* ---- setting ---- */

static int set_enum(const char *const *names, size_t count, span_t v, int *out, char *err,
                    size_t errlen)
{
  for (size_t i = 0; i < count; i++) {
    if (eq(v, names[i])) {
      *out = (int)i;
      return 0;
    }
  }
  if (count == 2)
    snprintf(err, errlen, "expected %s or %s", names[0], names[1]);
  else
    snprintf(err, errlen, "expected one of %s, %s, %s, %s", names[0], names[1], names[2], names[3]);
  return SF_EINVAL;
}

static int set_scalar(sf_policy_t *pol, const rule_t *r, span_t v, char *err, size_t errlen)
{
  char *field = (char *)pol + r->off;
  double d;
  uint32_t u;
  switch (r->kind) {
  case K_NAME:
    if (!name_ok(v, r->lo, "", false)) {
      snprintf(err, errlen, "expected %u..%d printable characters without spaces", r->lo,
               SF_POLICY_NAME_MAX - 1);
      return SF_EINVAL;
    }
    name_copy(field, v);
    return 0;
  case K_WEIGHT:
    if (num(v, &d) != 0 || d < 0 || d > (r->hi > 0 ? r->hi : WEIGHT_MAX)) {
      if (r->hi > 0) /* a bounded weight: rule_t.hi is its largest value */
        snprintf(err, errlen, "expected a number >= 0 and <= %u", r->hi);
      else
        say(err, errlen, "expected a number >= 0 and <= 1e6");
      return SF_EINVAL;
    }
    memcpy(field, &d, sizeof d);
    return 0;
  default:
    assert(r->kind == K_UINT);
    if (uint_in(v, r->lo, r->hi, &u) != 0) {
      snprintf(err, errlen, "expected an integer in %u..%u", r->lo, r->hi);
      return SF_EINVAL;
    }
    memcpy(field, &u, sizeof u);
    return 0;
  }
}

static int apply(sf_policy_t *pol, const rule_t *r, span_t v, char *err, size_t errlen)
{
  int e = 0, rc;
  switch (r->kind) {
  case K_STRATEGY:
    if ((rc = set_enum(strategies, 4, v, &e, err, errlen)) == 0)
      pol->strategy = (sf_strategy_t)e;
    return rc;
  case K_CHOICE:
    if ((rc = set_enum(choices, 2, v, &e, err, errlen)) == 0)
      pol->device_choice = (sf_choice_t)e;
    return rc;
  case K_CPU_ONLY:
    if ((rc = set_enum(cpu_only, 2, v, &e, err, errlen)) == 0)
      pol->cpu_only_pods = (sf_cpu_only_t)e;
    return rc;
  case K_ISLANDS:
  case K_MIX: return set_list(pol, r->kind, v, err, errlen);
  default: return set_scalar(pol, r, v, err, errlen);
  }
}

static int find(const char *key)
{
  for (size_t i = 0; i < NKEYS; i++)
    if (strcmp(keys[i].key, key) == 0)
      return (int)i;
  return -1;
}

const sf_policy_key_t *sf_policy_keys(size_t *n)
{
  *n = NKEYS;
  return keys;
}

int sf_policy_set(sf_policy_t *pol, const char *key, const char *value, char *err, size_t errlen)
{
  char why[WHY_MAX];
  span_t v;
  int k, rc;
  assert(pol != NULL && key != NULL && value != NULL && (err != NULL || errlen == 0));
  if ((k = find(key)) < 0) {
    snprintf(err, errlen, "unknown policy key \"%s\"", key);
    return SF_EINVAL;
  }
  v = trim(mkspan(value));
  if ((rc = apply(pol, &keys[k].rule, v, why, sizeof why)) != 0)
    snprintf(err, errlen, "policy key \"%s\": bad value \"%.*s\": %s", key,
             v.n > 512 ? 512 : (int)v.n, v.p, why);
  return rc;
}

void sf_policy_init(sf_policy_t *pol)
{
  char why[WHY_MAX];
  memset(pol, 0, sizeof *pol);
  for (size_t i = 0; i < NKEYS; i++) {
    int rc = apply(pol, &keys[i].rule, mkspan(keys[i].def), why, sizeof why);
    assert(rc == 0);
    (void)rc;
  }
}

void sf_policy_dispose(sf_policy_t *pol)
{
  if (pol == NULL)
    return;
  free(pol->island_rules);
  free(pol->mix);
  pol->island_rules = NULL;
  pol->mix = NULL;
  pol->nisland_rules = pol->nmix = 0;
}

static void *dup(const void *p, size_t n, size_t size)
{
  return n == 0 ? NULL : memcpy(sf_xmalloc(n * size), p, n * size);
}

void sf_policy_copy(sf_policy_t *dst, const sf_policy_t *src)
{
  *dst = *src;
  dst->island_rules = dup(src->island_rules, src->nisland_rules, sizeof *src->island_rules);
  dst->mix = dup(src->mix, src->nmix, sizeof *src->mix);
}

int sf_policy_from_kv(sf_policy_t *out, const char *const *keys_, const char *const *values, size_t n,
                      char *err, size_t errlen)
{
  sf_policy_t tmp;
  int rc = 0;
  sf_policy_init(&tmp);
  for (size_t i = 0; i < n && rc == 0; i++)
    rc = sf_policy_set(&tmp, keys_[i], values[i], err, errlen);
  if (rc != 0)
    goto done;
  *out = tmp;
  /* Ownership of the arrays moved to *out. */
  tmp.island_rules = NULL;
  tmp.mix = NULL;
done:
  sf_policy_dispose(&tmp);
  return rc;
}

/* ---- getting ---- */

static void put(out_t *o, const char *s, size_t n)
{
  if (o->pos < o->len) {
    size_t room = o->len - 1 - o->pos;
    size_t c = n < room ? n : room;
    memcpy(o->buf + o->pos, s, c);
    o->buf[o->pos + c] = '\0';
  }
  o->pos += n;
}

static void puts_(out_t *o, const char *s)
{
  put(o, s, strlen(s));
}

/* The fewest significant digits that read back as the same double. */
static void put_double(out_t *o, double d)
{
  char tmp[40];
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(tmp, sizeof tmp, "%.*g", prec, d);
    if (strtod(tmp, NULL) == d)
      break;
  }
  puts_(o, tmp);
}

static void put_uint(out_t *o, uint64_t u)
{
  char tmp[24];
  snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)u);
  puts_(o, tmp);
}

static void put_quantity(out_t *o, sf_milli_t v, int binary)
{
  char tmp[32];
  sf_quantity_format(v, binary, tmp, sizeof tmp);
  puts_(o, tmp);
}

static void put_islands(out_t *o, const sf_policy_t *pol)
{
  for (size_t i = 0; i < pol->nisland_rules; i++) {
    const sf_island_rule_t *r = &pol->island_rules[i];
    if (i > 0)
      puts_(o, ",");
    if (r->node_prefix[0] != '\0') {
      puts_(o, r->node_prefix);
      puts_(o, ":");
    }
    puts_(o, r->model);
    puts_(o, "=");
    put_uint(o, r->size);
  }
}

static void put_shape(out_t *o, const sf_shape_t *sh)
{
  if (sh->cpu_milli > 0) {
    put_quantity(o, sh->cpu_milli, 0);
    puts_(o, ":");
  }
  if (sh->amount > 0)
    put_quantity(o, sh->amount, 1);
  else
    puts_(o, "whole");
  puts_(o, "x");
  put_uint(o, sh->count);
  for (uint32_t m = 0; m < sh->nmodels; m++) {
    puts_(o, m == 0 ? "@" : "|");
    puts_(o, sh->models[m]);
  }
  if (sh->island)
    puts_(o, "!");
  puts_(o, "=");
  put_double(o, sh->weight);
}

static void put_value(out_t *o, const sf_policy_t *pol, const rule_t *r)
{
  const char *field = (const char *)pol + r->off;
  double d;
  uint32_t u;
  switch (r->kind) {
  case K_STRATEGY: puts_(o, sf_strategy_name(pol->strategy)); break;
  case K_CHOICE:
    puts_(o, (unsigned)pol->device_choice < 2 ? choices[pol->device_choice] : "unknown");
    break;
  case K_CPU_ONLY:
    puts_(o, (unsigned)pol->cpu_only_pods < 2 ? cpu_only[pol->cpu_only_pods] : "unknown");
    break;
  case K_NAME: puts_(o, field); break;
  case K_ISLANDS: put_islands(o, pol); break;
  case K_MIX:
    for (size_t i = 0; i < pol->nmix; i++) {
      if (i > 0)
        puts_(o, ",");
      put_shape(o, &pol->mix[i]);
    }
    break;
  case K_WEIGHT:
    memcpy(&d, field, sizeof d);
    put_double(o, d);
    break;
  case K_UINT:
    memcpy(&u, field, sizeof u);
    put_uint(o, u);
    break;
  }
}

int sf_policy_get(const sf_policy_t *pol, const char *key, char *buf, size_t len)
{
  out_t o = {buf, len, 0};
  int k = find(key);
  assert(buf != NULL || len == 0);
  if (len > 0)
    buf[0] = '\0';
  if (k < 0)
    return SF_ENOENT;
  put_value(&o, pol, &keys[k].rule);
  /* A truncated value would not read back as the same policy. */
  return o.pos < len ? 0 : SF_E2BIG;
}

/* ---- hashing ---- */

static uint64_t mixin(uint64_t h, const void *data, size_t n)
{
  const unsigned char *b = data;
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

static uint64_t mixstr(uint64_t h, const char *s)
{
  return mixin(h, s, strlen(s) + 1);
}

static uint64_t hash_shape(uint64_t h, const sf_shape_t *sh)
{
  h = mixin(h, &sh->cpu_milli, sizeof sh->cpu_milli);
  h = mixin(h, &sh->amount, sizeof sh->amount);
  h = mixin(h, &sh->count, sizeof sh->count);
  h = mixin(h, &sh->island, sizeof sh->island);
  h = mixin(h, &sh->weight, sizeof sh->weight);
  for (uint32_t m = 0; m < sh->nmodels; m++)
    h = mixstr(h, sh->models[m]);
  return mixin(h, &sh->nmodels, sizeof sh->nmodels);
}

/* One key's value; every field is read where the table says it is. */
static uint64_t hash_value(uint64_t h, const sf_policy_t *pol, const rule_t *r)
{
  const char *field = (const char *)pol + r->off;
  switch (r->kind) {
  case K_NAME: return mixstr(h, field);
  case K_ISLANDS:
    for (size_t i = 0; i < pol->nisland_rules; i++) {
      h = mixstr(h, pol->island_rules[i].node_prefix);
      h = mixstr(h, pol->island_rules[i].model);
      h = mixin(h, &pol->island_rules[i].size, sizeof pol->island_rules[i].size);
    }
    return mixin(h, &pol->nisland_rules, sizeof pol->nisland_rules);
  case K_MIX:
    for (size_t i = 0; i < pol->nmix; i++)
      h = hash_shape(h, &pol->mix[i]);
    return mixin(h, &pol->nmix, sizeof pol->nmix);
  case K_WEIGHT: return mixin(h, field, sizeof(double));
  case K_UINT: return mixin(h, field, sizeof(uint32_t));
  default: return mixin(h, field, sizeof(int)); /* the enumerations */
  }
}

uint64_t sf_policy_hash(const sf_policy_t *pol, bool places_only, uint64_t h)
{
  for (size_t i = 0; i < NKEYS; i++)
    if (keys[i].places || !places_only)
      h = hash_value(h, pol, &keys[i].rule);
  return h;
}

const char *sf_strategy_name(sf_strategy_t s)
{
  return (unsigned)s < sizeof strategies / sizeof strategies[0] ? strategies[s] : "unknown";
}
