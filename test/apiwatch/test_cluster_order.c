/*
 * Property: the cluster is a function of the set of objects it holds, not of
 * the order they came in. Random sets of ResourceSlices of two
 * drivers (some publishing no device, some pools in two slices) are applied
 * in random orders, mixed with objects applied and deleted again and with
 * applies that fail (duplicate device names); the state and the verdicts
 * for a two-GPU claim must equal those of the same set applied in order
 * into a fresh cluster. Two replicas that see the same objects must agree.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "slicefit/cluster.h"
#include "slicefit/log.h"

#define NNODES 4
#define MAXOBJ 12

static uint64_t rng;
static unsigned rnd(unsigned n)
{
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return (unsigned)((rng >> 33) % n);
}

static const char *const NODES[NNODES + 1] = {"n0", "n1", "n2", "n3", "n4"};
static const char *const DRIVERS[2] = {"gpu.example.com", "other.example.com"};

/* A slice: its pool is (driver, pool-<node>-<p>), one or two slices per pool. */
static json_t *slice(const char *name, unsigned drv, unsigned node, unsigned pool, unsigned part,
                     unsigned count, unsigned ndev, bool dup)
{
  json_t *devs = json_array();
  for (unsigned i = 0; i < ndev; i++) {
    char dn[64];
    snprintf(dn, sizeof dn, "d%u-%u", part, dup ? 0 : i);
    json_array_append_new(devs, json_pack("{s:s,s:{s:{s:i}}}", "name", dn, "attributes", "index",
                                          "int", (int)i));
  }
  char pn[32];
  snprintf(pn, sizeof pn, "pool-%s-%u", NODES[node], pool);
  return json_pack("{s:s,s:{s:s},s:{s:s,s:s,s:{s:s,s:i,s:i},s:o}}", "kind", "ResourceSlice",
                   "metadata", "name", name, "spec", "driver", DRIVERS[drv], "nodeName", NODES[node],
                   "pool", "name", pn, "generation", 1, "resourceSliceCount", (int)count, "devices",
                   devs);
}

typedef struct {
  json_t *keep[MAXOBJ]; /* the final set */
  size_t nkeep;
  json_t *temp[MAXOBJ]; /* applied, then deleted */
  size_t ntemp;
  json_t *bad[4]; /* applies that fail */
  size_t nbad;
} set_t;

static void make_set(set_t *s)
{
  memset(s, 0, sizeof *s);
  unsigned n = 2 + rnd(MAXOBJ - 2);
  char name[32];
  for (unsigned i = 0; i < n; i++) {
    unsigned drv = rnd(2), node = rnd(NNODES), pool = i, ndev = rnd(4);
    snprintf(name, sizeof name, "s%u", i);
    /* A pool of two slices: both parts go into the set. */
    if (rnd(4) == 0 && i + 1 < n) {
      s->keep[s->nkeep++] = slice(name, drv, node, pool, 0, 2, ndev, false);
      snprintf(name, sizeof name, "s%u", ++i);
      s->keep[s->nkeep++] = slice(name, drv, node, pool, 1, 2, rnd(4), false);
      continue;
    }
    s->keep[s->nkeep++] = slice(name, drv, node, pool, 0, 1, ndev, false);
  }
  unsigned t = rnd(4);
  for (unsigned i = 0; i < t; i++) {
    snprintf(name, sizeof name, "t%u", i);
    s->temp[s->ntemp++] = slice(name, rnd(2), rnd(NNODES), 100 + i, 0, 1, rnd(4), false);
  }
  unsigned b = rnd(3);
  for (unsigned i = 0; i < b; i++) {
    snprintf(name, sizeof name, "b%u", i);
    s->bad[s->nbad++] = slice(name, rnd(2), rnd(NNODES), 200 + i, 0, 1, 2, true);
  }
}

static void free_set(set_t *s)
{
  for (size_t i = 0; i < s->nkeep; i++)
    json_decref(s->keep[i]);
  for (size_t i = 0; i < s->ntemp; i++)
    json_decref(s->temp[i]);
  for (size_t i = 0; i < s->nbad; i++)
    json_decref(s->bad[i]);
}

