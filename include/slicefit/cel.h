/*
 * slicefit CEL: the subset of the Common Expression Language that DRA's
 * DeviceClass and claim selectors use, compiled once per text and
 * evaluated against one device of the index.
 *
 * A program that the compiler cannot parse or does not support, or whose
 * evaluation hits something unsupported or the cost limit, answers
 * SF_MATCH_UNKNOWN, never a silent false: the core then keeps the node and
 * the in-tree DRA plugin stays the judge. A runtime error in the CEL sense
 * (a missing attribute, a type mismatch not absorbed by && or ||) means the
 * selector does not match: SF_MATCH_NO, as DRA specifies.
 *
 * Pure: no I/O, no clock. Programs are immutable once compiled; the cache
 * owns them. Programs from sf_cel_compile stay as long as the cache; those
 * from sf_cel_acquire stay while referenced, and once released at most
 * `max_idle` of them are kept (least recently used go first), so a cache
 * fed by tenants' selectors stays bounded.
 */
#ifndef SLICEFIT_CEL_H
#define SLICEFIT_CEL_H

#include "slicefit/demand.h"

typedef struct sf_cel_prog sf_cel_prog_t;
typedef struct sf_cel_cache sf_cel_cache_t;

/** New empty cache of compiled programs, keyed by text under `hash_seed` (slicefit/map.h). */
sf_cel_cache_t *sf_cel_cache_create_seeded(uint64_t hash_seed);
/** The same with seed 0, for trusted input (tests, benchmarks, a replayed trace). */
sf_cel_cache_t *sf_cel_cache_create(void);
/** Frees the cache and every program in it; accepts NULL. */
void sf_cel_cache_destroy(sf_cel_cache_t *c);

/**
 * Compiles `text` (borrowed) or returns the program already compiled from
 * the same text. Never NULL: a text that does not compile gives a program
 * that always answers SF_MATCH_UNKNOWN, with sf_cel_prog_error saying why.
 * The program (borrowed) lives as long as the cache.
 */
const sf_cel_prog_t *sf_cel_compile(sf_cel_cache_t *c, const char *text);
/**
 * As sf_cel_compile, but the program is a reference the caller gives back
 * with sf_cel_release; it stays valid until then. Cost: a hash lookup, or a
 * compile.
 */
const sf_cel_prog_t *sf_cel_acquire(sf_cel_cache_t *c, const char *text);
/** Gives back a reference from sf_cel_acquire; past max_idle the oldest idle programs are freed. */
void sf_cel_release(sf_cel_cache_t *c, const sf_cel_prog_t *p);
/** How many idle (released) programs are kept; default 1024. Trims at once. */
void sf_cel_cache_set_max_idle(sf_cel_cache_t *c, size_t max_idle);
/** Programs held now (for tests and metrics). */
size_t sf_cel_cache_size(const sf_cel_cache_t *c);
/** Why the program does not compile ("1:14: unknown function 'foo'"), or NULL when it does. */
const char *sf_cel_prog_error(const sf_cel_prog_t *p);
/**
 * True when the program does not compile because the expression is wrong as
 * CEL itself would find it (a syntax error, an undeclared reference, no
 * overload for the arguments): DRA fails a claim that uses it. False when it
 * compiles, or when it is merely outside slicefit's subset (an unsupported
 * function or literal, a nesting or size limit): the in-tree plugin judges.
 */
bool sf_cel_prog_invalid(const sf_cel_prog_t *p);
/**
 * The oldest Kubernetes 1.x minor version whose API server offers every CEL
 * function and macro the program uses (the strings extension 29, ip/cidr 30,
 * two-variable comprehensions 32, the lists extension 34, ...): on an older
 * cluster DRA rejects the expression. 0 when it uses nothing versioned.
 */
unsigned sf_cel_prog_min_minor(const sf_cel_prog_t *p);
/**
 * The minor version that added the CEL function or macro `name` (a method
 * name, "strings.quote", "sets.contains", "lists.range"; for overloaded
 * names the oldest overload's), or -1 when slicefit does not evaluate it.
 */
int sf_cel_function_minor(const char *name);
/** The expression text (borrowed). */
const char *sf_cel_prog_text(const sf_cel_prog_t *p);
/** A nonzero id, unique within the cache: a selector's cache_key. */
uint64_t sf_cel_prog_id(const sf_cel_prog_t *p);

/**
 * Evaluates the program on `dev`: YES, NO (false, or a CEL runtime error),
 * or UNKNOWN (not compiled, unsupported, or over the cost limit). When `err`
 * is not NULL it receives the runtime error or the reason for UNKNOWN.
 */
sf_match_t sf_cel_eval(const sf_cel_prog_t *p, const sf_index_t *idx, sf_dev_id dev, char *err,
                       size_t errlen);

/** An sf_match_fn over a program: `ctx` is the sf_cel_prog_t. */
sf_match_t sf_cel_match(void *ctx, const sf_index_t *idx, sf_dev_id dev);

/** Fills a selector for the program (fn sf_cel_match, cache_key its id). */
void sf_cel_selector(const sf_cel_prog_t *p, sf_selector_t *out);

#endif
