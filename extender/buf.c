/* A growable text buffer for replies and metrics (see ext_int.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ext_int.h"

void sf__buf_reserve(sf__buf_t *b, size_t more)
{
  if (b->len + more + 1 > b->cap)
    sf_xgrow(&b->p, &b->cap, b->len + more + 1, 1);
}

void sf__buf_put(sf__buf_t *b, const char *s, size_t n)
{
  sf__buf_reserve(b, n);
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

void sf__buf_puts(sf__buf_t *b, const char *s)
{
  sf__buf_put(b, s, strlen(s));
}

void sf__buf_printf(sf__buf_t *b, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n <= 0)
    return;
  sf__buf_reserve(b, (size_t)n);
  va_start(ap, fmt);
  vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

#define ROW0 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
#define ROW1 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1
const unsigned char sf__json_plain[256] = {ROW0, ROW0, /* 0x00-0x1f */
                                           1,    1,    0,    1,    1,    1,    1,    1,    1,
                                           1,    1,    1,    1,    1,    1,    1, /* 0x20-0x2f: '"' */
                                           ROW1, ROW1,                            /* 0x30-0x4f */
                                           1,    1,    1,    1,    1,    1,    1,    1,    1,
                                           1,    1,    1,    0,    1,    1,    1, /* 0x50-0x5f: '\\' */
                                           ROW1, ROW1, ROW1, ROW1, ROW1, ROW1, ROW1, ROW1, ROW1,
                                           ROW1}; /* 0x60-0xff */
#undef ROW0
#undef ROW1

void sf__buf_json_str(sf__buf_t *b, const char *s)
{
  static const char hex[] = "0123456789abcdef";
  size_t n = strlen(s);
  sf__buf_reserve(b, n * 6 + 2); /* the worst case: every byte a \u00XX escape */
  char *o = b->p + b->len;
  *o++ = '"';
  const unsigned char *u = (const unsigned char *)s, *run = u;
  for (;; u++) {
    if (sf__json_plain[*u])
      continue;
    memcpy(o, run, (size_t)(u - run)); /* the plain bytes before this one, at once */
    o += u - run;
    run = u + 1;
    if (*u == '\0')
      break;
    if (*u == '"' || *u == '\\') {
      *o++ = '\\';
      *o++ = (char)*u;
    } else {
      memcpy(o, "\\u00", 4);
      o[4] = hex[*u >> 4];
      o[5] = hex[*u & 15];
      o += 6;
    }
  }
  *o++ = '"';
  *o = '\0';
  b->len = (size_t)(o - b->p);
}

char *sf__buf_steal(sf__buf_t *b, size_t *len)
{
  if (b->p == NULL)
    sf__buf_put(b, "", 0);
  char *p = b->p;
  if (len)
    *len = b->len;
  b->p = NULL;
  b->len = b->cap = 0;
  return p;
}

void sf__buf_dispose(sf__buf_t *b)
{
  free(b->p);
  b->p = NULL;
  b->len = b->cap = 0;
}
