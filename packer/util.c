/*
 * Error text and the allocation family. Allocation failure aborts (see
 * common.h): the core stays free of I/O, so nothing is printed here.
 */
#include <stdlib.h>
#include <string.h>
#include "slicefit/common.h"
#include "packer_int.h"

const char *sf_strerror(int err)
{
  switch (err) {
  case 0: return "success";
  case SF_EINVAL: return "invalid argument";
  case SF_ENOENT: return "no such object";
  case SF_EEXIST: return "object already exists";
  case SF_ENOSPC: return "not enough capacity";
  case SF_ERANGE: return "value out of range";
  case SF_EBUSY: return "object in use";
  case SF_E2BIG: return "input too large";
  default: return "unknown error";
  }
}

void sf__free_each(void *const *ptrs, size_t n)
{
  for (size_t i = 0; i < n; i++)
    free(ptrs[i]);
}

void *sf_xmalloc(size_t n)
{
  void *p = malloc(n ? n : 1);
  if (p == NULL)
    abort();
  return p;
}

void *sf_xcalloc(size_t count, size_t size)
{
  void *p = calloc(count ? count : 1, size ? size : 1);
  if (p == NULL)
    abort();
  return p;
}

void *sf_xrealloc(void *p, size_t n)
{
  void *q = realloc(p, n ? n : 1);
  if (q == NULL)
    abort();
  return q;
}

char *sf_xstrdup(const char *s)
{
  size_t n = strlen(s) + 1;
  return memcpy(sf_xmalloc(n), s, n);
}

void sf_xgrow(void *pp, size_t *cap, size_t need, size_t size)
{
  void **p = pp;
  size_t c = *cap;
  if (need <= c)
    return;
  if (c < 8)
    c = 8;
  while (c < need) {
    if (c > SIZE_MAX / 2 / size)
      abort();
    c *= 2;
  }
  *p = sf_xrealloc(*p, c * size);
  *cap = c;
}
