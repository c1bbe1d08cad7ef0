/*
 * The NodeNames array of a verb's last call (ext_int.h sf__names_t). Each
 * name's quoted form is located once, when the array is kept, so that a
 * reply over the same array copies each name's JSON as it came instead of
 * escaping it again: the request's bytes are valid JSON for the same string.
 */
#include <stdlib.h>
#include <string.h>
#include "ext_int.h"

static uint64_t next_id;

/* Offsets and lengths of the n quoted strings of a flat array of strings (checked by the caller). */
static void locate(sf__names_t *l)
{
  const char *p = l->text, *end = l->text + l->len;
  for (size_t i = 0; i < l->n; i++) {
    p = memchr(p, '"', (size_t)(end - p));
    const char *q = p + 1;
    while (*q != '"')
      q += *q == '\\' ? 2 : 1;
    l->raw[2 * i] = (uint32_t)(p - l->text);
    l->raw[2 * i + 1] = (uint32_t)(q + 1 - p);
    p = q + 1;
  }
}

void sf__names_keep(sf__names_t *l, const char *text, size_t len, char **arena, const char ***names,
                    size_t n)
{
  sf__names_dispose(l);
  if (len > UINT32_MAX)
    return; /* offsets are 32-bit: such an array is never kept */
  l->text = sf_xmalloc(len + 1);
  memcpy(l->text, text, len);
  l->text[len] = '\0';
  l->len = len;
  l->arena = *arena;
  l->names = *names;
  *arena = NULL;
  *names = NULL;
  l->n = n;
  l->raw = sf_xmalloc((2 * n + 1) * sizeof *l->raw);
  locate(l);
  l->id = ++next_id;
}

void sf__names_dispose(sf__names_t *l)
{
  free(l->text);
  free(l->arena);
  free(l->names);
  free(l->raw);
  *l = (sf__names_t){0};
}
