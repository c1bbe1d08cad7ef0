/*
 * Log lines in klog text or JSON (see log.h). The caller's key=value text is
 * parsed here, so every format escapes every value the same way: the text
 * may come from the network (an object's name, an API server's error).
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "slicefit/log.h"

#define LINE_MAX_BYTES 4096
#define TAIL 8 /* room always kept for a closing quote, '}' and '\n' */

static int verbosity;
static sf_log_format_t format = SF_LOG_TEXT;

void sf_log_set_verbosity(int v)
{
  verbosity = v;
}
void sf_log_set_format(sf_log_format_t f)
{
  format = f;
}

int sf_log_format_parse(const char *name, sf_log_format_t *out)
{
  if (strcmp(name, "text") == 0)
    *out = SF_LOG_TEXT;
  else if (strcmp(name, "json") == 0)
    *out = SF_LOG_JSON;
  else
    return -1;
  return 0;
}

int sf_log_v(int v)
{
  return v <= verbosity;
}

int sf_log_enabled(sf_log_level_t level)
{
  if (level <= SF_LOG_WARN)
    return 1;
  return sf_log_v(level == SF_LOG_DEBUG ? 4 : 0);
}

/* ---- an output buffer that cuts cleanly ---- */

typedef struct {
  char *p;
  size_t cap, n;
  bool full;
} out_t;

static void put(out_t *o, const char *s, size_t len)
{
  if (o->full || o->n + len + TAIL > o->cap) {
    o->full = true;
    return;
  }
  memcpy(o->p + o->n, s, len);
  o->n += len;
}

static void puts_(out_t *o, const char *s)
{
  put(o, s, strlen(s));
}

/* The closing bytes go into the room TAIL kept. */
static void put_tail(out_t *o, const char *s)
{
  size_t len = strlen(s);
  if (o->n + len <= o->cap) {
    memcpy(o->p + o->n, s, len);
    o->n += len;
  }
}

/* s[0..len) with JSON string escapes, without the quotes. */
static void put_escaped(out_t *o, const char *s, size_t len)
{
  char esc[8];
  for (size_t i = 0; i < len && !o->full; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') {
      esc[0] = '\\';
      esc[1] = (char)c;
      put(o, esc, 2);
    } else if (c == '\n') {
      put(o, "\\n", 2);
    } else if (c == '\r') {
      put(o, "\\r", 2);
    } else if (c == '\t') {
      put(o, "\\t", 2);
    } else if (c < 0x20 || c == 0x7f) {
      snprintf(esc, sizeof esc, "\\u%04x", c);
      put(o, esc, 6);
    } else {
      put(o, (const char *)&c, 1);
    }
  }
}

static void put_quoted(out_t *o, const char *s, size_t len)
{
  put(o, "\"", 1);
  put_escaped(o, s, len);
  if (o->full)
    put_tail(o, "\"");
  else
    put(o, "\"", 1);
}

/* ---- the caller's key=value pairs ---- */

typedef struct {
  const char *key;
  size_t klen;
  char val[LINE_MAX_BYTES]; /* unescaped */
  size_t vlen;
  bool quoted; /* the caller quoted it: always a string */
} pair_t;

/*
 * Reads the next pair from *s; false at the end. A quoted value ends at its
 * unescaped closing quote; a bare one at the next " word=" or the end, so an
 * unquoted value with spaces stays one value.
 */
static bool next_pair(const char **s, pair_t *p)
{
  const char *c = *s;
  while (*c == ' ')
    c++;
  if (*c == '\0')
    return false;
  p->key = c;
  while (*c && *c != '=' && *c != ' ')
    c++;
  p->klen = (size_t)(c - p->key);
  p->vlen = 0;
  p->quoted = *c == '=' && c[1] == '"';
  if (*c != '=') { /* a word without a key: keep it as the value of "msg2"-less text */
    p->vlen = p->klen < sizeof p->val ? p->klen : sizeof p->val - 1;
    memcpy(p->val, p->key, p->vlen);
    p->key = "detail";
    p->klen = 6;
    *s = c;
    return true;
  }
  c++;
  if (p->quoted) {
    for (c++; *c && *c != '"'; c++) {
      char ch = *c;
      if (ch == '\\' && c[1]) {
        ch = *++c;
        ch = ch == 'n' ? '\n' : ch == 't' ? '\t' : ch == 'r' ? '\r' : ch;
      }
      if (p->vlen < sizeof p->val - 1)
        p->val[p->vlen++] = ch;
    }
    if (*c == '"')
      c++;
  } else {
    const char *start = c;
    for (;;) {
      const char *sp = strchr(c, ' ');
      if (sp == NULL) {
        c += strlen(c);
        break;
      }
      const char *w = sp + 1;
      while (*w && *w != ' ' && *w != '=')
        w++;
      c = sp;
      if (*w == '=' && w > sp + 1)
        break; /* " word=": the next pair */
      c = sp + 1;
    }
    p->vlen = (size_t)(c - start) < sizeof p->val - 1 ? (size_t)(c - start) : sizeof p->val - 1;
    memcpy(p->val, start, p->vlen);
  }
  p->val[p->vlen] = '\0';
  *s = c;
  return true;
}

