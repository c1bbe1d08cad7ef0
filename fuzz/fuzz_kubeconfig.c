/*
 * libFuzzer target for apiwatch/kubeconfig.c (libyaml underneath). Beyond
 * "no crash" it checks: on success the server is an http(s) URL without a
 * trailing '/', a client certificate comes with its key, decoded -data
 * fields are NUL-terminated at their length, a file path and its -data twin
 * are never both set, and relative paths were made absolute; on error the
 * message names the file and the result is zeroed; parsing twice agrees.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "slicefit/apiwatch.h"

static void check_ok(const sf_kubeconfig_t *kc)
{
  size_t n = strlen(kc->server);
  assert(!strncmp(kc->server, "https://", 8) || !strncmp(kc->server, "http://", 7));
  assert(kc->server[n - 1] != '/');
  assert(!kc->ca_data || kc->ca_data[kc->ca_len] == '\0');
  assert(!kc->cert_data || kc->cert_data[kc->cert_len] == '\0');
  assert(!kc->key_data || kc->key_data[kc->key_len] == '\0');
  assert(!(kc->ca_data && kc->ca_file) && !(kc->cert_data && kc->cert_file));
  assert(!(kc->key_data && kc->key_file) && !(kc->token && kc->token_file));
  assert(!(kc->cert_data || kc->cert_file) == !(kc->key_data || kc->key_file));
  const char *paths[] = {kc->ca_file, kc->cert_file, kc->key_file, kc->token_file};
  for (size_t i = 0; i < 4; i++)
    assert(!paths[i] || paths[i][0] == '/');
}

static bool zeroed(const sf_kubeconfig_t *kc)
{
  static const sf_kubeconfig_t zero;
  return memcmp(kc, &zero, sizeof zero) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  sf_kubeconfig_t a, b;
  char ea[SF_ERR_MAX], eb[SF_ERR_MAX];
  int ra = sf_kubeconfig_parse(&a, (const char *)data, size, "fuzz.yaml", "/cfg", ea, sizeof ea);
  int rb = sf_kubeconfig_parse(&b, (const char *)data, size, "fuzz.yaml", "/cfg", eb, sizeof eb);
  assert(ra == rb);
  if (ra == 0) {
    check_ok(&a);
    assert(!strcmp(a.server, b.server) && a.insecure == b.insecure && a.ca_len == b.ca_len);
  } else {
    assert(ra == SF_EINVAL || ra == SF_ENOENT);
    assert(!strncmp(ea, "kubeconfig fuzz.yaml: ", 22) && !strcmp(ea, eb));
    assert(zeroed(&a));
  }
  sf_kubeconfig_dispose(&a);
  sf_kubeconfig_dispose(&b);
  return 0;
}
