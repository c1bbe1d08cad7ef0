/*
 * The Alibaba CSV loader: good files load exactly, and every bad input stops
 * the load with FILE:LINE:COL and a readable problem.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "slicefit/replay.h"
#include "bundled.h"

static const char nodes_ok[] = "sn,cpu_milli,memory_mib,gpu,model\n"
                               "n-b,96000,393216,8,G2\n"
                               "n-a,16000,122880,2,P100\n"
                               "n-c,32000,262144,0,\n";

static const char pods_ok[] =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
    "p-0,12000,16384,1,1000,,LS,Running,0,10,0\n"
    "p-1,6000,12288,1,460,V100M16|V100M32|V100M32,LS,Running,1,10,1\n"
    "p-2,4000,8192,0,0,,BE,Failed,2,10,\n"
    "p-3,64000,65536,8,1000,G2,LS,Pending,3,10,\n";

/* Writes text to a fresh temporary file and returns its path (static buffer per slot). */
static const char *tmp(int slot, const char *text)
{
  static char paths[4][64];
  snprintf(paths[slot], sizeof(paths[slot]), "/tmp/sf-replay-csv-XXXXXX");
  int fd = mkstemp(paths[slot]);
  cr_assert(fd >= 0);
  size_t n = strlen(text);
  cr_assert(write(fd, text, n) == (ssize_t)n);
  close(fd);
  return paths[slot];
}

static void load_expect(const char *nodes, const char *pods, const char *want)
{
  sf_replay_trace_t t;
  char err[SF_REPLAY_ERR_MAX] = "";
  sf_replay_trace_init(&t);
  const char *np = tmp(0, nodes), *pp = tmp(1, pods);
  int rc = sf_replay_load_csv(&t, np, pp, err, sizeof err);
  cr_expect_neq(rc, 0, "loaded although it should fail with '%s'", want);
  cr_expect(strstr(err, want) != NULL, "error '%s' lacks '%s'", err, want);
  cr_expect_eq(t.nnodes, 0);
  cr_expect_eq(t.npods, 0);
  sf_replay_trace_dispose(&t);
  unlink(np);
  unlink(pp);
}

Test(replay_csv, good_files_load_exactly)
{
  sf_replay_trace_t t;
  char err[SF_REPLAY_ERR_MAX] = "";
  sf_replay_trace_init(&t);
  const char *np = tmp(0, nodes_ok), *pp = tmp(1, pods_ok);
  cr_assert_eq(sf_replay_load_csv(&t, np, pp, err, sizeof err), 0, "%s", err);
  cr_assert_eq(t.nnodes, 3);
  cr_assert_eq(t.npods, 4);
  cr_expect_str_eq(t.nodes[1].name, "n-a");
  cr_expect_eq(t.nodes[0].mem_bytes, 393216LL << 20);
  cr_expect_eq(t.nodes[0].ngpu, 8);
  cr_expect_str_eq(t.nodes[2].model, "");
  cr_expect_eq(sf_replay_gpu_milli(&t), 10000);
  /* The repeated model in the spec is a set: two models. */
  cr_assert_neq(t.pods[1].spec, 0);
  cr_expect_eq(t.specs[t.pods[1].spec].n, 2);
  cr_expect_str_eq(t.specs[t.pods[1].spec].key, "V100M16|V100M32");
  cr_expect_eq(t.pods[1].load_milli, 460);
  cr_expect_eq(t.pods[1].claims[0].reqs[0].amount, 460);
  cr_expect_eq(t.pods[2].nclaims, 0, "CPU-only pods have no claim");
  cr_expect_eq(t.pods[2].cpu_milli, 4000);
  cr_expect_eq(t.pods[3].load_milli, 8000);
  cr_expect_eq(t.pods[3].claims[0].reqs[0].count, 8);
  sf_replay_trace_dispose(&t);
  unlink(np);
  unlink(pp);
}

Test(replay_csv, five_column_pod_files_and_crlf)
{
  sf_replay_trace_t t;
  char err[SF_REPLAY_ERR_MAX] = "";
  sf_replay_trace_init(&t);
  const char *np = tmp(0, "sn,cpu_milli,memory_mib,gpu,model\r\nn,1000,1024,1,T4\r\n");
  const char *pp = tmp(1, "name,cpu_milli,memory_mib,num_gpu,gpu_milli\r\np,100,10,1,500\r\n\r\n");
  cr_assert_eq(sf_replay_load_csv(&t, np, pp, err, sizeof err), 0, "%s", err);
  cr_expect_eq(t.npods, 1);
  cr_expect_eq(t.pods[0].gpu_milli, 500);
  sf_replay_trace_dispose(&t);
  unlink(np);
  unlink(pp);
}

