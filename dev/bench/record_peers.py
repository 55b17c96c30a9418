#!/usr/bin/env python3
"""Runs the CIFAR-10 speed peers under the record's "compute-honest" rules
(docs/time_to_accuracy.md) and prints one line per run:

    RUN side=NAME seed=S prepare=P train=T seconds=P+T accuracy=A graded=G

* airbench94 (airbench94.py, Keller Jordan's; on a GPU, or on the CPU with
  --device cpu) and the Hiverge recipe (cifar10_speedrun.py, GPU only): each
  script, unchanged, is loaded as a module and its main() called once per
  run. The clock its timers read is the host's (CUDA-synchronised on a GPU).
  Timed: building the untrained network (airbench's make_net, Hiverge's
  model.reset: prepare=) and what the script's own timers hold, its
  whitening and training (train=); its final test-time-augmented evaluation
  is taken off its clock and replaced by the grader below.
* E1 (fulcrum's runners/recipes/e1.py, GPU only): the first setup() is the
  one-time build (compile, graph capture: free); each run's setup() (reset,
  whitening, augmented epochs) is the preparation, its train() the training.

Every side is scored, untimed, by the same grader: the record's six views
(the image and its mirror at 1/4 each; the image shifted by one reflected
pixel up-left and down-right, and their mirrors, at 1/8 each) on the whole
test split ("accuracy") and on its last 8,000 images, the record's graded
split ("graded"). No sleeps between runs; each run's RNGs are seeded with its
seed first. The data: the folder of train.pt/test.pt that airbench's
make_data.py writes.

    record_peers.py airbench PATH/airbench94.py --data DIR --seeds 0,1 [--device cpu]
    record_peers.py hiverge PATH/cifar10_speedrun.py --data DIR --seeds 0,1
    record_peers.py e1 PATH/runners/recipes/e1.py --data DIR --seeds 0,1

--device cpu runs airbench94 on CPUs in float32: .cuda() returns its object,
.half() gives float32, torch.load maps to the CPU, and the CUDA timers read
the host clock. Needs torch and torchvision (Debian's python3-torch and
python3-torchvision on the CPU).
"""
import argparse
import importlib.util
import os
import random
import sys
import time
from contextlib import contextmanager

import torch
import torch.nn.functional as F

GRADED_FROM = 2000  # the record grades test[2000:]; test[:2000] is its feedback split


class Clock:
    """The peers' clock: host seconds, CUDA-synchronised, less the untimed spans."""
    untimed = 0.0
    charged = 0.0  # this run's preparation outside the peer's own timers

    @staticmethod
    def sync():
        if torch.cuda.is_available():
            torch.cuda.synchronize()

    @classmethod
    def now(cls):
        cls.sync()
        return time.perf_counter() - cls.untimed


class HostEvent:
    """torch.cuda.Event's timing interface on Clock."""

    def __init__(self, enable_timing=True, **kwargs):
        self.t = None

    def record(self, stream=None):
        self.t = Clock.now()

    def synchronize(self):
        Clock.sync()

    def elapsed_time(self, end):
        return (end.t - self.t) * 1e3  # milliseconds, as CUDA events report


@contextmanager
def span():
    """Yields a list that holds the span's synchronised seconds afterwards."""
    box = []
    Clock.sync()
    t0 = time.perf_counter()
    try:
        yield box
    finally:
        Clock.sync()
        box.append(time.perf_counter() - t0)


def charged(fn):
    """fn, its time added to the run's preparation."""
    def wrapper(*args, **kwargs):
        with span() as s:
            out = fn(*args, **kwargs)
        Clock.charged += s[0]
        return out
    return wrapper


def six_view_logits(forward, images, batch=2000):
    """The record grader's test-time augmentation of normalised NCHW images."""
    def mirror(x):
        return 0.5 * forward(x).float() + 0.5 * forward(x.flip(-1)).float()

    out = []
    for x in images.split(batch):
        padded = F.pad(x, (1,) * 4, "reflect")
        out.append(0.5 * mirror(x) + 0.25 * mirror(padded[:, :, 0:32, 0:32]) + 0.25 * mirror(padded[:, :, 2:34, 2:34]))
    return torch.cat(out)


def grade(model, forward, images, labels):
    """(accuracy on the whole split, on the graded split), untimed: off the peers' clock."""
    with span() as s:
        was_training = model.training
        model.eval()
        with torch.no_grad():  # not inference_mode: it would break a later compiled or captured step
            correct = (six_view_logits(forward, images).argmax(1) == labels).float()
        model.train(was_training)
    Clock.untimed += s[0]
    return correct.mean().item(), correct[GRADED_FROM:].mean().item()


