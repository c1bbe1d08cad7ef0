/*
 * Integration-test harness: starts bin/slicefit on a free loopback port
 * (--listen 127.0.0.1:0; the port is read from its "serving" log line),
 * talks to it over keep-alive libcurl connections, and stops it.
 */
#ifndef SLICEFIT_TEST_EXTENDER_HARNESS_H
#define SLICEFIT_TEST_EXTENDER_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>
#include <curl/curl.h>
#include <jansson.h>

typedef struct {
  pid_t pid;
  unsigned port;
  unsigned debug_port; /* --debug-listen (the harness passes 127.0.0.1:0); /debug/ goes there */
  bool tls;
  char dir[64]; /* temporary folder: log.txt */
  char log_path[128];
  CURL *curl; /* one keep-alive connection */
} sfx_t;

typedef struct {
  long status;
  char *body; /* NUL-terminated */
  size_t len;
  char ctype[128];
  char allow[32];
} sfx_reply_t;

/** $SLICEFIT_TOP/rel (static buffer, one at a time). */
const char *sfx_path(const char *rel);
/** A program of the build under test: $SLICEFIT_BIN/prog (make sets it; bin/ of the release
 *  build, build/check/bin of make check), else $SLICEFIT_TOP/bin/prog (static buffer). */
const char *sfx_bin(const char *prog);

/** Starts bin/slicefit with `args` (NULL-terminated) plus --listen; fails the test on error. */
void sfx_start(sfx_t *s, const char *const *args);
/**
 * As sfx_start, with RLIMIT_NOFILE set to soft/hard in the child before it
 * runs bin/slicefit (what `ulimit -n` does in a shell).
 */
void sfx_start_nofile(sfx_t *s, const char *const *args, unsigned long soft, unsigned long hard);
/** As sfx_start with the example cluster and its policy. */
void sfx_start_example(sfx_t *s, const char *const *extra);
/** Sends SIGTERM, waits, returns the exit status (or -1 if killed by a signal). */
int sfx_stop(sfx_t *s);

/** Waits (up to 20 s) for the process to exit by itself; its exit status, or -1. Keeps the log. */
int sfx_wait(sfx_t *s);

/** Removes the temporary folder and its log. */
void sfx_cleanup(sfx_t *s);

/** One request on the keep-alive connection; body may be NULL (GET). */
void sfx_request(sfx_t *s, const char *method, const char *path, const char *body, size_t len,
                 sfx_reply_t *r);
void sfx_reply_free(sfx_reply_t *r);
/** POST of a JSON value (serialised compactly); the reply body parsed (NULL when not JSON). */
json_t *sfx_post_json(sfx_t *s, const char *path, const json_t *body, long *status);

/** The whole log so far (new string). */
char *sfx_log(const sfx_t *s);
/** A whole file as a new NUL-terminated string; "" when it cannot be read. */
char *sfx_read_file(const char *path);
/** Occurrences of `needle` in the log. */
int sfx_log_count(const sfx_t *s, const char *needle);

/** Loads a JSON file relative to the top (fails the test on error). */
json_t *sfx_load(const char *rel);
/** ExtenderArgs for `pod` over `names`: NodeNames (cache mode) or a NodeList of minimal Nodes. */
json_t *sfx_args(const json_t *pod, const char *const *names, size_t n, bool cache_mode);
/** Reads until the server closes (or buf is full), NUL-terminates, closes fd. */
void sfx_read_all(int fd, char *buf, size_t cap);
/**
 * GET path from 127.0.0.1:port on a connection of its own (Connection:
 * close, 5 s at most): the status, or -1 when nothing answered. buf (may be
 * NULL) receives the whole response.
 */
long sfx_get_port(unsigned port, const char *path, char *buf, size_t cap);
/*
 * A TCP port of 127.0.0.1 free right now (the kernel's pick for port 0), for a listener a test
 * must know before the process starts; another process could take it in between, as with any
 * port chosen ahead.
 */
unsigned sfx_free_port(void);
/** A raw TCP connection to the server (for stalled and slow clients); -1 on error. */
int sfx_connect(const sfx_t *s);

/**
 * Runs `promtool check metrics` on an exposition: 0 clean, 1 not (why holds
 * promtool's words), -1 when promtool is not installed (why says so).
 */
int sfx_promtool_lint(const char *text, char *why, size_t cap);

/* The fake kube-apiserver of test/tools, driven through its stdin. */
typedef struct {
  pid_t pid;
  FILE *in, *out;
  unsigned port;
} sfx_api_t;
/** Starts it (tools/fake-apiserver beside the suite's binary) with one of its flags, or none. */
void sfx_api_start(sfx_api_t *a, const char *flag);
/** Sends one command; fails the test unless the fake answers ok. */
void sfx_api_cmd(sfx_api_t *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/** Sends one command; fails the test unless the answer is ok; returns what follows "ok " in line. */
const char *sfx_api_ask(sfx_api_t *a, char *line, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/** Quits it and waits for it. */
void sfx_api_stop(sfx_api_t *a);
/* Writes a kubeconfig at path for the fake API server on 127.0.0.1:port (token auth, plain http). */
void sfx_write_kubeconfig(const char *path, unsigned port);

#endif
