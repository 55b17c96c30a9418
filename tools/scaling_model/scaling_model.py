#!/usr/bin/python3
"""Scaling model of cifar_mpi's data-parallel step (method: docs/scaling.md).

From a measured single-rank step (its forward, backward and other time), the
model's gradient tensors, the reducer's bucket plan (src/comm/gradient_reducer.cpp
plan_buckets: first bucket ~1 MiB, then ~25 MiB, in reverse parameter order)
and an all-reduce cost (bus bandwidth and latency, or tables measured with
allreduce_bench), it predicts the step time, images/s and weak-scaling
efficiency of N ranks, with and without overlapping communication with
backward. Standard library only.

  # a cluster of 8-GPU nodes, 1 to 64 nodes, from a single-GPU step time
  tools/scaling_model/scaling_model.py --model resnet18 --batch 256 --step-time 0.060 \\
      --backward-fraction 0.6 --ranks-per-node 8 --nodes 1 2 4 8 16 32 64

  # one host: 1, 2 and 4 ranks on 2 cores, from a profiled 1-rank run and
  # measured all-reduce tables
  tools/scaling_model/scaling_model.py --model convnet --profile-log np1.log \\
      --cores-per-node 2 --ranks-per-node 1 2 4 --nodes 1 --allreduce-log np2.txt np4.txt
"""
import argparse
import bisect
import math
import re
import sys

MIB = 1 << 20

# --------------------------------------------------------------------------
# Gradient tensors, in the order Module::parameters() lists them (src/model).


def convnet_parameters():
    """src/model/convnet.cpp: conv 3->32 k3, conv 32->64 k3, fc 2304->128, fc 128->10."""
    sizes = []
    for cin, cout in ((3, 32), (32, 64)):
        sizes += [cout * cin * 9, cout]
    for fin, fout in ((64 * 6 * 6, 128), (128, 10)):
        sizes += [fout * fin, fout]
    return sizes


def resnet18_parameters():
    """src/model/resnet.cpp: CIFAR ResNet-18 (3x3 stem, no max-pool), BatchNorm weight and bias."""
    sizes = [64 * 3 * 9, 64, 64]  # conv1, bn1
    cin = 64
    for stage, width in enumerate((64, 128, 256, 512)):
        for block in range(2):
            stride = 2 if stage > 0 and block == 0 else 1
            sizes += [width * cin * 9, width, width, width * width * 9, width, width]
            if stride != 1 or cin != width:
                sizes += [width * cin, width, width]  # 1x1 downsample conv + BatchNorm
            cin = width
    sizes += [10 * 512, 10]  # fc
    return sizes


MODELS = {
    "convnet": (convnet_parameters, 315_722),
    "resnet18": (resnet18_parameters, 11_173_962),
}


def parameter_bytes(model):
    build, expected = MODELS[model]
    sizes = build()
    if sum(sizes) != expected:
        raise SystemExit(f"internal: {model} has {sum(sizes)} parameters, expected {expected}")
    return [4 * n for n in sizes]  # fp32 gradients


def plan_buckets(param_bytes, first_bucket_bytes, bucket_bytes):
    """Same rule as gradient_reducer.cpp: reverse order, a bucket closes once it reaches its limit."""
    plan, current, current_bytes = [], [], 0
    for k in reversed(range(len(param_bytes))):
        current.append(k)
        current_bytes += param_bytes[k]
        limit = first_bucket_bytes if not plan else bucket_bytes
        if current_bytes >= limit:
            plan.append(current)
            current, current_bytes = [], 0
    if current:
        plan.append(current)
    return [sum(param_bytes[k] for k in bucket) for bucket in plan]


# --------------------------------------------------------------------------
# Compute: one rank's step, split into forward, backward and the rest.


class Compute:
    def __init__(self, forward, backward, other, threads):
        self.forward, self.backward, self.other, self.threads = forward, backward, other, threads

    @property
    def step(self):
        return self.forward + self.backward + self.other

    def scaled(self, factor):
        return Compute(self.forward * factor, self.backward * factor, self.other * factor, self.threads)


