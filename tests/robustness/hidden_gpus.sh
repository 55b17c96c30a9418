#!/usr/bin/env bash
# A node is blamed only for what is wrong with the node. With the default
# --device auto, a CUDA_VISIBLE_DEVICES that grants no usable GPU here ("-1",
# Slurm's "NoDevFiles", or "0,1" where no driver runs the build's CUDA)
# trains on the CPU and says why, exit 0, and writes no failed-nodes file.
# --device cuda without a usable GPU is the configuration's refusal, exit 2
# (the run's and --check-env's alike), never exit 7 with the node left out.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/common.sh
source "$here/../e2e/common.sh"

export CIFAR_FAILED_NODES_FILE=$PWD/failed_nodes
train=(--data "$E2E_DATA" --max-steps 2 --batch-size 16 --eval false --metrics "")
i=0
for visible in -1 NoDevFiles 0,1; do
  i=$((i + 1))
  rc=0
  mpi 1 env "CUDA_VISIBLE_DEVICES=$visible" "$CIFAR_MPI" "${train[@]}" --output "auto$i.pth" >"auto$i.log" 2>&1 || rc=$?
  ((rc == 0)) || { cat "auto$i.log"; fail "--device auto with CUDA_VISIBLE_DEVICES=$visible: exit $rc, expected 0"; }
  grep -q -- "--device auto: no usable GPU here (CUDA_VISIBLE_DEVICES=$visible.*): training on the CPU" "auto$i.log" ||
    { cat "auto$i.log"; fail "--device auto with CUDA_VISIBLE_DEVICES=$visible did not say why it trains on the CPU"; }
  echo "ok: --device auto, CUDA_VISIBLE_DEVICES=$visible: trained on the CPU, said so"
done
for what in train check_env; do
  args=("${train[@]}" --output "cuda-$what.pth" --device cuda)
  [[ $what == check_env ]] && args+=(--check-env)
  rc=0
  mpi 1 env CUDA_VISIBLE_DEVICES=0,1 "$CIFAR_MPI" "${args[@]}" >"cuda-$what.log" 2>&1 || rc=$?
  ((rc == 2)) || { cat "cuda-$what.log"; fail "$what --device cuda with no usable GPU: exit $rc, expected 2"; }
  if grep -q "node check failed" "cuda-$what.log"; then
    cat "cuda-$what.log"
    fail "$what --device cuda with no usable GPU blamed the node"
  fi
  echo "ok: $what --device cuda, CUDA_VISIBLE_DEVICES=0,1, no usable GPU: exit 2, $(grep -m1 -o 'error: .\{0,90\}\|cannot train: .\{0,90\}' "cuda-$what.log")"
done
[[ ! -e failed_nodes ]] || fail "a node was written to the failed-nodes file: $(cat failed_nodes)"
echo PASS
