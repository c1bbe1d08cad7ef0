/*
 * slicefit log: one line per event on stderr, in either of the two formats
 * Kubernetes components write (k8s.io/component-base/logs):
 *
 *   text (klog, the default):
 *     I1203 09:30:00.123456    4242 daemon.c:280] "watch resumed" resource="resourceslices" rv=1234
 *   json (--logging-format=json):
 *     {"ts":1764754200.123456,"caller":"daemon.c:280","v":0,"msg":"watch resumed",
 *      "resource":"resourceslices","rv":1234}
 *
 * Callers give a message and `fmt`, space-separated key=value pairs; a value
 * may be "quoted" (with \" and \\ escapes) or bare. The module parses the
 * pairs and writes every value escaped in either format: text quotes every
 * value that is not a number or boolean, so a value with spaces, quotes or a
 * newline stays one field on one line. Shell code only (reads the clock).
 *
 * Verbosity follows Kubernetes' -v: errors and warnings always print, info
 * lines carry a level 0..5 and print when it is <= the verbosity. slicefit's
 * levels: 0 start, stop, state and policy changes; 2 each claim pending too
 * long; 4 each filter/prioritize call with its verdict counts and each
 * request; 5 each watch event.
 */
#ifndef SLICEFIT_LOG_H
#define SLICEFIT_LOG_H

#include <stddef.h>

typedef enum { SF_LOG_ERROR = 0, SF_LOG_WARN, SF_LOG_INFO, SF_LOG_DEBUG } sf_log_level_t;
typedef enum { SF_LOG_TEXT = 0, SF_LOG_JSON } sf_log_format_t;

/** Sets the verbosity (the -v flag); default 0. */
void sf_log_set_verbosity(int v);
/** Sets the format (--logging-format); default text. */
void sf_log_set_format(sf_log_format_t f);
/** "text" or "json" into *out; -1 for anything else. */
int sf_log_format_parse(const char *name, sf_log_format_t *out);
/** True when a line of `level` would print (SF_LOG_DEBUG is info at verbosity 4). */
int sf_log_enabled(sf_log_level_t level);
/** True when an info line at verbosity `v` would print. */
int sf_log_v(int v);

/**
 * Renders one line (with its '\n') into out, at most cap bytes (cut values
 * end the line early, never mid-escape), NUL-terminated when there is room;
 * returns its length. Pure: the time
 * (seconds, microseconds), pid and caller are arguments. For the tests.
 */
size_t sf_log_render(char *out, size_t cap, sf_log_format_t f, sf_log_level_t level, int v,
                     long long sec, long usec, int pid, const char *file, int line, const char *msg,
                     const char *kv);

/** Prints one line if enabled; `file` and `line` name the caller (the macros pass them). */
void sf_log_at(const char *file, int line, sf_log_level_t level, int v, const char *msg,
               const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/** The same without a caller location. */
void sf_log(sf_log_level_t level, const char *msg, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/**
 * Writes `s` into buf as a double-quoted log value with JSON-style escapes
 * (a quote, a backslash or a control byte cannot end the value or the line);
 * returns buf. The line's parser reads the escapes back, so the value is
 * written once, escaped for the line's format.
 */
const char *sf_log_quote(char *buf, size_t cap, const char *s);

#define sf_log_error(msg, ...) sf_log_at(__FILE__, __LINE__, SF_LOG_ERROR, 0, msg, __VA_ARGS__)
#define sf_log_warn(msg, ...) sf_log_at(__FILE__, __LINE__, SF_LOG_WARN, 0, msg, __VA_ARGS__)
#define sf_log_info(msg, ...) sf_log_at(__FILE__, __LINE__, SF_LOG_INFO, 0, msg, __VA_ARGS__)
#define sf_log_debug(msg, ...) sf_log_at(__FILE__, __LINE__, SF_LOG_DEBUG, 4, msg, __VA_ARGS__)
/** Info at verbosity v (0..5), as klog's V(v).InfoS. */
#define sf_log_vinfo(v, msg, ...) sf_log_at(__FILE__, __LINE__, SF_LOG_INFO, v, msg, __VA_ARGS__)

#endif
