/* The decoders: upstream fixtures decode whole, every field lands, every error names its path. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "slicefit/decode.h"
#include "fixture.h"

#define Gi (1024LL * 1024 * 1024 * 1000)

static sf_object_t *decode_file(const char *rel)
{
  json_t *j = fx_load(rel);
  sf_object_t *o = NULL;
  char err[256];
  cr_assert_eq(sf_decode(j, SF_OBJ_UNKNOWN, &o, err, sizeof err), 0, "%s: %s", rel, err);
  json_decref(j);
  return o;
}

static const sf_attr_t *attr(const sf_device_spec_t *d, const char *name)
{
  for (size_t i = 0; i < d->nattrs; i++)
    if (!strcmp(d->attrs[i].name, name))
      return &d->attrs[i];
  return NULL;
}

Test(decode, testdata_slice_every_field)
{
  sf_object_t *o = decode_file("k8s-api-testdata/master.resource.k8s.io.v1.ResourceSlice.json");
  const sf_slice_t *s = &o->u.slice;
  cr_assert_eq(o->kind, SF_OBJ_RESOURCE_SLICE);
  cr_assert_str_eq(s->meta.name, "nameValue");
  cr_assert_str_eq(s->driver, "driverValue");
  cr_assert_str_eq(s->pool, "nameValue");
  cr_assert_eq(s->generation, 2);
  cr_assert_eq(s->slice_count, 3);
  cr_assert_eq(s->nodesel, SF_NODESEL_NAME);
  cr_assert_str_eq(s->node, "nodeNameValue");
  cr_assert_eq(s->ndevs, 1);
  const sf_device_spec_t *d = &s->devs[0];
  cr_assert_str_eq(d->name, "nameValue");
  cr_assert_eq(d->nattrs, 1);
  cr_assert_str_eq(d->attrs[0].name, "driverValue/attributesKey");
  cr_assert_eq(d->attrs[0].type, SF_ATTR_INT);
  cr_assert_eq(d->attrs[0].i, 2);
  cr_assert_eq(d->ncaps, 1);
  cr_assert_str_eq(d->caps[0].name, "driverValue/capacityKey");
  cr_assert(d->caps[0].has_policy);
  cr_assert(d->caps[0].policy.has_default);
  cr_assert_eq(d->caps[0].policy.nvalid, 1);
  cr_assert_not(d->caps[0].policy.has_range, "validValues win over validRange");
  cr_assert_eq(d->ncounters, 1);
  cr_assert_str_eq(d->counters[0].set, "counterSetValue");
  cr_assert_str_eq(d->counters[0].counter, "countersKey");
  cr_assert_eq(d->ntaints, 1);
  cr_assert_str_eq(d->taints[0].key, "keyValue");
  cr_assert_eq(d->taints[0].effect, SF_TAINT_NONE, "an unknown effect is None");
  cr_assert(d->allow_multiple);
  cr_assert_eq(s->ncounters, 1);
  cr_assert_str_eq(s->counters[0].set, "nameValue");
  sf_object_free(o);
}

Test(decode, testdata_claim_every_field)
{
  sf_object_t *o = decode_file("k8s-api-testdata/master.resource.k8s.io.v1.ResourceClaim.json");
  const sf_rclaim_t *c = &o->u.claim;
  cr_assert_str_eq(c->meta.ns, "namespaceValue");
  cr_assert_eq(c->spec.nreqs, 1);
  const sf_dreq_t *r = &c->spec.reqs[0];
  cr_assert_str_eq(r->name, "nameValue");
  cr_assert_str_eq(r->class_name, "deviceClassNameValue");
  cr_assert_eq(r->nselectors, 1);
  cr_assert_str_eq(r->selectors[0], "expressionValue");
  cr_assert_eq(r->mode, SF_MODE_UNKNOWN);
  cr_assert_str_eq(r->mode_text, "allocationModeValue");
  cr_assert_eq(r->count, 4);
  cr_assert(r->admin_access);
  cr_assert(r->tol_unknown_op);
  cr_assert_eq(r->ntols, 0, "a toleration with an unknown operator tolerates nothing");
  cr_assert_eq(r->ncaps, 1);
  cr_assert_str_eq(r->caps[0].name, "requestsKey");
  cr_assert_eq(r->nalts, 0, "exactly wins over firstAvailable");
  cr_assert_eq(c->spec.ncons, 1);
  cr_assert_str_eq(c->spec.cons[0].match, "matchAttributeValue");
  cr_assert_str_eq(c->spec.cons[0].reqs[0], "requestsValue");
  cr_assert(c->allocated);
  cr_assert_eq(c->nresults, 1);
  cr_assert_str_eq(c->results[0].device, "deviceValue");
  cr_assert_str_eq(c->results[0].share_id, "shareIDValue");
  cr_assert_eq(c->results[0].nconsumed, 1);
  cr_assert_null(c->alloc_node, "operatorValue is no metadata.name match");
  cr_assert_eq(c->nreserved, 1);
  cr_assert_str_eq(c->reserved[0].uid, "uidValue");
  sf_object_free(o);
}

Test(decode, testdata_pod_class_rule_template)
{
  sf_object_t *o = decode_file("k8s-api-testdata/master.core.v1.Pod.json");
  const sf_pod_t *p = &o->u.pod;
  cr_assert_eq(p->nclaims, 1);
  cr_assert_str_eq(p->claims[0].claim_name, "resourceClaimNameValue");
  cr_assert_gt(p->nctrs, 1);
  cr_assert(p->ctrs[0].init, "init containers first");
  cr_assert_eq(p->ctrs[0].nclaims, 1);
  cr_assert_str_eq(p->ctrs[0].claims[0].request, "requestValue");
  cr_assert_eq(p->nstatuses, 1);
  cr_assert_str_eq(p->ext_claim, "resourceClaimNameValue");
  cr_assert_eq(p->next_maps, 1);
  sf_object_free(o);
  o = decode_file("k8s-api-testdata/master.resource.k8s.io.v1.DeviceClass.json");
  cr_assert_eq(o->u.dclass.nselectors, 1);
  cr_assert_str_eq(o->u.dclass.ext_resource, "extendedResourceNameValue");
  sf_object_free(o);
  o = decode_file("k8s-api-testdata/master.resource.k8s.io.v1.DeviceTaintRule.json");
  cr_assert_str_eq(o->u.rule.device, "deviceValue");
  cr_assert_str_eq(o->u.rule.taint.key, "keyValue");
  sf_object_free(o);
  o = decode_file("k8s-api-testdata/master.resource.k8s.io.v1.ResourceClaimTemplate.json");
  cr_assert_eq(o->u.tmpl.spec.nreqs, 1);
  sf_object_free(o);
}

/* Every object of a tracked kind in every fixture file decodes. */
static void decode_dir(const char *sub, size_t *count)
{
  char dirpath[1024];
  const char *top = getenv("SLICEFIT_TOP");
  snprintf(dirpath, sizeof dirpath, "%s/test/fixtures/%s", top ? top : ".", sub);
  DIR *dir = opendir(dirpath);
  cr_assert(dir, "no %s", dirpath);
  for (struct dirent *e; (e = readdir(dir));) {
    if (!strstr(e->d_name, ".json"))
      continue;
    char rel[512];
    snprintf(rel, sizeof rel, "%s/%s", sub, e->d_name);
    json_t *j = fx_load(rel), *items = json_object_get(j, "items"), *it;
    size_t i;
    if (!items) {
      items = json_array();
      json_array_append(items, j);
    } else {
      json_incref(items);
    }
    json_array_foreach(items, i, it)
    {
      const char *kind = json_string_value(json_object_get(it, "kind"));
      if (sf_obj_kind_from_name(kind) == SF_OBJ_UNKNOWN)
        continue;
      sf_object_t *o = NULL;
      char err[256];
      if (strstr(e->d_name, ".v1beta1.")) { /* the shape of 1.32 and 1.33: refused by name */
        cr_assert_eq(sf_decode(it, SF_OBJ_UNKNOWN, &o, err, sizeof err), SF_EINVAL, "%s", rel);
        cr_assert_str_eq(err,
                         "apiVersion: resource.k8s.io/v1beta1 is not supported (resource.k8s.io/v1 "
                         "or v1beta2)");
        continue;
      }
      cr_assert_eq(sf_decode(it, SF_OBJ_UNKNOWN, &o, err, sizeof err), 0, "%s[%zu]: %s", rel, i, err);
      sf_object_free(o);
      (*count)++;
    }
    json_decref(items);
    json_decref(j);
  }
  closedir(dir);
}

