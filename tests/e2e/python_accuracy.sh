#!/usr/bin/env bash
# The model file loads in Python (Debian's python3-torch) into the reference
# recipe's ConvNet, and Python's accuracy on the test split equals the one the
# program printed.
# shellcheck source=tests/e2e/common.sh
source "$(dirname "$0")/common.sh"
"$PYTHON" -c "import torch, h5py" 2>/dev/null ||
  fail "this test needs $PYTHON with torch and h5py (Debian's python3-torch and python3-h5py: run tools/setup.sh)"
mpi 2 "$CIFAR_MPI" --data "$E2E_DATA" --epochs 1 --batch-size 32 --output model.pth --metrics metrics.jsonl \
  --log-every 1000 >train.log 2>&1 || { cat train.log; fail "training failed"; }
printed=$(sed -n 's/.*RESULT .*test_accuracy=\([0-9.]*\).*/\1/p' train.log)
[[ -n $printed ]] || { cat train.log; fail "no RESULT line"; }
python_acc=$("$PYTHON" "$SOURCE_DIR/tests/e2e/python_accuracy.py" model.pth "$E2E_DATA")
echo "program printed test accuracy $printed; Python computes $python_acc"
[[ $printed == "$python_acc" ]] || fail "accuracies differ"
[[ -s metrics.jsonl ]] || fail "no metrics written"
echo "PASS"
