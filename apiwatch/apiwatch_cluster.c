/*
 * The watcher wired to a cluster: objects go to sf_cluster_apply / _delete /
 * _replace, the policy to sf_cluster_set_policy. Apart from watch.c so that
 * tests with their own sink link without the decoders.
 */
#include "slicefit/apiwatch.h"

static int apply(void *ud, sf_kind_t kind, const json_t *obj, char *err, size_t errlen)
{
  return sf_cluster_apply(ud, kind, obj, err, errlen);
}

static int remove_obj(void *ud, sf_kind_t kind, const json_t *obj, char *err, size_t errlen)
{
  return sf_cluster_delete(ud, kind, obj, err, errlen);
}

static int replace(void *ud, sf_kind_t kind, const json_t *items, char *err, size_t errlen)
{
  return sf_cluster_replace(ud, kind, items, err, errlen);
}

static void set_policy(void *ud, const sf_policy_t *pol)
{
  sf_cluster_set_policy(ud, pol);
}

sf_apiwatch_t *sf_apiwatch_create(uv_loop_t *loop, sf_cluster_t *cluster,
                                  const sf_apiwatch_opts_t *opts, char *err, size_t errlen)
{
  sf_apiwatch_opts_t o = *opts;
  sf_apiwatch_sink_t sink = {apply, remove_obj, replace, cluster};
  if (!o.sink)
    o.sink = &sink;
  if (!o.policy_cb) {
    o.policy_cb = set_policy;
    o.policy_ud = cluster;
  }
  return sf_apiwatch_create_sink(loop, &o, err, errlen);
}
