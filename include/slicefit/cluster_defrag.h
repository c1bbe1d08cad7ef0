/*
 * slicefit cluster defrag: the defragmentation planner (slicefit/defrag.h)
 * asked about one ResourceClaim of a cluster, with the cluster's Pods, and
 * its answer as JSON (bin/slicefit-defrag, GET /debug/defrag).
 *
 * Shell code (jansson); no I/O, the time is an argument.
 */
#ifndef SLICEFIT_CLUSTER_DEFRAG_H
#define SLICEFIT_CLUSTER_DEFRAG_H

#include <jansson.h>
#include "slicefit/cluster.h"

/**
 * The demand of a pod plan, or NULL with *why (borrowed from the plan) when
 * the plan cannot be evaluated as one demand: a claim DRA would fail, two
 * claims allocated on different nodes, something slicefit cannot read.
 */
const sf_demand_t *sf_pod_plan_demand(const sf_pod_plan_t *p, const char **why);

/**
 * Plans for the ResourceClaim `claim` ("namespace/name") of a cluster loaded
 * from a snapshot: `items` (borrowed) is the snapshot's objects as a List's
 * items, of which the ResourceClaims say which claims exist (one the
 * decoder refused is "unreadable", not "unknown"); the pods are the
 * cluster's own records (a Pod's controller, creation time and claims; pods
 * that are done are left out); `now_s` is the time in Unix seconds that
 * pods' ages are measured to. Returns a new object:
 *   {"claim", "outcome": "found"|"fits"|"allocated"|"never"|"none"|"unknown"|"unreadable",
 *    "node": NAME|null, "evictions": [{"namespace", "name", "claims": [...],
 *    "gpu_milli", "to_node", "sentence"}], "fits_after": bool,
 *    "gpu_seconds_lost", "work", "why"}
 * Every claim gets an answer; `claim` not of the form NS/NAME is "unknown".
 */
json_t *sf_cluster_defrag(sf_cluster_t *c, const json_t *items, const char *claim, int64_t now_s);

/**
 * The same from the cluster's own records alone (a watched cluster, or a
 * snapshot once loaded): a claim the cluster does not hold is "unknown".
 * Loop thread of the cluster; O(pods) plus the planner's cost.
 */
json_t *sf_cluster_defrag_live(sf_cluster_t *c, const char *claim, int64_t now_s);

/** The answer as text: the why, then one sentence per eviction, a line each (new string). */
char *sf_cluster_defrag_text(const json_t *answer);

/** Seconds since the Unix epoch of an RFC 3339 time in UTC ("2026-11-30T09:00:00Z"), or -1. */
int64_t sf_rfc3339_seconds(const char *s);

#endif
