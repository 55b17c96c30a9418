#!/usr/bin/python3
"""C++ <-> Python model interoperability (a ctest test).

For each model (convnet = the reference recipe's ConvNet, resnet18 = CIFAR
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

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:
    print(f"FAIL: {sys.executable} cannot import torch ({e}); install it with tools/setup.sh "
          "(Debian package python3-torch)", file=sys.stderr)
    sys.exit(1)

TOLERANCE = 1e-5


class ConvNet(nn.Module):
    """Copied verbatim from the reference recipe (bench/seed_ddp.py)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.fc1 = nn.Linear(64 * 6 * 6, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.view(-1, 64 * 6 * 6)
        return self.fc2(F.relu(self.fc1(x)))


class BasicBlock(nn.Module):
    """torchvision.models.resnet.BasicBlock."""

    def __init__(self, inplanes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or inplanes != planes:
            self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride, bias=False),
                                            nn.BatchNorm2d(planes))

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(out + identity)


class ResNet18(nn.Module):
    """torchvision's resnet18(num_classes=10) in CIFAR form: 3x3 stride-1 stem, no max-pool."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        inplanes = 64
        for i, planes in enumerate([64, 128, 256, 512]):
            stride = 1 if i == 0 else 2
            setattr(self, f"layer{i + 1}", nn.Sequential(BasicBlock(inplanes, planes, stride),
                                                         BasicBlock(planes, planes, 1)))
            inplanes = planes
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512, num_classes)
        for m in self.modules():  # as torchvision's ResNet.__init__
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


MODELS = {"convnet": ConvNet, "resnet18": ResNet18}
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