Test(decode, every_fixture_object)
{
  size_t n = 0;
  decode_dir("nvidia-dra-driver-gpu", &n);
  decode_dir("dra-example-driver", &n);
  decode_dir("k8s-website", &n);
  decode_dir("k8s-api-testdata", &n);
  decode_dir(".", &n);
  cr_assert_gt(n, 60, "only %zu objects decoded", n);
}

Test(decode, example_driver_kubectl_output)
{
  json_t *l = fx_load("dra-example-driver/README.kubectl-get-resourceslice-output.json");
  sf_object_t *o = NULL;
  char err[256];
  cr_assert_eq(sf_decode(fx_item(l, 0), SF_OBJ_UNKNOWN, &o, err, sizeof err), 0, "%s", err);
  const sf_slice_t *s = &o->u.slice;
  cr_assert_str_eq(s->node, "dra-example-driver-cluster-worker");
  cr_assert_eq(s->generation, 0);
  cr_assert_eq(s->ndevs, 8);
  const sf_attr_t *a = attr(&s->devs[0], "gpu.example.com/model");
  cr_assert(a);
  cr_assert_eq(a->type, SF_ATTR_STRING);
  cr_assert_str_eq(a->s, "LATEST-GPU-MODEL");
  a = attr(&s->devs[0], "gpu.example.com/driverVersion");
  cr_assert_eq(a->type, SF_ATTR_VERSION);
  cr_assert_str_eq(s->devs[3].caps[0].name, "gpu.example.com/memory");
  cr_assert_eq(s->devs[3].caps[0].value, 80 * Gi);
  sf_object_free(o);
  json_decref(l);
}

Test(decode, nvidia_slice_qualified_names)
{
  json_t *l = fx_load("nvidia-slices.json");
  sf_object_t *o = NULL;
  char err[256];
  cr_assert_eq(sf_decode(fx_item(l, 1), SF_OBJ_RESOURCE_SLICE, &o, err, sizeof err), 0);
  const sf_device_spec_t *d = &o->u.slice.devs[2];
  cr_assert_str_eq(attr(d, "gpu.nvidia.com/productName")->s, "NVIDIA H100 80GB HBM3");
  cr_assert_str_eq(attr(d, "resource.kubernetes.io/pcieRoot")->s, "pci0000:00",
                   "a qualified name keeps its domain");
  cr_assert_eq(d->caps[0].value, 81559LL * 1024 * 1024 * 1000);
  sf_object_free(o);
  json_decref(l);
}

