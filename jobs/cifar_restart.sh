# shellcheck shell=bash
# jobs/cifar_restart.sh — restarting the training step after a failure, for
# every launcher: which exit codes are worth a restart, the back-off, the
# restart loop, and finding where the step can run again (the hosts of a
# hostfile that still answer, for mpirun; the nodes of the Slurm allocation
# that still answer, for srun or mpirun inside a job). Sourced by
# jobs/cifar_common.sh; the launchers (jobs/local_mpirun.sh, jobs/run_cifar.sh)
# call cifar_supervise with two functions of their own (see there).
#
# A restart runs the same command line: cifar_mpi resumes from the newest
# complete checkpoint of the run folder (--resume auto), at another world size
# when hosts or nodes were lost (it keeps the global batch: docs/checkpoint.md).
#
#   CIFAR_MAX_RESTARTS     restarts after failures (default 3; 0: never restart);
#                          jobs/local_mpirun.sh --max-restarts N sets it
#   CIFAR_RESTART_BACKOFF  the first restart runs at once; seconds before the second,
#                          doubled before each next one, at most 600 (default 10;
#                          decimals allowed)
#   CIFAR_PROBE_TIMEOUT    seconds a host or node has to run `true` before a restart
#                          leaves it out (default 30)

# cifar_exit_meaning CODE: what cifar_mpi's (or its launcher's) exit code says.
cifar_exit_meaning() {
  local code=$1
  case $code in
    0) echo "finished" ;;
    1) echo "runtime error, or another rank's failure" ;;
    2) echo "configuration error" ;;
    3) echo "preempted, checkpoint written" ;;
    4) echo "communication timeout: a rank or host stalled or was lost" ;;
    5) echo "diverged: a non-finite or exploded loss or gradient" ;;
    6) echo "bad input: a file the run reads is missing, damaged or another run's" ;;
    7) echo "a node failed its checks before training" ;;
    130) echo "interrupted twice (Ctrl-C): the ranks were ended without a checkpoint" ;;
    *)
      # 128 + N: a process (a rank, or the launcher) ended by signal N.
      if ((code > 128 && code < 160)); then
        echo "killed by signal $((code - 128)) (SIG$(kill -l $((code - 128)) 2>/dev/null || echo '?'))"
      else
        echo "the launcher's own failure: a daemon, host or node was lost, or a rank could not start"
      fi
      ;;
  esac
}

# cifar_check_restart_settings: validates the knobs above before anything is
# launched (a typo must not surface only after the first failure, hours later).
cifar_check_restart_settings() {
  CIFAR_MAX_RESTARTS=${CIFAR_MAX_RESTARTS:-3}
  CIFAR_RESTART_BACKOFF=${CIFAR_RESTART_BACKOFF:-10}
  CIFAR_PROBE_TIMEOUT=${CIFAR_PROBE_TIMEOUT:-30}
  [[ $CIFAR_MAX_RESTARTS =~ ^[0-9]+$ ]] ||
    cifar_die "the number of restarts (--max-restarts, CIFAR_MAX_RESTARTS) must be a whole number, 0 for none (got '$CIFAR_MAX_RESTARTS')"
  [[ $CIFAR_RESTART_BACKOFF =~ ^[0-9]+(\.[0-9]+)?$ ]] ||
    cifar_die "CIFAR_RESTART_BACKOFF must be a number of seconds (got '$CIFAR_RESTART_BACKOFF')"
  [[ $CIFAR_PROBE_TIMEOUT =~ ^[1-9][0-9]*$ ]] ||
    cifar_die "CIFAR_PROBE_TIMEOUT must be a whole number of seconds, at least 1 (got '$CIFAR_PROBE_TIMEOUT')"
  CIFAR_STOP_HOLD=${CIFAR_STOP_HOLD:-30}
  [[ $CIFAR_STOP_HOLD =~ ^[0-9]+$ ]] ||
    cifar_die "CIFAR_STOP_HOLD must be a whole number of seconds (got '$CIFAR_STOP_HOLD')"
}

