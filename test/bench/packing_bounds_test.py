#!/usr/bin/env python3
"""Tests of bench/packing-bounds.py: its LP floor is never above what an exact packer leaves, is
exact where the answer is known by hand, its online packers never give a GPU more than it has, and
a bad trace row is refused with its file and line (offline-bfd.py's reader, which both share).

Run by make test with Debian's python3 (python3-scipy); exits non-zero on the first failure.
"""
import importlib.util
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "packing_bounds", os.path.join(HERE, "..", "..", "bench", "packing-bounds.py"))
pb = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pb)


def pod(num_gpu, milli, name="p"):
    return {"name": name, "num_gpu": str(num_gpu), "gpu_milli": str(milli), "gpu_spec": ""}


def exact_unallocated(pods, gpus):
    """Least unallocated milli-GPU over every placement of the pods (depth-first, small cases)."""
    whole = sum(int(p["num_gpu"]) for p in pods if int(p["gpu_milli"]) >= 1000)
    shares = sorted((int(p["gpu_milli"]) for p in pods if 0 < int(p["gpu_milli"]) < 1000), reverse=True)
    used = min(whole, gpus)
    free = [1000] * (gpus - used)
    best = [0]

    def place(i, placed):
        if placed + sum(shares[i:]) <= best[0]:
            return
        best[0] = max(best[0], placed)
        if i == len(shares):
            return
        seen = set()
        for g in range(len(free)):
            if free[g] >= shares[i] and free[g] not in seen:
                seen.add(free[g])
                free[g] -= shares[i]
                place(i + 1, placed + shares[i])
                free[g] += shares[i]
        place(i + 1, placed)  # or leave it out

    place(0, 0)
    return gpus * 1000 - used * 1000 - best[0]


def exact_work_conserving(pods, gpus):
    """Least unallocated milli-GPU over every packer that places each pod, in order, whenever
    some GPU holds it (depth-first over the distinct GPUs a share can take, small cases)."""
    memo = {}

    def go(i, free):
        if i == len(pods):
            return sum(free)
        key = (i, free)
        if key in memo:
            return memo[key]
        k, m = int(pods[i]["num_gpu"]), int(pods[i]["gpu_milli"])
        if m >= 1000:
            idle = [j for j, f in enumerate(free) if f == 1000]
            if len(idle) < k:
                best = go(i + 1, free)
            else:
                rest = list(free)
                for j in idle[:k]:
                    rest[j] = 0
                best = go(i + 1, tuple(sorted(rest)))
        else:
            options = sorted(set(f for f in free if f >= m))
            if not options:
                best = go(i + 1, free)
            else:
                best = None
                for f in options:
                    rest = list(free)
                    rest[rest.index(f)] -= m
                    got = go(i + 1, tuple(sorted(rest)))
                    best = got if best is None or got < best else best
        memo[key] = best
        return best

    return go(0, tuple([1000] * gpus))


def check(cond, what):
    if not cond:
        sys.exit("FAIL: " + what)


def test_known_floors():
    # Two 810s and one 190 on two GPUs: 810 + 190 closes one GPU, the other keeps 190 free.
    check(abs(pb.lp_floor([pod(1, 810), pod(1, 810), pod(1, 190)], 2) - 190) < 1e-6, "810/810/190")
    # Three 600s and three 400s on three GPUs close exactly.
    check(abs(pb.lp_floor([pod(1, 600)] * 3 + [pod(1, 400)] * 3, 3)) < 1e-6, "600/400")
    # Whole GPUs take their GPUs first: an 8-GPU pod and a 500 on 8 GPUs leave 0 placed shares.
    check(abs(pb.lp_floor([pod(8, 1000), pod(1, 500)], 8)) < 1e-6, "8-GPU pod")
    # More demand than GPUs: 3 whole GPUs asked of 2 leaves nothing free.
    check(abs(pb.lp_floor([pod(1, 1000)] * 3, 2)) < 1e-6, "oversubscribed")


def test_floor_is_below_every_packing():
    rnd = random.Random(7)
    sizes = [50, 110, 160, 190, 230, 320, 470, 500, 650, 810]
    for case in range(60):
        gpus = rnd.randint(1, 4)
        pods = [pod(1, rnd.choice(sizes), "s%d" % i) for i in range(rnd.randint(1, 9))]
        pods += [pod(1, 1000, "w%d" % i) for i in range(rnd.randint(0, 1))]
        floor, exact = pb.lp_floor(pods, gpus), exact_unallocated(pods, gpus)
        check(floor <= exact + 1e-6, "case %d: LP floor %.1f above the exact %d" % (case, floor, exact))
        check(floor >= -1e-6, "case %d: negative floor" % case)


