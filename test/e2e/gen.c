/*
 * The generated cluster and workload, as the Kubernetes API serves them and
 * as slicefit-replay's native trace writes them.
 *
 * Devices follow the NVIDIA DRA driver at HEAD (k8s-wire.md §2.13, the
 * synthesised test/fixtures/nvidia-slices.json): driver gpu.nvidia.com, one
 * pool and one slice per node, devices gpu-<minor> with type, uuid,
 * productName, brand, architecture, cudaComputeCapability, driverVersion,
 * cudaDriverVersion, addressingMode, pciBusID, pcieRoot and the capacity
 * memory. The driver publishes no NVLink attribute (the clique is a node
 * label), so an NVLink pair is asked for as two H100 (one NVSwitch domain
 * per node) with matchAttribute on productName, as
 * manifests/examples/nvlink-pair.yaml does, and the policy's island_map
 * tells slicefit where islands are.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "e2e.h"

typedef struct {
  const char *prefix, *product, *model, *arch, *cc;
  size_t nodes, gpus;
  int64_t mem;
  bool shared;
} kind_t;

static const kind_t KINDS[] = {
    {"gpu-a100-", "NVIDIA A100 80GB PCIe", "A100", "Ampere", "8.0.0", 3, 4, 80 * E2E_GI, false},
    {"gpu-h100-", "NVIDIA H100 80GB HBM3", "H100", "Hopper", "9.0.0", 2, 8, 80 * E2E_GI, false},
    {"gpu-rtx-", "NVIDIA RTX 4000 SFF Ada Generation", "RTX4000", "Ada Lovelace", "8.9.0", 7, 1,
     20475 * E2E_MI, true},
};

static void node_make(e2e_node_t *n, const kind_t *k, size_t i)
{
  snprintf(n->name, sizeof n->name, "%s%zu", k->prefix, i);
  n->ndevs = k->gpus;
  for (size_t g = 0; g < n->ndevs; g++) {
    e2e_dev_t *d = &n->devs[g];
    snprintf(d->name, sizeof d->name, "gpu-%u", (unsigned)(g % 100));
    d->product = k->product;
    d->model = k->model;
    d->mem = k->mem;
    d->shared = k->shared;
    /*
     * The card's real 20475 MiB, shared in whole GiB: 4 shares of 4Gi
     * leave 4091Mi, which a 4000Mi request fits only before rounding.
     */
    if (d->shared) {
      d->pol_default = d->mem / E2E_GI * E2E_GI;
      d->pol_max = d->mem;
      d->pol_min = d->pol_step = E2E_GI;
    }
  }
}

void e2e_nodes_make(e2e_node_t *nodes, size_t n)
{
  size_t base = 0, done = 0, nk = sizeof KINDS / sizeof KINDS[0];
  memset(nodes, 0, n * sizeof *nodes);
  for (size_t k = 0; k < nk; k++)
    base += KINDS[k].nodes;
  for (size_t k = 0; k < nk; k++) {
    /* The kinds in the test cluster's proportions; what rounding leaves goes to the last. */
    size_t count = k + 1 < nk ? KINDS[k].nodes * n / base : n - done;
    for (size_t i = 0; i < count; i++)
      node_make(&nodes[done + i], &KINDS[k], i);
    done += count;
  }
}

void e2e_cluster_make(e2e_cluster_t *c)
{
  memset(c, 0, sizeof *c);
  for (size_t k = 0; k < sizeof KINDS / sizeof KINDS[0]; k++)
    c->nnodes += KINDS[k].nodes;
  e2e_nodes_make(c->nodes, c->nnodes);
}

static const kind_t *kind_of(const e2e_node_t *n)
{
  for (size_t k = 0; k < sizeof KINDS / sizeof KINDS[0]; k++)
    if (strncmp(n->name, KINDS[k].prefix, strlen(KINDS[k].prefix)) == 0)
      return &KINDS[k];
  abort();
}

static json_t *str_attr(const char *s)
{
  return json_pack("{s:s}", "string", s);
}

