/*
 * CEL for DRA selectors: every operator and function, CEL's error
 * absorption, missing attributes, overflow, the quantity and semver
 * libraries, the limits, and the real selectors of the fixtures evaluated on
 * devices transcribed from the fixtures' ResourceSlices.
 *
 * Expected answers: Y match, N no match (false), E no match because of a
 * CEL runtime error (a reason is given), U unknown at run time, C does not
 * compile (unknown, with a compile error).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include "cel_cases.h"
#include "slicefit/cel.h"
#include "slicefit/packer.h"

#define GI (1024LL * 1024 * 1024 * 1000)
#define MI (1024LL * 1024 * 1000)

static sf_index_t *idx;
static sf_cel_cache_t *cache;
/* NVIDIA node: three GPUs and a MIG device; compute-domain channel and daemon. */
static sf_dev_id g0, g1, h2, mig, chan, daemon_dev;
/* dra-example-driver node (README's kubectl get resourceslice output): gpu-0..gpu-7. */
static sf_dev_id ex[8];
/* k8s-website example: driver.example.com, a shared 64Gi GPU. */
static sf_dev_id web;

static sf_node_id node(const char *name)
{
  sf_node_id n;
  sf_node_spec_t ns = {name, 0, 0};
  cr_assert_eq(sf_index_node_upsert(idx, &ns, &n), 0);
  return n;
}

#define NV "gpu.nvidia.com/"
#define S(n, v)                \
  {                            \
    NV n, SF_ATTR_STRING, 0, v \
  }
#define I(n, v)                \
  {                            \
    NV n, SF_ATTR_INT, v, NULL \
  }
#define V(n, v)                 \
  {                             \
    NV n, SF_ATTR_VERSION, 0, v \
  }

static void nvidia_node(void)
{
  sf_node_id n = node("nv-node");
  static const sf_attr_t a0[] = {S("type", "gpu"),
                                 S("productName", "NVIDIA A100-SXM4-40GB"),
                                 S("brand", "Nvidia"),
                                 S("architecture", "Ampere"),
                                 I("index", 0),
                                 I("minor", 0),
                                 S("uuid", "GPU-4cf8db2d-06c0-7d70-1a51-e59b25b2c16c"),
                                 V("cudaComputeCapability", "8.0.0"),
                                 V("driverVersion", "550.54.15"),
                                 V("cudaDriverVersion", "12.4.0"),
                                 {NV "migEnabled", SF_ATTR_BOOL, 0, NULL},
                                 {"resource.kubernetes.io/pcieRoot", SF_ATTR_STRING, 0,
                                  "pci0000:00"}};
  static const sf_attr_t a1[] = {S("type", "gpu"), S("productName", "NVIDIA A100-SXM4-40GB"),
                                 I("index", 1)};
  static const sf_attr_t a2[] = {S("type", "gpu"), S("productName", "NVIDIA H100 80GB HBM3"),
                                 I("index", 2)};
  static const sf_attr_t am[] = {S("type", "mig"), S("profile", "1g.5gb"),
                                 S("productName", "NVIDIA A100-SXM4-40GB"), I("parentIndex", 0)};
  static const sf_capacity_t c40 = {NV "memory", 40 * GI, false, {0}},
                             c80 = {NV "memory", 80 * GI, false, {0}};
  static const sf_capacity_t cm[] = {{NV "memory", 4864 * MI, false, {0}},
                                     {NV "multiprocessors", 14000, false, {0}}};
  sf_device_spec_t d[] = {
      {"gpu-0", a0, sizeof a0 / sizeof a0[0], &c40, 1, NULL, 0, NULL, 0, false},
      {"gpu-1", a1, 3, &c40, 1, NULL, 0, NULL, 0, false},
      {"gpu-2", a2, 3, &c80, 1, NULL, 0, NULL, 0, false},
      {"gpu-0-mig-1g.5gb-0", am, 4, cm, 2, NULL, 0, NULL, 0, false},
  };
  cr_assert_eq(sf_index_pool_set(idx, n, "gpu.nvidia.com", "nv-node", d, 4, NULL, 0), 0);
  g0 = sf_index_dev_find(idx, "gpu.nvidia.com", "nv-node", "gpu-0");
  g1 = sf_index_dev_find(idx, "gpu.nvidia.com", "nv-node", "gpu-1");
  h2 = sf_index_dev_find(idx, "gpu.nvidia.com", "nv-node", "gpu-2");
  mig = sf_index_dev_find(idx, "gpu.nvidia.com", "nv-node", "gpu-0-mig-1g.5gb-0");
  static const sf_attr_t ac[] = {{"compute-domain.nvidia.com/type", SF_ATTR_STRING, 0, "channel"},
                                 {"compute-domain.nvidia.com/id", SF_ATTR_INT, 0, NULL}};
  static const sf_attr_t ad[] = {{"compute-domain.nvidia.com/type", SF_ATTR_STRING, 0, "daemon"},
                                 {"compute-domain.nvidia.com/id", SF_ATTR_INT, 0, NULL}};
  sf_device_spec_t cd[] = {{"channel-0", ac, 2, NULL, 0, NULL, 0, NULL, 0, false},
                           {"daemon-0", ad, 2, NULL, 0, NULL, 0, NULL, 0, false}};
  cr_assert_eq(sf_index_pool_set(idx, n, "compute-domain.nvidia.com", "nv-node", cd, 2, NULL, 0), 0);
  chan = sf_index_dev_find(idx, "compute-domain.nvidia.com", "nv-node", "channel-0");
  daemon_dev = sf_index_dev_find(idx, "compute-domain.nvidia.com", "nv-node", "daemon-0");
}

static void example_node(void)
{
  static const char *const uuids[8] = {"gpu-18db0e85-99e9-c746-8531-ffeb86328b39",
                                       "gpu-93d37703-997c-c46f-a531-755e3e0dc2ac",
                                       "gpu-ee3e4b55-fcda-44b8-0605-64b7a9967744",
                                       "gpu-9ede7e32-5825-a11b-fa3d-bab6d47e0243",
                                       "gpu-e7b42cb1-4fd8-91b2-bc77-352a0c1f5747",
                                       "gpu-f11773a1-5bfb-e48b-3d98-1beb5baaf08e",
                                       "gpu-0159f35e-99ee-b2b5-74f1-9d18df3f22ac",
                                       "gpu-657bd2e7-f5c2-a7f2-fbaa-0d1cdc32f81b"};
  static sf_attr_t attrs[8][4];
  static char names[8][16];
  static const sf_capacity_t mem = {"gpu.example.com/memory", 80 * GI, false, {0}};
  sf_device_spec_t d[8];
  sf_node_id n = node("dra-example-driver-cluster-worker");
  for (int i = 0; i < 8; i++) {
    snprintf(names[i], sizeof names[i], "gpu-%d", i);
    attrs[i][0] = (sf_attr_t){"gpu.example.com/driverVersion", SF_ATTR_VERSION, 0, "1.0.0"};
    attrs[i][1] = (sf_attr_t){"gpu.example.com/index", SF_ATTR_INT, i, NULL};
    attrs[i][2] = (sf_attr_t){"gpu.example.com/model", SF_ATTR_STRING, 0, "LATEST-GPU-MODEL"};
    attrs[i][3] = (sf_attr_t){"gpu.example.com/uuid", SF_ATTR_STRING, 0, uuids[i]};
    d[i] = (sf_device_spec_t){names[i], attrs[i], 4, &mem, 1, NULL, 0, NULL, 0, false};
  }
  cr_assert_eq(sf_index_pool_set(idx, n, "gpu.example.com", "dra-example-driver-cluster-worker", d, 8,
                                 NULL, 0),
               0);
  for (int i = 0; i < 8; i++)
    ex[i] = sf_index_dev_find(idx, "gpu.example.com", "dra-example-driver-cluster-worker", names[i]);
}

