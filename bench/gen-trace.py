#!/usr/bin/env python3
"""Synthetic GPU traces for slicefit-replay's tests and its bundled default.

Two formats:

  alibaba  two CSV files with the columns of the Alibaba GPU-sharing trace
           (cluster-trace-gpu-v2023), shaped like its default workload: the
           same node shapes and GPU models in the same proportions, and pods
           whose GPU count, GPU share (gpu_milli), CPU and memory follow the
           published statistics (../shared/reference/packing-fgd.md, 1.4-1.5).
           No row of the real trace is used.
  native   one JSON-lines file in slicefit's own format (docs/replay-format.md):
           nodes with GPU memory and NVLink islands, pods that arrive and leave
           in time, with DRA-shaped claims (count, memory, models, one island).

A profile (--profile, native format):

  sandboxes  short AI-agent sandboxes (2-6 GiB of one GPU, seconds to minutes)
             on top of long-lived whole-card inference pods and 4- and 8-GPU
             island training pods, with a day/night shift: by day (the first
             12 hours of each day) sandboxes arrive four times as often as by
             night, and by night training pods arrive more often. The long-lived
             pods present at the start (their steady-state number, each with a
             uniform part of its lifetime left) arrive at time 0.

Deterministic for a given --seed. Examples:

  bench/gen-trace.py alibaba --nodes 200 --out bench/data/synthetic
  bench/gen-trace.py native --nodes 24 --pods 600 --out bench/data/synthetic-native.jsonl
  bench/gen-trace.py --profile sandboxes --days 1 --out /tmp/sandboxes.jsonl
"""
import argparse
import json
import random
import sys

# (model, gpus, cores, RAM GiB, weight in nodes): the trace's 15 node shapes.
NODE_SHAPES = [
    ("G2", 8, 96, 384, 549),
    ("T4", 2, 104, 512, 387), ("T4", 4, 96, 384, 17),
    ("G3", 8, 128, 768, 39),
    ("P100", 2, 16, 120, 107), ("P100", 2, 64, 256, 22), ("P100", 1, 8, 60, 3),
    ("P100", 2, 8, 60, 2),
    ("V100M32", 8, 96, 768, 21), ("V100M32", 4, 48, 368, 9),
    ("V100M16", 4, 32, 128, 28), ("V100M16", 1, 8, 32, 19), ("V100M16", 8, 64, 256, 7),
    ("V100M16", 8, 82, 336, 1),
    ("A10", 1, 128, 1024, 2),
]

# The most common gpu_milli values of sharing pods, with their pod counts.
SHARES = [(810, 1078), (470, 750), (320, 328), (650, 253), (230, 140), (460, 128),
          (590, 75), (160, 74), (550, 72), (220, 62), (500, 60), (250, 40), (100, 18)]

CPU_GPU_POD = [(2000, 10), (4000, 14), (6000, 22), (8000, 18), (12000, 14), (24000, 6),
               (1000, 8), (16000, 4), (32000, 2), (48000, 2)]
CPU_ONLY_POD = [(1000, 10), (2000, 12), (4000, 16), (8000, 20), (16000, 14), (32000, 14),
                (64000, 6)]
SPECS = ["V100M16|V100M32", "T4", "P100", "G2", "V100M32", "G3", "P100|T4"]


def pick(rng, table):
    total = sum(w for _, w in table)
    x = rng.uniform(0, total)
    for v, w in table:
        x -= w
        if x <= 0:
            return v
    return table[-1][0]


def alibaba_nodes(rng, n):
    shapes = [(s[:4], s[4]) for s in NODE_SHAPES]
    total = sum(w for _, w in shapes)
    nodes = []
    # Largest remainder so that every shape keeps its share even in a small cluster.
    quotas = [(n * w / total, s) for s, w in shapes]
    counts = [int(q) for q, _ in quotas]
    order = sorted(range(len(quotas)), key=lambda i: -(quotas[i][0] - counts[i]))
    for i in order[: n - sum(counts)]:
        counts[i] += 1
    for (q, s), c in zip(quotas, counts):
        nodes += [s] * c
    rng.shuffle(nodes)
    return nodes