def seed_everything(seed):
    random.seed(seed)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def load_module(path, name):
    """The script's definitions, without its __main__ block."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.argv = [path]  # some log their own source from argv[0]
    spec.loader.exec_module(module)
    return module


def redirect_gpu_calls_to_cpu():
    torch.nn.Module.cuda = lambda self, *args, **kwargs: self
    torch.nn.Module.half = lambda self: self
    torch.Tensor.cuda = lambda self, *args, **kwargs: self
    torch.Tensor.half = lambda self, *args, **kwargs: self.float()
    load = torch.load
    torch.load = lambda path, *args, map_location=None, **kwargs: load(path, *args, map_location="cpu", **kwargs)
    torch.cuda.synchronize = lambda *args, **kwargs: None


def report(side, seed, seconds, accuracy):
    """The RUN line of a run: seconds (timed, with the charged preparation) and the grader's accuracies."""
    prepare = Clock.charged
    print(f"RUN side={side} seed={seed} prepare={prepare:.4f} train={seconds - prepare:.4f} seconds={seconds:.4f} "
          f"accuracy={accuracy[0]:.4f} graded={accuracy[1]:.4f}", flush=True)


def run_script_peer(args, side, module, model_hook, main):
    """airbench94 and Hiverge: the script's main() per run, its final TTA evaluation replaced by grade()."""
    scored = {}
    evaluate = module.evaluate

    def final_evaluate(model, loader, tta_level=0):
        if tta_level < 2:  # the scripts' plain evaluations, outside their timers
            return evaluate(model, loader, tta_level)
        scored["_grader"] = grade(model, model, loader.normalize(loader.images), loader.labels)
        return scored["_grader"][0]

    module.evaluate = final_evaluate
    module.print_training_details = lambda variables, is_final_entry: scored.update(variables)
    model_hook(module)
    for seed in args.seeds:
        seed_everything(seed)
        Clock.charged = 0.0
        main(module, seed)
        # the script's own timers: the whitening and training (its evaluation taken off)
        report(side, seed, Clock.charged + scored[args.time_key], scored["_grader"])


def run_airbench(args):
    module = load_module(args.script, "airbench94")

    def hook(m):
        m.make_net = charged(m.make_net)
        if args.train_epochs:
            m.hyp["opt"]["train_epochs"] = args.train_epochs

    args.time_key = "total_time_seconds"
    run_script_peer(args, "airbench94", module, hook, lambda m, seed: m.main(seed))


def run_hiverge(args):
    module = load_module(args.script, "hiverge")
    model = module.CifarNet().cuda().to(memory_format=torch.channels_last)
    model.compile(mode="max-autotune")
    model.reset = charged(model.reset)
    Clock.charged = 0.0
    module.main("warmup", model)  # the build: compilation on random data, untimed
    args.time_key = "time_seconds"
    run_script_peer(args, "hiverge", module, lambda m: None, lambda m, seed: m.main(seed + 1, model))


def run_e1(args):
    e1 = load_module(args.script, "e1")

    class Ctx:
        def validate(self, model, step=None):
            pass

    test = torch.load(os.path.join(args.data, "test.pt"), map_location="cuda", weights_only=True)
    mean = torch.tensor((0.4914, 0.4822, 0.4465), device="cuda").view(1, 3, 1, 1)
    std = torch.tensor((0.2470, 0.2435, 0.2616), device="cuda").view(1, 3, 1, 1)
    images = ((test["images"].half() / 255).permute(0, 3, 1, 2) - mean.half()) / std.half()
    images = images.contiguous(memory_format=torch.channels_last)
    seed_everything(1234)  # the record's build seed
    e1.setup()  # the build: compile, graph capture, static preprocessing
    for seed in args.seeds:
        seed_everything(seed)
        with span() as prepare:
            model, extra = e1.setup()  # reset to untrained, whitening, the augmented epochs
        with span() as train:
            e1.train(model, extra, Ctx())
        Clock.charged = prepare[0]
        report("e1", seed, prepare[0] + train[0], grade(model, model.eval_forward, images, test["labels"]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("peer", choices=["airbench", "hiverge", "e1"])
    parser.add_argument("script")
    parser.add_argument("--data", required=True, help="folder of train.pt and test.pt")
    parser.add_argument("--seeds", default="0", type=lambda s: [int(x) for x in s.split(",")])
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--train-epochs", type=float, help="airbench: a shorter run, for a quick check of this script")
    args = parser.parse_args()
    args.script = os.path.abspath(args.script)
    if not os.path.isfile(args.script):
        sys.exit(f"record_peers: {args.script} not found")
    if args.device == "cpu":
        if args.peer != "airbench":
            sys.exit("record_peers: only airbench runs on the CPU")
        redirect_gpu_calls_to_cpu()
        if "OMP_NUM_THREADS" not in os.environ:  # Debian's torch may default to one thread per physical core
            torch.set_num_threads(os.cpu_count())
    torch.cuda.Event = HostEvent
    os.environ["AIRBENCH_DATA"] = os.environ["CIFAR_DATA"] = os.path.abspath(args.data)
    print(f"record_peers: {args.peer} ({args.script}) on {args.device}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} thread(s)", flush=True)
    {"airbench": run_airbench, "hiverge": run_hiverge, "e1": run_e1}[args.peer](args)


if __name__ == "__main__":
    main()
