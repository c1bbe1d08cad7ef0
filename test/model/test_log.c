/* The log module's two formats (model/log.c): klog text and JSON lines. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <jansson.h>
#include <string.h>
#include "slicefit/cluster.h"
#include "slicefit/log.h"

static char line[4200];

static size_t render(sf_log_format_t f, sf_log_level_t level, int v, const char *msg, const char *kv)
{
  return sf_log_render(line, sizeof line, f, level, v, 1764754200LL, 123456, 4242,
                       "extender/daemon.c", 280, msg, kv);
}

Test(log, klog_text_header_and_values)
{
  render(SF_LOG_TEXT, SF_LOG_INFO, 0, "watch resumed", "resource=resourceslices rv=1234 ok=true");
  cr_assert_str_eq(line, "I1203 09:30:00.123456    4242 daemon.c:280] \"watch resumed\" "
                         "resource=\"resourceslices\" rv=1234 ok=true\n");
  render(SF_LOG_TEXT, SF_LOG_ERROR, 0, "cannot start", "reason=\"no such file\"");
  cr_assert_str_eq(line, "E1203 09:30:00.123456    4242 daemon.c:280] \"cannot start\" "
                         "reason=\"no such file\"\n");
  render(SF_LOG_TEXT, SF_LOG_WARN, 0, "x", NULL);
  cr_assert_eq(line[0], 'W');
}

/* A value from the network stays one field on one line, whichever way the caller wrote it. */
Test(log, text_values_are_quoted_and_escaped)
{
  render(SF_LOG_TEXT, SF_LOG_INFO, 0, "object rejected",
         "name=evil\nI1203 forged=1 err=\"a \\\"quoted\\\" word\" path=/a b c");
  cr_assert_eq(strchr(line, '\n'), line + strlen(line) - 1, "one line: %s", line);
  cr_assert(strstr(line, " name=\"evil\\nI1203\" forged=1 "), "%s", line);
  cr_assert(strstr(line, " err=\"a \\\"quoted\\\" word\""), "%s", line);
  cr_assert(strstr(line, " path=\"/a b c\"\n"), "%s", line);
}

Test(log, json_lines)
{
  render(SF_LOG_JSON, SF_LOG_INFO, 2, "claim pending too long",
         "claim=tenants/a age_s=400 reason=\"needs 6Gi\\nof memory\" ctl=\x01 ok=false");
  json_error_t je;
  json_t *j = json_loads(line, 0, &je);
  cr_assert_not_null(j, "%s: %s", je.text, line);
  cr_assert_eq(line[strlen(line) - 1], '\n');
  cr_assert(json_real_value(json_object_get(j, "ts")) > 1764754200.1);
  cr_assert_eq(json_integer_value(json_object_get(j, "v")), 2);
  cr_assert_str_eq(json_string_value(json_object_get(j, "msg")), "claim pending too long");
  cr_assert_str_eq(json_string_value(json_object_get(j, "caller")), "daemon.c:280");
  cr_assert_str_eq(json_string_value(json_object_get(j, "claim")), "tenants/a");
  cr_assert_eq(json_integer_value(json_object_get(j, "age_s")), 400);
  cr_assert_str_eq(json_string_value(json_object_get(j, "reason")), "needs 6Gi\nof memory");
  cr_assert_str_eq(json_string_value(json_object_get(j, "ctl")), "\x01");
  cr_assert(json_is_false(json_object_get(j, "ok")));
  json_decref(j);
  render(SF_LOG_JSON, SF_LOG_ERROR, 0, "cannot \"start\"", "reason=x");
  j = json_loads(line, 0, NULL);
  cr_assert_not_null(j, "%s", line);
  cr_assert_str_eq(json_string_value(json_object_get(j, "level")), "error");
  cr_assert_str_eq(json_string_value(json_object_get(j, "msg")), "cannot \"start\"");
  json_decref(j);
}

/* A line longer than the buffer is cut, and still parses. */
Test(log, long_values_are_cut_cleanly)
{
  static char kv[8000];
  memset(kv, '"', sizeof kv - 1);
  memcpy(kv, "k=", 2);
  size_t n = sf_log_render(line, 300, SF_LOG_JSON, SF_LOG_INFO, 0, 1, 0, 1, "f.c", 1, "m", kv);
  cr_assert_leq(n, 300);
  line[n] = '\0';
  json_t *j = json_loads(line, 0, NULL);
  cr_assert_not_null(j, "%s", line);
  json_decref(j);
}

Test(log, verbosity)
{
  sf_log_set_verbosity(2);
  cr_assert(sf_log_v(2));
  cr_assert_not(sf_log_v(3));
  cr_assert(sf_log_enabled(SF_LOG_ERROR));
  cr_assert_not(sf_log_enabled(SF_LOG_DEBUG));
  sf_log_format_t f;
  cr_assert_eq(sf_log_format_parse("json", &f), 0);
  cr_assert_eq(f, SF_LOG_JSON);
  cr_assert_eq(sf_log_format_parse("logfmt", &f), -1);
  sf_log_set_verbosity(0);
}

/*
 * Log lines cannot be forged: whatever a value holds (a newline
 * in a tenant's CEL, quotes, control bytes), one call writes one line.
 */
static char path[] = "/tmp/sf-log-XXXXXX";

static void capture(void)
{
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  fflush(stderr);
  dup2(fd, 2);
  close(fd);
}

static char *captured(void)
{
  fflush(stderr);
  FILE *f = fopen(path, "rb");
  static char buf[65536];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  unlink(path);
  return buf;
}

static int lines(const char *s)
{
  int n = 0;
  for (; *s; s++)
    n += *s == '\n';
  return n;
}

Test(log, a_newline_in_a_value_cannot_forge_a_line)
{
  capture();
  sf_log_warn("object rejected", "name=%s error=%s",
              "x\n2026-12-02T00:00:00.000Z level=error msg=\"forged\"", "a\rb\x01");
  char q[256];
  sf_log_warn("quoted", "v=%s", sf_log_quote(q, sizeof q, "say \"hi\"\\\nlevel=error"));
  char *out = captured();
  cr_assert_eq(lines(out), 2, "two calls, two lines:\n%s", out);
  cr_assert_null(strstr(out, "\nlevel=error"));
  cr_assert_null(strstr(out, "\n2026-12-02T00:00:00.000Z"));
  cr_assert(strstr(out, "v=\"say \\\"hi\\\"\\\\\\nlevel=error\""), "%s", out);
}

Test(log, a_device_class_with_a_newline_in_its_cel_logs_one_line)
{
  sf_log_set_verbosity(0);
  sf_cluster_t *c = sf_cluster_create(NULL);
  json_t *cls =
      json_pack("{s:s,s:{s:s},s:{s:[{s:{s:s}}]}}", "kind", "DeviceClass", "metadata", "name", "evil",
                "spec", "selectors", "cel", "expression",
                "nosuchfn(1)\n2026-12-02T00:00:00.000Z level=error msg=\"node n1 is on fire\" x=\"");
  char err[SF_ERR_MAX];
  capture();
  cr_assert_eq(sf_cluster_apply(c, SF_KIND_UNKNOWN, cls, err, sizeof err), 0, "%s", err);
  char *out = captured();
  cr_assert_eq(lines(out), 1, "%s", out);
  cr_assert(strstr(out, "] \"selector not supported"), "%s", out);
  json_decref(cls);
  sf_cluster_destroy(c);
}
