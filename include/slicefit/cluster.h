/*
 * slicefit cluster: the Kubernetes objects the daemon knows (ResourceSlices,
 * ResourceClaims, DeviceClasses, DeviceTaintRules) and the packing index
 * built from them. The extender answers from it; apiwatch and --snapshot
 * feed it. One owner (the libuv loop) mutates it; not thread-safe.
 *
 * Objects come in as jansson values exactly as kube-apiserver serves them
 * (resource.k8s.io/v1, and core/v1 Nodes and Pods for node CPU and memory). The cluster keeps a reference to each object it
 * stores and borrows its strings: do not modify an object once applied
 * (decref it freely). Every apply is all-or-nothing: on error the cluster
 * is unchanged and `err` names the JSON path and the reason, e.g.
 * "spec.devices[3].capacity.memory.value: '12Qi' is not a quantity".
 *
 * Shell code (uses jansson); the pure core is reached through index.h and
 * packer.h.
 */
#ifndef SLICEFIT_CLUSTER_H
#define SLICEFIT_CLUSTER_H

#include <jansson.h>
#include "slicefit/index.h"
#include "slicefit/packer.h"
#include "slicefit/policy.h"

typedef struct sf_cluster sf_cluster_t;

typedef enum {
  SF_KIND_UNKNOWN = 0,
  SF_KIND_RESOURCE_SLICE,
  SF_KIND_RESOURCE_CLAIM,
  SF_KIND_DEVICE_CLASS,
  SF_KIND_DEVICE_TAINT_RULE,
  SF_KIND_NODE, /* core/v1 Node: its name, labels and allocatable CPU and memory */
  SF_KIND_POD,  /* core/v1 Pod: its node, CPU and memory requests and first claim */
  SF_KIND_COUNT
} sf_kind_t;

#define SF_ERR_MAX 256

/** `kind` of an object's "kind" field ("ResourceSlice", ...), or SF_KIND_UNKNOWN. */
sf_kind_t sf_kind_from_name(const char *kind);
const char *sf_kind_name(sf_kind_t kind);

/**
 * New empty cluster under a copy of `pol` (NULL: the defaults), whose maps
 * of names hash under `hash_seed` (slicefit/map.h): the daemon passes a
 * random seed, since the names come from the API server.
 */
sf_cluster_t *sf_cluster_create_seeded(const sf_policy_t *pol, uint64_t hash_seed);
/** The same with seed 0, for trusted input (tests, benchmarks, a replayed trace). */
sf_cluster_t *sf_cluster_create(const sf_policy_t *pol);
/** Frees the cluster, its index and its objects' references; accepts NULL. */
void sf_cluster_destroy(sf_cluster_t *c);

/** Replaces the policy in force (copied); re-applies its device facts. */
void sf_cluster_set_policy(sf_cluster_t *c, const sf_policy_t *pol);
/**
 * The cluster's Kubernetes minor version (34 for 1.34), so that answers follow that version's
 * allocator and its default feature gates: devices with bindingConditions are selectable from 1.36
 * on (DRADeviceBindingConditions, beta and on by default there). 0, the default: unknown, every
 * gate slicefit models on. Republishes the pools when an answer changes. Loop thread.
 */
void sf_cluster_set_kube_minor(sf_cluster_t *c, int minor);
/** The minor version set, 0 when unknown. */
int sf_cluster_kube_minor(const sf_cluster_t *c);
/** The policy in force (borrowed until the next sf_cluster_set_policy). */
const sf_policy_t *sf_cluster_policy(const sf_cluster_t *c);

/**
 * Adds or replaces one object (by kind, namespace and name). `kind`
 * SF_KIND_UNKNOWN takes it from the object's "kind" field. A claim whose
 * status.allocation is set is recorded in the index as an allocation
 * (forced: the API server is the truth). Pools count only the slices of
 * their newest generation; a pool whose slices are not all present yet is
 * incomplete and offers no device.
 */
int sf_cluster_apply(sf_cluster_t *c, sf_kind_t kind, const json_t *obj, char *err, size_t errlen);
/** Removes one object, given the object (or any object with its metadata). */
int sf_cluster_delete(sf_cluster_t *c, sf_kind_t kind, const json_t *obj, char *err, size_t errlen);
/**
 * Replaces every object of `kind` with the `items` array (a relist) in one
 * step: objects absent from it are deleted. All-or-nothing.
 */
int sf_cluster_replace(sf_cluster_t *c, sf_kind_t kind, const json_t *items, char *err,
                       size_t errlen);
/**
 * Loads a List or any XList ("kind": "List", items of mixed kinds), as
 * `kubectl get resourceslices,resourceclaims,deviceclasses -A -o json`
 * prints it. Items of kinds the cluster does not track are skipped.
 */
int sf_cluster_load_list(sf_cluster_t *c, const json_t *list, char *err, size_t errlen);
/**
 * sf_cluster_load_list as live mode treats objects: an item that does not decode (an older
 * apiVersion, a bad quantity, too many attributes) is rejected alone, logged as apiwatch logs it
 * ("object rejected" with its resource, name and the decoder's error) and counted
 * (sf_cluster_rejected), and the rest loads. Errors only for a `list` without items, or a step
 * of the load that fails as a whole.
 */
