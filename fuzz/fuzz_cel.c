/*
 * libFuzzer target for the CEL compiler and evaluator (packer/cel/). The
 * input is an expression's text (up to its first NUL). Beyond "no crash, no
 * leak, no undefined behaviour" it checks:
 *   - compiling the same text twice gives the same program (the cache);
 *   - a fresh cache compiles it to the same outcome: the same error text,
 *     and the same answer and reason on every device (compilation is a pure
 *     function of the text);
 *   - evaluation is deterministic: twice on the same device, same answer
 *     and reason;
 *   - a program that does not compile answers UNKNOWN with its error as
 *     the reason; every answer is YES, NO or UNKNOWN, and NO for a CEL
 *     error or UNKNOWN always comes with a reason;
 *   - the version a program needs is the same from both caches and one the
 *     version table holds (at most 34); only a program with an error is
 *     invalid.
 * The devices: an NVIDIA A100 and a MIG device, a dra-example-driver GPU, a
 * device with no attributes, and one with edge values (INT64_MIN, an empty
 * string, non-ASCII text, capacities of SF_MILLI_MAX and 1.5 units).
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "slicefit/cel.h"

#define NDEV 5
#define NV "gpu.nvidia.com/"

static sf_index_t *idx;
static sf_dev_id devs[NDEV];

static void pool(const char *node, const char *driver, const sf_device_spec_t *d, size_t n, int first)
{
  sf_node_spec_t ns = {node, 0, 0};
  sf_node_id id;
  if (sf_index_node_upsert(idx, &ns, &id) != 0 ||
      sf_index_pool_set(idx, id, driver, node, d, n, NULL, 0) != 0)
    abort();
  for (size_t i = 0; i < n; i++)
    devs[first + (int)i] = sf_index_dev_find(idx, driver, node, d[i].name);
}

static void setup(void)
{
  static const sf_attr_t gpu[] = {{NV "type", SF_ATTR_STRING, 0, "gpu"},
                                  {NV "productName", SF_ATTR_STRING, 0, "NVIDIA A100-SXM4-40GB"},
                                  {NV "index", SF_ATTR_INT, 0, NULL},
                                  {NV "driverVersion", SF_ATTR_VERSION, 0, "550.54.15"},
                                  {NV "cudaComputeCapability", SF_ATTR_VERSION, 0, "8.0.0-rc.1+b"},
                                  {NV "mig", SF_ATTR_BOOL, 1, NULL},
                                  {"resource.kubernetes.io/pcieRoot", SF_ATTR_STRING, 0,
                                   "pci0000:00"}};
  static const sf_attr_t mig[] = {{NV "type", SF_ATTR_STRING, 0, "mig"},
                                  {NV "profile", SF_ATTR_STRING, 0, "1g.5gb"}};
  static const sf_attr_t ex[] = {{"gpu.example.com/model", SF_ATTR_STRING, 0, "LATEST-GPU-MODEL"},
                                 {"gpu.example.com/index", SF_ATTR_INT, 3, NULL},
                                 {"gpu.example.com/driverVersion", SF_ATTR_VERSION, 0, "1.0.0"}};
  static const sf_attr_t edge[] = {{"x.io/min", SF_ATTR_INT, INT64_MIN, NULL},
                                   {"x.io/empty", SF_ATTR_STRING, 0, ""},
                                   {"x.io/utf8", SF_ATTR_STRING, 0, "h\xc3\xa9llo \xe2\x82\xac"},
                                   {"x.io/max", SF_ATTR_INT, INT64_MAX, NULL}};
  static const sf_capacity_t mem40 = {NV "memory", 40LL << 40, false, {0}};
  static const sf_capacity_t mem80 = {"gpu.example.com/memory", 80LL << 40, false, {0}};
  static const sf_capacity_t huge[] = {{"x.io/huge", SF_MILLI_MAX, false, {0}},
                                       {"x.io/half", 1500, false, {0}}};
  sf_device_spec_t nv[] = {{"gpu-0", gpu, 7, &mem40, 1, NULL, 0, NULL, 0, false},
                           {"mig-0", mig, 2, &mem40, 1, NULL, 0, NULL, 0, true}};
  sf_device_spec_t e[] = {{"gpu-0", ex, 3, &mem80, 1, NULL, 0, NULL, 0, false}};
  sf_device_spec_t x[] = {{"bare", NULL, 0, NULL, 0, NULL, 0, NULL, 0, false},
                          {"edge", edge, 4, huge, 2, NULL, 0, NULL, 0, true}};
  idx = sf_index_create();
  pool("nv", "gpu.nvidia.com", nv, 2, 0);
  pool("ex", "gpu.example.com", e, 1, 2);
  pool("x", "x.io", x, 2, 3);
}

static void same_outcome(const sf_cel_prog_t *a, const sf_cel_prog_t *b)
{
  const char *ea = sf_cel_prog_error(a), *eb = sf_cel_prog_error(b);
  assert((ea == NULL) == (eb == NULL));
  assert(ea == NULL || strcmp(ea, eb) == 0);
  assert(sf_cel_prog_invalid(a) == sf_cel_prog_invalid(b));
  assert(!sf_cel_prog_invalid(a) || ea != NULL);
  assert(ea != NULL ||
         (sf_cel_prog_min_minor(a) == sf_cel_prog_min_minor(b) && sf_cel_prog_min_minor(a) <= 34));
  for (int d = 0; d < NDEV; d++) {
    char w1[256], w2[256], w3[256];
    sf_match_t m1 = sf_cel_eval(a, idx, devs[d], w1, sizeof w1);
    sf_match_t m2 = sf_cel_eval(a, idx, devs[d], w2, sizeof w2);
    sf_match_t m3 = sf_cel_eval(b, idx, devs[d], w3, sizeof w3);
    assert(m1 == SF_MATCH_YES || m1 == SF_MATCH_NO || m1 == SF_MATCH_UNKNOWN);
    assert(m1 == m2 && strcmp(w1, w2) == 0);
    assert(m1 == m3 && strcmp(w1, w3) == 0);
    assert(ea == NULL || (m1 == SF_MATCH_UNKNOWN && strcmp(w1, ea) == 0));
    assert(m1 != SF_MATCH_UNKNOWN || w1[0] != '\0');
    assert(m1 != SF_MATCH_YES || w1[0] == '\0');
    assert(sf_cel_match((void *)(uintptr_t)a, idx, devs[d]) == m1);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (idx == NULL)
    setup();
  char *text = malloc(size + 1);
  memcpy(text, data, size);
  text[size] = '\0';
  sf_cel_cache_t *c1 = sf_cel_cache_create(), *c2 = sf_cel_cache_create();
  const sf_cel_prog_t *a = sf_cel_compile(c1, text);
  assert(sf_cel_compile(c1, text) == a);
  assert(strcmp(sf_cel_prog_text(a), text) == 0);
  assert(sf_cel_prog_id(a) != 0);
  sf_selector_t sel;
  sf_cel_selector(a, &sel);
  assert(sel.cache_key == sf_cel_prog_id(a) && sel.ctx == (const void *)a);
  same_outcome(a, sf_cel_compile(c2, text));
  sf_cel_cache_destroy(c1);
  sf_cel_cache_destroy(c2);
  free(text);
  return 0;
}
