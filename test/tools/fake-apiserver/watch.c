/* fake-apiserver's watches: chunked streams of WatchEvents, bookmarks, watch-list, and the
 * faults injected into them. */
#define _GNU_SOURCE
#include "fake.h"

/* ---- watches ---- */

typedef struct {
  target_t t;
  size_t logpos;
  char *out;
  size_t outlen, outoff;
  bool end_after, drop_after, drop_armed, trunc_armed, header_sent;
  unsigned long drop_gen, close_gen, bookmark_gen, expire_gen, trunc_gen;
  int split_left, stall_ms;
  time_t deadline;
} watch_t;

static void emit(watch_t *wt, const char *type, json_t *obj)
{
  json_t *o = obj;
  if (wt->t.table) {
    json_t *one = json_pack("[O]", obj);
    o = fk_table_of(one, !wt->header_sent);
    json_decref(one);
    wt->header_sent = true;
  } else {
    json_incref(o);
  }
  json_t *ev = json_pack("{s:s, s:o}", "type", type, "object", o);
  char *s = json_dumps(ev, JSON_COMPACT);
  json_decref(ev);
  free(wt->out);
  wt->out = fk_fmt("%s\n", s);
  free(s);
  wt->outlen = strlen(wt->out);
  wt->outoff = 0;
  if (fk_S.split_left > 0) {
    fk_S.split_left--;
    wt->split_left = (int)wt->outlen;
  }
}

static void emit_bookmark(watch_t *wt, bool initial_end)
{
  char rv[32];
  snprintf(rv, sizeof rv, "%llu", fk_S.rv);
  json_t *o = json_pack("{s:s, s:s, s:{s:s}}", "kind", fk_RES[wt->t.res].kind, "apiVersion",
                        fk_RES[wt->t.res].gv, "metadata", "resourceVersion", rv);
  if (initial_end)
    json_object_set_new(json_object_get(o, "metadata"), "annotations",
                        json_pack("{s:s}", "k8s.io/initial-events-end", "true"));
  emit(wt, "BOOKMARK", o);
  json_decref(o);
}

static void emit_expired(watch_t *wt, const char *msg)
{
  json_t *st = fk_status_obj(410, "Expired", msg);
  emit(wt, "ERROR", st);
  json_decref(st);
  wt->end_after = true;
}

/* Puts the next output of a watch in wt->out; false when there is none yet (fk_S.mu held). */
static bool next_output(watch_t *wt)
{
  if (fk_S.hang && !fk_S.shutting)
    return false;
  if (fk_S.trunc_gen != wt->trunc_gen) {
    wt->trunc_gen = fk_S.trunc_gen;
    wt->trunc_armed = true;
  }
  if (fk_S.shutting || time(NULL) >= wt->deadline || fk_S.close_gen != wt->close_gen) {
    wt->end_after = true;
    return true;
  }
  if (fk_S.expire_gen != wt->expire_gen) {
    emit_expired(wt, "too old resource version (expired by the test)");
    return true;
  }
  if (fk_S.drop_gen != wt->drop_gen) {
    fk_S.nwatches++;
    wt->drop_gen = fk_S.drop_gen;
    wt->drop_armed = true;
  }
  if (fk_S.bookmark_gen != wt->bookmark_gen) {
    wt->bookmark_gen++;
    emit_bookmark(wt, false);
    return true;
  }
  for (; wt->logpos < fk_S.nlog; wt->logpos++) {
    event_t *e = &fk_S.log[wt->logpos];
    if (e->res != wt->t.res)
      continue;
    /* As kube-apiserver's watch cache: an object that starts matching the selector is ADDED,
     * one that stops is DELETED (its previous content, at the event's resourceVersion). */
    bool now = fk_match_obj(&wt->t, e->obj), before = e->prev && fk_match_obj(&wt->t, e->prev);
    if (!now && !before)
      continue;
    if (!strcmp(e->type, "MODIFIED") && now != before) {
      json_t *o = now ? json_incref(e->obj) : json_deep_copy(e->prev);
      if (!now)
        json_object_set(json_object_get(o, "metadata"), "resourceVersion",
                        json_object_get(json_object_get(e->obj, "metadata"), "resourceVersion"));
      emit(wt, now ? "ADDED" : "DELETED", o);
      json_decref(o);
    } else {
      emit(wt, e->type, e->obj);
    }
    wt->logpos++;
    if (wt->trunc_armed) {
      wt->trunc_armed = false;
      wt->outlen /= 2;
      wt->out[wt->outlen++] = '\n';
    }
    if (wt->drop_armed) {
      wt->outlen /= 2;
      wt->drop_after = true;
    }
    return true;
  }
  return false;
}

