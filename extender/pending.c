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
  double oldest_s; /* age of its oldest pending claim */
} ns_count_t;

static int by_count(const void *a, const void *b)
{
  const ns_count_t *x = a, *y = b;
  return x->n != y->n ? (x->n < y->n ? 1 : -1) : strcmp(x->ns, y->ns);
}

static double age_of(const json_t *v, int64_t now_s)
{
  int64_t created = json_integer_value(v);
  return created > 0 && created < now_s ? (double)(now_s - created) : 0;
}

/* by_ns[namespace] = [claims, oldest age]; a new object. */
static json_t *count_by_namespace(const json_t *pending, int64_t now_s)
{
  json_t *by_ns = json_object();
  const char *k;
  const json_t *v;
  json_object_foreach((json_t *)(uintptr_t)pending, k, v)
  {
    const char *slash = strchr(k, '/');
    char ns[256];
    snprintf(ns, sizeof ns, "%.*s", slash ? (int)(slash - k) : 0, k);
    const json_t *was = json_object_get(by_ns, ns);
    double age = age_of(v, now_s), oldest = json_real_value(json_array_get(was, 1));
    json_object_set_new(by_ns, ns,
                        json_pack("[I,f]", json_integer_value(json_array_get(was, 0)) + 1,
                                  age > oldest ? age : oldest));
  }
  return by_ns;
}

static void put_ns_line(sf__buf_t *b, const char *metric, const char *ns, double v)
{
  sf__buf_printf(b, "%s{namespace=", metric);
  sf__buf_json_str(b, ns); /* a namespace is a DNS label: no escapes in practice */
  sf__buf_printf(b, "} %.0f\n", v);
}

static void put_namespaces(sf__buf_t *b, const json_t *pending, int64_t now_s)
{
  json_t *by_ns = count_by_namespace(pending, now_s);
  size_t n = json_object_size(by_ns), i = 0;
  ns_count_t *c = sf_xcalloc(n + 1, sizeof *c), other = {"other", 0, 0};
  const char *k;
  json_t *v;
  json_object_foreach(by_ns, k, v) c[i++] = (ns_count_t){k, json_integer_value(json_array_get(v, 0)),
                                                         json_real_value(json_array_get(v, 1))};
  qsort(c, n, sizeof *c, by_count);
  size_t top = n < SF__PENDING_TOP_NS ? n : SF__PENDING_TOP_NS;
  for (i = 0; i < n; i++)
    if (i >= top || strcmp(c[i].ns, "other") == 0) {
      other.n += c[i].n;
      other.oldest_s = c[i].oldest_s > other.oldest_s ? c[i].oldest_s : other.oldest_s;
    }
  sf__buf_puts(b, "# HELP slicefit_claims_pending ResourceClaims without an allocation, by "
                  "namespace (the " SF__PENDING_TOP_NS_TEXT " with most; the rest as other).\n"
                  "# TYPE slicefit_claims_pending gauge\n");
  for (i = 0; i < top; i++)
    if (strcmp(c[i].ns, "other") != 0)
      put_ns_line(b, "slicefit_claims_pending", c[i].ns, (double)c[i].n);
  put_ns_line(b, "slicefit_claims_pending", "other", (double)other.n);
  sf__buf_puts(b, "# HELP slicefit_claims_pending_oldest_age_seconds Age of the oldest pending "
                  "claim, by namespace (those of slicefit_claims_pending; 0 when none).\n"
                  "# TYPE slicefit_claims_pending_oldest_age_seconds gauge\n");
  for (i = 0; i < top; i++)
    if (strcmp(c[i].ns, "other") != 0)
      put_ns_line(b, "slicefit_claims_pending_oldest_age_seconds", c[i].ns, c[i].oldest_s);
  put_ns_line(b, "slicefit_claims_pending_oldest_age_seconds", "other", other.oldest_s);
  free(c);
  json_decref(by_ns);
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
  put_namespaces(b, pending, now_s);
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
