#!/usr/bin/env bash
# Bad configuration values stop the program before training: exit code 2 on
# every rank, one clear message, and no output file written.
source "$(dirname "$0")/common.sh"

expect_usage_error() {  # expect_usage_error PATTERN ARGS...
  local pattern=$1
  shift
  set +e
  mpi 2 "$CIFAR_MPI" --data "$E2E_DATA" --output out.pth --metrics m.jsonl "$@" >out.txt 2>err.txt
  local rc=$?
  set -e
  [[ $rc -eq 2 ]] || { cat out.txt err.txt; fail "'$*' exited $rc, expected 2"; }
  local n
  n=$(grep -c "error:" err.txt || true)
  [[ $n -eq 1 ]] || { cat err.txt; fail "'$*' printed $n error lines, expected 1"; }
  grep -q -- "$pattern" err.txt || { cat err.txt; fail "'$*' error does not mention '$pattern'"; }
  [[ ! -e out.pth && ! -e m.jsonl ]] || fail "'$*' wrote output"
  echo "ok: $* -> $(grep error: err.txt)"
}

expect_usage_error "--batch-size" --batch-size 0
expect_usage_error "--lr" --lr -0.1
expect_usage_error "epochs" --epochs two
expect_usage_error "lamb" --optimizer lamb
expect_usage_error "no-such-option" --no-such-option 1
printf 'epochs = 1\nlearning_rate = 0.1\n' >bad.ini
expect_usage_error "learning_rate" --config bad.ini
printf 'epochs = 1\nbatch-size = eight\n' >bad_value.ini
expect_usage_error "bad_value.ini" --config bad_value.ini
printf 'epochs = 1\nbatch-size = -8\n' >bad_range.ini
expect_usage_error "--batch-size" --config bad_range.ini
printf 'epochs = 1\n[train\n' >bad_syntax.ini
expect_usage_error "bad_syntax.ini" --config bad_syntax.ini
expect_usage_error "cannot open 'missing.ini'" --config missing.ini
expect_usage_error "resnet50" --model resnet50
# --cuda-graphs on CPUs (every rank agrees, one message).
expect_usage_error "--cuda-graphs true needs a GPU" --device cpu --cuda-graphs true
"$CIFAR_PACK" --synthetic 3 --test-count 3 --output tiny.h5 >/dev/null
set +e
mpi 4 "$CIFAR_MPI" --data tiny.h5 --output out.pth --metrics m.jsonl >out.txt 2>err.txt
rc=$?
set -e
[[ $rc -eq 2 ]] && grep -q "3 training samples but the job has 4 ranks" err.txt ||
  { cat err.txt; fail "more ranks than samples: exit $rc"; }
echo "ok: 4 ranks, 3 samples -> $(grep error: err.txt)"
echo "PASS"
