#!/usr/bin/env bash
# tests/jobs/slurm_nodes.sh WORK — jobs/run_cifar.sh restarting a failed step
# on the nodes of a multi-node allocation that remain, without a cluster:
# scontrol, sinfo, srun and mpirun are stand-ins on PATH (fake_cifar_mpi.sh
# plays both launchers), so the job's node list, the nodes' states and which
# nodes answer a probe are the test's to choose.
#   1. 4 nodes x 2 tasks; the step fails (exit 137); Slurm has removed n4 from
#      the job, reports n2 "down*", and n3 does not answer its probe: the
#      restart runs `srun --nodes=1 --ntasks=2 --ntasks-per-node=2
#      --exclude=n2,n3,n4`, logs each lost node with its reason, and the job
#      finishes. Only the nodes Slurm still counts are probed.
#   2. CIFAR_LAUNCHER=mpirun, two failures in a row: n4 drained, then n1
#      gone: mpirun -np 6 --host n1:2,n2:2,n3:2, then -np 4 --host n2:2,n3:2
#      (a lost node stays out).
#   3. Nothing lost: the restart is the first launch again, all 8 tasks.
#   4. n2 fails its node checks (exit code 7): the restart leaves it out
#      without a probe; the step is then preempted (exit code 3) and the
#      requeue adds n2 to the job's ExcNodeList, keeping n9 already there.
#   5. A one-node job whose node fails its checks is requeued without it
#      (at most CIFAR_MAX_REQUEUES times).
#   6. Which node states count as lost (cifar_slurm_unusable_nodes).
#   7. srun's options for the job's GPUs (`srun --version` answers
#      $FAKE_SLURM_VERSION): GPUs per task (SLURM_GPUS_PER_TASK=1, from sbatch
#      --gpus-per-task=1) on Slurm 23.11 and 26.05 add
#      --gres-flags=allow-task-sharing; not on Slurm 22.05, whose srun rejects
#      it, nor for GPUs per node, nor to mpirun.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/common.sh
source "$here/../e2e/common.sh"

bin=$PWD/bin
mkdir -p "$bin" build
cp "$here/fake_cifar_mpi.sh" build/cifar_mpi
cp "$here/fake_cifar_mpi.sh" "$bin/srun"
cp "$here/fake_cifar_mpi.sh" "$bin/mpirun"
# scontrol: `show job ID` gives NodeList=$FAKE_JOB_NODELIST; `show hostnames`
# expands name[a-b] and comma lists.
# requeue, requeuehold, release and update are written to $FAKE_SCONTROL_LOG;
# ExcNodeList is $FAKE_EXC_NODES.
cat >"$bin/scontrol" <<'EOF'
#!/usr/bin/env bash
set -euo pipefail
case $1 in requeue | requeuehold | release | update) echo "scontrol $*" >>"$FAKE_SCONTROL_LOG"; exit 0 ;; esac
case "$1 $2" in
  "show job") echo "JobId=$3 JobName=test ReqNodeList=(null) ExcNodeList=${FAKE_EXC_NODES:-(null)}"; echo "   NodeList=$FAKE_JOB_NODELIST BatchHost=n1" ;;
  "show hostnames")
    if [[ $3 =~ ^([a-z]+)\[([0-9]+)-([0-9]+)\]$ ]]; then
      for ((i = BASH_REMATCH[2]; i <= BASH_REMATCH[3]; i++)); do echo "${BASH_REMATCH[1]}$i"; done
    else
      tr , '\n' <<<"$3"
    fi
    ;;
  *) echo "fake scontrol: unexpected '$*'" >&2; exit 1 ;;
