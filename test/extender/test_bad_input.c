/*
 * Bad input: every case gets a clear HTTP error with a JSON body naming
 * the problem and exactly one log line, and the daemon keeps serving.
 */
#include <criterion/criterion.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cases.h"
#include "harness.h"

static sfx_t srv;

static void setup(void)
{
  static const char *const extra[] = {"--max-body-bytes",     "1048576", "--max-nodes", "100",
                                      "--connection-timeout", "1",       NULL};
  sfx_start_example(&srv, extra);
}
static void teardown(void)
{
  cr_expect_eq(sfx_stop(&srv), 0);
}

TestSuite(bad_input, .init = setup, .fini = teardown, .timeout = 60);

/* Sends the request, expects `status` with {"Error": ...containing want} and one log line. */
static void expect_error(const char *method, const char *path, const char *body, size_t len,
                         long status, const char *want)
{
  int before = sfx_log_count(&srv, "] \"request rejected\"");
  sfx_reply_t r;
  sfx_request(&srv, method, path, body, len, &r);
  cr_assert_eq(r.status, status, "%s %s: got %ld (%s)", method, path, r.status, r.body);
  cr_assert_str_eq(r.ctype, "application/json");
  json_t *v = json_loads(r.body, 0, NULL);
  cr_assert(json_is_object(v), "a JSON body: %s", r.body);
  const char *err = json_string_value(json_object_get(v, "Error"));
  cr_assert(err && strstr(err, want), "Error \"%s\" should say \"%s\"", err, want);
  cr_assert_eq(json_integer_value(json_object_get(v, "Code")), status);
  json_decref(v);
  sfx_reply_free(&r);
  cr_assert_eq(sfx_log_count(&srv, "] \"request rejected\""), before + 1, "one log line");
  /* Still serving. */
  sfx_request(&srv, "GET", "/healthz", NULL, 0, &r);
  cr_assert_eq(r.status, 200);
  sfx_reply_free(&r);
}

static void post(const char *body, long status, const char *want)
{
  expect_error("POST", "/filter", body, strlen(body), status, want);
  expect_error("POST", "/prioritize", body, strlen(body), status, want);
}

Test(bad_input, malformed_and_truncated_json)
{
  post("{\"Pod\":{},\"NodeNames\":[\"a\"", 400, "malformed JSON");
  post("{\"Pod\": nope}", 400, "malformed JSON");
  post("", 400, "malformed JSON");
  post("\xff\xfe{}", 400, "malformed JSON");
}

Test(bad_input, wrong_types)
{
  post("[]", 400, "ExtenderArgs object");
  post("{\"NodeNames\":[\"a\"]}", 400, "Pod");
  post("{\"Pod\":\"pod\",\"NodeNames\":[]}", 400, "Pod");
  post("{\"Pod\":{},\"NodeNames\":\"a\"}", 400, "NodeNames");
  post("{\"Pod\":{},\"NodeNames\":[\"a\",7]}", 400, "NodeNames[1]");
  post("{\"Pod\":{},\"Nodes\":[]}", 400, "Nodes");
  post("{\"Pod\":{},\"Nodes\":{\"items\":[{\"metadata\":{}}]}}", 400, "Nodes.items[0].metadata.name");
  post("{\"Pod\":{\"spec\":{\"resourceClaims\":7}},\"NodeNames\":[\"a\"]}", 400, "Pod");
}

Test(bad_input, deep_nesting)
{
  char body[4096];
  int n = snprintf(body, sizeof body, "{\"Pod\":");
  for (int i = 0; i < 1000; i++)
    body[n++] = '[';
  body[n] = '\0';
  post(body, 400, "nested deeper");
}

Test(bad_input, body_over_the_limit)
{
  /* Content-Length says it all: the 413 comes before the body. Only the headers are
   * sent, so that the client is never half way through a body the server will not
   * read (curl then reported a send error instead of the reply, now and again). */
  int fd = sfx_connect(&srv);
  cr_assert(fd >= 0);
  int before = sfx_log_count(&srv, "] \"request rejected\"");
  const char *head = "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     "Content-Length: 2097152\r\n\r\n";
  cr_assert(write(fd, head, strlen(head)) > 0);
  char reply[4096];
  sfx_read_all(fd, reply, sizeof reply);
  cr_assert(strstr(reply, "HTTP/1.1 413"), "%s", reply);
  cr_assert(strstr(reply, "application/json"), "%s", reply);
  cr_assert(strstr(reply, "larger than the limit"), "%s", reply);
  cr_assert(strstr(reply, "\"Code\":413") || strstr(reply, "\"Code\": 413"), "%s", reply);
  cr_assert_eq(sfx_log_count(&srv, "] \"request rejected\""), before + 1, "one log line");
}