Test(decode, allocated_claim_from_kubectl)
{
  json_t *l = fx_load("k8s-website/install-use-dra.kubectl-get-resourceclaim-output.json");
  sf_object_t *o = NULL;
  char err[256];
  cr_assert_eq(sf_decode(fx_item(l, 0), SF_OBJ_UNKNOWN, &o, err, sizeof err), 0, "%s", err);
  const sf_rclaim_t *c = &o->u.claim;
  cr_assert_str_eq(c->meta.ns, "dra-tutorial");
  cr_assert_str_eq(c->alloc_node, "kind-worker");
  cr_assert_str_eq(c->results[0].device, "gpu-4");
  cr_assert_null(c->results[0].share_id);
  cr_assert_eq(c->spec.reqs[0].mode, SF_MODE_EXACT);
  cr_assert_str_eq(c->reserved[0].name, "pod0");
  sf_object_free(o);
  json_decref(l);
}

Test(decode, pod_extended_resources_and_node)
{
  sf_object_t *o =
      fx_decode("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"n\"},\"spec\":{\"containers\":"
                "[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1\",\"nvidia.com/gpu\":2},"
                "\"limits\":{\"nvidia.com/gpu\":2,\"example.com/x\":\"1\"}}}]}}",
                SF_OBJ_UNKNOWN);
  const sf_container_t *c = &o->u.pod.ctrs[0];
  cr_assert_eq(c->next, 2, "cpu is no extended resource; a limit does not repeat its request");
  cr_assert_str_eq(c->ext[0].name, "nvidia.com/gpu");
  cr_assert_eq(c->ext[0].value, 2000);
  cr_assert_str_eq(c->ext[1].name, "example.com/x");
  sf_object_free(o);
  o = fx_decode("{\"metadata\":{\"name\":\"n1\",\"labels\":{\"nvidia.com/gpu.clique\":\"a.0\"}},"
                "\"status\":{\"allocatable\":{\"cpu\":\"7500m\",\"memory\":\"64Gi\",\"pods\":\"110\"}}}",
                SF_OBJ_NODE);
  cr_assert_eq(o->u.node.cpu_milli, 7500);
  cr_assert_eq(o->u.node.mem_bytes, 64LL << 30);
  cr_assert_eq(o->u.node.nlabels, 1);
  cr_assert_str_eq(o->u.node.labels[0].value, "a.0");
  cr_assert_eq(o->u.node.nalloc, 3);
  sf_object_free(o);
}

/* A bound pod as kube-apiserver serves it: the fields PodRequests reads, among many others. */
#define POD_HEAD                                                                                               \
  "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"trainer-0\",\"namespace\":\"ml\","         \
  "\"uid\":\"6c1c0e2a-3c44-4b8e-9c1e-0f6f2d1b7a11\"},\"spec\":{\"nodeName\":\"gpu-node-1\",\"schedulerName\":" \
  "\"default-scheduler\",\"restartPolicy\":\"Always\","

static sf_pod_t *pod_of(sf_object_t **o, const char *json)
{
  *o = fx_decode(json, SF_OBJ_POD);
  return &(*o)->u.pod;
}

Test(decode, pod_requests_sum_containers_and_add_overhead)
{
  sf_object_t *o;
  const sf_pod_t *p = pod_of(
      &o, POD_HEAD
      "\"overhead\":{\"cpu\":\"250m\",\"memory\":\"120Mi\"},\"runtimeClassName\":\"kata\","
      "\"containers\":[{\"name\":\"main\",\"image\":\"nvcr.io/nvidia/pytorch:24.05-py3\","
      "\"resources\":{\"requests\":{\"cpu\":\"3\",\"memory\":\"16Gi\"},\"limits\":{\"cpu\":\"4\"},"
      "\"claims\":[{\"name\":\"gpu\"}]}},"
      "{\"name\":\"exporter\",\"image\":\"prom/node-exporter\",\"resources\":{\"requests\":{\"cpu\":\"100m\","
      "\"memory\":\"64Mi\"}}},"
      "{\"name\":\"no-requests\",\"image\":\"busybox\"}],"
      "\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimTemplateName\":\"one-gpu\"}]},"
      "\"status\":{\"phase\":\"Running\",\"qosClass\":\"Burstable\"}}");
  cr_assert_eq(p->cpu_milli, 3000 + 100 + 250,
               "containers summed, a missing request is 0, overhead added");
  cr_assert_eq(p->mem_bytes, (16LL << 30) + (64LL << 20) + (120LL << 20));
  cr_assert_not(p->terminal);
  cr_assert_str_eq(p->node_name, "gpu-node-1");
  sf_object_free(o);
}

Test(decode, pod_requests_init_containers_and_sidecars)
{
  sf_object_t *o;
  /* Init containers run one at a time: the largest wins when it exceeds the containers' sum.
   * A sidecar (restartPolicy Always) runs beside everything after it. */
  const sf_pod_t *p = pod_of(
      &o, POD_HEAD
      "\"initContainers\":[{\"name\":\"fetch-weights\",\"resources\":{\"requests\":{\"cpu\":\"2\",\"memory\":\"1Gi\"}}},"
      "{\"name\":\"proxy\",\"restartPolicy\":\"Always\",\"resources\":{\"requests\":{\"cpu\":\"500m\","
      "\"memory\":\"256Mi\"}}},"
      "{\"name\":\"warmup\",\"resources\":{\"requests\":{\"cpu\":\"3\"}}}],"
      "\"containers\":[{\"name\":\"main\",\"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":\"2Gi\"}}}]},"
      "\"status\":{\"phase\":\"Pending\"}}");
  /* CPU: containers 1 + sidecar 0.5 = 1.5; init: fetch 2, warmup 3 + 0.5 = 3.5 -> 3.5.
   * Memory: 2Gi + 256Mi against fetch 1Gi and warmup 256Mi -> 2Gi + 256Mi. */
  cr_assert_eq(p->cpu_milli, 3500);
  cr_assert_eq(p->mem_bytes, (2LL << 30) + (256LL << 20));
  cr_assert(p->ctrs[1].sidecar);
  cr_assert_not(p->ctrs[0].sidecar);
  sf_object_free(o);
}

