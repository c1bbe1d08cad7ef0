/*
 * apiwatch against the fake kube-apiserver: after each fault sequence the
 * recorded objects equal the server's (name and resourceVersion), with no
 * event applied twice and no delete of an object never seen.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"
#include "slicefit/log.h"

typedef struct {
  uv_loop_t loop;
  fake_t fake;
  rec_t rec;
  sf_apiwatch_sink_t sink;
  sf_apiwatch_opts_t opts;
  sf_apiwatch_t *w;
} env_t;

static env_t E;

static void setup_with(const char *const *args)
{
  memset(&E, 0, sizeof E);
  sf_log_set_verbosity(getenv("SF_TEST_V") ? atoi(getenv("SF_TEST_V")) : -1);
  if (!getenv("SF_TEST_V"))
    cr_assert(freopen("/dev/null", "w", stderr)); /* the fault logs */
  uv_loop_init(&E.loop);
  fake_start(&E.fake, args);
  rec_init(&E.rec);
  E.sink = rec_sink(&E.rec);
  E.opts.kube.server = E.fake.url;
  E.opts.sink = &E.sink;
  E.opts.backoff_min_ms = 20;
  E.opts.backoff_max_ms = 200;
  E.opts.watch_timeout_s = 30;
  E.opts.request_timeout_ms = 2000;
}

static void setup(void)
{
  setup_with(NULL);
}

static void teardown(void)
{
  if (E.w)
    watcher_free(&E.loop, E.w);
  fake_stop(&E.fake);
  rec_dispose(&E.rec);
  uv_loop_close(&E.loop);
}

static void seed(unsigned slices, unsigned claims)
{
  for (unsigned i = 0; i < slices; i++) {
    char *s = slice_json(i, 2, 1);
    fake_cmd(&E.fake, "put resourceslices %s", s);
    free(s);
  }
  for (unsigned i = 0; i < claims; i++) {
    char *s = claim_json(i);
    fake_cmd(&E.fake, "put resourceclaims %s", s);
    free(s);
  }
  fake_cmd(&E.fake,
           "put deviceclasses {\"metadata\":{\"name\":\"gpu.nvidia.com\"},\"spec\":"
           "{\"selectors\":[{\"cel\":{\"expression\":\"device.driver == 'gpu.nvidia.com'\"}}]}}");
}

static void start(void)
{
  char err[SF_ERR_MAX];
  E.w = sf_apiwatch_create_sink(&E.loop, &E.opts, err, sizeof err);
  cr_assert(E.w, "%s", err);
  cr_assert_eq(sf_apiwatch_start(E.w), 0);
}

static bool synced(void *ud)
{
  (void)ud;
  return sf_apiwatch_synced(E.w);
}
static bool equal(void *ud)
{
  (void)ud;
  return sf_apiwatch_synced(E.w) && rec_equals_all(&E.rec, &E.fake);
}

static sf_apiwatch_stats_t stats(void)
{
  sf_apiwatch_stats_t st;
  sf_apiwatch_stats(E.w, &st);
  return st;
}

static bool watching(void *ud)
{
  return atoi(fake_cmd(&E.fake, "watches") + 3) >= *(int *)ud;
}

/* Waits until the watcher's watches are open on the server (events then reach them). */
static void wait_watches(int n)
{
  cr_assert(run_until(&E.loop, watching, &n, 5000), "the watches did not open");
}

static void assert_converges(void)
{
  cr_assert(run_until(&E.loop, equal, NULL, 20000), "the watcher's state differs from the server's");
  cr_assert_eq(E.rec.duplicates, 0, "an event was applied twice");
  cr_assert_eq(E.rec.unknown_deletes, 0, "a delete for an object never seen: an event was lost");
}

/* Modifies slice i (a new generation) and deletes claim j. */
static void churn(unsigned i, unsigned j)
{
  char *s = slice_json(i, 3, 2);
  fake_cmd(&E.fake, "put resourceslices %s", s);
  free(s);
  fake_cmd(&E.fake, "del resourceclaims ns-%u/claim-%u", j % 7, j);
}