static json_t *device_json(const e2e_node_t *n, size_t ni, size_t g)
{
  const e2e_dev_t *d = &n->devs[g];
  const kind_t *k = kind_of(n);
  char uuid[96], bdf[32], root[32], q[32];
  unsigned u = (unsigned)(ni % 256), v = (unsigned)(g % 256);
  snprintf(uuid, sizeof uuid, "GPU-%08x-%04x-4%03x-a%03x-%012x", 0x5f1c0000u + u, v, u, v,
           u * 100 + v);
  snprintf(bdf, sizeof bdf, "0000:%02x:00.0", 0x18 + 0x10 * v);
  snprintf(root, sizeof root, "pci0000:%02x", 0x17 + 0x10 * (v / 2));
  json_t *attrs = json_pack("{s:o,s:o,s:o,s:o,s:o,s:{s:s},s:{s:s},s:{s:s},s:o,s:o,s:o}", "type",
                            str_attr("gpu"), "uuid", str_attr(uuid), "productName",
                            str_attr(d->product), "brand", str_attr("Nvidia"), "architecture",
                            str_attr(k->arch), "cudaComputeCapability", "version", k->cc,
                            "driverVersion", "version", "580.95.5", "cudaDriverVersion", "version",
                            "13.0.0", "addressingMode", str_attr("None"),
                            "resource.kubernetes.io/pciBusID", str_attr(bdf),
                            "resource.kubernetes.io/pcieRoot", str_attr(root));
  e2e_qty(d->mem, q, sizeof q);
  json_t *mem = json_pack("{s:s}", "value", q);
  json_t *dev = json_pack("{s:s,s:o,s:{s:o}}", "name", d->name, "attributes", attrs, "capacity",
                          "memory", mem);
  if (d->shared) {
    char def[32], lo[32], step[32], hi[32];
    e2e_qty(d->pol_default, def, sizeof def);
    e2e_qty(d->pol_min, lo, sizeof lo);
    e2e_qty(d->pol_step, step, sizeof step);
    e2e_qty(d->pol_max, hi, sizeof hi);
    json_object_set_new(mem, "requestPolicy",
                        json_pack("{s:s,s:{s:s,s:s,s:s}}", "default", def, "validRange", "min", lo,
                                  "step", step, "max", hi));
    json_object_set_new(dev, "allowMultipleAllocations", json_true());
  }
  return dev;
}

json_t *e2e_node_slice(const e2e_node_t *n, size_t i)
{
  char gen[64], name[80], uid[48];
  snprintf(gen, sizeof gen, "%s-%s-", n->name, E2E_DRIVER);
  snprintf(name, sizeof name, "%s%c%c%c%c%c", gen, 'a' + (int)(i % 26), 'k', '7', 'p',
           'a' + (int)((i * 7) % 26));
  snprintf(uid, sizeof uid, "6633c2e1-d947-40c3-ba1f-%012zx", i + 1);
  json_t *devs = json_array();
  for (size_t g = 0; g < n->ndevs; g++)
    json_array_append_new(devs, device_json(n, i, g));
  return json_pack("{s:s,s:s,s:{s:s,s:s,s:i,s:[{s:s,s:s,s:s,s:s,s:b}]},"
                   "s:{s:s,s:{s:s,s:i,s:i},s:s,s:o}}",
                   "apiVersion", "resource.k8s.io/v1", "kind", "ResourceSlice", "metadata", "name",
                   name, "generateName", gen, "generation", 1, "ownerReferences", "apiVersion", "v1",
                   "kind", "Node", "name", n->name, "uid", uid, "controller", 1, "spec", "driver",
                   E2E_DRIVER, "pool", "name", n->name, "generation", 1, "resourceSliceCount", 1,
                   "nodeName", n->name, "devices", devs);
}

json_t *e2e_cluster_slices(const e2e_cluster_t *c)
{
  json_t *arr = json_array();
  for (size_t i = 0; i < c->nnodes; i++)
    json_array_append_new(arr, e2e_node_slice(&c->nodes[i], i));
  return arr;
}

static json_t *device_class(const char *name, const char *expr, const char *ext)
{
  json_t *dc = json_pack("{s:s,s:s,s:{s:s},s:{s:[{s:{s:s}}]}}", "apiVersion", "resource.k8s.io/v1",
                         "kind", "DeviceClass", "metadata", "name", name, "spec", "selectors", "cel",
                         "expression", expr);
  if (ext)
    json_object_set_new(json_object_get(dc, "spec"), "extendedResourceName", json_string(ext));
  return dc;
}