PROFILE_RE = re.compile(r"Profile epoch \d+ \(sum over (\d+) ranks, ([0-9.]+) s\): (.*)")
RESULT_RE = re.compile(r"RESULT train_seconds=([0-9.]+) images_per_second=([0-9.]+)")
THREADS_RE = re.compile(r"cifar_mpi: 1 rank\(s\) .* (\d+) thread\(s\) per rank")


def compute_from_profile_log(path, batch):
    """A `cifar_mpi --profile true` run on 1 rank: the step time from its RESULT
    line, the phase split from its Profile lines (summed over epochs)."""
    text = open(path).read()
    phases, total = {}, 0.0
    for ranks, seconds, parts in PROFILE_RE.findall(text):
        if ranks != "1":
            raise SystemExit(f"{path}: the profile run must use 1 rank, it used {ranks}")
        total += float(seconds)
        for part in parts.split(","):
            name, pct = part.strip().rsplit(" ", 1)
            phases[name] = phases.get(name, 0.0) + float(seconds) * float(pct.rstrip("%")) / 100
    result = RESULT_RE.search(text)
    threads = THREADS_RE.search(text)
    if not phases or not result or not threads:
        raise SystemExit(f"{path}: needs the Profile, RESULT and 'cifar_mpi: 1 rank(s)' lines of a 1-rank "
                         "run with --profile true")
    step = batch / float(result.group(2))
    fwd, bwd = phases.get("forward", 0.0) / total, phases.get("backward", 0.0) / total
    return Compute(step * fwd, step * bwd, step * (1 - fwd - bwd), int(threads.group(1)))


# --------------------------------------------------------------------------
# Communication: seconds to all-reduce `nbytes` over `ranks` ranks.


class BandwidthModel:
    """Ring all-reduce: 2(n-1)/n of the data crosses the slowest link of the
    ring (busbw), plus a latency per ring step. Across nodes the ring's
    slowest link is the inter-node one (hierarchical NCCL rings and trees are
    limited by it too for large messages)."""

    def __init__(self, intra_busbw, inter_busbw, intra_latency, inter_latency):
        self.intra_busbw, self.inter_busbw = intra_busbw, inter_busbw
        self.intra_latency, self.inter_latency = intra_latency, inter_latency

    def time(self, nbytes, ranks, nodes):
        if ranks == 1:
            return 0.0
        busbw = self.intra_busbw if nodes == 1 else min(self.intra_busbw, self.inter_busbw)
        per_node = ranks // nodes
        latency = 2 * (per_node - 1) * self.intra_latency + 2 * (nodes - 1) * self.inter_latency
        return latency + nbytes * 2 * (ranks - 1) / ranks / busbw

    def describe(self, ranks, nodes):
        busbw = self.intra_busbw if nodes == 1 else min(self.intra_busbw, self.inter_busbw)
        return f"busbw {busbw / 1e9:.1f} GB/s"


BENCH_HEADER_RE = re.compile(r"# allreduce_bench: (\d+) rank\(s\)")


