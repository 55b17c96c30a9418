#!/usr/bin/env bash
# cifar_eval against Python (Debian's python3-torch computing the same numbers,
# tests/e2e/eval_check.py): the confusion matrix equal count for count and
# the loss within 1e-6, for
#   * a convnet trained 8 steps by cifar_mpi, on 2 ranks, with --tta on 3
#     ranks (uneven shards, 6 views), and with selective TTA on 2 ranks (the
#     split's least confident quarter gets six equal views);
#   * a resnet18 saved by Python with torch.save(dict(model.state_dict())),
#     and the same with DistributedDataParallel's "module." key prefix (read
#     without it, said once; the same scores);
# refusals with exit code 6 (bad input) and one line naming the file, the model and the
# key (another architecture), or the file (truncated, not a model file, a
# folder, torch.save's legacy format, a pickled nn.Module, an OrderedDict, and
# a model holding NaN, damaged content: 400 bytes changed inside a tensor of ours and of
# Python's file, named by the zip entry whose CRC-32 fails); and
# tools/plot_metrics --confusion draws the JSON.
# shellcheck source=tests/e2e/common.sh
source "$(dirname "$0")/common.sh"
"$PYTHON" -c "import torch, h5py, matplotlib" 2>/dev/null ||
  fail "this test needs $PYTHON with torch, h5py and matplotlib (Debian's python3-torch, python3-h5py, python3-matplotlib: run tools/setup.sh)"
export OPENBLAS_NUM_THREADS=1  # Python's GEMMs split as cifar_eval's (--threads 1)

# The launches are independent once their inputs exist, and spend much of
# their time starting up (and, when refused, in mpirun's wait after a rank
# exits non-zero): the training runs beside Python saving the ResNet, then
# the scoring runs and the refusals run side by side (common.sh's
# `background`); one Python process then checks the three scores.
score() {  # score NP LOG cifar_eval options...: must succeed
  local np=$1 log=$2
  shift 2
  mpi "$np" "$CIFAR_EVAL" --threads 1 "$@" >"$log" 2>&1 || { cat "$log"; fail "cifar_eval $* failed"; }
  cat "$log"
}
train_convnet() {
  mpi 2 "$CIFAR_MPI" --data "$E2E_DATA" --epochs 1 --max-steps 8 --batch-size 32 --eval false --metrics "" \
    --log-every 1000 --output convnet.pth >train.log 2>&1 || { cat train.log; fail "training failed"; }
}
background train_convnet.log train_convnet

# A ResNet-18 from Python, batch-norm statistics moved off their initial values.
"$CIFAR_PACK" --synthetic 64 --test-count 96 --seed 3 --output small.h5 >/dev/null
"$PYTHON" - "$SOURCE_DIR/dev/bench" <<'PY' || fail "Python could not save a resnet18"
import sys, torch
sys.path.insert(0, sys.argv[1])
from cifar_models import ResNet18
torch.manual_seed(5)
model = ResNet18().train()
with torch.no_grad():
    for _ in range(2):
        model(torch.randn(8, 3, 32, 32) * 0.5 + 0.1)
torch.save(dict(model.state_dict()), "resnet18_py.pth")
torch.save(model.state_dict(), "resnet18_ordered.pth")
torch.save(model.state_dict(), "resnet18_legacy.pth", _use_new_zipfile_serialization=False)
torch.save(model, "resnet18_module.pth")
torch.save({"module." + k: v for k, v in model.state_dict().items()}, "resnet18_ddp.pth")
diverged = dict(model.state_dict())
diverged["layer1.0.bn1.running_var"][3] = float("nan")
torch.save(diverged, "resnet18_nan.pth")
PY
cp resnet18_py.pth damaged_py.pth
damaged_py_entry=$("$PYTHON" "$SOURCE_DIR/tests/support/damage_entry.py" damaged_py.pth) || fail "could not damage damaged_py.pth"
wait_background "the convnet to score was not trained"

background convnet.out score 2 convnet.log --model convnet --weights convnet.pth --data "$E2E_DATA" --batch-size 100 \
  --json convnet.json
background convnet_tta.out score 3 convnet_tta.log --model convnet --weights convnet.pth --data "$E2E_DATA" \
  --batch-size 64 --tta mirror-translate --json convnet_tta.json
background convnet_selective.out score 2 convnet_selective.log --model convnet --weights convnet.pth \
  --data "$E2E_DATA" --batch-size 50 --tta mirror-translate-equal --tta-fraction 0.25 --json convnet_selective.json
background resnet.out score 2 resnet.log --model resnet18 --weights resnet18_py.pth --data small.h5 --batch-size 32 \
  --json resnet.json
# DistributedDataParallel's "module." prefix on every key: read without it, said once.
background resnet_ddp.out score 2 resnet_ddp.log --model resnet18 --weights resnet18_ddp.pth --data small.h5 \
  --batch-size 32 --json resnet_ddp.json

