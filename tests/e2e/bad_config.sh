#!/usr/bin/env bash
# Bad configuration values stop the program before training: exit code 2 on
# every rank, one clear message, and no output file written. That includes
# numbers outside the limits of their meaning (inf, huge counts, a batch
# larger than a rank's shard with --drop-last), a FIFO as --config, a word
# no option takes and an option name given only in part. --check-env refuses
# the same with the run's exit code, and creates nothing.
# shellcheck source=tests/e2e/common.sh
source "$(dirname "$0")/common.sh"

# The cases are independent launches, so they run side by side (common.sh's
# `background`): 13 one after the other took ~30 s, most of it start-up.
# Each case has its own file names; the checks are the same.
check_usage_error() {  # check_usage_error N PATTERN ARGS...
  local i=$1 pattern=$2
  shift 2
  set +e
  mpi 2 "$CIFAR_MPI" --data "$E2E_DATA" --output "out$i.pth" --metrics "m$i.jsonl" "$@" >"out$i.txt" 2>"err$i.txt"
  local rc=$?
  set -e
  [[ $rc -eq 2 ]] || { cat "out$i.txt" "err$i.txt"; fail "'$*' exited $rc, expected 2"; }
  local n
  n=$(grep -c "error:" "err$i.txt" || true)
  [[ $n -eq 1 ]] || { cat "err$i.txt"; fail "'$*' printed $n error lines, expected 1"; }
  grep -q -- "$pattern" "err$i.txt" || { cat "err$i.txt"; fail "'$*' error does not mention '$pattern'"; }
  [[ ! -e "out$i.pth" && ! -e "m$i.jsonl" ]] || fail "'$*' wrote output"
  echo "ok: $* -> $(grep error: "err$i.txt")"
}
cases=0
expect_usage_error() {  # expect_usage_error PATTERN ARGS...: started in the background
  background "case$cases.log" check_usage_error "$cases" "$@"
  cases=$((cases + 1))
}

printf 'epochs = 1\nlearning_rate = 0.1\n' >bad.ini
printf 'epochs = 1\nbatch-size = eight\n' >bad_value.ini
printf 'epochs = 1\nbatch-size = -8\n' >bad_range.ini
printf 'epochs = 1\n[train\n' >bad_syntax.ini
expect_usage_error "--batch-size" --batch-size 0
expect_usage_error "--lr" --lr -0.1
expect_usage_error "epochs" --epochs two
expect_usage_error "lamb" --optimizer lamb
expect_usage_error "no-such-option" --no-such-option 1
expect_usage_error "unknown option --epoch; did you mean --epochs?" --epoch 1
expect_usage_error "unexpected argument '0.05' after --lr 0.1: each option takes one value" --lr 0.1 0.05
expect_usage_error "learning_rate" --config bad.ini
expect_usage_error "bad_value.ini" --config bad_value.ini
expect_usage_error "--batch-size" --config bad_range.ini
expect_usage_error "bad_syntax.ini" --config bad_syntax.ini
expect_usage_error "cannot open 'missing.ini'" --config missing.ini
expect_usage_error "resnet50" --model resnet50
# Numbers are checked against the limits of their meaning before use.
expect_usage_error "--lr must be a finite number (got inf)" --lr inf
expect_usage_error "--weight-decay must be a finite number (got inf)" --weight-decay inf
expect_usage_error "--threads must be 0 (automatic) or up to" --threads 100000
expect_usage_error "--prefetch-batches must be between 0 and 64" --prefetch-batches 1000000
expect_usage_error "each rank has 512 training samples, fewer than one batch of 600 with --drop-last" \
  --batch-size 600 --drop-last true
mkfifo fifo.ini
expect_usage_error "--config: 'fifo.ini' is not a regular file" --config fifo.ini
# --cuda-graphs on CPUs (every rank agrees, one message).
expect_usage_error "--cuda-graphs true needs a GPU" --device cpu --cuda-graphs true
"$CIFAR_PACK" --synthetic 3 --test-count 3 --output tiny.h5 >/dev/null
set +e
mpi 4 "$CIFAR_MPI" --data tiny.h5 --output out.pth --metrics m.jsonl >out.txt 2>err.txt
rc=$?
set -e
{ [[ $rc -eq 2 ]] && grep -q "3 training samples but the job has 4 ranks" err.txt; } ||
  { cat err.txt; fail "more ranks than samples: exit $rc"; }
echo "ok: 4 ranks, 3 samples -> $(grep error: err.txt)"
wait_background "a bad configuration was not refused as expected"

# --check-env runs training's start-up checks: it refuses what the run would,
# with the run's exit code and one message, and creates nothing (no output
# file, folder or lock file). N names the case's files, as above.
check_env_refuses() {  # check_env_refuses N CODE PATTERN ARGS... (ARGS name --data)
  local i=$1 code=$2 pattern=$3
  shift 3
  set +e
  mpi 2 "$CIFAR_MPI" --check-env --output "env$i/out.pth" --metrics "env$i.jsonl" "$@" \
    >"env_out$i.txt" 2>"env_err$i.txt"
  local rc=$?
  set -e
  [[ $rc -eq $code ]] || { cat "env_out$i.txt" "env_err$i.txt"; fail "--check-env '$*' exited $rc, expected $code"; }
  local n
  n=$(grep -c "error:" "env_err$i.txt" || true)
  [[ $n -eq 1 ]] || { cat "env_err$i.txt"; fail "--check-env '$*' printed $n error lines, expected 1"; }
  grep -q -- "$pattern" "env_err$i.txt" || { cat "env_err$i.txt"; fail "--check-env '$*' error does not mention '$pattern'"; }
  if grep -q "^ready to train" "env_out$i.txt"; then fail "--check-env '$*' printed 'ready to train'"; fi
  [[ ! -e "env$i" && ! -e "env$i.jsonl" && ! -e ".env$i.jsonl.lock" ]] || fail "--check-env '$*' created files"
  echo "ok: --check-env $* -> exit $rc, $(grep error: "env_err$i.txt")"
}
touch somefile
"$CIFAR_PACK" --synthetic 1 --test-count 1 --output one.h5 >/dev/null
check_env_refuses 0 2 "--lr must be positive (got -1)" --data "$E2E_DATA" --lr -1
check_env_refuses 1 6 "missing.h5" --data missing.h5
check_env_refuses 2 2 \
  "--checkpoint-dir somefile/ckpt: cannot write to folder somefile/ckpt (somefile: exists and is not a folder)" \
  --data "$E2E_DATA" --checkpoint-dir somefile/ckpt
check_env_refuses 3 2 "--cuda-graphs true needs a GPU" --data "$E2E_DATA" --device cpu --cuda-graphs true
check_env_refuses 4 2 "1 training samples but the job has 2 ranks" --data one.h5
# A good configuration passes, and the outputs' folders it would make are still absent.
mpi 2 "$CIFAR_MPI" --check-env --data "$E2E_DATA" --output new/out.pth --metrics new_m/m.jsonl \
  --checkpoint-dir new_ckpt/run --tensorboard new_tb >env_ok.txt 2>&1 || { cat env_ok.txt; fail "a good --check-env failed"; }
grep -q "^ready to train$" env_ok.txt || { cat env_ok.txt; fail "a good --check-env did not print 'ready to train'"; }
[[ ! -e new && ! -e new_m && ! -e new_ckpt && ! -e new_tb ]] || fail "a good --check-env created folders"
[[ -z $(find . -name '.*.lock' -o -name '*.tmp-*') ]] || fail "--check-env left lock or temporary files"
echo "ok: a good --check-env -> ready to train, nothing created"
echo "PASS"