def test_work_conserving_floor():
    # An 810 that arrives while both GPUs are idle must be placed, so one of the two whole GPUs
    # that follow fails and 190 stays free; the LP floor drops the 810 and leaves nothing.
    pods = [pod(1, 810), pod(1, 1000), pod(1, 1000)]
    check(abs(pb.lp_floor(pods, 2)) < 1e-6, "810 then two whole GPUs: LP floor")
    check(abs(pb.wc_floor(pods, 2) - 190) < 1e-6, "810 then two whole GPUs: %r" % pb.wc_floor(pods, 2))
    # A 2-GPU pod fails with one GPU idle; the 1-GPU pod after it still takes that GPU.
    pods = [pod(1, 1000), pod(2, 1000), pod(1, 1000)]
    check(pb.wc_floor(pods, 2, windows=10) == 0, "a GPU idle after the first failure")
    # A share spread over two GPUs is not modelled: refused, not left out of a floor.
    try:
        pb.wc_floor([pod(2, 500, "two-halves")], 2)
        check(False, "a share of two GPUs was accepted")
    except SystemExit as e:
        check("two-halves" in str(e), "share of two GPUs: message %r" % str(e))
    # Whole GPUs first: they fill both GPUs and the 810 fails, as the LP would have it.
    check(abs(pb.wc_floor([pod(1, 1000), pod(1, 1000), pod(1, 810)], 2)) < 1e-6, "whole GPUs first")
    # Below every work-conserving packing, at or above the LP floor, on random small cases.
    rnd = random.Random(5)
    sizes = [50, 110, 160, 190, 230, 320, 470, 500, 650, 810]
    binding = 0
    for case in range(80):
        gpus = rnd.randint(1, 4)
        pods = []
        for i in range(rnd.randint(1, 8)):
            r = rnd.random()
            pods.append(pod(2, 1000) if r < 0.1 else pod(1, 1000) if r < 0.35 else
                        pod(1, rnd.choice(sizes)))
        floor, wc, exact = pb.lp_floor(pods, gpus), pb.wc_floor(pods, gpus, windows=case % 3 + 1), \
            exact_work_conserving(pods, gpus)
        check(wc is not None, "case %d: no window is feasible" % case)
        check(wc <= exact + 1e-6, "case %d: work-conserving floor %.1f above the exact %d (%s, %d GPUs)"
              % (case, wc, exact, [(p["num_gpu"], p["gpu_milli"]) for p in pods], gpus))
        check(wc >= floor - 1e-6, "case %d: work-conserving floor %.1f below the LP floor %.1f"
              % (case, wc, floor))
        binding += wc > floor + 1e-6
    check(binding >= 5, "the work-conserving floor rose above the LP floor in only %d cases" % binding)


def test_online_packers_never_overcommit():
    rnd = random.Random(11)
    sizes = [50, 110, 160, 230, 320, 470, 650, 810]
    mix = [pod(1, rnd.choice(sizes), "m%d" % i) for i in range(200)] + [pod(1, 1000)] * 100 + [pod(2, 1000)] * 5
    for case in range(20):
        gpus = rnd.randint(4, 40)
        pods = [rnd.choice(mix) for _ in range(rnd.randint(5, 80))]
        demand = sum(int(p["num_gpu"]) * int(p["gpu_milli"]) for p in pods)
        for rule in ("bf", "fgd", "planned", "priced"):
            seen = []
            real = pb.GpuLevel.put

            def put(self, free, m, seen=seen):
                check(free >= m, "%s put %d on a GPU with %d free" % (rule, m, free))
                check(self.n[free] > 0, "%s put on a GPU that does not exist" % rule)
                seen.append(m)
                real(self, free, m)

            pb.GpuLevel.put = put
            try:
                failed = pb.online(pods, gpus, rule, mix)
            finally:
                pb.GpuLevel.put = real
            check(0 <= failed <= demand, "%s: failed %d of %d" % (rule, failed, demand))
            check(sum(seen) <= demand - failed, "%s: shares placed beyond what did not fail" % rule)
            # The floor holds for every packer: what it places fits under capacity less the floor.
            check(demand - failed <= gpus * 1000 - pb.lp_floor(pods, gpus) + 1e-6,
                  "case %d: %s placed more than the LP floor allows" % (case, rule))


def test_priced_worth():
    # 470s and 810s: a 470 beside another is worth half an 810 alone (slicefit's test/packer/test_plan.c).
    k = pb.worth_table([pod(1, 470)] * 10 + [pod(1, 810)] * 10)
    check(abs(k[1000] - 810) < 1e-6 and abs(k[809] - 405) < 1e-6 and k[469] == 0, "K of 470/810")
    # A 470 on an idle GPU or beside another loses nothing; where an 810 still fitted, 405.
    check(abs(k[1000] - k[530] - k[470]) < 1e-6 and abs(k[530] - k[60] - k[470]) < 1e-6, "on plan")
    check(abs(k[840] - k[370] - k[470] - 405) < 1e-6, "off plan")


def test_bad_rows_are_named():
    import tempfile
    bfd = pb.offline_bfd
    with tempfile.TemporaryDirectory() as d:
        good = os.path.join(d, "pods.csv")
        with open(good, "w") as f:
            f.write("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1024,1,500\n")
        check(len(bfd.read_rows(good, bfd.POD_INTS)) == 1, "a good row is read")
        for body, want in (("p0,1000,1024,one,500\n", ":2: column num_gpu"),
                           ("p0,1000,1024,1,-5\n", ":2: column gpu_milli"),
                           ("p0,1000,1024\n", ":2: column num_gpu"),
                           ("", ": no rows")):
            bad = os.path.join(d, "bad.csv")
            with open(bad, "w") as f:
                f.write("name,cpu_milli,memory_mib,num_gpu,gpu_milli\n" + body)
            try:
                bfd.read_rows(bad, bfd.POD_INTS)
                check(False, "%r was accepted" % body)
            except SystemExit as e:
                check(want in str(e), "%r: message %r lacks %r" % (body, str(e), want))
        try:
            bfd.read_rows(os.path.join(d, "missing.csv"), bfd.POD_INTS)
            check(False, "a missing file was accepted")
        except SystemExit as e:
            check("missing.csv" in str(e), "missing file: %r" % str(e))


def main():
    test_bad_rows_are_named()
    test_known_floors()
    test_priced_worth()
    test_floor_is_below_every_packing()
    test_work_conserving_floor()
    test_online_packers_never_overcommit()
    print("packing_bounds_test: all passed")


if __name__ == "__main__":
    main()
