#!/usr/bin/env python3
"""The statistics of a time-to-accuracy benchmark, as the CIFAR-10 record's
harness (fulcrumresearch/cifar-10-speedrun, runners/run.py) reports them.

Input: one line per run, from files or stdin: "SIDE SEED SECONDS ACCURACY"
(more fields are ignored) or dev/bench/record_peers.py's "RUN side=SIDE
seed=S ... seconds=T accuracy=A"; other lines are skipped. For each side, in order of first appearance:
n; mean, standard deviation, minimum and maximum of the seconds; mean and
standard deviation of the accuracy; the pass rate (runs with accuracy >=
target); the one-sided p-value that the mean accuracy is >= target. With two
or more sides, the ratio of each side's mean time to the first side's.

The record's definitions, kept: the standard deviations are the population's
(statistics.pstdev); the p-value is scipy's ttest_1samp(accuracies, target,
alternative="greater"), a one-sample t-test with the sample standard
deviation, except that zero spread gives 0 when the mean is above the target
and 1 otherwise; fewer than 2 runs give none. Student's t is computed here
(no SciPy needed).

    tta_stats.py --target 0.94 runs.txt [more.txt ...]
    tta_stats.py --cifar-mpi-run SIDE SEED LOG METRICS
    tta_stats.py --self-test

--cifar-mpi-run prints the line of one cifar_mpi run, "SIDE SEED SECONDS
ACCURACY PREPARE TRAIN": PREPARE from its log's "preparation" line, TRAIN the
sum of its metrics' epoch_seconds (evaluations excluded), ACCURACY the last
row's test_accuracy (the final evaluation), SECONDS = PREPARE + TRAIN.
"""
import argparse
import json
import math
import re
import statistics
import sys


def _incomplete_beta(a, b, x):
    """The regularised incomplete beta function I_x(a, b) (Lentz's continued fraction)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    if x > (a + 1) / (a + b + 2):  # the fraction converges fast below this point
        return 1.0 - _incomplete_beta(b, a, 1.0 - x)
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)) / a
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    f = d
    for m in range(1, 500):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            f *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return front * f


def student_t_sf(t, df):
    """P(T > t) for Student's t with df degrees of freedom."""
    tail = 0.5 * _incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return tail if t >= 0 else 1.0 - tail


def p_value_mean_at_least(accuracies, target):
    """The record's one-sided p-value that the mean accuracy is >= target (None below 2 runs)."""
    n = len(accuracies)
    if n < 2:
        return None
    mean = statistics.fmean(accuracies)
    if statistics.pstdev(accuracies) == 0:
        return 0.0 if mean > target else 1.0
    t = (mean - target) / (statistics.stdev(accuracies) / math.sqrt(n))
    return student_t_sf(t, n - 1)


def summarize(seconds, accuracies, target):
    """The record's summary of one side's runs."""
    n = len(seconds)
    return {
        "n": n,
        "time_mean": statistics.fmean(seconds),
        "time_sd": statistics.pstdev(seconds),
        "time_min": min(seconds),
        "time_max": max(seconds),
        "acc_mean": statistics.fmean(accuracies),
        "acc_sd": statistics.pstdev(accuracies),
        "passed": sum(1 for a in accuracies if a >= target),
        "p": p_value_mean_at_least(accuracies, target),
    }


def format_table(sides, target):
    """The summary table of {side: summary}, then the time ratios to the first side."""
    lines = [f"{'side':<14} {'n':>3}  {'time mean ± sd (min-max) s':<30} {'accuracy mean ± sd':<19} "
             f"{'pass >= ' + format(target, 'g'):<13} p(mean >= {target:g})"]
    for name, s in sides.items():
        p = "n/a" if s["p"] is None else f"{s['p']:.3g}"
        time = f"{s['time_mean']:.3f} ± {s['time_sd']:.3f} ({s['time_min']:.3f}-{s['time_max']:.3f})"
        acc = f"{s['acc_mean']:.4f} ± {s['acc_sd']:.4f}"
        rate = f"{s['passed']}/{s['n']} ({100 * s['passed'] / s['n']:.0f}%)"
        lines.append(f"{name:<14} {s['n']:>3}  {time:<30} {acc:<19} {rate:<13} {p}")
    names = list(sides)
    for name in names[1:]:
        ratio = sides[name]["time_mean"] / sides[names[0]]["time_mean"]
        lines.append(f"time ratio {name} / {names[0]}: {ratio:.3f}")
    return "\n".join(lines)


