#!/usr/bin/env bash
# cifar_mpi --self-test on the CPU, as CI runs it: at np 1 and np 2, exit 0,
# every CPU row PASS with its figure, every GPU row SKIP "needs a GPU", the
# multi-rank row PASS at np 2 and SKIP "needs 2 or more ranks" at np 1, the
# CUDA stack's lines above the table, and each rank's temporary folder
# removed at the end. It needs no data file: it makes its own.
# shellcheck source=tests/e2e/common.sh
source "$(dirname "$0")/common.sh"

readonly cpu_rows=(sgd_fp32 adam bf16 muon eval_tta)
readonly gpu_rows=(fp16_loss_scaling host_data graphs_fused_adam graphs_fused_nesterov graphs_bit_for_bit
                   nccl_in_cuda_graph)

# row LOG NAME: NAME's line of the final table in LOG.
row() { sed -n '/^self-test table:/,$p' "$1" | grep -E "^\| $2 +\|" || true; }

# expect LOG NAME STATUS TEXT: NAME's row has STATUS and TEXT in its result.
expect() {
  local line
  line=$(row "$1" "$2")
  [[ $line =~ \|\ $3\ +\| && $line == *"$4"* ]] || { cat "$1"; fail "row $2: expected $3 with '$4', got '$line'"; }
}

# launch NP: the self-test at NP ranks, its temporary folders in tmpNP.
launch() {
  mkdir -p "$PWD/tmp$1"
  TMPDIR=$PWD/tmp$1 mpi "$1" "$CIFAR_MPI" --self-test
}

check_run() {  # check_run NP: the checks of launch NP's log
  local np=$1 log=np$1.log tmp=$PWD/tmp$1 r
  for r in CUDA: cuDNN: NCCL:; do grep -qE "^  $r " "$log" || { cat "$log"; fail "np $np: no '$r' stack line"; }; done
  for r in "${cpu_rows[@]}"; do expect "$log" "$r" PASS " after "; done
  expect "$log" eval_tta PASS "test_accuracy "
  for r in "${gpu_rows[@]}"; do expect "$log" "$r" SKIP "needs a GPU"; done
  if ((np == 1)); then expect "$log" allreduce_all_ranks SKIP "needs 2 or more ranks"
  else expect "$log" allreduce_all_ranks PASS "on 2 ranks, backend mpi"; fi
  [[ -z $(ls -A "$tmp") ]] || { ls -lR "$tmp"; fail "np $np left files in its temporary folder"; }
  echo "ok: np $np"
}

# Side by side: most of each launch is start-up (common.sh's `background`,
# which shows each log).
background np1.log launch 1
background np2.log launch 2
wait_background "--self-test at np 1 or np 2 failed"
check_run 1
check_run 2
echo "PASS"