static void website_node(void)
{
  static const sf_attr_t a[] = {{"driver.example.com/type", SF_ATTR_STRING, 0, "gpu"}};
  static const sf_capacity_t c = {"driver.example.com/memory", 64 * GI, false, {0}};
  sf_device_spec_t d = {"gpu-0", a, 1, &c, 1, NULL, 0, NULL, 0, true};
  sf_node_id n = node("web-node");
  cr_assert_eq(sf_index_pool_set(idx, n, "driver.example.com", "web-node", &d, 1, NULL, 0), 0);
  web = sf_index_dev_find(idx, "driver.example.com", "web-node", "gpu-0");
}

static void setup(void)
{
  idx = sf_index_create();
  cache = sf_cel_cache_create();
  nvidia_node();
  example_node();
  website_node();
}

static void teardown(void)
{
  sf_cel_cache_destroy(cache);
  sf_index_destroy(idx);
}

TestSuite(cel, .init = setup, .fini = teardown);

static char outcome(const char *expr, sf_dev_id dev, char *why, size_t whylen)
{
  return cel_outcome(cache, idx, expr, dev, why, whylen, false);
}

#define CHECK(cs, dev) cel_check(cache, idx, cs, sizeof cs / sizeof cs[0], dev, false)

Test(cel, arithmetic_and_overflow)
{
  static const case_t cs[] = {
      {"1 + 2 == 3", 'Y'},
      {"1 + 2 * 3 == 7", 'Y'},
      {"(1 + 2) * 3 == 9", 'Y'},
      {"7 / 2 == 3", 'Y'},
      {"-7 / 2 == -3", 'Y'},
      {"-7 % 3 == -1", 'Y'},
      {"7 % 3 == 1", 'Y'},
      {"5 - 8 == -3", 'Y'},
      {"0x10 == 16", 'Y'},
      {"0xFFu == 255u", 'Y'},
      {"10u - 3u == 7u", 'Y'},
      {"6u / 4u == 1u", 'Y'},
      {"1.5 + 1.5 == 3.0", 'Y'},
      {"1.0 / 4.0 == 0.25", 'Y'},
      {"2.5 * 2.0 - 1.0 == 4.0", 'Y'},
      {".5 == 0.5", 'Y'},
      {"1e3 == 1000.0", 'Y'},
      {"-9223372036854775808 == -9223372036854775807 - 1", 'Y'},
      {"9223372036854775807 + 1 > 0", 'E'},
      {"-9223372036854775808 - 1 < 0", 'E'},
      {"9223372036854775807 * 2 > 0", 'E'},
      {"-(-9223372036854775808) > 0", 'E'},
      {"-9223372036854775808 / -1 > 0", 'E'},
      {"-9223372036854775808 % -1 == 0", 'E'},
      {"1 / 0 == 0", 'E'},
      {"1 % 0 == 0", 'E'},
      {"1u / 0u == 0u", 'E'},
      {"0u - 1u == 0u", 'E'},
      {"18446744073709551615u + 1u > 0u", 'E'},
      {"4294967296u * 4294967296u > 0u", 'E'},
      {"1.0 / 0.0 > 1e308", 'Y'},
      {"1.5 % 1.0 == 0.5", 'E'},
      {"1 + 1.0 == 2.0", 'E'},
      {"1 + 1u == 2", 'E'},
      {"'a' - 'b' == ''", 'E'},
      {"-'a' == 'a'", 'E'},
      {"-1u == 1u", 'E'},
      {"--1 == 1", 'Y'},
      {"-(1) == -1", 'Y'},
      {"-1.5 < 0.0", 'Y'},
      {"'a' + 'b' == 'ab'", 'Y'},
      {"[1] + [2] == [1, 2]", 'Y'},
      {"[1] + 'a' == [1]", 'E'},
      {"99999999999999999999 > 0", 'C'},
      {"9223372036854775808 > 0", 'C'},
      {"-9223372036854775809 < 0", 'C'},
  };
  CHECK(cs, g0);
}

Test(cel, comparisons_are_heterogeneous_for_numbers_only)
{
  static const case_t cs[] = {
      {"1 == 1.0", 'Y'},
      {"1 < 1.5", 'Y'},
      {"2u > 1", 'Y'},
      {"-1 < 0u", 'Y'},
      {"1u == 1", 'Y'},
      {"9007199254740993 > 9007199254740992.0", 'Y'},
      {"9223372036854775807 < 9223372036854775808.0", 'Y'},
      {"18446744073709551615u > 1e19", 'Y'},
      {"1.5 >= 1u", 'Y'},
      {"2.0 <= 2", 'Y'},
      {"0u < -0.5", 'N'},
      {"0.0 / 0.0 == 0.0 / 0.0", 'N'},
      {"0.0 / 0.0 != 0.0 / 0.0", 'Y'},
      {"0.0 / 0.0 < 1.0", 'N'},
      {"'abc' < 'abd'", 'Y'},
      {"'b' > 'abc'", 'Y'},
      {"'' < 'a'", 'Y'},
      {"'a' <= 'a'", 'Y'},
      {"false < true", 'Y'},
      {"'1' == 1", 'N'},
      {"'1' != 1", 'Y'},
      {"null == null", 'Y'},
      {"null == 0", 'N'},
      {"true != false", 'Y'},
      {"[1, 'a'] == [1, 'a']", 'C'},
      {"[1, 2] == [1]", 'N'},
      {"[1, 2] != [2, 1]", 'Y'},
      {"[[1]] == [[1.0]]", 'Y'},
      {"'a' < 1", 'E'},
      {"[1] < [2]", 'E'},
      {"null < null", 'C'},
      {"true < 1", 'E'},
      {"1 in [1, 2]", 'Y'},
      {"3 in [1, 2]", 'N'},
      {"1.0 in [1]", 'Y'},
      {"'a' in []", 'N'},
      {"1 in 1", 'E'},
      {"device == device", 'Y'},
      {"device.attributes == device.attributes", 'U'},
  };
  CHECK(cs, g0);
}

