/* apiwatch's own helpers for its libcurl users (watch_http.c, discovery.c). Not a public header. */
#ifndef SF_APIWATCH_CURL_INT_H
#define SF_APIWATCH_CURL_INT_H

#include <curl/curl.h>
#include "slicefit/apiwatch.h"

/** Sets the kubeconfig's CA, client certificate and key (data or file) and insecure flag on e. */
void sf__curl_set_tls(CURL *e, const sf_kubeconfig_t *kc);
/**
 * Accept: application/json and the bearer token (read now, so a rotated file is picked up)
 * in *out (new list). SF_ENOENT, logged naming `what`, when the token file cannot be read.
 */
int sf__curl_auth_headers(const sf_kubeconfig_t *kc, const char *what, struct curl_slist **out);

#endif
