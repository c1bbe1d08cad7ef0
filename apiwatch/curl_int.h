/* apiwatch's own helpers for its libcurl users (watch_http.c, discovery.c). Not a public header. */
#ifndef SF_APIWATCH_CURL_INT_H
#define SF_APIWATCH_CURL_INT_H

#include <curl/curl.h>
#include "slicefit/apiwatch.h"

/** Sets the kubeconfig's CA, client certificate and key (data or file) and insecure flag on e. */
void sf__curl_set_tls(CURL *e, const sf_kubeconfig_t *kc);

#endif
