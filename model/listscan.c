/*
 * A List read item by item (listscan.h). One pass over the bytes with a
 * small state: whether a string is open (and after its backslash), the
 * bracket depth, and at depth 1 the root member being read. The root's
 * "items" array sits at depth 2; an element there starts at its first
 * byte and ends when the depth comes back to 2 (an object or array), at
 * its closing quote (a string), or before the next separator (a scalar).
 * Element bytes go to `item`, every other byte of the root but the
 * separators between elements to `rest`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "slicefit/common.h"
#include "slicefit/listscan.h"

#define MAX_DEFAULT ((size_t)64 << 20)

/* Between elements of items: after '[' (an element or ']'), after an element, after ','. */
enum { SEP_OPEN = 0, SEP_AFTER, SEP_COMMA };

void sf_listscan_init(sf_listscan_t *s, size_t max_bytes)
{
  *s = (sf_listscan_t){.max = max_bytes ? max_bytes : MAX_DEFAULT};
}

void sf_listscan_dispose(sf_listscan_t *s)
{
  free(s->item);
  free(s->rest);
  *s = (sf_listscan_t){0};
}

static int put(char **p, size_t *len, size_t *cap, size_t max, char ch)
{
  if (*len + 1 > max)
    return SF_E2BIG;
  if (*len + 2 > *cap)
    sf_xgrow(p, cap, *len + 2, 1);
  (*p)[(*len)++] = ch;
  return 0;
}

#define PUT_ITEM(s, ch) put(&(s)->item, &(s)->ilen, &(s)->icap, (s)->max, (ch))
#define PUT_REST(s, ch) put(&(s)->rest, &(s)->rlen, &(s)->rcap, (s)->max, (ch))

static int emit(sf_listscan_t *s, sf_listscan_item_fn fn, void *ud)
{
  s->item[s->ilen] = '\0';
  int rc = fn(ud, s->item, s->ilen);
  s->ilen = 0;
  s->elem = 0;
  s->sep = SEP_AFTER;
  s->items++;
  return rc;
}

