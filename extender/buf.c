/* A growable text buffer for replies and metrics (see ext_int.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ext_int.h"

static void reserve(sf__buf_t *b, size_t more)
{
  if (b->len + more + 1 > b->cap)
    sf_xgrow(&b->p, &b->cap, b->len + more + 1, 1);
}

void sf__buf_put(sf__buf_t *b, const char *s, size_t n)
{
  reserve(b, n);
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

void sf__buf_puts(sf__buf_t *b, const char *s) { sf__buf_put(b, s, strlen(s)); }

void sf__buf_printf(sf__buf_t *b, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n <= 0)
    return;
  reserve(b, (size_t)n);
  va_start(ap, fmt);
  vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

void sf__buf_json_str(sf__buf_t *b, const char *s)
{
  static const char hex[] = "0123456789abcdef";
  size_t n = strlen(s);
  reserve(b, n * 6 + 2);  /* the worst case: every byte a \u00XX escape */
  char *o = b->p + b->len;
  *o++ = '"';
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') {
      *o++ = '\\';
      *o++ = (char)ch;
    } else if (ch < 0x20) {
      memcpy(o, "\\u00", 4);
      o[4] = hex[ch >> 4];
      o[5] = hex[ch & 15];
      o += 6;
    } else {
      *o++ = (char)ch;
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
