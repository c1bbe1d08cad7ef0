/*
 * Kubernetes resource.Quantity, exactly: parse the whole grammar into
 * milli-units and format canonically. Pure.
 */
#ifndef SLICEFIT_QUANTITY_H
#define SLICEFIT_QUANTITY_H

#include "slicefit/common.h"

/**
 * Parses `s` ("1.5Gi", "500m", "1e3", "-2k", ...) into milli-units.
 * SF_EINVAL for bad syntax or precision finer than milli; SF_ERANGE when the
 * value does not fit int64 milli-units. *out unchanged on error.
 */
int sf_quantity_parse(const char *s, sf_milli_t *out);
/** Same for a string of `len` bytes (not NUL-terminated). */
int sf_quantity_parse_n(const char *s, size_t len, sf_milli_t *out);

/**
 * Formats milli-units canonically in the binary family ("1536Mi") when
 * `binary` and the value is whole and divisible by 1024, else decimal
 * ("1500m", "2k"). Returns the length, as snprintf.
 */
int sf_quantity_format(sf_milli_t v, int binary, char *buf, size_t len);

#endif
