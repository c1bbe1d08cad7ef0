#!/usr/bin/env python3
"""Soak: replicas of bin/slicefit against the fake kube-apiserver, under churn and faults.

  bench/soak.py [--minutes 10] [--nodes 1000] [--rate 200] [--calls 20]
                [--replicas 3] [--no-faults] [--seed 1] [--port 20250] [--bin PATH]

Starts test/tools' fake-apiserver (build/release/tools/fake-apiserver) with
NODES ResourceSlices of 8 GPUs and one DeviceClass, and REPLICAS daemons
(bin/slicefit --kubeconfig, each with --probe-listen). For MINUTES it then
churns ResourceClaims through the fake at RATE events per second (a claim is
created pending, allocated one GPU of a node, deleted) while a scheduler
stand-in makes CALLS filter calls per second, spread over the replicas.

Faults, one in each churn period (none with --no-faults), 3 s before its end
while churn goes on, healed when churn stops: the API server hangs with its connections open for 3 s;
every watch gets 410 Expired; every watch is cut in the middle of an event;
the next 30 requests get 500; every watch gets half an event and a newline;
history is compacted and watches expire; one replica is killed with SIGKILL
and started again.

At the end of each period churn stops, the fault heals, and the bench
measures from then how long the replicas take to agree with the API
server's state: every replica's filter answer, for
a pod that needs one GPU and for one that needs all eight of a node, must
name exactly the nodes the bench's own record of the allocations says
(it is the only writer). Verdicts still wrong 60 s after a fault are counted.

Throughout, a thread asks each replica's /readyz on its probe port every
250 ms and counts transitions after the first 200 (a killed replica starts
over); RSS (VmRSS) of every replica is sampled each minute (each tenth of
the run when shorter than 10 minutes). Prints a table and, with --json, the
figures as JSON. Build first: make -j2 all build/release/tools/fake-apiserver.
"""
import argparse
import http.client
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEVS = 8
FAULT_S = 3.0  # a fault starts this long before its period ends, and heals at the end
CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
         "metadata": {"name": "gpu.nvidia.com"},
         "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]}}


def slice_obj(i):
    devs = [{"name": "gpu-%d" % d,
             "attributes": {"productName": {"string": "NVIDIA H100 80GB HBM3"},
                            "index": {"int": d}},
             "capacity": {"memory": {"value": "80Gi"}}} for d in range(DEVS)]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": "node-%d-gpu.nvidia.com-x1" % i},
            "spec": {"driver": "gpu.nvidia.com", "nodeName": "node-%d" % i,
                     "pool": {"name": "node-%d" % i, "generation": 1, "resourceSliceCount": 1},
                     "devices": devs}}


def claim_obj(name, ns, count, alloc=None):
    c = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
         "metadata": {"name": name, "namespace": ns, "uid": "u-" + name},
         "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
             "deviceClassName": "gpu.nvidia.com", "count": count}}]}}}
    if alloc:
        node, dev = alloc
        c["status"] = {"allocation": {
            "devices": {"results": [{"request": "gpu", "driver": "gpu.nvidia.com",
                                     "pool": "node-%d" % node, "device": "gpu-%d" % dev}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [{
                "key": "metadata.name", "operator": "In", "values": ["node-%d" % node]}]}]}}}
    return c


class Fake:
    def __init__(self):
        exe = os.path.join(TOP, "build/release/tools/fake-apiserver")
        self.p = subprocess.Popen([exe], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.port = int(self.p.stdout.readline().split()[1])
        self.mu = threading.Lock()

    def cmd(self, line):
        with self.mu:
            self.p.stdin.write(line + "\n")
            self.p.stdin.flush()
            ans = self.p.stdout.readline()
        if not ans.startswith("ok"):
            raise RuntimeError("fake-apiserver: %s -> %s" % (line[:80], ans))
        return ans

    def stop(self):
        try:
            self.cmd("quit")
        except Exception:
            pass
        self.p.wait(timeout=10)


class Replica:
    def __init__(self, i, kc, port0, logdir, exe):
        self.i, self.kc, self.exe = i, kc, exe
        self.port, self.probe = port0 + 2 * i, port0 + 2 * i + 1
        self.logdir = logdir
        self.lives = 0
        self.start()

    def start(self):
        self.lives += 1
        log = open(os.path.join(self.logdir, "replica-%d-%d.log" % (self.i, self.lives)), "w")
        self.p = subprocess.Popen(
            [self.exe, "--kubeconfig", self.kc, "--allow-token-over-http",
             "--listen", "127.0.0.1:%d" % self.port,
             "--probe-listen", "127.0.0.1:%d" % self.probe], stdout=log, stderr=log)
        self.earlier = getattr(self, "earlier", 0) + getattr(self, "transitions", 0)
        self.first_ready = None  # set by the readiness poller
        self.transitions = 0
        self.last = None

    def rss_mib(self):
        try:
            with open("/proc/%d/status" % self.p.pid) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) / 1024.0
        except OSError:
            return None
        return None


