/*
 * extender/http.c in process: libmicrohttpd driven by the test's own libuv
 * loop, so the test can watch the loop itself turn.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>
#include "slicefit/cluster.h"
#include "slicefit/extender.h"

TestSuite(http, .timeout = 60);

#define BURST 400

typedef struct {
  unsigned port;
  uv_async_t done;
  int answers;
} burst_t;

/* A client thread: BURST pipelined requests in one write, then reads until every answer is in. */
static void *client(void *arg)
{
  burst_t *b = arg;
  static const char one[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  size_t n = sizeof one - 1;
  char *all = malloc(n * BURST);
  for (int i = 0; i < BURST; i++)
    memcpy(all + (size_t)i * n, one, n);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)b->port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
    for (size_t off = 0; off < n * BURST;) {
      ssize_t k = write(fd, all + off, n * BURST - off);
      if (k <= 0)
        break;
      off += (size_t)k;
    }
    /* Counts status lines; one may straddle two reads, so keep the tail of the last read. */
    char buf[65536 + 16];
    size_t keep = 0;
    ssize_t k;
    while (b->answers < BURST && (k = read(fd, buf + keep, 65536)) > 0) {
      size_t len = keep + (size_t)k;
      buf[len] = '\0';
      for (char *p = buf; (p = strstr(p, "HTTP/1.1 200")) != NULL; p += 12)
        b->answers++;
      keep = len < 11 ? len : 11;
      memmove(buf, buf + len - keep, keep);
    }
  }
  close(fd);
  free(all);
  uv_async_send(&b->done);
  return NULL;
}

static void on_done(uv_async_t *h)
{
  uv_stop(h->loop);
}

static unsigned long turns;
static void on_check(uv_check_t *h)
{
  (void)h;
  turns++;
}

/*
 * Pipelined requests already in MHD's buffer leave MHD with work at once
 * (MHD_get_timeout 0). Each such MHD_run must wait for the loop's next turn:
 * run from a 0 ms timer restarted in its own callback, libuv 1.44 ran it
 * again and again inside one uv__run_timers, and the whole burst went by in
 * a turn or two, with no timer nor other descriptor served meanwhile.
 */
Test(http, work_at_once_is_spread_over_loop_turns)
{
  uv_loop_t loop;
  uv_loop_init(&loop);
  sf_cluster_t *cluster = sf_cluster_create(NULL);
  sf_extender_config_t cfg;
  sf_extender_config_init(&cfg);
  cfg.listen = "127.0.0.1:0";
  cfg.keepalive_requests = 0;
  sf_extender_t *x = NULL;
  char err[256];
  cr_assert_eq(sf_extender_start(&loop, cluster, &cfg, &x, err, sizeof err), 0, "%s", err);
  burst_t b = {.port = sf_extender_port(x)};
  uv_async_init(&loop, &b.done, on_done);
  uv_check_t check;
  uv_check_init(&loop, &check);
  uv_check_start(&check, on_check);
  pthread_t t;
  pthread_create(&t, NULL, client, &b);
  turns = 0;
  uv_run(&loop, UV_RUN_DEFAULT);
  pthread_join(t, NULL);
  cr_assert_eq(b.answers, BURST);
  /* Each turn answers a few requests at most; before, one turn answered nearly all of them. */
  cr_expect_geq(turns, BURST / 8, "%lu loop turns for %d pipelined requests", turns, BURST);
  uv_check_stop(&check);
  uv_close((uv_handle_t *)&check, NULL);
  uv_close((uv_handle_t *)&b.done, NULL);
  sf_extender_destroy(x);
  uv_run(&loop, UV_RUN_DEFAULT);
  cr_assert_eq(uv_loop_close(&loop), 0);
  sf_cluster_destroy(cluster);
}