Test(bad_input, chunked_body_over_the_limit)
{
  /* Without Content-Length the limit is found while reading. */
  int fd = sfx_connect(&srv);
  cr_assert(fd >= 0);
  const char *head = "POST /filter HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  cr_assert(write(fd, head, strlen(head)) > 0);
  char chunk[65536 + 16];
  int hl = snprintf(chunk, sizeof chunk, "10000\r\n");
  memset(chunk + hl, ' ', 65536);
  memcpy(chunk + hl + 65536, "\r\n", 2);
  for (int i = 0; i < 20; i++)
    cr_assert(write(fd, chunk, (size_t)hl + 65538) > 0);
  cr_assert(write(fd, "0\r\n\r\n", 5) == 5);
  char reply[4096];
  sfx_read_all(fd, reply, sizeof reply);
  cr_assert(strstr(reply, "HTTP/1.1 413"), "%s", reply);
  cr_assert(strstr(reply, "larger than the limit"));
}

Test(bad_input, too_many_nodes)
{
  json_t *pod = sfx_pod("pod-no-gpu.json", "default", "web-0");
  const char *names[101];
  for (int i = 0; i < 101; i++)
    names[i] = "n";
  for (int mode = 0; mode < 2; mode++) {
    json_t *args = sfx_args(pod, names, 101, mode == 0);
    char *body = json_dumps(args, JSON_COMPACT);
    expect_error("POST", "/filter", body, strlen(body), 413, "101 nodes is more than the limit");
    free(body);
    json_decref(args);
  }
  json_decref(pod);
}

Test(bad_input, unknown_paths_and_methods)
{
  expect_error("GET", "/nope", NULL, 0, 404, "no such path");
  expect_error("POST", "/filter/extra", "{}", 2, 404, "no such path");
  expect_error("GET", "/filter", NULL, 0, 405, "not allowed");
  expect_error("PUT", "/prioritize", "{}", 2, 405, "not allowed");
  expect_error("POST", "/healthz", "{}", 2, 405, "not allowed");
  sfx_reply_t r;
  sfx_request(&srv, "DELETE", "/metrics", NULL, 0, &r);
  cr_assert_str_eq(r.allow, "GET");
  sfx_reply_free(&r);
}

Test(bad_input, stalled_client_holds_up_no_one_and_is_closed)
{
  /* A client that sends half its headers and stops. */
  int fd = sfx_connect(&srv);
  cr_assert(fd >= 0);
  const char *half = "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Len";
  cr_assert(write(fd, half, strlen(half)) > 0);
  /* Others are served meanwhile. */
  json_t *pod = sfx_pod("pod-gpu-test1.json", "tenants", "agent-sandbox-7");
  json_t *args = sfx_args(pod, sfx_nodes, SFX_NNODES, true);
  long status;
  json_t *res = sfx_post_json(&srv, "/filter", args, &status);
  cr_assert_eq(status, 200);
  json_decref(res);
  /* A body that stalls half way is also cut off by the connection timeout (1 s here). */
  int fd2 = sfx_connect(&srv);
  const char *part = "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"Pod\":";
  cr_assert(write(fd2, part, strlen(part)) > 0);
  struct pollfd pf[2] = {{.fd = fd, .events = POLLIN}, {.fd = fd2, .events = POLLIN}};
  char buf[64];
  for (int i = 0; i < 2; i++) {
    cr_assert_eq(poll(&pf[i], 1, 10000), 1, "closed by the server");
    cr_assert_leq(read(pf[i].fd, buf, sizeof buf), 0, "closed without a reply");
    close(pf[i].fd);
  }
  cr_assert_eq(sfx_log_count(&srv, "] \"request aborted\" reason=\"timeout\""), 1);
  json_decref(args);
  json_decref(pod);
}