Test(decode, pod_requests_pod_level_and_rounding)
{
  sf_object_t *o;
  /* Pod-level requests (PodLevelResources) replace the containers' sum for what they name. */
  const sf_pod_t *p =
      pod_of(&o, POD_HEAD
             "\"resources\":{\"requests\":{\"cpu\":\"6\"},\"limits\":{\"cpu\":\"8\"}},"
             "\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":\"1500m\"}}},"
             "{\"name\":\"b\",\"resources\":{\"requests\":{\"cpu\":\"2\",\"memory\":1000}}}]},"
             "\"status\":{\"phase\":\"Succeeded\"}}");
  cr_assert_eq(p->cpu_milli, 6000, "got %lld", (long long)p->cpu_milli);
  cr_assert_eq(p->mem_bytes, 2 + 1000, "1500m bytes round up to 2, as Quantity.Value does");
  cr_assert(p->terminal);
  sf_object_free(o);
  p = pod_of(
      &o,
      "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":null},\"status\":{}}");
  cr_assert_eq(p->cpu_milli, 0);
  cr_assert_eq(p->mem_bytes, 0);
  sf_object_free(o);
}

Test(decode, pod_requests_testdata_every_field)
{
  /* The round-trip data sets "requestsKey" and "overheadKey", no cpu or memory. */
  sf_object_t *o = decode_file("k8s-api-testdata/master.core.v1.Pod.json");
  cr_assert_eq(o->u.pod.cpu_milli, 0);
  cr_assert_eq(o->u.pod.mem_bytes, 0);
  cr_assert_not(o->u.pod.terminal, "phaseValue is no end");
  sf_object_free(o);
}

