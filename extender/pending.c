/*
 * Claims waiting for an allocation, and since when: the figure operators
 * watch first. The tracker sees every ResourceClaim on its way into the
 * cluster (the snapshot, or apiwatch through a sink that forwards to the
 * cluster) and keeps the pending ones by "namespace/name" with their
 * creationTimestamp, in a jansson object used as a hash map.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "ext_int.h"

/* Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm). */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

int64_t sf__rfc3339_seconds(const char *s)
{
  int y, mo, d, h, mi, se;
  if (s == NULL || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d", &y, &mo, &d, &h, &mi, &se) != 6)
    return 0;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60)
    return 0;
  return days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se;
}

static bool key_of(const json_t *obj, char *key, size_t cap)
{
  const json_t *md = json_object_get(obj, "metadata");
  const char *ns = json_string_value(json_object_get(md, "namespace"));
  const char *name = json_string_value(json_object_get(md, "name"));
  if (name == NULL)
    return false;
  snprintf(key, cap, "%s/%s", ns ? ns : "", name);
  return true;
}

void sf__pending_apply(json_t *pending, const json_t *claim)
{
  char key[512];
  if (!key_of(claim, key, sizeof key))
    return;
  const json_t *alloc = json_object_get(json_object_get(claim, "status"), "allocation");
  if (alloc && !json_is_null(alloc)) {
    json_object_del(pending, key);
    return;
  }
  const char *ts = json_string_value(
      json_object_get(json_object_get(claim, "metadata"), "creationTimestamp"));
  json_object_set_new(pending, key, json_integer(sf__rfc3339_seconds(ts)));
}

void sf__pending_delete(json_t *pending, const json_t *claim)
{
  char key[512];
  if (key_of(claim, key, sizeof key))
    json_object_del(pending, key);
}

void sf__pending_replace(json_t *pending, const json_t *items)
{
  size_t i;
  const json_t *it;
  json_object_clear(pending);
  json_array_foreach(items, i, it) sf__pending_apply(pending, it);
}

void sf__pending_load_list(json_t *pending, const json_t *list)
{
  size_t i;
  const json_t *it;
  json_array_foreach(json_object_get(list, "items"), i, it) {
    const char *kind = json_string_value(json_object_get(it, "kind"));
    if (kind && strcmp(kind, "ResourceClaim") == 0)
      sf__pending_apply(pending, it);
  }
}

/* Seconds: from a claim that just arrived to one stuck for a day. */
static const double age_bounds[] = {1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 21600, 86400};
#define NAGE (sizeof age_bounds / sizeof age_bounds[0])

void sf__metrics_pending(sf__buf_t *b, const json_t *pending, int64_t now_s)
{
  uint64_t counts[NAGE] = {0};
  double sum = 0, oldest = 0;
  const char *k;
  const json_t *v;
  json_object_foreach((json_t *)(uintptr_t)pending, k, v) {
    int64_t created = json_integer_value(v);
    double age = created > 0 && created < now_s ? (double)(now_s - created) : 0;
    sum += age;
    oldest = age > oldest ? age : oldest;
    for (size_t i = 0; i < NAGE; i++)
      counts[i] += age <= age_bounds[i];
  }
  size_t n = json_object_size(pending);
  sf__buf_printf(b, "# HELP slicefit_claims_pending ResourceClaims without an allocation.\n"
                    "# TYPE slicefit_claims_pending gauge\nslicefit_claims_pending %zu\n"
                    "# HELP slicefit_claims_pending_oldest_seconds Age of the oldest pending "
                    "claim.\n# TYPE slicefit_claims_pending_oldest_seconds gauge\n"
                    "slicefit_claims_pending_oldest_seconds %.0f\n"
                    "# HELP slicefit_claims_pending_age_seconds Ages of the pending claims.\n"
                    "# TYPE slicefit_claims_pending_age_seconds histogram\n",
                 n, oldest);
  for (size_t i = 0; i < NAGE; i++)
    sf__buf_printf(b, "slicefit_claims_pending_age_seconds_bucket{le=\"%g\"} %llu\n",
                   age_bounds[i], (unsigned long long)counts[i]);
  sf__buf_printf(b, "slicefit_claims_pending_age_seconds_bucket{le=\"+Inf\"} %zu\n"
                    "slicefit_claims_pending_age_seconds_sum %.0f\n"
                    "slicefit_claims_pending_age_seconds_count %zu\n",
                 n, sum, n);
}
