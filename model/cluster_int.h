/*
 * Internals of the cluster (cluster.h): the object store, pools and the
 * functions that project objects into the index.
 *
 * Layout: one store per tracked kind, an array of decoded objects with a
 * hash map from "namespace/name" (or "name") to the array slot. Pools are
 * kept by "driver\x1fpool" with the stored slices that belong to them and
 * the nodes their devices were last published on. Allocated claims are also
 * kept in a set per pool their allocation takes devices of (a vector of
 * claim-store slots); each claim's slot records its places in those sets.
 */
#ifndef SF_CLUSTER_INT_H
#define SF_CLUSTER_INT_H

#include "slicefit/cluster.h"
#include "slicefit/cel.h"
#include "slicefit/decode.h"
#include "slicefit/map.h"

/* A claim's place in one pool's claim set: the set, and its index there. */
typedef struct {
  uint32_t set, pos;
} cplace_t;
/* What a slot's object is in besides the store (claims: the pool sets). */
typedef struct {
  cplace_t *places;
  uint32_t n;
} slot_ext_t;

typedef struct {
  sf_map_t keys; /* key -> slot */
  sf_object_t **objs;
  slot_ext_t *ext; /* per slot, alongside objs */
  size_t n, cap;
} store_t;

/* Claim-store slots of the claims whose allocation takes a device of one pool. */
typedef struct {
  uint32_t *slots;
  size_t n, cap;
} cset_t;

typedef struct {
  char *driver, *name;
  sf_object_t **slices;
  size_t nslices, capslices; /* borrowed from the slice store */
  char **nodes;
  size_t nnodes; /* owned: nodes the pool is published on */
  int64_t generation;
  bool complete;
  bool reaches_many; /* a slice or device reaches nodes by selector or allNodes */
  bool spans;        /* devices are homed on "@driver/pool" and mirrored to the nodes reaching them */
  size_t skipped;    /* devices of the newest generation published on no node */
  char *invalid;     /* owned: why the pool is invalid for some node, or NULL */
  char **invalid_nodes;
  size_t ninvalid_nodes, capinvalid; /* owned: the nodes it is invalid for */
  char **incomplete_nodes;
  size_t nincomplete_nodes, capincomplete; /* owned: nodes it is incomplete for */
} pool_t;

/*
 * A Node as the cluster keeps it: its name and labels (owned copies), its allocatable amounts,
 * and the extended resources (names with a '/') its allocatable lists, whatever their amount:
 * those a device plugin serves there, which DRA leaves to NodeResourcesFit (KEP-5004).
 */
typedef struct {
  char *name;
  char **keys, **vals;
  size_t nlabels;
  int64_t cpu_milli, mem_bytes;
  char **ext;
  size_t next;
} cnode_t;

/*
 * A pod as the cluster keeps it (cluster_pods.c): only what node CPU, the
 * learned mix and the defragmentation planner need. `key` is one allocation:
 * the pod's key ("ns/name"), then the keys of its `nclaims` claims
 * ("ns/name"), each NUL-terminated (sf__pod_claim walks them; the first is
 * the one whose learned shapes carry the pod's CPU). `host` is its node's
 * slot in hosts (-1: not bound); `created_s` its creationTimestamp in Unix
 * seconds (-1: unknown); `controller` whether a controller recreates it.
 */
typedef struct {
  char *key;
  int64_t cpu_milli, mem_bytes;
  int64_t created_s;
  int32_t host;
  uint16_t nclaims;
  bool controller;
} cpod_t;

/* The pods bound to one node: their summed requests. A slot with name NULL is free. */
typedef struct {
  char *name;
  int64_t cpu_milli, mem_bytes;
  uint32_t npods;
} chost_t;

