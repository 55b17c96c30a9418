#!/usr/bin/env python3
"""The numbers of cifar_eval --json, computed again in Python (Debian's
python3-torch) and compared: the same model class loaded with torch.load,
the same test images normalised as the recipe (x/255, then mean 0.5 std 0.5),
scored in the same per-rank batches, with the same test-time views (the image
reflect-padded by 2, cropped at (2+dy, 2+dx), mirrored), logits averaged with
the same weights in the same order. The confusion matrix must be equal count for count, the loss
within 1e-6 (relative). Prints both side by side.

--selective: the six views at equal weights (--tta mirror-translate-equal)
for the 25% least confident images of the whole split (--tta-fraction 0.25):
the plain logits first, then the views of each batch's chosen images.

Usage: eval_check.py MODEL WEIGHTS DATA.h5 CPP_JSON RANKS BATCH [--tta|--selective] [-- MODEL WEIGHTS ...]...
Each case after a `--` is checked in turn by the same process (one start-up
of torch for all); the exit code is 1 when any case fails.
"""
import json
import os
import sys

import h5py
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "dev", "bench"))
from cifar_models import MODELS  # noqa: E402  the Python twins of the registered models

CLASSES = 10
# cifar_eval's --tta mirror-translate views (src/eval/evaluation.cpp, tta_views): (dy, dx, flip, weight).
TTA_VIEWS = [(0, 0, False, 0.25), (0, 0, True, 0.25), (-1, -1, False, 0.125), (-1, -1, True, 0.125),
             (1, 1, False, 0.125), (1, 1, True, 0.125)]
EQUAL_VIEWS = [(dy, dx, flip, 1 / 6) for dy, dx, flip, _ in TTA_VIEWS]
SELECTIVE_FRACTION = 0.25
PAD = 2
HALF = torch.full((1, 3, 1, 1), 0.5)  # the recipe's per-channel mean and std


def view(images, dy, dx, flip):
    if (dy, dx, flip) == (0, 0, False):
        return images
    padded = F.pad(images.float(), (PAD, PAD, PAD, PAD), mode="reflect").to(images.dtype)
    crop = padded[:, :, PAD + dy:PAD + dy + 32, PAD + dx:PAD + dx + 32]
    return crop.flip(3) if flip else crop


def logits_of(model, images, views):
    total = None
    for dy, dx, flip, weight in views:
        # normalize_batch's operations in its order (src/data/batch_transform.cpp).
        x = view(images, dy, dx, flip).float().div_(torch.tensor(255.0)).sub_(HALF).div_(HALF)
        logits = model(x.contiguous()).float()
        if len(views) > 1:
            logits = logits * weight
        total = logits if total is None else total + logits
    return total


def least_confident(model, images, batches):
    """Which images of the split get the views under --tta-fraction: the floor(f x N) with the
    lowest top softmax probability of their plain logits, over the whole split."""
    confidence = torch.zeros(len(images), dtype=torch.float64)
    for idx in batches:
        plain = logits_of(model, images[idx], [(0, 0, False, 1.0)])
        confidence[idx] = F.softmax(plain, 1).max(1).values.double()
    picked = torch.zeros(len(images), dtype=torch.bool)
    picked[confidence.topk(int(SELECTIVE_FRACTION * len(images)), largest=False).indices] = True
    return picked


