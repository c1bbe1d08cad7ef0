/*
 * Tests of packer/policy.c: defaults as policy.h documents them, every key's
 * get/set round trip, validation messages naming key and value, atomicity of
 * sf_policy_set and sf_policy_from_kv, and the two list grammars.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include "slicefit/policy.h"

#define BUF 8192

typedef struct {
  const char *key;
  const char *good[8];
  const char *bad[16];
} cases_t;

static const cases_t cases[] = {
    {"strategy",
     {"fragmentation", "fgd", "binpack", "spread", " spread\n"},
     {"", "Spread", "pack", "fgd,spread", "fgd x"}},
    {"device_choice", {"first-fit", "packer", "\tpacker "}, {"", "firstfit", "first fit", "PACKER"}},
    {"capacity",
     {"memory", "cores", "gpu.nvidia.com/memory", "a"},
     {"", "   ", "two words", "tab\there", "caf\xc3\xa9"}},
    {"model_attribute", {"productName", "gpu.nvidia.com/productName"}, {"", "product name", "x\x01"}},
    {"island_attribute", {"", "cliqueId", "nvlink.domain"}, {"a b", "\x7f"}},
    {"island_map",
     {"", "A100=4", "gpu-a:A100=4,H100=8", " h100 = 8 , node-:NVIDIA A100 80GB PCIe=2", "B200=64",
      "A=1"},
     {"A100", "A100=0", "A100=65", "A100=x", "=4", "A100=4,", ",A100=4", "A100=4,,B=2", ":A100=4",
      "a b:A100=4", "A|B=4", "A100=4=5", "A100=-1", "A100=4x"}},
    {"fgd_mix",
     {"", "10Gix1=1", "2:1.5Gix2@A100|H100!=0.25,wholex8=3",
      "500m:wholex1@NVIDIA A100 80GB PCIe=1e-3", "40Gix1@a|b|c|d|e|f|g|h=2", "wholex64!=7",
      "1x1=1e300"},
     {"10Gix1", "10Gix0=1", "10Gix65=1", "10Gi=1", "0x1=1", "-1Gix1=1", "wholex1=0", "wholex1=-1",
      "wholex1=nan", "wholex1=inf", "abcx1=1", "-1:wholex1=1", "wholex1@=1", "wholex1@a||b=1",
      "wholex1@a|b|c|d|e|f|g|h|i=1", "wholex1=1,"}},
    {"weight_frag",
     {"0", "1", "0.5", "1e6", "3.14159", "+2", "1e-300", "0.1"},
     {"", "abc", "-1", "1000001", "nan", "inf", "-inf", "1x", "1 2", "0x", "1e6.5"}},
    {"weight_island", {"0", "2.5", "1000000"}, {"-0.1", "1e7", "NaN"}},
    {"weight_model", {"0.5", "0", "7"}, {"half", "", "INF"}},
    {"weight_unfed", {"1", "0", "0.25", " 1.0 "}, {"1.01", "2", "-0.5", "nan", "", "all"}},
    {"weight_plan", {"16", "0", "0.5", "1e6"}, {"-1", "1e7", "nan", "inf", "", "plan"}},
    {"weight_strand", {"16", "0", "0.5", "1e6"}, {"-1", "1e7", "nan", "inf", "", "strand"}},
    {"weight_fill", {"0.3", "0", "2", "1e6"}, {"-1", "1e7", "nan", "inf", "", "fill"}},
    {"mix_coverage", {"1", "95", "100"}, {"0", "101", "-5", "95%", ""}},
    {"max_sharers", {"0", "100000", "3"}, {"100001", "-1", "x", ""}},
    {"headroom_pct", {"0", "99", "10"}, {"100", "-1", "5%", ""}},
    {"search_budget", {"16", "4096", "10000000"}, {"15", "0", "10000001", "lots"}},
    {"cpu_only_pods", {"score", "pass", " pass\n"}, {"", "Score", "off", "score,pass"}},
    {"defrag_max_evictions", {"1", "4", "16"}, {"0", "17", "-1", "four", ""}},
    {"defrag_protect_namespaces",
     {"kube-system", "", "kube-system,gpu-operator", "a"},
     {"kube system", "tab\there", "caf\xc3\xa9"}},
    {"defrag_max_per_hour", {"0", "6", "3600"}, {"3601", "-1", "6/h", ""}},
    {"defrag_budget", {"1000", "50000", "100000000"}, {"999", "0", "100000001", "lots"}},
};

#define NCASES (sizeof cases / sizeof cases[0])

/* The value as the message quotes it: trimmed of surrounding whitespace. */
static const char *trimmed(const char *v, char *buf, size_t len)
{
  size_t n;
  while (*v != '\0' && strchr(" \t\r\n\v\f", *v) != NULL)
    v++;
  n = strlen(v);
  while (n > 0 && strchr(" \t\r\n\v\f", v[n - 1]) != NULL)
    n--;
  snprintf(buf, len, "\"%.*s\"", (int)n, v);
  return buf;
}