Test(decode, pod_requests_bad_quantities)
{
  static const struct {
    const char *json, *err;
  } bad[] = {
      {POD_HEAD "\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"two\"}}}]}}",
       "spec.containers[0].resources.requests.cpu: 'two' is not a quantity"},
      {POD_HEAD
       "\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{\"memory\":\"-1Gi\"}}}]}}",
       "spec.containers[0].resources.requests.memory: must not be negative"},
      {POD_HEAD "\"initContainers\":[{\"name\":\"i\",\"resources\":{\"requests\":{\"cpu\":[1]}}}]}}",
       "spec.initContainers[0].resources.requests.cpu: expected a quantity, got an array"},
      {POD_HEAD "\"overhead\":{\"cpu\":\"1Q\"},\"containers\":[]}}",
       "spec.overhead.cpu: '1Q' is not a quantity"},
      {POD_HEAD "\"overhead\":{\"memory\":\"-5\"},\"containers\":[]}}",
       "spec.overhead.memory: must not be negative"},
      {POD_HEAD "\"resources\":{\"requests\":{\"cpu\":true}},\"containers\":[]}}",
       "spec.resources.requests.cpu: expected a quantity, got a boolean"},
      {POD_HEAD "\"initContainers\":[{\"name\":\"i\",\"restartPolicy\":1}]}}",
       "spec.initContainers[0].restartPolicy: expected a string, got an integer"},
      {POD_HEAD "\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"1P\"}}},"
                "{\"name\":\"b\",\"resources\":{\"requests\":{\"cpu\":\"1P\"}}}]}}",
       "spec: the pod's requests add up past 1152921504606846976"},
      {POD_HEAD "\"containers\":[]},\"status\":{\"phase\":3}}",
       "status.phase: expected a string, got an integer"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *got = fx_decode_err(bad[i].json, SF_OBJ_POD);
    cr_expect_str_eq(got, bad[i].err, "case %zu: got \"%s\"", i, got);
  }
}

Test(decode, first_available_and_constraints)
{
  sf_object_t *o = fx_decode(
      "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"c\",\"namespace\":\"n\"},\"spec\":"
      "{\"devices\":{\"requests\":[{\"name\":\"r\",\"firstAvailable\":[{\"name\":\"big\","
      "\"deviceClassName\":\"g\",\"allocationMode\":\"All\"},{\"name\":\"small\",\"deviceClassName\":"
      "\"g\",\"count\":2,\"capacity\":{\"requests\":{\"memory\":\"16Gi\"}},\"tolerations\":[{\"key\":"
      "\"k\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}]}]}],\"constraints\":[{"
      "\"distinctAttribute\":\"gpu.nvidia.com/uuid\"}]}}}",
      SF_OBJ_UNKNOWN);
  const sf_dreq_t *r = &o->u.claim.spec.reqs[0];
  cr_assert_eq(r->nalts, 2);
  cr_assert_eq(r->alts[0].mode, SF_MODE_ALL);
  cr_assert_str_eq(r->alts[1].name, "small");
  cr_assert_eq(r->alts[1].count, 2);
  cr_assert_eq(r->alts[1].caps[0].value, 16 * Gi);
  cr_assert(r->alts[1].tols[0].exists);
  cr_assert_eq(r->alts[1].tols[0].effect, SF_TAINT_NOSCHEDULE);
  cr_assert_eq(o->u.claim.spec.cons[0].nreqs, 0);
  cr_assert_str_eq(o->u.claim.spec.cons[0].distinct, "gpu.nvidia.com/uuid");
  cr_assert_not(o->u.claim.allocated);
  sf_object_free(o);
}

/* ---- errors: each names the JSON path and the reason ---- */

#define SLICE(spec) "{\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":\"s\"},\"spec\":" spec "}"
#define DEV(dev)                                                                                                                   \
  SLICE(                                                                                                                           \
      "{\"driver\":\"d\",\"nodeName\":\"n\",\"pool\":{\"name\":\"p\",\"resourceSliceCount\":1},\"devices\":[{\"name\":\"a\"}," dev \
      "]}")
#define CLAIM(req)                                                                                      \
  "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"c\"},\"spec\":{\"devices\":{\"requests\":[" req \
  "]}}}"

typedef struct {
  const char *json;
  sf_obj_kind_t kind;
  const char *err;
} err_case_t;

static const err_case_t errs[] = {
    {"[]", SF_OBJ_UNKNOWN, "(object): expected an object, got an array"},
    {"{}", SF_OBJ_UNKNOWN, "kind: is required"},
    {"{\"kind\":\"Secret\"}", SF_OBJ_UNKNOWN, "kind: unsupported kind 'Secret'"},
    {"{\"kind\":7}", SF_OBJ_UNKNOWN, "kind: expected a string, got an integer"},
    {"{\"kind\":\"Node\"}", SF_OBJ_UNKNOWN, "metadata: is required"},
    {"{\"kind\":\"Node\",\"metadata\":{}}", SF_OBJ_UNKNOWN, "metadata.name: is required"},
    {"{\"kind\":\"Node\",\"metadata\":{\"name\":\"n\",\"namespace\":1}}", SF_OBJ_UNKNOWN,
     "metadata.namespace: expected a string, got an integer"},
    {SLICE("{}"), SF_OBJ_UNKNOWN, "spec.driver: is required"},
    {SLICE("{\"driver\":\"d\"}"), SF_OBJ_UNKNOWN, "spec.pool: is required"},
    {SLICE("{\"driver\":\"d\",\"pool\":{\"name\":\"p\",\"resourceSliceCount\":0}}"), SF_OBJ_UNKNOWN,
     "spec.pool.resourceSliceCount: must be positive, got 0"},
    {SLICE("{\"driver\":\"d\",\"pool\":{\"name\":\"p\",\"generation\":-1,\"resourceSliceCount\":1}}"),
     SF_OBJ_UNKNOWN, "spec.pool.generation: -1 is negative"},
    {SLICE("{\"driver\":\"d\",\"pool\":{\"name\":\"p\",\"generation\":\"1\"}}"), SF_OBJ_UNKNOWN,
     "spec.pool.generation: expected an integer, got a string"},
    {SLICE("{\"driver\":\"d\",\"pool\":{\"name\":\"p\",\"resourceSliceCount\":1}}"), SF_OBJ_UNKNOWN,
     "spec: one of nodeName, allNodes, nodeSelector or perDeviceNodeSelection is required"},
    {SLICE("{\"driver\":\"d\",\"nodeName\":\"n\",\"pool\":{\"name\":\"p\",\"resourceSliceCount\":1},"
           "\"devices\":{}}"),
     SF_OBJ_UNKNOWN, "spec.devices: expected an array, got an object"},
    {DEV("{}"), SF_OBJ_UNKNOWN, "spec.devices[1].name: is required"},
    {DEV("{\"name\":\"b\",\"capacity\":{\"memory\":{\"value\":\"12Qi\"}}}"), SF_OBJ_UNKNOWN,
     "spec.devices[1].capacity.memory.value: '12Qi' is not a quantity"},
    {DEV("{\"name\":\"b\",\"capacity\":{\"memory\":{\"value\":\"1.0001\"}}}"), SF_OBJ_UNKNOWN,
     "spec.devices[1].capacity.memory.value: '1.0001' is not a quantity"},
    {DEV("{\"name\":\"b\",\"capacity\":{\"memory\":{\"value\":\"99999999E\"}}}"), SF_OBJ_UNKNOWN,
     "spec.devices[1].capacity.memory.value: '99999999E' is out of range"},
    {DEV("{\"name\":\"b\",\"capacity\":{\"memory\":{\"value\":true}}}"), SF_OBJ_UNKNOWN,
     "spec.devices[1].capacity.memory.value: expected a quantity, got a boolean"},
    {DEV("{\"name\":\"b\",\"capacity\":{\"memory\":{}}}"), SF_OBJ_UNKNOWN,
     "spec.devices[1].capacity.memory: has no value"},
    {DEV("{\"name\":\"b\",\"capacity\":{\"memory\":{\"value\":\"-1\"}}}"), SF_OBJ_UNKNOWN,
     "spec.devices[1].capacity.memory: value is negative"},
    {DEV("{\"name\":\"b\",\"capacity\":{\"m\":{\"value\":\"1\",\"requestPolicy\":{\"validValues\":"
         "[\"2\",\"1\"]}}}}"),
     SF_OBJ_UNKNOWN,
     "spec.devices[1].capacity.m.requestPolicy.validValues[1]: values are not strictly ascending"},
    {DEV("{\"name\":\"b\",\"capacity\":{\"m\":{\"value\":\"1\",\"requestPolicy\":{\"validRange\":"
         "{\"min\":\"2\",\"max\":\"1\"}}}}}"),
     SF_OBJ_UNKNOWN, "spec.devices[1].capacity.m.requestPolicy.validRange: max is below min"},
    {DEV("{\"name\":\"b\",\"capacity\":{\"m\":{\"value\":\"1\",\"requestPolicy\":{\"default\":\"-1\"}}}}"),
     SF_OBJ_UNKNOWN, "spec.devices[1].capacity.m.requestPolicy.default: is negative"},
    {DEV("{\"name\":\"b\",\"attributes\":{\"x\":{\"int\":\"1\"}}}"), SF_OBJ_UNKNOWN,
     "spec.devices[1].attributes.x.int: expected an integer, got a string"},
    {DEV("{\"name\":\"b\",\"attributes\":{\"a/b/c\":{\"int\":1}}}"), SF_OBJ_UNKNOWN,
     "spec.devices[1].attributes.a/b/c: 'a/b/c' is not a qualified name"},
    {DEV("{\"name\":\"b\",\"attributes\":{\"/x\":{\"int\":1}}}"), SF_OBJ_UNKNOWN,
     "spec.devices[1].attributes./x: '/x' is not a qualified name"},
    {DEV("{\"name\":\"b\",\"taints\":[{\"effect\":\"NoSchedule\"}]}"), SF_OBJ_UNKNOWN,
     "spec.devices[1].taints[0].key: is required"},
    {DEV("{\"name\":\"b\",\"consumesCounters\":[{\"counters\":{}}]}"), SF_OBJ_UNKNOWN,
     "spec.devices[1].consumesCounters[0].counterSet: is required"},
    {DEV("{\"name\":\"b\",\"consumesCounters\":[{\"counterSet\":\"s\",\"counters\":{\"c\":{\"value\":\"x\"}}}]}"),
     SF_OBJ_UNKNOWN, "spec.devices[1].consumesCounters[0].counters.c.value: 'x' is not a quantity"},
    {DEV("{\"name\":\"b\",\"allowMultipleAllocations\":1}"), SF_OBJ_UNKNOWN,
     "spec.devices[1].allowMultipleAllocations: expected a boolean, got an integer"},
    {CLAIM("{}"), SF_OBJ_UNKNOWN, "spec.devices.requests[0].name: is required"},
    {CLAIM("{\"name\":\"r\"}"), SF_OBJ_UNKNOWN,
     "spec.devices.requests[0]: one of exactly or firstAvailable is required"},
    {CLAIM("{\"name\":\"r\",\"exactly\":{\"deviceClassName\":\"g\",\"count\":0}}"), SF_OBJ_UNKNOWN,
     "spec.devices.requests[0].exactly.count: 0 is not a device count (1..1048576)"},
    {CLAIM("{\"name\":\"r\",\"exactly\":{\"deviceClassName\":\"g\",\"selectors\":[{\"cel\":{}}]}}"),
     SF_OBJ_UNKNOWN, "spec.devices.requests[0].exactly.selectors[0].cel.expression: is required"},
    {CLAIM("{\"name\":\"r\",\"exactly\":{\"deviceClassName\":\"g\",\"capacity\":{\"requests\":"
           "{\"memory\":\"1Zi\"}}}}"),
     SF_OBJ_UNKNOWN,
     "spec.devices.requests[0].exactly.capacity.requests.memory: '1Zi' is not a quantity"},
    {CLAIM("{\"name\":\"r\",\"firstAvailable\":[]}"), SF_OBJ_UNKNOWN,
     "spec.devices.requests[0].firstAvailable: is empty"},
    {CLAIM("{\"name\":\"r\",\"firstAvailable\":[{\"deviceClassName\":\"g\"}]}"), SF_OBJ_UNKNOWN,
     "spec.devices.requests[0].firstAvailable[0].name: is required"},
    {CLAIM("{\"name\":\"r\",\"exactly\":{\"deviceClassName\":\"g\",\"tolerations\":[3]}}"),
     SF_OBJ_UNKNOWN, "spec.devices.requests[0].exactly.tolerations[0]: expected an object"},
    {"{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"c\"},\"spec\":{\"devices\":{\"constraints\":"
     "[{\"requests\":[1]}]}}}",
     SF_OBJ_UNKNOWN, "spec.devices.constraints[0].requests[0]: expected a string, got an integer"},
    {"{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"c\"},\"status\":{\"allocation\":{\"devices\":"
     "{\"results\":[{\"request\":\"r\",\"driver\":\"d\",\"pool\":\"p\"}]}}}}",
     SF_OBJ_UNKNOWN, "status.allocation.devices.results[0].device: is required"},
    {"{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"c\"},\"status\":{\"reservedFor\":[{}]}}",
     SF_OBJ_UNKNOWN, "status.reservedFor[0].name: is required"},
    {"{\"kind\":\"DeviceClass\",\"metadata\":{\"name\":\"c\"},\"spec\":{\"selectors\":\"x\"}}",
     SF_OBJ_UNKNOWN, "spec.selectors: expected an array, got a string"},
    {"{\"kind\":\"DeviceTaintRule\",\"metadata\":{\"name\":\"r\"},\"spec\":{}}", SF_OBJ_UNKNOWN,
     "spec.taint: is required"},
    {"{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},\"spec\":{\"resourceClaims\":[{\"name\":\"g\"}]}}",
     SF_OBJ_UNKNOWN,
     "spec.resourceClaims[0]: one of resourceClaimName or resourceClaimTemplateName is required"},
    {"{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\","
     "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"one\"}}}]}}",
     SF_OBJ_UNKNOWN,
     "spec.containers[0].resources.limits['nvidia.com/gpu']: 'one' is not a quantity"},
    {"{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},\"status\":{\"extendedResourceClaimStatus\":"
     "{\"requestMappings\":[{\"containerName\":\"c\"}]}}}",
     SF_OBJ_UNKNOWN,
     "status.extendedResourceClaimStatus.requestMappings[0].resourceName: is required"},
    {"{\"apiVersion\":\"resource.k8s.io/v1beta1\",\"kind\":\"ResourceSlice\"}", SF_OBJ_UNKNOWN,
     "apiVersion: resource.k8s.io/v1beta1 is not supported (resource.k8s.io/v1 or v1beta2)"},
    {"{\"apiVersion\":7,\"kind\":\"ResourceClaim\"}", SF_OBJ_UNKNOWN,
     "apiVersion: expected a string, got an integer"},
    {"{\"metadata\":{\"name\":\"n\",\"labels\":{\"a\":1}}}", SF_OBJ_NODE,
     "metadata.labels.a: expected a string"},
};

Test(decode, every_error_names_path_and_reason)
{
  for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++) {
    const char *got = fx_decode_err(errs[i].json, errs[i].kind);
    cr_expect_str_eq(got, errs[i].err, "case %zu: got \"%s\"", i, got);
  }
}

