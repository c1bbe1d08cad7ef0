/*
 * Helpers every file of the core may use (util.c); not a public header.
 */
#ifndef SF_PACKER_UTIL_H
#define SF_PACKER_UTIL_H

#include <stddef.h>

/** Frees each of the `n` pointers of `ptrs` (NULL ones too, as free() does). */
void sf__free_each(void *const *ptrs, size_t n);
/* Frees every argument: a module's dispose of the arrays it owns. */
#define SF__FREE_ALL(...) \
  sf__free_each((void *const[]){__VA_ARGS__}, sizeof((void *const[]){__VA_ARGS__}) / sizeof(void *))

#endif