static char *get(const sf_policy_t *pol, const char *key)
{
  static char buf[4][BUF];
  static int turn;
  char *b = buf[turn++ % 4];
  int rc = sf_policy_get(pol, key, b, BUF);
  cr_assert_eq(rc, 0, "get(%s) = %d", key, rc);
  return b;
}

/* Every key's text, joined: a policy's observable state. */
static void snapshot(const sf_policy_t *pol, char *out, size_t len)
{
  size_t n, pos = 0;
  const sf_policy_key_t *k = sf_policy_keys(&n);
  out[0] = '\0';
  for (size_t i = 0; i < n; i++) {
    const char *v = get(pol, k[i].key);
    pos += (size_t)snprintf(out + pos, len - pos, "%s=%s\n", k[i].key, v);
    cr_assert_lt(pos, len);
  }
}

Test(policy, defaults_match_header)
{
  sf_policy_t p;
  sf_policy_init(&p);
  cr_assert_eq(p.strategy, SF_STRATEGY_FRAGMENTATION);
  cr_assert_eq(p.device_choice, SF_CHOICE_FIRST_FIT);
  cr_assert_str_eq(p.capacity, "memory");
  cr_assert_str_eq(p.model_attribute, "productName");
  cr_assert_str_eq(p.island_attribute, "");
  cr_assert_eq(p.nisland_rules, 0);
  cr_assert_null(p.island_rules);
  cr_assert_eq(p.nmix, 0);
  cr_assert_null(p.mix);
  cr_assert_eq(p.weight_frag, 1.0);
  cr_assert_eq(p.weight_island, 1.0);
  cr_assert_eq(p.weight_model, 0.5);
  cr_assert_eq(p.weight_unfed, 0.25);
  cr_assert_eq(p.weight_plan, 16.0);
  cr_assert_eq(p.weight_strand, 16.0);
  cr_assert_eq(p.weight_fill, 0.1);
  cr_assert_eq(p.mix_coverage, 95);
  cr_assert_eq(p.max_sharers, 0);
  cr_assert_eq(p.headroom_pct, 0);
  cr_assert_eq(p.search_budget, 4096);
  cr_assert_eq(p.cpu_only_pods, SF_CPU_ONLY_SCORE);
  cr_assert_eq(p.defrag_max_evictions, 4);
  cr_assert_str_eq(p.defrag_protect_namespaces, "kube-system");
  cr_assert_eq(p.defrag_max_per_hour, 6);
  cr_assert_eq(p.defrag_budget, 50000);
  sf_policy_dispose(&p);
}

Test(policy, key_table_is_complete_and_renders_defaults)
{
  size_t n;
  const sf_policy_key_t *k = sf_policy_keys(&n);
  sf_policy_t p;
  cr_assert_eq(n, NCASES);
  sf_policy_init(&p);
  for (size_t i = 0; i < n; i++) {
    cr_assert_str_eq(k[i].key, cases[i].key);
    cr_assert(k[i].doc != NULL && strlen(k[i].doc) > 10, "%s has no doc", k[i].key);
    cr_assert_str_eq(get(&p, k[i].key), k[i].def, "%s", k[i].key);
  }
  sf_policy_dispose(&p);
}

Test(policy, every_good_value_round_trips)
{
  for (size_t i = 0; i < NCASES; i++) {
    for (size_t j = 0; j < 8 && cases[i].good[j] != NULL; j++) {
      const char *key = cases[i].key, *val = cases[i].good[j];
      char err[256] = "", first[BUF];
      sf_policy_t p;
      sf_policy_init(&p);
      cr_assert_eq(sf_policy_set(&p, key, val, err, sizeof err), 0, "%s=\"%s\": %s", key, val, err);
      strcpy(first, get(&p, key));
      cr_assert_eq(sf_policy_set(&p, key, first, err, sizeof err), 0, "%s=\"%s\": %s", key, first,
                   err);
      cr_assert_str_eq(get(&p, key), first, "%s: \"%s\" did not round-trip", key, val);
      sf_policy_dispose(&p);
    }
  }
}