def reference(name, weights, data, ranks, batch, views, selective):
    model = MODELS[name]()
    model.load_state_dict(torch.load(weights, weights_only=True))
    model.eval()
    with h5py.File(data, "r") as f:
        images = torch.from_numpy(f["test/images"][:])
        labels = torch.from_numpy(f["test/labels"][:]).long()
    confusion = torch.zeros(CLASSES * CLASSES, dtype=torch.long)
    loss_sum = 0.0
    batches = []  # each rank's stride, in its batches, as cifar_eval scores them
    for rank in range(ranks):
        shard = torch.arange(rank, len(labels), ranks)
        batches += [shard[begin:begin + batch] for begin in range(0, len(shard), batch)]
    with torch.no_grad():
        picked = least_confident(model, images, batches) if selective else None
        for idx in batches:
            if selective:
                logits = logits_of(model, images[idx], [(0, 0, False, 1.0)])
                rows = picked[idx].nonzero().squeeze(1)
                if len(rows):
                    logits[rows] = logits_of(model, images[idx[rows]], views)
            else:
                logits = logits_of(model, images[idx], views)
            y = labels[idx]
            loss_sum += F.cross_entropy(logits, y, reduction="sum").item()
            confusion += torch.bincount(y * CLASSES + logits.argmax(1), minlength=CLASSES * CLASSES)
    confusion = confusion.view(CLASSES, CLASSES)
    n = int(confusion.sum())
    return {"samples": n, "loss": loss_sum / n, "accuracy": int(confusion.trace()) / n,
            "class_accuracy": [int(confusion[c, c]) / max(1, int(confusion[c].sum())) for c in range(CLASSES)],
            "confusion": confusion.tolist()}


def side_by_side(cpp, py, classes):
    print(f"{'':14s} {'cifar_eval (C++)':>18s} {'Python':>12s}")
    print(f"{'images':14s} {cpp['samples']:18d} {py['samples']:12d}")
    print(f"{'accuracy':14s} {cpp['accuracy']:18.6f} {py['accuracy']:12.6f}")
    print(f"{'loss':14s} {cpp['loss']:18.6f} {py['loss']:12.6f}")
    for c, name in enumerate(classes):
        print(f"{name[:14]:14s} {cpp['class_accuracy'][c]:18.6f} {py['class_accuracy'][c]:12.6f}")


def check(args):
    """One case: MODEL WEIGHTS DATA.h5 CPP_JSON RANKS BATCH [--tta|--selective]. True when it passes."""
    name, weights, data, cpp_json, ranks, batch = args[:6]
    selective = args[6:] == ["--selective"]
    views = {"--tta": TTA_VIEWS, "--selective": EQUAL_VIEWS}.get("".join(args[6:]), [(0, 0, False, 1.0)])
    cpp = json.load(open(cpp_json))
    py = reference(name, weights, data, int(ranks), int(batch), views, selective)
    side_by_side(cpp, py, cpp["classes"])
    failures = []
    if cpp["views"] != len(views):
        failures.append(f"cifar_eval used {cpp['views']} view(s), Python {len(views)}")
    if cpp["confusion"] != py["confusion"]:
        failures.append(f"confusion matrices differ:\n  C++    {cpp['confusion']}\n  Python {py['confusion']}")
    if abs(cpp["loss"] - py["loss"]) > 1e-6 * abs(py["loss"]):
        failures.append(f"loss {cpp['loss']} vs Python's {py['loss']}")
    if cpp["samples"] != py["samples"]:
        failures.append(f"{cpp['samples']} images scored, Python {py['samples']}")
    fractions = [("accuracy", cpp["accuracy"], py["accuracy"])] + [
        (f"class {c} accuracy", a, b) for c, (a, b) in enumerate(zip(cpp["class_accuracy"], py["class_accuracy"]))]
    failures += [f"{what} {a} vs Python's {b}" for what, a, b in fractions if abs(a - b) > 1e-9]
    for f in failures:
        print("FAIL", f)
    if failures:
        return False
    tta = "" if len(views) == 1 else "with selective test-time augmentation " if selective else "with test-time augmentation "
    print(f"ok   {name} {tta}on {ranks} rank(s): "
          "confusion matrix equal count for count, loss within 1e-6")
    return True


def main():
    cases, case = [], []
    for arg in sys.argv[1:] + ["--"]:
        if arg != "--":
            case.append(arg)
            continue
        if len(case) not in (6, 7) or case[6:] not in ([], ["--tta"], ["--selective"]):
            sys.exit(__doc__)
        cases.append(case)
        case = []
    torch.set_num_threads(1)
    passed = [check(case) for case in cases]  # every case, also after a failure
    if not all(passed):
        sys.exit(1)


if __name__ == "__main__":
    main()
