/*
 * Defragmentation plans carried out (--defrag-evict): a claim pending
 * longer than --defrag-after gets the plan GET /debug/defrag shows, and the
 * plan's pods are evicted through the Eviction API (POST
 * .../pods/NAME/eviction), so PodDisruptionBudgets hold: one eviction at a
 * time, the next only once the API accepted the last; a refused eviction
 * (429 from a budget, or any other error) ends the plan there, logged with
 * the API's message. At most the policy's defrag_max_per_hour plans start in
 * any hour. Everything runs on the loop; the requests go through apiwatch's
 * libcurl multi handle and never block it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ext_int.h"
#include "slicefit/apiwatch.h"
#include "slicefit/cluster_defrag.h"
#include "slicefit/log.h"

#define HOUR_MS 3600000u

struct sf__defrag {
  sf_cluster_t *cluster;
  sf_apiwatch_t *w;
  json_t *tried;    /* claim -> when it was last planned for (s) */
  json_t *plan;     /* the plan under way, or NULL */
  size_t next;      /* its next eviction */
  uint64_t *starts; /* loop ms the plans of the last hour started, oldest first */
  size_t nstarts, capstarts;
  sf__defrag_stats_t st;
};

sf__defrag_t *sf__defrag_create(sf_cluster_t *cluster, sf_apiwatch_t *w, int64_t after_s)
{
  sf__defrag_t *r = sf_xcalloc(1, sizeof *r);
  r->cluster = cluster;
  r->w = w;
  r->tried = json_object();
  r->st.enabled = true;
  r->st.after_s = after_s;
  return r;
}

void sf__defrag_destroy(sf__defrag_t *r)
{
  if (r == NULL)
    return;
  json_decref(r->tried);
  json_decref(r->plan);
  free(r->starts);
  free(r);
}

const sf__defrag_stats_t *sf__defrag_stats(const sf__defrag_t *r)
{
  return &r->st;
}

static const char *str(const json_t *o, const char *k)
{
  const char *s = json_string_value(json_object_get(o, k));
  return s ? s : "";
}

static void plan_end(sf__defrag_t *r)
{
  json_decref(r->plan);
  r->plan = NULL;
}

static sf__abort_t abort_reason(long status)
{
  return status == 429                    ? SF__ABORT_BUDGET
         : status == 401 || status == 403 ? SF__ABORT_FORBIDDEN
         : status == 404                  ? SF__ABORT_NOT_FOUND
         : status >= 500                  ? SF__ABORT_SERVER
         : status == 0                    ? SF__ABORT_UNREACHABLE
                                          : SF__ABORT_OTHER;
}

/* The API's words for a refusal: a Status's message, else the body itself (cut). */
static void api_message(const char *body, size_t len, char *out, size_t cap)
{
  json_t *st = json_loadb(body, len, 0, NULL);
  const char *msg = json_string_value(json_object_get(st, "message"));
  snprintf(out, cap, "%.*s", msg ? 400 : (int)(len < 400 ? len : 400), msg ? msg : body);
  json_decref(st);
}

static void evict_next(sf__defrag_t *r);

static void on_evicted(void *ud, long status, const char *body, size_t len)
{
  sf__defrag_t *r = ud;
  const json_t *e = json_array_get(json_object_get(r->plan, "evictions"), r->next);
  char pod[600], msg[512], q[1100];
  snprintf(pod, sizeof pod, "%s/%s", str(e, "namespace"), str(e, "name"));
  if (status == 200 || status == 201) {
    r->st.evicted++;
    sf_log_info("pod evicted", "pod=\"%s\" claim=\"%s\" node=\"%s\" to_node=\"%s\"", pod,
                str(r->plan, "claim"), str(r->plan, "node"), str(e, "to_node"));
    r->next++;
    evict_next(r);
    return;
  }
  sf__abort_t why = abort_reason(status);
  r->st.aborted[why]++;
  api_message(body, len, msg, sizeof msg);
  sf_log_warn("eviction refused; the rest of the defragmentation plan is not carried out",
              "pod=\"%s\" claim=\"%s\" status=%ld evicted=%zu left=%zu message=%s", pod,
              str(r->plan, "claim"), status, r->next,
              json_array_size(json_object_get(r->plan, "evictions")) - r->next,
              sf_log_quote(q, sizeof q, msg));
  plan_end(r);
}

