#!/usr/bin/env python3
"""Replay a policy against fgd on the five trace lists and stand-ins for the paper's others.

The default strategy is meant never to be worse than our fgd by more than 0.1 point at 100% and
130% arrived load, on every pod list, in both device choices, and that is measured on Alibaba
pod lists this repository does not hold. This builds stand-ins for them from your copy of
cluster-trace-gpu-v2023 (as docs/research/packing.md describes), replays each with fgd and
with the candidate (the default strategy, or fragmentation with --policy-file's keys), and
prints one Markdown table of the medians and their difference, worst first:

  gpushare20/60/80/100   bench/variant-pods.py default --gpushare P
  multigpu30/40/50       bench/variant-pods.py default --multigpu P
  gpuspec05/20/25/33     bench/variant-pods.py default --gpuspec P (models of gpuspec10)
  cpu100/200/250         bench/add-cpu-pods.py cpu050 --share P --donor default
  default, cpu050, gpushare40, gpuspec10, multigpu20: the trace's own lists, when present
  cpu0/037/072/235/300   no stand-in: replayed when their file is in --trace, else left out

  bench/standins.py --trace TRACE --seeds 42-51 > /tmp/standins.md
  bench/standins.py --trace TRACE --lists multigpu40,multigpu50 --draws 7,9,10,11 \\
      --policy-file my-policy.json

The paper's other lists are public too (alibaba/clusterdata, cluster-trace-gpu-v2023/csv): a
list whose file is in --trace (openb_pod_list_multigpu40.csv, ...) is replayed as it is, in
place of its stand-in, unless --stand-ins asks for the stand-in anyway.

--draws gives the stand-ins' own seeds (each draw is another list of the same composition; a
list read from the trace has one). Progress goes to stderr. The stand-ins are written to a
temporary directory, or kept in --keep DIR. No row of the trace ships with slicefit.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
OWN = ["default", "cpu050", "gpushare40", "gpuspec10", "multigpu20"]
# name -> (tool, base list, option, value)
BUILT = {}
for p in (20, 60, 80, 100):
    BUILT["gpushare%d" % p] = ("variant-pods.py", "default", "--gpushare", p)
for p in (30, 40, 50):
    BUILT["multigpu%d" % p] = ("variant-pods.py", "default", "--multigpu", p)
for p in (5, 20, 25, 33):
    BUILT["gpuspec%02d" % p] = ("variant-pods.py", "default", "--gpuspec", p)
for p in (10, 20, 25):
    BUILT["cpu%d" % (p * 10)] = ("add-cpu-pods.py", "cpu050", "--share", p)
# The paper's lists with no stand-in: replayed from the trace directory when there, else left out.
PAPER = ["cpu0", "cpu037", "cpu072", "cpu235", "cpu300"]
ORDER = OWN + list(BUILT) + PAPER


def die(msg):
    sys.exit("standins.py: " + msg)


def trace_file(trace, name):
    return os.path.join(trace, "openb_pod_list_%s.csv" % name)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", required=True, help="directory of cluster-trace-gpu-v2023's CSV files")
    ap.add_argument("--replay", help="slicefit-replay to run (default: bin/slicefit-replay of this tree)")
    ap.add_argument("--lists", default="all", help="comma-separated names (default: all of them)")
    ap.add_argument("--draws", default="7", help="comma-separated seeds of the stand-ins (default 7)")
    ap.add_argument("--seeds", default="42-51", help="replay seeds, A-B (default 42-51)")
    ap.add_argument("--device-choice", default="first-fit,packer", help="first-fit, packer or both")
    ap.add_argument("--policy-file", help="the candidate: fragmentation with these policy keys")
    ap.add_argument("--tune", default="1.3", help="as slicefit-replay's (default 1.3)")
    ap.add_argument("--jobs", type=int, default=2, help="replays at once (default 2)")
    ap.add_argument("--keep", help="write the stand-ins to this directory and keep them")
    ap.add_argument("--stand-ins", action="store_true",
                    help="build every stand-in even where the trace directory holds the real list")
    a = ap.parse_args(argv)
    if not os.path.isdir(a.trace):
        die("--trace %s: not a directory" % a.trace)
    nodes = os.path.join(a.trace, "openb_node_list_gpu_node.csv")
    if not os.path.isfile(nodes):
        die("--trace %s: no openb_node_list_gpu_node.csv there" % a.trace)
    a.nodes = nodes
    a.replay = a.replay or os.path.join(os.environ.get("SLICEFIT_BIN", os.path.join(HERE, "..", "bin")),
                                        "slicefit-replay")
    if not os.access(a.replay, os.X_OK):
        die("%s: not an executable (make builds it; or pass --replay)" % a.replay)
    if a.lists == "all":
        names = [n for n in ORDER if n not in PAPER or os.path.isfile(trace_file(a.trace, n))]
    else:
        names = list(dict.fromkeys(s for s in a.lists.split(",") if s))
    for n in names:
        if n not in ORDER:
            die("--lists: unknown list %r (known: %s)" % (n, ", ".join(ORDER)))
    if not names:
        die("--lists: no list named")
    a.names = names
    if not re.fullmatch(r"\d+-\d+", a.seeds) or int(a.seeds.split("-")[0]) > int(a.seeds.split("-")[1]):
        die("--seeds %r: want A-B with A <= B" % a.seeds)
    try:
        a.draws = [int(s) for s in a.draws.split(",") if s]
    except ValueError:
        die("--draws %r: want comma-separated integers" % a.draws)
    if not a.draws:
        die("--draws: no seed named")
    a.devices = [s for s in a.device_choice.split(",") if s]
    if not a.devices or any(d not in ("first-fit", "packer") for d in a.devices):
        die("--device-choice %r: want first-fit, packer or both" % a.device_choice)
    if a.policy_file is not None and not os.path.isfile(a.policy_file):
        die("--policy-file %s: no such file" % a.policy_file)
    if a.jobs < 1:
        die("--jobs must be at least 1")
    return a


def read_from_trace(a, n):
    """Is list n replayed from the trace directory (its own lists, or a real list there)?"""
    return n in OWN or n in PAPER or (not a.stand_ins and os.path.isfile(trace_file(a.trace, n)))


def build(a, out):
    """[(label, csv path)] for every list and draw asked for; builds the stand-ins into out."""
    lists = []
    for n in a.names:
        if read_from_trace(a, n):
            path = trace_file(a.trace, n)
            if not os.path.isfile(path):
                die("%s: not in the trace directory" % os.path.basename(path))
            lists.append((n, path))
            continue
        tool, base, opt, val = BUILT[n]
        need = [base] + (["default"] if tool == "add-cpu-pods.py" else []) + \
            (["gpuspec10"] if opt == "--gpuspec" else [])
        for b in need:
            if not os.path.isfile(trace_file(a.trace, b)):
                die("building %s: %s is not in the trace directory" % (n, os.path.basename(trace_file(a.trace, b))))
        for s in a.draws:
            label = n if len(a.draws) == 1 else "%s, draw %d" % (n, s)
            path = os.path.join(out, "%s-%d.csv" % (n, s))
            args = [sys.executable, os.path.join(HERE, tool), trace_file(a.trace, base), opt, str(val),
                    "--seed", str(s)]
            if tool == "add-cpu-pods.py":
                args += ["--donor", trace_file(a.trace, "default")]
            with open(path, "w") as f:
                p = subprocess.run(args, stdout=f, stderr=subprocess.PIPE, text=True)
            if p.returncode != 0:
                die("building %s: %s" % (label, p.stderr.strip() or "exit %d" % p.returncode))
            lists.append((label, path))
    return lists


def replay(a, pods, device, policy, policy_file):
    args = [a.replay, "--nodes", a.nodes, "--pods", pods, "--tune", a.tune, "--seeds", a.seeds,
            "--policy", policy, "--device-choice", device, "--json"]
    if policy_file:
        args += ["--policy-file", policy_file]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        die("%s: %s" % (" ".join(args), p.stderr.strip() or "exit %d" % p.returncode))
    for line in p.stdout.splitlines():
        if '"medians"' in line:
            m = json.loads(line)["medians"]
            return (m["alloc_pct_at"]["100"], m["alloc_pct_at"]["130"],
                    m.get("free_at_100", {}).get("starved_pct"))
    die("%s: no medians in its output" % " ".join(args))


def main(argv):
    a = parse_args(argv)
    out = a.keep or tempfile.mkdtemp(prefix="standins.")
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        die("--keep %s: %s" % (out, e.strerror))
    try:
        lists = build(a, out)
        jobs = [(label, path, d, pol) for label, path in lists for d in a.devices
                for pol in ("fgd", "candidate")]
        res = {}
        ex = concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs)
        try:
            fut = {}
            for label, path, d, pol in jobs:
                if pol == "fgd":
                    f = ex.submit(replay, a, path, d, "fgd", None)
                else:
                    f = ex.submit(replay, a, path, d, "fragmentation", a.policy_file)
                fut[f] = (label, d, pol)
            for i, f in enumerate(concurrent.futures.as_completed(fut)):
                res[fut[f]] = f.result()  # a replay that failed exits here, with its message
                print("standins: %d/%d replays (%s, %s, %s)" % ((i + 1,) + (len(jobs),) + fut[f]),
                      file=sys.stderr)
        finally:
            ex.shutdown(wait=True, cancel_futures=True)  # on a failure, start no other replay
    finally:
        if not a.keep:
            shutil.rmtree(out, ignore_errors=True)
    cand = "fragmentation" + (" + " + os.path.basename(a.policy_file) if a.policy_file else "")
    rows = []
    for label, _ in lists:
        for d in a.devices:
            f, c = res[(label, d, "fgd")], res[(label, d, "candidate")]
            rows.append((min(c[0] - f[0], c[1] - f[1]), label, d, f, c))
    print("Allocation %% at 100%% / 130%% arrived, medians of seeds %s, --tune %s; candidate: %s."
          % (a.seeds, a.tune, cand))
    print("Worst first; starved: % of GPUs idle or shared but starved of CPU at 100%.\n")
    print("| pod list | devices | fgd | candidate | candidate − fgd | starved, fgd / candidate |")
    print("|---|---|---:|---:|---:|---:|")

    def st(x):
        return "n/a" if x is None else "%.2f" % x

    for worst, label, d, f, c in sorted(rows, key=lambda r: r[0]):
        print("| %s | %s | %.2f / %.2f | %.2f / %.2f | %+.2f / %+.2f | %s / %s |"
              % (label, d, f[0], f[1], c[0], c[1], c[0] - f[0], c[1] - f[1], st(f[2]), st(c[2])))
    below = [r for r in rows if r[0] < -0.1 - 1e-9]
    read = [n for n in a.names if read_from_trace(a, n)]
    built = [n for n in a.names if n not in read]
    print("\nRead from %s: %s. Stand-ins: %s." % (a.trace, ", ".join(read) or "none", ", ".join(built) or "none"))
    absent = [n for n in PAPER if n not in a.names] if a.lists == "all" else []
    if absent:
        print("Not in the trace directory, and without a stand-in: %s." % ", ".join(absent))
    print("%d of %d rows more than 0.1 below fgd%s" % (
        len(below), len(rows), (": " + ", ".join("%s (%s)" % (r[1], r[2]) for r in below)) if below else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