Test(policy, every_bad_value_is_rejected_naming_key_and_value)
{
  for (size_t i = 0; i < NCASES; i++) {
    for (size_t j = 0; j < 16 && cases[i].bad[j] != NULL; j++) {
      const char *key = cases[i].key, *val = cases[i].bad[j];
      char err[512] = "", before[BUF], after[BUF], quoted[256], tv[256];
      sf_policy_t p;
      sf_policy_init(&p);
      /* Start from a non-default value, so "unchanged" means something. */
      cr_assert_eq(sf_policy_set(&p, key, cases[i].good[1] ? cases[i].good[1] : cases[i].good[0],
                                 NULL, 0),
                   0);
      snapshot(&p, before, sizeof before);
      cr_assert_eq(sf_policy_set(&p, key, val, err, sizeof err), SF_EINVAL, "%s=\"%s\" accepted", key,
                   val);
      snprintf(quoted, sizeof quoted, "policy key \"%s\": bad value \"", key);
      cr_assert(strstr(err, quoted) == err, "message \"%s\"", err);
      cr_assert(strstr(err, trimmed(val, tv, sizeof tv)) != NULL, "message \"%s\" lacks %s", err, tv);
      snapshot(&p, after, sizeof after);
      cr_assert_str_eq(after, before, "%s=\"%s\" changed the policy", key, val);
      sf_policy_dispose(&p);
    }
  }
}

Test(policy, message_examples)
{
  char err[256];
  sf_policy_t p;
  sf_policy_init(&p);
  cr_assert_eq(sf_policy_set(&p, "weight_frag", "abc", err, sizeof err), SF_EINVAL);
  cr_assert_str_eq(err,
                   "policy key \"weight_frag\": bad value \"abc\": expected a number >= 0 and <= 1e6");
  cr_assert_eq(sf_policy_set(&p, "weight_unfed", "2", err, sizeof err), SF_EINVAL);
  cr_assert_str_eq(err,
                   "policy key \"weight_unfed\": bad value \"2\": expected a number >= 0 and <= 1");
  cr_assert_eq(sf_policy_set(&p, "foo", "1", err, sizeof err), SF_EINVAL);
  cr_assert_str_eq(err, "unknown policy key \"foo\"");
  cr_assert_eq(sf_policy_set(&p, "strategy", "x", err, sizeof err), SF_EINVAL);
  cr_assert_str_eq(err,
                   "policy key \"strategy\": bad value \"x\": expected one of fragmentation, fgd, "
                   "binpack, spread");
  cr_assert_eq(sf_policy_set(&p, "island_map", "A100=99", err, sizeof err), SF_EINVAL);
  cr_assert(strstr(err, "item \"A100=99\": SIZE must be an integer in 1..64") != NULL, "%s", err);
  /* A short buffer gets a truncated, terminated message; NULL is allowed. */
  cr_assert_eq(sf_policy_set(&p, "strategy", "x", err, 8), SF_EINVAL);
  cr_assert_str_eq(err, "policy ");
  cr_assert_eq(sf_policy_set(&p, "strategy", "x", NULL, 0), SF_EINVAL);
  sf_policy_dispose(&p);
}

Test(policy, values_are_trimmed)
{
  sf_policy_t p;
  sf_policy_init(&p);
  cr_assert_eq(sf_policy_set(&p, "strategy", "  binpack\r\n", NULL, 0), 0);
  cr_assert_eq(p.strategy, SF_STRATEGY_BINPACK);
  cr_assert_eq(sf_policy_set(&p, "search_budget", " 100 ", NULL, 0), 0);
  cr_assert_eq(p.search_budget, 100);
  cr_assert_eq(sf_policy_set(&p, "capacity", "\tcores\t", NULL, 0), 0);
  cr_assert_str_eq(p.capacity, "cores");
  cr_assert_eq(sf_policy_set(&p, "weight_model", " 0.25 ", NULL, 0), 0);
  cr_assert_eq(p.weight_model, 0.25);
  cr_assert_eq(sf_policy_set(&p, "island_attribute", "   ", NULL, 0), 0);
  cr_assert_str_eq(p.island_attribute, "");
  sf_policy_dispose(&p);
}

