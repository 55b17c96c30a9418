#!/usr/bin/env bash
# A node check refuses a job before training: a rank that srun started as one
# of 2 tasks but that MPI made a world of 1 (a broken PMI wire-up would start
# one-rank jobs side by side) ends with the node's name, the fix and exit code
# 2, printed once (by Slurm's node name), and writes nothing (no model, metrics, checkpoint folder
# or failed-nodes file); `--check-env` refuses it the same way. mpirun
# launches the rank with OMPI_COMM_WORLD_SIZE removed and Slurm's variables
# set, so the rank sees what srun's would.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/common.sh
source "$here/../e2e/common.sh"

# SLURMD_NODENAME: Slurm's name of the node, which a node check names (it
# may differ from the host name where NodeName and NodeHostname differ).
as_srun_task=(env -u OMPI_COMM_WORLD_SIZE SLURM_PROCID=0 SLURM_STEP_NUM_TASKS=2 SLURM_NTASKS=2
  SLURMD_NODENAME=slurm-node-7 "CIFAR_FAILED_NODES_FILE=$PWD/failed_nodes")
declare -A rc=()
rc[train]=0 rc[check_env]=0
mpi 1 "${as_srun_task[@]}" "$CIFAR_MPI" --data "$E2E_DATA" --epochs 1 --batch-size 16 --output out/model.pth \
  --metrics out/metrics.jsonl --checkpoint-dir out/checkpoints >train.log 2>&1 || rc[train]=$?
mpi 1 "${as_srun_task[@]}" "$CIFAR_MPI" --check-env --data "$E2E_DATA" >check_env.log 2>&1 || rc[check_env]=$?
for what in train check_env; do
  cat "$what.log"
  [[ ${rc[$what]} == 2 ]] || fail "$what: exit code ${rc[$what]}, expected 2"
  grep -q "error: node check failed: node slurm-node-7: world size: srun started this rank as one of 2 task(s), but MPI made a world of 1 rank(s).*Fix: launch with srun --mpi=pmix" "$what.log" ||
    fail "$what: no world-size refusal in $what.log"
  (($(grep -c 'node check failed' "$what.log") == 1)) || fail "$what: the refusal is not printed exactly once"
done
[[ ! -e out && ! -e failed_nodes ]] || fail "the refused run left files: $(ls -R out failed_nodes 2>&1)"
echo PASS