static void evict_next(sf__defrag_t *r)
{
  const json_t *ev = json_object_get(r->plan, "evictions"), *e = json_array_get(ev, r->next);
  if (e == NULL) {
    r->st.carried_out++;
    sf_log_info("defragmentation plan carried out", "claim=\"%s\" node=\"%s\" evicted=%zu",
                str(r->plan, "claim"), str(r->plan, "node"), r->next);
    plan_end(r);
    return;
  }
  char path[1200];
  snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s/eviction", str(e, "namespace"),
           str(e, "name"));
  json_t *body = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "policy/v1", "kind", "Eviction",
                           "metadata", "name", str(e, "name"), "namespace", str(e, "namespace"));
  char *text = json_dumps(body, JSON_COMPACT);
  int rc = sf_apiwatch_request(r->w, "POST", path, text, on_evicted, r);
  free(text);
  json_decref(body);
  if (rc != 0) {
    static const char why[] = "the API server cannot be asked now";
    on_evicted(r, 0, why, sizeof why - 1);
  }
}

/* The pending claim waiting longest past after_s and not tried in the last after_s, or NULL. */
static const char *candidate(sf__defrag_t *r, const json_t *pending, int64_t now_s)
{
  const char *best = NULL, *k;
  int64_t oldest = 0;
  json_t *v;
  void *tmp;
  json_object_foreach_safe(r->tried, tmp, k, v) if (!json_object_get(pending, k) ||
                                                    json_integer_value(v) + r->st.after_s <= now_s)
      json_object_del(r->tried, k);
  json_object_foreach((json_t *)(uintptr_t)pending, k, v)
  {
    int64_t created = json_integer_value(v);
    if (created <= 0 || now_s - created <= r->st.after_s || json_object_get(r->tried, k))
      continue;
    if (best == NULL || created < oldest || (created == oldest && strcmp(k, best) < 0)) {
      best = k;
      oldest = created;
    }
  }
  return best;
}

/* Forgets the starts older than an hour; true when another plan may start now. */
static bool under_limit(sf__defrag_t *r, uint64_t now_ms)
{
  size_t old = 0;
  while (old < r->nstarts && now_ms - r->starts[old] >= HOUR_MS)
    old++;
  if (old > 0) {
    memmove(r->starts, r->starts + old, (r->nstarts - old) * sizeof *r->starts);
    r->nstarts -= old;
  }
  return r->nstarts < sf_cluster_policy(r->cluster)->defrag_max_per_hour;
}

void sf__defrag_tick(sf__defrag_t *r, const json_t *pending, int64_t now_s, uint64_t now_ms)
{
  if (r->plan != NULL)
    return;
  const char *claim = candidate(r, pending, now_s);
  if (claim == NULL)
    return;
  if (!under_limit(r, now_ms)) {
    r->st.over_limit++;
    sf_log_vinfo(2, "defragmentation held back: the hourly limit is reached",
                 "claim=\"%s\" defrag_max_per_hour=%u", claim,
                 sf_cluster_policy(r->cluster)->defrag_max_per_hour);
    return;
  }
  json_object_set_new(r->tried, claim, json_integer(now_s));
  json_t *a = sf_cluster_defrag_live(r->cluster, claim, now_s);
  char q[1100];
  if (strcmp(str(a, "outcome"), "found") != 0) {
    r->st.no_plan++;
    sf_log_vinfo(2, "no defragmentation plan", "claim=\"%s\" outcome=%s why=%s", claim,
                 str(a, "outcome"), sf_log_quote(q, sizeof q, str(a, "why")));
    json_decref(a);
    return;
  }
  r->st.found++;
  sf_xgrow(&r->starts, &r->capstarts, r->nstarts + 1, sizeof *r->starts);
  r->starts[r->nstarts++] = now_ms;
  sf_log_info("carrying out a defragmentation plan", "claim=\"%s\" node=\"%s\" evictions=%zu why=%s",
              claim, str(a, "node"), json_array_size(json_object_get(a, "evictions")),
              sf_log_quote(q, sizeof q, str(a, "why")));
  r->plan = a;
  r->next = 0;
  evict_next(r);
}