Test(cel, logic_not_and_ternary)
{
  static const case_t cs[] = {
      {"!true == false", 'Y'},
      {"!!true", 'Y'},
      {"!false", 'Y'},
      {"!1", 'E'},
      {"true ? 1 == 1 : false", 'Y'},
      {"false ? 1 / 0 == 0 : true", 'Y'},
      {"true ? true : 1 / 0 == 0", 'Y'},
      {"1 ? true : true", 'E'},
      {"(1 / 0 == 0) ? true : true", 'E'},
      {"(1 / 0 == 0) ? true : true || true", 'E'},
      {"'a'.matches('\\\\b') ? true : true", 'U'},
      {"1 < 2 ? 'x' : 'y'", 'C'},
      {"1 && true", 'E'},
      {"false && 1", 'N'},
      {"1 && false", 'N'},
      {"true || 1", 'Y'},
      {"1 || true", 'Y'},
      {"1 || false", 'E'},
      {"!(1 / 0 == 0)", 'E'},
      {"1", 'C'},
      {"'true'", 'C'},
      {"null", 'C'},
  };
  CHECK(cs, g0);
}

/* The 4x4 tables of && and || over true, false, error and unknown, in both orders. */
Test(cel, error_absorption_truth_tables)
{
  static const char *const term[4] = {"true", "false", "(1 / 0 == 0)", "'a'.matches('\\\\b')"};
  /* rows: left operand t f e u; columns: right operand t f e u. */
  static const char and_tab[4][5] = {"YNEU", "NNNN", "ENEU", "UNUU"};
  static const char or_tab[4][5] = {"YYYY", "YNEU", "YEEU", "YUUU"};
  for (int l = 0; l < 4; l++) {
    for (int r = 0; r < 4; r++) {
      char e[128], why[256];
      snprintf(e, sizeof e, "%s && %s", term[l], term[r]);
      char got = outcome(e, g0, why, sizeof why);
      cr_expect_eq(got, and_tab[l][r], "%s: want %c got %c (%s)", e, and_tab[l][r], got, why);
      snprintf(e, sizeof e, "%s || %s", term[l], term[r]);
      got = outcome(e, g0, why, sizeof why);
      cr_expect_eq(got, or_tab[l][r], "%s: want %c got %c (%s)", e, or_tab[l][r], got, why);
    }
  }
}

Test(cel, device_fields_and_missing_attributes)
{
  static const case_t cs[] = {
      {"device.driver == 'gpu.nvidia.com'", 'Y'},
      {"device.allowMultipleAllocations", 'N'},
      {"device.attributes['gpu.nvidia.com'].type == 'gpu'", 'Y'},
      {"device.attributes[\"gpu.nvidia.com\"][\"type\"] == 'gpu'", 'Y'},
      {"device.attributes['gpu.nvidia.com']['index'] == 0", 'Y'},
      {"device.attributes['gpu.nvidia.com'].index == 0.0", 'Y'},
      {"device.attributes['gpu.nvidia.com'].migEnabled == false", 'Y'},
      {"device.attributes['resource.kubernetes.io'].pcieRoot == 'pci0000:00'", 'Y'},
      {"device.attributes['gpu.nvidia.com'].nope == 'x'", 'E'},
      {"device.attributes['other.com'].type == 'gpu'", 'E'},
      {"device.attributes['gpu.nvidia.com'].nope == 'x' || true", 'Y'},
      {"false && device.attributes['gpu.nvidia.com'].nope == 'x'", 'N'},
      {"device.attributes['gpu.nvidia.com'].type == 1", 'N'},
      {"device.attributes['gpu.nvidia.com'].type > 1", 'E'},
      {"device.capacity['gpu.nvidia.com'].memory == quantity('40Gi')", 'Y'},
      {"device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('39Gi'))", 'Y'},
      {"device.capacity['gpu.nvidia.com'].cores == quantity('1')", 'E'},
      {"device.capacity['gpu.nvidia.com'].memory == 40", 'E'},
      {"device.nope == 1", 'C'},
      {"device.attributes[1] == 1", 'E'},
      {"device.driver.x == 1", 'E'},
      {"'gpu.nvidia.com' in device.attributes", 'Y'},
      {"'nope.com' in device.attributes", 'N'},
      {"'resource.kubernetes.io' in device.attributes", 'Y'},
      {"'gpu.nvidia.com' in device.capacity", 'Y'},
      {"'type' in device.attributes['gpu.nvidia.com']", 'Y'},
      {"'nope' in device.attributes['gpu.nvidia.com']", 'N'},
      {"'memory' in device.capacity['gpu.nvidia.com']", 'Y'},
      {"1 in device.attributes['gpu.nvidia.com']", 'N'},
      {"size(device.attributes) == 2", 'Y'},
      {"size(device.attributes['gpu.nvidia.com']) == 11", 'Y'},
      {"size(device.attributes['x.com']) == 0", 'Y'},
      {"device.capacity.size() == 1", 'Y'},
      {"has(device.attributes['gpu.nvidia.com'].type)", 'Y'},
      {"has(device.attributes['gpu.nvidia.com'].nope)", 'N'},
      {"has(device.attributes['x.com'].type)", 'N'},
      {"has(device.attributes.x)", 'N'},
      {"has(device.driver)", 'Y'},
      {"has(device.nope)", 'C'},
      {"has(1.x)", 'E'},
      {"has(device)", 'C'},
      {"has(device.attributes['x'].?y)", 'C'},
  };
  CHECK(cs, g0);
  static const case_t shared[] = {{"device.allowMultipleAllocations", 'Y'},
                                  {"size(device.attributes) == 1", 'Y'}};
  CHECK(shared, web);
}

Test(cel, strings)
{
  static const case_t cs[] = {
      {"size('h\\u00e9llo') == 5", 'Y'},
      {"'héllo'.size() == 5", 'Y'},
      {"size('') == 0", 'Y'},
      {"'hello'.startsWith('he')", 'Y'},
      {"'hello'.startsWith('hello!')", 'N'},
      {"'hello'.endsWith('lo')", 'Y'},
      {"'hello'.endsWith('hel')", 'N'},
      {"'hello'.contains('ell')", 'Y'},
      {"'hello'.contains('')", 'Y'},
      {"'hello'.contains('elo')", 'N'},
      {"'AbC'.lowerAscii() == 'abc'", 'Y'},
      {"'AbC'.upperAscii() == 'ABC'", 'Y'},
      {"'é'.upperAscii() == 'é'", 'Y'},
      {"'a'.startsWith(1)", 'C'},
      {"1.startsWith('a')", 'C'},
      {"'\\x41' == 'A'", 'Y'},
      {"'\\u00e9' == 'é'", 'Y'},
      {"'\\101' == 'A'", 'Y'},
      {"'\\U0001F600'.size() == 1", 'Y'},
      {"\"a\\\"b\" == 'a' + '\"' + 'b'", 'Y'},
      {"r'a\\nb'.size() == 4", 'Y'},
      {"R\"\\d\" == '\\\\d'", 'Y'},
      {"'''a\nb''' == 'a\\nb'", 'Y'},
      {"\"\"\"x\"y\"\"\" == 'x\"y'", 'Y'},
      {"'\\t\\r\\n\\a\\b\\f\\v\\?\\`'.size() == 9", 'Y'},
      {"'\\q'", 'C'},
      {"'\\ud800' == ''", 'C'},
      {"'\\U00110000' == ''", 'C'},
      {"'abc", 'C'},
      {"'a\nb'", 'C'},
      {"b'abc' == b'abc'", 'C'},
      {"'x' // a comment\n == 'x'", 'Y'},
      {"string(42) == '42'", 'Y'},
      {"string(18446744073709551615u) == '18446744073709551615'", 'Y'},
      {"string(true) == 'true'", 'Y'},
      {"string('s') == 's'", 'Y'},
      {"string(1.5) == '1.5'", 'Y'},
      {"string(-2.0) == '-2'", 'Y'},
      {"string(0.0001) == '0.0001'", 'Y'},
      {"string(1000000.0) == '1e+06'", 'Y'},
      {"string(123456.0) == '123456'", 'Y'},
      {"string(0.1 + 0.2) == '0.30000000000000004'", 'Y'},
      {"string(1.0 / 0.0) == '+Inf'", 'U'},
      {"string([1]) == ''", 'C'},
      {"int('42') == 42", 'Y'},
      {"int('-42') == -42", 'Y'},
      {"int('4x2') == 42", 'E'},
      {"int(3.9) == 3", 'Y'},
      {"int(1e19) == 0", 'E'},
      {"int(18446744073709551615u) == 0", 'E'},
      {"uint(1) == 1u", 'Y'},
      {"uint(-1) == 1u", 'E'},
      {"uint('7') == 7u", 'Y'},
      {"double(1) == 1.0", 'Y'},
      {"double('2.5') == 2.5", 'Y'},
      {"double('x') == 1.0", 'E'},
      {"dyn(1) == 1", 'Y'},
  };
  CHECK(cs, g0);
}

