/*
 * sf_apiwatch_request: one request besides the watches, on the watcher's
 * multi handle and loop. Its callback runs once with the answer's status and
 * body (0 and libcurl's words when none came), never after the watcher
 * stopped; the watches go on meanwhile.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "slicefit/log.h"

typedef struct {
  int calls;
  long status;
  char body[1024];
} answer_t;

static uv_loop_t L;
static fake_t F;
static rec_t R;
static sf_apiwatch_sink_t S;
static sf_apiwatch_t *W;

static void start_with(const char *server)
{
  static char url[64];
  char err[SF_ERR_MAX];
  snprintf(url, sizeof url, "%s", server);
  sf_apiwatch_opts_t o = {.kube.server = url,
                          .sink = &S,
                          .request_timeout_ms = 2000,
                          .backoff_min_ms = 20,
                          .backoff_max_ms = 200,
                          .watch_timeout_s = 30};
  W = sf_apiwatch_create_sink(&L, &o, err, sizeof err);
  cr_assert(W, "%s", err);
}

static void setup(void)
{
  sf_log_set_verbosity(-1);
  cr_assert(freopen("/dev/null", "w", stderr));
  uv_loop_init(&L);
  fake_start(&F, NULL);
  rec_init(&R);
  S = rec_sink(&R);
  start_with(F.url);
}

static void teardown(void)
{
  fake_cmd(&F, "hang off");
  watcher_free(&L, W);
  fake_stop(&F);
  rec_dispose(&R);
  uv_loop_close(&L);
}

TestSuite(request, .init = setup, .fini = teardown, .timeout = 60);

static void on_answer(void *ud, long status, const char *body, size_t len)
{
  answer_t *a = ud;
  a->calls++;
  a->status = status;
  snprintf(a->body, sizeof a->body, "%.*s", (int)len, body);
}

static bool answered(void *ud)
{
  return ((answer_t *)ud)->calls > 0;
}

static void put_pod(const char *name)
{
  fake_cmd(&F,
           "put pods {\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"namespace\":"
           "\"team\",\"name\":\"%s\"}}",
           name);
}

static void evict(const char *name, answer_t *a)
{
  char path[128], body[256];
  snprintf(path, sizeof path, "/api/v1/namespaces/team/pods/%s/eviction", name);
  snprintf(body, sizeof body,
           "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"namespace\":"
           "\"team\",\"name\":\"%s\"}}",
           name);
  memset(a, 0, sizeof *a);
  cr_assert_eq(sf_apiwatch_request(W, "POST", path, body, on_answer, a), 0);
  cr_assert(run_until(&L, answered, a, 10000), "no answer to the eviction of %s", name);
}

Test(request, not_before_the_watcher_starts)
{
  answer_t a = {0};
  cr_assert_eq(sf_apiwatch_request(W, "GET", "/version", NULL, on_answer, &a), SF_EINVAL);
}

Test(request, answers_arrive_once_with_their_status_and_body)
{
  cr_assert_eq(sf_apiwatch_start(W), 0);
  put_pod("a");
  put_pod("b");
  fake_cmd(&F, "pdb team/b");
  answer_t a;
  evict("a", &a);
  cr_assert_eq(a.status, 201, "%s", a.body);
  cr_assert(strstr(a.body, "\"Success\"") != NULL, "%s", a.body);
  cr_assert_str_eq(fake_cmd(&F, "count pods"), "ok 1", "the evicted pod is deleted");
  evict("b", &a);
  cr_assert_eq(a.status, 429, "%s", a.body);
  cr_assert(strstr(a.body, "violate the pod's disruption budget") != NULL, "%s", a.body);
  evict("a", &a);
  cr_assert_eq(a.status, 404, "%s", a.body);
  /* Each callback ran once: a later turn of the loop calls none again. */
  uv_run(&L, UV_RUN_NOWAIT);
  cr_assert_eq(a.calls, 1);
  cr_assert_str_eq(fake_cmd(&F, "evictions"), "ok [\"team/a\",\"team/b\",\"team/a\"]");
}

Test(request, no_answer_gives_status_0_and_curls_words)
{
  watcher_free(&L, W);
  start_with("http://127.0.0.1:1");
  cr_assert_eq(sf_apiwatch_start(W), 0);
  answer_t a = {0};
  cr_assert_eq(sf_apiwatch_request(W, "GET", "/version", NULL, on_answer, &a), 0);
  cr_assert(run_until(&L, answered, &a, 10000));
  cr_assert_eq(a.status, 0);
  cr_assert(a.body[0] != '\0');
}

Test(request, a_stopped_watcher_calls_back_no_request)
{
  cr_assert_eq(sf_apiwatch_start(W), 0);
  put_pod("a");
  fake_cmd(&F, "hang on");
  answer_t a = {0};
  cr_assert_eq(sf_apiwatch_request(W, "GET", "/api/v1/pods", NULL, on_answer, &a), 0);
  uv_run(&L, UV_RUN_NOWAIT);
  watcher_free(&L, W);
  W = NULL;
  cr_assert_eq(a.calls, 0);
  start_with(F.url); /* for the teardown */
}
