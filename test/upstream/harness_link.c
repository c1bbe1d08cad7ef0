/*
 * The extender's integration harness (start bin/slicefit, talk HTTP to it),
 * compiled into this suite too: test/upstream is its own Criterion binary and
 * the Makefile links a suite from its own folder only.
 */
#include "../extender/harness.c"
