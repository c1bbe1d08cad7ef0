/*
 * Claims waiting for an allocation, and since when: the figure operators
 * watch first. The tracker sees every ResourceClaim on its way into the
 * cluster (the snapshot, or apiwatch through a sink that forwards to the
 * cluster) and keeps the pending ones by "namespace/name" with their
 * creationTimestamp, in a jansson object used as a hash map.
 */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "ext_int.h"
#include "slicefit/cluster_defrag.h"

int64_t sf__rfc3339_seconds(const char *s)
{
  int64_t t = sf_rfc3339_seconds(s);
  return t < 0 ? 0 : t;
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
  json_array_foreach(json_object_get(list, "items"), i, it)
  {
    const char *kind = json_string_value(json_object_get(it, "kind"));
    if (kind && strcmp(kind, "ResourceClaim") == 0)
      sf__pending_apply(pending, it);
  }
}

/*
 * Pending claims in /metrics: a gauge by namespace (the SF__PENDING_TOP_NS
 * namespaces with most, the rest summed as "other", which is always present
 * so the series never vanishes), the oldest age, and what an alert needs:
 * how many are pending too long now, and a counter of claims that crossed
 * the threshold (each once), which rate() can use. An age histogram of the
 * current claims went: its buckets go down as well as up, so rate() over it
 * means nothing.
 */
typedef struct {
  const char *ns;
  json_int_t n;
} ns_count_t;

static int by_count(const void *a, const void *b)
{
  const ns_count_t *x = a, *y = b;
  return x->n != y->n ? (x->n < y->n ? 1 : -1) : strcmp(x->ns, y->ns);
}

static void put_namespaces(sf__buf_t *b, const json_t *pending)
{
  json_t *by_ns = json_object();
  const char *k;
  const json_t *v;
  json_object_foreach((json_t *)(uintptr_t)pending, k, v)
  {
    const char *slash = strchr(k, '/');
    char ns[256];
    snprintf(ns, sizeof ns, "%.*s", slash ? (int)(slash - k) : 0, k);
    json_object_set_new(by_ns, ns, json_integer(json_integer_value(json_object_get(by_ns, ns)) + 1));
  }
  size_t n = json_object_size(by_ns), i = 0;
  ns_count_t *c = sf_xcalloc(n + 1, sizeof *c);
  json_object_foreach(by_ns, k, v) c[i++] = (ns_count_t){k, json_integer_value(v)};
  qsort(c, n, sizeof *c, by_count);
  json_int_t other = 0;
  sf__buf_puts(b, "# HELP slicefit_claims_pending ResourceClaims without an allocation, by "
                  "namespace (the " SF__PENDING_TOP_NS_TEXT " with most; the rest as other).\n"
                  "# TYPE slicefit_claims_pending gauge\n");
  for (i = 0; i < n; i++) {
    if (i >= SF__PENDING_TOP_NS || strcmp(c[i].ns, "other") == 0) {
      other += c[i].n;
      continue;
    }
    sf__buf_puts(b, "slicefit_claims_pending{namespace=");
    sf__buf_json_str(b, c[i].ns); /* a namespace is a DNS label: no escapes in practice */
    sf__buf_printf(b, "} %lld\n", (long long)c[i].n);
  }
  sf__buf_printf(b, "slicefit_claims_pending{namespace=\"other\"} %lld\n", (long long)other);
  free(c);
  json_decref(by_ns);
}

static double age_of(const json_t *v, int64_t now_s)
{
  int64_t created = json_integer_value(v);
  return created > 0 && created < now_s ? (double)(now_s - created) : 0;
}

void sf__metrics_pending(sf__buf_t *b, const json_t *pending, int64_t now_s,
                         const sf__pending_stats_t *st)
{
  double oldest = 0;
  size_t too_long = 0;
  const char *k;
  const json_t *v;
  json_object_foreach((json_t *)(uintptr_t)pending, k, v)
  {
    double age = age_of(v, now_s);
    oldest = age > oldest ? age : oldest;
    too_long += age > (double)st->warn_after_s;
  }
  put_namespaces(b, pending);
  sf__buf_printf(b,
                 "# HELP slicefit_claims_pending_oldest_seconds Age of the oldest pending "
                 "claim (0 when none).\n# TYPE slicefit_claims_pending_oldest_seconds gauge\n"
                 "slicefit_claims_pending_oldest_seconds %.0f\n"
                 "# HELP slicefit_claims_pending_too_long Claims pending longer than "
                 "--pending-warn-after now.\n# TYPE slicefit_claims_pending_too_long gauge\n"
                 "slicefit_claims_pending_too_long %zu\n"
                 "# HELP slicefit_claims_pending_too_long_total Claims that have been pending "
                 "longer than --pending-warn-after, each counted once.\n"
                 "# TYPE slicefit_claims_pending_too_long_total counter\n"
                 "slicefit_claims_pending_too_long_total %llu\n"
                 "# HELP slicefit_claims_pending_warn_after_seconds The --pending-warn-after "
                 "threshold.\n# TYPE slicefit_claims_pending_warn_after_seconds gauge\n"
                 "slicefit_claims_pending_warn_after_seconds %lld\n",
                 oldest, too_long, (unsigned long long)st->too_long_total,
                 (long long)st->warn_after_s);
}

size_t sf__pending_sweep(const json_t *pending, json_t *warned, int64_t now_s,
                         sf__pending_stats_t *st, sf__pending_fn fn, void *ud)
{
  const char *k;
  json_t *v;
  void *tmp;
  size_t fresh = 0;
  /* A claim allocated or deleted since is forgotten: if it comes back, it counts again. */
  json_object_foreach_safe(warned, tmp, k, v) if (!json_object_get(pending, k))
      json_object_del(warned, k);
  json_object_foreach((json_t *)(uintptr_t)pending, k, v)
  {
    double age = age_of(v, now_s);
    if (age <= (double)st->warn_after_s || json_object_get(warned, k))
      continue;
    json_object_set_new(warned, k, json_true());
    st->too_long_total++;
    fresh++;
    if (fn)
      fn(k, (int64_t)age, ud);
  }
  return fresh;
}