# cifar_backoff_seconds N: the wait before restart N (1, 2, ...): none before
# the first, then CIFAR_RESTART_BACKOFF, doubled before each next one. Most
# failures are one-off (a killed rank, a lost host the probes have already
# left out), and every second before the first restart is a second the whole
# allocation stands idle, so it runs at once. A failure that comes back is
# the kind that waiting helps (a node or file system coming back, an
# operator looking): doubling gives it that time without waiting long at
# first, and the cap keeps a large CIFAR_MAX_RESTARTS from waiting for days.
cifar_backoff_seconds() {
  awk -v base="$CIFAR_RESTART_BACKOFF" -v n="$1" \
    'BEGIN { d = n <= 1 ? 0 : base * 2 ^ (n - 2); if (d > 600) d = 600; printf "%g\n", d }'
}

# cifar_request_stop SIGNAL [AS]: called by the launchers' traps. A run asked
# to stop (preemption, scancel, SIGTERM, Ctrl-C) is never restarted; a running
# step gets the stop as signal AS (default SIGNAL), through cifar_pass_stop_on;
# AS "" sends nothing (the ranks get the signal from elsewhere, e.g. Slurm).
# Before a step starts, nothing is started (cifar_supervise).
CIFAR_STOP_REQUESTED=
CIFAR_STOP_PENDING=
CIFAR_STOP_HELD=
CIFAR_STEP_PID=
CIFAR_STEP_STARTED=0
cifar_request_stop() {
  CIFAR_STOP_REQUESTED=$1
  CIFAR_STOP_PENDING=${2-$1}
  cifar_pass_stop_on
}

# cifar_pass_stop_on: sends the pending stop to the running step. cifar_mpi
# installs its handlers first thing, but only after seconds of loading its
# libraries and starting: SIGUSR1 or SIGTERM that reaches a rank before then
# kills it instead of stopping it. So the step's rank 0 creates
# CIFAR_SIGNALS_READY_FILE once every rank handles them, and a stop asked for
# before that is held until the file exists (cifar_wait_step looks every 0.1
# s), or for at most CIFAR_STOP_HOLD seconds (default 30) after the launch:
# a program that never creates it, an older build in a container say, still
# gets the stop.
cifar_pass_stop_on() {
  [[ -n $CIFAR_STOP_PENDING && -n $CIFAR_STEP_PID ]] || return 0
  if [[ -n ${CIFAR_SIGNALS_READY_FILE:-} && ! -e $CIFAR_SIGNALS_READY_FILE ]] &&
    ((SECONDS - CIFAR_STEP_STARTED < ${CIFAR_STOP_HOLD:-30})); then
    if [[ -z $CIFAR_STOP_HELD ]]; then
      CIFAR_STOP_HELD=1
      cifar_log "the ranks are still starting: SIG$CIFAR_STOP_PENDING goes to them once they handle it"
    fi
    return 0
  fi
  kill -s "$CIFAR_STOP_PENDING" "$CIFAR_STEP_PID" 2>/dev/null || true
  CIFAR_STOP_PENDING=
}

# cifar_wait_step: waits for the step (CIFAR_STEP_PID) and returns its exit
# code, passing on a held stop as soon as the ranks handle it. A trapped
# signal interrupts the wait, and its trap runs at once.
cifar_wait_step() {
  local pid=$CIFAR_STEP_PID status=0
  while kill -0 "$pid" 2>/dev/null; do
    cifar_pass_stop_on
    if [[ -n $CIFAR_STOP_PENDING ]]; then sleep 0.1; else wait "$pid" || true; fi
  done
  wait "$pid" || status=$?
  return "$status"
}