Test(cel, matches_translates_re2)
{
  static const case_t cs[] = {
      {"'abc'.matches('^a.c$')", 'Y'},
      {"matches('abc', 'b')", 'Y'},
      {"'abc'.matches('^b')", 'N'},
      {"'a.c'.matches('a\\\\.c')", 'Y'},
      {"'abc'.matches('a\\\\.c')", 'N'},
      {"'ABC'.matches('(?i)abc')", 'Y'},
      {"'x1'.matches('^x\\\\d$')", 'Y'},
      {"'x_'.matches('^x\\\\w$')", 'Y'},
      {"'x '.matches('^x\\\\s$')", 'Y'},
      {"'xa'.matches('^x\\\\D$')", 'Y'},
      {"'x1'.matches('^x\\\\D$')", 'N'},
      {"'aaa'.matches('^a{2,3}$')", 'Y'},
      {"'aaaa'.matches('^a{2,3}$')", 'N'},
      {"'a{'.matches('a{')", 'Y'},
      {"'ab'.matches('a|b')", 'Y'},
      {"'a]'.matches('^[]a]+$')", 'Y'},
      {"'-'.matches('^[a-]$')", 'Y'},
      {"'^'.matches('^[\\\\^]$')", 'Y'},
      {"'^'.matches('^[-^]$')", 'Y'},
      {"'x'.matches('[^x]')", 'N'},
      {"'ab'.matches('a*?b')", 'Y'},
      {"'7'.matches('^[[:digit:]]$')", 'Y'},
      {"'b'.matches('^[\\\\da-c]$')", 'Y'},
      {"'ac'.matches('^a(?:b|c)$')", 'Y'},
      {"'ab'.matches('^(?P<x>a)b$')", 'Y'},
      {"'abc'.matches('^' + 'a')", 'Y'},
      {"'abc'.matches('')", 'Y'},
      {"'a\\nb'.matches('a.b')", 'N'},
      {"'a\\nb'.matches('\\\\Aa')", 'Y'},
      {"'ab'.matches('b\\\\z')", 'Y'},
      {"'NVIDIA A100'.lowerAscii().matches('^.*a100.*$')", 'Y'},
      {"'x'.matches('\\\\x78')", 'Y'},
      {"'a'.matches('\\\\bx')", 'U'},
      {"'abc'.matches('a(?=b)')", 'U'},
      {"'a'.matches('a**')", 'U'},
      {"'x'.matches('a|')", 'U'},
      {"'x'.matches('()')", 'U'},
      {"'é'.matches('^.$')", 'U'},
      {"'é'.matches('é')", 'U'},
      {"'a'.matches('(')", 'U'},
      {"'a'.matches(')')", 'U'},
      {"'a'.matches('\\\\p{L}')", 'U'},
      {"'a'.matches('(?s).')", 'U'},
      {"'a'.matches('a{2000}')", 'U'},
      {"'a'.matches('[b-a]')", 'U'},
      {"'a'.matches('*')", 'U'},
      {"'a'.matches('(a{3}){2}')", 'U'},
      {"'aaa'.matches('^(a{3})+$')", 'Y'},
      {"'a'.matches('a{600}b{600}c{900}')", 'U'},
      {"'a'.matches(1)", 'C'},
      {"false && 'a'.matches('\\\\b')", 'N'},
  };
  CHECK(cs, g0);
}

Test(cel, quantity_library)
{
  static const case_t cs[] = {
      {"quantity('1.5Gi') == quantity('1536Mi')", 'Y'},
      {"quantity('80G') == quantity('80Gi')", 'N'},
      {"quantity('1Gi').isGreaterThan(quantity('1G'))", 'Y'},
      {"quantity('1').isLessThan(quantity('1001m'))", 'Y'},
      {"quantity('2').compareTo(quantity('2000m')) == 0", 'Y'},
      {"quantity('1').compareTo(quantity('2')) == -1", 'Y'},
      {"quantity('1').add(quantity('500m')) == quantity('1.5')", 'Y'},
      {"quantity('1').add(2) == quantity('3')", 'Y'},
      {"quantity('1').sub(quantity('2')).sign() == -1", 'Y'},
      {"quantity('5').sub(2) == quantity('3')", 'Y'},
      {"quantity('0').sign() == 0", 'Y'},
      {"quantity('1k').asInteger() == 1000", 'Y'},
      {"quantity('1.5').asInteger() == 1", 'E'},
      {"quantity('1.5').isInteger()", 'N'},
      {"quantity('2e3').isInteger()", 'Y'},
      {"quantity('1.5').asApproximateFloat() == 1.5", 'Y'},
      {"isQuantity('1.5Gi')", 'Y'},
      {"isQuantity('12Qi')", 'N'},
      {"isQuantity('')", 'N'},
      {"isQuantity('1e')", 'N'},
      {"isQuantity('-.5')", 'Y'},
      {"isQuantity('1E')", 'Y'},
      {"quantity('12Qi') == quantity('1')", 'E'},
      {"quantity('1E') == quantity('1E')", 'U'},
      {"quantity('1u') == quantity('1u')", 'U'},
      {"quantity('9P').add(quantity('9P')) == quantity('1')", 'U'},
      {"quantity('1').add(9223372036854775807) == quantity('1')", 'U'},
      {"quantity('1') < quantity('2')", 'C'},
      {"quantity('1') + quantity('2') == quantity('3')", 'C'},
      {"quantity('1').add('1') == quantity('2')", 'C'},
      {"quantity('1').compareTo(1) == 0", 'C'},
      {"quantity(1) == quantity('1')", 'C'},
      {"quantity('1') == 1", 'E'},
      {"quantity('1') != 1", 'E'},
      {"!(quantity('1') == 1)", 'E'},
      {"quantity('1').major() == 1", 'C'},
      {"1.isInteger()", 'C'},
  };
  CHECK(cs, g0);
}

