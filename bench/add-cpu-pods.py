#!/usr/bin/env python3
"""A CPU-heavier variant of an Alibaba pod list: the list plus N CPU-only pods.

The extra pods are drawn with replacement from the CPU-only rows (num_gpu 0)
of a donor list (the same list by default), seeded, and named
openb-pod-xNNNNN. The trace's own cpu050 list is built the same way from the
default list's GPU pods (the same 7,064 of them) and fewer CPU-only pods, so
this reaches the CPU-only shares of the pod lists the paper used and this
repository does not hold. No row of the trace ships with slicefit: point
this at your copy of cluster-trace-gpu-v2023.

  bench/add-cpu-pods.py TRACE/openb_pod_list_default.csv 800 > /tmp/cpux800.csv
  bin/slicefit-replay --nodes TRACE/openb_node_list_gpu_node.csv --pods /tmp/cpux800.csv \\
      --tune 1.3 --seeds 42-51 --policy fgd --device-choice packer
"""
import argparse
import csv
import random
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pods", help="an Alibaba pod list CSV")
    ap.add_argument("extra", type=int, help="how many CPU-only pods to add")
    ap.add_argument("--donor", help="draw the CPU-only pods from this pod list instead")
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    with open(a.pods, newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    with open(a.donor or a.pods, newline="") as f:
        donor = list(csv.reader(f))
    ngpu = donor[0].index("num_gpu")
    cpu_only = [r for r in donor[1:] if r[ngpu] == "0"]
    if not cpu_only:
        sys.exit("no CPU-only pods (num_gpu 0) in %s" % (a.donor or a.pods))
    rng = random.Random(a.seed)
    name = header.index("name")
    for i in range(a.extra):
        r = list(rng.choice(cpu_only))
        r[name] = "openb-pod-x%05d" % i
        body.append(r)
    w = csv.writer(sys.stdout, lineterminator="\n")
    w.writerow(header)
    w.writerows(body)


if __name__ == "__main__":
    main()