def get(port, path, timeout=2.0):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read()
    except OSError:
        return None, b""
    finally:
        c.close()


def filter_call(port, pod, names, timeout=5.0):
    body = json.dumps({"Pod": pod, "NodeNames": names})
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("POST", "/filter", body, {"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        if r.status != 200:
            return None
        return set(json.loads(data).get("NodeNames") or [])
    except (OSError, ValueError):
        return None
    finally:
        c.close()


def probe_pod(name, claim):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "soak", "uid": "pod-" + name},
            "spec": {"containers": [{"name": "c"}],
                     "resourceClaims": [{"name": "gpu", "resourceClaimName": claim}]}}


class Churn:
    """The bench's own record: it alone writes claims, so it knows what every replica should see."""

    def __init__(self, fake, nodes, rnd):
        self.fake, self.nodes, self.rnd = fake, nodes, rnd
        self.free = {n: set(range(DEVS)) for n in range(nodes)}
        self.claims = {}  # name -> None (pending) or (node, dev)
        self.next = 0
        self.events = 0
        self.mu = threading.Lock()

    def step(self):
        with self.mu:
            r = self.rnd.random()
            pending = [k for k, v in list(self.claims.items())[:64] if v is None]
            if pending and r < 0.45:
                name = pending[0]
                node = self.rnd.randrange(self.nodes)
                if not self.free[node]:
                    return
                dev = min(self.free[node])
                self.free[node].discard(dev)
                self.claims[name] = (node, dev)
                self.fake.cmd("put resourceclaims " +
                              json.dumps(claim_obj(name, "churn", 1, (node, dev)), separators=(",", ":")))
            elif len(self.claims) > self.nodes * 3 or (r >= 0.45 and r < 0.75 and self.claims):
                name = self.rnd.choice(list(self.claims.keys()))
                a = self.claims.pop(name)
                if a:
                    self.free[a[0]].add(a[1])
                self.fake.cmd("del resourceclaims churn/" + name)
            else:
                name = "c-%d" % self.next
                self.next += 1
                self.claims[name] = None
                self.fake.cmd("put resourceclaims " +
                              json.dumps(claim_obj(name, "churn", 1), separators=(",", ":")))
            self.events += 1

    def expected(self):
        with self.mu:
            one = {"node-%d" % n for n in range(self.nodes) if self.free[n]}
            eight = {"node-%d" % n for n in range(self.nodes) if len(self.free[n]) == DEVS}
        return one, eight