Test(cel, semver_library)
{
  static const case_t cs[] = {
      {"semver('1.2.3').major() == 1", 'Y'},
      {"semver('1.2.3').minor() == 2", 'Y'},
      {"semver('1.2.3').patch() == 3", 'Y'},
      {"semver('1.2.3').isLessThan(semver('1.10.0'))", 'Y'},
      {"semver('2.0.0').isGreaterThan(semver('1.99.99'))", 'Y'},
      {"semver('1.0.0-alpha').isLessThan(semver('1.0.0'))", 'Y'},
      {"semver('1.0.0-alpha.1').compareTo(semver('1.0.0-alpha.beta')) == -1", 'Y'},
      {"semver('1.0.0-beta.2').compareTo(semver('1.0.0-beta.11')) < 0", 'Y'},
      {"semver('1.0.0-alpha').compareTo(semver('1.0.0-alpha.1')) < 0", 'Y'},
      {"semver('1.0.0-rc.1').compareTo(semver('1.0.0-beta.11')) > 0", 'Y'},
      {"semver('1.0.0+build.5') == semver('1.0.0')", 'Y'},
      {"semver('1.0.0') == semver('1.0.1')", 'N'},
      {"isSemver('1.2.3-rc.1+b')", 'Y'},
      {"isSemver('1.2')", 'N'},
      {"isSemver('01.2.3')", 'N'},
      {"isSemver('1.2.3-01')", 'N'},
      {"isSemver('1.2.3-')", 'N'},
      {"isSemver('v1.2.3')", 'N'},
      {"isSemver('v1.2', true)", 'Y'},
      {"semver('v1.2', true) == semver('1.2.0')", 'Y'},
      {"semver('1', true).patch() == 0", 'Y'},
      {"semver('1.2') == semver('1.2.0')", 'E'},
      {"semver(1) == semver('1.0.0')", 'C'},
      {"semver('1.0.0').compareTo(quantity('1')) == 0", 'E'},
      {"semver('1.0.0') < semver('2.0.0')", 'C'},
      {"device.attributes['gpu.nvidia.com'].driverVersion.isGreaterThan(semver('550.0.0'))", 'Y'},
      {"device.attributes['gpu.nvidia.com'].cudaComputeCapability.major() >= 8", 'Y'},
      {"device.attributes['gpu.nvidia.com'].driverVersion == semver('550.54.15')", 'Y'},
      {"device.attributes['gpu.nvidia.com'].driverVersion == '550.54.15'", 'E'},
      {"device.attributes['gpu.nvidia.com'].driverVersion != '550.54.15'", 'E'},
      {"'550.54.15' in [device.attributes['gpu.nvidia.com'].driverVersion]", 'E'},
  };
  CHECK(cs, g0);
}

Test(cel, macros_bind_and_optionals)
{
  static const case_t cs[] = {
      {"[1, 2, 3].all(x, x > 0)", 'Y'},
      {"[1, 2, 3].exists(x, x == 2)", 'Y'},
      {"[1, 2, 3].exists(x, x == 5)", 'N'},
      {"[1, 2, 3].exists_one(x, x > 1)", 'N'},
      {"[1, 2, 3].exists_one(x, x > 2)", 'Y'},
      {"[1, 2, 3].map(x, x * 2) == [2, 4, 6]", 'Y'},
      {"[1, 2, 3].map(x, x > 1, x * 10) == [20, 30]", 'Y'},
      {"[1, 2, 3].filter(x, x % 2 == 1) == [1, 3]", 'Y'},
      {"[].all(x, false)", 'Y'},
      {"[].exists(x, true)", 'N'},
      {"[0, 1].all(x, 1 / x > 0)", 'E'},
      {"[0, 1].exists(x, 1 / x > 0)", 'Y'},
      {"[1, 0].all(x, 1 / x < 0)", 'N'},
      {"[0, 1].all(x, 1 / x < 0)", 'N'},
      {"[0, 1].exists_one(x, 1 / x > 0)", 'E'},
      {"[1].all(x, x)", 'E'},
      {"[1, 2].all(x, [3, 4].all(y, x < y))", 'Y'},
      {"[1].all(device, device == 1)", 'Y'},
      {"[[1], [2]].map(x, x + [0]) == [[1, 0], [2, 0]]", 'Y'},
      {"1.all(x, true)", 'C'},
      {"device.attributes['gpu.nvidia.com'].exists(k, k == 'type')", 'Y'},
      {"device.attributes['gpu.nvidia.com'].filter(k, k.startsWith('cuda')).size() == 2", 'Y'},
      {"device.capacity['gpu.nvidia.com'].all(k, k == 'memory')", 'Y'},
      {"device.attributes.exists(d, d == 'x')", 'U'},
      {"[1].all(1, true)", 'C'},
      {"[1].all(x)", 'C'},
      {"cel.bind(a, device.attributes['gpu.nvidia.com'], a.type == 'gpu' && a.index == 0)", 'Y'},
      {"cel.bind(x, 1 / 0, true)", 'Y'},
      {"cel.bind(x, 1 / 0, x == 0)", 'E'},
      {"cel.bind(x, 2, cel.bind(y, x * 3, y == 6))", 'Y'},
      {"cel.bind(x, 1, x == 1) && x == 1", 'C'},
      {"cel.bind(1, 2, true)", 'C'},
      {"cel.nope(1)", 'C'},
      {"cel == 1", 'C'},
      {"device.attributes['gpu.nvidia.com'].?type.orValue('none') == 'gpu'", 'Y'},
      {"device.attributes['gpu.nvidia.com'].?nope.orValue('none') == 'none'", 'Y'},
      {"device.attributes['gpu.nvidia.com'].?nope.hasValue()", 'N'},
      {"device.attributes['gpu.nvidia.com'].?type.hasValue()", 'Y'},
      {"device.attributes['gpu.nvidia.com'][?'type'].value() == 'gpu'", 'Y'},
      {"device.attributes['x.com'].?y.?z.orValue(1) == 1", 'Y'},
      {"optional.none().value() == 1", 'E'},
      {"optional.of(1).value() == 1", 'Y'},
      {"optional.none().orValue(2) == 2", 'Y'},
      {"optional.of(1) == optional.of(1)", 'Y'},
      {"optional.of(1) == 1", 'N'},
      {"optional.of(1) + 1 == 2", 'E'},
      {"[1, 2][?5].orValue(0) == 0", 'Y'},
      {"[1, 2][?1].orValue(0) == 2", 'Y'},
      {"(1).hasValue()", 'C'},
      {"device.attributes['gpu.nvidia.com'].?type.size() == 3", 'E'},
      {"optional.of()", 'C'},
      {"[1, 2, 3][1] == 2", 'Y'},
      {"[1][5] == 1", 'E'},
      {"[1][-1] == 1", 'E'},
      {"[1]['a'] == 1", 'E'},
      {"[1, 2, 3][1u] == 2", 'Y'},
      {"'abc'[0] == 'a'", 'E'},
  };
  CHECK(cs, g0);
}