TestSuite(watch, .init = setup, .fini = teardown, .timeout = 60);

Test(watch, initial_sync_by_watch_list)
{
  seed(5, 4);
  start();
  cr_assert_not(sf_apiwatch_synced(E.w));
  assert_converges();
  sf_apiwatch_stats_t st = stats();
  cr_assert_eq(st.lists, 4);
  cr_assert_eq(st.streaming_fallbacks, 0);
  cr_assert_eq(E.rec.replaces, 0, "a first list goes to the sink object by object");
}

Test(watch, events_after_sync)
{
  seed(3, 3);
  start();
  assert_converges();
  churn(1, 2);
  char *s = slice_json(9, 1, 1);
  fake_cmd(&E.fake, "put resourceslices %s", s);
  free(s);
  assert_converges();
  cr_assert_eq(E.rec.removes, 1);
  cr_assert_geq(stats().events, 3);
}

static bool bookmarks_past(void *ud)
{
  return stats().bookmarks >= *(uint64_t *)ud;
}

Test(watch, bookmark_moves_rv_without_objects)
{
  seed(2, 0);
  start();
  assert_converges();
  unsigned applies = E.rec.applies;
  uint64_t want = stats().bookmarks + 6;
  wait_watches(4);
  fake_cmd(&E.fake, "bookmark");
  fake_cmd(&E.fake, "bookmark");
  cr_assert(run_until(&E.loop, bookmarks_past, &want, 5000),
            "two bookmarks on each of three watches");
  cr_assert_eq(E.rec.applies, applies, "a bookmark is not an object");
}

TestSuite(fallback, .init = setup, .fini = teardown, .timeout = 60);

Test(fallback, paged_list_when_watch_list_is_refused)
{
  fake_cmd(&E.fake, "watchlist off");
  seed(7, 5);
  E.opts.page_size = 2;
  start();
  assert_converges();
  sf_apiwatch_stats_t st = stats();
  cr_assert_eq(st.streaming_fallbacks, 4);
  cr_assert_eq(st.lists, 4);
  cr_assert_geq(atoi(fake_cmd(&E.fake, "requests") + 3), 4 + 3 + 2, "slices took four pages");
  churn(3, 4);
  assert_converges();
}

Test(fallback, server_ignoring_watch_list_is_detected)
{
  fake_cmd(&E.fake, "watchlist ignore");
  E.opts.request_timeout_ms = 300;
  seed(3, 2);
  start();
  assert_converges();
  cr_assert_eq(stats().streaming_fallbacks, 4);
  churn(1, 1);
  assert_converges();
}

Test(fallback, no_streaming_option_lists)
{
  E.opts.no_streaming_list = true;
  seed(2, 2);
  start();
  assert_converges();
  cr_assert_eq(stats().streaming_fallbacks, 0);
}

TestSuite(faults, .init = setup, .fini = teardown, .timeout = 90);

Test(faults, drop_mid_event_resumes_without_loss_or_duplicate)
{
  seed(4, 4);
  start();
  assert_converges();
  for (unsigned k = 0; k < 3; k++) {
    wait_watches(4);
    fake_cmd(&E.fake, "drop");
    churn(k, k);
    assert_converges();
  }
  sf_apiwatch_stats_t st = stats();
  cr_assert_geq(st.err_connect, 1, "the dropped connections were seen");
  cr_assert_eq(st.lists, 4, "a dropped watch resumes from its rv, without a relist");
}

Test(faults, events_split_at_every_byte)
{
  seed(2, 6);
  start();
  assert_converges();
  wait_watches(4);
  fake_cmd(&E.fake, "split 8");
  for (unsigned k = 0; k < 4; k++)
    churn(k % 2, k);
  assert_converges();
  cr_assert_eq(stats().framing_errors, 0);
}

