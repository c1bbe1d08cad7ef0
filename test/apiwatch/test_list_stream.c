/*
 * A LIST answer in one piece (a server answering from its watch cache may
 * ignore `limit`) is applied item by item as its bytes arrive, as watch
 * events are, never parsed whole.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "slicefit/log.h"

#define NCLAIMS 3000

static uv_loop_t loop;
static fake_t fake;
static rec_t rec;
static sf_apiwatch_sink_t sink;
static sf_apiwatch_t *w;

static void setup(void)
{
  sf_log_set_verbosity(-1);
  cr_assert(freopen("/dev/null", "w", stderr));
  uv_loop_init(&loop);
  fake_start(&fake, NULL);
  rec_init(&rec);
  sink = rec_sink(&rec);
}

static void teardown(void)
{
  if (w)
    watcher_free(&loop, w);
  fake_stop(&fake);
  rec_dispose(&rec);
  uv_loop_close(&loop);
}

/* NCLAIMS claims, loaded in one command from a file. */
static void seed_claims(void)
{
  char path[] = "/tmp/slicefit-claims-XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  FILE *f = fdopen(fd, "w");
  fputc('[', f);
  for (unsigned i = 0; i < NCLAIMS; i++) {
    char *s = claim_json(i);
    fprintf(f, "%s%s", i ? "," : "", s);
    free(s);
  }
  fputs("]\n", f);
  fclose(f);
  fake_cmd(&fake, "load resourceclaims %s", path);
  unlink(path);
  char *s = slice_json(0, 2, 1);
  fake_cmd(&fake, "put resourceslices %s", s);
  free(s);
}

static void start(void)
{
  sf_apiwatch_opts_t o = {0};
  o.kube.server = fake.url;
  o.sink = &sink;
  o.no_streaming_list = true;
  o.page_size = 50;
  o.backoff_min_ms = 20;
  o.backoff_max_ms = 200;
  o.request_timeout_ms = 10000;
  char err[SF_ERR_MAX];
  w = sf_apiwatch_create_sink(&loop, &o, err, sizeof err);
  cr_assert(w, "%s", err);
  cr_assert_eq(sf_apiwatch_start(w), 0);
}

/* Claims applied while their list is still on the wire. */
static bool claims_before_the_end(void *ud)
{
  (void)ud;
  return !sf_apiwatch_synced(w) && rec.applies > 100;
}

static bool equal(void *ud)
{
  (void)ud;
  return sf_apiwatch_synced(w) && rec_equals_all(&rec, &fake);
}

TestSuite(unpaged, .init = setup, .fini = teardown, .timeout = 60);

Test(unpaged, one_page_is_applied_while_it_arrives)
{
  seed_claims();
  fake_cmd(&fake, "paging off");
  fake_cmd(&fake, "stall 2000 resourceclaims"); /* in the middle of the claims' one page */
  start();
  cr_assert(run_until(&loop, claims_before_the_end, NULL, 10000),
            "no claim was applied before the list's last byte");
  cr_assert(run_until(&loop, equal, NULL, 20000), "the watcher's state differs from the server's");
  cr_assert_eq(rec.duplicates, 0);
  sf_apiwatch_stats_t st;
  sf_apiwatch_stats(w, &st);
  cr_assert_eq(st.lists, 4, "one page per resource: the server ignored limit=50");
  cr_assert_eq(st.decode_errors, 0);
}

Test(unpaged, a_paged_list_still_follows_continue)
{
  seed_claims();
  start();
  cr_assert(run_until(&loop, equal, NULL, 20000), "the watcher's state differs from the server's");
  cr_assert_geq(atoi(fake_cmd(&fake, "requests") + 3), NCLAIMS / 50, "the claims came in pages");
}

Test(unpaged, a_bad_item_fails_the_list_and_it_is_retried)
{
  seed_claims();
  fake_cmd(&fake, "paging off");
  fake_cmd(&fake, "droplist"); /* the first list is cut in half: an item left open */
  start();
  cr_assert(run_until(&loop, equal, NULL, 20000), "the watcher's state differs from the server's");
  cr_assert_eq(rec.duplicates, 0);
}
