"""What the tests of bench/'s Python tools share: a small Alibaba pod list written from tuples
(no trace rows), a runner of the tool under test, and a check that stops the test with its name
and what failed."""
import csv
import subprocess
import sys

HEADER = ["name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase",
          "creation_time", "deletion_time", "scheduled_time"]


def write_pods(path, rows):
    """rows: (cpu_milli, num_gpu, gpu_milli, gpu_spec); pod i is named p%04d, created at i."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(HEADER)
        for i, (cpu, k, m, spec) in enumerate(rows):
            w.writerow(["p%04d" % i, cpu, 1024, k, m, spec, "LS", "Running", i, "", i])


def checker(test):
    def check(cond, what):
        if not cond:
            sys.exit("%s: FAILED: %s" % (test, what))
    return check


def runner(tool):
    """run(*args) -> (exit code, stdout, stderr) of the Python tool at path `tool`."""
    def run(*args):
        p = subprocess.run([sys.executable, tool] + list(args), capture_output=True, text=True)
        return p.returncode, p.stdout, p.stderr
    return run