# The refusals, each with its own files.
check_refused() {  # check_refused N PATTERN cifar_eval options...: exit code 6 (bad input) and one error line matching PATTERN
  local i=$1 pattern=$2
  shift 2
  local rc=0
  mpi 2 "$CIFAR_EVAL" --data "$E2E_DATA" --json "refused$i.json" "$@" >"refused$i.out" 2>"refused$i.err" || rc=$?
  [[ $rc == 6 ]] || { cat "refused$i.out" "refused$i.err"; fail "'$*' exited $rc, expected 6"; }
  local n
  n=$(grep -c "error:" "refused$i.err" || true)
  [[ $n == 1 ]] || { cat "refused$i.err"; fail "'$*' printed $n error lines, expected 1"; }
  grep -q -- "$pattern" "refused$i.err" || { cat "refused$i.err"; fail "'$*': the error does not say '$pattern'"; }
  [[ ! -e "refused$i.json" ]] || fail "'$*' wrote its JSON"
  echo "ok: $* -> $(grep error: "refused$i.err")"
}
refusals=0
refused() {  # refused PATTERN cifar_eval options...: started in the background
  background "refused$refusals.log" check_refused "$refusals" "$@"
  refusals=$((refusals + 1))
}
head -c 4000 convnet.pth >truncated.pth
cp convnet.pth damaged.pth
damaged_entry=$("$PYTHON" "$SOURCE_DIR/tests/support/damage_entry.py" damaged.pth) || fail "could not damage damaged.pth"
mkdir weights_folder
refused "model file 'convnet.pth' does not hold a ResNet18: 'conv1.weight' has shape \[32, 3, 3, 3\]" \
  --model resnet18 --weights convnet.pth
refused "model file 'resnet18_py.pth' does not hold a ConvNet: 'conv1.weight'" --model convnet --weights resnet18_py.pth
refused "model file 'truncated.pth' is not a readable torch.save file" --weights truncated.pth
refused "model file 'train.log' is not a readable torch.save file" --weights train.log
refused "cannot open model file 'missing.pth'" --weights missing.pth
refused "resnet18_ordered.pth' holds a Python OrderedDict" --model resnet18 --weights resnet18_ordered.pth
refused "resnet18_legacy.pth' is in torch.save's legacy format (_use_new_zipfile_serialization=False)" \
  --model resnet18 --weights resnet18_legacy.pth
refused "resnet18_module.pth' holds a pickled nn.Module (torch.save(model)), not a state dict; save the model's state dict" \
  --model resnet18 --weights resnet18_module.pth
# Damaged content (400 bytes inside a tensor: the entry's CRC-32 no longer matches), ours and Python's.
refused "model file 'damaged.pth' is damaged (changed after it was written): zip entry '$damaged_entry' does not match its CRC-32" \
  --weights damaged.pth
refused "model file 'damaged_py.pth' is damaged (changed after it was written): zip entry '$damaged_py_entry' does not match" \
  --model resnet18 --weights damaged_py.pth
refused "model file 'weights_folder' is a folder, not a file (pass a model file" --weights weights_folder
refused "resnet18_nan.pth holds NaN or infinity in layer1.0.bn1.running_var: a diverged model's scores mean nothing" \
  --model resnet18 --weights resnet18_nan.pth
check_unknown_model() {
  local rc=0
  mpi 2 "$CIFAR_EVAL" --weights convnet.pth --model vgg >refused.out 2>refused.err || rc=$?
  if [[ $rc != 2 ]] || ! grep -q "'vgg' is not a known model" refused.err; then
    cat refused.err
    fail "--model vgg exited $rc, expected 2 and a message naming the model"
  fi
}
background unknown_model.log check_unknown_model
wait_background "a scoring run failed, or a bad model file or architecture was not refused as expected"

expect_once() {  # expect_once FILE TEXT: TEXT on exactly one line of FILE
  [[ $(grep -cF -- "$2" "$1") == 1 ]] || { cat "$1"; fail "$1 should say '$2' once"; }
}
expect_once resnet_ddp.log "model file 'resnet18_ddp.pth': every key begins with DistributedDataParallel's 'module.' prefix"
sed 's/resnet18_ddp.pth/resnet18_py.pth/' resnet_ddp.json | cmp - resnet.json || fail "the DDP-prefixed file scored differently"

# Python's numbers for the four scores, in one process.
"$PYTHON" "$SOURCE_DIR/tests/e2e/eval_check.py" convnet convnet.pth "$E2E_DATA" convnet.json 2 100 \
  -- convnet convnet.pth "$E2E_DATA" convnet_tta.json 3 64 --tta \
  -- convnet convnet.pth "$E2E_DATA" convnet_selective.json 2 50 --selective \
  -- resnet18 resnet18_py.pth small.h5 resnet.json 2 32 || fail "Python's numbers differ (eval_check.py, above)"

"$PYTHON" "$SOURCE_DIR/tools/plot_metrics" --confusion convnet.json --output confusion.png ||
  fail "plot_metrics --confusion failed"
[[ $(head -c 8 confusion.png | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] || fail "confusion.png is not a PNG"
echo PASS