# cifar_pause SECONDS: sleeps, but returns as soon as a stop is requested
# (bash runs a trap only between commands, so the sleep runs in the background).
cifar_pause() {
  local pid
  sleep "$1" &
  pid=$!
  while kill -0 "$pid" 2>/dev/null && [[ -z $CIFAR_STOP_REQUESTED ]]; do
    wait "$pid" || true
  done
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

# cifar_newest_checkpoint: where a restart resumes, for the log (cifar_mpi
# itself picks the newest checkpoint that reads back complete).
cifar_newest_checkpoint() {
  local files=("$CIFAR_RUN_DIR"/checkpoints/ckpt-*.pt)
  if [[ -e ${files[-1]} ]]; then
    echo "checkpoint ${files[-1]}"  # the names sort by epoch and step
  else
    echo "the start (no checkpoint yet)"
  fi
}

# cifar_restart_wanted STATUS RESTARTS_SO_FAR: logs the step's end and
# returns 0 when a restart may help. Codes 2 (configuration), 5 (divergence)
# and 6 (bad input: a missing or damaged data file or checkpoint, a --resume
# typo, a checkpoint another world size cannot continue) would recur: the
# same options, the same files. Code 3 (preempted) and 0 are the launcher's
# to handle. Any other code, the launcher's own included, is a failure worth
# a restart; after 7 (a node failed its checks) the restart leaves out the
# nodes cifar_mpi named (cifar_failed_nodes).
cifar_restart_wanted() {
  local status=$1 restarts=$2 what
  what="exit code $status ($(cifar_exit_meaning "$status"))"
  case $status in
    0 | 3) return 1 ;;
    2 | 5 | 6)
      cifar_log "step failed with $what: not restarting, it would fail the same way"
      return 1
      ;;
  esac
  if [[ -n $CIFAR_STOP_REQUESTED ]]; then
    cifar_log "step ended with $what after SIG$CIFAR_STOP_REQUESTED: not restarting a run that was asked to stop"
    return 1
  fi
  if ((restarts >= CIFAR_MAX_RESTARTS)); then
    cifar_log "step failed with $what: not restarting, $restarts restart(s) done of at most" \
      "$CIFAR_MAX_RESTARTS (--max-restarts, CIFAR_MAX_RESTARTS)"
    return 1
  fi
  cifar_log "step failed with $what"
  return 0
}

# cifar_supervise: runs the training step, and again after each failure worth
# a restart, until it succeeds, stops or runs out of restarts. The launcher
# defines
#   start_step       starts the step in the background and sets CIFAR_STEP_PID;
#   prepare_restart  finds where the step can run again (drops lost hosts or
#                    nodes, sets the rank count), sets CIFAR_RESTART_NOTE to
#                    say so; non-zero: nowhere (logged), no restart.
# Sets CIFAR_STEP_STATUS, the code the launcher goes on with: the step's, or 3
# when a stop request came during the back-off (nothing runs, and the newest
# checkpoint is on disk: the same state as a preempted step's).
cifar_supervise() {
  local restarts=0 delay
  if [[ -n $CIFAR_STOP_REQUESTED ]]; then
    cifar_log "SIG$CIFAR_STOP_REQUESTED before the launch: nothing started (exit code 3)"
    CIFAR_STEP_STATUS=3
    return 0
  fi
  while :; do
    [[ -z ${CIFAR_FAILED_NODES_FILE:-} ]] || rm -f "$CIFAR_FAILED_NODES_FILE"
    [[ -z ${CIFAR_SIGNALS_READY_FILE:-} ]] || rm -f "$CIFAR_SIGNALS_READY_FILE"
    CIFAR_STEP_STARTED=$SECONDS
    start_step
    CIFAR_STEP_STATUS=0
    cifar_wait_step || CIFAR_STEP_STATUS=$?
    CIFAR_STEP_PID=
    CIFAR_STOP_PENDING=
    [[ -z ${CIFAR_SIGNALS_READY_FILE:-} ]] || rm -f "$CIFAR_SIGNALS_READY_FILE"
    cifar_restart_wanted "$CIFAR_STEP_STATUS" "$restarts" || return 0
    restarts=$((restarts + 1))
    CIFAR_RESTART_NOTE=
    prepare_restart || return 0
    delay=$(cifar_backoff_seconds "$restarts")
    cifar_log "restart $restarts of at most $CIFAR_MAX_RESTARTS in ${delay} s after exit code $CIFAR_STEP_STATUS" \
      "($(cifar_exit_meaning "$CIFAR_STEP_STATUS")); ${CIFAR_RESTART_NOTE}; resuming from $(cifar_newest_checkpoint)"
    cifar_pause "$delay"
    if [[ -n $CIFAR_STOP_REQUESTED ]]; then
      cifar_log "SIG$CIFAR_STOP_REQUESTED before the restart: not restarting; the run folder resumes from" \
        "$(cifar_newest_checkpoint) (exit code 3)"
      CIFAR_STEP_STATUS=3
      return 0
    fi
  done
}

# cifar_unanswering PROBE ITEM...: prints each ITEM for which `PROBE ITEM`
# fails, probing all at once (a dead host costs one timeout, not one each).
cifar_unanswering() {
  local probe=$1 pids=() i
  shift
  local items=("$@")
  for i in "${!items[@]}"; do
    "$probe" "${items[i]}" >/dev/null 2>&1 &
    pids[i]=$!
  done
  for i in "${!items[@]}"; do
    cifar_wait "${pids[i]}" || echo "${items[i]}"
  done
}