class MeasuredTable:
    """allreduce_bench output: our Communicator's time per size, interpolated
    linearly in size between measured points (cost = latency + bytes/bw);
    below the smallest size its time (latency-bound), above the largest size
    that size's bandwidth (bandwidth-bound)."""

    def __init__(self, path):
        text = open(path).read()
        header = BENCH_HEADER_RE.search(text)
        if not header:
            raise SystemExit(f"{path}: not allreduce_bench output (no '# allreduce_bench: N rank(s)' line)")
        self.ranks = int(header.group(1))
        self.points = []
        for line in text.splitlines():
            fields = line.split()
            if len(fields) == 9 and fields[0].isdigit():
                self.points.append((int(fields[0]), float(fields[2]) * 1e-6))
        if len(self.points) < 2:
            raise SystemExit(f"{path}: fewer than 2 sizes measured")
        self.points.sort()

    def time(self, nbytes, ranks, nodes):
        (first, t_first), (last, t_last) = self.points[0], self.points[-1]
        if nbytes <= first:
            return t_first
        if nbytes >= last:
            return t_last * nbytes / last
        sizes = [s for s, _ in self.points]
        i = bisect.bisect_left(sizes, nbytes)
        (s0, t0), (s1, t1) = self.points[i - 1], self.points[i]
        return t0 + (t1 - t0) * (nbytes - s0) / (s1 - s0)

    def busbw(self, nbytes):
        n = self.ranks
        return nbytes / self.time(nbytes, n, 1) * 2 * (n - 1) / n

    def describe(self, ranks, nodes):
        size = self.points[-1][0]
        return f"measured, busbw {self.busbw(size) / 1e9:.3f} GB/s at {size / MIB:g} MiB"


# --------------------------------------------------------------------------
# One step of N ranks.


def exposed_communication(buckets, compute, comm_time, overlap):
    """Seconds of communication the step waits for after backward.

    Without overlap every bucket's all-reduce follows backward. With overlap,
    bucket k becomes ready when backward has produced its gradients (assumed
    in proportion to gradient bytes, reverse order), all-reduces run one
    after another on one communication stream, and only what is left when
    backward ends is exposed: at least the last bucket's all-reduce."""
    times = [comm_time(b) for b in buckets]
    if not overlap:
        return sum(times)
    total, done, end = sum(buckets), 0, 0.0
    for nbytes, t in zip(buckets, times):
        done += nbytes
        ready = compute.backward * done / total
        end = max(end, ready) + t
    return max(0.0, end - compute.backward)


def predict(args, compute, buckets, comm, ranks_per_node, nodes):
    ranks = ranks_per_node * nodes
    rows = {}
    for overlap in (False, True):
        per_rank, slowdown = compute, 1.0
        if args.cores_per_node:
            # Ranks beyond the cores time-slice them. With overlap on CPUs, a
            # communication thread that busy-polls in MPI during backward takes
            # one more core; cifar_mpi makes Open MPI yield instead
            # (mpi_yield_when_idle), so that is modelled only on request.
            slowdown = max(1.0, ranks_per_node * compute.threads / args.cores_per_node)
            spinning = compute.threads + (1 if overlap and ranks > 1 and args.comm_thread_spins else 0)
            backward_slowdown = max(1.0, ranks_per_node * spinning / args.cores_per_node)
            per_rank = Compute(compute.forward * slowdown, compute.backward * backward_slowdown,
                               compute.other * slowdown, compute.threads)
        exposed = exposed_communication(buckets, per_rank, lambda b: comm.time(b, ranks, nodes), overlap)
        step = per_rank.step + exposed
        rows[overlap] = (step, ranks * args.batch / step, compute.step / step, exposed, per_rank.step / compute.step)
    return rows

