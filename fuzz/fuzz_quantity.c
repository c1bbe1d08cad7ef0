/*
 * libFuzzer target for packer/quantity.c. Beyond "no crash" it checks:
 *   - sf_quantity_parse_n on the bytes agrees with sf_quantity_parse on a
 *     NUL-terminated copy (when the bytes hold no NUL);
 *   - *out is untouched on error;
 *   - a parsed value formats (both families) to text that parses back to the
 *     same value, and formatting is canonical: format(parse(format(v))) is
 *     the same text, and its length is what format returned;
 *   - negating an unsigned input negates the value.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "slicefit/quantity.h"

#define UNTOUCHED ((sf_milli_t)0x5eed5eed)

static void roundtrip(sf_milli_t v)
{
  for (int binary = 0; binary <= 1; binary++) {
    char a[64], b[64];
    sf_milli_t back = UNTOUCHED;
    int n = sf_quantity_format(v, binary, a, sizeof a);
    assert(n > 0 && (size_t)n == strlen(a));
    assert(sf_quantity_parse(a, &back) == 0 && back == v);
    assert(sf_quantity_format(back, binary, b, sizeof b) == n && strcmp(a, b) == 0);
  }
}

static void negated(const char *s, size_t len, sf_milli_t v)
{
  char *neg = malloc(len + 2);
  sf_milli_t w = UNTOUCHED;
  neg[0] = '-';
  memcpy(neg + 1, s, len);
  neg[len + 1] = '\0';
  assert(sf_quantity_parse(neg, &w) == 0 && w == -v);
  free(neg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  const char *s = (const char *)data;
  sf_milli_t v = UNTOUCHED, w = UNTOUCHED;
  int rc = sf_quantity_parse_n(s, size, &v);
  assert(rc == 0 || rc == SF_EINVAL || rc == SF_ERANGE);
  assert(rc == 0 || v == UNTOUCHED);
  if (memchr(data, '\0', size) == NULL) {
    char *z = malloc(size + 1);
    memcpy(z, data, size);
    z[size] = '\0';
    assert(sf_quantity_parse(z, &w) == rc && w == v);
    free(z);
  }
  if (rc != 0)
    return 0;
  roundtrip(v);
  if (size > 0 && s[0] != '-' && s[0] != '+')
    negated(s, size, v);
  return 0;
}
