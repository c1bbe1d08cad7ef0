#!/usr/bin/env python3
"""Stand-ins for the paper's gpushareNN, multigpuNN and gpuspecNN pod lists.

The paper measured FGD on more variants of the default list than the five this
repository's development subset holds: gpushare20/60/80/100 (GPU-sharing pods
as that percent of the GPU asked for), multigpu30/40/50 (multi-GPU pods as that
percent), gpuspec05/20/25/33 (that percent of GPU pods ask for a GPU model).
They are public in alibaba/clusterdata (cluster-trace-gpu-v2023/csv), but no row
of the trace ships with slicefit, and the upstream files are not in
../shared/traces. This script builds a list with the same composition from the
default list, seeded, to measure a strategy on it before the real list is at
hand:

  --gpushare P   the default list's CPU-only pods, then as many GPU pods as it
                 has (7,064), each a share pod (num_gpu 1, gpu_milli < 1000) or
                 another GPU pod drawn with repeats, with the number of share
                 pods chosen so that their GPU is P percent of all GPU asked
                 for (the trace's gpushare40 is 40.1% by this count, the
                 default list 28.5%)
  --multigpu P   the same with multi-GPU pods (num_gpu > 1) against one-GPU
                 pods (multigpu20 is 20.4%, the default 7.3%)
  --gpuspec P    the GPU model list (default: the trace's gpuspec10, whose rows
                 are the default list's with 10.4% of GPU pods given a model):
                 its models are kept and more GPU pods get one until P percent
                 have one, each drawn from the models the list gives pods of
                 its kind (share, one whole GPU, several GPUs); below the
                 list's own percent, a sample of its models is kept

  bench/variant-pods.py TRACE/openb_pod_list_default.csv --gpushare 80 > /tmp/gs80.csv
  bin/slicefit-replay --nodes TRACE/openb_node_list_gpu_node.csv --pods /tmp/gs80.csv \\
      --tune 1.3 --seeds 42-51 --policy fgd,fragmentation --device-choice first-fit

The upstream files keep the CPU-only pods first and rename every pod
openb-pod-NNNN in file order, as this does. They are other draws: a stand-in
tells how a strategy fares on that composition, not the published figure.
"""
import argparse
import csv
import os
import random
import sys


def kind(row, col):
    k, m = int(row[col["num_gpu"]]), int(row[col["gpu_milli"]] or 0)
    if k == 0:
        return "cpu"
    if k == 1 and m < 1000:
        return "share"
    return "whole" if k == 1 else "multi"


def gpu_milli(row, col):
    k, m = int(row[col["num_gpu"]]), int(row[col["gpu_milli"]] or 0)
    return m if k == 1 and m < 1000 else 1000 * k


def draw_mixed(rows, col, hot, pct, rng):
    """CPU-only rows, then len(GPU rows) GPU rows with `hot` pods at pct percent of the GPU."""
    cpu = [r for r in rows if kind(r, col) == "cpu"]
    gpu = [r for r in rows if kind(r, col) != "cpu"]
    a = [r for r in gpu if hot(r)]
    b = [r for r in gpu if not hot(r)]
    if (not a and pct > 0) or (not b and pct < 100):
        sys.exit("the list has no pods of one of the two kinds the percent mixes")
    ma = sum(gpu_milli(r, col) for r in a) / max(len(a), 1)
    mb = sum(gpu_milli(r, col) for r in b) / max(len(b), 1)
    n = len(gpu)
    # x * ma / (x * ma + (n - x) * mb) = pct / 100
    x = n if pct >= 100 else round(pct * n * mb / (100 * ma - pct * ma + pct * mb))
    out = [rng.choice(a) for _ in range(x)] + [rng.choice(b) for _ in range(n - x)]
    rng.shuffle(out)
    return cpu + out


def add_specs(rows, col, pct, rng):
    gpu = [i for i, r in enumerate(rows) if kind(r, col) != "cpu"]
    have = [i for i in gpu if rows[i][col["gpu_spec"]]]
    pool = {}
    for i in have:
        pool.setdefault(kind(rows[i], col), []).append(rows[i][col["gpu_spec"]])
    if not pool:
        sys.exit("--gpuspec needs a list whose pods ask for GPU models (gpuspec10)")
    want = round(pct * len(gpu) / 100)
    if want < len(have):  # fewer than the list: keep a sample of its models
        for i in set(have) - set(rng.sample(have, want)):
            rows[i][col["gpu_spec"]] = ""
        return rows
    free = [i for i in gpu if not rows[i][col["gpu_spec"]] and kind(rows[i], col) in pool]
    for i in rng.sample(free, min(want - len(have), len(free))):
        rows[i][col["gpu_spec"]] = rng.choice(pool[kind(rows[i], col)])
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pods", help="the default Alibaba pod list CSV")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--gpushare", type=float, metavar="P")
    g.add_argument("--multigpu", type=float, metavar="P")
    g.add_argument("--gpuspec", type=float, metavar="P")
    ap.add_argument("--models", help="for --gpuspec: the list whose models to keep and draw "
                    "(default: openb_pod_list_gpuspec10.csv beside the pod list)")
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    pct = a.gpushare if a.gpushare is not None else a.multigpu if a.multigpu is not None else a.gpuspec
    if not 0 <= pct <= 100:
        sys.exit("the percent must be in [0, 100]")
    src = a.pods
    if a.gpuspec is not None:
        src = a.models or os.path.join(os.path.dirname(a.pods), "openb_pod_list_gpuspec10.csv")
    try:
        with open(src, newline="") as f:
            rows = list(csv.reader(f))
    except OSError as e:
        sys.exit("%s: %s" % (src, e.strerror))
    if not rows:
        sys.exit("%s: empty" % src)
    header, body = rows[0], rows[1:]
    col = {c: i for i, c in enumerate(header)}
    for need in ("name", "num_gpu", "gpu_milli"):
        if need not in col:
            sys.exit("%s: no %s column" % (src, need))
    rng = random.Random(a.seed)
    if a.gpushare is not None:
        body = draw_mixed(body, col, lambda r: kind(r, col) == "share", pct, rng)
    elif a.multigpu is not None:
        body = draw_mixed(body, col, lambda r: kind(r, col) == "multi", pct, rng)
    else:
        if "gpu_spec" not in col:
            sys.exit("%s: no gpu_spec column" % src)
        body = add_specs(body, col, pct, rng)
    w = csv.writer(sys.stdout, lineterminator="\n")
    w.writerow(header)
    for i, r in enumerate(body):
        r = list(r)
        r[col["name"]] = "openb-pod-%04d" % i
        w.writerow(r)


if __name__ == "__main__":
    main()
