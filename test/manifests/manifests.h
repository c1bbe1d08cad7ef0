/* What the tests of manifests/ share: the YAML loaded and looked up (manifests_yaml.c), and the
 * checks over rendered documents (manifests_checks.c). Private to test/manifests/. */
#ifndef SF_TEST_MANIFESTS_H
#define SF_TEST_MANIFESTS_H

#include <stddef.h>
#include "ytree.h"

#define WHY 1024
#define PATHMAX 4096

/* Runs fn(args..., why, wl) and fails the test with its explanation. */
#define CHECK(fn, ...)                                              \
  do {                                                              \
    char why_[WHY] = "";                                            \
    cr_assert(fn(__VA_ARGS__, why_, sizeof why_) == 0, "%s", why_); \
  } while (0)

/* manifests_yaml.c */
yt_node_t *mf_render(const char *dir);
char *mf_read_file(const char *rel, size_t *len);
yt_node_t *mf_load(const char *rel);
yt_node_t *mf_docs_of(const char *yaml);
int mf_streq(const char *a, const char *b);
const char *mf_str_at(const yt_node_t *n, const char *k1, const char *k2);
const yt_node_t *mf_find(const yt_node_t *docs, const char *kind, const char *name);
int mf_seq_has(const yt_node_t *seq, const char *s);
const yt_node_t *mf_pod_spec(const yt_node_t *deploy);
const yt_node_t *mf_first_container(const yt_node_t *deploy);
int mf_flag(const yt_node_t *ctr, const char *name, char *out, size_t len);
long mf_port_of(const yt_node_t *ctr, const char *ref);
const yt_node_t *mf_volume_for(const yt_node_t *deploy, const yt_node_t *ctr, const char *path);
int mf_secret_file(const yt_node_t *vol, const char *secret, const char *key, const char *file);
const char *mf_base(const char *path);
int mf_say(char *why, size_t wl, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* fake.c: the fake kube-apiserver (tools/fake-apiserver beside the suite's binary) */
#include <stdio.h>
#include <sys/types.h>
typedef struct {
  pid_t pid;
  int in;    /* its stdin: closing it stops the server */
  FILE *out; /* its answers */
  unsigned port;
} mf_fake_t;
/** Starts it with one of its flags (or NULL); fails the test if it does not. */
void mf_fake_start(mf_fake_t *f, const char *flag);
/** Sends one command; fails the test unless the fake answers ok. */
void mf_fake_cmd(mf_fake_t *f, const char *cmd);
void mf_fake_stop(mf_fake_t *f);
/** A kubeconfig at path for the fake on 127.0.0.1:port, with a bearer token or none (NULL). */
void mf_kubeconfig_write(const char *path, unsigned port, const char *token);
/* manifests_checks.c */
/** The DeviceClass menu: every class the examples may ask for. */
extern const char *const mf_menu[3];
#define NMENU (sizeof mf_menu / sizeof mf_menu[0])
int mf_check_rbac(const yt_node_t *docs, char *why, size_t wl);
int mf_check_probes(const yt_node_t *docs, char *why, size_t wl);
int mf_check_tls_flags(const yt_node_t *docs, char *why, size_t wl);
int mf_check_security(const yt_node_t *dep, char *why, size_t wl);
int mf_check_availability(const yt_node_t *docs, char *why, size_t wl);
int mf_service_url(const yt_node_t *docs, char *url, size_t len, char *why, size_t wl);
int mf_check_extender(const yt_node_t *cfg, const char *url, char *why, size_t wl);
int mf_has_profile(const yt_node_t *cfg, const char *name);
int mf_check_second_scheduler(const yt_node_t *docs, char *why, size_t wl);
int mf_check_policy(const yt_node_t *docs, char *why, size_t wl);
int mf_check_policy_comments(const char *text, char *why, size_t wl);
int mf_each_cel(const yt_node_t *selectors, int (*fn)(const char *, char *, size_t), char *why,
                size_t wl);
int mf_check_classes(const yt_node_t *docs, char *why, size_t wl);
int mf_cel_compiles(const char *expr, char *why, size_t wl);
int mf_check_examples(const yt_node_t *ex, const yt_node_t *main_docs, char *why, size_t wl);

#endif
