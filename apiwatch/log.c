/* Structured log lines on stderr (see log.h). */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include "slicefit/log.h"

static int verbosity;
static const char *const level_names[] = {"error", "warn", "info", "debug"};

void sf_log_set_verbosity(int v) { verbosity = v; }
int sf_log_verbosity(void) { return verbosity; }

int sf_log_enabled(sf_log_level_t level) {
  if (level <= SF_LOG_WARN) return 1;
  if (level == SF_LOG_INFO) return verbosity >= 0;
  return verbosity >= 4;
}

/* Writes `s` as a double-quoted string with JSON-style escapes. */
static void put_quoted(char *buf, size_t cap, size_t *len, const char *s) {
  size_t n = *len;
  if (n < cap) buf[n++] = '"';
  for (; *s && n + 7 < cap; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') { buf[n++] = '\\'; buf[n++] = (char)ch; }
    else if (ch == '\n') { buf[n++] = '\\'; buf[n++] = 'n'; }
    else if (ch < 0x20) n += (size_t)snprintf(buf + n, cap - n, "\\u%04x", ch);
    else buf[n++] = (char)ch;
  }
  if (n < cap) buf[n++] = '"';
  *len = n;
}

const char *sf_log_quote(char *buf, size_t cap, const char *s) {
  size_t n = 0;
  put_quoted(buf, cap - 1, &n, s ? s : "");
  buf[n] = '\0';
  return buf;
}

/*
 * The pairs as the caller formatted them, with every byte that could end or
 * break the line escaped: values come from tenants and the network, and a
 * newline in one must never make a second, forged, line.
 */
static size_t put_pairs(char *line, size_t n, size_t cap, const char *pairs) {
  for (const unsigned char *p = (const unsigned char *)pairs; *p && n + 5 < cap; p++) {
    if (*p == '\n') { line[n++] = '\\'; line[n++] = 'n'; }
    else if (*p == '\r') { line[n++] = '\\'; line[n++] = 'r'; }
    else if (*p < 0x20 || *p == 0x7f) n += (size_t)snprintf(line + n, cap - n, "\\x%02x", *p);
    else line[n++] = (char)*p;
  }
  return n;
}

void sf_log(sf_log_level_t level, const char *msg, const char *fmt, ...) {
  if (!sf_log_enabled(level)) return;
  char line[2048];
  struct timespec ts;
  struct tm tm;
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  size_t n = strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%S", &tm);
  n += (size_t)snprintf(line + n, sizeof line - n, ".%03ldZ level=%s msg=", ts.tv_nsec / 1000000,
                        level_names[level]);
  /* Keep room for " ", the pairs and "\n": the message is cut first. */
  put_quoted(line, sizeof line / 2, &n, msg ? msg : "");
  if (fmt && *fmt) {
    char pairs[2048];
    va_list ap;
    line[n++] = ' ';
    va_start(ap, fmt);
    vsnprintf(pairs, sizeof pairs, fmt, ap);
    va_end(ap);
    n = put_pairs(line, n, sizeof line - 1, pairs);
  }
  line[n++] = '\n';
  fwrite(line, 1, n, stderr);
}
