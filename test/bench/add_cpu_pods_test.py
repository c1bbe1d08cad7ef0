#!/usr/bin/env python3
"""Tests of bench/add-cpu-pods.py on small pod lists made here (no trace rows): --share reaches
the percent of CPU-only pods asked for, a count adds that many, the list's own rows stay as they
are, the extra rows come from the donor's CPU-only rows, the same seed gives the same list, and
bad input is refused with a message.

Run by make test; exits non-zero on the first failure.
"""
import csv
import io
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the tree
sys.path.insert(0, HERE)
from podlists import checker, runner, write_pods  # noqa: E402

check = checker("add_cpu_pods_test")
TOOL = os.path.join(HERE, "..", "..", "bench", "add-cpu-pods.py")
run = runner(TOOL)


def main():
    with tempfile.TemporaryDirectory() as d:
        own = os.path.join(d, "cpu050.csv")
        donor = os.path.join(d, "default.csv")
        write_pods(own, [(4000, 0, 0, "")] * 5 + [(8000, 1, 470, "")] * 60 + [(12000, 1, 1000, "")] * 35)
        write_pods(donor, [(32000, 0, 0, "")] * 3 + [(64000, 0, 0, "")] * 2 + [(6000, 1, 1000, "")] * 10)

        rc, out, err = run(own, "--share", "25", "--donor", donor)
        check(rc == 0, "--share exits 0: " + err)
        rows = list(csv.DictReader(io.StringIO(out)))
        cpu_only = [r for r in rows if r["num_gpu"] == "0"]
        check(abs(len(cpu_only) / len(rows) - 0.25) < 0.01, "25%% CPU-only: %d of %d" % (len(cpu_only), len(rows)))
        check([r["name"] for r in rows[:100]] == ["p%04d" % i for i in range(100)], "own rows first, as they are")
        extra = rows[100:]
        check(all(r["name"].startswith("openb-pod-x") for r in extra), "extra rows are named openb-pod-xNNNNN")
        check({r["cpu_milli"] for r in extra} <= {"32000", "64000"} and len({r["cpu_milli"] for r in extra}) == 2,
              "extra rows are the donor's CPU-only rows")
        check(run(own, "--share", "25", "--donor", donor)[1] == out, "the same seed gives the same list")
        check(run(own, "--share", "25", "--donor", donor, "--seed", "8")[1] != out, "another seed, another draw")

        rc, out, err = run(own, "7")
        rows = list(csv.DictReader(io.StringIO(out)))
        check(rc == 0 and len(rows) == 107, "a count adds that many: %d" % len(rows))
        check({r["cpu_milli"] for r in rows[100:]} == {"4000"}, "without --donor, from the list itself")

        empty = os.path.join(d, "empty.csv")
        open(empty, "w").close()
        nocol = os.path.join(d, "nocol.csv")
        with open(nocol, "w") as f:
            f.write("a,b\n1,2\n")
        gpu_only = os.path.join(d, "gpu.csv")
        write_pods(gpu_only, [(8000, 1, 470, "")] * 4)
        binary = os.path.join(d, "bin.csv")
        with open(binary, "wb") as f:
            f.write(b"\xff\xfe\x00name")
        cases = [
            ([os.path.join(d, "none.csv"), "3"], "No such file"),
            ([empty, "3"], "empty"),
            ([nocol, "3"], "no name column"),
            ([binary, "3"], "not a CSV pod list"),
            ([own, "3", "--donor", nocol], "no name column"),
            ([gpu_only, "3"], "no CPU-only pods"),
            ([own], "either a count"),
            ([own, "3", "--share", "10"], "either a count"),
            ([own, "--share", "100"], "--share must be"),
            ([own, "--share", "-1"], "--share must be"),
            ([own, "-3"], "0 or more"),
        ]
        for args, want in cases:
            rc, out, err = run(*args)
            check(rc != 0 and out == "", "%s: exits non-zero with no list" % args)
            check(want in err and "Traceback" not in err, "%s: says %r, got %r" % (args, want, err))
    print("add_cpu_pods_test: all passed")


if __name__ == "__main__":
    main()