Test(policy, name_length_limit)
{
  char name[SF_POLICY_NAME_MAX + 1];
  sf_policy_t p;
  sf_policy_init(&p);
  memset(name, 'a', sizeof name);
  name[SF_POLICY_NAME_MAX - 1] = '\0';
  cr_assert_eq(sf_policy_set(&p, "capacity", name, NULL, 0), 0);
  cr_assert_str_eq(p.capacity, name);
  name[SF_POLICY_NAME_MAX - 1] = 'a';
  name[SF_POLICY_NAME_MAX] = '\0';
  cr_assert_eq(sf_policy_set(&p, "capacity", name, NULL, 0), SF_EINVAL);
  cr_assert_eq(sf_policy_set(&p, "island_map", name, NULL, 0), SF_EINVAL);
  sf_policy_dispose(&p);
}

Test(policy, island_map_grammar)
{
  sf_policy_t p;
  sf_policy_init(&p);
  cr_assert_eq(sf_policy_set(&p, "island_map", "gpu-a:A100=4, NVIDIA H100 80GB = 8", NULL, 0), 0);
  cr_assert_eq(p.nisland_rules, 2);
  cr_assert_str_eq(p.island_rules[0].node_prefix, "gpu-a");
  cr_assert_str_eq(p.island_rules[0].model, "A100");
  cr_assert_eq(p.island_rules[0].size, 4);
  cr_assert_str_eq(p.island_rules[1].node_prefix, "");
  cr_assert_str_eq(p.island_rules[1].model, "NVIDIA H100 80GB");
  cr_assert_eq(p.island_rules[1].size, 8);
  cr_assert_str_eq(get(&p, "island_map"), "gpu-a:A100=4,NVIDIA H100 80GB=8");
  cr_assert_eq(sf_policy_set(&p, "island_map", "", NULL, 0), 0);
  cr_assert_eq(p.nisland_rules, 0);
  cr_assert_null(p.island_rules);
  sf_policy_dispose(&p);
}

Test(policy, fgd_mix_grammar)
{
  sf_policy_t p;
  sf_policy_init(&p);
  cr_assert_eq(sf_policy_set(&p, "fgd_mix", "2:1.5Gix2@A100|H100!=0.25, wholex8 = 3", NULL, 0), 0);
  cr_assert_eq(p.nmix, 2);
  cr_assert_eq(p.mix[0].cpu_milli, 2000);
  cr_assert_eq(p.mix[0].amount, 1536LL * 1024 * 1024 * 1000);
  cr_assert_eq(p.mix[0].count, 2);
  cr_assert(p.mix[0].island);
  cr_assert_eq(p.mix[0].nmodels, 2);
  cr_assert_str_eq(p.mix[0].models[0], "A100");
  cr_assert_str_eq(p.mix[0].models[1], "H100");
  cr_assert_eq(p.mix[0].weight, 0.25);
  cr_assert_eq(p.mix[1].cpu_milli, 0);
  cr_assert_eq(p.mix[1].amount, 0);
  cr_assert_eq(p.mix[1].count, 8);
  cr_assert_not(p.mix[1].island);
  cr_assert_eq(p.mix[1].nmodels, 0);
  cr_assert_eq(p.mix[1].weight, 3.0);
  cr_assert_str_eq(get(&p, "fgd_mix"), "2:1536Mix2@A100|H100!=0.25,wholex8=3");
  cr_assert_eq(sf_policy_set(&p, "fgd_mix", "500m:80Gx1=1", NULL, 0), 0);
  cr_assert_eq(p.mix[0].cpu_milli, 500);
  cr_assert_eq(p.mix[0].amount, 80000000000LL * 1000);
  cr_assert_str_eq(get(&p, "fgd_mix"), "500m:78125000Kix1=1");
  sf_policy_dispose(&p);
}

Test(policy, get_errors)
{
  char buf[8];
  sf_policy_t p;
  sf_policy_init(&p);
  cr_assert_eq(sf_policy_get(&p, "nope", buf, sizeof buf), SF_ENOENT);
  cr_assert_str_eq(buf, "");
  cr_assert_eq(sf_policy_get(&p, "strategy", buf, sizeof buf), SF_E2BIG);
  cr_assert_str_eq(buf, "fragmen");
  cr_assert_eq(sf_policy_get(&p, "strategy", NULL, 0), SF_E2BIG);
  cr_assert_eq(sf_policy_get(&p, "capacity", buf, 7), 0);
  cr_assert_str_eq(buf, "memory");
  sf_policy_dispose(&p);
}

