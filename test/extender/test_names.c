/*
 * NodeNames kept from call to call: the same array is taken whole and gives
 * the same names and the same reply bytes as a fresh decode; any change of
 * its bytes decodes afresh; the verdict cache's positions follow the lists.
 */
#include <criterion/criterion.h>
#include <string.h>
#include "../../extender/ext_int.h"

static const sf__limits_t lim = {.max_nodes = 8, .max_depth = 8};

static int parse_list(sf__args_t *a, const char *s, sf__names_t *l)
{
  char err[SF_ERR_MAX];
  return sf__args_parse_list(a, s, strlen(s), &lim, l, err, sizeof err);
}

static void three(sf_verdict_t v[3])
{
  memset(v, 0, 3 * sizeof v[0]);
  v[0].fit = SF_FIT_YES;
  v[0].score = 7;
  v[1].fit = SF_FIT_NO;
  strcpy(v[1].reason, "full");
  v[2].fit = SF_FIT_YES;
  v[2].score = 3;
}

/* The filter and prioritize replies of `a`. */
static char *replies(const sf__args_t *a, const sf_verdict_t *v)
{
  sf__buf_t b = {0};
  sf__filter_reply(&b, a, v);
  sf__prioritize_reply(&b, a, v);
  return sf__buf_steal(&b, NULL);
}

Test(names, the_same_array_is_taken_whole_with_the_same_reply)
{
  static const char body[] = "{\"Pod\":{},\"NodeNames\":[\"a\\/1\", \"b\\\\A\",\"c\\\"\"]}";
  sf__names_t l = {0};
  sf__args_t fresh, first, again;
  char err[SF_ERR_MAX];
  sf_verdict_t v[3];
  three(v);
  cr_assert_eq(sf__args_parse(&fresh, body, strlen(body), &lim, err, sizeof err), 0);
  cr_assert_null(fresh.list);
  cr_assert_eq(parse_list(&first, body, &l), 0);
  cr_assert_eq(first.list, &l, "the array is kept");
  uint64_t id = l.id;
  cr_assert_neq(id, 0);
  cr_assert_eq(parse_list(&again, body, &l), 0);
  cr_assert_eq(again.list, &l);
  cr_assert_eq(l.id, id, "the same array: the same list");
  cr_assert_eq(again.n, 3);
  for (size_t i = 0; i < 3; i++)
    cr_assert_str_eq(again.names[i], fresh.names[i]);
  cr_assert_str_eq(again.names[0], "a/1");
  cr_assert_str_eq(again.names[1], "b\\A");
  char *want = replies(&fresh, v), *got = replies(&again, v);
  cr_assert_str_eq(got,
                   "{\"Nodes\":null,\"NodeNames\":[\"a\\/1\",\"c\\\"\"],\"FailedNodes\":{"
                   "\"b\\\\A\":\"full\"},\"FailedAndUnresolvableNodes\":{},\"Error\":\"\"}"
                   "[{\"Host\":\"a\\/1\",\"Score\":7},{\"Host\":\"b\\\\A\",\"Score\":0},"
                   "{\"Host\":\"c\\\"\",\"Score\":3}]",
                   "each name echoed as it came");
  json_t *jw = json_loadb(want, strlen(want), JSON_DISABLE_EOF_CHECK, NULL);
  json_t *jg = json_loadb(got, strlen(got), JSON_DISABLE_EOF_CHECK, NULL);
  cr_assert(jw && jg && json_equal(jw, jg), "the same JSON as a fresh decode's reply");
  json_decref(jw);
  json_decref(jg);
  free(want);
  free(got);
  sf__args_dispose(&fresh);
  sf__args_dispose(&first);
  sf__args_dispose(&again);
  sf__names_dispose(&l);
}

Test(names, any_other_bytes_decode_afresh)
{
  sf__names_t l = {0};
  sf__args_t a;
  cr_assert_eq(parse_list(&a, "{\"Pod\":{},\"NodeNames\":[\"a\",\"b\"]}", &l), 0);
  uint64_t id = l.id;
  sf__args_dispose(&a);
  const char *others[] = {
      "{\"Pod\":{},\"NodeNames\":[\"a\",\"bb\"]}",      /* a longer name */
      "{\"Pod\":{},\"NodeNames\":[\"a\"]}",             /* a prefix */
      "{\"Pod\":{},\"NodeNames\":[\"a\", \"b\"]}",      /* a space */
      "{\"Pod\":{},\"NodeNames\":[\"a\",\"b\",\"c\"]}", /* one more */
  };
  for (size_t i = 0; i < sizeof others / sizeof *others; i++) {
    cr_assert_eq(parse_list(&a, others[i], &l), 0, "%s", others[i]);
    cr_assert_gt(l.id, id, "%s: a new list", others[i]);
    id = l.id;
    cr_assert_eq(a.list, &l);
    sf__args_dispose(&a);
  }
  cr_assert_eq(parse_list(&a, "{\"Pod\":{},\"NodeNames\":[\"a\",\"b\",\"c\"]}", &l), 0);
  cr_assert_eq(l.id, id, "the last one is kept");
  cr_assert_eq(a.n, 3);
  cr_assert_str_eq(a.names[2], "c");
  sf__args_dispose(&a);
  sf__names_dispose(&l);
}

