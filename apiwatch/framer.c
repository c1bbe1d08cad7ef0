/*
 * The watch stream framer. The API server writes one JSON object per event,
 * each followed by a newline, but HTTP chunk (and TCP read) boundaries fall
 * anywhere, so the framer finds where each object ends by scanning strings
 * and nesting. It does not validate JSON: jansson does that on the framed
 * bytes. The bytes are untrusted; the only state carried between calls is
 * the partial event, the nesting depth with a bit per level for '[' or '{'
 * (so that a bracket closed by a brace is an error, not an event's end),
 * and the string/escape flags.
 *
 * An event wholly inside one call's data is returned in place, without a
 * copy; a partial one is kept in buf and completed by the next calls.
 *
 * The API server writes each event compactly on one line, so a line break
 * inside an event (where JSON allows none but whitespace, and a real
 * encoder writes none) means the event was cut short: the framer drops it,
 * counts it in `truncated`, and starts afresh after the line break, so
 * that one broken event cannot swallow the ones after it.
 */
#include <string.h>
#include "slicefit/apiwatch.h"

void sf_framer_init(sf_framer_t *f, size_t max_event)
{
  memset(f, 0, sizeof *f);
  f->max = max_event ? max_event : (size_t)64 << 20;
}

void sf_framer_dispose(sf_framer_t *f)
{
  free(f->buf);
  f->buf = NULL;
  f->len = f->cap = 0;
}

void sf_framer_reset(sf_framer_t *f)
{
  f->len = 0;
  f->depth = 0;
  f->in_str = f->esc = f->emitted = false;
}

bool sf_framer_pending(const sf_framer_t *f)
{
  return !f->emitted && f->len > 0;
}

static bool is_space(char c)
{
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

#define CUT (-1000) /* scan: a line break inside the event; f->cut is where the next line starts */

/*
 * Scans data[from, len) in the current state; returns the index one past the
 * closing brace of the event, 0 when the data ends first, or SF_EINVAL.
 */
static long scan(sf_framer_t *f, const char *data, size_t from, size_t len)
{
  for (size_t i = from; i < len; i++) {
    char c = data[i];
    if (c == '\n') {
      f->cut = i + 1;
      return CUT;
    }
    if (f->in_str) {
      if (f->esc)
        f->esc = false;
      else if (c == '\\')
        f->esc = true;
      else if (c == '"')
        f->in_str = false;
    } else if (c == '"') {
      f->in_str = true;
    } else if (c == '{' || c == '[') {
      if (f->depth == SF_FRAMER_MAX_DEPTH)
        return SF_EINVAL;
      uint8_t bit = (uint8_t)(1u << (f->depth % 8));
      if (c == '[')
        f->open[f->depth / 8] |= bit;
      else
        f->open[f->depth / 8] &= (uint8_t)~bit;
      f->depth++;
    } else if (c == '}' || c == ']') {
      f->depth--;
      bool bracket = f->open[f->depth / 8] >> (f->depth % 8) & 1;
      if (bracket != (c == ']'))
        return SF_EINVAL;
      if (f->depth == 0)
        return (long)(i + 1);
    }
  }
  return 0;
}

static int keep(sf_framer_t *f, const char *data, size_t n)
{
  if (f->len + n > f->max)
    return SF_E2BIG;
  sf_xgrow(&f->buf, &f->cap, f->len + n, 1);
  memcpy(f->buf + f->len, data, n);
  f->len += n;
  return 0;
}

long sf_framer_feed(sf_framer_t *f, const char *data, size_t len, const char **ev, size_t *evlen)
{
  *ev = NULL;
  *evlen = 0;
  if (f->emitted)
    sf_framer_reset(f);
  size_t i = 0;
  if (f->depth == 0) {
    while (i < len && is_space(data[i]))
      i++;
    if (i == len)
      return (long)i;
    if (data[i] != '{')
      return SF_EINVAL;
  }
  size_t start = i;
  long end = scan(f, data, i, len);
  if (end == CUT) {
    f->truncated++;
    sf_framer_reset(f);
    return (long)f->cut;
  }
  if (end < 0)
    return end;
  size_t stop = end ? (size_t)end : len;
  if (f->len + (stop - start) > f->max)
    return SF_E2BIG;
  if (end && f->len == 0) {
    *ev = data + start;
    *evlen = stop - start;
    return end;
  }
  int rc = keep(f, data + start, stop - start);
  if (rc)
    return rc;
  if (end) {
    f->emitted = true;
    *ev = f->buf;
    *evlen = f->len;
  }
  return (long)stop;
}
