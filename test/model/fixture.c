#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include "fixture.h"

json_t *fx_load(const char *rel)
{
  char path[1024];
  const char *top = getenv("SLICEFIT_TOP");
  snprintf(path, sizeof path, "%s/test/fixtures/%s", top ? top : ".", rel);
  json_error_t e;
  json_t *j = json_load_file(path, 0, &e);
  cr_assert(j, "cannot load %s: %s", path, e.text);
  return j;
}

json_t *fx_json(const char *text)
{
  json_error_t e;
  json_t *j = json_loads(text, 0, &e);
  cr_assert(j, "bad test JSON: %s in %s", e.text, text);
  return j;
}

json_t *fx_item(json_t *list, size_t i)
{
  json_t *it = json_array_get(json_object_get(list, "items"), i);
  cr_assert(it, "no item %zu", i);
  return it;
}

sf_object_t *fx_decode(const char *text, sf_obj_kind_t kind)
{
  json_t *j = fx_json(text);
  sf_object_t *o = NULL;
  char err[256];
  int r = sf_decode(j, kind, &o, err, sizeof err);
  json_decref(j);
  cr_assert_eq(r, 0, "decode failed: %s", err);
  return o;
}

const char *fx_decode_err(const char *text, sf_obj_kind_t kind)
{
  static char err[256];
  json_t *j = fx_json(text);
  sf_object_t *o = NULL;
  int r = sf_decode(j, kind, &o, err, sizeof err);
  json_decref(j);
  cr_assert_eq(r, SF_EINVAL, "decode of %s should fail", text);
  cr_assert_null(o);
  return err;
}