Test(replay_csv, bad_node_rows)
{
  const char *h = "sn,cpu_milli,memory_mib,gpu,model\n";
  char buf[512];
  load_expect("", pods_ok, "empty file");
  load_expect(h, pods_ok, "no node rows");
  load_expect("sn,cpu_milli,gpu,model\nn,1,1,T4\n", pods_ok, "1:1: missing column 'memory_mib'");
  snprintf(buf, sizeof(buf), "%sn,abc,1,1,T4\n", h);
  load_expect(buf, pods_ok, ":2:3: column 'cpu_milli': expected an integer");
  snprintf(buf, sizeof(buf), "%sn,1000,-5,1,T4\n", h);
  load_expect(buf, pods_ok, ":2:8: column 'memory_mib'");
  snprintf(buf, sizeof(buf), "%sn,1000,10,99,T4\n", h);
  load_expect(buf, pods_ok, "column 'gpu': expected an integer from 0 to 64, got '99'");
  snprintf(buf, sizeof(buf), "%sn,1000,10,2,\n", h);
  load_expect(buf, pods_ok, "needs a model name");
  snprintf(buf, sizeof(buf), "%sn,1000,10,2\n", h);
  load_expect(buf, pods_ok, ":2:12: expected 5 fields as in the header, found 4");
  snprintf(buf, sizeof(buf), "%sn,1000,10,2,T4,x\n", h);
  load_expect(buf, pods_ok, "expected 5 fields");
  snprintf(buf, sizeof(buf), "%sn,1000,10,2,T4\nn,1000,10,2,T4\n", h);
  load_expect(buf, pods_ok, ":3:1: node 'n' appears twice");
  snprintf(buf, sizeof(buf), "%sn,1000,10,2,\"T4\"\n", h);
  load_expect(buf, pods_ok, "quoted fields are not supported");
  snprintf(buf, sizeof(buf), "%sn,99999999999999999999999,10,2,T4\n", h);
  load_expect(buf, pods_ok, "column 'cpu_milli'");
}

Test(replay_csv, bad_pod_rows)
{
  const char *h = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n";
  char buf[512];
  load_expect(nodes_ok, "", "empty file");
  load_expect(nodes_ok, h, "no pod rows");
  load_expect(nodes_ok, "name,cpu_milli,memory_mib,num_gpu\np,1,1,1\n", "missing column 'gpu_milli'");
  snprintf(buf, sizeof(buf), "%sp,1,1,1,1001,\n", h);
  load_expect(nodes_ok, buf, ":2:9: column 'gpu_milli': expected an integer from 0 to 1000");
  snprintf(buf, sizeof(buf), "%sp,1,1,0,500,\n", h);
  load_expect(nodes_ok, buf, "column 'gpu_milli': 500 for a pod with num_gpu 0");
  snprintf(buf, sizeof(buf), "%sp,1,1,2,500,\n", h);
  load_expect(nodes_ok, buf, "must take whole GPUs (1000), got 500");
  snprintf(buf, sizeof(buf), "%sp,1,1,1,0,\n", h);
  load_expect(nodes_ok, buf, "0 for a pod with num_gpu 1");
  snprintf(buf, sizeof(buf), "%sp,1.5,1,1,100,\n", h);
  load_expect(nodes_ok, buf, "column 'cpu_milli': expected an integer");
  snprintf(buf, sizeof(buf), "%sp,1,1,1,100,T 4\n", h);
  load_expect(nodes_ok, buf, "column 'gpu_spec': unexpected character");
  snprintf(buf, sizeof(buf), "%s,1,1,1,100,\n", h);
  load_expect(nodes_ok, buf, "column 'name': bad pod name");
}

Test(replay_csv, missing_file_is_an_error)
{
  sf_replay_trace_t t;
  char err[SF_REPLAY_ERR_MAX] = "";
  sf_replay_trace_init(&t);
  cr_expect_eq(sf_replay_load_csv(&t, "/nonexistent/nodes.csv", "/nonexistent/pods.csv", err,
                                  sizeof err),
               SF_ENOENT);
  cr_expect(strstr(err, "/nonexistent/nodes.csv: cannot open") != NULL, "%s", err);
  sf_replay_trace_dispose(&t);
}

Test(replay_csv, bundled_synthetic_trace_loads)
{
  sf_replay_trace_t t;
  sf_test_load_bundled(&t);
  cr_expect_eq(t.nnodes, 200);
  cr_expect_gt(t.npods, 1000);
  sf_replay_trace_dispose(&t);
}

/* creation_time, where the list has it, is the pod's `at` (what --search splits the history by). */
Test(replay_csv, creation_time_is_read_when_present)
{
  sf_replay_trace_t t;
  char err[SF_REPLAY_ERR_MAX] = "";
  const char *h = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time\n";
  char buf[512];
  snprintf(buf, sizeof(buf), "%sp-0,1,1,1,100,500\np-1,1,1,1,100,\np-2,1,1,0,0,7\n", h);
  sf_replay_trace_init(&t);
  const char *np = tmp(0, nodes_ok), *pp = tmp(1, buf);
  cr_assert_eq(sf_replay_load_csv(&t, np, pp, err, sizeof err), 0, "%s", err);
  cr_expect_eq(t.pods[0].at, 500);
  cr_expect_eq(t.pods[1].at, 0, "an empty creation_time counts as 0");
  cr_expect_eq(t.pods[2].at, 7);
  sf_replay_trace_dispose(&t);
  unlink(np);
  unlink(pp);
  snprintf(buf, sizeof(buf), "%sp-0,1,1,1,100,soon\n", h);
  load_expect(nodes_ok, buf, ":2:15: column 'creation_time': expected an integer");
}
