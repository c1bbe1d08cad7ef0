/*
 * Log lines cannot be forged (issue 16): whatever a value holds (a newline
 * in a tenant's CEL, quotes, control bytes), one call writes one line.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "slicefit/cluster.h"
#include "slicefit/log.h"

static char path[] = "/tmp/sf-log-XXXXXX";

static void capture(void) {
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  fflush(stderr);
  dup2(fd, 2);
  close(fd);
}

static char *captured(void) {
  fflush(stderr);
  FILE *f = fopen(path, "rb");
  static char buf[65536];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  unlink(path);
  return buf;
}

static int lines(const char *s) {
  int n = 0;
  for (; *s; s++) n += *s == '\n';
  return n;
}

Test(log, a_newline_in_a_value_cannot_forge_a_line) {
  capture();
  sf_log_warn("object rejected", "name=%s error=%s", "x\n2026-12-02T00:00:00.000Z level=error msg=\"forged\"",
              "a\rb\x01");
  char q[256];
  sf_log_warn("quoted", "v=%s", sf_log_quote(q, sizeof q, "say \"hi\"\\\nlevel=error"));
  char *out = captured();
  cr_assert_eq(lines(out), 2, "two calls, two lines:\n%s", out);
  cr_assert_null(strstr(out, "\nlevel=error"));
  cr_assert_null(strstr(out, "\n2026-12-02T00:00:00.000Z"));
  cr_assert(strstr(out, "v=\"say \\\"hi\\\"\\\\\\nlevel=error\""), "%s", out);
}

Test(log, a_device_class_with_a_newline_in_its_cel_logs_one_line) {
  sf_log_set_verbosity(0);
  sf_cluster_t *c = sf_cluster_create(NULL);
  json_t *cls = json_pack(
      "{s:s,s:{s:s},s:{s:[{s:{s:s}}]}}", "kind", "DeviceClass", "metadata", "name", "evil",
      "spec", "selectors", "cel", "expression",
      "nosuchfn(1)\n2026-12-02T00:00:00.000Z level=error msg=\"node n1 is on fire\" x=\"");
  char err[SF_ERR_MAX];
  capture();
  cr_assert_eq(sf_cluster_apply(c, SF_KIND_UNKNOWN, cls, err, sizeof err), 0, "%s", err);
  char *out = captured();
  cr_assert_eq(lines(out), 1, "%s", out);
  cr_assert(strstr(out, "level=warn msg=\"selector not supported"), "%s", out);
  json_decref(cls);
  sf_cluster_destroy(c);
}
