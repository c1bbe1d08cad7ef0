#!/usr/bin/env python3
"""The daemon's memory against its index, live and from a snapshot.

Loads a generated cluster (bench/gen-cluster.py) into bin/slicefit twice:

  live      test/tools/fake-apiserver serves its DeviceClasses, ResourceSlices and
            ResourceClaims; bin/slicefit --kubeconfig lists and watches them (LIST and
            WATCH; with --unpaged the fake ignores limit and sends each resource in one page)
  snapshot  bin/slicefit --snapshot FILE

and prints, once /readyz says ready: the seconds from start to ready, VmRSS and VmHWM,
slicefit_index_bytes, and RSS / index. A benchmark, not a test: it prints and exits 0.

  bench/daemon-rss.py build/cluster-10000-x8.json           # both modes
  bench/daemon-rss.py build/cluster-10000-x8.json --mode snapshot
  bench/daemon-rss.py --nodes 20000 --allocations 100000    # generates build/cluster-20000-x8.json
  bench/daemon-rss.py --nodes 10000 --allocations 50000 --pods --mode live
                            # and one running Pod per allocated claim (the pods' records)

Run from the repository's top after `make all build/release/tools/fake-apiserver`.
Uses ports 127.0.0.1:0 (the fake) and --port (default 20750) for the daemon.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

RES = {"DeviceClass": "deviceclasses", "ResourceSlice": "resourceslices",
       "ResourceClaim": "resourceclaims", "Pod": "pods"}


def status(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                out[k] = int(v.split()[0])
    return out


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status, r.read().decode()
    except Exception:
        return 0, ""


def measure(cmd, port, label):
    t0 = time.monotonic()
    d = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while get("http://127.0.0.1:%d/readyz" % port)[0] != 200:
            if d.poll() is not None:
                sys.exit("%s: bin/slicefit exited with %d" % (label, d.returncode))
            time.sleep(0.05)
        ready = time.monotonic() - t0
        time.sleep(1)
        st = status(d.pid)
        metrics = get("http://127.0.0.1:%d/metrics" % port)[1]
        idx = next(float(l.split()[1]) for l in metrics.splitlines()
                   if l.startswith("slicefit_index_bytes "))
        mib = 1024.0
        print("%-9s ready %6.2f s  RSS %7.1f MiB  HWM %7.1f MiB  index %6.1f MiB  RSS/index %.2f"
              "  (target 2 x index + 32 MiB = %.1f MiB)"
              % (label, ready, st["VmRSS"] / mib, st["VmHWM"] / mib, idx / 2**20,
                 st["VmRSS"] * 1024.0 / idx, 2 * idx / 2**20 + 32))
    finally:
        d.terminate()
        d.wait()


def with_pods(items):
    """items and one running Pod per allocated claim: bound to its node, owned by a ReplicaSet."""
    pods = []
    for o in items:
        alloc = o.get("status", {}).get("allocation") if o["kind"] == "ResourceClaim" else None
        if not alloc:
            continue
        md = o["metadata"]
        node = alloc["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"][0]
        name = md["name"] + "-pod"
        pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "namespace": md["namespace"], "name": name, "uid": "uid-" + name,
            "creationTimestamp": "2026-12-07T10:00:00Z", "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs-" + name,
                "uid": "uid-rs-" + name, "controller": True}]},
            "spec": {"nodeName": node, "containers": [{"name": "c", "resources": {
                "requests": {"cpu": "1", "memory": "1Gi"}}}],
                "resourceClaims": [{"name": "gpu", "resourceClaimName": md["name"]}]},
            "status": {"phase": "Running"}})
    return items + pods


def split(path, tmp, pods=False):
    """One JSON array file per resource, for the fake's `load`."""
    with open(path) as f:
        items = json.load(f)["items"]
    if pods:
        items = with_pods(items)
    files = {}
    for kind, res in RES.items():
        p = os.path.join(tmp, res + ".json")
        with open(p, "w") as f:
            json.dump([i for i in items if i["kind"] == kind], f, separators=(",", ":"))
        files[res] = p
    return files, len(items)


def live(binary, path, port, unpaged, pods):
    with tempfile.TemporaryDirectory(prefix="slicefit-rss-") as tmp:
        files, n = split(path, tmp, pods)
        fake = subprocess.Popen(["build/release/tools/fake-apiserver"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
        try:
            fport = int(fake.stdout.readline().split()[1])

            def cmd(line):
                fake.stdin.write(line + "\n")
                fake.stdin.flush()
                answer = fake.stdout.readline()
                if not answer.startswith("ok"):
                    sys.exit("fake-apiserver: %s: %s" % (line, answer.strip()))

            for res, p in files.items():
                cmd("load %s %s" % (res, p))
            if unpaged:
                cmd("paging off")
            kc = os.path.join(tmp, "kubeconfig")
            with open(kc, "w") as f:
                f.write("apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n"
                        "    server: http://127.0.0.1:%d\nusers:\n- name: u\n  user:\n"
                        "    token: t\ncontexts:\n- name: c\n  context:\n    cluster: fake\n"
                        "    user: u\ncurrent-context: c\n" % fport)
            measure([binary, "--kubeconfig", kc, "--allow-token-over-http", "--policy",
                     "extender/example-policy.json", "--listen", "127.0.0.1:%d" % port], port,
                    "live" + (" 1pg" if unpaged else ""))
        finally:
            fake.stdin.close()
            fake.terminate()
            fake.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("snapshot", nargs="?")
    ap.add_argument("--nodes", type=int, default=10000)
    ap.add_argument("--allocations", type=int, default=0, help="default: 5 per node")
    ap.add_argument("--mode", choices=["both", "live", "snapshot"], default="both")
    ap.add_argument("--unpaged", action="store_true", help="live: one LIST page per resource")
    ap.add_argument("--port", type=int, default=20750)
    ap.add_argument("--bin", default="bin/slicefit", help="another build's daemon, to compare")
    ap.add_argument("--pods", action="store_true",
                    help="live: serve one running Pod per allocated claim too")
    a = ap.parse_args()
    path = a.snapshot
    if path is None:
        path = "build/cluster-%d-x8.json" % a.nodes
        if not os.path.exists(path):
            subprocess.check_call(["python3", "bench/gen-cluster.py", "--nodes", str(a.nodes),
                                   "--gpus", "8", "--allocations",
                                   str(a.allocations or 5 * a.nodes), "--out", path])
    print("daemon-rss: %s" % path)
    if a.mode in ("both", "snapshot"):
        measure([a.bin, "--snapshot", path, "--policy", "extender/example-policy.json",
                 "--listen", "127.0.0.1:%d" % a.port], a.port, "snapshot")
    if a.mode in ("both", "live"):
        live(a.bin, path, a.port, a.unpaged, a.pods)


if __name__ == "__main__":
    main()
