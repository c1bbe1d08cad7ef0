/*
 * The build's identity: --version and slicefit_build_info. The Makefile
 * passes SF_VERSION and SF_REVISION (git's commit) to this file only, so a
 * new commit recompiles one small object.
 */
#include "slicefit/extender.h"

#ifndef SF_VERSION
#define SF_VERSION "0.1.0"
#endif
#ifndef SF_REVISION
#define SF_REVISION "unknown"
#endif

const char *sf_version(void)
{
  return SF_VERSION;
}
const char *sf_revision(void)
{
  return SF_REVISION;
}
