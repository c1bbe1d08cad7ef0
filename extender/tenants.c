/*
 * Who holds the fleet: the index's claim allocations summed by namespace
 * (a claim's holder is "namespace/name"), at scrape time, in O(allocations).
 * The namespaces holding most devices get series of their own, the rest are
 * summed as "other", so a cluster of many tenants stays a bounded number of
 * series. With a GPU price, each namespace's device-equivalents times that
 * price: the arithmetic slicefit-replay's --node-price does for a fleet.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ext_int.h"

typedef struct {
  const char *ns;
  int64_t milli; /* device-equivalents held, in milli-devices */
  int64_t claims;
} held_t;

static int by_held(const void *a, const void *b)
{
  const held_t *x = a, *y = b;
  if (x->milli != y->milli)
    return x->milli < y->milli ? 1 : -1;
  return strcmp(x->ns, y->ns);
}

/* by_ns[namespace] = [milli, claims] over every allocation that holds devices. */
static json_t *sum_by_namespace(const sf_index_t *idx)
{
  json_t *by_ns = json_object();
  for (sf_alloc_id a = 0; a < sf_index_alloc_end(idx); a++) {
    const char *h = sf_index_alloc_holder(idx, a), *slash = h ? strchr(h, '/') : NULL;
    size_t npicks = 0;
    sf_index_alloc_picks(idx, a, &npicks);
    if (slash == NULL || npicks == 0) /* a free id, or the CPU and memory of a node's pods */
      continue;
    char ns[256];
    snprintf(ns, sizeof ns, "%.*s", (int)(slash - h), h);
    json_t *v = json_object_get(by_ns, ns);
    int64_t milli = sf_index_alloc_device_milli(idx, a);
    if (v == NULL)
      json_object_set_new(by_ns, ns, json_pack("[I,I]", (json_int_t)milli, (json_int_t)1));
    else
      json_object_set_new(by_ns, ns,
                          json_pack("[I,I]", json_integer_value(json_array_get(v, 0)) + milli,
                                    json_integer_value(json_array_get(v, 1)) + 1));
  }
  return by_ns;
}

static void put_line(sf__buf_t *b, const char *metric, const char *ns, double v)
{
  sf__buf_printf(b, "%s{namespace=", metric);
  sf__buf_json_str(b, ns); /* a namespace is a DNS label: no escapes in practice */
  sf__buf_printf(b, "} %.10g\n", v);
}

static const struct {
  const char *name, *help;
} families[3] = {
    {"slicefit_namespace_devices_allocated",
     "Devices held by the namespace's claims, shared devices by their share (the " SF__PENDING_TOP_NS_TEXT
     " namespaces holding most; the rest as other)."},
    {"slicefit_namespace_claims_allocated", "ResourceClaims of the namespace holding devices."},
    {"slicefit_namespace_monthly_cost",
     "The namespace's devices times --gpu-price (the price of one GPU for a month)."},
};

/* Family f's value for h. */
static double figure(int f, const held_t *h, double price)
{
  double devices = (double)h->milli / 1000.0;
  return f == 0 ? devices : f == 1 ? (double)h->claims : devices * price;
}

void sf__metrics_tenants(sf__buf_t *b, sf_cluster_t *c, double gpu_price_month)
{
  json_t *by_ns = sum_by_namespace(sf_cluster_index(c));
  size_t n = json_object_size(by_ns), i = 0;
  held_t *t = sf_xcalloc(n + 1, sizeof *t), other = {"other", 0, 0};
  const char *k;
  json_t *v;
  json_object_foreach(by_ns, k, v) t[i++] = (held_t){k, json_integer_value(json_array_get(v, 0)),
                                                     json_integer_value(json_array_get(v, 1))};
  qsort(t, n, sizeof *t, by_held);
  size_t top = n < SF__PENDING_TOP_NS ? n : SF__PENDING_TOP_NS;
  for (i = 0; i < n; i++)
    if (i >= top || strcmp(t[i].ns, "other") == 0) { /* a namespace named other is summed too */
      other.milli += t[i].milli;
      other.claims += t[i].claims;
    }
  for (int f = 0; f < (gpu_price_month > 0 ? 3 : 2); f++) {
    sf__buf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n", families[f].name, families[f].help,
                   families[f].name);
    for (i = 0; i < top; i++)
      if (strcmp(t[i].ns, "other") != 0)
        put_line(b, families[f].name, t[i].ns, figure(f, &t[i], gpu_price_month));
    put_line(b, families[f].name, "other", figure(f, &other, gpu_price_month));
  }
  free(t);
  json_decref(by_ns);
}