static void apply_ok(sf_cluster_t *c, json_t *o)
{
  char err[SF_ERR_MAX];
  cr_assert_eq(sf_cluster_apply(c, SF_KIND_UNKNOWN, o, err, sizeof err), 0, "%s", err);
}

/* The class and a pending claim for two devices of gpu.example.com, then the pod's verdicts on names[0..n). */
static void verdicts_on(sf_cluster_t *c, const char *const *names, size_t n, sf_verdict_t *v)
{
  static const char *const cls =
      "{\"kind\":\"DeviceClass\",\"metadata\":{\"name\":\"gpu.example.com\"},\"spec\":{\"selectors\":"
      "[{\"cel\":{\"expression\":\"device.driver == 'gpu.example.com'\"}}]}}";
  static const char *const claim =
      "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"c1\",\"namespace\":\"t\"},\"spec\":"
      "{\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":"
      "\"gpu.example.com\",\"count\":2}}]}}}";
  static const char *const pod =
      "{\"metadata\":{\"namespace\":\"t\",\"name\":\"p\",\"uid\":\"u1\"},\"spec\":"
      "{\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimName\":\"c1\"}]}}";
  json_t *a = json_loads(cls, 0, NULL), *b = json_loads(claim, 0, NULL),
         *p = json_loads(pod, 0, NULL);
  apply_ok(c, a);
  apply_ok(c, b);
  char err[SF_ERR_MAX];
  sf_pod_plan_t *plan = NULL;
  cr_assert_eq(sf_cluster_plan(c, p, &plan, err, sizeof err), 0, "%s", err);
  cr_assert_eq(sf_cluster_evaluate(c, plan, names, n, v), 0);
  sf_pod_plan_free(plan);
  json_decref(a);
  json_decref(b);
  json_decref(p);
}

static void verdicts(sf_cluster_t *c, sf_verdict_t *v)
{
  verdicts_on(c, NODES, NNODES + 1, v);
}

/* Applies the set in a random order with transient objects and failing applies mixed in. */
static void shuffled(sf_cluster_t *c, set_t *s)
{
  json_t *order[MAXOBJ];
  size_t n = s->nkeep;
  char err[SF_ERR_MAX];
  memcpy(order, s->keep, n * sizeof *order);
  for (size_t i = n; i > 1; i--) {
    size_t j = rnd((unsigned)i);
    json_t *t = order[i - 1];
    order[i - 1] = order[j];
    order[j] = t;
  }
  size_t nt = 0, nb = 0;
  for (size_t i = 0; i < n; i++) {
    if (nt < s->ntemp && rnd(2))
      apply_ok(c, s->temp[nt++]);
    if (nb < s->nbad && rnd(2)) {
      /* An invalid pool (duplicate device names) is applied and offers nothing; it goes
       * again at once, and must leave no trace. */
      apply_ok(c, s->bad[nb]);
      cr_assert_eq(sf_cluster_delete(c, SF_KIND_UNKNOWN, s->bad[nb++], err, sizeof err), 0, "%s",
                   err);
    }
    apply_ok(c, order[i]);
    /* A transient object goes again; so, now and then, does one of the set, to come back. */
    if (nt && rnd(2))
      cr_assert_eq(sf_cluster_delete(c, SF_KIND_UNKNOWN, s->temp[nt - 1], err, sizeof err), 0, "%s",
                   err);
    if (rnd(4) == 0) {
      cr_assert_eq(sf_cluster_delete(c, SF_KIND_UNKNOWN, order[i], err, sizeof err), 0, "%s", err);
      apply_ok(c, order[i]);
    }
  }
  for (; nt < s->ntemp; nt++)
    apply_ok(c, s->temp[nt]);
  for (size_t i = 0; i < s->ntemp; i++)
    sf_cluster_delete(c, SF_KIND_UNKNOWN, s->temp[i], err, sizeof err);
  for (; nb < s->nbad; nb++) {
    apply_ok(c, s->bad[nb]);
    cr_assert_eq(sf_cluster_delete(c, SF_KIND_UNKNOWN, s->bad[nb], err, sizeof err), 0, "%s", err);
  }
}