Test(cel, does_not_compile)
{
  static const case_t cs[] = {
      {"", 'C'},
      {"1 +", 'C'},
      {"foo(1)", 'C'},
      {"device.attributes['x'].y.z(", 'C'},
      {"{'a': 1}", 'C'},
      {"1 ? 2", 'C'},
      {"if", 'C'},
      {"x", 'C'},
      {"[1, 2].sort()", 'C'},
      {"device.driver.trim()", 'C'},
      {"size()", 'C'},
      {"'a'.startsWith()", 'C'},
      {"quantity('1', 2)", 'C'},
      {"lowerAscii('A')", 'C'},
      {"a.b.c", 'C'},
      {"1 2", 'C'},
      {"device.", 'C'},
      {"[1, 2", 'C'},
      {"(1", 'C'},
      {"1 # 2", 'C'},
      {".device", 'C'},
      {"0x", 'C'},
      {"device.attributes['x'].in", 'C'},
      {"1 = 1", 'C'},
      {"1 & 1", 'C'},
  };
  CHECK(cs, g0);
  const sf_cel_prog_t *p = sf_cel_compile(cache, "device.driver ==\n  foo('x')");
  cr_assert_str_eq(sf_cel_prog_error(p), "2:3: unsupported function 'foo'");
  char why[128];
  cr_assert_eq(sf_cel_eval(p, idx, g0, why, sizeof why), SF_MATCH_UNKNOWN);
  cr_assert_str_eq(why, "2:3: unsupported function 'foo'");
}

Test(cel, limits)
{
  char why[256];
  /* Deep nesting does not compile; a long || chain is balanced and does. */
  char *deep = cel_repeat("", "(", 300, "true");
  cr_expect_eq(outcome(deep, g0, why, sizeof why), 'C');
  free(deep);
  char *nots = cel_repeat("", "!", 300, "true");
  cr_expect_eq(outcome(nots, g0, why, sizeof why), 'C');
  cr_expect_str_eq(why, "1:201: expression nested too deeply");
  free(nots);
  nots = cel_repeat("", "-", 10000, "1 == 1");
  cr_expect_eq(outcome(nots, g0, why, sizeof why), 'C');
  free(nots);
  char *ors = cel_repeat("false", " || false", 1000, " || true");
  cr_expect_eq(outcome(ors, g0, why, sizeof why), 'Y', "%s", why);
  free(ors);
  char *sels = cel_repeat("device", ".x", 300, " == 1");
  cr_expect_eq(outcome(sels, g0, why, sizeof why), 'C');
  free(sels);
  char *longtext = cel_repeat("'", "a", 11000, "' == ''");
  cr_expect_eq(outcome(longtext, g0, why, sizeof why), 'C');
  free(longtext);
  /*
   * A hundred-element list walked three deep: 1e6 iterations, over DRA's cost
   * limit, where cel-go stops with a runtime error: no match.
   */
  char *cube = cel_repeat("cel.bind(l, [0", ", 0", 99, "], l.all(x, l.all(y, l.all(z, true))))");
  cr_expect_eq(outcome(cube, g0, why, sizeof why), 'E');
  cr_expect(strstr(why, "cost limit") != NULL, "%s", why);
  free(cube);
  char *wide = cel_repeat("cel.bind(l, [0", ", 0", 99,
                          "], l.map(x, [x, x, x, x, x, x]).size() == 100)");
  cr_expect_eq(outcome(wide, g0, why, sizeof why), 'U');
  cr_expect(strstr(why, "arena") != NULL, "%s", why);
  free(wide);
  char *big = cel_repeat("cel.bind(s, '", "a", 1000, "', s + s + s + s + s + s + s + s + s == '')");
  cr_expect_eq(outcome(big, g0, why, sizeof why), 'U');
  free(big);
  char *closing = cel_repeat("true", ")", 40, "");
  char *vars = cel_repeat("", "cel.bind(v, 1, ", 40, closing);
  cr_expect_eq(outcome(vars, g0, why, sizeof why), 'C');
  cr_expect_str_eq(sf_cel_prog_error(sf_cel_compile(cache, vars)), "1:490: too many variables");
  free(vars);
  free(closing);
  closing = cel_repeat("v == 1", ")", 30, "");
  vars = cel_repeat("", "cel.bind(v, 1, ", 30, closing);
  cr_expect_eq(outcome(vars, g0, why, sizeof why), 'Y', "%s", why);
  free(vars);
  free(closing);
}

Test(cel, reasons_name_the_position)
{
  char why[256];
  const sf_cel_prog_t *p = sf_cel_compile(cache, "device.driver == 'gpu.nvidia.com' &&\n"
                                                 "  device.attributes['gpu.nvidia.com'].nope == 'x'");
  cr_assert_eq(sf_cel_eval(p, idx, g0, why, sizeof why), SF_MATCH_NO);
  cr_assert_str_eq(why, "2:38: no such key");
  p = sf_cel_compile(cache, "1 + 9223372036854775807 > 0");
  cr_assert_eq(sf_cel_eval(p, idx, g0, why, sizeof why), SF_MATCH_NO);
  cr_assert_str_eq(why, "1:3: integer overflow");
  p = sf_cel_compile(cache, "device.driver == 'gpu.nvidia.com'");
  cr_assert_eq(sf_cel_eval(p, idx, g0, why, sizeof why), SF_MATCH_YES);
  cr_assert_str_eq(why, "");
  cr_assert_eq(sf_cel_eval(p, idx, g0, NULL, 0), SF_MATCH_YES);
}

Test(cel, cache_and_selector)
{
  const char *t1 = "device.driver == 'gpu.nvidia.com'";
  char copy[64];
  strcpy(copy, t1);
  const sf_cel_prog_t *a = sf_cel_compile(cache, t1), *b = sf_cel_compile(cache, copy);
  const sf_cel_prog_t *c = sf_cel_compile(cache, "device.driver == 'gpu.example.com'");
  const sf_cel_prog_t *bad = sf_cel_compile(cache, "nope(");
  cr_assert_eq(a, b);
  cr_assert_neq(a, c);
  cr_assert_neq(sf_cel_prog_id(a), 0);
  cr_assert_neq(sf_cel_prog_id(a), sf_cel_prog_id(c));
  cr_assert_neq(sf_cel_prog_id(bad), sf_cel_prog_id(c));
  cr_assert_eq(sf_cel_compile(cache, "nope("), bad);
  cr_assert_str_eq(sf_cel_prog_text(a), t1);
  cr_assert_null(sf_cel_prog_error(a));
  cr_assert_not_null(sf_cel_prog_error(bad));
  sf_selector_t sel;
  sf_cel_selector(a, &sel);
  cr_assert_eq(sel.cache_key, sf_cel_prog_id(a));
  cr_assert_eq(sel.fn(sel.ctx, idx, g0), SF_MATCH_YES);
  cr_assert_eq(sel.fn(sel.ctx, idx, ex[0]), SF_MATCH_NO);
  sf_cel_selector(bad, &sel);
  cr_assert_eq(sel.fn(sel.ctx, idx, g0), SF_MATCH_UNKNOWN);
  sf_cel_cache_destroy(NULL);
}

