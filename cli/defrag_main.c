/*
 * bin/slicefit-defrag: the fewest evictions that let a waiting claim fit,
 * planned on a snapshot of a cluster (kubectl get
 * resourceslices,resourceclaims,deviceclasses,nodes,pods -A -o json).
 * Read-only: it prints the plan and changes nothing.
 *
 * usage: slicefit-defrag --snapshot FILE --claim NS/NAME [--json]
 *                        [--policy FILE] [--now RFC3339]
 *
 * Every claim gets an answer (exit 0): an unknown claim, one already
 * allocated, one that fits now or fits nowhere each say so. Exit 2 for bad
 * usage or a snapshot that cannot be read.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "slicefit/cluster.h"
#include "slicefit/cluster_defrag.h"

static const char usage[] =
    "usage: slicefit-defrag --snapshot FILE --claim NS/NAME [--json] [--policy FILE] "
    "[--now RFC3339]\n"
    "  Plans the fewest evictions that let the waiting ResourceClaim NS/NAME fit, on a\n"
    "  snapshot (a List of ResourceSlices, ResourceClaims, DeviceClasses, Nodes and Pods).\n"
    "  --policy FILE  a JSON object of policy keys (a ConfigMap's data), e.g. defrag_max_evictions\n"
    "  --now TIME     the time pods' ages are measured to (default: the clock)\n";

typedef struct {
  const char *snapshot, *claim, *policy, *now;
  bool json;
} opts_t;

static int parse(int argc, char **argv, opts_t *o)
{
  memset(o, 0, sizeof(*o));
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char **dst = strcmp(a, "--snapshot") == 0 ? &o->snapshot
                       : strcmp(a, "--claim") == 0  ? &o->claim
                       : strcmp(a, "--policy") == 0 ? &o->policy
                       : strcmp(a, "--now") == 0    ? &o->now
                                                    : NULL;
    if (strcmp(a, "--json") == 0)
      o->json = true;
    else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(usage, stdout);
      exit(0);
    } else if (dst == NULL || i + 1 >= argc) {
      fprintf(stderr, "slicefit-defrag: %s %s\n%s", dst ? "missing value for" : "unknown option", a,
              usage);
      return -1;
    } else
      *dst = argv[++i];
  }
  if (o->snapshot == NULL || o->claim == NULL) {
    fprintf(stderr, "slicefit-defrag: --snapshot and --claim are required\n%s", usage);
    return -1;
  }
  return 0;
}

static int load_policy(const char *path, sf_policy_t *pol)
{
  json_error_t je;
  char err[512];
  const char *k;
  json_t *v, *o = json_load_file(path, 0, &je);
  int rc = 0;
  sf_policy_init(pol);
  if (!json_is_object(o)) {
    fprintf(stderr, "slicefit-defrag: %s: %s\n", path, o ? "not a JSON object" : je.text);
    json_decref(o);
    return -1;
  }
  json_object_foreach(o, k, v)
  {
    if (!json_is_string(v) || sf_policy_set(pol, k, json_string_value(v), err, sizeof err) != 0) {
      fprintf(stderr, "slicefit-defrag: %s: %s\n", path,
              json_is_string(v) ? err : "every value must be a string");
      rc = -1;
      break;
    }
  }
  json_decref(o);
  return rc;
}

int main(int argc, char **argv)
{
  opts_t o;
  sf_policy_t pol;
  json_error_t je;
  char err[SF_ERR_MAX];
  int rc = 2;
  int64_t now = (int64_t)time(NULL);
  json_t *snap = NULL, *answer = NULL;
  sf_cluster_t *c = NULL;
  if (parse(argc, argv, &o) != 0)
    return 2;
  if (o.now != NULL && (now = sf_rfc3339_seconds(o.now)) < 0) {
    fprintf(stderr, "slicefit-defrag: --now: expected an RFC 3339 time in UTC, got \"%s\"\n", o.now);
    return 2;
  }
  if (o.policy != NULL ? load_policy(o.policy, &pol) != 0 : (sf_policy_init(&pol), 0))
    goto done;
  if ((snap = json_load_file(o.snapshot, 0, &je)) == NULL) {
    fprintf(stderr, "slicefit-defrag: %s: line %d: %s\n", o.snapshot, je.line, je.text);
    goto done;
  }
  c = sf_cluster_create(&pol);
  if (!json_is_array(json_object_get(snap, "items"))) {
    fprintf(stderr, "slicefit-defrag: %s: not a List (no \"items\" array)\n", o.snapshot);
    goto done;
  }
  if (sf_cluster_load_list(c, snap, err, sizeof err) != 0) {
    fprintf(stderr, "slicefit-defrag: %s: %s\n", o.snapshot, err);
    goto done;
  }
  answer = sf_cluster_defrag(c, json_object_get(snap, "items"), o.claim, now);
  if (o.json) {
    json_dumpf(answer, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    fputc('\n', stdout);
  } else {
    char *text = sf_cluster_defrag_text(answer);
    fputs(text, stdout);
    free(text);
  }
  rc = 0;
done:
  json_decref(answer);
  json_decref(snap);
  sf_cluster_destroy(c);
  sf_policy_dispose(&pol);
  return rc;
}