Test(decode, too_many_fields)
{
  char buf[8192];
  size_t n = (size_t)snprintf(buf, sizeof buf, DEV("{\"name\":\"b\",\"attributes\":{"));
  /* Cut DEV's closing "]}}" and write 33 attributes instead. */
  n -= 3;
  for (int i = 0; i < 33; i++)
    n += (size_t)snprintf(buf + n, sizeof buf - n, "%s\"a%d\":{\"int\":%d}", i ? "," : "", i, i);
  snprintf(buf + n, sizeof buf - n, "}}]}}");
  cr_assert_str_eq(fx_decode_err(buf, SF_OBJ_UNKNOWN),
                   "spec.devices[1]: 33 attributes and capacities, more than 32");
}

Test(decode, error_buffer_truncates_safely)
{
  json_t *j = fx_json(DEV("{\"name\":\"b\",\"capacity\":{\"memory\":{\"value\":\"12Qi\"}}}"));
  sf_object_t *o = NULL;
  char err[12];
  cr_assert_eq(sf_decode(j, SF_OBJ_UNKNOWN, &o, err, sizeof err), SF_EINVAL);
  cr_assert_eq(strlen(err), sizeof err - 1);
  cr_assert_eq(sf_decode(j, SF_OBJ_UNKNOWN, &o, NULL, 0), SF_EINVAL);
  json_decref(j);
}

