#!/usr/bin/env python3
"""Tests of bench/standins.py on a small trace made here (no trace rows): it builds the stand-ins
asked for, one per draw, replays each with fgd and the candidate in every device choice, and its
table holds what slicefit-replay itself reports for the same list, worst row first; the policy
file reaches the candidate; bad input is refused with a message.

Run by make test (slicefit-replay from $SLICEFIT_BIN, else bin/); exits non-zero on the first
failure.
"""
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the tree
sys.path.insert(0, HERE)
from podlists import checker, runner, write_pods  # noqa: E402

check = checker("standins_test")
TOOL = os.path.join(HERE, "..", "..", "bench", "standins.py")
run = runner(TOOL)
REPLAY = os.path.join(os.environ.get("SLICEFIT_BIN", os.path.join(HERE, "..", "..", "bin")),
                      "slicefit-replay")
ROW = re.compile(r"^\| (.+?) \| (first-fit|packer) \| ([\d.]+) / ([\d.]+) \| ([\d.]+) / ([\d.]+) \| "
                 r"([-+][\d.]+) / ([-+][\d.]+) \| (\S+) / (\S+) \|$")


def make_trace(d):
    with open(os.path.join(d, "openb_node_list_gpu_node.csv"), "w") as f:
        f.write("sn,cpu_milli,memory_mib,gpu,model\n")
        for i in range(6):
            f.write("g2-%d,96000,786432,8,G2\n" % i)
        for i in range(4):
            f.write("t4-%d,104000,393216,2,T4\n" % i)
        for i in range(3):
            f.write("p100-%d,16000,131072,2,P100\n" % i)
    rng = random.Random(5)
    rows = [(rng.choice([4000, 8000, 16000]), 0, 0, "") for _ in range(30)]
    rows += [(rng.choice([3000, 6000, 12000]), 1, rng.choice([250, 470, 650, 810]), "") for _ in range(60)]
    rows += [(rng.choice([3000, 11000, 16000]), 1, 1000, "") for _ in range(50)]
    rows += [(24000, 2, 1000, "")] * 6 + [(64000, 8, 1000, "")] * 3
    write_pods(os.path.join(d, "openb_pod_list_default.csv"), rows)
    write_pods(os.path.join(d, "openb_pod_list_cpu050.csv"), rows[20:])
    spec = [(c, k, m, "T4" if i % 3 == 0 and k == 1 else "") for i, (c, k, m, _) in enumerate(rows)]
    write_pods(os.path.join(d, "openb_pod_list_gpuspec10.csv"), spec)


def trace_file(trace, name):
    return os.path.join(trace, "openb_pod_list_%s.csv" % name)


def table(out):
    rows = []
    for line in out.splitlines():
        m = ROW.match(line)
        if m:
            g = m.groups()
            rows.append((g[0], g[1], float(g[2]), float(g[3]), float(g[4]), float(g[5]),
                         float(g[6]), float(g[7])))
    return rows


def direct(trace, pods, device, policy, policy_file=None):
    args = [REPLAY, "--nodes", os.path.join(trace, "openb_node_list_gpu_node.csv"), "--pods", pods,
            "--tune", "1.3", "--seeds", "42-43", "--policy", policy, "--device-choice", device, "--json"]
    if policy_file:
        args += ["--policy-file", policy_file]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    m = [json.loads(x)["medians"] for x in out.splitlines() if '"medians"' in x][0]
    return m["alloc_pct_at"]["100"], m["alloc_pct_at"]["130"]


