#!/usr/bin/python3
"""C++ <-> Python model interoperability (a ctest test).

For each model (convnet = the PyTorch DDP recipe's ConvNet, resnet18 = CIFAR
ResNet-18), with the C++ helper `model_interop`:
  1. C++ seeds, builds and exports a state dict plus an input and its logits;
     Python loads the file with torch.load, strictly into its own class, and
     must get the same keys in the same order and the same logits (1e-5);
  2. the C++ parameters equal Python's for the same seed (same default
     initialisation drawing from the same generator);
  3. Python saves a state dict as a plain dict with torch.save and C++ must
     load it and reproduce Python's logits (1e-5); for the OrderedDict that
     torch.save(model.state_dict()) writes, C++ must load it or say how to
     re-save it.
Usage: python_interop.py MODEL_INTEROP_BINARY WORK_DIR
Fails (never skips) when torch is missing: tools/setup.sh installs python3-torch.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "dev", "bench"))
try:
    import torch
    from cifar_models import MODELS  # the models, shared with dev/bench/torch_peer_bench.py
except ImportError as e:
    print(f"FAIL: {sys.executable} cannot import torch ({e}); install it with tools/setup.sh "
          "(Debian package python3-torch)", file=sys.stderr)
    sys.exit(1)

TOLERANCE = 1e-5
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def run(args):
    r = subprocess.run(args, capture_output=True, text=True)
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    return r.returncode


def cpp_to_python(tool, work, name, cls, seed=0):
    pth, io_path = os.path.join(work, f"{name}_cpp.pth"), os.path.join(work, f"{name}_cpp_io.pt")
    if run([tool, "export", name, str(seed), pth, io_path]) != 0:
        check(False, f"{name}: C++ export ran")
        return
    # The model file with weights_only=True: PyTorch 2.6 made it torch.load's
    # default, and it refuses anything but plain containers of tensors. The
    # test's own inputs/outputs file is a tagged TorchScript pickle.
    sd, io = torch.load(pth, weights_only=True), torch.load(io_path, weights_only=False)
    torch.manual_seed(seed)
    model = cls()
    check(list(sd.keys()) == list(model.state_dict().keys()),
          f"{name}: C++ state dict has Python's {len(sd)} keys in Python's order")
    n = sum(p.numel() for p in model.parameters())
    print(f"     {name}: {n:,} parameters", flush=True)
    same_init = all(torch.equal(p, sd[k]) for k, p in model.named_parameters())
    check(same_init, f"{name}: C++ initial weights for seed {seed} equal Python's (torch {torch.__version__})")
    model.load_state_dict(sd)  # strict: every key, every shape
    model.eval()
    with torch.no_grad():
        diff = (model(io["input"]) - io["logits"]).abs().max().item()
    check(diff <= TOLERANCE, f"{name}: Python logits with C++ weights, max |diff| = {diff:.3g}")


def python_to_cpp(tool, work, name, cls, seed=7):
    torch.manual_seed(seed)
    model = cls()
    model.train()
    with torch.no_grad():
        for _ in range(2):
            model(torch.randn(8, 3, 32, 32) * 0.5 + 0.1)  # moves batch-norm running stats
    model.eval()
    x = torch.randn(8, 3, 32, 32)
    with torch.no_grad():
        logits = model(x)
    pth, io_path = os.path.join(work, f"{name}_py.pth"), os.path.join(work, f"{name}_py_io.pt")
    torch.save({"input": x, "logits": logits}, io_path)
    torch.save(dict(model.state_dict()), pth)
    check(run([tool, "check", name, pth, io_path]) == 0,
          f"{name}: C++ loads Python's torch.save(dict(state_dict)), same logits")
    # model.state_dict() itself is an OrderedDict, which LibTorch 1.13 cannot
    # unpickle: C++ must either load it or say how to re-save it.
    ordered = os.path.join(work, f"{name}_py_ordered.pth")
    torch.save(model.state_dict(), ordered)
    r = subprocess.run([tool, "check", name, ordered, io_path], capture_output=True, text=True)
    check(r.returncode == 0 or ("holds a Python OrderedDict" in r.stderr and "torch.save(dict(" in r.stderr),
          f"{name}: C++ loads torch.save(state_dict) or explains the re-save (rc {r.returncode}: {r.stderr.strip()})")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    tool, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    torch.set_num_threads(1)
    for name, cls in MODELS.items():
        cpp_to_python(tool, work, name, cls)
        python_to_cpp(tool, work, name, cls)
    if failures:
        print(f"{len(failures)} check(s) failed", file=sys.stderr)
        sys.exit(1)
    print("all interop checks passed")


if __name__ == "__main__":
    main()