Test(decode, list_items_and_meta)
{
  json_t *l = fx_load("nvidia-slices.json");
  const json_t *items = NULL;
  char err[256];
  cr_assert_eq(sf_decode_list_items(l, &items, err, sizeof err), 0);
  cr_assert_eq(json_array_size(items), 2);
  sf_meta_t m;
  cr_assert_eq(sf_decode_meta(json_array_get(items, 0), &m, err, sizeof err), 0);
  cr_assert_str_eq(m.name, "gpu-node-a-gpu.nvidia.com-x7k2p");
  cr_assert_str_eq(m.ns, "");
  json_t *bad = fx_json("{\"kind\":\"List\"}");
  cr_assert_eq(sf_decode_list_items(bad, &items, err, sizeof err), SF_EINVAL);
  cr_assert_str_eq(err, "items: is required");
  json_decref(bad);
  json_decref(l);
}

/* A claim copies its strings: every one still reads after its JSON is gone (under make check,
 * AddressSanitizer reports any string still borrowed). */
Test(decode, claim_strings_outlive_the_json)
{
  json_t *j = fx_json(
      "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"c\",\"namespace\":\"ns\",\"uid\":\"u1\","
      "\"resourceVersion\":\"7\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":"
      "{\"deviceClassName\":\"gpu.example.com\",\"selectors\":[{\"cel\":{\"expression\":\"true\"}}],"
      "\"capacity\":{\"requests\":{\"memory\":\"1Gi\"}},\"tolerations\":[{\"key\":\"k\",\"operator\":"
      "\"Equal\",\"value\":\"v\",\"effect\":\"NoSchedule\"}]}}],\"constraints\":[{\"requests\":"
      "[\"gpu\"],\"distinctAttribute\":\"gpu.example.com/index\"}]}},\"status\":{\"allocation\":"
      "{\"devices\":{\"results\":[{\"request\":\"gpu\",\"driver\":\"gpu.example.com\",\"pool\":\"n1\","
      "\"device\":\"gpu-0\",\"shareID\":\"s1\",\"consumedCapacity\":{\"memory\":\"1Gi\"}}]},"
      "\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\","
      "\"operator\":\"In\",\"values\":[\"n1\"]}]}]}},\"reservedFor\":[{\"resource\":\"pods\","
      "\"name\":\"p\",\"uid\":\"u2\"}]}}");
  sf_object_t *o = NULL;
  char err[256];
  cr_assert_eq(sf_decode(j, SF_OBJ_UNKNOWN, &o, err, sizeof err), 0, "%s", err);
  json_decref(j);
  const sf_rclaim_t *c = &o->u.claim;
  cr_assert_str_eq(c->meta.name, "c");
  cr_assert_str_eq(c->meta.ns, "ns");
  cr_assert_str_eq(c->meta.uid, "u1");
  cr_assert_str_eq(c->meta.rv, "7");
  const sf_dreq_t *r = &c->spec.reqs[0];
  cr_assert_str_eq(r->name, "gpu");
  cr_assert_str_eq(r->class_name, "gpu.example.com");
  cr_assert_str_eq(r->selectors[0], "true");
  cr_assert_str_eq(r->caps[0].name, "memory");
  cr_assert_eq(r->ntols, 1);
  cr_assert_str_eq(r->tols[0].key, "k");
  cr_assert_str_eq(r->tols[0].value, "v");
  cr_assert_str_eq(c->spec.cons[0].distinct, "gpu.example.com/index");
  cr_assert_str_eq(c->spec.cons[0].reqs[0], "gpu");
  cr_assert_str_eq(c->results[0].driver, "gpu.example.com");
  cr_assert_str_eq(c->results[0].pool, "n1");
  cr_assert_str_eq(c->results[0].device, "gpu-0");
  cr_assert_str_eq(c->results[0].share_id, "s1");
  cr_assert_str_eq(c->results[0].consumed[0].name, "memory");
  cr_assert_str_eq(c->alloc_node, "n1");
  cr_assert_str_eq(c->reserved[0].name, "p");
  cr_assert_str_eq(c->reserved[0].uid, "u2");
  sf_object_free(o);
}

#include "../../model/decode_int.h"