def readiness_poller(reps, stop):
    while not stop.is_set():
        for r in reps:
            st, _ = get(r.probe, "/readyz", timeout=1.0)
            ok = st == 200
            if r.first_ready is None:
                if ok:
                    r.first_ready = time.time()
                    r.last = True
                continue
            if ok != r.last:
                r.transitions += 1
                r.last = ok
        stop.wait(0.25)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--rate", type=float, default=200)
    ap.add_argument("--calls", type=float, default=20)
    ap.add_argument("--replicas", type=int, default=3)
    ap.add_argument("--no-faults", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--port", type=int, default=20250)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--bin", default=os.path.join(TOP, "bin/slicefit"),
                    help="the daemon to run (another build, to compare)")
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    tmp = tempfile.mkdtemp(prefix="slicefit-soak-")
    fake = Fake()
    with open(os.path.join(tmp, "slices.json"), "w") as f:
        json.dump([slice_obj(i) for i in range(a.nodes)], f)
    fake.cmd("load resourceslices " + os.path.join(tmp, "slices.json"))
    fake.cmd("put deviceclasses " + json.dumps(CLASS))
    fake.cmd("put resourceclaims " + json.dumps(claim_obj("probe-1", "soak", 1)))
    fake.cmd("put resourceclaims " + json.dumps(claim_obj("probe-8", "soak", DEVS)))
    kc = os.path.join(tmp, "kubeconfig")
    with open(kc, "w") as f:
        f.write("apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n"
                "    server: http://127.0.0.1:%d\nusers:\n- name: u\n  user:\n    token: t\n"
                "contexts:\n- name: c\n  context:\n    cluster: fake\n    user: u\n"
                "current-context: c\n" % fake.port)
    reps = [Replica(i, kc, a.port, tmp, a.bin) for i in range(a.replicas)]
    churn = Churn(fake, a.nodes, rnd)
    names = ["node-%d" % n for n in range(a.nodes)]
    pods = (probe_pod("need-1", "probe-1"), probe_pod("need-8", "probe-8"))
    stop = threading.Event()
    poller = threading.Thread(target=readiness_poller, args=(reps, stop), daemon=True)
    poller.start()
    t0 = time.time()
    while any(r.first_ready is None for r in reps) and time.time() - t0 < 60:
        time.sleep(0.05)
    first_sync = time.time() - t0

    def kill_restart(r):
        r.p.send_signal(signal.SIGKILL)
        r.p.wait()
        r.start()

    # (name, start FAULT_S before the period's end while churn goes on, heal at its end).
    nop = lambda: None
    faults = [] if a.no_faults else [
        ("hang 3 s", lambda: fake.cmd("hang on"), lambda: fake.cmd("hang off")),
        ("410 Expired", lambda: fake.cmd("expire"), nop),
        ("watch cut mid-event", lambda: fake.cmd("drop"), nop),
        ("30 requests 500", lambda: fake.cmd("fail 500 30"), nop),
        ("half an event + newline", lambda: fake.cmd("truncate"), nop),
        ("compact + expire", lambda: (fake.cmd("compact"), fake.cmd("expire")), nop),
        ("SIGKILL + restart", lambda: kill_restart(reps[0]), nop),
    ]
    periods = max(len(faults), 1) if faults else 6
    total_s = a.minutes * 60
    period_s = total_s / periods
    rss_every = 60 if a.minutes >= 10 else total_s / 10
    rss, calls, call_errors = [], 0, 0
    next_rss = time.time()
    results = []

    for k in range(periods):
        end = time.time() + period_s
        fault_at = end - FAULT_S
        ev_gap, call_gap = 1.0 / a.rate, 1.0 / a.calls
        next_ev = next_call = time.time()
        name = faults[k][0] if faults else "none"
        while time.time() < end:
            now = time.time()
            if faults and fault_at is not None and now >= fault_at:
                faults[k][1]()
                fault_at = None
            if now >= next_rss:
                rss.append([round(now - t0)] + [r.rss_mib() for r in reps])
                next_rss += rss_every
            if now >= next_ev:
                churn.step()
                next_ev += ev_gap
                if next_ev < now - 1:
                    next_ev = now  # behind by more than a second: do not burst
            if now >= next_call:
                r = reps[calls % len(reps)]
                calls += 1
                if filter_call(r.port, pods[calls % 2], names) is None:
                    call_errors += 1
                next_call += call_gap
                if next_call < now - 1:
                    next_call = now
            time.sleep(max(0.0, min(next_ev, next_call, end) - time.time()))
        if faults:
            faults[k][2]()  # heal; churn has stopped
        settle = time.time()
        one, eight = churn.expected()
        agree, wrong = None, 0
        while time.time() - settle < 60:
            wrong = 0
            for r in reps:
                for pod, want in zip(pods, (one, eight)):
                    got = filter_call(r.port, pod, names)
                    wrong += len(names) if got is None else len(got ^ want)
            if wrong == 0:
                agree = time.time() - settle
                break
            time.sleep(0.05)
        results.append({"after": name, "events": churn.events, "agree_s": agree,
                        "wrong_verdicts": wrong})
    stop.set()
    poller.join()
    rss.append([round(time.time() - t0)] + [r.rss_mib() for r in reps])
    out = {"minutes": a.minutes, "nodes": a.nodes, "rate": a.rate, "calls_per_s": a.calls,
           "replicas": a.replicas, "first_sync_s": round(first_sync, 2), "events": churn.events,
           "filter_calls": calls, "filter_errors": call_errors, "periods": results,
           "readiness_transitions": [r.transitions + r.earlier for r in reps],
           "rss_mib": rss, "logs": tmp}
    for r in reps:
        r.p.send_signal(signal.SIGTERM)
        r.p.wait(timeout=20)
    fake.stop()
    if a.json:
        print(json.dumps(out, indent=1))
        return
    print("soak: %.1f min, %d nodes, %d claim events (%.0f/s), %d filter calls (%d failed), "
          "%d replicas; first sync %.2f s" % (a.minutes, a.nodes, churn.events,
                                               churn.events / total_s, calls, call_errors,
                                               a.replicas, first_sync))
    print("%-26s %8s %10s %8s" % ("after", "events", "agree (s)", "wrong"))
    for p in results:
        print("%-26s %8d %10s %8d" % (p["after"], p["events"],
                                      "%.2f" % p["agree_s"] if p["agree_s"] is not None else ">60",
                                      p["wrong_verdicts"]))
    print("readiness transitions after each first ready (per replica): %s" %
          out["readiness_transitions"])
    print("RSS MiB (t, replicas...):")
    for row in rss:
        print("  %5ds %s" % (row[0], " ".join("%.1f" % v if v else "-" for v in row[1:])))
    print("logs: %s" % tmp)


if __name__ == "__main__":
    sys.exit(main())