def main():
    check(os.access(REPLAY, os.X_OK), "no slicefit-replay at " + REPLAY)
    with tempfile.TemporaryDirectory() as d:
        trace = os.path.join(d, "trace")
        keep = os.path.join(d, "keep")
        os.mkdir(trace)
        make_trace(trace)
        pf = os.path.join(d, "policy.json")
        with open(pf, "w") as f:
            json.dump({"headroom_pct": "25"}, f)  # 810-milli shares no longer fit: the file shows

        rc, out, err = run("--trace", trace, "--replay", REPLAY, "--lists", "default,multigpu40,cpu250,default",
                           "--draws", "3,4", "--seeds", "42-43", "--keep", keep, "--policy-file", pf)
        check(rc == 0, "a good run exits 0, got %d: %s" % (rc, err))
        rows = table(out)
        labels = sorted({r[0] for r in rows})
        check(labels == ["cpu250, draw 3", "cpu250, draw 4", "default", "multigpu40, draw 3",
                         "multigpu40, draw 4"], "one row set per list and draw: %s" % labels)
        check(len(rows) == 10, "both device choices for each list, a list named twice once: %d rows" % len(rows))
        check("policy.json" in out, "the candidate is named with its policy file")
        for r in rows:
            check(abs((r[4] - r[2]) - r[6]) <= 0.011 and abs((r[5] - r[3]) - r[7]) <= 0.011,
                  "the difference column is candidate less fgd: %s" % (r,))
        worst = [min(r[6], r[7]) for r in rows]
        check(worst == sorted(worst), "rows come worst first: %s" % worst)
        check(re.search(r"^\d+ of 10 rows more than 0\.1 below fgd", out, re.M) is not None,
              "the summary line counts the rows below fgd by more than 0.1")
        below = sum(1 for w in worst if w < -0.1 - 0.006)
        n_below = int(re.search(r"^(\d+) of 10 rows", out, re.M).group(1))
        check(n_below >= below, "every row shown below -0.1 is counted (%d < %d)" % (n_below, below))
        for n in ("multigpu40-3.csv", "multigpu40-4.csv", "cpu250-3.csv", "cpu250-4.csv"):
            check(os.path.isfile(os.path.join(keep, n)), "--keep keeps " + n)
        with open(os.path.join(keep, "multigpu40-3.csv")) as a, open(os.path.join(keep, "multigpu40-4.csv")) as b:
            check(a.read() != b.read(), "two draws are two lists")
        # The table is what slicefit-replay says of the same list, fgd and the candidate.
        mg = os.path.join(keep, "multigpu40-3.csv")
        row = [r for r in rows if r[0] == "multigpu40, draw 3" and r[1] == "packer"][0]
        f = direct(trace, mg, "packer", "fgd")
        c = direct(trace, mg, "packer", "fragmentation", pf)
        check(abs(row[2] - f[0]) < 0.006 and abs(row[3] - f[1]) < 0.006, "fgd column %s vs %s" % (row, f))
        check(abs(row[4] - c[0]) < 0.006 and abs(row[5] - c[1]) < 0.006,
              "candidate column (with the policy file) %s vs %s" % (row, c))
        plain = direct(trace, mg, "packer", "fragmentation")
        check(abs(plain[0] - c[0]) > 0.1, "the policy file changes the candidate (%s vs %s)" % (plain, c))
        check("replays" in err, "progress on stderr")
        check(re.search(r"^Read from .*: default\. Stand-ins: multigpu40, cpu250\.$", out, re.M) is not None,
              "the footer says which lists were read and which were built")

        # A list whose real file is in the trace directory is replayed as it is, not built;
        # --stand-ins builds it anyway.
        shutil.copy(mg, os.path.join(trace, "openb_pod_list_multigpu40.csv"))
        rc, out, err = run("--trace", trace, "--replay", REPLAY, "--lists", "multigpu40", "--draws", "5,6",
                           "--seeds", "42-43", "--device-choice", "packer", "--policy-file", pf)
        check(rc == 0, "a run on a real list exits 0, got %d: %s" % (rc, err))
        rows = table(out)
        check([r[0] for r in rows] == ["multigpu40"], "the real list has one row, no draws: %s" % rows)
        check(abs(rows[0][2] - f[0]) < 0.006 and abs(rows[0][4] - c[0]) < 0.006,
              "the real list's file is what was replayed: %s vs %s, %s" % (rows[0], f, c))
        check("Read from %s: multigpu40. Stand-ins: none." % trace in out, "the footer names the real list")
        rc, out, err = run("--trace", trace, "--replay", REPLAY, "--lists", "multigpu40", "--draws", "3",
                           "--seeds", "42-43", "--device-choice", "packer", "--policy-file", pf, "--stand-ins")
        check(rc == 0, "--stand-ins exits 0, got %d: %s" % (rc, err))
        rows = table(out)
        check([r[0] for r in rows] == ["multigpu40"] and abs(rows[0][2] - f[0]) < 0.006,
              "--stand-ins builds draw 3 again, the same list as before: %s vs %s" % (rows, f))
        check("Stand-ins: multigpu40." in out, "the footer names the stand-in")
        os.remove(os.path.join(trace, "openb_pod_list_multigpu40.csv"))

        # The paper's lists without a stand-in (cpu300, ...) are replayed when their file is
        # there, --stand-ins or not, and under "all" left out, and named, when it is not.
        shutil.copy(mg, trace_file(trace, "cpu300"))
        rc, out, err = run("--trace", trace, "--replay", REPLAY, "--lists", "cpu300", "--seeds", "42-43",
                           "--device-choice", "packer", "--policy-file", pf, "--stand-ins")
        check(rc == 0, "a run on cpu300 exits 0, got %d: %s" % (rc, err))
        rows = table(out)
        check([r[0] for r in rows] == ["cpu300"] and abs(rows[0][2] - f[0]) < 0.006
              and abs(rows[0][4] - c[0]) < 0.006, "cpu300 is its file, replayed: %s vs %s, %s" % (rows, f, c))
        for n in ("gpushare40", "multigpu20"):  # the trace's own lists, which "all" replays too
            shutil.copy(trace_file(trace, "default"), trace_file(trace, n))
        rc, out, err = run("--trace", trace, "--replay", REPLAY, "--seeds", "42-42", "--device-choice", "packer")
        check(rc == 0, "a run on all lists exits 0, got %d: %s" % (rc, err))
        labels = {r[0] for r in table(out)}
        check("cpu300" in labels and "cpu235" not in labels and "gpushare60" in labels and len(labels) == 20,
              "all: the 19 lists and cpu300, not the absent ones: %s" % sorted(labels))
        check("Not in the trace directory, and without a stand-in: cpu0, cpu037, cpu072, cpu235." in out,
              "the footer names the lists left out")
        for n in ("cpu300", "gpushare40", "multigpu20"):
            os.remove(trace_file(trace, n))

        # Bad input: a message, a non-zero exit, no traceback.
        bad_pf = os.path.join(d, "bad.json")
        with open(bad_pf, "w") as f:
            f.write('{"weight_unfed": "2"}')
        notrace = os.path.join(d, "empty")
        os.mkdir(notrace)
        partial = os.path.join(d, "partial")
        os.mkdir(partial)
        for n in ("openb_node_list_gpu_node.csv", "openb_pod_list_default.csv"):
            with open(os.path.join(trace, n)) as s, open(os.path.join(partial, n), "w") as t:
                t.write(s.read())
        cases = [
            (["--trace", os.path.join(d, "nope")], "not a directory"),
            (["--trace", notrace], "no openb_node_list_gpu_node.csv"),
            (["--trace", trace, "--lists", "multigpu45"], "unknown list"),
            (["--trace", trace, "--lists", ","], "no list named"),
            (["--trace", trace, "--seeds", "51-42"], "--seeds"),
            (["--trace", trace, "--seeds", "x"], "--seeds"),
            (["--trace", trace, "--draws", "a,b"], "--draws"),
            (["--trace", trace, "--device-choice", "best"], "--device-choice"),
            (["--trace", trace, "--policy-file", os.path.join(d, "none.json")], "no such file"),
            (["--trace", trace, "--jobs", "0"], "--jobs"),
            (["--trace", trace, "--lists", "default", "--keep", pf], "--keep"),
            (["--trace", trace, "--replay", os.path.join(d, "none")], "not an executable"),
            (["--trace", partial, "--lists", "cpu050"], "not in the trace directory"),
            (["--trace", trace, "--lists", "cpu235"], "openb_pod_list_cpu235.csv: not in the trace directory"),
            (["--trace", partial, "--lists", "cpu100"], "building cpu100: openb_pod_list_cpu050.csv is not"),
            (["--trace", partial, "--lists", "gpuspec20"], "building gpuspec20: openb_pod_list_gpuspec10.csv"),
            (["--trace", trace, "--lists", "default", "--seeds", "42-42", "--policy-file", bad_pf],
             "weight_unfed"),
        ]
        for args, want in cases:
            if "--replay" not in args:
                args = args + ["--replay", REPLAY]
            rc, out, err = run(*args)
            check(rc != 0, "%s: exits non-zero" % args)
            check(want in err and "Traceback" not in err, "%s: says %r, got %r" % (args, want, err))
    print("standins_test: all passed")


if __name__ == "__main__":
    main()