#define SPEC_BASE                                                                                 \
  "{\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"c\",\"namespace\":\"ns\"},\"spec\":"      \
  "{\"devices\":{\"requests\":[{\"name\":\"gpu\",\"firstAvailable\":[{\"name\":\"big\","          \
  "\"deviceClassName\":\"gpu.example.com\",\"count\":2,\"selectors\":[{\"cel\":{\"expression\":"  \
  "\"true\"}}],\"capacity\":{\"requests\":{\"memory\":\"1Gi\"}},\"tolerations\":[{\"key\":\"k\"," \
  "\"operator\":\"Equal\",\"value\":\"v\",\"effect\":\"NoSchedule\"}]}]}],\"constraints\":[{"     \
  "\"requests\":[\"gpu\"],\"matchAttribute\":\"gpu.example.com/model\"}]}}%s}"

/* Claim specs compare equal field by field: the status does not count, any spec field does. */
Test(decode, claim_spec_equal)
{
  static const char *const from[] = {"\"count\":2",
                                     "\"true\"",
                                     "\"1Gi\"",
                                     "\"v\"",
                                     "NoSchedule",
                                     "/model",
                                     "\"big\"",
                                     "gpu.example.com\",\"count",
                                     "\"Equal\",\"value\":\"v\""};
  static const char *const to[] = {"\"count\":3",
                                   "\"false\"",
                                   "\"2Gi\"",
                                   "\"w\"",
                                   "NoExecute",
                                   "/index",
                                   "\"small\"",
                                   "gpu.other.com\",\"count",
                                   "\"Exists\",\"value\":\"v\""};
  char base[2048], text[2048];
  snprintf(base, sizeof base, SPEC_BASE, "");
  sf_object_t *a = fx_decode(base, SF_OBJ_RESOURCE_CLAIM);
  snprintf(text, sizeof text, SPEC_BASE,
           ",\"status\":{\"allocation\":{\"devices\":{\"results\":[]}}}");
  sf_object_t *b = fx_decode(text, SF_OBJ_RESOURCE_CLAIM);
  cr_assert(sf__claim_spec_equal(&a->u.claim.spec, &b->u.claim.spec), "a status is not the spec");
  sf_object_free(b);
  for (size_t i = 0; i < sizeof from / sizeof *from; i++) {
    const char *at = strstr(base, from[i]);
    cr_assert(at, "%s", from[i]);
    snprintf(text, sizeof text, "%.*s%s%s", (int)(at - base), base, to[i], at + strlen(from[i]));
    b = fx_decode(text, SF_OBJ_RESOURCE_CLAIM);
    cr_assert_not(sf__claim_spec_equal(&a->u.claim.spec, &b->u.claim.spec), "%s -> %s", from[i],
                  to[i]);
    cr_assert_not(sf__claim_spec_equal(&b->u.claim.spec, &a->u.claim.spec));
    sf_object_free(b);
  }
  sf_object_free(a);
}

/* DRAListTypeAttributes: ints, bools, strings and versions are kept as lists (dropped, a
 * missing attribute would fail matchAttribute for certain); an empty list, which the
 * allocator cannot compare either, is left out. */
Test(decode, list_type_attributes)
{
  sf_object_t *o = fx_decode(
      "{\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":\"s\"},\"spec\":{\"driver\":\"d.example.com\","
      "\"nodeName\":\"n\",\"pool\":{\"name\":\"p\",\"resourceSliceCount\":1},\"devices\":[{\"name\":\"a\","
      "\"attributes\":{\"s\":{\"strings\":[\"x\",\"y\"]},\"i\":{\"ints\":[0,-1]},\"b\":{\"bools\":[true,false]},"
      "\"v\":{\"versions\":[\"1.0.0\"]},\"e\":{\"strings\":[]},\"one\":{\"string\":\"z\"}}}]}}",
      SF_OBJ_RESOURCE_SLICE);
  const sf_device_spec_t *d = &o->u.slice.devs[0];
  cr_assert_eq(d->nattrs, 5, "the empty list is left out");
  cr_assert_null(attr(d, "d.example.com/e"));
  struct {
    const char *name, *elems;
  } want[] = {{"d.example.com/s", "s:x\x1es:y"},
              {"d.example.com/i", "i:0\x1ei:-1"},
              {"d.example.com/b", "b:1\x1e"
                                  "b:0"},
              {"d.example.com/v", "v:1.0.0"}};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    const sf_attr_t *a = attr(d, want[i].name);
    cr_assert_not_null(a, "%s", want[i].name);
    cr_assert_eq(a->type, SF_ATTR_LIST, "%s", want[i].name);
    cr_assert_str_eq(a->s, want[i].elems);
  }
  cr_assert_eq(attr(d, "d.example.com/one")->type, SF_ATTR_STRING, "a scalar stays a scalar");
  sf_object_free(o);
}

/* An attribute with no value slicefit can read (none, or a kind of value it does not know) is
 * kept as SF_ATTR_UNKNOWN: whatever reads it is unsure, and the slice still loads. */
Test(decode, attribute_without_a_readable_value_is_unknown)
{
  sf_object_t *o = fx_decode(
      "{\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":\"s\"},\"spec\":{\"driver\":\"d.example.com\","
      "\"nodeName\":\"n\",\"pool\":{\"name\":\"p\",\"resourceSliceCount\":1},\"devices\":[{\"name\":\"a\","
      "\"attributes\":{\"none\":{},\"future\":{\"quantity\":\"1Gi\"},\"ok\":{\"int\":1}}}]}}",
      SF_OBJ_RESOURCE_SLICE);
  const sf_device_spec_t *d = &o->u.slice.devs[0];
  cr_assert_eq(d->nattrs, 3);
  cr_assert_eq(attr(d, "d.example.com/none")->type, SF_ATTR_UNKNOWN);
  cr_assert_eq(attr(d, "d.example.com/future")->type, SF_ATTR_UNKNOWN);
  cr_assert_eq(attr(d, "d.example.com/ok")->type, SF_ATTR_INT);
  sf_object_free(o);
}