struct sf_cluster {
  sf_policy_t pol;
  sf_index_t *idx;
  sf_cel_cache_t *cel;
  sf_packer_t *packer;
  uint64_t hash_seed; /* of every map (names come from the API server) */
  store_t stores[SF_KIND_COUNT];
  sf_map_t pool_keys; /* pool key -> slot in pools */
  pool_t **pools;
  size_t npools, cappools;
  sf_map_t logged;    /* expressions already logged as not compiling (a set, bounded) */
  json_t *node_refs;  /* node name -> how many pools list it in their nodes */
  bool mix_dirty;     /* the learned mix must be rebuilt from every claim */
  sf_map_t cset_keys; /* "driver\x1fpool" -> index in csets (a set is never dropped) */
  cset_t *csets;
  size_t ncsets, capcsets;
  struct sf_arena *scratch; /* the learned mix's plans, reset after each */
  sf_claim_t *lclaims;
  size_t caplclaims;
  sf_map_t node_keys; /* Node name -> index in cnodes */
  cnode_t *cnodes;
  size_t ncnodes, capcnodes;
  bool nodes_tracked; /* Nodes come in (a Node list or watch): unknown names are not nodes */
  sf_map_t pod_keys;  /* pod "ns/name" -> index in pods */
  cpod_t *pods;
  size_t npods, cappods;
  sf_map_t host_keys; /* node name -> slot in hosts */
  chost_t *hosts;
  size_t nhosts, caphosts;
  int32_t *free_hosts;
  size_t nfree_hosts, capfree_hosts;
  sf_map_t claim_pods;  /* claim "ns/name" -> index in pods of the pod whose CPU it carries */
  uint64_t pod_changes; /* pods kept or forgotten, moved, resized (sf_cluster_pod_changes) */
  size_t npod_allocs;   /* index allocations "pods on NODE" */
  size_t ninvalid;      /* pools invalid for some node */
  sf_node_id *name_ids; /* per position of the last evaluate's names: the node found (-1: none) */
  size_t nname_ids, capname_ids;
  int kube_minor; /* the cluster's Kubernetes minor version; 0: unknown, every gate on */
  uint64_t rejected[SF_KIND_COUNT]; /* objects refused (bad input), by kind, since start */
  json_t *ignored;        /* kind name -> objects of kinds slicefit does not track, seen in lists */
  uint64_t node_removals; /* index nodes removed: ids are reused after one */
  uint64_t name_list;     /* the caller's id of the names name_ids are for (0: none) */
  size_t name_nodes;      /* the index's node count then */
  uint64_t name_removals; /* node_removals then */
};

/** Does the cluster's allocator select devices with binding conditions (DRADeviceBindingConditions)? */
bool sf__gate_binding_conditions(const sf_cluster_t *c);

/** The Node named `name`, or NULL. */
const cnode_t *sf__node_get(const sf_cluster_t *c, const char *name);
/** A label's value, or NULL. */
const char *sf__node_label(const cnode_t *n, const char *key);
/** Does the Node's allocatable list the extended resource `res` (a device plugin serves it)? */
bool sf__node_has_ext(const cnode_t *n, const char *res);
/** Records a Node (name and labels); true when it is new or its labels changed. */
bool sf__node_set(sf_cluster_t *c, const sf_node_t *o);
/** Forgets a Node; true when it was known. */
bool sf__node_del(sf_cluster_t *c, const char *name);
void sf__nodes_free(sf_cluster_t *c);
/**
 * Brings the index node `name` (if the index has it) in line with the Node's
 * allocatable CPU and memory and the pods bound to it (one allocation,
 * "pods on NAME", forced). Called when a node enters the index, when its
 * Node or its pods change.
 */
void sf__host_sync(sf_cluster_t *c, const char *name);
/** Takes the pods' allocation off the index node (before the node leaves the index). */
void sf__host_unrecord(sf_cluster_t *c, const char *name);
/** Records (or re-records, or forgets when it has ended or asks nothing) a decoded pod. */
void sf__pod_set(sf_cluster_t *c, const sf_pod_t *p);
/** Forgets the pod with key "ns/name". */
void sf__pod_del(sf_cluster_t *c, const char *key);
/** Makes the decoded pods objs[0..n) (freed here) the pods, with the old ones too when `merge`. */
void sf__pods_install(sf_cluster_t *c, sf_object_t **objs, size_t n, bool merge);
/** The key of claim `i` (< nclaims) of a kept pod: borrowed from its record. */
const char *sf__pod_claim(const cpod_t *p, size_t i);
/** CPU of the pod whose first claim is `claim_key`, 0 when none is known. */
int64_t sf__claim_cpu(const sf_cluster_t *c, const char *claim_key);
void sf__pods_init(sf_cluster_t *c);
void sf__pods_free(sf_cluster_t *c);

/** Does the NodeSelector (JSON, core/v1) select the node? */
bool sf__nodesel_match(const json_t *sel, const cnode_t *n);
/** Republishes the pools whose reach depends on Nodes (selectors, allNodes). */
void sf__pools_sync_reaching(sf_cluster_t *c);

/*
 * The learned workload mix is the shapes of the claims present (allocated or
 * not), so that replicas and a restarted daemon learn the same from the same
 * cluster: a claim adds its shapes when it appears and takes them back when
 * it goes. What can change a claim's shapes (classes, the policy, a relist)
 * marks the mix dirty, and it is rebuilt from every claim before next use.
 */
void sf__claim_learn(sf_cluster_t *c, const sf_object_t *o, int sign);
void sf__mix_refresh(sf_cluster_t *c);

