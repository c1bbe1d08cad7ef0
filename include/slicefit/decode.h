/*
 * slicefit decode: Kubernetes objects (resource.k8s.io/v1 DRA kinds, core/v1
 * Pod and Node) from their jansson values into plain C structs.
 *
 * Input is untrusted: every field is type-checked and a bad one fails the
 * whole object with "JSON.path: reason" in `err`, e.g.
 * "spec.devices[3].capacity.memory.value: '12Qi' is not a quantity".
 * Unknown fields are ignored and every optional field may be absent (feature
 * gates drop them). Enum values the decoder does not know are kept as
 * "unknown" (the cluster then answers unsure), so that the upstream
 * round-trip test data, with placeholders in every field, decodes whole.
 *
 * Ownership: a decoded object keeps a reference to its JSON value and
 * borrows its strings from it, but for the two kinds that are many: a
 * ResourceClaim keeps everything it points at in one block of its own and
 * no reference, a ResourceSlice the same, and only its node selectors and
 * counter sets as JSON; everything else lives in the object's arena.
 * sf_object_free releases both. Attribute and capacity names of slices are
 * fully qualified ("gpu.nvidia.com/memory"): an unqualified name belongs to
 * the slice's driver. Quantities are exact milli-units (quantity.h).
 *
 * Shell code (uses jansson). Not thread-safe per object; decoders share no
 * state.
 */
#ifndef SLICEFIT_DECODE_H
#define SLICEFIT_DECODE_H

#include <stdbool.h>
#include <jansson.h>
#include "slicefit/index.h"
#include "slicefit/demand.h"

/* The first four match sf_kind_t of cluster.h. */
typedef enum {
  SF_OBJ_UNKNOWN = 0,
  SF_OBJ_RESOURCE_SLICE,
  SF_OBJ_RESOURCE_CLAIM,
  SF_OBJ_DEVICE_CLASS,
  SF_OBJ_DEVICE_TAINT_RULE,
  SF_OBJ_CLAIM_TEMPLATE,
  SF_OBJ_POD,
  SF_OBJ_NODE,
  SF_OBJ_COUNT
} sf_obj_kind_t;

typedef struct {
  const char *ns; /* "" for cluster-scoped objects */
  const char *name;
  const char *uid, *rv; /* "" when absent */
} sf_meta_t;

/* ---- ResourceSlice ---- */

typedef enum {
  SF_NODESEL_NONE = 0,  /* nothing set (only legal per device) */
  SF_NODESEL_NAME,      /* nodeName */
  SF_NODESEL_ALL,       /* allNodes */
  SF_NODESEL_SELECTOR,  /* nodeSelector */
  SF_NODESEL_PER_DEVICE /* perDeviceNodeSelection (slice level only) */
} sf_nodesel_t;

typedef struct {
  sf_meta_t meta;
  const char *driver, *pool;
  int64_t generation, slice_count;
  sf_nodesel_t nodesel;
  const char *node; /* SF_NODESEL_NAME */
  /* Devices in published order; names qualified, policies in the arena. */
  sf_device_spec_t *devs;
  size_t ndevs;
  sf_nodesel_t *dev_nodesel; /* per device (SF_NODESEL_NONE unless per-device) */
  const char **dev_node;     /* per device nodeName, or NULL */
  bool *dev_binding;         /* per device: bindingConditions not empty */
  sf_counter_t *counters;
  size_t ncounters; /* sharedCounters, flattened */
  /* Stored by a cluster, which left out its devices' attributes: the index holds them (each
   * device's nattrs is then 0). Never set by sf_decode. */
  bool slim;
} sf_slice_t;

/* ---- ResourceClaim / ResourceClaimTemplate ---- */

typedef enum { SF_MODE_EXACT = 0, SF_MODE_ALL, SF_MODE_UNKNOWN } sf_alloc_mode_t;

typedef struct sf_dreq {
  const char *name;
  const char *class_name;
  const char **selectors;
  size_t nselectors; /* CEL texts */
  sf_alloc_mode_t mode;
  const char *mode_text; /* as written, for reasons */
  int64_t count;
  sf_cap_request_t *caps;
  size_t ncaps; /* names as written (maybe unqualified) */
  sf_toleration_t *tols;
  size_t ntols;
  bool tol_unknown_op; /* an operator other than Exists/Equal */
  bool admin_access;
  struct sf_dreq *alts;
  size_t nalts; /* firstAvailable */
} sf_dreq_t;

typedef struct {
  const char **reqs;
  size_t nreqs;                 /* "req" or "req/sub"; 0: every request */
  const char *match, *distinct; /* matchAttribute, distinctAttribute, or NULL */
} sf_dcons_t;

typedef struct {
  const char *request, *driver, *pool, *device;
  const char *share_id; /* NULL when absent */
  sf_cap_request_t *consumed;
  size_t nconsumed; /* names as written */
  bool admin_access;
} sf_dresult_t;

typedef struct {
  const char *api_group, *resource, *name, *uid;
} sf_dref_t;

typedef struct {
  sf_dreq_t *reqs;
  size_t nreqs;
  sf_dcons_t *cons;
  size_t ncons;
} sf_claim_spec_t;