static bool is_ws(char ch)
{
  return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

/* A byte inside a string. */
static int in_string(sf_listscan_t *s, char ch, sf_listscan_item_fn fn, void *ud)
{
  int rc = s->elem ? PUT_ITEM(s, ch) : PUT_REST(s, ch);
  if (rc)
    return rc;
  if (s->esc) {
    s->esc = false;
  } else if (ch == '\\') {
    s->esc = true;
  } else if (ch == '"') {
    s->in_str = false;
    s->in_key = false;
    if (s->elem == '"' && s->depth == 2)
      return emit(s, fn, ud);
    return 0;
  }
  if (s->in_key && ch != '"') {
    if (s->klen < sizeof s->key)
      s->key[s->klen] = ch;
    s->klen++;
  }
  return 0;
}

/* A byte between the elements of items. */
static int between(sf_listscan_t *s, char ch)
{
  if (is_ws(ch))
    return 0;
  if (ch == ',') {
    if (s->sep != SEP_AFTER)
      return SF_EINVAL;
    s->sep = SEP_COMMA;
    return 0;
  }
  if (ch == ']') {
    if (s->sep == SEP_COMMA)
      return SF_EINVAL;
    s->depth = 1;
    s->in_items = false;
    return PUT_REST(s, ch);
  }
  if (s->sep == SEP_AFTER)
    return SF_EINVAL;
  s->elem = ch == '{' || ch == '[' || ch == '"' ? (uint8_t)ch : 's';
  if (ch == '{' || ch == '[')
    s->depth++;
  s->in_str = ch == '"';
  return PUT_ITEM(s, ch);
}

/* A byte outside strings, inside the root. */
static int structure(sf_listscan_t *s, char ch, sf_listscan_item_fn fn, void *ud)
{
  switch (ch) {
  case '"':
    s->in_str = true;
    s->in_key = s->depth == 1 && s->want_key;
    s->klen = 0;
    break;
  case '{':
  case '[':
    if (s->depth >= SF_LISTSCAN_MAX_DEPTH)
      return SF_EINVAL;
    s->depth++;
    if (ch == '[' && s->depth == 2 && s->key_items && !s->elem) {
      s->in_items = true;
      s->sep = SEP_OPEN;
      return PUT_REST(s, ch);
    }
    break;
  case '}':
  case ']': {
    s->depth--;
    int rc = s->elem ? PUT_ITEM(s, ch) : PUT_REST(s, ch);
    if (rc == 0 && s->elem && s->depth == 2)
      rc = emit(s, fn, ud);
    s->ended = s->depth == 0;
    return rc;
  }
  case ':':
    if (s->depth == 1) {
      s->want_key = false;
      s->key_items = s->klen == 5 && memcmp(s->key, "items", 5) == 0;
    }
    break;
  case ',':
    if (s->depth == 1) {
      s->want_key = true;
      s->key_items = false;
    }
    break;
  default: break;
  }
  return s->elem ? PUT_ITEM(s, ch) : PUT_REST(s, ch);
}

static int step(sf_listscan_t *s, char ch, sf_listscan_item_fn fn, void *ud)
{
  if (s->in_str)
    return in_string(s, ch, fn, ud);
  if (!s->started || s->ended) {
    if (is_ws(ch))
      return 0;
    if (s->ended || ch != '{')
      return SF_EINVAL;
    s->started = s->want_key = true;
    s->depth = 1;
    return PUT_REST(s, ch);
  }
  if (s->elem == 's') { /* a scalar element ends before the next separator */
    if (!is_ws(ch) && ch != ',' && ch != ']')
      return PUT_ITEM(s, ch);
    int rc = emit(s, fn, ud);
    return rc ? rc : between(s, ch);
  }
  if (s->in_items && s->depth == 2 && !s->elem)
    return between(s, ch);
  return structure(s, ch, fn, ud);
}

/* Bytes that change the state inside an object or array element outside strings. */
static bool structural(char ch)
{
  return ch == '"' || ch == '{' || ch == '}' || ch == '[' || ch == ']';
}

/*
 * Inside an object or array element (most of a list's bytes), the run up to
 * the next byte that can change the state (a quote or backslash in a
 * string, a quote or bracket outside) is copied at once: a byte at a time,
 * the scan cost a third of jansson's parse of the items.
 */
static size_t plain_run(const sf_listscan_t *s, const char *p, size_t len)
{
  size_t j = 0;
  if (s->elem != '{' && s->elem != '[')
    return 0;
  if (s->in_str) {
    if (!s->esc)
      while (j < len && p[j] != '"' && p[j] != '\\')
        j++;
  } else {
    while (j < len && !structural(p[j]))
      j++;
  }
  return j;
}

int sf_listscan_feed(sf_listscan_t *s, const char *data, size_t len, sf_listscan_item_fn fn, void *ud)
{
  for (size_t i = 0; i < len;) {
    size_t run = plain_run(s, data + i, len - i);
    if (run) {
      if (s->ilen + run + 1 > s->max)
        return SF_E2BIG;
      sf_xgrow(&s->item, &s->icap, s->ilen + run + 1, 1);
      memcpy(s->item + s->ilen, data + i, run);
      s->ilen += run;
      i += run;
      continue;
    }
    int rc = step(s, data[i++], fn, ud);
    if (rc)
      return rc;
  }
  return 0;
}

json_t *sf_listscan_finish(sf_listscan_t *s, char *err, size_t errlen)
{
  if (!s->ended) {
    snprintf(err, errlen, "the list ended before its root object closed");
    return NULL;
  }
  json_error_t je;
  json_t *root = json_loadb(s->rest, s->rlen, 0, &je);
  if (root == NULL)
    snprintf(err, errlen, "malformed list: %s", je.text);
  return root;
}
