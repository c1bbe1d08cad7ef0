/*
 * The extender protocol codec and the pending-claims tracker, without a
 * server: ExtenderArgs decoding (case, modes, types, limits) and the exact
 * bytes of the replies.
 */
#include <criterion/criterion.h>
#include <string.h>
#include "../../extender/ext_int.h"

static const sf__limits_t lim = {.max_nodes = 4, .max_depth = 8};

static int parse(sf__args_t *a, const char *s, char *err)
{
  return sf__args_parse(a, s, strlen(s), &lim, err, SF_ERR_MAX);
}

Test(codec, depth_counts_only_structure)
{
  cr_assert(sf__json_depth_ok("[[[]]]", 6, 3));
  cr_assert_not(sf__json_depth_ok("[[[[]]]]", 8, 3));
  const char *s = "[\"[[[[\\\"[[[[\"]";
  cr_assert(sf__json_depth_ok(s, strlen(s), 1), "brackets in strings do not count");
  cr_assert(sf__json_depth_ok("]]]][", 5, 1), "stray closers never underflow");
}

Test(codec, keys_match_case_insensitively_exact_first)
{
  json_t *o = json_loads("{\"nodenames\":1,\"NodeNames\":2,\"POD\":3}", 0, NULL);
  cr_assert_eq(json_integer_value(sf__json_get_ci(o, "NodeNames")), 2);
  cr_assert_eq(json_integer_value(sf__json_get_ci(o, "Pod")), 3);
  cr_assert_null(sf__json_get_ci(o, "Nodes"));
  json_decref(o);
}

Test(codec, the_scanner_and_jansson_agree_on_duplicate_keys)
{
  /* The last exact key wins, else the first other casing. */
  sf__args_t a;
  char err[SF_ERR_MAX];
  cr_assert_eq(parse(&a, "{\"Pod\":{},\"nodenames\":[\"a\"],\"NODENAMES\":[\"b\"]}", err), 0);
  cr_assert_str_eq(a.names[0], "a");
  sf__args_dispose(&a);
  cr_assert_eq(parse(&a,
                     "{\"Pod\":{},\"NodeNames\":[\"a\"],\"nodenames\":[\"b\"],"
                     "\"NodeNames\":[\"c\\/d\"]}",
                     err),
               0);
  cr_assert_str_eq(a.names[0], "c/d");
  sf__args_dispose(&a);
  /* The same other spelling again: its last value, in its first place (found by the fuzzer). */
  const char *respelt = "{\"Pod\":{},\"nodenames\":[\"a\"],\"NODENAMES\":[\"b\"],"
                        "\"nodenames\":[\"c\",\"d\"]}";
  sf__args_t g;
  cr_assert_eq(parse(&a, respelt, err), 0);
  cr_assert_eq(sf__args_parse_general(&g, respelt, strlen(respelt), &lim, err, sizeof err), 0);
  cr_assert_eq(a.n, 2);
  cr_assert_eq(g.n, 2);
  cr_assert_str_eq(a.names[1], "d");
  cr_assert_str_eq(g.names[1], "d");
  sf__args_dispose(&a);
  sf__args_dispose(&g);
}

Test(codec, cache_mode)
{
  sf__args_t a;
  char err[SF_ERR_MAX];
  cr_assert_eq(parse(&a,
                     "{\"pod\":{\"metadata\":{}},\"nodes\":null,\"nodenames\":[\"a\",\"b\"]}"
                     " trailing bytes are ignored",
                     err),
               0, "%s", err);
  cr_assert(a.cache_mode);
  cr_assert_eq(a.n, 2);
  cr_assert_str_eq(a.names[1], "b");
  cr_assert_null(a.items);
  cr_assert(json_is_object(a.pod));
  sf__args_dispose(&a);
}

Test(codec, node_list_mode)
{
  sf__args_t a;
  char err[SF_ERR_MAX];
  cr_assert_eq(parse(&a,
                     "{\"Pod\":{},\"Nodes\":{\"metadata\":{},\"items\":[{\"metadata\":{\"name\":"
                     "\"n1\"},\"spec\":{}}]},\"NodeNames\":null}",
                     err),
               0, "%s", err);
  cr_assert_not(a.cache_mode);
  cr_assert_eq(a.n, 1);
  cr_assert_str_eq(a.names[0], "n1");
  cr_assert_not_null(json_object_get(a.items[0], "spec"));
  sf__args_dispose(&a);
}