def parse_run(line):
    """(side, seconds, accuracy) of a run's line, or None."""
    if line.startswith("RUN "):
        f = dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)
        return f["side"], float(f["seconds"]), float(f["accuracy"])
    fields = line.split()
    if len(fields) < 4 or line.startswith("#"):
        return None
    try:
        return fields[0], float(fields[2]), float(fields[3])
    except ValueError:
        return None


def cifar_mpi_run(side, seed, log, metrics):
    """The line of one cifar_mpi run (see --cifar-mpi-run)."""
    prepare = None
    with open(log) as f:
        for line in f:
            m = re.search(r"preparation \(.*\) ([0-9.]+) s$", line.rstrip())
            prepare = float(m.group(1)) if m else prepare
    with open(metrics) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    if prepare is None or not rows or rows[-1].get("test_accuracy") is None:
        sys.exit(f"tta_stats: {log} has no preparation line or {metrics} no final test_accuracy")
    train = sum(r["epoch_seconds"] for r in rows)
    return f"{side} {seed} {prepare + train:.4f} {rows[-1]['test_accuracy']:.4f} {prepare:.4f} {train:.3f}"


def self_test():
    """Known answers: closed forms of Student's t and a t-test worked by hand."""
    def near(got, want, tol=1e-9):
        assert got is not None and abs(got - want) <= tol, (got, want)
    near(student_t_sf(1.0, 1), 0.25)  # Cauchy: 1/2 - atan(1)/pi
    near(student_t_sf(2.0, 2), 0.5 - 1 / math.sqrt(6))  # df 2: 1/2 - t / (2 sqrt(t^2 + 2))
    near(student_t_sf(-2.0, 2), 0.5 + 1 / math.sqrt(6))
    near(student_t_sf(1.812461123, 10), 0.05, 1e-8)  # the tables' 95% one-sided quantile at df 10
    near(student_t_sf(1.959963985, 10**7), 0.025, 1e-6)  # large df: the normal's
    # mean 0.95, sample sd 0.01, n 3: t = sqrt(3), df 2, p = 1/2 - sqrt(3/20)
    near(p_value_mean_at_least([0.94, 0.95, 0.96], 0.94), 0.5 - math.sqrt(3 / 20))
    near(p_value_mean_at_least([0.95, 0.95], 0.94), 0.0)
    near(p_value_mean_at_least([0.94, 0.94], 0.94), 1.0)
    assert p_value_mean_at_least([0.95], 0.94) is None
    s = summarize([2.0, 4.0], [0.93, 0.95], 0.94)
    near(s["time_mean"], 3.0)
    near(s["time_sd"], 1.0)  # the population's
    near(s["acc_sd"], 0.01)
    assert s["passed"] == 1 and s["time_min"] == 2.0 and s["time_max"] == 4.0
    near(s["p"], 0.5)  # mean exactly at the target
    table = format_table({"a": s, "b": summarize([6.0, 6.0], [0.95, 0.95], 0.94)}, 0.94)
    assert "3.000 ± 1.000 (2.000-4.000)" in table and "1/2 (50%)" in table, table
    assert table.endswith("time ratio b / a: 2.000"), table
    assert parse_run("RUN side=e1 seed=3 prepare=0.1 train=2 seconds=2.1000 accuracy=0.9412 graded=0.94\n") == \
        ("e1", 2.1, 0.9412)
    assert parse_run("cifar_mpi@np2 0 10.5 0.9412 0.01 10.49") == ("cifar_mpi@np2", 10.5, 0.9412)
    assert parse_run("side seed prepare(s) train(s)") is None
    print("tta_stats: self-test passed")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", type=float, default=0.94)
    parser.add_argument("--self-test", action="store_true")
    parser.add_argument("--cifar-mpi-run", nargs=4, metavar=("SIDE", "SEED", "LOG", "METRICS"))
    parser.add_argument("files", nargs="*")
    args = parser.parse_args()
    if args.self_test:
        self_test()
        return
    if args.cifar_mpi_run:
        print(cifar_mpi_run(*args.cifar_mpi_run))
        return
    runs = {}
    for path in args.files or ["-"]:
        with (sys.stdin if path == "-" else open(path)) as f:
            for run in filter(None, map(parse_run, f)):
                runs.setdefault(run[0], ([], []))
                runs[run[0]][0].append(run[1])
                runs[run[0]][1].append(run[2])
    if not runs:
        sys.exit("tta_stats: no runs")
    print(format_table({k: summarize(t, a, args.target) for k, (t, a) in runs.items()}, args.target))


if __name__ == "__main__":
    main()
