/* Test helpers: fixtures under test/fixtures/, objects from inline JSON. */
#ifndef SF_TEST_FIXTURE_H
#define SF_TEST_FIXTURE_H

#include <jansson.h>
#include "slicefit/decode.h"

/** Loads test/fixtures/<rel> (new reference); the test fails when it cannot. */
json_t *fx_load(const char *rel);
/** Parses inline JSON text (new reference); the test fails when it cannot. */
json_t *fx_json(const char *text);
/** Item i of a List fixture (borrowed). */
json_t *fx_item(json_t *list, size_t i);
/** Decodes text that must decode; the caller frees. */
sf_object_t *fx_decode(const char *text, sf_obj_kind_t kind);
/** Decodes text that must fail and returns the error in a static buffer. */
const char *fx_decode_err(const char *text, sf_obj_kind_t kind);

#endif