Test(names, limits_and_errors_hold_for_a_kept_array)
{
  sf__names_t l = {0};
  sf__args_t a;
  char err[SF_ERR_MAX];
  static const char body[] = "{\"Pod\":{},\"NodeNames\":[\"a\",\"b\",\"c\"]}";
  cr_assert_eq(parse_list(&a, body, &l), 0);
  sf__args_dispose(&a);
  sf__limits_t two = lim;
  two.max_nodes = 2;
  cr_assert_eq(sf__args_parse_list(&a, body, strlen(body), &two, &l, err, sizeof err), SF_E2BIG,
               "the node limit applies to a kept array too");
  static const char bad_pod[] = "{\"Pod\":[],\"NodeNames\":[\"a\",\"b\",\"c\"]}";
  cr_assert_eq(sf__args_parse_list(&a, bad_pod, strlen(bad_pod), &lim, &l, err, sizeof err),
               SF_EINVAL);
  cr_assert(strstr(err, "Pod"), "%s", err);
  static const char twice[] = "{\"Pod\":{},\"NodeNames\":[\"a\",\"b\",\"c\"],\"NodeNames\":[\"x\"]}";
  cr_assert_eq(parse_list(&a, twice, &l), 0);
  cr_assert_eq(a.n, 1, "the last NodeNames wins, as in the general decoder");
  cr_assert_str_eq(a.names[0], "x");
  sf__args_dispose(&a);
  sf__names_dispose(&l);
}

/* ---- the verdict cache by list ---- */

static const char *const FILTER[] = {"n0", "n1", "n2", "n3"};

static sf_verdict_t *stored(sf__evcache_t *ec, uint64_t list)
{
  sf_verdict_t *v = sf_xcalloc(4, sizeof *v);
  size_t cap = 4;
  for (int i = 0; i < 4; i++) {
    v[i].fit = i == 1 ? SF_FIT_NO : SF_FIT_YES;
    v[i].score = i;
  }
  return sf__evcache_store_list(ec, "pod", 1, FILTER, 4, list, v, &cap);
}

Test(names, prioritize_positions_follow_the_lists)
{
  sf__evcache_t ec = {0};
  free(stored(&ec, 11));
  static const char *const prio[] = {"n3", "n0", "n2"};
  sf_verdict_t out[3];
  for (int round = 0; round < 2; round++) { /* the second round copies by the kept positions */
    cr_assert(sf__evcache_lookup_list(&ec, "pod", 1, prio, 3, 21, out));
    cr_assert_eq(out[0].score, 3);
    cr_assert_eq(out[1].score, 0);
    cr_assert_eq(out[2].score, 2);
  }
  cr_assert_not(sf__evcache_lookup_list(&ec, "pod", 2, prio, 3, 21, out), "another generation");
  static const char *const fewer[] = {"n3", "n0"};
  cr_assert_not(sf__evcache_lookup_list(&ec, "pod", 1, fewer, 2, 22, out),
                "fewer FIT nodes: scores are normalised over them, evaluated afresh");
  /* The filter's names change under the same prioritize list id: positions found again. */
  static const char *const moved[] = {"n2", "n3", "n1", "n0"};
  sf_verdict_t *v = sf_xcalloc(4, sizeof *v);
  size_t cap = 4;
  for (int i = 0; i < 4; i++) {
    v[i].fit = moved[i][1] == '1' ? SF_FIT_NO : SF_FIT_YES;
    v[i].score = 10 + (moved[i][1] - '0');
  }
  free(sf__evcache_store_list(&ec, "pod", 1, moved, 4, 12, v, &cap));
  cr_assert(sf__evcache_lookup_list(&ec, "pod", 1, prio, 3, 21, out));
  cr_assert_eq(out[0].score, 13, "n3 is found where it is now");
  cr_assert_eq(out[1].score, 10);
  cr_assert_eq(out[2].score, 12);
  static const char *const unknown[] = {"n3", "zz", "n2"};
  cr_assert_not(sf__evcache_lookup_list(&ec, "pod", 1, unknown, 3, 23, out), "a name not filtered");
  sf__evcache_dispose(&ec);
}