def comm_for(args, ranks, bandwidth):
    for table in args.tables:
        if table.ranks == ranks:
            return table
    return bandwidth


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", choices=sorted(MODELS), default="convnet")
    p.add_argument("--batch", type=int, default=256, help="per-rank batch size (images per step per rank)")
    c = p.add_argument_group("compute (one rank)")
    c.add_argument("--profile-log", help="output of a 1-rank `cifar_mpi --profile true` run: step time and phases")
    c.add_argument("--step-time", type=float, help="seconds per step of one rank (instead of --profile-log)")
    c.add_argument("--backward-fraction", type=float, default=0.6, help="share of --step-time spent in backward")
    c.add_argument("--forward-fraction", type=float, default=0.3, help="share of --step-time spent in forward")
    c.add_argument("--threads", type=int, default=1, help="intra-op threads of the --step-time measurement")
    c.add_argument("--cores-per-node", type=int, default=0,
                   help="CPU cores per node when ranks compute on CPUs (0: GPUs, no core limit)")
    n = p.add_argument_group("layout")
    n.add_argument("--ranks-per-node", type=int, nargs="+", default=[8])
    n.add_argument("--nodes", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32, 64])
    b = p.add_argument_group("communication")
    b.add_argument("--first-bucket-mb", type=float, default=1.0)
    b.add_argument("--comm-thread-spins", action="store_true",
                   help="model a CPU communication thread that busy-polls (Open MPI without mpi_yield_when_idle)")
    b.add_argument("--bucket-mb", type=float, default=25.0)
    b.add_argument("--intra-busbw", type=float, default=150.0, help="GB/s within a node (NVLink; A800/H800 ~150-200)")
    b.add_argument("--inter-busbw", type=float, default=40.0,
                   help="GB/s across nodes (InfiniBand; 4-8 x 200 Gb/s ~20-45)")
    b.add_argument("--intra-latency-us", type=float, default=5.0, help="per ring step within a node")
    b.add_argument("--inter-latency-us", type=float, default=10.0, help="per ring step across nodes")
    b.add_argument("--allreduce-log", nargs="*", default=[],
                   help="allreduce_bench outputs; each replaces the bandwidth model for its world size")
    args = p.parse_args(argv)

    if args.profile_log:
        compute = compute_from_profile_log(args.profile_log, args.batch)
    elif args.step_time:
        fwd, bwd = args.forward_fraction, args.backward_fraction
        if fwd < 0 or bwd <= 0 or fwd + bwd > 1:
            p.error("--forward-fraction and --backward-fraction must be shares of the step that add up to at most 1")
        t = args.step_time
        compute = Compute(t * fwd, t * bwd, t * (1 - fwd - bwd), args.threads)
    else:
        p.error("give --profile-log or --step-time")
    args.tables = [MeasuredTable(path) for path in args.allreduce_log]
    bandwidth = BandwidthModel(args.intra_busbw * 1e9, args.inter_busbw * 1e9, args.intra_latency_us * 1e-6,
                               args.inter_latency_us * 1e-6)
    param_bytes = parameter_bytes(args.model)
    buckets = plan_buckets(param_bytes, int(args.first_bucket_mb * MIB), int(args.bucket_mb * MIB))

    print(f"model {args.model}: {sum(param_bytes) // 4:,} parameters, {sum(param_bytes) / MIB:.2f} MiB of fp32 "
          f"gradients in {len(buckets)} bucket(s): " + ", ".join(f"{b / MIB:.2f}" for b in buckets) + " MiB")
    print(f"one rank: step {compute.step * 1e3:.1f} ms (forward {compute.forward * 1e3:.1f}, backward "
          f"{compute.backward * 1e3:.1f}, other {compute.other * 1e3:.1f}) with {compute.threads} thread(s), "
          f"batch {args.batch}: {args.batch / compute.step:.1f} images/s")
    print()
    print(f"{'':23}{'':<24} | {'no overlap':<35} | {'overlap'}")
    print(f"{'nodes':>5} {'ranks':>5} {'communication':<40} | {'compute':>7} {'step':>13} {'img/s':>10} {'eff':>5} | "
          f"{'compute':>7} {'step':>13} {'exposed':>10} {'img/s':>10} {'eff':>5}")
    for nodes in args.nodes:
        for per_node in args.ranks_per_node:
            ranks = nodes * per_node
            comm = comm_for(args, ranks, bandwidth)
            rows = predict(args, compute, buckets, comm, per_node, nodes)
            s0, ips0, e0, _, c0 = rows[False]
            s1, ips1, e1, x1, c1 = rows[True]
            desc = comm.describe(ranks, nodes) if ranks > 1 else "-"
            print(f"{nodes:5d} {ranks:5d} {desc:<40} | {'x%.2f' % c0:>7} {s0 * 1e3:10.1f} ms {ips0:10.1f} {e0:5.2f} | "
                  f"{'x%.2f' % c1:>7} {s1 * 1e3:10.1f} ms {x1 * 1e3:7.1f} ms {ips1:10.1f} {e1:5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
