#!/usr/bin/env python3
"""How low can unallocated GPU go at 100% load? A floor for any packer, and what online packers reach.

Takes the pods that have arrived when their GPU requests reach 100% of the cluster's GPUs (the
same arrivals as bench/offline-bfd.py) and prints, per seed and as medians over the seeds:

  lp_floor   A floor under what ANY packer leaves unallocated, offline ones included: the
             configuration LP of the shares (Gilmore-Gomory). Every GPU that holds no whole-GPU
             pod holds a pattern of shares summing to at most 1000 milli-GPU; the LP picks how many
             GPUs take each pattern, with no more pods of a size than arrived, to place the most
             milli-GPU. Nodes, CPU, memory and GPU models are left out, which only lets it place
             more, so capacity less its optimum is a proven floor (column generation, the pricing
             step an exact bounded knapsack, solved by HiGHS through scipy).
  wc_floor   A floor under what any WORK-CONSERVING packer leaves unallocated: one that places
             every pod some GPU can hold when it arrives (kube-scheduler does: a pod that fits a
             node is bound). Until the first failure every pod is placed, and a pod can fail only
             once at most kmax - 1 GPUs are idle (kmax: the most GPUs one pod asks), which takes
             at least as many arrivals as it takes for the shares (a GPU each, at most) and the
             whole-GPU pods to cover all but kmax - 1 GPUs. Idle GPUs never come back (no pod
             leaves), so after the first failure at most kmax - 1 more whole GPUs are placed. For
             each window [a, b) of the first failure's arrival, the configuration LP with every
             pod before a placed and the whole GPUs placed at most those arrived before b - 1
             plus kmax - 1 bounds what any such packer places; the floor is the least over windows
             (and over no failure at all). On the default list it lies above the LP floor
             because the 810-milli pods that arrive while GPUs are idle must be placed, each
             leaving 190 that only the few pods under 190 fill, where the LP floor drops them
             and gives their GPUs to whole-GPU pods. At GPU level it is a floor for packers whose
             pods fit any GPU: a pod that asks for a GPU model, or CPU a node lacks, can fail
             while GPUs are idle, which the argument does not cover.
  bf         An online packer at GPU level: each pod as it arrives, no nodes, no CPU; a whole-GPU
             pod takes any idle GPU (k of them for k GPUs), a share the GPU with the least free
             share that holds it.
  fgd        The same, but a share goes where FGD's measure of the GPU (the share of the list's
             pods that no longer fit, times its free share) grows least.
  planned    The same, but the shares follow the configuration LP solved on the list's whole mix
             (scaled to the arrivals; no knowledge of the order): a share goes into an open GPU
             whose planned pattern still has room for its size, else opens an idle GPU with the
             pattern that holds it and has the most GPUs left to open, else best fit as bf.
  priced     The same, but a share goes where the plan's loss is least (slicefit's weight_plan,
             packer/plan.c): the LP solved on the list's mix of shares with as many GPUs as their
             volume fills prices each size by its dual (r = size less the dual price); K(f), the
             most r a set of sizes within f holds, is what a GPU with f free is worth, and a
             share m on a GPU with f free loses K(f) - K(f - m) - K(m). Ties: best fit. No plan
             state per GPU: one table of 1,001 values.

The three online packers see neither nodes nor CPU, which only helps them: a real scheduler,
which must keep multi-GPU pods on one node and respect CPU, is not expected below them. No row of
the trace ships with slicefit: point it at your copy of cluster-trace-gpu-v2023. Needs Debian's
python3-scipy (1.10 in Debian 12) for the LP.

  python3 bench/packing-bounds.py --nodes TRACE/openb_node_list_gpu_node.csv \\
      --pods TRACE/openb_pod_list_default.csv --seeds 42-51
"""
import collections
import importlib.util
import math
import os
import statistics
import sys

try:
    import numpy as np
    from scipy.optimize import linprog
except ImportError:
    sys.exit("packing-bounds.py: needs scipy (Debian: apt-get install python3-scipy, "
             "then run it with /usr/bin/python3)")