/* A JSON number, true or false: written bare in both formats. */
static bool is_scalar(const pair_t *p)
{
  if (p->quoted || p->vlen == 0)
    return false;
  if (strcmp(p->val, "true") == 0 || strcmp(p->val, "false") == 0)
    return true;
  const char *v = p->val;
  if (*v == '-')
    v++;
  if (*v < '0' || *v > '9' || (v[0] == '0' && v[1] >= '0' && v[1] <= '9'))
    return false;
  char *end;
  strtod(p->val, &end);
  return *end == '\0';
}

static void put_key(out_t *o, const pair_t *p)
{
  char k[64];
  size_t n = p->klen < sizeof k - 1 ? p->klen : sizeof k - 1;
  for (size_t i = 0; i < n; i++) {
    char c = p->key[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.';
    k[i] = ok ? c : '_';
  }
  put(o, k, n);
}

static void put_pairs(out_t *o, sf_log_format_t f, const char *kv)
{
  pair_t p; /* on the stack: any thread may log */
  while (kv && !o->full && next_pair(&kv, &p)) {
    if (f == SF_LOG_JSON) {
      put(o, ",\"", 2);
      put_key(o, &p);
      put(o, "\":", 2);
    } else {
      put(o, " ", 1);
      put_key(o, &p);
      put(o, "=", 1);
    }
    if (is_scalar(&p))
      put(o, p.val, p.vlen);
    else
      put_quoted(o, p.val, p.vlen);
  }
}

static const char *base_name(const char *file)
{
  const char *s = file ? strrchr(file, '/') : NULL;
  return s ? s + 1 : file ? file : "slicefit";
}

size_t sf_log_render(char *buf, size_t cap, sf_log_format_t f, sf_log_level_t level, int v,
                     long long sec, long usec, int pid, const char *file, int line, const char *msg,
                     const char *kv)
{
  out_t o = {buf, cap, 0, cap < 64};
  char head[160];
  if (o.full)
    return 0;
  if (f == SF_LOG_JSON) {
    snprintf(head, sizeof head, "{\"ts\":%lld.%06ld,\"caller\":\"%s:%d\",\"v\":%d", sec, usec,
             base_name(file), line, level <= SF_LOG_WARN ? 0 : v);
    puts_(&o, head);
    if (level <= SF_LOG_WARN)
      puts_(&o, level == SF_LOG_ERROR ? ",\"level\":\"error\"" : ",\"level\":\"warning\"");
    puts_(&o, ",\"msg\":");
  } else {
    time_t t = (time_t)sec;
    struct tm tm;
    gmtime_r(&t, &tm);
    snprintf(head, sizeof head, "%c%02d%02d %02d:%02d:%02d.%06ld %7d %s:%d] ", "EWII"[level],
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, usec, pid, base_name(file),
             line);
    puts_(&o, head);
  }
  put_quoted(&o, msg ? msg : "", msg ? strlen(msg) : 0);
  put_pairs(&o, f, kv);
  put_tail(&o, f == SF_LOG_JSON ? "}\n" : "\n");
  if (o.n < cap)
    buf[o.n] = '\0';
  return o.n;
}

static void vlog(const char *file, int line, sf_log_level_t level, int v, const char *msg,
                 const char *fmt, va_list ap)
{
  char kv[LINE_MAX_BYTES], out[LINE_MAX_BYTES + TAIL];
  struct timespec ts;
  kv[0] = '\0';
  if (fmt && *fmt)
    vsnprintf(kv, sizeof kv, fmt, ap);
  clock_gettime(CLOCK_REALTIME, &ts);
  size_t n = sf_log_render(out, sizeof out, format, level, v, (long long)ts.tv_sec, ts.tv_nsec / 1000,
                           (int)getpid(), file, line, msg, kv);
  fwrite(out, 1, n, stderr);
}

void sf_log_at(const char *file, int line, sf_log_level_t level, int v, const char *msg,
               const char *fmt, ...)
{
  if (level <= SF_LOG_WARN ? 0 : !sf_log_v(v))
    return;
  va_list ap;
  va_start(ap, fmt);
  vlog(file, line, level, v, msg, fmt, ap);
  va_end(ap);
}

void sf_log(sf_log_level_t level, const char *msg, const char *fmt, ...)
{
  if (!sf_log_enabled(level))
    return;
  va_list ap;
  va_start(ap, fmt);
  vlog(NULL, 0, level, level == SF_LOG_DEBUG ? 4 : 0, msg, fmt, ap);
  va_end(ap);
}

const char *sf_log_quote(char *buf, size_t cap, const char *s)
{
  if (cap < TAIL + 2) { /* no room for a value: an empty one */
    if (cap > 0)
      snprintf(buf, cap, "%s", cap >= 3 ? "\"\"" : "");
    return buf;
  }
  out_t o = {buf, cap - 1, 0, false}; /* put keeps TAIL bytes for the closing quote */
  put_quoted(&o, s ? s : "", s ? strlen(s) : 0);
  buf[o.n] = '\0';
  return buf;
}