Test(faults, initial_events_split_at_every_byte)
{
  seed(3, 3);
  E.opts.no_streaming_list = true;
  fake_cmd(&E.fake, "split 4");
  start();
  assert_converges();
}

static bool expired_seen(void *ud)
{
  return stats().relists_expired >= *(uint64_t *)ud;
}

Test(faults, expired_watch_relists_and_replaces)
{
  seed(3, 5);
  start();
  assert_converges();
  wait_watches(4);
  fake_cmd(&E.fake, "expire");
  uint64_t three = 3;
  cr_assert(run_until(&E.loop, expired_seen, &three, 5000));
  churn(2, 3);
  assert_converges();
  sf_apiwatch_stats_t st = stats();
  cr_assert_geq(st.relists_expired, 3);
  cr_assert_geq(st.lists, 6);
  cr_assert_geq(E.rec.replaces, 3, "a relist replaces each resource in one step");
}

Test(faults, compacted_history_gives_410_on_resume)
{
  E.opts.no_streaming_list = true;
  seed(3, 5);
  start();
  assert_converges();
  unsigned replaces = E.rec.replaces;
  /* Changes the watcher misses while disconnected, then history is compacted. */
  fake_cmd(&E.fake, "fail 500 100");
  fake_cmd(&E.fake, "close");
  churn(0, 0);
  churn(1, 1);
  fake_cmd(&E.fake, "compact");
  fake_cmd(&E.fake, "fail 500 0");
  assert_converges();
  cr_assert_geq(stats().relists_expired, 1);
  cr_assert_gt(E.rec.replaces, replaces, "the missed changes came in by a replace");
}

Test(faults, http_500_then_recovers)
{
  seed(2, 2);
  fake_cmd(&E.fake, "fail 500 5");
  start();
  assert_converges();
  cr_assert_eq(stats().err_http_5xx, 5);
}

Test(faults, http_429_honours_retry_after)
{
  seed(1, 1);
  fake_cmd(&E.fake, "fail 429 1 1");
  start();
  assert_converges();
  cr_assert_eq(stats().err_http_429, 1);
}

Test(faults, http_410_on_list_restarts_it)
{
  E.opts.no_streaming_list = true;
  E.opts.page_size = 1;
  seed(3, 0);
  fake_cmd(&E.fake, "fail 410 2");
  start();
  assert_converges();
  cr_assert_eq(stats().relists_expired, 2);
}

Test(faults, stalled_list_times_out_and_retries)
{
  E.opts.no_streaming_list = true;
  E.opts.request_timeout_ms = 300;
  seed(20, 0);
  fake_cmd(&E.fake, "stall 3000");
  start();
  assert_converges();
  cr_assert_geq(stats().err_connect, 1);
}

Test(faults, dropped_list_body_retries)
{
  E.opts.no_streaming_list = true;
  seed(20, 0);
  fake_cmd(&E.fake, "droplist");
  start();
  assert_converges();
  cr_assert_geq(stats().err_connect, 1);
}

static bool connect_errors(void *ud)
{
  return stats().err_connect >= *(uint64_t *)ud;
}
static bool tls_errors(void *ud)
{
  (void)ud;
  return stats().err_tls >= 1;
}
static bool auth_errors(void *ud)
{
  (void)ud;
  return stats().err_auth >= 1;
}

Test(faults, refused_connection_backs_off)
{
  E.opts.kube.server = (char[]){"http://127.0.0.1:1"};
  start();
  uint64_t three = 3;
  cr_assert(run_until(&E.loop, connect_errors, &three, 10000), "retried with backoff");
  cr_assert_not(sf_apiwatch_synced(E.w));
}

Test(faults, tls_error_is_counted)
{
  char url[80];
  snprintf(url, sizeof url, "https://127.0.0.1:%u", E.fake.port);
  E.opts.kube.server = url;
  start();
  cr_assert(run_until(&E.loop, tls_errors, NULL, 10000));
  cr_assert_not(sf_apiwatch_synced(E.w));
}