# cifar_failed_nodes: the nodes the last step's cifar_mpi named as failing
# their checks (exit code 7: not enough /dev/shm, a GPU gone bad, NCCL on TCP
# sockets), one a line, without domain (the program names a node by its
# host name, Slurm and hostfiles may use the short one).
cifar_failed_nodes() {
  [[ -n ${CIFAR_FAILED_NODES_FILE:-} && -f $CIFAR_FAILED_NODES_FILE ]] || return 0
  local node
  while read -r node; do
    [[ -z $node ]] || echo "${node%%.*}"
  done <"$CIFAR_FAILED_NODES_FILE"
}

# cifar_join SEPARATOR WORD...: the words joined by SEPARATOR.
cifar_join() {
  local separator=$1 joined='' word
  shift
  for word in "$@"; do joined+=${joined:+$separator}$word; done
  echo "$joined"
}

# ---- mpirun with a hostfile (jobs/local_mpirun.sh) ---------------------------

# cifar_read_hostfile FILE: the hosts of an Open MPI hostfile, in order, each
# once, in CIFAR_HOSTS, and their slots in CIFAR_HOST_SLOTS ("" where the
# file gives none: Open MPI then counts the host's cores, which this script
# cannot see). Comments and blank lines are skipped; a host named twice adds
# up its slots, as Open MPI does.
cifar_read_hostfile() {
  local line host word slots i words
  CIFAR_HOSTS=()
  CIFAR_HOST_SLOTS=()
  while IFS= read -r line || [[ -n $line ]]; do
    line=${line%%#*}
    read -r -a words <<<"$line"
    ((${#words[@]})) || continue
    host=${words[0]}
    slots=
    for word in "${words[@]:1}"; do
      [[ $word =~ ^slots=([0-9]+)$ ]] && slots=${BASH_REMATCH[1]}
    done
    for i in "${!CIFAR_HOSTS[@]}"; do
      if [[ ${CIFAR_HOSTS[i]} == "$host" ]]; then
        [[ -n $slots && -n ${CIFAR_HOST_SLOTS[i]} ]] && CIFAR_HOST_SLOTS[i]=$((CIFAR_HOST_SLOTS[i] + slots))
        continue 2
      fi
    done
    CIFAR_HOSTS+=("$host")
    CIFAR_HOST_SLOTS+=("$slots")
  done <"$1"
  ((${#CIFAR_HOSTS[@]})) || cifar_die "hostfile $1 names no host"
}

# cifar_probe_host HOST: can mpirun, with this launch's options (the same
# ssh or launch agent, the same networks), start `true` on HOST in time? A
# host that is down or cut off never answers; the timeout ends the wait.
cifar_probe_host() {
  local probe=(mpirun --host "$1" -np 1)
  cifar_mpirun_site_options
  timeout -k 5 "$CIFAR_PROBE_TIMEOUT" "${probe[@]}" "${CIFAR_MPIRUN_SITE[@]}" true
}

# cifar_drop_lost_hosts: prepare_restart for mpirun with a hostfile. Probes
# every host still in use; one that does not answer is left out from now on:
# CIFAR_HOSTFILE becomes <run folder>/hostfile.alive without it, and
# CIFAR_NP the ranks the remaining hosts hold — the lost hosts' share fewer,
# or at most the remaining slots where the hostfile gives them.
cifar_drop_lost_hosts() {
  local lost=() alive=() alive_slots=() i host known_slots=1 total=0 np failed=() reasons=()
  mapfile -t failed < <(cifar_failed_nodes)
  mapfile -t lost < <(cifar_unanswering cifar_probe_host "${CIFAR_HOSTS[@]}")
  for host in "${CIFAR_HOSTS[@]}"; do
    [[ " ${failed[*]} " != *" ${host%%.*} "* || " ${lost[*]} " == *" $host "* ]] || lost+=("$host")
  done
  if ((${#lost[@]} == 0)); then
    CIFAR_RESTART_NOTE="no host lost (all ${#CIFAR_HOSTS[@]} answer a probe): again $CIFAR_NP rank(s)"
    return 0
  fi
  for i in "${!CIFAR_HOSTS[@]}"; do
    host=${CIFAR_HOSTS[i]}
    [[ " ${lost[*]} " == *" $host "* ]] && continue
    alive+=("$host")
    alive_slots+=("${CIFAR_HOST_SLOTS[i]}")
    if [[ -n ${CIFAR_HOST_SLOTS[i]} ]]; then total=$((total + CIFAR_HOST_SLOTS[i])); else known_slots=0; fi
  done
  if ((${#alive[@]} == 0)); then
    cifar_log "lost every host: none of $(cifar_join , "${CIFAR_HOSTS[@]}") ran a probe within" \
      "${CIFAR_PROBE_TIMEOUT} s or passed its node checks: not restarting"
    return 1
  fi
  if ((known_slots)); then
    np=$((CIFAR_NP < total ? CIFAR_NP : total))
  else
    np=$((CIFAR_NP * ${#alive[@]} / ${#CIFAR_HOSTS[@]}))
    ((np > 0)) || np=1
  fi
  CIFAR_HOSTFILE=$CIFAR_RUN_DIR/hostfile.alive
  for i in "${!alive[@]}"; do
    echo "${alive[i]}${alive_slots[i]:+ slots=${alive_slots[i]}}"
  done >"$CIFAR_HOSTFILE"
  for host in "${CIFAR_HOSTS[@]}"; do  # in the hostfile's order
    if [[ " ${lost[*]} " != *" $host "* ]]; then
      continue
    elif [[ " ${failed[*]} " == *" ${host%%.*} "* ]]; then
      reasons+=("$host (failed its node checks)")
    else
      reasons+=("$host (no answer to a probe within ${CIFAR_PROBE_TIMEOUT} s)")
    fi
  done
  CIFAR_RESTART_NOTE="lost host(s) $(cifar_join ', ' "${reasons[@]}");"
  CIFAR_RESTART_NOTE+=" continuing on $(cifar_join , "${alive[@]}") with $np rank(s) instead of $CIFAR_NP ($CIFAR_HOSTFILE)"
  CIFAR_HOSTS=("${alive[@]}")
  CIFAR_HOST_SLOTS=("${alive_slots[@]}")
  CIFAR_NP=$np
}

# ---- Slurm (jobs/run_cifar.sh) -----------------------------------------------
# With `#SBATCH --no-kill` a failed node does not end the allocation: Slurm
# removes it from the job, and new steps may run on the nodes that remain.

# cifar_slurm_job_field FIELD: one field of this job's `scontrol show job`
# (JobState, Restarts, NodeList, ...); empty when Slurm does not answer.
cifar_slurm_job_field() {
  scontrol show job "$SLURM_JOB_ID" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$1=//p" | head -n 1 || true
}

# cifar_slurm_tasks_per_node: the job's tasks per node (the layout a restart
# keeps on fewer nodes).
cifar_slurm_tasks_per_node() {
  if [[ -n ${SLURM_NTASKS_PER_NODE:-} ]]; then
    echo "$SLURM_NTASKS_PER_NODE"
  elif [[ ${SLURM_TASKS_PER_NODE:-} =~ ^([0-9]+)(\(x[0-9]+\))?$ ]]; then  # "8(x4)": 8 on each of 4 nodes
    echo "${BASH_REMATCH[1]}"
  else  # uneven: the average, rounded down
    echo $((SLURM_NTASKS / ${SLURM_JOB_NUM_NODES:-${SLURM_NNODES:-1}}))
  fi
}

# cifar_slurm_job_nodes: the job's nodes now, one a line. Slurm removes a
# failed node from a --no-kill job's NodeList (SLURM_JOB_NODELIST keeps the
# first allocation).
cifar_slurm_job_nodes() {
  local list
  list=$(cifar_slurm_job_field NodeList)
  [[ -n $list && $list != "(null)" ]] || list=$SLURM_JOB_NODELIST
  scontrol show hostnames "$list"
}

# cifar_slurm_unusable_nodes NODE...: "NODE STATE" for each node that Slurm
# reports down, drained or draining, failing, or not responding (a state
# ending in '*'): the controller notices a dead node only after
# SlurmdTimeout (default 300 s), hence the probes as well.
cifar_slurm_unusable_nodes() {
  sinfo -h -N -n "$(cifar_join , "$@")" -o '%N %T' 2>/dev/null |
    awk '$2 ~ /[*]$/ || $2 ~ /^(down|drain|fail|inval|unknown|power|future|reboot)/ { print $1, $2 }' | sort -u
}

# cifar_slurm_probe_node NODE: can a step start `true` on NODE in time?
# --overlap: the failed step may still be completing on the node's CPUs.
cifar_slurm_probe_node() {
  timeout -k 5 "$CIFAR_PROBE_TIMEOUT" srun --overlap --mpi=none --nodes=1 --ntasks=1 --ntasks-per-node=1 \
    --nodelist="$1" --quiet true
}

# cifar_slurm_drop_lost_nodes: prepare_restart under Slurm. The nodes still
# in use that Slurm removed from the job, reports unusable, or that do not
# run a probe are left out from now on: CIFAR_SLURM_NODES keeps the others,
# CIFAR_SLURM_LOST gathers the lost ones, and cifar_slurm_step_layout gives
# the launcher the smaller layout (the same tasks per node). A node named by
# cifar_failed_nodes is left out without a probe. When no node remains it
# sets CIFAR_SLURM_ALL_LOST and returns non-zero.
CIFAR_SLURM_NODES=()
CIFAR_SLURM_LOST=()
CIFAR_SLURM_ALL_LOST=
declare -A CIFAR_SLURM_LOST_WHY=()
cifar_slurm_drop_lost_nodes() {
  local current=() answering=() alive=() node state notes=()
  local -A why=()
  ((${#CIFAR_SLURM_NODES[@]})) || mapfile -t CIFAR_SLURM_NODES < <(scontrol show hostnames "$SLURM_JOB_NODELIST")
  while read -r state; do  # a node name here
    for node in "${CIFAR_SLURM_NODES[@]}"; do
      [[ ${node%%.*} != "$state" ]] || why[$node]="failed its node checks (exit code 7)"
    done
  done < <(cifar_failed_nodes)
  mapfile -t current < <(cifar_slurm_job_nodes)
  if ((${#current[@]})); then
    for node in "${CIFAR_SLURM_NODES[@]}"; do
      [[ " ${current[*]} " == *" $node "* || -n ${why[$node]:-} ]] || why[$node]="removed from the job by Slurm"
    done
  fi
  while read -r node state; do
    [[ -n $node && -z ${why[$node]:-} ]] && why[$node]="Slurm reports it $state"
  done < <(cifar_slurm_unusable_nodes "${CIFAR_SLURM_NODES[@]}")
  for node in "${CIFAR_SLURM_NODES[@]}"; do
    [[ -n ${why[$node]:-} ]] || answering+=("$node")
  done
  while read -r node; do
    why[$node]="no answer to a probe within ${CIFAR_PROBE_TIMEOUT} s"
  done < <(cifar_unanswering cifar_slurm_probe_node "${answering[@]}")
  for node in "${CIFAR_SLURM_NODES[@]}"; do
    if [[ -n ${why[$node]:-} ]]; then
      notes+=("$node (${why[$node]})")
      CIFAR_SLURM_LOST+=("$node")
      CIFAR_SLURM_LOST_WHY[$node]=${why[$node]}
    else
      alive+=("$node")
    fi
  done
  if ((${#notes[@]} == 0)); then
    CIFAR_RESTART_NOTE="no node lost (all ${#CIFAR_SLURM_NODES[@]} usable): again $(cifar_slurm_ntasks) task(s)"
    return 0
  fi
  if ((${#alive[@]} == 0)); then
    cifar_log "lost every node of the job: $(cifar_join ', ' "${notes[@]}"): not restarting here"
    # shellcheck disable=SC2034  # read by the launcher (jobs/run_cifar.sh)
    CIFAR_SLURM_ALL_LOST=1
    return 1
  fi
  local before
  before=$(cifar_slurm_ntasks)
  CIFAR_SLURM_NODES=("${alive[@]}")
  CIFAR_RESTART_NOTE="lost node(s) $(cifar_join ', ' "${notes[@]}"); continuing on $(cifar_join , "${alive[@]}")"
  CIFAR_RESTART_NOTE+=" with $(cifar_slurm_ntasks) task(s) instead of $before"
}

# cifar_slurm_requeue_without_lost: requeues the job; first adds the nodes this job
# lost or that failed their checks (CIFAR_SLURM_LOST) to the job's excluded
# nodes, keeping those excluded already, so that the next start runs
# elsewhere; logs each node with its reason. Slurm changes ExcNodeList only
# of a pending job, so a running one is first requeued held, then released.
# Returns non-zero when the job could not be requeued (it then stays as it is).
cifar_slurm_requeue_without_lost() {
  local old new=() node merged
  if ((${#CIFAR_SLURM_LOST[@]} == 0)); then
    scontrol requeue "$SLURM_JOB_ID"
    return
  fi
  old=$(cifar_slurm_job_field ExcNodeList)
  [[ $old != "(null)" ]] || old=
  [[ -z $old ]] || mapfile -t new < <(scontrol show hostnames "$old")
  for node in "${CIFAR_SLURM_LOST[@]}"; do
    [[ " ${new[*]} " == *" $node "* ]] || new+=("$node")
    cifar_log "excluding node $node from the requeued job: ${CIFAR_SLURM_LOST_WHY[$node]:-lost}"
  done
  merged=$(cifar_join , "${new[@]}")
  scontrol requeuehold "$SLURM_JOB_ID" || return 1
  if scontrol update JobId="$SLURM_JOB_ID" ExcNodeList="$merged"; then
    cifar_log "job $SLURM_JOB_ID: scontrol update JobId=$SLURM_JOB_ID ExcNodeList=$merged"
  else
    cifar_log "scontrol update JobId=$SLURM_JOB_ID ExcNodeList=$merged failed: the job may start on those nodes again"
  fi
  scontrol release "$SLURM_JOB_ID"
}

# cifar_slurm_requeued_by_slurm: whether Slurm itself has put this job back
# in the queue while this incarnation runs (`scontrol requeue`, or preemption
# with PreemptMode=REQUEUE). Slurm counts the requeue at once: the job's
# Restarts= is then above this incarnation's SLURM_RESTART_COUNT. It ends
# the incarnation with SIGTERM (SIGKILL after KillWait) and starts the job
# again by itself, so the job scripts must neither requeue it a second time
# nor restart the step in place.
cifar_slurm_requeued_by_slurm() {
  local restarts
  restarts=$(cifar_slurm_job_field Restarts)
  [[ $restarts =~ ^[0-9]+$ ]] && ((restarts > ${SLURM_RESTART_COUNT:-0}))
}

# cifar_slurm_ending_job: whether Slurm itself is ending this incarnation
# (scancel, scontrol requeue, a time limit, preemption): the job is no longer
# RUNNING, or was requeued, and Slurm sends SIGTERM to every process of
# every step on its own, the ranks inside Pyxis containers included. SIGTERM
# to the batch shell alone (`scancel --signal=TERM --batch`,
# `--signal=B:TERM@...`) leaves the job RUNNING. Without an answer from
# Slurm: not known to end.
cifar_slurm_ending_job() {
  local state
  state=$(cifar_slurm_job_field JobState)
  [[ -n $state && $state != RUNNING ]] || cifar_slurm_requeued_by_slurm
}

# cifar_slurm_ntasks: the tasks of the next step.
cifar_slurm_ntasks() {
  if ((${#CIFAR_SLURM_LOST[@]})); then
    echo $((${#CIFAR_SLURM_NODES[@]} * $(cifar_slurm_tasks_per_node)))
  else
    echo "${SLURM_NTASKS:-?}"
  fi
}

# shellcheck disable=SC2034  # CIFAR_STEP_LAYOUT is the launcher's (jobs/run_cifar.sh)
# cifar_slurm_step_layout srun|mpirun: sets CIFAR_STEP_LAYOUT, the launcher's
# options that place the step: none while no node was lost (the whole
# allocation, as Slurm laid it out), else the remaining nodes with the same
# tasks per node.
cifar_slurm_step_layout() {
  CIFAR_STEP_LAYOUT=()
  ((${#CIFAR_SLURM_LOST[@]})) || return 0
  local per_node node hosts=()
  per_node=$(cifar_slurm_tasks_per_node)
  case $1 in
    srun)
      CIFAR_STEP_LAYOUT=(--nodes="${#CIFAR_SLURM_NODES[@]}" --ntasks="$(cifar_slurm_ntasks)"
        --ntasks-per-node="$per_node" --exclude="$(cifar_join , "${CIFAR_SLURM_LOST[@]}")")
      ;;
    mpirun)
      for node in "${CIFAR_SLURM_NODES[@]}"; do hosts+=("$node:$per_node"); done
      CIFAR_STEP_LAYOUT=(--host "$(cifar_join , "${hosts[@]}")")
      ;;
  esac
}