Test(codec, errors_name_the_path)
{
  static const struct {
    const char *in;
    int rc;
    const char *want;
  } cases[] = {
      {"{\"Pod\":{},\"NodeNames\":[\"a\",1]}", SF_EINVAL, "NodeNames[1]: expected a string"},
      {"{\"Pod\":{},\"NodeNames\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}", SF_E2BIG,
       "NodeNames: 5 nodes is more than the limit of 4"},
      {"{\"Pod\":{},\"Nodes\":{\"items\":[{},{},{},{},{}]}}", SF_E2BIG, "Nodes.items: 5 nodes"},
      {"{\"Pod\":{},\"Nodes\":{\"items\":[{\"metadata\":{\"name\":3}}]}}", SF_EINVAL,
       "Nodes.items[0].metadata.name"},
      {"{\"Pod\":{},\"Nodes\":{\"items\":7}}", SF_EINVAL, "Nodes: expected a NodeList"},
      {"{\"Pod\":[]}", SF_EINVAL, "Pod: expected a Pod object"},
      {"7", SF_EINVAL, "(root)"},
      {"{\"Pod\":{\"a\":[[[[[[[[[]]]]]]]]]}}", SF_EINVAL, "nested deeper than 8"},
      {"{\"Pod\":{}", SF_EINVAL, "malformed JSON at line 1"},
      /* What the fuzzer found the hand scanner let through: */
      {"{\"Pod\":{},\"z\xc6z\":1,\"NodeNames\":[\"a\"]}", SF_EINVAL, "malformed JSON"},
      {"{\"Pod\":{},\"NodeNames\":[\"a\"b],\"NodeNames\":[\"x\"]}", SF_EINVAL, "malformed JSON"},
      {"{\"Pod\":{},\"NodeNames\":[],\"Nodes\":nullx}", SF_EINVAL, "malformed JSON"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    sf__args_t a;
    char err[SF_ERR_MAX] = "";
    cr_assert_eq(parse(&a, cases[i].in, err), cases[i].rc, "%s", cases[i].in);
    cr_assert(strstr(err, cases[i].want), "%s: \"%s\" should say \"%s\"", cases[i].in, err,
              cases[i].want);
    cr_assert_null(a.root, "nothing kept on error");
  }
}

static void verdicts(sf_verdict_t v[3])
{
  memset(v, 0, 3 * sizeof v[0]);
  v[0].fit = SF_FIT_YES;
  v[0].score = 7;
  v[1].fit = SF_FIT_NO;
  strcpy(v[1].reason, "needs \"6Gi\"\n");
  v[2].fit = SF_FIT_UNSURE;
}

Test(codec, filter_reply_bytes)
{
  sf__args_t a;
  char err[SF_ERR_MAX];
  sf_verdict_t v[3];
  verdicts(v);
  cr_assert_eq(parse(&a, "{\"Pod\":{},\"NodeNames\":[\"a\",\"b\",\"c\"]}", err), 0);
  sf__buf_t b = {0};
  sf__filter_reply(&b, &a, v);
  cr_assert_str_eq(b.p, "{\"Nodes\":null,\"NodeNames\":[\"a\",\"c\"],\"FailedNodes\":{\"b\":"
                        "\"needs \\\"6Gi\\\"\\u000a\"},\"FailedAndUnresolvableNodes\":{},"
                        "\"Error\":\"\"}");
  sf__buf_dispose(&b);
  sf__filter_reply(&b, &a, NULL);
  cr_assert_str_eq(b.p, "{\"Nodes\":null,\"NodeNames\":[\"a\",\"b\",\"c\"],\"FailedNodes\":{},"
                        "\"FailedAndUnresolvableNodes\":{},\"Error\":\"\"}");
  sf__buf_dispose(&b);
  sf__args_dispose(&a);
}

Test(codec, filter_reply_repeats_reasons_exactly)
{
  /* 40 failed nodes over 11 interleaved sentences: more than the writer remembers. */
  enum { N = 41 };
  static const sf__limits_t many = {.max_nodes = N, .max_depth = 8};
  sf__buf_t body = {0};
  sf__buf_puts(&body, "{\"Pod\":{},\"NodeNames\":[");
  for (int i = 0; i < N; i++)
    sf__buf_printf(&body, "%s\"n%d\"", i ? "," : "", i);
  sf__buf_puts(&body, "]}");
  sf__args_t a;
  char err[SF_ERR_MAX];
  cr_assert_eq(sf__args_parse(&a, body.p, body.len, &many, err, sizeof err), 0, "%s", err);
  sf_verdict_t v[N];
  memset(v, 0, sizeof v);
  v[0].fit = SF_FIT_YES;
  for (int i = 1; i < N; i++) {
    v[i].fit = SF_FIT_NO;
    snprintf(v[i].reason, sizeof v[i].reason, "needs \"%dGi\"\tof memory", (i * 7) % 11);
  }
  v[N - 1].reason[0] = '\0';
  sf__buf_t b = {0};
  sf__filter_reply(&b, &a, v);
  json_t *r = json_loads(b.p, 0, NULL);
  cr_assert_not_null(r, "%s", b.p);
  json_t *failed = json_object_get(r, "FailedNodes");
  cr_assert_eq(json_object_size(failed), N - 1);
  for (int i = 1; i < N; i++) {
    char name[16], want[64];
    snprintf(name, sizeof name, "n%d", i);
    snprintf(want, sizeof want, "needs \"%dGi\"\tof memory", (i * 7) % 11);
    cr_assert_str_eq(json_string_value(json_object_get(failed, name)),
                     i == N - 1 ? "does not fit the pod's device claims" : want);
  }
  json_decref(r);
  sf__buf_dispose(&b);
  sf__buf_dispose(&body);
  sf__args_dispose(&a);
}

Test(codec, json_strings_escape_every_byte_that_needs_it)
{
  char s[256];
  for (int i = 1; i < 128; i++)
    s[i - 1] = (char)i;
  strcpy(s + 127, "\xc3\xa9 end"); /* UTF-8 passes as it is */
  sf__buf_t b = {0};
  sf__buf_json_str(&b, s);
  json_t *back = json_loadb(b.p, b.len, JSON_DECODE_ANY, NULL);
  cr_assert_str_eq(json_string_value(back), s, "%s", b.p);
  cr_assert(strstr(b.p, "\\u001f !\\\"#") != NULL, "controls as \\u00XX: %s", b.p);
  cr_assert(strstr(b.p, "\\\"#") != NULL && strstr(b.p, "[\\\\]") != NULL, "%s", b.p);
  json_decref(back);
  sf__buf_dispose(&b);
}

Test(codec, filter_reply_echoes_nodes)
{
  sf__args_t a;
  char err[SF_ERR_MAX];
  sf_verdict_t v[3];
  verdicts(v);
  cr_assert_eq(parse(&a,
                     "{\"Pod\":{},\"Nodes\":{\"items\":[{\"metadata\":{\"name\":\"a\"},\"x\":1},"
                     "{\"metadata\":{\"name\":\"b\"}},{\"metadata\":{\"name\":\"c\"}}]}}",
                     err),
               0);
  sf__buf_t b = {0};
  sf__filter_reply(&b, &a, v);
  cr_assert_str_eq(b.p, "{\"Nodes\":{\"metadata\":{},\"items\":[{\"metadata\":{\"name\":\"a\"},"
                        "\"x\":1},{\"metadata\":{\"name\":\"c\"}}]},\"NodeNames\":null,"
                        "\"FailedNodes\":{\"b\":\"needs \\\"6Gi\\\"\\u000a\"},"
                        "\"FailedAndUnresolvableNodes\":{},\"Error\":\"\"}");
  sf__buf_dispose(&b);
  sf__args_dispose(&a);
}

Test(codec, prioritize_reply_bytes)
{
  sf__args_t a;
  char err[SF_ERR_MAX];
  sf_verdict_t v[3];
  verdicts(v);
  v[2].score = 9; /* UNSURE: its score is not used */
  cr_assert_eq(parse(&a, "{\"Pod\":{},\"NodeNames\":[\"a\",\"b\",\"c\"]}", err), 0);
  sf__buf_t b = {0};
  sf__prioritize_reply(&b, &a, v);
  cr_assert_str_eq(b.p, "[{\"Host\":\"a\",\"Score\":7},{\"Host\":\"b\",\"Score\":0},"
                        "{\"Host\":\"c\",\"Score\":0}]");
  sf__buf_dispose(&b);
  v[0].score = 99;
  sf__prioritize_reply(&b, &a, v);
  cr_assert(strstr(b.p, "\"Score\":10}"), "clamped to MaxExtenderPriority");
  sf__buf_dispose(&b);
  sf__args_dispose(&a);
}

Test(codec, rfc3339)
{
  cr_assert_eq(sf__rfc3339_seconds("1970-01-02T00:00:00Z"), 86400);
  cr_assert_eq(sf__rfc3339_seconds("2026-11-30T09:00:00Z"), 1796029200);
  cr_assert_eq(sf__rfc3339_seconds("2000-02-29T23:59:59Z"), 951868799);
  cr_assert_eq(sf__rfc3339_seconds("yesterday"), 0);
  cr_assert_eq(sf__rfc3339_seconds("2026-13-01T00:00:00Z"), 0);
  cr_assert_eq(sf__rfc3339_seconds(NULL), 0);
}

/* Top namespaces by count, the rest summed as other. */
Test(codec, pending_namespaces_bounded)
{
  json_t *p = json_object();
  char key[64];
  for (int ns = 0; ns < 15; ns++)
    for (int i = 0; i <= ns; i++) {
      snprintf(key, sizeof key, "ns%02d/c%d", ns, i);
      json_object_set_new(p, key, json_integer(100));
    }
  sf__buf_t b = {0};
  sf__pending_stats_t st = {.warn_after_s = 300};
  sf__metrics_pending(&b, p, 110, &st);
  size_t series = 0;
  for (const char *q = b.p; (q = strstr(q, "\nslicefit_claims_pending{")) != NULL; q++)
    series++;
  cr_assert_eq(series, SF__PENDING_TOP_NS + 1);
  cr_assert(strstr(b.p, "\nslicefit_claims_pending{namespace=\"ns14\"} 15\n"));
  cr_assert(strstr(b.p, "\nslicefit_claims_pending{namespace=\"ns05\"} 6\n"));
  /* ns00..ns04 hold 1+2+3+4+5 claims. */
  cr_assert(strstr(b.p, "\nslicefit_claims_pending{namespace=\"other\"} 15\n"), "%s", b.p);
  sf__buf_dispose(&b);
  /* The oldest age by namespace: ns03's last claim created at 40, the others at 100. */
  json_object_set_new(p, "ns03/c3", json_integer(40));
  json_object_set_new(p, "ns14/c0", json_integer(70));
  sf__metrics_pending(&b, p, 110, &st);
  cr_assert(strstr(b.p, "\nslicefit_claims_pending_oldest_age_seconds{namespace=\"ns14\"} 40\n"),
            "%s", b.p);
  cr_assert(strstr(b.p, "\nslicefit_claims_pending_oldest_age_seconds{namespace=\"ns05\"} 10\n"));
  cr_assert(strstr(b.p, "\nslicefit_claims_pending_oldest_age_seconds{namespace=\"other\"} 70\n"));
  cr_assert(strstr(b.p, "\nslicefit_claims_pending_oldest_seconds 70\n"));
  series = 0;
  for (const char *q = b.p; (q = strstr(q, "\nslicefit_claims_pending_oldest_age_seconds{")); q++)
    series++;
  cr_assert_eq(series, SF__PENDING_TOP_NS + 1);
  sf__buf_dispose(&b);
  json_decref(p);
}

Test(codec, pending_claims)
{
  json_t *p = json_object();
  json_t *c1 = json_loads("{\"kind\":\"ResourceClaim\",\"metadata\":{\"namespace\":\"t\",\"name\":"
                          "\"a\",\"creationTimestamp\":\"1970-01-01T00:01:40Z\"},\"status\":{}}",
                          0, NULL);
  json_t *c2 = json_loads("{\"kind\":\"ResourceClaim\",\"metadata\":{\"namespace\":\"t\",\"name\":"
                          "\"b\",\"creationTimestamp\":\"1970-01-01T00:00:10Z\"},"
                          "\"status\":{\"allocation\":{}}}",
                          0, NULL);
  sf__pending_apply(p, c1);
  sf__pending_apply(p, c2);
  cr_assert_eq(json_object_size(p), 1);
  cr_assert_eq(json_integer_value(json_object_get(p, "t/a")), 100);
  sf__buf_t b = {0};
  sf__pending_stats_t st = {.warn_after_s = 5};
  sf__metrics_pending(&b, p, 110, &st);
  cr_assert(strstr(b.p, "\nslicefit_claims_pending{namespace=\"t\"} 1\n"), "%s", b.p);
  cr_assert(strstr(b.p, "\nslicefit_claims_pending{namespace=\"other\"} 0\n"));
  cr_assert(strstr(b.p, "\nslicefit_claims_pending_oldest_seconds 10\n"));
  cr_assert(strstr(b.p, "\nslicefit_claims_pending_too_long 1\n"));
  cr_assert(strstr(b.p, "\nslicefit_claims_pending_too_long_total 0\n"));
  sf__buf_dispose(&b);
  /* Crossing the threshold counts once, however often the sweep runs. */
  json_t *warned = json_object();
  cr_assert_eq(sf__pending_sweep(p, warned, 104, &st, NULL, NULL), 0);
  cr_assert_eq(sf__pending_sweep(p, warned, 110, &st, NULL, NULL), 1);
  cr_assert_eq(sf__pending_sweep(p, warned, 200, &st, NULL, NULL), 0);
  cr_assert_eq(st.too_long_total, 1);
  /* Allocated now: no longer pending. */
  json_object_set(json_object_get(c1, "status"), "allocation", json_object_get(c2, "status"));
  sf__pending_apply(p, c1);
  cr_assert_eq(json_object_size(p), 0);
  json_t *items = json_pack("[O,O]", c1, c2);
  json_object_del(json_object_get(c1, "status"), "allocation");
  sf__pending_replace(p, items);
  cr_assert_eq(json_object_size(p), 1);
  sf__pending_delete(p, c1);
  cr_assert_eq(json_object_size(p), 0);
  sf__pending_sweep(p, warned, 200, &st, NULL, NULL);
  cr_assert_eq(json_object_size(warned), 0, "a claim no longer pending is forgotten");
  json_decref(warned);
  json_decref(items);
  json_decref(c1);
  json_decref(c2);
  json_decref(p);
}
