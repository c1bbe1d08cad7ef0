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
 * owns them.
 */
#ifndef SLICEFIT_CEL_H
#define SLICEFIT_CEL_H

#include "slicefit/demand.h"

typedef struct sf_cel_prog sf_cel_prog_t;
typedef struct sf_cel_cache sf_cel_cache_t;

/** New empty cache of compiled programs. */
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
/** The expression text (borrowed). */
const char *sf_cel_prog_text(const sf_cel_prog_t *p);
/** A nonzero id, unique within the cache: a selector's cache_key. */
uint64_t sf_cel_prog_id(const sf_cel_prog_t *p);

/**
 * Evaluates the program on `dev`: YES, NO (false, or a CEL runtime error),
 * or UNKNOWN (not compiled, unsupported, or over the cost limit). When `why`
 * is not NULL it receives the runtime error or the reason for UNKNOWN.
 */
sf_match_t sf_cel_eval(const sf_cel_prog_t *p, const sf_index_t *idx, sf_dev_id dev, char *why,
                       size_t whylen);

/** An sf_match_fn over a program: `ctx` is the sf_cel_prog_t. */
sf_match_t sf_cel_match(void *ctx, const sf_index_t *idx, sf_dev_id dev);

/** Fills a selector for the program (fn sf_cel_match, cache_key its id). */
void sf_cel_selector(const sf_cel_prog_t *p, sf_selector_t *out);

#endif