int sf_cluster_load_list_each(sf_cluster_t *c, const json_t *list, char *err, size_t errlen);
/** Objects of `kind` refused as bad input since the cluster was created (loads, applies). */
uint64_t sf_cluster_rejected(const sf_cluster_t *c, sf_kind_t kind);
/**
 * Items of lists whose kind the cluster does not track (ResourceClaimTemplate, Namespace, ...),
 * counted by kind name since the cluster was created: borrowed JSON object of integers.
 */
const json_t *sf_cluster_ignored(const sf_cluster_t *c);
/**
 * Item i of such a list (borrowed) decoded by its "kind": *out a new object,
 * or NULL for a kind the cluster does not track (counted as ignored) and,
 * with `each`, for an item that does not decode (rejected alone, as
 * sf_cluster_load_list_each rejects one). Else SF_EINVAL with
 * "items[i].path: reason" in `err`. With sf_cluster_load_objects, a list is
 * loaded as its items are read (listscan.h), never held whole.
 */
struct sf_object; /* decode.h */
int sf_cluster_decode_item(sf_cluster_t *c, const json_t *it, size_t i, bool each,
                           struct sf_object **out, char *err, size_t errlen);
/**
 * Loads decoded objects as sf_cluster_load_list loads a list's items: steals
 * objs[0..n) (the array stays the caller's), frees them on an error.
 */
int sf_cluster_load_objects(sf_cluster_t *c, struct sf_object **objs, size_t n, char *err,
                            size_t errlen);

/** The cluster's index (borrowed: it lives as long as the cluster). */
sf_index_t *sf_cluster_index(sf_cluster_t *c);
/** Number of objects of a kind. */
size_t sf_cluster_count(const sf_cluster_t *c, sf_kind_t kind);

/* ---- one pod's demand ---- */

typedef struct sf_pod_plan sf_pod_plan_t;

/**
 * Resolves a Pod (core/v1 JSON) against the cluster: its claims by
 * namespace and name (spec.resourceClaims, through
 * status.resourceClaimStatuses for claims made from templates), its
 * containers' extended-resource requests that a DeviceClass names
 * (extendedResourceName) as implicit claims. Claims already allocated pin
 * the pod to their node. Errors only for a malformed pod. `pod` is
 * borrowed; *out is new (sf_pod_plan_free) and borrows from the cluster
 * until the cluster next changes (apply, delete, replace, set_policy):
 * evaluate it before then.
 */
int sf_cluster_plan(sf_cluster_t *c, const json_t *pod, sf_pod_plan_t **out, char *err,
                    size_t errlen);
/** Frees a plan; accepts NULL. */
void sf_pod_plan_free(sf_pod_plan_t *p);
/** True when the pod asks nothing of the devices slicefit knows: every node passes. */
bool sf_pod_plan_empty(const sf_pod_plan_t *p);

/**
 * Filters and scores node `names` for the plan; out[i] for names[i]. A name
 * the index does not know is NO when Nodes are tracked and the name is a
 * known Node (no complete, valid pool reaches it), else UNSURE (the in-tree
 * plugin judges it).
 */
int sf_cluster_evaluate(sf_cluster_t *c, const sf_pod_plan_t *p, const char *const *names, size_t n,
                        sf_verdict_t *out);
/**
 * The same for a caller that knows its name lists: `list` (nonzero) says
 * these are, name for name, the names it passed last time with that id, so
 * the nodes found for them then are taken again without reading a name
 * (unless a node came or went since). 0: an unknown list, as above.
 * Cost: the packer's over the known nodes, O(1) per name for a known list.
 */
int sf_cluster_evaluate_list(sf_cluster_t *c, const sf_pod_plan_t *p, const char *const *names,
                             size_t n, uint64_t list, sf_verdict_t *out);

/**
 * Checks the pods' bookkeeping: each node's CPU and memory in use equal the
 * sum over the pods bound to it recomputed from the pod set, and the index
 * node carries them and the Node's allocatable amounts. 0, or SF_EINVAL with
 * the first difference in `err`. Cost: O(pods + nodes); for tests.
 */
int sf_cluster_pods_validate(const sf_cluster_t *c, char *err, size_t errlen);

/**
 * How many times a pod was kept, forgotten or changed in what slicefit uses
 * of it (its node, its requests, its first claim). A pod event that moves it
 * changed the index; one that does not (most pod status updates) did not,
 * and answers cached before it are still right.
 */
uint64_t sf_cluster_pod_changes(const sf_cluster_t *c);

/** Index allocations that hold the CPU and memory of a node's pods (one per node with bound pods), not claims. */
size_t sf_cluster_pod_allocations(const sf_cluster_t *c);

/** The value of label `key` of Node `node` (borrowed, valid until the Node changes), or NULL. */
const char *sf_cluster_node_label(const sf_cluster_t *c, const char *node, const char *key);

/** Pools invalid for some node (duplicate device names, unknown counter sets, ...). */
size_t sf_cluster_invalid_pools(const sf_cluster_t *c);

/**
 * JSON of nodes (with CPU and memory), devices, free capacity, allocations,
 * the learned mix and the policy (GET /debug/state); a new reference. The
 * learned mix is brought up to date first, as before an evaluation.
 */
json_t *sf_cluster_state_json(sf_cluster_t *c);

#endif
