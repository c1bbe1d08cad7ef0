/*
 * libFuzzer target for extender/codec.c: ExtenderArgs from untrusted bytes.
 * Beyond "no crash" it checks:
 *   - the result is 0, SF_EINVAL or SF_E2BIG, with a message on error and
 *     nothing kept;
 *   - on success the Pod is an object, at most max_nodes names, each a
 *     string, and in NodeList mode every item has that metadata.name;
 *   - the hand scanner agrees with the general (jansson) path: same
 *     outcome, same names in the same order, an equal Pod;
 *   - the filter and prioritize replies, for verdicts drawn from the input,
 *     are valid JSON with one entry per node in the right place.
 */
#include <assert.h>
#include <stdint.h>
#include <string.h>
#include "../extender/ext_int.h"

static const sf__limits_t lim = {.max_nodes = 64, .max_depth = 16};

static void check_replies(const sf__args_t *a, const uint8_t *data, size_t size)
{
  sf_verdict_t v[64];
  size_t nyes = 0, nno = 0;
  for (size_t i = 0; i < a->n; i++) {
    memset(&v[i], 0, sizeof v[i]);
    v[i].fit = (sf_fit_t)(size ? data[i % size] % 3 : 1);
    v[i].score = size ? data[(i * 7) % size] % 12 : 5;
    /* few distinct sentences, so the reply writer reuses escaped ones */
    snprintf(v[i].reason, sizeof v[i].reason, "reason \"%u\"\n", size ? data[i % size] % 5u : 0u);
    nyes += v[i].fit != SF_FIT_NO;
    nno += v[i].fit == SF_FIT_NO;
  }
  sf__buf_t b = {0};
  sf__filter_reply(&b, a, v);
  json_t *r = json_loadb(b.p, b.len, 0, NULL);
  assert(r != NULL);
  const json_t *list = a->cache_mode ? json_object_get(r, "NodeNames")
                                     : json_object_get(json_object_get(r, "Nodes"), "items");
  assert(json_array_size(list) == nyes);
  const json_t *failed = json_object_get(r, "FailedNodes");
  assert(json_object_size(failed) <= nno);
  for (size_t i = 0; i < a->n; i++) { /* a duplicate name keeps its last entry's reason */
    const char *got = json_string_value(json_object_get(failed, a->names[i]));
    size_t last = i;
    for (size_t j = i + 1; j < a->n; j++)
      last = strcmp(a->names[j], a->names[i]) == 0 && v[j].fit == SF_FIT_NO ? j : last;
    assert(v[last].fit != SF_FIT_NO || (got && strcmp(got, v[last].reason) == 0));
  }
  json_decref(r);
  sf__buf_dispose(&b);
  sf__prioritize_reply(&b, a, v);
  r = json_loadb(b.p, b.len, 0, NULL);
  assert(json_array_size(r) == a->n);
  for (size_t i = 0; i < a->n; i++) {
    const json_t *hp = json_array_get(r, i);
    assert(strcmp(json_string_value(json_object_get(hp, "Host")), a->names[i]) == 0);
    json_int_t sc = json_integer_value(json_object_get(hp, "Score"));
    assert(sc >= 0 && sc <= 10);
  }
  json_decref(r);
  sf__buf_dispose(&b);
}

static void check_args(const sf__args_t *a)
{
  assert(json_is_object(a->pod));
  assert(a->n <= lim.max_nodes);
  for (size_t i = 0; i < a->n; i++) {
    assert(a->names[i] != NULL);
    if (!a->cache_mode) {
      const json_t *md = json_object_get(a->items[i], "metadata");
      assert(strcmp(json_string_value(json_object_get(md, "name")), a->names[i]) == 0);
    }
  }
}

/*
 * Detached arguments (as the thread pool leaves them for a large body) give
 * the same names, pod and filter reply, byte for byte, as the tree they came from.
 */
static void check_detached(const sf__args_t *a, sf__args_t *g, const uint8_t *data, size_t size)
{
  sf_verdict_t v[64];
  for (size_t i = 0; i < a->n; i++) {
    memset(&v[i], 0, sizeof v[i]);
    v[i].fit = (sf_fit_t)(size ? data[(i * 3) % size] % 3 : 1);
    snprintf(v[i].reason, sizeof v[i].reason, "r%u", size ? data[i % size] % 3u : 0u);
  }
  sf__buf_t before = {0}, after = {0};
  sf__filter_reply(&before, g, v);
  sf__args_detach(g);
  assert(g->items == NULL && g->n == a->n);
  for (size_t i = 0; i < a->n; i++)
    assert(strcmp(a->names[i], g->names[i]) == 0);
  assert(json_equal((json_t *)(uintptr_t)a->pod, (json_t *)(uintptr_t)g->pod));
  sf__filter_reply(&after, g, v);
  assert(before.len == after.len && memcmp(before.p, after.p, before.len) == 0);
  sf__buf_dispose(&before);
  sf__buf_dispose(&after);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  const char *body = (const char *)data;
  char err[SF_ERR_MAX] = "", gerr[SF_ERR_MAX] = "";
  sf__args_t a, g;
  int rc = sf__args_parse(&a, body, size, &lim, err, sizeof err);
  int grc = sf__args_parse_general(&g, body, size, &lim, gerr, sizeof gerr);
  assert(rc == 0 || rc == SF_EINVAL || rc == SF_E2BIG);
  assert(rc == grc);
  if (rc) {
    assert(err[0] != '\0' && a.root == NULL && a.names == NULL);
    return 0;
  }
  check_args(&a);
  assert(a.n == g.n && a.cache_mode == g.cache_mode);
  for (size_t i = 0; i < a.n; i++)
    assert(strcmp(a.names[i], g.names[i]) == 0);
  assert(json_equal((json_t *)(uintptr_t)a.pod, (json_t *)(uintptr_t)g.pod));
  check_replies(&a, data, size);
  check_detached(&a, &g, data, size);
  sf__args_dispose(&a);
  sf__args_dispose(&g);
  return 0;
}
