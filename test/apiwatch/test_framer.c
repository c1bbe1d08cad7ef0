/* The watch stream framer: events across any chunk boundary, caps, bad streams. */
#include <criterion/criterion.h>
#include <string.h>
#include "slicefit/apiwatch.h"

#define MAXEV 16

typedef struct {
  char ev[MAXEV][512];
  int n;
  long err;
} got_t;

/* Feeds `s` in chunks of `step` bytes (0: whole). */
static got_t frame(const char *s, size_t step, size_t cap)
{
  got_t g = {0};
  sf_framer_t f;
  sf_framer_init(&f, cap);
  size_t len = strlen(s);
  for (size_t pos = 0; pos < len && !g.err;) {
    size_t n = step && step < len - pos ? step : len - pos;
    for (size_t off = 0; off < n;) {
      const char *ev;
      size_t evlen;
      long used = sf_framer_feed(&f, s + pos + off, n - off, &ev, &evlen);
      if (used < 0) {
        g.err = used;
        break;
      }
      cr_assert_gt(used, 0);
      off += (size_t)used;
      if (ev) {
        cr_assert_lt(g.n, MAXEV);
        cr_assert_lt(evlen, sizeof g.ev[0]);
        memcpy(g.ev[g.n], ev, evlen);
        g.ev[g.n++][evlen] = '\0';
      }
    }
    pos += n;
  }
  sf_framer_dispose(&f);
  return g;
}

static const char STREAM[] =
    "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a}{\\\"\",\"resourceVersion\":\"5\"},"
    "\"spec\":{\"devices\":[{\"name\":\"gpu-0\"},{\"name\":\"[\"}]}}}\n"
    "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"7\"}}}\r\n"
    "  {\"type\":\"DELETED\",\"object\":{}}";

Test(framer, three_events_whole)
{
  got_t g = frame(STREAM, 0, 0);
  cr_assert_eq(g.err, 0);
  cr_assert_eq(g.n, 3);
  cr_assert(strstr(g.ev[0], "gpu-0") && g.ev[0][strlen(g.ev[0]) - 1] == '}');
  cr_assert_str_eq(g.ev[2], "{\"type\":\"DELETED\",\"object\":{}}");
}

Test(framer, every_split_gives_the_same_events)
{
  got_t whole = frame(STREAM, 0, 0);
  for (size_t step = 1; step < sizeof STREAM; step++) {
    got_t g = frame(STREAM, step, 0);
    cr_assert_eq(g.n, whole.n, "step %zu", step);
    for (int i = 0; i < g.n; i++)
      cr_assert_str_eq(g.ev[i], whole.ev[i], "step %zu", step);
  }
}

Test(framer, partial_event_is_pending)
{
  sf_framer_t f;
  const char *ev;
  size_t evlen;
  sf_framer_init(&f, 0);
  cr_assert_eq(sf_framer_feed(&f, "{\"a\":", 5, &ev, &evlen), 5);
  cr_assert_null(ev);
  cr_assert(sf_framer_pending(&f));
  sf_framer_reset(&f);
  cr_assert_not(sf_framer_pending(&f));
  cr_assert_eq(sf_framer_feed(&f, "{}", 2, &ev, &evlen), 2);
  cr_assert_eq(evlen, 2);
  sf_framer_dispose(&f);
}

Test(framer, oversized_event_is_refused)
{
  got_t g = frame("{\"x\":\"0123456789012345678901234567890123456789\"}", 7, 32);
  cr_assert_eq(g.err, SF_E2BIG);
  g = frame("{\"x\":\"0123456789012345678901234567890123456789\"}", 0, 32);
  cr_assert_eq(g.err, SF_E2BIG);
}

Test(framer, stray_bytes_and_depth_are_errors)
{
  cr_assert_eq(frame("{} x {}", 0, 0).err, SF_EINVAL);
  cr_assert_eq(frame("[1]", 0, 0).err, SF_EINVAL, "an event is an object");
  cr_assert_eq(frame("{\"a\":[1}]}", 0, 0).err, SF_EINVAL, "a bracket closed by a brace");
  char deep[SF_FRAMER_MAX_DEPTH + 8];
  memset(deep, '[', sizeof deep - 1);
  deep[0] = '{';
  deep[sizeof deep - 1] = '\0';
  cr_assert_eq(frame(deep, 3, 0).err, SF_EINVAL);
}

Test(framer, an_event_cut_by_a_line_break_is_dropped_and_framing_resumes)
{
  /* A truncated event, then two whole ones: only the whole ones come out, at any split. */
  static const char cut[] =
      "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"x\":\"half\n"
      "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"b\"}}}\n"
      "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"c\"}}}\n";
  for (size_t step = 0; step < sizeof cut; step++) {
    got_t g = frame(cut, step, 0);
    cr_assert_eq(g.err, 0, "step %zu", step);
    cr_assert_eq(g.n, 2, "step %zu: %d events", step, g.n);
    cr_assert(strstr(g.ev[0], "\"b\"") && strstr(g.ev[1], "\"c\""), "step %zu", step);
  }
  sf_framer_t f;
  const char *ev;
  size_t evlen;
  sf_framer_init(&f, 0);
  long used = sf_framer_feed(&f, cut, sizeof cut - 1, &ev, &evlen);
  cr_assert_null(ev);
  cr_assert_eq(f.truncated, 1);
  cr_assert_eq(cut[used - 1], '\n', "consumed through the line break");
  sf_framer_dispose(&f);
}
