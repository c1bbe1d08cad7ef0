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

--share P instead of a count adds CPU-only pods until they are P percent of
the pods. The paper's cpuNNN lists are named that way (cpu050: 375 CPU-only
pods of 7,439, 5.0%), so cpu050 with CPU-only pods of the default list to
10, 20 and 25% stands in for cpu100, cpu200 and cpu250. (The real lists,
public in alibaba/clusterdata, are the default list's CPU-only rows drawn
with repeats, first, then its 7,064 GPU pods: the same population; only
which rows were drawn, and their names, differ. docs/replay.md.)

  bench/add-cpu-pods.py TRACE/openb_pod_list_cpu050.csv --share 25 \\
      --donor TRACE/openb_pod_list_default.csv > /tmp/cpu250v.csv
"""
import argparse
import csv
import random
import sys


def read_list(path):
    """(header, rows) of an Alibaba pod list, or exit with a message naming what is wrong."""
    try:
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
    except OSError as e:
        sys.exit("%s: %s" % (path, e.strerror))
    except (csv.Error, UnicodeDecodeError) as e:
        sys.exit("%s: not a CSV pod list: %s" % (path, e))
    if not rows:
        sys.exit("%s: empty: want an Alibaba pod list with a header row" % path)
    for col in ("name", "num_gpu"):
        if col not in rows[0]:
            sys.exit("%s: no %s column in the header (an Alibaba pod list has name, cpu_milli, "
                     "memory_mib, num_gpu, gpu_milli)" % (path, col))
    return rows[0], rows[1:]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pods", help="an Alibaba pod list CSV")
    ap.add_argument("extra", type=int, nargs="?", help="how many CPU-only pods to add")
    ap.add_argument("--share", type=float, help="add CPU-only pods until they are this percent of the pods")
    ap.add_argument("--donor", help="draw the CPU-only pods from this pod list instead")
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    header, body = read_list(a.pods)
    dheader, dbody = read_list(a.donor) if a.donor else (header, body)
    ngpu = dheader.index("num_gpu")
    cpu_only = [r for r in dbody if len(r) > ngpu and r[ngpu] == "0"]
    if not cpu_only:
        sys.exit("no CPU-only pods (num_gpu 0) in %s" % (a.donor or a.pods))
    if (a.extra is None) == (a.share is None):
        sys.exit("give either a count of pods to add or --share PERCENT")
    if a.extra is not None and a.extra < 0:
        sys.exit("the count of pods to add must be 0 or more")
    if a.share is not None:
        if not 0 <= a.share < 100:
            sys.exit("--share must be a percent in [0, 100)")
        ngpu_own = header.index("num_gpu")
        have = sum(1 for r in body if r[ngpu_own] == "0")
        # (have + x) / (len(body) + x) = share  =>  x = (share * len - 100 * have) / (100 - share)
        a.extra = max(0, round((a.share * len(body) - 100 * have) / (100 - a.share)))
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
