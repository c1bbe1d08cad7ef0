#!/usr/bin/env python3
"""A DRA cluster snapshot for bin/slicefit --snapshot, as kubectl prints it.

The output is exactly what `kubectl get deviceclasses,resourceslices,
resourceclaims -A -o json` prints (a v1 List, keys sorted, 4-space indent):
DeviceClasses, one ResourceSlice per node as the NVIDIA DRA driver publishes
it (pool = node, generateName <node>-gpu.nvidia.com-, owner the Node), and
ResourceClaims, some allocated (with nodeSelector, reservedFor and, on shared
cards, shareID and consumedCapacity), some pending.

Nodes mix three shapes, in the proportions 4:4:8 of the bundled example:
  h100-N  8 x NVIDIA H100 80GB HBM3 on NVSwitch (one NVLink island of 8)
  a100-N  4 x NVIDIA A100-SXM4-40GB in NVLink pairs (islands of 2)
  rtx-N   1 x NVIDIA RTX 4000 SFF Ada Generation, 20 GB, shared by consumable
          capacity (allowMultipleAllocations, memory requestPolicy 1Gi steps)
The islands are not device attributes in the NVIDIA driver: the policy says
them (extender/example-policy.json: island_map "H100=8,A100=2").

--gpus N gives every node N GPUs of its shape instead (10,000 nodes x 8 GPUs is
the extender benchmark's large cluster), and --allocations N adds N allocated
claims of one device each on random nodes (a whole card, or 1-8Gi of a shared one; first fit, never over
capacity), --pending N as many pending ones: the load of a busy fleet. With
either, two more pending claims serve bench_extender's reply cases:
queue/wait-any (any GPU) and queue/wait-big (64Gi of a shared card: no node).

Deterministic for a given --seed. Examples:

  bench/gen-cluster.py --out extender/example-cluster.json          # 16 nodes
  bench/gen-cluster.py --nodes 5000 --out build/cluster-5000.json   # the benchmark's
  bench/gen-cluster.py --nodes 10000 --gpus 8 --allocations 50000 --out build/cluster-10000x8.json
"""
import argparse
import json
import random
import uuid

DRIVER = "gpu.nvidia.com"
SHAPES = [  # prefix, weight, gpus, product, architecture, cc, memory, shared
    ("h100", 4, 8, "NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", "80Gi", False),
    ("a100", 4, 4, "NVIDIA A100-SXM4-40GB", "Ampere", "8.0.0", "40Gi", False),
    ("rtx", 8, 1, "NVIDIA RTX 4000 SFF Ada Generation", "Ada Lovelace", "8.9.0", "20Gi", True),
]
STAMP = "2026-11-30T09:00:00Z"


class Gen:
    def __init__(self, seed):
        self.rnd = random.Random(seed)
        self.rv = 1000

    def uid(self):
        return str(uuid.UUID(int=self.rnd.getrandbits(128), version=4))

    def suffix(self):
        return "".join(self.rnd.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))

    def meta(self, name, namespace=None, **extra):
        self.rv += 1
        m = {"creationTimestamp": STAMP, "name": name, "resourceVersion": str(self.rv),
             "uid": self.uid()}
        if namespace:
            m["namespace"] = namespace
        m.update(extra)
        return m


def device_classes(g):
    def cls(name, expr, ext=None):
        spec = {"selectors": [{"cel": {"expression": expr}}]}
        if ext:
            spec["extendedResourceName"] = ext
        return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                "metadata": g.meta(name, generation=1), "spec": spec}
    base = "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"
    return [
        cls("gpu.nvidia.com", base, "nvidia.com/gpu"),
        cls("gpu-shared", base + " && device.allowMultipleAllocations == true"),
        cls("gpu-whole-card", base + " && device.allowMultipleAllocations == false"),
        cls("gpu-h100", base + " && device.attributes['gpu.nvidia.com'].productName == "
            "'NVIDIA H100 80GB HBM3'"),
    ]


