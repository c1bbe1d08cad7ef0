/*
 * The standard process_* metrics of Prometheus client libraries (client_golang's
 * process collector), read from /proc at scrape time: CPU seconds, resident and
 * virtual memory, open and maximum file descriptors, and the start time.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ext_int.h"

typedef struct {
  double cpu_s, start_s;
  unsigned long long vsize, rss_pages;
} stat_t;

/* /proc/self/stat after the command name: fields 14-15 (utime, stime), 22 (starttime), 23-24. */
static int read_stat(stat_t *st)
{
  char buf[1024];
  FILE *f = fopen("/proc/self/stat", "r");
  size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
  if (f)
    fclose(f);
  buf[n] = '\0';
  const char *p = strrchr(buf, ')');
  unsigned long long ut, stt, start;
  if (p == NULL || sscanf(p + 2,
                          "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d "
                          "%*d %*d %llu %llu %llu",
                          &ut, &stt, &start, &st->vsize, &st->rss_pages) != 5)
    return -1;
  double hz = (double)sysconf(_SC_CLK_TCK);
  st->cpu_s = (double)(ut + stt) / hz;
  st->start_s = (double)start / hz;
  return 0;
}

/* Seconds since the epoch of the boot, from /proc/stat's btime. */
static double boot_time(void)
{
  char line[256];
  double bt = 0;
  FILE *f = fopen("/proc/stat", "r");
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "btime %lf", &bt) == 1)
      break;
  if (f)
    fclose(f);
  return bt;
}

static long count_fds(void)
{
  DIR *d = opendir("/proc/self/fd");
  long n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL)
    n += e->d_name[0] != '.';
  if (d)
    closedir(d);
  return d ? n - 1 : -1; /* the one opendir holds */
}

static double max_fds(void)
{
  char line[256];
  double soft = -1;
  FILE *f = fopen("/proc/self/limits", "r");
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "Max open files", 14) == 0 && sscanf(line + 14, "%lf", &soft) == 1)
      break;
  if (f)
    fclose(f);
  return soft;
}

static void gauge(sf__buf_t *b, const char *name, const char *type, const char *help, double v)
{
  sf__buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n%s %.15g\n", name, help, name, type, name, v);
}

void sf__metrics_process(sf__buf_t *b)
{
  stat_t st;
  if (read_stat(&st) == 0) {
    gauge(b, "process_cpu_seconds_total", "counter",
          "Total user and system CPU time spent in seconds.", st.cpu_s);
    gauge(b, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
          (double)st.rss_pages * (double)sysconf(_SC_PAGESIZE));
    gauge(b, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.",
          (double)st.vsize);
    gauge(b, "process_start_time_seconds", "gauge",
          "Start time of the process since unix epoch in seconds.", boot_time() + st.start_s);
  }
  long fds = count_fds();
  if (fds >= 0)
    gauge(b, "process_open_fds", "gauge", "Number of open file descriptors.", (double)fds);
  double mx = max_fds();
  if (mx >= 0)
    gauge(b, "process_max_fds", "gauge", "Maximum number of open file descriptors.", mx);
}