_spec = importlib.util.spec_from_file_location(
    "offline_bfd", os.path.join(os.path.dirname(os.path.abspath(__file__)), "offline-bfd.py"))
offline_bfd = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(offline_bfd)


def split(pods):
    """Whole GPUs asked for (a k-GPU pod counts k), and the count of one-GPU shares per size."""
    for p in pods:
        if int(p["num_gpu"]) > 1 and 0 < int(p["gpu_milli"] or 0) < 1000:
            sys.exit("packing-bounds.py: pod %s asks for a share of %s GPUs; the bounds model "
                     "shares of one GPU only" % (p.get("name", "?"), p["num_gpu"]))
    whole = sum(int(p["num_gpu"]) for p in pods if int(p["gpu_milli"] or 0) >= 1000)
    shares = collections.Counter(int(p["gpu_milli"]) for p in pods
                                 if int(p["num_gpu"]) == 1 and 0 < int(p["gpu_milli"] or 0) < 1000)
    return whole, shares


def best_pattern(sizes, counts, values, unit):
    """Bounded knapsack: the pattern (count per size) of most value that fits 1000 milli-GPU."""
    cells = 1000 // unit
    best = [0.0] * (cells + 1)
    pick = [[0] * len(sizes) for _ in range(cells + 1)]
    for i, s in enumerate(sizes):
        if values[i] <= 1e-9:
            continue
        w = s // unit
        for _ in range(min(math.ceil(counts[i]), 1000 // s)):  # one copy of the item per pass
            for c in range(cells, w - 1, -1):
                v = best[c - w] + values[i]
                if v > best[c] + 1e-12:
                    best[c] = v
                    pick[c] = pick[c - w][:]
                    pick[c][i] += 1
    c = max(range(cells + 1), key=lambda c: best[c])
    return best[c], pick[c]


def config_lp(shares, gpus):
    """The configuration LP: at most `gpus` GPUs, at most shares[s] pods of size s (may be
    fractional). Returns (most milli-GPU placed, sizes, [(pattern, GPUs)])."""
    sizes = sorted(shares)
    if not sizes or gpus <= 0:
        return 0.0, sizes, [], [0.0] * len(sizes)
    counts = [float(shares[s]) for s in sizes]
    unit = math.gcd(1000, *sizes)
    pats = []
    for i, s in enumerate(sizes):
        a = [0] * len(sizes)
        a[i] = max(1, min(1000 // s, int(counts[i])))
        pats.append(a)
    while True:
        c = np.array([-float(sum(a[i] * sizes[i] for i in range(len(sizes)))) for a in pats])
        rows = [[1.0] * len(pats)] + [[float(a[i]) for a in pats] for i in range(len(sizes))]
        res = linprog(c, A_ub=np.array(rows), b_ub=np.array([float(gpus)] + counts),
                      bounds=[(0, None)] * len(pats), method="highs")
        if res.status != 0:
            raise RuntimeError("configuration LP: " + res.message)
        duals = -res.ineqlin.marginals
        value, pat = best_pattern(sizes, counts, [sizes[i] - duals[1 + i] for i in range(len(sizes))],
                                  unit)
        if value - duals[0] <= 1e-6 or pat in pats:  # no pattern improves the LP: optimal
            break
        pats.append(pat)
    return (-res.fun, sizes, [(pats[j], res.x[j]) for j in range(len(pats)) if res.x[j] > 1e-9],
            [sizes[i] - duals[1 + i] for i in range(len(sizes))])


def bounded_lp(shares, low, whole_lo, whole_hi, gpus):
    """Most milli-GPU placed on `gpus` GPUs with whole_lo..whole_hi whole GPUs, at most shares[s]
    and at least low[s] shares of size s; None when no packing places the lower bounds."""
    sizes = sorted(shares)
    n = len(sizes)
    if n == 0:
        return None if whole_lo > gpus else 1000.0 * min(whole_hi, gpus)
    top = [float(shares[s]) for s in sizes]
    bottom = [float(low.get(s, 0)) for s in sizes]
    unit = math.gcd(1000, *sizes)
    miss = 1e5  # per share short of a lower bound: beyond any GPU's worth, so 0 when feasible
    # no pattern holds more shares of a size than arrived (as in config_lp)
    pats = [[max(1, min(1000 // s, int(top[i]))) if j == i else 0 for j in range(n)]
            for i, s in enumerate(sizes)]
    while True:
        m = len(pats)
        # variables: one per pattern, the whole GPUs, one shortfall per size
        c = [-float(sum(a[i] * sizes[i] for i in range(n))) for a in pats] + [-1000.0] + [miss] * n
        rows = [[1.0] * (m + 1) + [0.0] * n]
        b = [float(gpus)]
        for i in range(n):
            rows.append([float(a[i]) for a in pats] + [0.0] * (n + 1))
            b.append(top[i])
        for i in range(n):
            rows.append([-float(a[i]) for a in pats] + [0.0] + [-1.0 if j == i else 0.0 for j in range(n)])
            b.append(-bottom[i])
        res = linprog(np.array(c), A_ub=np.array(rows), b_ub=np.array(b),
                      bounds=[(0, None)] * m + [(whole_lo, whole_hi)] + [(0, None)] * n,
                      method="highs")
        if res.status == 2:
            return None
        if res.status != 0:
            raise RuntimeError("bounded configuration LP: " + res.message)
        duals = -res.ineqlin.marginals
        values = [sizes[i] - duals[1 + i] + duals[1 + n + i] for i in range(n)]
        value, pat = best_pattern(sizes, top, values, unit)
        if value - duals[0] <= 1e-6:
            break
        if pat in pats:
            raise RuntimeError("bounded configuration LP: column generation stalled")
        pats.append(pat)
    if max(res.x[m + 1:]) > 1e-6:
        return None
    return float(sum(c[j] * -res.x[j] for j in range(m + 1)))


def wc_floor(pods, gpus, windows=40):
    """Least unallocated milli-GPU any work-conserving packer can reach (see the top)."""
    arr = [p for p in pods if int(p["num_gpu"]) > 0 and int(p["gpu_milli"] or 0) > 0]
    kmax = max([int(p["num_gpu"]) for p in arr if int(p["gpu_milli"]) >= 1000] + [1])
    whole, shares = split(arr)
    first, used = len(arr), 0
    for j, p in enumerate(arr):
        if used >= gpus - (kmax - 1):
            first = j
            break
        used += int(p["num_gpu"])  # the most GPUs it can take from the idle ones
    step = max(1, (len(arr) - first) // windows)
    cuts = list(range(first, len(arr), step)) + [len(arr)]
    best = None
    for a, b in list(zip(cuts, cuts[1:])) + [(len(arr), len(arr))]:
        whole_lo, low = split(arr[:a])
        whole_b, _ = split(arr[:max(a, b - 1)])  # arrived before the failure, at b - 1 at most
        placed = bounded_lp(shares, low, whole_lo, min(whole, whole_b + kmax - 1), gpus)
        if placed is not None and (best is None or gpus * 1000 - placed < best):
            best = gpus * 1000 - placed
    return best


def lp_floor(pods, gpus):
    """Least unallocated milli-GPU any packer can reach with these arrivals (see the top)."""
    whole, shares = split(pods)
    used = min(whole, gpus)
    placed, _, _, _ = config_lp(shares, gpus - used)
    return gpus * 1000 - used * 1000 - placed


class GpuLevel:
    """Free share of every GPU, by amount: how many GPUs have each amount free."""

    def __init__(self, gpus):
        self.n = collections.Counter({1000: gpus})

    def whole(self, k):
        if self.n[1000] < k:
            return False
        self.n[1000] -= k
        self.n[0] += k
        return True

    def put(self, free, m):
        self.n[free] -= 1
        self.n[free - m] += 1

    def holding(self, m):
        return sorted(f for f, c in self.n.items() if c > 0 and f >= m)


def frag_table(mix):
    """FGD's measure of one GPU by its free share f: f times the share of pods that need more."""
    total = sum(mix.values())
    return {f: f * sum(c for s, c in mix.items() if s > f) / total for f in range(0, 1001, 10)}


def worth_table(mix_pods):
    """K(0..1000) of the plan of the mix's shares (see priced at the top)."""
    _, shares = split(mix_pods)
    if not shares:
        return [0.0] * 1001
    volume = sum(s * c for s, c in shares.items()) / 1000.0
    _, sizes, _, worth = config_lp(dict(shares), volume)
    k = [0.0] * 1001
    for f in range(1, 1001):
        k[f] = max([k[f - 1]] + [k[f - s] + max(w, 0.0) for s, w in zip(sizes, worth) if s <= f])
    return k


def online(pods, gpus, rule, mix_pods):
    """Unallocated milli-GPU after an online packer at GPU level placed `pods` in order."""
    g = GpuLevel(gpus)
    failed = 0
    if rule == "fgd":
        table = frag_table(collections.Counter(min(int(p["gpu_milli"]), 1000) for p in mix_pods
                                               if int(p["num_gpu"]) > 0))
    if rule == "priced":
        worth = worth_table(mix_pods)
    if rule == "planned":
        scale = len(pods) / len(mix_pods)
        whole, shares = split(mix_pods)
        _, sizes, sol, _ = config_lp({s: c * scale for s, c in shares.items()},
                                     gpus - min(whole * scale, gpus))
        slot = {s: i for i, s in enumerate(sizes)}
        left = [x for _, x in sol]
        room = collections.defaultdict(list)  # size -> open GPUs whose plan has room for it
    opened = []  # planned: [free, room per size] of every GPU a plan opened
    for p in pods:
        k, m = int(p["num_gpu"]), int(p["gpu_milli"] or 0)
        if k == 0:
            continue
        if m >= 1000:
            failed += 0 if g.whole(k) else k * 1000
            continue
        if rule == "planned" and m in slot:
            i = slot[m]
            open_ = room[m]
            while open_ and (open_[-1][1][i] == 0 or open_[-1][0] < m):
                open_.pop()
            if open_:
                gpu = open_[-1]
                g.put(gpu[0], m)
                gpu[0] -= m
                gpu[1][i] -= 1
                continue
            plans = [j for j in range(len(sol)) if sol[j][0][i] > 0]
            if plans and g.n[1000] > 0:
                j = max(plans, key=lambda j: left[j])
                left[j] -= 1
                gpu = [1000 - m, list(sol[j][0])]
                gpu[1][i] -= 1
                g.put(1000, m)
                opened.append(gpu)
                for s, si in slot.items():
                    if gpu[1][si] > 0:
                        room[s].append(gpu)
                continue
        fits = g.holding(m)
        if not fits:
            failed += m
            continue
        if rule == "fgd":
            free = min(fits, key=lambda f: (table[f - m] - table[f], f))
        elif rule == "priced":
            free = min(fits, key=lambda f: (round(worth[f] - worth[f - m] - worth[m], 6), f))
        else:
            free = fits[0]
            if rule == "planned":  # off plan: a GPU outside the plans first, else a planned one
                same = [x for x in opened if x[0] == free]
                if len(same) == g.n[free]:
                    same[0][0] -= m
        g.put(free, m)
    return failed


def main():
    nodes, pods, seeds, tune = offline_bfd.trace_args(__doc__)
    gpus = sum(int(n["gpu"]) for n in nodes)
    cols = ["lp_floor", "wc_floor", "bf", "fgd", "planned", "priced"]
    got = {c: [] for c in cols}
    print("unallocated %% of %d GPUs at 100%% load" % gpus)
    print("%-6s" % "seed" + "".join("%10s" % c for c in cols))
    for s in seeds:
        arr = offline_bfd.arrived_at_100(pods, gpus * 1000, s, tune)
        got["lp_floor"].append(lp_floor(arr, gpus))
        got["wc_floor"].append(wc_floor(arr, gpus))
        for rule in cols[2:]:
            got[rule].append(online(arr, gpus, rule, pods))
        print("%-6d" % s + "".join("%10.2f" % (got[c][-1] / gpus / 10.0) for c in cols))
    print("%-6s" % "median" + "".join("%10.2f" % (statistics.median(got[c]) / gpus / 10.0)
                                       for c in cols))


if __name__ == "__main__":
    main()