def gpu(g, i, shape):
    _, _, _, product, arch, cc, mem, shared = shape
    d = {"name": "gpu-%d" % i,
         "attributes": {
             "architecture": {"string": arch},
             "brand": {"string": "Nvidia"},
             "cudaComputeCapability": {"version": cc},
             "cudaDriverVersion": {"version": "13.0.0"},
             "driverVersion": {"version": "580.95.5"},
             "productName": {"string": product},
             "resource.kubernetes.io/pciBusID": {"string": "0000:%02x:00.0" % (0x18 + 0x10 * i)},
             "resource.kubernetes.io/pcieRoot": {"string": "pci0000:%02x" % (0x10 + 0x10 * (i // 2))},
             "type": {"string": "gpu"},
             "uuid": {"string": "GPU-" + g.uid()}},
         "capacity": {"memory": {"value": mem}}}
    if shared:
        d["allowMultipleAllocations"] = True
        d["capacity"]["memory"]["requestPolicy"] = {
            "default": mem, "validRange": {"min": "1Gi", "max": mem, "step": "1Gi"}}
    return d


def slice_for(g, node, shape):
    name = "%s-%s-" % (node, DRIVER)
    md = g.meta(name + g.suffix(), generateName=name, generation=1,
                ownerReferences=[{"apiVersion": "v1", "controller": True, "kind": "Node",
                                  "name": node, "uid": g.uid()}])
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": md,
            "spec": {"driver": DRIVER, "nodeName": node,
                     "pool": {"generation": 1, "name": node, "resourceSliceCount": 1},
                     "devices": [gpu(g, i, shape) for i in range(shape[2])]}}


def claim(g, ns, pod, cls, count=1, memory=None, node=None, devices=(), shares=None):
    name = "%s-gpu-%s" % (pod, g.suffix())
    exactly = {"allocationMode": "ExactCount", "count": count, "deviceClassName": cls}
    if memory:
        exactly["capacity"] = {"requests": {"memory": memory}}
    md = g.meta(name, ns, annotations={"resource.kubernetes.io/pod-claim-name": "gpu"},
                finalizers=["resource.kubernetes.io/delete-protection"], generateName=pod + "-gpu-",
                ownerReferences=[{"apiVersion": "v1", "blockOwnerDeletion": True, "controller": True,
                                  "kind": "Pod", "name": pod, "uid": g.uid()}])
    c = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": md,
         "spec": {"devices": {"requests": [{"exactly": exactly, "name": "gpu"}]}}, "status": {}}
    if node:
        results = []
        for dev in devices:
            r = {"device": dev, "driver": DRIVER, "pool": node, "request": "gpu"}
            if shares:
                r["shareID"] = g.uid()
                r["consumedCapacity"] = {"memory": memory}
            results.append(r)
        c["status"] = {
            "allocation": {
                "allocationTimestamp": STAMP,
                "devices": {"results": results},
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [node]}]}]}},
            "reservedFor": [{"name": pod, "resource": "pods", "uid": g.uid()}]}
    return c


def node_names(total):
    weights = sum(s[1] for s in SHAPES)
    out, counts = [], {}
    for s in SHAPES:
        counts[s[0]] = max(1, total * s[1] // weights)
    counts[SHAPES[-1][0]] += total - sum(counts.values())
    for s in SHAPES:
        out += [("%s-%d" % (s[0], i), s) for i in range(counts[s[0]])]
    return out


def claims_for(g, nodes):
    """Allocated claims on a few nodes of each shape, and two pending ones."""
    by = {p: [n for n, s in nodes if s[0] == p] for p in ("h100", "a100", "rtx")}
    out = [claim(g, "train", "llm-finetune-0", "gpu-h100", 4, node=by["h100"][0],
                 devices=["gpu-0", "gpu-1", "gpu-2", "gpu-3"]),
           claim(g, "train", "bert-eval-0", "gpu.nvidia.com", 1, node=by["a100"][0],
                 devices=["gpu-0"])]
    for i, mem in enumerate(["4Gi", "8Gi", "12Gi", "4Gi", "16Gi"]):
        node = by["rtx"][i % len(by["rtx"])]
        out.append(claim(g, "tenants", "chat-%d" % i, "gpu-shared", 1, mem, node, ["gpu-0"], True))
    out.append(claim(g, "tenants", "agent-sandbox-7", "gpu-shared", 1, "6Gi"))
    out.append(claim(g, "train", "ddp-worker-0", "gpu.nvidia.com", 2))
    return out


def load(g, nodes, gpus, n, pending):
    """n allocated claims of one device on random nodes, then `pending` pending ones."""
    used = {}  # (node, device) -> Gi used (shared) or -1 (taken whole)
    out, tries = [], 0
    while len(out) < n and tries < 20 * n:
        tries += 1
        node, shape = nodes[g.rnd.randrange(len(nodes))]
        shared, size = shape[7], int(shape[6][:-2])
        count = gpus or shape[2]
        mem = "%dGi" % g.rnd.choice([1, 2, 4, 4, 8]) if shared else None
        for d in range(count):
            u = used.get((node, d), 0)
            if u < 0 or (not shared and u) or (shared and u + int(mem[:-2]) > size):
                continue
            used[(node, d)] = u + int(mem[:-2]) if shared else -1
            cls = "gpu-shared" if shared else "gpu-whole-card"
            out.append(claim(g, "load", "fill-%d" % len(out), cls, 1, mem, node, ["gpu-%d" % d],
                             shared))
            break
    for i in range(pending):
        out.append(claim(g, "queue", "wait-%d" % i, "gpu-shared", 1, "%dGi" % (1 + i % 8)))
    # bench_extender's two reply cases: any free GPU (most nodes pass), and 64Gi of a shared
    # card (no node has one: every node fails, with a reason each).
    out.append(claim(g, "queue", "wait-any", "gpu.nvidia.com", 1))
    out.append(claim(g, "queue", "wait-big", "gpu-shared", 1, "64Gi"))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--gpus", type=int, default=0, help="GPUs per node (default: by shape)")
    ap.add_argument("--allocations", type=int, default=0)
    ap.add_argument("--pending", type=int, default=0)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    g = Gen(a.seed)
    nodes = node_names(a.nodes)
    if a.gpus:
        nodes = [(n, s[:2] + (a.gpus,) + s[3:]) for n, s in nodes]
    items = device_classes(g) + [slice_for(g, n, s) for n, s in nodes] + claims_for(g, nodes)
    if a.allocations or a.pending:
        items += load(g, nodes, a.gpus, a.allocations, a.pending)
    doc = {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=4, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