/** "ns/name" or "name" of an object's metadata, in buf (cut to len - 1 bytes). */
const char *sf__obj_key(const sf_meta_t *m, char *buf, size_t len);
/** The same; returns the key's length. */
size_t sf__obj_keylen(const sf_meta_t *m, char *buf, size_t len);
/** Stored object by key, or NULL. */
sf_object_t *sf__store_get(const store_t *s, const char *key);
/** Slot of the stored object by key (klen bytes), or -1. */
int32_t sf__store_slot(const store_t *s, const char *key, size_t klen);

/** "driver\x1fpool" in buf (cut to len - 1 bytes); returns its length. */
size_t sf__pool_keylen(const char *driver, const char *pool, char *buf, size_t len);
/** Adds a stored slice to its pool (creating the pool). */
void sf__pool_add_slice(sf_cluster_t *c, sf_object_t *o);
/** Removes a stored slice from its pool (it takes its attributes back from the index first). */
void sf__pool_del_slice(sf_cluster_t *c, sf_object_t *o);
/**
 * Gives a slim stored slice its devices' attributes back from the index
 * (cluster_slim.c), borrowing the index's strings; true when it was slim.
 * Cost: O(its devices and attributes).
 */
bool sf__slice_restore(sf_cluster_t *c, sf_object_t *o);
/**
 * After its pool republished: lets a stored slice's attributes go when the
 * index holds each of its devices' as they are; compacts it anyway when
 * `restored` (sf__slice_restore answered true), so it borrows nothing.
 * Cost: O(its devices and attributes).
 */
void sf__slice_slim(sf_cluster_t *c, sf_object_t *o, bool restored);
/**
 * Republishes one pool (by a slice of it) into the index, node by node as
 * the in-tree allocator sees it. A pool invalid for a node is recorded (and
 * logged once), not an error: it publishes nothing there. Returns 0.
 */
int sf__pool_sync(sf_cluster_t *c, const sf_slice_t *s, char *err, size_t errlen);
/** Republishes every pool; drops pools without slices. */
int sf__pools_sync_all(sf_cluster_t *c, char *err, size_t errlen);
/*
 * Fills `out` (initialised by the caller) with every node a pool reaches but is incomplete or
 * invalid for: value 2 * pool index, plus 1 when invalid. DRA refuses allocation mode All on
 * such a node, whatever the pool's driver. Cost: O(pools and the nodes they are unsettled for).
 */
void sf__pools_unsettled(const sf_cluster_t *c, sf_map_t *out);
/* "driver/pool" of pool i, in buf. */
const char *sf__pool_name(const sf_cluster_t *c, size_t i, char *buf, size_t len);
void sf__pools_free(sf_cluster_t *c);

/** Records (or re-records) a claim's allocation in the index; removes it when unallocated. */
void sf__claim_record(sf_cluster_t *c, const sf_rclaim_t *cl);
/** Removes the claim's allocation from the index. */
void sf__claim_unrecord(sf_cluster_t *c, const sf_meta_t *m);
/** Puts the claim in claim-store slot `slot` in the sets of the pools its allocation takes
 * devices of (forgetting whatever the slot recorded before). */
void sf__claim_pools_add(sf_cluster_t *c, size_t slot);
/** Takes the claim in slot `slot` out of its pool sets. */
void sf__claim_pools_del(sf_cluster_t *c, size_t slot);
/** The claim now in slot `slot` moved there from another: its sets follow. */
void sf__claim_pools_moved(sf_cluster_t *c, size_t slot);
/** Empties every pool set (every claim leaves; slots' records are then stale). */
void sf__claim_pools_reset(sf_cluster_t *c);
void sf__claim_pools_free(sf_cluster_t *c);
/** The same for the claims whose allocation takes a device of the slice's pool, and back. */
void sf__claims_unrecord_pool(sf_cluster_t *c, const sf_slice_t *sl);
void sf__claims_record_pool(sf_cluster_t *c, const sf_slice_t *sl);
/** Takes every claim's allocation off the index (before devices are republished). */
void sf__claims_unrecord_all(sf_cluster_t *c);
/** Re-records every allocated claim (devices may have been republished). */
void sf__claims_record_all(sf_cluster_t *c);

/** Re-applies every DeviceTaintRule to the devices of the index. */
void sf__rules_apply_all(sf_cluster_t *c);
void sf__rule_apply(sf_cluster_t *c, const sf_taint_rule_t *r);

/** Compiles a selector and logs it once when it does not compile. */
/** The program of `text` (a reference: give it back with sf_cel_release); logs a compile error once. */
const sf_cel_prog_t *sf__compile(sf_cluster_t *c, const char *text);

/** `name` qualified with `driver` unless it has a domain; in buf. */
const char *sf__qualify(const char *driver, const char *name, char *buf, size_t len);

#endif