static int by_text(const void *a, const void *b)
{
  char *x = json_dumps(*(json_t *const *)a, JSON_COMPACT | JSON_SORT_KEYS);
  char *y = json_dumps(*(json_t *const *)b, JSON_COMPACT | JSON_SORT_KEYS);
  int r = strcmp(x, y);
  free(x);
  free(y);
  return r;
}

static void sort_array(json_t *st, const char *key)
{
  json_t *arr = json_object_get(st, key);
  size_t n = json_array_size(arr);
  json_t **v = calloc(n + 1, sizeof *v), *sorted = json_array();
  for (size_t i = 0; i < n; i++)
    v[i] = json_array_get(arr, i);
  qsort(v, n, sizeof *v, by_text);
  for (size_t i = 0; i < n; i++)
    json_array_append(sorted, v[i]);
  json_object_set_new(st, key, sorted);
  free(v);
}

/* The state with its node and pool lists sorted: their order (node ids, pool slots) is internal. */
static json_t *state(sf_cluster_t *c)
{
  json_t *st = sf_cluster_state_json(c);
  sort_array(st, "nodes");
  sort_array(st, "pools");
  return st;
}

Test(cluster_order, state_and_verdicts_are_a_function_of_the_set)
{
  sf_log_set_verbosity(-1);
  for (uint64_t seed = 1; seed <= 300; seed++) {
    rng = seed;
    set_t s;
    make_set(&s);
    sf_cluster_t *ref = sf_cluster_create(NULL), *got = sf_cluster_create(NULL);
    for (size_t i = 0; i < s.nkeep; i++)
      apply_ok(ref, s.keep[i]);
    shuffled(got, &s);
    char why[256];
    cr_assert_eq(sf_index_validate(sf_cluster_index(got), why, sizeof why), 0, "%s", why);
    json_t *a = state(ref), *b = state(got);
    char *sa = json_dumps(a, JSON_SORT_KEYS | JSON_COMPACT),
         *sb = json_dumps(b, JSON_SORT_KEYS | JSON_COMPACT);
    cr_assert_eq(sf_index_node_count(sf_cluster_index(ref)),
                 sf_index_node_count(sf_cluster_index(got)), "seed %llu: node count\n%s\n%s",
                 (unsigned long long)seed, sa, sb);
    if (!json_equal(a, b)) {
      json_t *na = json_object_get(a, "nodes"), *nb = json_object_get(b, "nodes");
      for (size_t i = 0; i < json_array_size(na); i++)
        if (!json_equal(json_array_get(na, i), json_array_get(nb, i))) {
          char *x = json_dumps(json_array_get(na, i), JSON_COMPACT | JSON_SORT_KEYS);
          char *y = json_dumps(json_array_get(nb, i), JSON_COMPACT | JSON_SORT_KEYS);
          cr_assert_fail("seed %llu: node %zu differs\nin order: %.900s\nshuffled: %.900s",
                         (unsigned long long)seed, i, x, y);
        }
      const char *k;
      json_t *v;
      json_object_foreach(a, k, v) if (!json_equal(v, json_object_get(b, k)))
      {
        char *x = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
        char *y = json_dumps(json_object_get(b, k), JSON_COMPACT | JSON_SORT_KEYS);
        cr_assert_fail("seed %llu: %s differs\nin order: %.900s\nshuffled: %.900s",
                       (unsigned long long)seed, k, x, y);
      }
      cr_assert_fail("seed %llu: the states differ", (unsigned long long)seed);
    }
    sf_verdict_t va[NNODES + 1], vb[NNODES + 1];
    verdicts(ref, va);
    verdicts(got, vb);
    for (int i = 0; i <= NNODES; i++)
      cr_assert_eq(va[i].fit, vb[i].fit, "seed %llu node %s: %s | %s", (unsigned long long)seed,
                   NODES[i], va[i].reason, vb[i].reason);
    free(sa);
    free(sb);
    json_decref(a);
    json_decref(b);
    sf_cluster_destroy(ref);
    sf_cluster_destroy(got);
    free_set(&s);
  }
}

