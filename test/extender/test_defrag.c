/*
 * GET /debug/defrag on the debug listener: the plan for one claim from the
 * daemon's own records, as bin/slicefit-defrag prints it; a malformed query
 * is a 400, every well-formed claim a 200 that says why.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"

TestSuite(defrag, .timeout = 60);

static void start_fragmented(sfx_t *s)
{
  char snap[1024];
  snprintf(snap, sizeof snap, "%s", sfx_path("test/fixtures/defrag/fragmented.json"));
  const char *args[] = {"--snapshot", snap, NULL};
  sfx_start(s, args);
}

/* GET path; the reply's JSON (new), with the status asserted. */
static json_t *get_json(sfx_t *s, const char *path, long status)
{
  sfx_reply_t r;
  sfx_request(s, "GET", path, NULL, 0, &r);
  cr_assert_eq(r.status, status, "GET %s: %ld %s", path, r.status, r.body);
  json_t *j = json_loads(r.body, 0, NULL);
  cr_assert(json_is_object(j), "GET %s: %s", path, r.body);
  sfx_reply_free(&r);
  return j;
}

static const char *str(const json_t *o, const char *k)
{
  const json_t *v = json_object_get(o, k);
  return json_is_string(v) ? json_string_value(v) : "(null)";
}

Test(defrag, the_plan_for_a_waiting_claim)
{
  sfx_t s;
  start_fragmented(&s);
  json_t *a = get_json(&s, "/debug/defrag?claim=team/big", 200);
  cr_assert_str_eq(str(a, "claim"), "team/big");
  cr_assert_str_eq(str(a, "node"), "node-b", "%s", str(a, "why"));
  cr_assert(json_is_true(json_object_get(a, "fits_after")));
  json_t *e = json_array_get(json_object_get(a, "evictions"), 0);
  cr_assert_eq(json_array_size(json_object_get(a, "evictions")), 1);
  cr_assert_str_eq(str(e, "namespace"), "team");
  cr_assert_str_eq(str(e, "name"), "infer-b");
  cr_assert_str_eq(json_string_value(json_array_get(json_object_get(e, "claims"), 0)), "small-b");
  cr_assert_eq(json_integer_value(json_object_get(e, "gpu_milli")), 125);
  cr_assert_str_neq(str(e, "to_node"), "node-b");
  cr_assert(strstr(str(e, "sentence"), "Evict team/infer-b") != NULL, "%s", str(e, "sentence"));
  json_decref(a);
  /* The same as text: the why, then one sentence per eviction. */
  sfx_reply_t r;
  sfx_request(&s, "GET", "/debug/defrag?claim=team%2Fbig&format=text", NULL, 0, &r);
  cr_assert_eq(r.status, 200);
  cr_assert_str_eq(r.ctype, "text/plain; charset=utf-8");
  cr_assert(strncmp(r.body, "team/big: ", 10) == 0, "%s", r.body);
  cr_assert(strstr(r.body, "\n  Evict team/infer-b") != NULL, "%s", r.body);
  sfx_reply_free(&r);
  cr_assert_eq(sfx_stop(&s), 0);
}

Test(defrag, every_claim_gets_a_clear_answer)
{
  static const struct {
    const char *query, *why;
    long status;
  } cases[] = {
      {"claim=team/nope", "no ResourceClaim team/nope", 200},
      {"claim=team/small-a", "already allocated on node-a", 200},
      {"claim=team/tiny", "fits on", 200},
      {"claim=team/two", "fits on no node", 200},
      {"", "expected ?claim=NAMESPACE/NAME", 400},
      {"claim=", "expected ?claim=NAMESPACE/NAME", 400},
      {"claim=big", "expected ?claim=NAMESPACE/NAME", 400},
      {"claim=team/", "expected ?claim=NAMESPACE/NAME", 400},
      {"claim=/big", "expected ?claim=NAMESPACE/NAME", 400},
      {"claim=a/b/c", "expected ?claim=NAMESPACE/NAME", 400},
      {"claim=Team/big", "expected ?claim=NAMESPACE/NAME", 400},
      {"claim=team/big%20x", "expected ?claim=NAMESPACE/NAME", 400},
      {"claim=team/big%00x", "encoded NUL", 400},
      {"claim=team/big&format=yaml", "expected format=json or format=text", 400},
  };
  sfx_t s;
  start_fragmented(&s);
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char path[256];
    snprintf(path, sizeof path, "/debug/defrag?%s", cases[i].query);
    json_t *a = get_json(&s, path, cases[i].status);
    const char *why = cases[i].status == 200 ? str(a, "why") : str(a, "Error");
    cr_assert(strstr(why, cases[i].why) != NULL, "%s: %s", path, why);
    if (cases[i].status == 200)
      cr_assert_eq(json_array_size(json_object_get(a, "evictions")), 0, "%s", path);
    json_decref(a);
  }
  /* The serving port does not serve it: it names pods and claims of every namespace. */
  sfx_reply_t r;
  s.debug_port = 0;
  sfx_request(&s, "GET", "/debug/defrag?claim=team/big", NULL, 0, &r);
  cr_assert_eq(r.status, 404);
  sfx_reply_free(&r);
  cr_assert_eq(sfx_stop(&s), 0);
}