json_t *e2e_device_classes(void)
{
  json_t *arr = json_array();
  /* The driver's Helm chart class, and the tenant menu of manifests/deviceclasses.yaml. */
  json_array_append_new(arr, device_class("gpu.nvidia.com",
                                          "device.driver == 'gpu.nvidia.com' && "
                                          "device.attributes['gpu.nvidia.com'].type == 'gpu'",
                                          NULL));
  json_array_append_new(arr, device_class("gpu-whole-card",
                                          "device.driver == 'gpu.nvidia.com' && "
                                          "device.attributes['gpu.nvidia.com'].type == 'gpu' && "
                                          "!device.allowMultipleAllocations",
                                          "nvidia.com/gpu"));
  json_array_append_new(
      arr, device_class("gpu-shared-small",
                        "device.driver == 'gpu.nvidia.com' && "
                        "device.attributes['gpu.nvidia.com'].type == 'gpu' && "
                        "device.allowMultipleAllocations && "
                        "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('24Gi')) <= 0",
                        NULL));
  json_array_append_new(
      arr, device_class("gpu-fractional",
                        "device.driver == 'gpu.nvidia.com' && "
                        "device.attributes['gpu.nvidia.com'].type == 'gpu' && "
                        "device.allowMultipleAllocations && "
                        "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('24Gi')) > 0",
                        NULL));
  return arr;
}

json_t *e2e_policy_configmap(const char *const *kv)
{
  json_t *data = json_object();
  for (size_t i = 0; kv && kv[i]; i += 2)
    json_object_set_new(data, kv[i], json_string(kv[i + 1]));
  return json_pack("{s:s,s:s,s:{s:s,s:s},s:o}", "apiVersion", "v1", "kind", "ConfigMap", "metadata",
                   "name", "slicefit-policy", "namespace", "slicefit-system", "data", data);
}

/* ---- the workload ---- */

static uint64_t next(uint64_t *s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void e2e_pods_make(e2e_pod_t *pods, size_t n, uint64_t seed)
{
  uint64_t s = seed;
  for (size_t i = 0; i < n; i++) {
    e2e_pod_t *p = &pods[i];
    memset(p, 0, sizeof *p);
    unsigned r = (unsigned)(next(&s) % 100);
    const kind_t *k = &KINDS[next(&s) % 5 < 2 ? 1 : 0];
    p->shape = r < 60 ? E2E_SHARE : r < 90 ? E2E_WHOLE : E2E_PAIR;
    if (p->shape == E2E_PAIR)
      k = &KINDS[1];
    if (p->shape == E2E_SHARE)
      k = &KINDS[2];
    p->product = k->product;
    p->model = k->model;
    if (p->shape == E2E_SHARE)
      p->share = next(&s) % 3 ? 4 * E2E_GI : 4000 * E2E_MI;
    const char *what = p->shape == E2E_SHARE ? "sandbox" : p->shape == E2E_PAIR ? "pair" : "whole";
    snprintf(p->name, sizeof p->name, "%s-%s-%03u", what, p->shape == E2E_WHOLE ? k->model : "g",
             (unsigned)(i % 1000));
    for (char *c = p->name; *c; c++)
      *c = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
    uint64_t rnd = next(&s);
    snprintf(p->claim, sizeof p->claim, "%s-gpu-%c%c%c%c%c", p->name, 'b' + (int)(rnd % 24),
             'c' + (int)(rnd / 24 % 23), 'd' + (int)(rnd / 552 % 22), '2' + (int)(rnd / 12144 % 8),
             'f' + (int)(rnd / 97152 % 20));
    snprintf(p->uid, sizeof p->uid, "fa55b59b-0000-4000-8000-%012x", (unsigned)(i % 100000) + 1);
    p->at = 10 * (int64_t)(i + 1);
    p->until = p->at + 10 * (int64_t)(10 + next(&s) % 110) + 5;
  }
}

json_t *e2e_claim_json(const e2e_pod_t *p)
{
  json_t *exactly = json_pack("{s:s,s:s,s:i}", "deviceClassName",
                              p->shape == E2E_SHARE ? "gpu-shared-small" : "gpu-whole-card",
                              "allocationMode", "ExactCount", "count", p->shape == E2E_PAIR ? 2 : 1);
  if (p->shape == E2E_SHARE) {
    char q[32];
    e2e_qty(p->share, q, sizeof q);
    json_object_set_new(exactly, "capacity", json_pack("{s:{s:s}}", "requests", "memory", q));
  } else {
    char expr[160];
    snprintf(expr, sizeof expr, "device.attributes['gpu.nvidia.com'].productName == '%s'",
             p->product);
    json_object_set_new(exactly, "selectors", json_pack("[{s:{s:s}}]", "cel", "expression", expr));
  }
  json_t *devices = json_pack("{s:[{s:s,s:o}]}", "requests", "name", "gpu", "exactly", exactly);
  if (p->shape == E2E_PAIR)
    json_object_set_new(devices, "constraints",
                        json_pack("[{s:[s],s:s}]", "requests", "gpu", "matchAttribute",
                                  "gpu.nvidia.com/productName"));
  return json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s},s:[{s:s,s:s,s:s,s:s,s:b,s:b}]},s:{s:o}}",
                   "apiVersion", "resource.k8s.io/v1", "kind", "ResourceClaim", "metadata", "name",
                   p->claim, "namespace", E2E_NS, "annotations",
                   "resource.kubernetes.io/pod-claim-name", "gpu", "ownerReferences", "apiVersion",
                   "v1", "kind", "Pod", "name", p->name, "uid", p->uid, "controller", 1,
                   "blockOwnerDeletion", 1, "spec", "devices", devices);
}

