#!/usr/bin/env bash
# Bad configuration values stop the program before training: exit code 2 on
# every rank, one clear message, and no output file written. That includes
# numbers outside the limits of their meaning (inf, huge counts, a batch
# larger than a rank's shard with --drop-last), a FIFO as --config, a word
# no option takes and an option name given only in part.
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
echo "PASS"