typedef struct {
  sf_meta_t meta;
  sf_claim_spec_t spec;
  bool allocated; /* status.allocation present */
  sf_dresult_t *results;
  size_t nresults;
  const char *alloc_node; /* from allocation.nodeSelector, or NULL */
  sf_dref_t *reserved;
  size_t nreserved;
} sf_rclaim_t;

typedef struct {
  sf_meta_t meta;
  sf_claim_spec_t spec;
} sf_claim_template_t;

/* ---- DeviceClass, DeviceTaintRule ---- */

typedef struct {
  sf_meta_t meta;
  const char **selectors;
  size_t nselectors;
  const char *ext_resource; /* extendedResourceName, or NULL */
  const char *created;      /* metadata.creationTimestamp (RFC 3339, UTC), "" when absent */
} sf_device_class_t;

typedef struct {
  sf_meta_t meta;
  const char *driver, *pool, *device; /* NULL: any */
  bool by_class; /* v1alpha3 deviceClassName / selectors: not evaluated, so the rule taints nothing */
  sf_taint_t taint;
} sf_taint_rule_t;

/* ---- Pod, Node ---- */

typedef struct {
  const char *name;
  const char *claim_name, *template_name; /* at least one non-NULL (claim_name wins) */
} sf_pod_claim_t;

typedef struct {
  const char *name, *request;
} sf_ctr_claim_t;

typedef struct {
  const char *name;
  bool init;
  bool sidecar;                 /* an init container with restartPolicy Always */
  int64_t cpu_milli, mem_bytes; /* resources.requests cpu, memory; 0 when absent */
  sf_ctr_claim_t *claims;
  size_t nclaims;
  /* Extended resources (names with a '/'): requests, else limits. */
  sf_cap_request_t *ext;
  size_t next;
} sf_container_t;

typedef struct {
  const char *name, *claim_name;
} sf_claim_status_t;
typedef struct {
  const char *container, *resource, *request;
} sf_ext_mapping_t;

typedef struct {
  sf_meta_t meta;
  const char *node_name; /* spec.nodeName, or NULL */
  sf_pod_claim_t *claims;
  size_t nclaims;
  sf_container_t *ctrs;
  size_t nctrs; /* initContainers first */
  sf_claim_status_t *statuses;
  size_t nstatuses;
  const char *ext_claim; /* extendedResourceClaimStatus.resourceClaimName */
  sf_ext_mapping_t *ext_maps;
  size_t next_maps;
  /*
   * What the pod requests of its node, as kube-scheduler's NodeResourcesFit
   * counts it (k8s.io/component-helpers resource.PodRequests from the spec):
   * max(sum of containers and sidecars, each init container plus the sidecars
   * before it), pod-level spec.resources.requests in place of that when set,
   * plus spec.overhead. A missing request counts 0.
   */
  int64_t cpu_milli, mem_bytes;
  bool terminal;       /* status.phase Succeeded or Failed */
  bool controller;     /* an ownerReferences entry has controller: true (a controller recreates it) */
  const char *created; /* metadata.creationTimestamp, NULL when absent or not a string */
} sf_pod_t;

typedef struct {
  const char *key, *value;
} sf_label_t;

typedef struct {
  sf_meta_t meta;
  sf_label_t *labels;
  size_t nlabels;
  int64_t cpu_milli, mem_bytes; /* allocatable; 0 when absent */
  sf_cap_request_t *alloc;
  size_t nalloc; /* every allocatable entry */
} sf_node_t;

/* ---- the decoded object ---- */

typedef struct sf_object {
  sf_obj_kind_t kind;
  union {
    sf_meta_t meta; /* every member starts with it */
    sf_slice_t slice;
    sf_rclaim_t claim;
    sf_claim_template_t tmpl;
    sf_device_class_t dclass;
    sf_taint_rule_t rule;
    sf_pod_t pod;
    sf_node_t node;
  } u;
  struct sf_arena *arena; /* private */
  json_t *json;           /* private: the source, referenced (NULL: claims) */
} sf_object_t;

/** Kind of a "kind" name ("ResourceSlice", "Pod", ...), or SF_OBJ_UNKNOWN. */
sf_obj_kind_t sf_obj_kind_from_name(const char *name);
const char *sf_obj_kind_name(sf_obj_kind_t kind);

/**
 * Decodes `j` (borrowed; referenced by the result) as `kind`, or from its
 * "kind" field when `kind` is SF_OBJ_UNKNOWN. *out gets a new object on
 * success. SF_EINVAL with "path: reason" in `err` on bad input.
 * Cost: O(size of the object).
 */
int sf_decode(const json_t *j, sf_obj_kind_t kind, sf_object_t **out, char *err, size_t errlen);
/** Frees a decoded object; accepts NULL. */
void sf_object_free(sf_object_t *o);

/**
 * Metadata only (namespace, name): enough to delete an object. Strings are
 * borrowed from `j`. SF_EINVAL without metadata.name.
 */
int sf_decode_meta(const json_t *j, sf_meta_t *out, char *err, size_t errlen);

/**
 * Items of a List or XList ("items" array), borrowed from `j`; SF_EINVAL
 * when `j` has no "items" array.
 */
int sf_decode_list_items(const json_t *j, const json_t **items, char *err, size_t errlen);

#endif