json_t *e2e_pod_json(const e2e_pod_t *p)
{
  const char *tpl = p->shape == E2E_SHARE  ? "sandbox-4gi"
                    : p->shape == E2E_PAIR ? "two-gpus-one-island"
                                           : "whole-card-model";
  return json_pack("{s:s,s:s,s:{s:s,s:s,s:s},s:{s:s,s:[{s:s,s:s,s:{s:[{s:s}]}}],s:[{s:s,s:s}],"
                   "s:[{s:s,s:s,s:s}]},s:{s:s,s:[{s:s,s:s}]}}",
                   "apiVersion", "v1", "kind", "Pod", "metadata", "name", p->name, "namespace",
                   E2E_NS, "uid", p->uid, "spec", "schedulerName", "slicefit-scheduler", "containers",
                   "name", "main", "image", "ubuntu:22.04", "resources", "claims", "name", "gpu",
                   "resourceClaims", "name", "gpu", "resourceClaimTemplateName", tpl, "tolerations",
                   "key", "nvidia.com/gpu", "operator", "Exists", "effect", "NoSchedule", "status",
                   "phase", "Pending", "resourceClaimStatuses", "name", "gpu", "resourceClaimName",
                   p->claim);
}

int e2e_trace_write(const char *path, const e2e_cluster_t *c, const e2e_pod_t *pods, size_t n)
{
  FILE *f = fopen(path, "w");
  if (f == NULL)
    return -1;
  e2e_trace_fwrite(f, c, pods, n);
  return fclose(f) == 0 ? 0 : -1;
}

/*
 * The native trace has no requestPolicy, so a share is written as what the
 * shared card will consume: the request rounded by the card's policy.
 */
static int64_t consumed_share(const e2e_cluster_t *c, const e2e_pod_t *p)
{
  for (size_t i = 0; i < c->nnodes; i++)
    if (c->nodes[i].devs[0].shared)
      return e2e_round(&c->nodes[i].devs[0], p->share);
  abort();
}

void e2e_trace_fwrite(FILE *f, const e2e_cluster_t *c, const e2e_pod_t *pods, size_t n)
{
  fprintf(f, "# slicefit e2e trace: the generated cluster and workload (test/e2e/gen.c)\n");
  for (size_t i = 0; i < c->nnodes; i++) {
    const e2e_node_t *nd = &c->nodes[i];
    char q[32];
    e2e_qty(nd->devs[0].mem, q, sizeof q);
    fprintf(f,
            "{\"kind\":\"node\",\"name\":\"%s\",\"cpu\":\"64\",\"memory\":\"512Gi\",\"gpus\":%zu,"
            "\"model\":\"%s\",\"gpu_memory\":\"%s\"}\n",
            nd->name, nd->ndevs, nd->devs[0].model, q);
  }
  for (size_t i = 0; i < n; i++) {
    const e2e_pod_t *p = &pods[i];
    char mem[48] = "";
    if (p->shape == E2E_SHARE) {
      char q[32];
      e2e_qty(consumed_share(c, p), q, sizeof q);
      snprintf(mem, sizeof mem, "\"memory\":\"%s\",", q);
    }
    fprintf(f,
            "{\"kind\":\"pod\",\"name\":\"%s\",\"at\":%" PRId64 ",\"until\":%" PRId64
            ",\"claims\":[{\"requests\":[{\"count\":%d,%s\"models\":[\"%s\"]}]}]}\n",
            p->name, p->at, p->until, p->shape == E2E_PAIR ? 2 : 1, mem, p->model);
  }
}
