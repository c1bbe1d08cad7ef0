/*
 * Freshness arithmetic: a resource confirmed at the loop's current
 * millisecond is current at that millisecond and for staleness_ms after it,
 * whether the millisecond is even or odd, and stale one millisecond later.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <time.h>
#include "../../apiwatch/watch_int.h"

#define STALE_MS 30000u

static res_t synced_at(uint64_t t)
{
  res_t r = {.synced = true, .confirmed = true, .confirmed_ms = t};
  return r;
}

Test(freshness, current_for_the_whole_bound_at_even_and_odd_milliseconds)
{
  const uint64_t starts[] = {1000, 1001, 5, 6, 123456788, 123456789};
  for (size_t i = 0; i < sizeof starts / sizeof starts[0]; i++) {
    uint64_t t = starts[i];
    res_t r = synced_at(t);
    cr_assert(sf__watch_res_current(&r, t, STALE_MS), "confirmed at %llu, asked then",
              (unsigned long long)t);
    cr_assert(sf__watch_res_current(&r, t + 1, STALE_MS));
    cr_assert(sf__watch_res_current(&r, t + STALE_MS, STALE_MS));
    cr_assert_not(sf__watch_res_current(&r, t + STALE_MS + 1, STALE_MS));
    cr_assert_eq(sf__watch_age_ms(t, t), 0);
    cr_assert_eq(sf__watch_age_ms(t + 7, t), 7);
  }
}

Test(freshness, an_age_is_never_negative_or_wrapped)
{
  /* A time recorded after `now` (another clock reading) is age 0, not 2^64 - 1. */
  cr_assert_eq(sf__watch_age_ms(1000, 1001), 0);
  cr_assert_eq(sf__watch_age_ms(0, UINT64_MAX), 0);
  res_t r = synced_at(2001);
  cr_assert(sf__watch_res_current(&r, 2000, STALE_MS));
}

Test(freshness, unsynced_never_confirmed_or_broken_too_long_is_not_current)
{
  res_t r = synced_at(1000);
  r.synced = false;
  cr_assert_not(sf__watch_res_current(&r, 1000, STALE_MS));
  r = synced_at(1000);
  r.confirmed = false;
  cr_assert_not(sf__watch_res_current(&r, 1000, STALE_MS));
  r = synced_at(40000);
  r.broken = true;
  r.broken_since = 2000;
  cr_assert(sf__watch_res_current(&r, 32000, STALE_MS), "broken for exactly the bound");
  cr_assert_not(sf__watch_res_current(&r, 32001, STALE_MS));
  /* A failure at time 0 of the clock is a failure too (no value of the clock means "none"). */
  r = synced_at(0);
  r.broken = true;
  r.broken_since = 0;
  cr_assert_not(sf__watch_res_current(&r, STALE_MS + 1, STALE_MS));
}

/* Through the loop's own clock: confirmed now, current now, at every millisecond's parity. */
Test(freshness, confirmed_on_the_loop_is_current_at_once)
{
  uv_loop_t loop;
  uv_loop_init(&loop);
  struct sf_apiwatch w = {.loop = &loop};
  res_t r = {.w = &w, .synced = true};
  int parity[2] = {0, 0};
  for (int i = 0; i < 400 && (parity[0] < 20 || parity[1] < 20); i++) {
    uv_update_time(&loop);
    sf__watch_confirm(&r);
    parity[uv_now(&loop) & 1]++;
    cr_assert_eq(sf__watch_age_ms(uv_now(&loop), r.confirmed_ms), 0, "at ms %llu",
                 (unsigned long long)uv_now(&loop));
    cr_assert(sf__watch_res_current(&r, uv_now(&loop), STALE_MS), "at ms %llu",
              (unsigned long long)uv_now(&loop));
    nanosleep(&(struct timespec){0, 300000L}, NULL);
  }
  cr_assert_gt(parity[0], 0, "an even millisecond was seen");
  cr_assert_gt(parity[1], 0, "an odd millisecond was seen");
  uv_loop_close(&loop);
}