esac
EOF
# sinfo -h -N -n LIST -o '%N %T': each node of LIST with its state in
# $FAKE_NODE_STATES ("node=state ..."), else "allocated".
cat >"$bin/sinfo" <<'EOF'
#!/usr/bin/env bash
set -euo pipefail
[[ "$*" == "-h -N -n "*" -o %N %T" ]] || { echo "fake sinfo: unexpected '$*'" >&2; exit 1; }
for node in ${4//,/ }; do
  state=allocated
  for entry in ${FAKE_NODE_STATES:-}; do [[ ${entry%%=*} != "$node" ]] || state=${entry#*=}; done
  echo "$node $state"
done
EOF
chmod +x "$bin"/*
export PATH=$bin:$PATH FAKE_SLURM_VERSION FAKE_LAUNCHES FAKE_EXITS FAKE_JOB_NODELIST FAKE_NODE_STATES FAKE_DEAD_NODES FAKE_FAILED_NODES \
  FAKE_EXC_NODES FAKE_SCONTROL_LOG=$PWD/scontrol.log
export SLURM_JOB_ID=42 SLURM_JOB_NAME=test SLURM_JOB_NODELIST='n[1-4]' SLURM_JOB_NUM_NODES=4 SLURM_NNODES=4 \
  SLURM_NTASKS=8 SLURM_NTASKS_PER_NODE=2 SLURM_TASKS_PER_NODE='2(x4)' SLURM_CPUS_PER_TASK=1 SLURM_SUBMIT_DIR=$PWD
export CIFAR_BUILD=$PWD/build CIFAR_CONFIG='' CIFAR_RESTART_BACKOFF=0 CIFAR_PROBE_TIMEOUT=5
unset CIFAR_EXTRA_ARGS CIFAR_MPIRUN_ARGS CIFAR_MAX_RESTARTS SLURM_GPUS_PER_TASK

# job NAME LAUNCHER EXITS: runs jobs/run_cifar.sh as the batch script; sets
# rc, log (NAME.log) and steps (the launcher's step command lines, one a line).
job() {
  local name=$1
  FAKE_LAUNCHES=$PWD/$name.steps FAKE_EXITS=$3 log=$name.log rc=0
  CIFAR_LAUNCHER=$2 CIFAR_RUN_DIR=$PWD/$name bash "$SOURCE_DIR/jobs/run_cifar.sh" >"$log" 2>&1 || rc=$?
  echo "== $name: exit code $rc; steps:"
  cat "$FAKE_LAUNCHES"
  grep -E 'restart [0-9] of' "$log" || true
}
step() { sed -n "${1}p" "$FAKE_LAUNCHES"; }  # step N: the N-th step's command line
expect_log() {
  grep -Eq -- "$1" "$log" || { cat "$log"; fail "$log lacks /$1/"; }
}
expect_step() {  # expect_step N PREFIX: the N-th step's command line starts with PREFIX
  [[ $(step "$1") == "$2 "* ]] || { cat "$log"; fail "step $1 is '$(step "$1")', expected '$2 ...'"; }
}

# 1. srun: three nodes lost three ways.
FAKE_JOB_NODELIST='n[1-3]' FAKE_NODE_STATES='n2=down*' FAKE_DEAD_NODES=n3
job lost_three srun "137 0"
[[ $rc == 0 && $(wc -l <"$FAKE_LAUNCHES") == 2 ]] || { cat "$log"; fail "expected exit 0 after 2 steps"; }
expect_step 1 "srun --mpi=pmix $CIFAR_BUILD/cifar_mpi"
expect_step 2 "srun --mpi=pmix --nodes=1 --ntasks=2 --ntasks-per-node=2 --exclude=n2,n3,n4 $CIFAR_BUILD/cifar_mpi"
expect_log 'step failed with exit code 137 \(killed by signal 9 \(SIGKILL\)\)'
expect_log 'restart 1 of at most 3 in 0 s after exit code 137 \(killed by signal 9 \(SIGKILL\)\); lost node\(s\) n2 \(Slurm reports it down\*\), n3 \(no answer to a probe within 5 s\), n4 \(removed from the job by Slurm\); continuing on n1 with 2 task\(s\) instead of 8; resuming from the start'
expect_log 'finished; run folder'

# 2. mpirun: one node lost at each of two restarts.
FAKE_JOB_NODELIST='n[1-4]' FAKE_NODE_STATES='n4=drained' FAKE_DEAD_NODES='n1@2'
job lost_one_by_one mpirun "1 205 0"
[[ $rc == 0 && $(wc -l <"$FAKE_LAUNCHES") == 3 ]] || { cat "$log"; fail "expected exit 0 after 3 steps"; }
[[ $(step 1) == "mpirun -np 8 "* && $(step 1) != *--host* ]] || fail "step 1: $(step 1)"
[[ $(step 2) == "mpirun -np 6 "*" --host n1:2,n2:2,n3:2 $CIFAR_BUILD/cifar_mpi "* ]] || fail "step 2: $(step 2)"
[[ $(step 3) == "mpirun -np 4 "*" --host n2:2,n3:2 $CIFAR_BUILD/cifar_mpi "* ]] || fail "step 3: $(step 3)"
expect_log 'restart 1 of at most 3 in 0 s after exit code 1 \(runtime error, or another rank.s failure\); lost node\(s\) n4 \(Slurm reports it drained\); continuing on n1,n2,n3 with 6 task\(s\) instead of 8'
expect_log 'restart 2 of at most 3 in 0 s after exit code 205 \(the launcher.s own failure: a daemon, host or node was lost, or a rank could not start\); lost node\(s\) n1 \(no answer to a probe within 5 s\); continuing on n2,n3 with 4 task\(s\) instead of 6'

# 3. Nothing lost (every rank killed, every node fine): the same step again.
FAKE_JOB_NODELIST='n[1-4]' FAKE_NODE_STATES='' FAKE_DEAD_NODES=''
job none_lost srun "137 0"
[[ $rc == 0 && $(step 1) == "$(step 2)" && $(step 1) == "srun --mpi=pmix $CIFAR_BUILD/cifar_mpi "* ]] ||
  { cat "$log"; fail "expected the same srun twice and exit 0"; }
expect_log 'restart 1 of at most 3 in 0 s after exit code 137 .*; no node lost \(all 4 usable\): again 8 task\(s\); resuming from the start'

# 4. A node fails its checks, then the job is preempted and requeued without it.
FAKE_JOB_NODELIST='n[1-4]' FAKE_NODE_STATES='' FAKE_DEAD_NODES='' FAKE_FAILED_NODES=n2.cluster@1 FAKE_EXC_NODES=n9
rm -f "$FAKE_SCONTROL_LOG"
job node_check srun "7 3"
[[ $rc == 0 ]] || { cat "$log"; fail "expected exit 0 (requeued)"; }
expect_step 2 "srun --mpi=pmix --nodes=3 --ntasks=6 --ntasks-per-node=2 --exclude=n2 $CIFAR_BUILD/cifar_mpi"
expect_log 'step failed with exit code 7 \(a node failed its checks before training\)'
expect_log 'lost node\(s\) n2 \(failed its node checks \(exit code 7\)\); continuing on n1,n3,n4 with 6 task\(s\) instead of 8'
expect_log 'excluding node n2 from the requeued job: failed its node checks \(exit code 7\)'
expect_log 'scontrol update JobId=42 ExcNodeList=n9,n2'
[[ $(cat "$FAKE_SCONTROL_LOG") == "scontrol requeuehold 42
scontrol update JobId=42 ExcNodeList=n9,n2
scontrol release 42" ]] || { cat "$FAKE_SCONTROL_LOG"; fail "scontrol calls"; }
cat "$FAKE_SCONTROL_LOG"

# 5. A one-node job: its only node fails its checks; requeued without it.
FAKE_JOB_NODELIST=n1 FAKE_FAILED_NODES=n1@1 FAKE_EXC_NODES=''
rm -f "$FAKE_SCONTROL_LOG"
SLURM_JOB_NODELIST=n1 SLURM_JOB_NUM_NODES=1 SLURM_NNODES=1 SLURM_NTASKS=2 SLURM_TASKS_PER_NODE=2 job one_node srun "7"
[[ $rc == 0 && $(wc -l <"$FAKE_LAUNCHES") == 1 ]] || { cat "$log"; fail "expected one step, then a requeue"; }
expect_log 'lost every node of the job: n1 \(failed its node checks \(exit code 7\)\): not restarting here'
expect_log 'requeued job 42 without node n1'
grep -q '^scontrol update JobId=42 ExcNodeList=n1$' "$FAKE_SCONTROL_LOG" || { cat "$log"; fail "no ExcNodeList=n1"; }
# ... at most CIFAR_MAX_REQUEUES times.
rm -f "$FAKE_SCONTROL_LOG"
SLURM_RESTART_COUNT=2 CIFAR_MAX_REQUEUES=2 SLURM_JOB_NODELIST=n1 SLURM_JOB_NUM_NODES=1 SLURM_NNODES=1 SLURM_NTASKS=2 \
  SLURM_TASKS_PER_NODE=2 job one_node_limit srun "7"
[[ $rc == 7 && ! -e $FAKE_SCONTROL_LOG ]] || { cat "$log"; fail "expected exit 7 and no requeue"; }
FAKE_FAILED_NODES=''

# 6. The states that count as lost: not responding (*), down, drained or
# draining, failing; not those of a working node.
# shellcheck source=jobs/cifar_common.sh
source "$SOURCE_DIR/jobs/cifar_common.sh"
FAKE_NODE_STATES='a=allocated b=mixed* c=down d=drained e=draining f=failing g=idle h=completing i=mixed j=idle~ k=reserved l=unknown*'
lost_states=$(cifar_slurm_unusable_nodes a b c d e f g h i j k l | tr '\n' ' ')
[[ $lost_states == "b mixed* c down d drained e draining f failing l unknown* " ]] ||
  fail "unusable nodes: '$lost_states'"
echo "unusable of 12 states: $lost_states"

# 7. --gres-flags=allow-task-sharing: GPUs per task, Slurm 23.11 or newer, srun only.
FAKE_JOB_NODELIST='n[1-4]' FAKE_NODE_STATES='' FAKE_DEAD_NODES=''
gres_flag="srun --mpi=pmix --gres-flags=allow-task-sharing $CIFAR_BUILD/cifar_mpi "
FAKE_SLURM_VERSION=23.11.4 SLURM_GPUS_PER_TASK=1 job per_task_23.11 srun 0
expect_step 1 "${gres_flag% }"
FAKE_SLURM_VERSION=26.05.0 SLURM_GPUS_PER_TASK=1 job per_task_26.05 srun 0
expect_step 1 "${gres_flag% }"
FAKE_SLURM_VERSION=22.05.8 SLURM_GPUS_PER_TASK=1 job per_task_22.05 srun 0
expect_step 1 "srun --mpi=pmix $CIFAR_BUILD/cifar_mpi"
FAKE_SLURM_VERSION=26.05.0 job per_node_26.05 srun 0
expect_step 1 "srun --mpi=pmix $CIFAR_BUILD/cifar_mpi"
FAKE_SLURM_VERSION=26.05.0 SLURM_GPUS_PER_TASK=1 job mpirun_26.05 mpirun 0
[[ $(step 1) == "mpirun -np 8 "* && $(step 1) != *--gres-flags* ]] || fail "mpirun takes no --gres-flags: $(step 1)"
echo PASS