static bool not_synced(void *ud)
{
  (void)ud;
  return !sf_apiwatch_synced(E.w);
}

Test(faults, broken_watch_turns_unready_after_the_staleness_bound)
{
  seed(1, 1);
  E.opts.staleness_ms = 200;
  start();
  assert_converges();
  fake_cmd(&E.fake, "fail 503 100000");
  fake_cmd(&E.fake, "close");
  cr_assert(run_until(&E.loop, not_synced, NULL, 5000));
  fake_cmd(&E.fake, "fail 503 0");
  churn(0, 0);
  assert_converges();
}

TestSuite(auth, .fini = teardown, .timeout = 60);

Test(auth, rotated_token_file_is_reread)
{
  static const char *const args[] = {"--token", "first", NULL};
  setup_with(args);
  char path[] = "/tmp/sf-token-XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  cr_assert_eq(write(fd, "first\n", 6), 6);
  close(fd);
  E.opts.kube.token_file = path;
  seed(2, 2);
  start();
  assert_converges();
  fake_cmd(&E.fake, "token second");
  fake_cmd(&E.fake, "close");
  churn(0, 0);
  cr_assert(run_until(&E.loop, auth_errors, NULL, 10000), "the old token is refused");
  FILE *f = fopen(path, "w");
  fputs("second\n", f);
  fclose(f);
  assert_converges();
  unlink(path);
}

Test(auth, wrong_token_is_an_auth_error)
{
  static const char *const args[] = {"--token", "right", NULL};
  setup_with(args);
  E.opts.kube.token = (char[]){"wrong"};
  start();
  cr_assert(run_until(&E.loop, auth_errors, NULL, 10000));
  cr_assert_not(sf_apiwatch_synced(E.w));
}

/* ---- the policy ConfigMap ---- */

typedef struct {
  int calls;
  sf_strategy_t last;
} pol_seen_t;

static pol_seen_t seen;

static void on_policy(void *ud, const sf_policy_t *pol)
{
  (void)ud;
  seen.calls++;
  seen.last = pol->strategy;
}

static bool policy_calls(void *ud)
{
  return seen.calls >= *(int *)ud;
}

static bool invalid_seen(void *ud)
{
  return stats().policy_invalid >= *(uint64_t *)ud;
}

TestSuite(policy, .init = setup, .fini = teardown, .timeout = 60);

Test(policy, configmap_applies_and_bad_one_is_rejected)
{
  memset(&seen, 0, sizeof seen);
  E.opts.policy_configmap = "kube-system/slicefit";
  E.opts.policy_cb = on_policy;
  fake_cmd(&E.fake,
           "put configmaps {\"metadata\":{\"name\":\"slicefit\",\"namespace\":\"kube-system\"},"
           "\"data\":{\"strategy\":\"binpack\"}}");
  fake_cmd(&E.fake, "put configmaps {\"metadata\":{\"name\":\"other\",\"namespace\":\"kube-system\"},"
                    "\"data\":{\"strategy\":\"nonsense\"}}");
  seed(1, 0);
  start();
  int want = 1;
  cr_assert(run_until(&E.loop, policy_calls, &want, 5000));
  cr_assert_eq(seen.last, SF_STRATEGY_BINPACK);
  cr_assert(run_until(&E.loop, synced, NULL, 5000));
  fake_cmd(&E.fake,
           "put configmaps {\"metadata\":{\"name\":\"slicefit\",\"namespace\":\"kube-system\"},"
           "\"data\":{\"strategy\":\"spread\"}}");
  want = 2;
  cr_assert(run_until(&E.loop, policy_calls, &want, 10000), "a change applies without restart");
  cr_assert_eq(seen.last, SF_STRATEGY_SPREAD);
  fake_cmd(&E.fake,
           "put configmaps {\"metadata\":{\"name\":\"slicefit\",\"namespace\":\"kube-system\"},"
           "\"data\":{\"strategy\":\"spread\",\"headroom_pct\":\"lots\"}}");
  uint64_t one = 1;
  cr_assert(run_until(&E.loop, invalid_seen, &one, 10000));
  cr_assert_eq(seen.calls, 2, "an invalid policy is not passed on");
  cr_assert_eq(stats().policy_applied, 2);
}

