/* The example cluster's nodes and pods made from the fixtures (see cases.h). */
#include "cases.h"
#include <criterion/criterion.h>
#include <string.h>
#include "harness.h"

const char *const sfx_nodes[SFX_NNODES + 1] = {"h100-0", "h100-1", "h100-2", "h100-3", "a100-0",
                                               "a100-1", "a100-2", "a100-3", "rtx-0",  "rtx-1",
                                               "rtx-2",  "rtx-3",  "rtx-4",  "rtx-5",  "rtx-6",
                                               "rtx-7",  NULL};

static const char *claim_of(const json_t *list, const char *ns, const char *pod)
{
  size_t i;
  const json_t *it;
  json_array_foreach(json_object_get(list, "items"), i, it)
  {
    const json_t *md = json_object_get(it, "metadata");
    const json_t *owner = json_array_get(json_object_get(md, "ownerReferences"), 0);
    const char *kind = json_string_value(json_object_get(it, "kind"));
    const char *nsv = json_string_value(json_object_get(md, "namespace"));
    const char *on = json_string_value(json_object_get(owner, "name"));
    if (kind && strcmp(kind, "ResourceClaim") == 0 && nsv && strcmp(nsv, ns) == 0 && on &&
        strcmp(on, pod) == 0)
      return json_string_value(json_object_get(md, "name"));
  }
  return NULL;
}

json_t *sfx_pod(const char *file, const char *ns, const char *name)
{
  char rel[256];
  snprintf(rel, sizeof rel, "test/extender/data/%s", file);
  json_t *pod = sfx_load(rel);
  json_t *md = json_object_get(pod, "metadata");
  json_object_set_new(md, "namespace", json_string(ns));
  json_object_set_new(md, "name", json_string(name));
  json_t *list = sfx_load("extender/example-cluster.json");
  const char *claim = claim_of(list, ns, name);
  if (claim)
    json_object_set_new(json_object_get(pod, "status"), "resourceClaimStatuses",
                        json_pack("[{s:s,s:s}]", "name", "gpu", "resourceClaimName", claim));
  json_decref(list);
  return pod;
}

bool sfx_in(const char *node, const char *const *list)
{
  for (; *list; list++)
    if (strcmp(*list, node) == 0)
      return true;
  return false;
}

json_t *sfx_filter_pod(sfx_t *s, const char *ns, const char *name)
{
  json_t *pod = sfx_pod("pod-gpu-test1.json", ns, name);
  json_t *args = sfx_args(pod, sfx_nodes, SFX_NNODES, true);
  long status;
  json_t *res = sfx_post_json(s, "/filter", args, &status);
  cr_assert_eq(status, 200);
  json_decref(args);
  json_decref(pod);
  return res;
}