static ssize_t watch_read(void *cls, uint64_t pos, char *buf, size_t max)
{
  watch_t *wt = cls;
  (void)pos;
  if (wt->stall_ms) {
    usleep((useconds_t)wt->stall_ms * 1000);
    wt->stall_ms = 0;
  }
  pthread_mutex_lock(&fk_S.mu);
  while (wt->outoff == wt->outlen) {
    if (wt->end_after || wt->drop_after) {
      pthread_mutex_unlock(&fk_S.mu);
      return wt->drop_after ? MHD_CONTENT_READER_END_WITH_ERROR : MHD_CONTENT_READER_END_OF_STREAM;
    }
    if (next_output(wt))
      continue;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 100 * 1000 * 1000;
    if (ts.tv_nsec >= 1000000000) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&fk_S.cv, &fk_S.mu, &ts);
  }
  size_t n = wt->outlen - wt->outoff;
  bool split = wt->split_left > 0;
  if (split) {
    n = 1;
    wt->split_left--;
  }
  if (n > max)
    n = max;
  memcpy(buf, wt->out + wt->outoff, n);
  wt->outoff += n;
  pthread_mutex_unlock(&fk_S.mu);
  if (split)
    usleep(100);
  return (ssize_t)n;
}

static void watch_free(void *cls)
{
  watch_t *wt = cls;
  pthread_mutex_lock(&fk_S.mu);
  fk_S.nwatches--;
  pthread_mutex_unlock(&fk_S.mu);
  free(wt->out);
  free(wt);
}

/* The initial events (old behaviour or watch-list) go out as one block. */
static void initial_events(watch_t *wt, bool watch_list)
{
  char *all = NULL;
  size_t len = 0;
  int split = fk_S.split_left;
  FILE *f = open_memstream(&all, &len);
  const char *k;
  json_t *o;
  json_object_foreach(fk_S.store[wt->t.res], k, o)
  {
    if (!fk_match_obj(&wt->t, o))
      continue;
    emit(wt, "ADDED", o);
    fwrite(wt->out, 1, wt->outlen, f);
  }
  if (watch_list) {
    emit_bookmark(wt, true);
    fwrite(wt->out, 1, wt->outlen, f);
  }
  fclose(f);
  free(wt->out);
  wt->out = all;
  wt->outlen = len;
  wt->outoff = 0;
  wt->split_left = 0;
  fk_S.split_left = split;
}

/* Where a watch from `rv` starts in the log; false when rv is compacted away. */
static bool start_at(watch_t *wt, unsigned long long rv)
{
  if (rv < fk_S.compacted)
    return false;
  size_t lo = 0, hi = fk_S.nlog;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (fk_S.log[mid].rv <= rv)
      lo = mid + 1;
    else
      hi = mid;
  }
  wt->logpos = lo;
  return true;
}

enum MHD_Result fk_watch(struct MHD_Connection *c, const target_t *t)
{
  const char *rvs = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "resourceVersion");
  const char *sie = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "sendInitialEvents");
  const char *rvm = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "resourceVersionMatch");
  const char *tos = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "timeoutSeconds");
  pthread_mutex_lock(&fk_S.mu);
  bool ignore = fk_S.ignore_watch_list;
  pthread_mutex_unlock(&fk_S.mu);
  bool watch_list = sie && !strcmp(sie, "true") && !ignore;
  if (watch_list && (!rvm || strcmp(rvm, "NotOlderThan")))
    return fk_send_status(c, 422, "Invalid",
                          "sendInitialEvents requires resourceVersionMatch=NotOlderThan", 0);
  watch_t *wt = calloc(1, sizeof *wt);
  wt->t = *t;
  wt->deadline = time(NULL) + (tos ? atol(tos) : 1800);
  pthread_mutex_lock(&fk_S.mu);
  if (watch_list && fk_S.no_watch_list) {
    pthread_mutex_unlock(&fk_S.mu);
    free(wt);
    return fk_send_status(
        c, 422, "Invalid",
        "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled", 0);
  }
  fk_S.nwatches++;
  wt->drop_gen = fk_S.drop_gen;
  wt->close_gen = fk_S.close_gen;
  wt->bookmark_gen = fk_S.bookmark_gen;
  wt->expire_gen = fk_S.expire_gen;
  wt->trunc_gen = fk_S.trunc_gen;
  if (fk_S.stall_res < 0) { /* a stall for one resource's list is not a watch's */
    wt->stall_ms = fk_S.stall_ms;
    fk_S.stall_ms = 0;
  }
  unsigned long long rv = rvs && *rvs ? strtoull(rvs, NULL, 10) : 0;
  if (watch_list || rv == 0) {
    wt->logpos = fk_S.nlog;
    initial_events(wt, watch_list);
  } else if (!start_at(wt, rv)) {
    char *msg = fk_fmt("too old resource version: %llu (%llu)", rv, fk_S.compacted);
    emit_expired(wt, msg);
    free(msg);
  }
  pthread_mutex_unlock(&fk_S.mu);
  struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, watch_read,
                                                             wt, watch_free);
  MHD_add_response_header(r, "Content-Type", "application/json");
  MHD_add_response_header(r, "Cache-Control", "no-cache, private");
  enum MHD_Result ret = MHD_queue_response(c, 200, r);
  MHD_destroy_response(r);
  return ret;
}
