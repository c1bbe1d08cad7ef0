/*
 * What the benchmarks read of another process in /proc: its CPU time, so
 * that a figure can say what the daemon spent besides how long a call took.
 */
#ifndef SLICEFIT_BENCH_PROC_H
#define SLICEFIT_BENCH_PROC_H

#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/** A process's user+system CPU seconds (/proc/PID/stat fields 14 and 15), or -1. */
static inline double bench_cpu_s(pid_t pid)
{
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
  if (f)
    fclose(f);
  buf[n] = '\0';
  const char *p = strrchr(buf, ')');
  unsigned long ut = 0, st = 0;
  if (p == NULL ||
      sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
    return -1;
  return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

#endif