/* ---- the fixtures' selectors ---- */

typedef struct {
  const char *src; /* the fixture it comes from */
  const char *expr;
} fixture_t;

static const fixture_t fx[] = {
    /* 0 */
    {"nvidia-dra-driver-gpu/deployments__helm__dra-driver-nvidia-gpu__templates__deviceclass-gpu.yaml",
     "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"},
    /* 1 */
    {"nvidia-dra-driver-gpu/deployments__helm__dra-driver-nvidia-gpu__templates__deviceclass-mig.yaml",
     "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'"},
    /* 2 */
    {"nvidia-dra-driver-gpu/deployments__helm__dra-driver-nvidia-gpu__templates__deviceclass-vfio-gpu.yaml",
     "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'vfio'"},
    /* 3 */
    {"nvidia-dra-driver-gpu/deployments__helm__dra-driver-nvidia-gpu__templates__deviceclass-compute-domain-daemon.yaml",
     "device.driver == 'compute-domain.nvidia.com' && device.attributes['compute-domain.nvidia.com'].type == 'daemon'"},
    /* 4 */
    {"nvidia-dra-driver-gpu/deployments__helm__dra-driver-nvidia-gpu__templates__deviceclass-compute-domain-default-channel.yaml",
     "device.driver == 'compute-domain.nvidia.com' && device.attributes['compute-domain.nvidia.com'].type == 'channel' && device.attributes['compute-domain.nvidia.com'].id == 0"},
    /* 5 */
    {"nvidia-dra-driver-gpu/demo__specs__extended-resources__mig-1g-12gb.yaml",
     "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig' && device.attributes['gpu.nvidia.com'].profile == '1g.12gb'"},
    /* 6 */
    {"nvidia-dra-driver-gpu/demo__specs__quickstart__v1__gpu-test4.yaml",
     "device.attributes['gpu.nvidia.com'].profile == '1g.5gb'"},
    /* 7 */
    {"nvidia-dra-driver-gpu/demo__specs__quickstart__v1__gpu-test6.yaml",
     "device.attributes['gpu.nvidia.com'].productName.lowerAscii().matches('^.*a100.*$')\n"
     "&&\n"
     "(device.attributes['gpu.nvidia.com'].index == 0 ||\n"
     "device.attributes['gpu.nvidia.com'].index == 2 ||\n"
     "device.attributes['gpu.nvidia.com'].index == 4 ||\n"
     "device.attributes['gpu.nvidia.com'].index == 6)\n"},
    /* 8 */
    {"dra-example-driver/cel-selector__cel-selector.yaml",
     "device.attributes['gpu.example.com'].model == 'LATEST-GPU-MODEL'"},
    /* 9 */
    {"dra-example-driver/cel-selector__cel-selector.yaml",
     "device.capacity['gpu.example.com'].memory.compareTo(quantity('4Gi')) >= 0"},
    /* 10 */
    {"dra-example-driver/deployments__helm__dra-example-driver__templates__deviceclass.yaml",
     "device.driver == '{{ include \"dra-example-driver.driverName\" . }}'"},
    /* 11 */
    {"k8s-website/examples.dra.driver-install.deviceclass.yaml",
     "device.driver == 'gpu.example.com'"},
    /* 12 */
    {"k8s-website/examples.dra.driver-install.example.resourceclaim.yaml",
     "device.capacity['gpu.example.com'].memory.compareTo(quantity('10Gi')) >= 0"},
    /* 13 */
    {"k8s-website/install-use-dra.kubectl-get-resourceclaim-output.yaml",
     "device.capacity['gpu.example.com'].memory.compareTo(quantity('10Gi'))"},
    /* 14 */
    {"k8s-website/examples.dra.resourceclaimtemplate.yaml",
     "device.attributes[\"driver.example.com\"].type == \"gpu\" &&\n"
     "device.capacity[\"driver.example.com\"].memory == quantity(\"64Gi\")"},
};

static void fixture_expect(int k, sf_dev_id dev, char want)
{
  char why[256];
  char got = outcome(fx[k].expr, dev, why, sizeof why);
  cr_expect_eq(got, want, "fixture %d (%s) on %s: want %c got %c (%s)", k, fx[k].src,
               sf_index_dev_name(idx, dev), want, got, why);
}

Test(cel, fixture_selectors_compile)
{
  for (size_t k = 0; k < sizeof fx / sizeof fx[0]; k++) {
    const sf_cel_prog_t *p = sf_cel_compile(cache, fx[k].expr);
    /* 13 is kubectl's output of a selector DRA would refuse: an int, not a bool. */
    if (k == 13)
      cr_expect_str_eq(sf_cel_prog_error(p), "1:1: must evaluate to bool or the unknown type");
    else
      cr_expect_null(sf_cel_prog_error(p), "%s: %s", fx[k].src, sf_cel_prog_error(p));
  }
}

Test(cel, nvidia_device_classes)
{
  /* gpu.nvidia.com: the GPUs only. */
  fixture_expect(0, g0, 'Y');
  fixture_expect(0, g1, 'Y');
  fixture_expect(0, h2, 'Y');
  fixture_expect(0, mig, 'N');
  fixture_expect(0, chan, 'N');
  fixture_expect(0, ex[0], 'N');
  fixture_expect(1, mig, 'Y');
  fixture_expect(1, g0, 'N');
  fixture_expect(2, g0, 'N');
  fixture_expect(3, daemon_dev, 'Y');
  fixture_expect(3, chan, 'N');
  fixture_expect(3, g0, 'N');
  fixture_expect(4, chan, 'Y');
  fixture_expect(4, daemon_dev, 'N');
  fixture_expect(5, mig, 'N');
  fixture_expect(5, g0, 'N');
  /* gpu-test4: a GPU has no profile attribute, a CEL error, so no match. */
  fixture_expect(6, mig, 'Y');
  fixture_expect(6, g0, 'E');
  /* gpu-test6: A100s of even index; the MIG has no index (errors in every ||), the H100 is not an A100. */
  fixture_expect(7, g0, 'Y');
  fixture_expect(7, g1, 'N');
  fixture_expect(7, h2, 'N');
  fixture_expect(7, mig, 'E');
}

Test(cel, example_driver_and_website_selectors)
{
  for (int i = 0; i < 8; i++) {
    fixture_expect(8, ex[i], 'Y');
    fixture_expect(9, ex[i], 'Y');
    fixture_expect(11, ex[i], 'Y');
    fixture_expect(12, ex[i], 'Y');
  }
  fixture_expect(8, g0, 'E');
  fixture_expect(9, g0, 'E');
  fixture_expect(10, ex[0], 'N');
  fixture_expect(11, g0, 'N');
  /* kubectl output quoting a selector without ">= 0": an int, not a bool. */
  fixture_expect(13, ex[0], 'C');
  cr_expect(sf_cel_prog_invalid(sf_cel_compile(cache, fx[13].expr)));
  fixture_expect(14, web, 'Y');
  fixture_expect(14, ex[0], 'E');
  static const case_t cs[] = {
      {"device.attributes['gpu.example.com'].index in [0, 2, 4, 6]", 'N'},
      {"device.attributes['gpu.example.com'].driverVersion.isLessThan(semver('1.1.0'))", 'Y'},
      {"device.attributes['gpu.example.com'].uuid.startsWith('gpu-93d3')", 'Y'},
  };
  CHECK(cs, ex[1]);
}