/*
 * sf_cluster_evaluate tries the node it found at each position of the last
 * call's names first (cluster_plan.c, node_at). With nodes going and coming
 * back (their ids freed and reused by other nodes), names reordered,
 * repeated, unknown and in lists of other lengths, every verdict must equal
 * a fresh cluster's for the same objects and names.
 */
Test(cluster_order, names_resolved_again_as_nodes_come_and_go)
{
  sf_log_set_verbosity(-1);
  static const char *const pick[] = {"n0", "n1", "n2", "n3", "n4", "zz"};
  enum { NSLICES = 6, MAXNAMES = 9 };
  json_t *sl[NSLICES];
  bool on[NSLICES] = {false};
  char err[SF_ERR_MAX], name[16];
  for (unsigned k = 0; k < NSLICES; k++) {
    snprintf(name, sizeof name, "s%u", k);
    sl[k] = slice(name, 0, k % NNODES, k, 0, 1, 1 + k % 3, false);
  }
  rng = 7;
  sf_cluster_t *c = sf_cluster_create(NULL);
  size_t reused = 0;
  for (int round = 0; round < 120; round++) {
    unsigned k = rnd(NSLICES);
    if (on[k])
      cr_assert_eq(sf_cluster_delete(c, SF_KIND_UNKNOWN, sl[k], err, sizeof err), 0, "%s", err);
    else
      apply_ok(c, sl[k]);
    on[k] = !on[k];
    const char *names[MAXNAMES];
    size_t n = 1 + rnd(MAXNAMES);
    for (size_t i = 0; i < n; i++)
      names[i] = round % 3 == 0 && i < NNODES + 1 ? NODES[i] : pick[rnd(6)];
    sf_cluster_t *fresh = sf_cluster_create(NULL);
    for (unsigned j = 0; j < NSLICES; j++)
      if (on[j])
        apply_ok(fresh, sl[j]);
    sf_verdict_t got[MAXNAMES], want[MAXNAMES];
    verdicts_on(c, names, n, got);
    verdicts_on(fresh, names, n, want);
    for (size_t i = 0; i < n; i++) {
      cr_assert_eq(got[i].fit, want[i].fit, "round %d, %s at %zu: %s | fresh: %s", round, names[i], i,
                   got[i].reason, want[i].reason);
      cr_assert_str_eq(got[i].reason, want[i].reason, "round %d, %s at %zu", round, names[i], i);
      cr_assert(got[i].raw == want[i].raw, "round %d, %s at %zu: %g | fresh: %g", round, names[i], i,
                got[i].raw, want[i].raw);
    }
    /* Ids are reused: some node's id must at some point have belonged to another. */
    for (int j = 0; j < NNODES; j++) {
      sf_node_id a = sf_index_node_find(sf_cluster_index(c), NODES[j]),
                 b = sf_index_node_find(sf_cluster_index(fresh), NODES[j]);
      reused += a >= 0 && b >= 0 && a != b;
    }
    sf_cluster_destroy(fresh);
  }
  cr_assert_gt(reused, 0, "no node ever changed id: the test does not reach the stale case");
  sf_cluster_destroy(c);
  for (unsigned k = 0; k < NSLICES; k++)
    json_decref(sl[k]);
}

Test(cluster_order, a_node_stays_while_any_pool_lists_it)
{
  /* A device-less slice of another driver keeps n1 present. */
  sf_cluster_t *c = sf_cluster_create(NULL);
  char err[SF_ERR_MAX];
  json_t *empty = slice("b", 1, 1, 0, 0, 1, 0, false), *full = slice("a", 0, 1, 1, 0, 1, 2, false);
  json_t *bad = slice("x", 0, 1, 2, 0, 1, 2, true);
  apply_ok(c, empty);
  apply_ok(c, full);
  cr_assert_eq(sf_cluster_delete(c, SF_KIND_UNKNOWN, full, err, sizeof err), 0, "%s", err);
  cr_assert_geq(sf_index_node_find(sf_cluster_index(c), "n1"), 0, "n1 stays: pool b lists it");
  /* An invalid pool on it, applied and deleted again, leaves it too. */
  apply_ok(c, bad);
  cr_assert_eq(sf_cluster_delete(c, SF_KIND_UNKNOWN, bad, err, sizeof err), 0, "%s", err);
  cr_assert_geq(sf_index_node_find(sf_cluster_index(c), "n1"), 0,
                "n1 stays after an invalid pool came and went");
  cr_assert_eq(sf_cluster_delete(c, SF_KIND_UNKNOWN, empty, err, sizeof err), 0, "%s", err);
  cr_assert_lt(sf_index_node_find(sf_cluster_index(c), "n1"), 0, "and goes with the last pool");
  json_decref(empty);
  json_decref(full);
  json_decref(bad);
  sf_cluster_destroy(c);
}

