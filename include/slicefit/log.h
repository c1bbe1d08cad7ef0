/*
 * slicefit log: structured lines on stderr, one per event:
 *   2026-12-02T12:00:00.123Z level=info msg="watch resumed" resource=resourceslices rv=1234
 * Shell code only (reads the clock). Verbosity follows Kubernetes' --v:
 * errors and warnings always print, info at v >= 0, debug at v >= 4.
 */
#ifndef SLICEFIT_LOG_H
#define SLICEFIT_LOG_H

#include <stddef.h>

typedef enum { SF_LOG_ERROR = 0, SF_LOG_WARN, SF_LOG_INFO, SF_LOG_DEBUG } sf_log_level_t;

/** Sets the verbosity (the --v flag); default 0. */
void sf_log_set_verbosity(int v);
int sf_log_verbosity(void);
/** True when a line of `level` would print. */
int sf_log_enabled(sf_log_level_t level);
/**
 * Prints one line: timestamp, level, msg="..." (quoted, escaped) and then
 * `fmt`, which should be space-separated key=value pairs (may be NULL).
 * Control bytes in the formatted pairs are escaped, so a call always makes
 * exactly one line; quote outside values with sf_log_quote.
 */
void sf_log(sf_log_level_t level, const char *msg, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/**
 * Writes `s` into buf as a double-quoted log value with JSON-style escapes
 * (a quote, a backslash or a control byte cannot end the value or the line);
 * returns buf. Use it for every value that comes from outside.
 */
const char *sf_log_quote(char *buf, size_t cap, const char *s);

#define sf_log_error(msg, ...) sf_log(SF_LOG_ERROR, msg, __VA_ARGS__)
#define sf_log_warn(msg, ...) sf_log(SF_LOG_WARN, msg, __VA_ARGS__)
#define sf_log_info(msg, ...) sf_log(SF_LOG_INFO, msg, __VA_ARGS__)
#define sf_log_debug(msg, ...) sf_log(SF_LOG_DEBUG, msg, __VA_ARGS__)

#endif
