/* What the cluster's tests share (test_cluster*.c): the cluster under test, set up by the suite
   `cluster` (test_cluster.c), and helpers that load, apply and plan into it. */
#ifndef SF_TEST_CLUSTER_FX_H
#define SF_TEST_CLUSTER_FX_H

#include "slicefit/cluster.h"
#include "fixture.h"

/** The cluster of the running test, and the last error of a call into it. */
extern sf_cluster_t *ct_cluster;
extern char ct_err[SF_ERR_MAX];

/** Fails the test unless the index is valid. */
void ct_valid(void);
/** Loads test/fixtures/<rel> (a List) into the cluster, and checks it. */
void ct_load(const char *rel);
/** Applies o, which must succeed, and checks the index. */
void ct_apply(json_t *o);
/** The number of devices the index has on `node`. */
size_t ct_node_devs(const char *node);
/** The NVIDIA cluster: 8xA100 on gpu-node-a, 4xH100 on gpu-node-b, the chart's classes. */
void ct_nvidia(void);
/** A slice of `pool` on `node` with `ndev` example-driver devices named prefix-i (new reference). */
json_t *ct_slice(const char *name, const char *node, const char *pool, int gen, int count, int ndev,
                 const char *prefix);
/** The website's allocated claim is on kind-worker, device gpu-4 of pool kind-worker. */
void ct_kind_worker(void);
/** The pod's plan, which must succeed; the caller frees it. */
sf_pod_plan_t *ct_plan(json_t *pod);
/** Evaluates the plan on the named nodes, which must succeed. */
void ct_evaluate(sf_pod_plan_t *p, const char *const *names, size_t n, sf_verdict_t *out);
/** One shared example-driver GPU on n1 as its chart publishes it with gpuAllowMultipleAllocations. */
void ct_shared_gpu_node(void);

#endif