/* Through the packer: the CEL selector filters nodes, and UNKNOWN keeps a node as UNSURE. */
static void filter(const char *const *exprs, size_t nexpr, sf_fit_t want_nv, sf_fit_t want_ex,
                   sf_fit_t want_web)
{
  sf_selector_t sels[4];
  for (size_t i = 0; i < nexpr; i++)
    sf_cel_selector(sf_cel_compile(cache, exprs[i]), &sels[i]);
  sf_request_t req = {.name = "gpu", .selectors = sels, .nselectors = nexpr, .count = 1};
  sf_claim_t claim = {.name = "default/claim", .reqs = &req, .nreqs = 1};
  sf_demand_t dem = {.claims = &claim, .nclaims = 1};
  sf_node_id nodes[3] = {sf_index_node_find(idx, "nv-node"),
                         sf_index_node_find(idx, "dra-example-driver-cluster-worker"),
                         sf_index_node_find(idx, "web-node")};
  sf_verdict_t out[3];
  sf_policy_t pol;
  sf_policy_init(&pol);
  sf_packer_t *pk = sf_packer_create();
  cr_assert_eq(sf_packer_evaluate(pk, idx, &pol, &dem, nodes, 3, 0, out), 0);
  cr_expect_eq(out[0].fit, want_nv, "%s: nv-node %d (%s)", exprs[0], out[0].fit, out[0].reason);
  cr_expect_eq(out[1].fit, want_ex, "%s: example node %d (%s)", exprs[0], out[1].fit, out[1].reason);
  cr_expect_eq(out[2].fit, want_web, "%s: web node %d (%s)", exprs[0], out[2].fit, out[2].reason);
  sf_packer_destroy(pk);
  sf_policy_dispose(&pol);
}

Test(cel, selectors_filter_nodes_through_the_packer)
{
  const char *gpu[] = {fx[0].expr};
  filter(gpu, 1, SF_FIT_YES, SF_FIT_NO, SF_FIT_NO);
  const char *example[] = {fx[8].expr, fx[9].expr};
  filter(example, 2, SF_FIT_NO, SF_FIT_YES, SF_FIT_NO);
  const char *unsure[] = {"device.attributes['gpu.nvidia.com'].productName.matches('\\\\bA100')"};
  filter(unsure, 1, SF_FIT_UNSURE, SF_FIT_NO, SF_FIT_NO);
  const char *uncompiled[] =
      {fx[0].expr,
       "device.attributes['gpu.nvidia.com'].?productName.optMap(n, n.size()).orValue(0) > 0"};
  filter(uncompiled, 2, SF_FIT_UNSURE, SF_FIT_NO, SF_FIT_NO);
  /* The format library was once unsupported too: the product name is no DNS label. */
  const char *label[] =
      {fx[0].expr,
       "format.dns1123Label().validate(device.attributes['gpu.nvidia.com'].productName).hasValue()"};
  filter(label, 2, SF_FIT_YES, SF_FIT_NO, SF_FIT_NO);
  /* isURL() was once unsupported too. */
  const char *urls[] = {fx[0].expr, "!isURL(device.attributes['gpu.nvidia.com'].productName)"};
  filter(urls, 2, SF_FIT_YES, SF_FIT_NO, SF_FIT_NO);
  /* split() was once unsupported: now the node is judged, not passed unsure. */
  const char *split[] = {fx[0].expr,
                         "device.attributes['gpu.nvidia.com'].uuid.split('-').size() > 1"};
  filter(split, 2, SF_FIT_YES, SF_FIT_NO, SF_FIT_NO);
}

/* ---- the cache stays bounded ---- */

Test(cel, released_programs_are_bounded_and_least_recently_used_go_first)
{
  sf_cel_cache_t *c = sf_cel_cache_create();
  char text[96];
  /* 20,000 distinct tenant selectors, each used once and given back. */
  for (int i = 0; i < 20000; i++) {
    snprintf(text, sizeof text, "device.attributes['gpu.nvidia.com'].index == %d", i);
    const sf_cel_prog_t *p = sf_cel_acquire(c, text);
    cr_assert_null(sf_cel_prog_error(p), "%s", sf_cel_prog_error(p));
    sf_cel_release(c, p);
  }
  cr_assert_eq(sf_cel_cache_size(c), 1024, "only max_idle kept: %zu", sf_cel_cache_size(c));
  /* A held program is never freed, and ids are never reused. */
  const sf_cel_prog_t *held = sf_cel_acquire(c, "device.driver == 'held'");
  uint64_t id = sf_cel_prog_id(held);
  sf_cel_cache_set_max_idle(c, 0);
  cr_assert_eq(sf_cel_cache_size(c), 1, "only the held program stays");
  cr_assert_str_eq(sf_cel_prog_text(held), "device.driver == 'held'");
  sf_cel_release(c, held);
  cr_assert_eq(sf_cel_cache_size(c), 0);
  const sf_cel_prog_t *again = sf_cel_acquire(c, "device.driver == 'held'");
  cr_assert_gt(sf_cel_prog_id(again), id, "a new id after it was freed");
  /* Pinned programs (sf_cel_compile) stay whatever the bound. */
  const sf_cel_prog_t *pinned = sf_cel_compile(c, "device.driver == 'pinned'");
  sf_cel_release(c, again);
  cr_assert_eq(sf_cel_cache_size(c), 1);
  cr_assert_eq(sf_cel_compile(c, "device.driver == 'pinned'"), pinned);
  sf_cel_cache_destroy(c);
}

/* An attribute with no value slicefit can read (SF_ATTR_UNKNOWN): reading it is unsure, and
 * what does not read it still evaluates. */
Test(cel, unreadable_attribute_is_unknown)
{
  static const sf_attr_t a[] = {{"odd.example.com/x", SF_ATTR_UNKNOWN, 0, NULL},
                                {"odd.example.com/y", SF_ATTR_INT, 0, NULL}};
  sf_device_spec_t d = {"dev-0", a, 2, NULL, 0, NULL, 0, NULL, 0, false};
  sf_node_id n = node("odd-node");
  cr_assert_eq(sf_index_pool_set(idx, n, "odd.example.com", "odd-node", &d, 1, NULL, 0), 0);
  sf_dev_id dev = sf_index_dev_find(idx, "odd.example.com", "odd-node", "dev-0");
  static const case_t cs[] = {
      {"device.attributes['odd.example.com'].x == 'a'", 'U'},
      {"device.attributes['odd.example.com'].x == 1", 'U'},
      {"device.attributes['odd.example.com'].y == 0", 'Y'},
      {"has(device.attributes['odd.example.com'].x)", 'Y'},
  };
  CHECK(cs, dev);
}
