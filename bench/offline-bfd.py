#!/usr/bin/env python3
"""What a packer with foresight leaves unallocated at 100% load: a reference for the replay.

Takes the pods that have arrived when their GPU requests reach 100% of the cluster's GPUs (the
FGD method's order: sorted by name, shuffled with the seed, grown to --tune x capacity by draws
with replacement, as slicefit-replay does, with Python's generator instead of the replay's) and
packs them offline, best fit decreasing: multi-GPU pods first, largest first, each on the node
with the fewest idle GPUs of its allowed models that still holds it; then one-GPU whole pods on
any idle GPU; then the GPU shares, largest first, each on the allowed GPU with the least free
share that still holds it. CPU and memory are ignored, which can only help it. It prints the
share of the GPUs it allocates and leaves unallocated.

No online scheduler knows the arrivals ahead, and every one has CPU and memory to respect, so
its unallocated share at 100% load is not expected below this one (a heuristic, not a proof; the
replay's sliver_floor_pct_at_100 is the proven floor). No row of the trace ships with slicefit:
point it at your copy of cluster-trace-gpu-v2023.

  bench/offline-bfd.py --nodes TRACE/openb_node_list_gpu_node.csv \\
      --pods TRACE/openb_pod_list_default.csv --seeds 42-51
"""
import argparse
import collections
import csv
import random
import statistics


def load(p):
    return int(p["num_gpu"]) * int(p.get("gpu_milli") or 0)


def models(p):
    s = (p.get("gpu_spec") or "").strip()
    return set(x for x in s.split("|") if x) or None


def arrived_at_100(pods, cap, seed, tune):
    pods = sorted(pods, key=lambda p: p["name"])
    rnd = random.Random(seed)
    rnd.shuffle(pods)
    order, total = list(pods), sum(load(p) for p in pods)
    while tune > 0 and total < tune * cap:
        p = rnd.choice(pods)
        if total + load(p) > tune * cap:
            break
        order.append(p)
        total += load(p)
    out, acc = [], 0
    for p in order:
        out.append(p)
        acc += load(p)
        if acc >= cap:
            break
    return out


def pack(nodes, pods):
    free, model_of, on_node = [], [], collections.defaultdict(list)
    for i, n in enumerate(nodes):
        for _ in range(int(n["gpu"])):
            on_node[i].append(len(free))
            free.append(1000)
            model_of.append(n["model"])
    placed = 0
    multi = sorted((p for p in pods if int(p["num_gpu"]) > 1), key=lambda p: -int(p["num_gpu"]))
    whole = [p for p in pods if int(p["num_gpu"]) == 1 and int(p["gpu_milli"]) >= 1000]
    share = sorted((p for p in pods if int(p["num_gpu"]) == 1 and 0 < int(p["gpu_milli"]) < 1000),
                   key=lambda p: -int(p["gpu_milli"]))
    for p in multi:
        k, ms, best = int(p["num_gpu"]), models(p), None
        for i, gs in on_node.items():
            if ms and nodes[i]["model"] not in ms:
                continue
            idle = [g for g in gs if free[g] == 1000]
            if len(idle) >= k and (best is None or len(idle) < len(best)):
                best = idle
        if best:
            for g in best[:k]:
                free[g] = 0
            placed += load(p)
    for p in whole:
        ms = models(p)
        g = next((g for g in range(len(free)) if free[g] == 1000 and (not ms or model_of[g] in ms)), None)
        if g is not None:
            free[g] = 0
            placed += 1000
    for p in share:
        need, ms, best = int(p["gpu_milli"]), models(p), None
        for g in range(len(free)):
            if free[g] >= need and (not ms or model_of[g] in ms) and (best is None or free[g] < free[best]):
                best = g
                if free[g] == need:
                    break
        if best is not None:
            free[best] -= need
            placed += need
    return placed


NODE_INTS = ("gpu", "cpu_milli", "memory_mib")
POD_INTS = ("num_gpu", "gpu_milli", "cpu_milli", "memory_mib")


def read_rows(path, ints):
    """The rows of an Alibaba CSV; exits with the file and line of the first bad one."""
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        raise SystemExit("%s: %s" % (path, e.strerror))
    for line, r in enumerate(rows, start=2):
        for k in ints:
            v = (r.get(k) or "").strip()
            if not v.isdigit():
                raise SystemExit("%s:%d: column %s: expected a non-negative integer, got %r" % (path, line, k, v))
    if not rows:
        raise SystemExit("%s: no rows" % path)
    return rows


def trace_args(doc):
    """The command line both reference scripts take: (nodes, pods, seeds, tune)."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", required=True)
    ap.add_argument("--pods", required=True)
    ap.add_argument("--seeds", default="42-51", help="A-B or one seed")
    ap.add_argument("--tune", type=float, default=1.3)
    a = ap.parse_args()
    lo, _, hi = a.seeds.partition("-")
    if not lo.isdigit() or not (hi or lo).isdigit() or int(hi or lo) < int(lo):
        ap.error("--seeds: expected A-B with A <= B, or one seed; got %r" % a.seeds)
    seeds = range(int(lo), int(hi or lo) + 1)
    return read_rows(a.nodes, NODE_INTS), read_rows(a.pods, POD_INTS), seeds, a.tune


def main():
    nodes, pods, seeds, tune = trace_args(__doc__)
    cap = sum(int(n["gpu"]) for n in nodes) * 1000
    unalloc = []
    for s in seeds:
        placed = pack(nodes, arrived_at_100(pods, cap, s, tune))
        unalloc.append(100.0 - 100.0 * placed / cap)
        print("seed %d: allocated %.2f%%, unallocated %.2f%%" % (s, 100.0 - unalloc[-1], unalloc[-1]))
    print("median unallocated at 100%% load: %.2f%%" % statistics.median(unalloc))


if __name__ == "__main__":
    main()