def alibaba_pod(rng, spec_pct):
    r = rng.random()
    if r < 0.133:
        num_gpu, milli = 0, 0
    elif r < 0.133 + 0.378:
        num_gpu, milli = 1, pick(rng, SHARES)
    elif r < 0.993:
        num_gpu, milli = 1, 1000
    else:
        num_gpu, milli = rng.choice([2, 2, 4, 4, 8, 8, 8]), 1000
    cpu = pick(rng, CPU_ONLY_POD if num_gpu == 0 else CPU_GPU_POD)
    if num_gpu > 1:
        cpu = min(cpu * num_gpu // 2, 96000)
    mem = cpu // 1000 * rng.choice([2048, 3072, 4096, 6144])
    spec = rng.choice(SPECS) if num_gpu > 0 and rng.random() < spec_pct else ""
    return cpu, mem, num_gpu, milli, spec


def gen_alibaba(args):
    rng = random.Random(args.seed)
    nodes = alibaba_nodes(rng, args.nodes)
    gpus = sum(s[1] for s in nodes)
    with open(args.out + "-nodes.csv", "w") as f:
        f.write("sn,cpu_milli,memory_mib,gpu,model\n")
        for i, (model, g, cores, ram) in enumerate(nodes):
            f.write(f"synth-node-{i:04d},{cores * 1000},{ram * 1024},{g},{model}\n")
    # Pods until their GPU request reaches --load x capacity, as the real default (98%).
    target = args.load * gpus * 1000
    pods, load = [], 0
    while load < target:
        p = alibaba_pod(rng, args.spec_pct)
        pods.append(p)
        load += p[2] * p[3]
    with open(args.out + "-pods.csv", "w") as f:
        f.write("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
                "creation_time,deletion_time,scheduled_time\n")
        for i, (cpu, mem, ng, milli, spec) in enumerate(pods):
            t = i * 97
            f.write(f"synth-pod-{i:05d},{cpu},{mem},{ng},{milli},{spec},LS,Running,"
                    f"{t},{t + 3600},{t}\n")
    print(f"{args.out}-nodes.csv: {len(nodes)} nodes, {gpus} GPUs; "
          f"{args.out}-pods.csv: {len(pods)} pods, {load / 1000 / gpus:.1%} of GPU capacity",
          file=sys.stderr)


# (model, gpus, GPU memory GiB, cores, RAM GiB, islands, weight)
NATIVE_NODES = [
    ("H100", 8, 80, 192, 2048, [8], 3),
    ("A100", 8, 40, 128, 1024, [4, 4], 4),
    ("L4", 4, 24, 64, 256, [2, 2], 5),
    ("L4", 1, 24, 16, 64, None, 4),
]


def gen_native(args):
    rng = random.Random(args.seed)
    shapes = [(s[:6], s[6]) for s in NATIVE_NODES]
    lines = []
    for i in range(args.nodes):
        model, g, gmem, cores, ram, islands = pick(rng, shapes)
        node = {"kind": "node", "name": f"synth-node-{i:03d}", "cpu": str(cores),
                "memory": f"{ram}Gi", "gpus": g, "model": model, "gpu_memory": f"{gmem}Gi"}
        if islands:
            node["islands"] = islands
        lines.append(node)
    t = 0
    for i in range(args.pods):
        t += int(rng.expovariate(1 / 30)) + 1
        life = int(rng.lognormvariate(7, 1.2)) + 60
        pod = {"kind": "pod", "name": f"synth-pod-{i:05d}", "at": t, "until": t + life,
               "cpu": str(rng.choice([1, 2, 4, 8, 16])), "memory": f"{rng.choice([4, 8, 16, 32])}Gi"}
        r = rng.random()
        if r < 0.10:
            pass                                   # CPU only
        elif r < 0.65:                             # a slice of one GPU's memory
            req = {"count": 1, "memory": f"{rng.choice([4, 5, 8, 10, 12, 16, 20])}Gi"}
            if rng.random() < 0.2:
                req["models"] = rng.choice([["L4"], ["A100", "H100"]])
            pod["claims"] = [{"requests": [req]}]
        elif r < 0.88:                             # whole GPUs
            req = {"count": 1}
            if rng.random() < 0.3:
                req["models"] = [rng.choice(["A100", "H100"])]
            pod["claims"] = [{"requests": [req]}]
        else:                                      # several GPUs in one NVLink island
            n = rng.choice([2, 2, 4, 4, 8])
            req = {"count": n, "models": ["A100", "H100"] if n <= 4 else ["H100"]}
            pod["claims"] = [{"requests": [req], "island": True}]
        if rng.random() < 0.03:
            del pod["until"]                       # stays to the end
        lines.append(pod)
    with open(args.out, "w") as f:
        f.write("# slicefit native trace (synthetic, bench/gen-trace.py native "
                f"--nodes {args.nodes} --pods {args.pods} --seed {args.seed})\n")
        for obj in lines:
            f.write(json.dumps(obj, separators=(",", ":")) + "\n")
    print(f"{args.out}: {args.nodes} nodes, {args.pods} pods", file=sys.stderr)


# Sandboxes profile: (class, rate by day, rate by night per second, mean life s, sampler).
SANDBOX_NODES = [("H100", 8, 80, 128, 1024, [8], 6), ("A100", 8, 40, 96, 768, [4, 4], 6),
                 ("L4", 4, 24, 48, 192, None, 12)]


def sandbox_pod(rng, kind):
    """(cpu, memory GiB, claims) of one pod of the class."""
    if kind == "sandbox":
        return rng.choice([1, 2]), rng.choice([2, 4, 8]), [
            {"requests": [{"count": 1, "memory": f"{rng.choice([2, 3, 4, 5, 6])}Gi"}]}]
    if kind == "whole":
        req = {"count": 1}
        if rng.random() < 0.3:
            req["models"] = [rng.choice(["A100", "H100"])]
        return 8, 32, [{"requests": [req]}]
    n = 4 if kind == "island4" else 8
    req = {"count": n, "models": ["A100", "H100"] if n == 4 else ["H100"]}
    return 8 * n, 64 * n, [{"requests": [req], "island": True}]


SANDBOX_CLASSES = [  # kind, rate by day, rate by night (per s), mean lifetime (s)
    ("sandbox", 0.8, 0.2, 180.0),
    ("whole", 0.0012, 0.0012, 21600.0),
    ("island4", 0.00025, 0.0004, 43200.0),
    ("island8", 0.00004, 0.00004, 86400.0),
]


def sandbox_life(rng, mean):
    # lognormal with sigma 1: mean = exp(mu + 1/2)
    return max(5, int(rng.lognormvariate(__import__("math").log(mean) - 0.5, 1.0)))


def gen_sandboxes(args):
    rng = random.Random(args.seed)
    lines, i, pods = [], 0, []
    scale = args.nodes / 24.0
    for model, g, gmem, cores, ram, islands, count in SANDBOX_NODES:
        for _ in range(max(1, round(count * scale))):
            node = {"kind": "node", "name": f"sbx-node-{i:03d}", "cpu": str(cores),
                    "memory": f"{ram}Gi", "gpus": g, "model": model, "gpu_memory": f"{gmem}Gi"}
            if islands:
                node["islands"] = islands
            lines.append(node)
            i += 1
    end = int(args.days * 86400)
    for kind, day, night, mean in SANDBOX_CLASSES:
        day, night = day * scale, night * scale
        if kind != "sandbox":  # the steady state at time 0
            for _ in range(int(round((day + night) / 2 * mean))):
                pods.append((0, kind, max(60, int(sandbox_life(rng, mean) * rng.random()))))
        t = 0.0
        peak = max(day, night)
        while True:  # thinning: a Poisson process whose rate follows the time of day
            t += rng.expovariate(peak)
            if t >= end:
                break
            rate = day if (t % 86400) < 43200 else night
            if rng.random() * peak < rate:
                pods.append((int(t), kind, sandbox_life(rng, mean)))
    pods.sort(key=lambda p: (p[0], p[1]))
    for n, (at, kind, life) in enumerate(pods):
        cpu, mem, claims = sandbox_pod(rng, kind)
        lines.append({"kind": "pod", "name": f"{kind}-{n:06d}", "at": at, "until": at + life,
                      "cpu": str(cpu), "memory": f"{mem}Gi", "claims": claims})
    with open(args.out, "w") as f:
        f.write("# slicefit native trace (synthetic, bench/gen-trace.py --profile sandboxes "
                f"--nodes {args.nodes} --days {args.days} --seed {args.seed})\n")
        for obj in lines:
            f.write(json.dumps(obj, separators=(",", ":")) + "\n")
    print(f"{args.out}: {i} nodes, {len(pods)} pods over {args.days} day(s)", file=sys.stderr)


def main():
    if "--profile" in sys.argv[1:]:
        ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
        ap.add_argument("--profile", choices=["sandboxes"], required=True)
        ap.add_argument("--nodes", type=int, default=24,
                        help="about this many nodes, in the profile's proportions (default 24)")
        ap.add_argument("--days", type=float, default=1.0)
        ap.add_argument("--seed", type=int, default=1)
        ap.add_argument("--out", required=True)
        gen_sandboxes(ap.parse_args())
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="format", required=True)
    a = sub.add_parser("alibaba", help="Alibaba-format node and pod CSVs")
    a.add_argument("--nodes", type=int, default=200)
    a.add_argument("--load", type=float, default=0.98,
                   help="total GPU request of the pods / GPU capacity (default 0.98)")
    a.add_argument("--spec-pct", type=float, default=0.0,
                   help="fraction of GPU pods with a gpu_spec (default 0, as the default trace)")
    a.add_argument("--seed", type=int, default=1)
    a.add_argument("--out", required=True, help="prefix: writes PREFIX-nodes.csv, PREFIX-pods.csv")
    n = sub.add_parser("native", help="native JSON lines with islands and departures")
    n.add_argument("--nodes", type=int, default=24)
    n.add_argument("--pods", type=int, default=600)
    n.add_argument("--seed", type=int, default=1)
    n.add_argument("--out", required=True)
    args = ap.parse_args()
    (gen_alibaba if args.format == "alibaba" else gen_native)(args)


if __name__ == "__main__":
    main()