Test(policy, bad_configmap_name_is_refused)
{
  char err[SF_ERR_MAX] = "";
  E.opts.policy_configmap = "no-slash";
  cr_assert_null(sf_apiwatch_create_sink(&E.loop, &E.opts, err, sizeof err));
  cr_assert(strstr(err, "no-slash"), "%s", err);
}

/* ---- freshness ---- */

TestSuite(fresh, .init = setup, .fini = teardown, .timeout = 90);

static bool never(void *ud)
{
  (void)ud;
  return false;
}
static bool silent_seen(void *ud)
{
  (void)ud;
  return stats().silent_restarts > 0;
}

Test(fresh, truncated_event_restarts_from_the_last_whole_event)
{
  seed(2, 2);
  start();
  assert_converges();
  wait_watches(3);
  fake_cmd(&E.fake, "truncate");
  churn(0, 0);
  churn(1, 1);
  /* Well before the watches' own 30 s end, which used to be the only way out. */
  cr_assert(run_until(&E.loop, equal, NULL, 10000), "the events after the cut one arrive");
  cr_assert_eq(E.rec.duplicates, 0);
  cr_assert_eq(E.rec.unknown_deletes, 0);
  cr_assert_geq(stats().framing_errors, 1, "the cut event is counted");
}

Test(fresh, silent_server_is_detected_and_turns_unready)
{
  E.opts.silent_ms = 1000;
  E.opts.staleness_ms = 1500;
  seed(1, 1);
  start();
  assert_converges();
  fake_cmd(&E.fake, "hang on");
  cr_assert(run_until(&E.loop, not_synced, NULL, 10000), "unready while nothing is confirmed");
  cr_assert(run_until(&E.loop, silent_seen, NULL, 10000), "the silent watch was restarted");
  sf_apiwatch_age_t ages[8];
  size_t n = sf_apiwatch_ages(E.w, ages, 8);
  cr_assert_eq(n, 4); /* DeviceClasses, ResourceSlices, ResourceClaims, Nodes */
  bool old = false;
  for (size_t i = 0; i < n; i++)
    old |= ages[i].age_ms > 1500;
  cr_assert(old, "an age past the bound");
  fake_cmd(&E.fake, "hang off");
  churn(0, 0);
  assert_converges();
  n = sf_apiwatch_ages(E.w, ages, 8);
  for (size_t i = 0; i < n; i++)
    cr_assert_leq(ages[i].age_ms, 1500, "%s", ages[i].resource);
}

Test(fresh, retry_after_is_capped_at_the_backoff_cap)
{
  E.opts.backoff_max_ms = 200;
  seed(1, 1);
  fake_cmd(&E.fake, "fail 429 1 3600");
  start();
  cr_assert(run_until(&E.loop, equal, NULL, 10000), "an hour's Retry-After is cut to 200 ms");
  cr_assert_eq(stats().err_http_429, 1);
}

Test(fresh, watch_list_is_tried_again_after_a_fallback)
{
  fake_cmd(&E.fake, "watchlist ignore");
  E.opts.request_timeout_ms = 300;
  E.opts.stream_retry_ms = 500;
  seed(2, 2);
  start();
  assert_converges();
  cr_assert_eq(stats().streaming_fallbacks, 4); /* one per watched resource */
  uint64_t before = stats().stream_lists;
  fake_cmd(&E.fake, "watchlist on");
  run_until(&E.loop, never, NULL, 700);
  fake_cmd(&E.fake, "expire");
  churn(1, 1);
  assert_converges();
  cr_assert_gt(stats().stream_lists, before, "the relist used watch-list again");
}