#if defined(__SANITIZE_ADDRESS__)
/* ASan keeps freed memory in quarantine, so RSS says nothing: count the live heap instead. */
size_t __sanitizer_get_current_allocated_bytes(void); /* libasan's allocator interface */
static long rss_kib(void)
{
  return (long)(__sanitizer_get_current_allocated_bytes() / 1024);
}
#else
static long rss_kib(void)
{
  FILE *f = fopen("/proc/self/statm", "r");
  long pages = 0, rss = 0;
  cr_assert(f && fscanf(f, "%ld %ld", &pages, &rss) == 2);
  fclose(f);
  return rss * 4;
}
#endif

Test(cluster_order, twenty_thousand_distinct_claim_selectors_leave_little_behind)
{
  /* Each claim has its own CEL selector; its pod is planned once, then the claim goes. */
  sf_log_set_verbosity(-1);
  sf_cluster_t *c = sf_cluster_create(NULL);
  char err[SF_ERR_MAX], buf[1024];
  json_t *cls = json_loads("{\"kind\":\"DeviceClass\",\"metadata\":{\"name\":\"gpu.example.com\"},"
                           "\"spec\":{\"selectors\":[{\"cel\":{\"expression\":\"device.driver == "
                           "'gpu.example.com'\"}}]}}",
                           0, NULL);
  apply_ok(c, cls);
  json_t *s = slice("s", 0, 0, 0, 0, 1, 2, false);
  apply_ok(c, s);
  long before = 0;
  for (int i = 0; i < 20000; i++) {
    if (i == 2000)
      before = rss_kib(); /* after the bounded part has filled */
    snprintf(buf, sizeof buf,
             "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"c%d\",\"namespace\":\"t\"},"
             "\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":{"
             "\"deviceClassName\":\"gpu.example.com\",\"selectors\":[{\"cel\":{\"expression\":"
             "\"device.attributes['gpu.example.com'].index == %d || device.driver == 'x%d'\"}}]}}]}}}",
             i, i, i);
    json_t *claim = json_loads(buf, 0, NULL);
    apply_ok(c, claim);
    snprintf(buf, sizeof buf,
             "{\"metadata\":{\"namespace\":\"t\",\"name\":\"p%d\",\"uid\":\"u%d\"},\"spec\":"
             "{\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimName\":\"c%d\"}]}}",
             i, i, i);
    json_t *pod = json_loads(buf, 0, NULL);
    sf_pod_plan_t *plan = NULL;
    cr_assert_eq(sf_cluster_plan(c, pod, &plan, err, sizeof err), 0, "%s", err);
    sf_verdict_t v[NNODES + 1];
    cr_assert_eq(sf_cluster_evaluate(c, plan, NODES, NNODES + 1, v), 0);
    sf_pod_plan_free(plan);
    cr_assert_eq(sf_cluster_delete(c, SF_KIND_UNKNOWN, claim, err, sizeof err), 0, "%s", err);
    json_decref(claim);
    json_decref(pod);
  }
  long grown = rss_kib() - before;
  /* Unbounded, the 18,000 later programs alone took about 30 MB. */
  cr_assert_lt(grown, 8 * 1024, "RSS grew %ld KiB over 18,000 selectors", grown);
  json_decref(cls);
  json_decref(s);
  sf_cluster_destroy(c);
}