Test(policy, copy_is_deep)
{
  sf_policy_t a, b;
  char sa[BUF], sb[BUF];
  sf_policy_init(&a);
  cr_assert_eq(sf_policy_set(&a, "island_map", "A100=4", NULL, 0), 0);
  cr_assert_eq(sf_policy_set(&a, "fgd_mix", "wholex1=1", NULL, 0), 0);
  sf_policy_copy(&b, &a);
  snapshot(&a, sa, sizeof sa);
  snapshot(&b, sb, sizeof sb);
  cr_assert_str_eq(sa, sb);
  cr_assert_neq(a.island_rules, b.island_rules);
  cr_assert_neq(a.mix, b.mix);
  cr_assert_eq(sf_policy_set(&b, "island_map", "H100=8", NULL, 0), 0);
  cr_assert_str_eq(a.island_rules[0].model, "A100");
  sf_policy_dispose(&a);
  sf_policy_dispose(&a); /* idempotent */
  cr_assert_str_eq(b.mix[0].models[0], "");
  sf_policy_dispose(&b);
}

Test(policy, from_kv_all_or_nothing)
{
  static const char *const k[] = {"strategy", "island_map", "weight_frag", "search_budget"};
  static const char *const good[] = {"fgd", "A100=4", "2", "100"};
  static const char *const bad[] = {"fgd", "A100=4", "2", "1"};
  sf_policy_t out, sentinel;
  char err[256] = "";
  memset(&out, 0xa5, sizeof out);
  memcpy(&sentinel, &out, sizeof out);
  cr_assert_eq(sf_policy_from_kv(&out, k, bad, 4, err, sizeof err), SF_EINVAL);
  cr_assert(memcmp(&out, &sentinel, sizeof out) == 0, "*out touched on error");
  cr_assert(strstr(err, "search_budget") && strstr(err, "\"1\""), "%s", err);
  cr_assert_eq(sf_policy_from_kv(&out, k, good, 4, err, sizeof err), 0, "%s", err);
  cr_assert_eq(out.strategy, SF_STRATEGY_FGD);
  cr_assert_eq(out.nisland_rules, 1);
  cr_assert_eq(out.weight_frag, 2.0);
  cr_assert_eq(out.search_budget, 100);
  /* Untouched keys keep their defaults. */
  cr_assert_eq(out.weight_model, 0.5);
  cr_assert_str_eq(out.capacity, "memory");
  sf_policy_dispose(&out);
  /* No pairs at all: the defaults. The last of a repeated key wins. */
  cr_assert_eq(sf_policy_from_kv(&out, NULL, NULL, 0, NULL, 0), 0);
  cr_assert_eq(out.search_budget, 4096);
  sf_policy_dispose(&out);
  {
    static const char *const rk[] = {"strategy", "strategy"};
    static const char *const rv[] = {"spread", "binpack"};
    cr_assert_eq(sf_policy_from_kv(&out, rk, rv, 2, NULL, 0), 0);
    cr_assert_eq(out.strategy, SF_STRATEGY_BINPACK);
    sf_policy_dispose(&out);
  }
  /* An unknown key fails the whole set too. */
  memcpy(&out, &sentinel, sizeof out);
  {
    static const char *const uk[] = {"strategy", "colour"};
    static const char *const uv[] = {"spread", "blue"};
    cr_assert_eq(sf_policy_from_kv(&out, uk, uv, 2, err, sizeof err), SF_EINVAL);
    cr_assert_str_eq(err, "unknown policy key \"colour\"");
    cr_assert(memcmp(&out, &sentinel, sizeof out) == 0);
  }
}

Test(policy, weights_print_shortest)
{
  sf_policy_t p;
  sf_policy_init(&p);
  cr_assert_eq(sf_policy_set(&p, "weight_frag", "0.1", NULL, 0), 0);
  cr_assert_str_eq(get(&p, "weight_frag"), "0.1");
  cr_assert_eq(sf_policy_set(&p, "weight_frag", "-0", NULL, 0), 0);
  cr_assert_str_eq(get(&p, "weight_frag"), "0");
  cr_assert_eq(sf_policy_set(&p, "weight_frag", "0.30000000000000004", NULL, 0), 0);
  cr_assert_str_eq(get(&p, "weight_frag"), "0.30000000000000004");
  sf_policy_dispose(&p);
}

Test(policy, strategy_names)
{
  cr_assert_str_eq(sf_strategy_name(SF_STRATEGY_FRAGMENTATION), "fragmentation");
  cr_assert_str_eq(sf_strategy_name(SF_STRATEGY_FGD), "fgd");
  cr_assert_str_eq(sf_strategy_name(SF_STRATEGY_BINPACK), "binpack");
  cr_assert_str_eq(sf_strategy_name(SF_STRATEGY_SPREAD), "spread");
  cr_assert_str_eq(sf_strategy_name((sf_strategy_t)42), "unknown");
}
