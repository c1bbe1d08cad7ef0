/*
 * List-type attributes (DRAListTypeAttributes) in constraints: a scalar is
 * a list of one, elements compare by type and text (index_int.h). Reads
 * attribute values only, no index state.
 */
#include <stdio.h>
#include <string.h>
#include "index_int.h"

/* The k-th element of attribute a as "T:text" into buf; false past the last. */
static bool attr_elem(const sf_attr_t *a, size_t k, char *buf, size_t len)
{
  static const char tag[] = {0, 'i', 'b', 's', 'v'};
  if (a->type == SF_ATTR_UNKNOWN)
    return false;
  if (a->type != SF_ATTR_LIST) {
    if (k > 0)
      return false;
    if (a->type == SF_ATTR_INT || a->type == SF_ATTR_BOOL)
      snprintf(buf, len, "%c:%lld", tag[a->type], (long long)a->i);
    else
      snprintf(buf, len, "%c:%s", tag[a->type], a->s ? a->s : "");
    return true;
  }
  const char *e = a->s;
  for (size_t i = 0; i < k && e != NULL; i++) {
    e = strchr(e, '\x1e');
    e = e ? e + 1 : NULL;
  }
  if (e == NULL || *e == '\0')
    return false;
  size_t n = strcspn(e, "\x1e");
  if (n >= len)
    n = len - 1;
  memcpy(buf, e, n);
  buf[n] = '\0';
  return true;
}

static bool attr_has(const sf_attr_t *a, const char *elem)
{
  char buf[SF__ELEM_MAX];
  for (size_t k = 0; attr_elem(a, k, buf, sizeof(buf)); k++)
    if (strcmp(buf, elem) == 0)
      return true;
  return false;
}

bool sf__attrs_match(const sf_attr_t *const *vals, uint32_t n, const sf_attr_t *a)
{
  char buf[SF__ELEM_MAX];
  for (size_t k = 0; attr_elem(a, k, buf, sizeof(buf)); k++) {
    bool all = true;
    for (uint32_t j = 0; j < n && all; j++)
      all = attr_has(vals[j], buf);
    if (all)
      return true;
  }
  return false;
}

bool sf__attrs_distinct(const sf_attr_t *const *vals, uint32_t n, const sf_attr_t *a)
{
  char buf[SF__ELEM_MAX];
  for (size_t k = 0; attr_elem(a, k, buf, sizeof(buf)); k++)
    for (uint32_t j = 0; j < n; j++)
      if (attr_has(vals[j], buf))
        return false;
  return true;
}
