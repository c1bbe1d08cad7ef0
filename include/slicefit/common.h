/*
 * slicefit: shared basics. Error codes, exact quantities and the one
 * allocation family every module uses.
 *
 * Ownership, the rule every header follows (jansson's words; jq states its
 * rule in one sentence at the top of jv.h): a pointer passed in is borrowed
 * for the call unless its contract says the callee steals it or how long it
 * must live, and a pointer handed back, or an object built from another, is
 * borrowed from the object it came from until that object next changes or
 * is destroyed unless its contract says it is new (the caller frees it with
 * the module's _free, _destroy or _dispose): so a pod plan borrows from its
 * cluster until the cluster next changes, and a packer's results from the
 * packer until its next call.
 *
 * "borrowed": the receiver neither frees the pointer nor uses it past that
 * time; "new": the caller owns it; "steals": the callee takes ownership. The
 * pointer fields of a struct that has a _dispose belong to the struct.
 */
#ifndef SLICEFIT_COMMON_H
#define SLICEFIT_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* Error codes: a fallible function returns 0 or one of these (negative). */
#define SF_EINVAL (-22) /* bad argument or value */
#define SF_ENOENT (-2)  /* a named object does not exist */
#define SF_EEXIST (-17) /* the object already exists */
#define SF_ENOSPC (-28) /* would exceed a capacity, counter or limit */
#define SF_ERANGE (-34) /* a number is out of range */
#define SF_EBUSY (-16)  /* the object is in use */
#define SF_E2BIG (-7)   /* an input exceeds a size limit */

/** Static, readable text for an SF_E* code (or "unknown error"). */
const char *sf_strerror(int err);

/*
 * Quantities are exact integers. Capacities and counters are kept in
 * milli-units of the quantity ("80Gi" of memory is 80*2^30*1000), so that
 * fractional quantities such as "500m" stay exact; the decoders reject a
 * value that does not fit. No capacity arithmetic uses floating point.
 */
typedef int64_t sf_milli_t;

#define SF_MILLI_MAX INT64_MAX

/*
 * Allocation never fails: on exhaustion these call abort(),
 * which removes an error path from every caller (Kubernetes restarts us).
 */
void *sf_xmalloc(size_t n);
void *sf_xcalloc(size_t count, size_t size);
void *sf_xrealloc(void *p, size_t n);
char *sf_xstrdup(const char *s);
/** Grows *p (an array of elements of `size` bytes with capacity *cap) to hold at least `need`. */
void sf_xgrow(void *pp, size_t *cap, size_t need, size_t size);

#endif
