#!/usr/bin/env python3
"""Tests of bench/variant-pods.py on a small pod list made here (no trace rows): each variant has
the composition it asks for, keeps the CPU-only pods first and the GPU pod count, is the same for
the same seed, and bad input is refused with a message.

Run by make test; exits non-zero on the first failure.
"""
import csv
import io
import os
import random
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the tree
sys.path.insert(0, HERE)
from podlists import checker, runner, write_pods  # noqa: E402

check = checker("variant_pods_test")
TOOL = os.path.join(HERE, "..", "..", "bench", "variant-pods.py")
run = runner(TOOL)


def parse(text):
    return list(csv.DictReader(io.StringIO(text)))


def gpu_of(r):
    k, m = int(r["num_gpu"]), int(r["gpu_milli"])
    return m if k == 1 and m < 1000 else 1000 * k


def main():
    rng = random.Random(3)
    rows = [(8000, 0, 0, "")] * 50
    rows += [(4000, 1, rng.choice([250, 470, 810]), "") for _ in range(300)]
    rows += [(12000, 1, 1000, "")] * 600 + [(96000, 8, 1000, "")] * 20 + [(24000, 2, 1000, "")] * 30
    specs = [(12000, 1, 1000, "T4")] * 60 + [(4000, 1, 470, "P100")] * 40
    with tempfile.TemporaryDirectory() as d:
        base = os.path.join(d, "openb_pod_list_default.csv")
        write_pods(base, rows)
        write_pods(os.path.join(d, "openb_pod_list_gpuspec10.csv"), rows[:-100] + specs)
        for flag, hot in (("--gpushare", lambda r: int(r["num_gpu"]) == 1 and int(r["gpu_milli"]) < 1000),
                          ("--multigpu", lambda r: int(r["num_gpu"]) > 1)):
            for pct in (0, 20, 60, 100):
                rc, out, err = run(base, flag, str(pct))
                check(rc == 0, "%s %d: %s" % (flag, pct, err))
                got = parse(out)
                gpu = [r for r in got if r["num_gpu"] != "0"]
                check([r["num_gpu"] for r in got[:50]] == ["0"] * 50, "CPU-only pods first")
                check(len(gpu) == len(rows) - 50, "%s %d keeps the GPU pod count" % (flag, pct))
                share = 100.0 * sum(gpu_of(r) for r in gpu if hot(r)) / sum(gpu_of(r) for r in gpu)
                check(abs(share - pct) < 3, "%s %d gives %.1f%%" % (flag, pct, share))
                check([r["name"] for r in got] == ["openb-pod-%04d" % i for i in range(len(got))],
                      "pods renamed in file order")
        a, b = run(base, "--gpushare", "60", "--seed", "9"), run(base, "--gpushare", "60", "--seed", "9")
        check(a == b, "the same seed gives the same list")
        check(a != run(base, "--gpushare", "60", "--seed", "10"), "another seed gives another draw")
        for pct in (20, 40):
            rc, out, err = run(base, "--gpuspec", str(pct))
            check(rc == 0, "--gpuspec %d: %s" % (pct, err))
            got = parse(out)
            gpu = [r for r in got if r["num_gpu"] != "0"]
            have = [r for r in gpu if r["gpu_spec"]]
            check(abs(len(have) - pct * len(gpu) / 100) <= 1, "--gpuspec %d: %d of %d" % (pct, len(have), len(gpu)))
            check(all(r["gpu_spec"] == ("P100" if int(r["gpu_milli"]) < 1000 else "T4") for r in have),
                  "a model drawn from the pods of its kind")
        rc, out, _ = run(base, "--gpuspec", "5")
        check(rc == 0 and 0 < sum(1 for r in parse(out) if r["gpu_spec"]) < 100, "below the list: a sample")
        for bad, msg in (([base, "--gpushare", "120"], "percent"), ([base], "one of the arguments"),
                         ([base, "--gpushare", "20", "--multigpu", "20"], "not allowed"),
                         ([os.path.join(d, "nope.csv"), "--gpushare", "20"], "No such file")):
            rc, out, err = run(*bad)
            check(rc != 0 and msg in err and "Traceback" not in err,
                  "%s refused with %r: %r" % (bad[1:], msg, err))
        empty = os.path.join(d, "empty.csv")
        open(empty, "w").close()
        rc, _, err = run(empty, "--gpushare", "20")
        check(rc != 0 and "empty" in err and "Traceback" not in err, "an empty file: %r" % err)
        nocol = os.path.join(d, "nocol.csv")
        with open(nocol, "w") as f:
            f.write("name,cpu_milli,num_gpu\np0,1000,1\n")
        rc, _, err = run(nocol, "--multigpu", "20")
        check(rc != 0 and "no gpu_milli column" in err, "a list without gpu_milli: %r" % err)
        nospec = os.path.join(d, "nospec.csv")
        with open(nospec, "w") as f:
            f.write("name,cpu_milli,num_gpu,gpu_milli\np0,1000,1,1000\n")
        rc, _, err = run(base, "--gpuspec", "20", "--models", nospec)
        check(rc != 0 and "no gpu_spec column" in err, "models without gpu_spec: %r" % err)
        write_pods(os.path.join(d, "cpu.csv"), [(8000, 0, 0, "")] * 10)
        rc, _, err = run(os.path.join(d, "cpu.csv"), "--gpushare", "50")
        check(rc != 0 and "no pods of one of the two kinds" in err, "a list without GPU pods: %r" % err)
    print("variant_pods_test: all passed")


if __name__ == "__main__":
    main()
