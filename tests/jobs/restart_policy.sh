#!/usr/bin/env bash
# tests/jobs/restart_policy.sh WORK — which failures jobs/local_mpirun.sh
# restarts, how often, after how long, with a stand-in program
# (fake_cifar_mpi.sh, launched by the real mpirun) whose exit codes the
# test chooses:
#   * exit code 2 (configuration), 5 (divergence) and 6 (bad input: a
#     missing data file, a --resume typo): never restarted;
#   * exit code 3 (preempted): passed on, not restarted;
#   * exit code 7 naming this machine as failing its node checks: not
#     restarted; exit code 7 naming no node: restarted;
#   * always exit code 1 with --max-restarts 2: exactly 3 launches, then exit 1;
#   * exit code 4, then killed by SIGKILL, then 1, then success: three
#     restarts, the first at once, then after 0.5 s and 1 s
#     (CIFAR_RESTART_BACKOFF before the second, doubling), each logged with
#     its cause, then exit 0; every launch resumes (--resume auto);
#   * with a 60 s back-off the first restart still runs at once; SIGTERM
#     during the second's back-off: no further launch, exit 3 at once;
#   * the waits themselves (cifar_backoff_seconds): 0, then the back-off,
#     doubling, at most 600 s;
#   * a bad --max-restarts or CIFAR_MAX_RESTARTS: refused before any launch;
#   * the options the script sets give way to the user's: CIFAR_DATA and
#     `-- --data X --output=Y` launch with X and Y only;
#   * a launch into the default run folder (runs/local-*) that leaves it
#     empty (refused, exit code 2, or 7 with only the failed-nodes file in
#     it) removes it; one that wrote a file keeps it.
# Then the arithmetic of a restart after a lost host or one that failed its
# node checks (cifar_read_hostfile,
# cifar_drop_lost_hosts with a stand-in probe): which hosts stay, their
# hostfile, and the ranks they hold.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/common.sh
source "$here/../e2e/common.sh"

build=$PWD/fake-build
mkdir -p "$build"
cp "$here/fake_cifar_mpi.sh" "$build/cifar_mpi"
export CIFAR_BUILD=$build CIFAR_CONFIG='' CIFAR_RUN_DIR=$PWD/run CIFAR_RESTART_BACKOFF=0 CIFAR_MAX_RESTARTS=3
export FAKE_LAUNCHES FAKE_EXITS FAKE_FAILED_NODES
unset CIFAR_MPIRUN_ARGS CIFAR_EXTRA_ARGS
# Open MPI's mpirun, once a rank has exited non-zero, signals the ranks still
# alive (SIGCONT, SIGTERM, SIGKILL) with odls_base_sigkill_timeout (1 s)
# between the signals, and pays those 2 s even when no rank is left: with a
# launch of one rank that fails on purpose, always. Each launch here is one
# rank, so there is no other rank to stop and the wait tests nothing; it was
# 16 of this test's 21 s (8 such launches).
export OMPI_MCA_odls_base_sigkill_timeout=0

# launch NAME EXITS [local_mpirun.sh options...]: one rank of the stand-in,
# ending as EXITS says; sets rc, log (NAME.log), launches and seconds.
launch() {
  local name=$1 start
  FAKE_LAUNCHES=$PWD/$name.launches FAKE_EXITS=$2 log=$name.log rc=0 start=$(date +%s.%N)
  bash "$SOURCE_DIR/jobs/local_mpirun.sh" -n 1 -c 1 "${@:3}" >"$log" 2>&1 || rc=$?
  seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  launches=0
  [[ ! -f $FAKE_LAUNCHES ]] || launches=$(wc -l <"$FAKE_LAUNCHES")
  echo "$name (exits: $2): exit code $rc after $launches launch(es), ${seconds} s"
}
# expect RC LAUNCHES [REGEX...]: the last launch's outcome, and lines of its log.
expect() {
  local want_rc=$1 want_launches=$2 re
  shift 2
  [[ $rc == "$want_rc" && $launches == "$want_launches" ]] ||
    { cat "$log"; fail "$log: exit code $rc after $launches launch(es), expected $want_rc after $want_launches"; }
  for re in "$@"; do
    grep -Eq -- "$re" "$log" || { cat "$log"; fail "$log lacks /$re/"; }
  done
}
no_restart_in() { if grep -q 'restart 1 of' "$1"; then cat "$1"; fail "$1: restarted"; fi; }

launch config 2
expect 2 1 'step failed with exit code 2 \(configuration error\): not restarting, it would fail the same way'
no_restart_in config.log
launch diverged 5
expect 5 1 'step failed with exit code 5 \(diverged: a non-finite or exploded loss or gradient\): not restarting'
no_restart_in diverged.log
launch bad_input 6
expect 6 1 'step failed with exit code 6 \(bad input: a file the run reads is missing, damaged or another run.s\): not restarting, it would fail the same way'
no_restart_in bad_input.log
launch preempted 3
expect 3 1
no_restart_in preempted.log
# This machine failed its node checks (cifar_mpi named it): no restart here;
# a failed check that names no node (a full shared folder) restarts.
FAKE_FAILED_NODES=$(hostname)@1 launch node_check 7
expect 7 1 'step failed with exit code 7 \(a node failed its checks before training\)$' \
  'this machine \(.*\) failed its node checks: not restarting here'
launch node_check_no_node "7 0"
expect 0 2 'restart 1 of at most 3 in 0 s after exit code 7 \(a node failed its checks before training\); again 1 rank'

launch always_failing 1 --max-restarts 2
expect 1 3 'restart 1 of at most 2 in 0 s after exit code 1 \(runtime error, or another rank.s failure\); again 1 rank\(s\) on this machine; resuming from the start' \
  'restart 2 of at most 2 in 0 s after exit code 1' \
  'step failed with exit code 1 .*: not restarting, 2 restart\(s\) done of at most 2 \(--max-restarts, CIFAR_MAX_RESTARTS\)'
grep -m3 -E 'restart [0-9] of|not restarting' always_failing.log

CIFAR_RESTART_BACKOFF=0.5
launch recovering "4 kill9 1 0"
CIFAR_RESTART_BACKOFF=0
expect 0 4 'restart 1 of at most 3 in 0 s after exit code 4 \(communication timeout' \
  'restart 2 of at most 3 in 0.5 s after exit code [0-9]+ \(killed by signal 9 \(SIGKILL\)|the launcher.s own failure' \
  'restart 3 of at most 3 in 1 s after exit code 1 '
grep -E 'restart [0-9] of' recovering.log
awk -v s="$seconds" 'BEGIN { exit !(s >= 1.5) }' || fail "the back-offs of 0.5 s and 1 s took only $seconds s in all"
(($(grep -c -- '--resume auto' recovering.launches) == 4)) || { cat recovering.launches; fail "not every launch resumes"; }

# A 60 s back-off: the first restart runs at once all the same (the second
# launch and its failure come well within those 60 s); SIGTERM while the
# script waits for the second: no further launch, exit code 3.
FAKE_LAUNCHES=$PWD/term.launches FAKE_EXITS=1 CIFAR_RESTART_BACKOFF=60 \
  bash "$SOURCE_DIR/jobs/local_mpirun.sh" -n 1 -c 1 >term.log 2>&1 &
launcher=$!
start=$SECONDS
for _ in $(seq 300); do
  grep -q 'restart 2 of' term.log && break
  sleep 0.1
done
grep -q 'restart 1 of at most 3 in 0 s' term.log || { cat term.log; fail "the first restart did not run at once"; }
grep -q 'restart 2 of at most 3 in 60 s' term.log || { cat term.log; fail "no second restart announced within 30 s"; }
echo "a 60 s back-off: the second launch failed $((SECONDS - start)) s after the start, the first restart without waiting"
start=$SECONDS
kill -TERM "$launcher"
rc=0
wait "$launcher" || rc=$?
log=term.log launches=$(wc -l <term.launches)
expect 3 2 'SIGTERM before the restart: not restarting; the run folder resumes from the start \(no checkpoint yet\) \(exit code 3\)'
((SECONDS - start < 10)) || fail "SIGTERM during the back-off took $((SECONDS - start)) s to end the script"
echo "SIGTERM during a 60 s back-off: exit code 3 after $((SECONDS - start)) s, no third launch"

# Bad settings are refused before anything runs.
launch bad_option 0 --max-restarts many
expect 2 0 'must be a whole number, 0 for none \(got .many.\)'
CIFAR_RESTART_BACKOFF=soon
launch bad_backoff 0
CIFAR_RESTART_BACKOFF=0
expect 2 0 'CIFAR_RESTART_BACKOFF must be a number of seconds \(got .soon.\)'
CIFAR_STOP_HOLD=long launch bad_hold 0
expect 2 0 'CIFAR_STOP_HOLD must be a whole number of seconds \(got .long.\)'

# The user's options win over the script's own: each is given once.
touch env.h5 user.h5
CIFAR_DATA=$PWD/env.h5
launch user_options 0 -- --data user.h5 --output=user.pth
unset CIFAR_DATA
expect 0 1
line=$(cat user_options.launches)
[[ $line == *' --data user.h5 --output=user.pth'* && $line != *env.h5* && $line != *'--output '* &&
  $line == *"--metrics $CIFAR_RUN_DIR/metrics.jsonl"* && $line == *'--resume auto'* ]] ||
  fail "the user's --data and --output should replace the script's: $line"
echo "user options win: $line"

# The default run folder, in a fresh working folder: removed again when a
# launch leaves it empty, kept when the run wrote into it.
mkdir -p fresh
(
  cd fresh || exit 1
  unset CIFAR_RUN_DIR
  FAKE_LAUNCHES=$PWD/refused.launches FAKE_EXITS=2 bash "$SOURCE_DIR/jobs/local_mpirun.sh" -n 1 -c 1 >refused.log 2>&1
) && fail "the refused launch exited 0"
(cd fresh && unset CIFAR_RUN_DIR && bash "$SOURCE_DIR/jobs/local_mpirun.sh" -n 1 -c 1 --max-restarts x >bad.log 2>&1) &&
  fail "a bad --max-restarts was accepted"
# Refused by its node checks: the failed-nodes file alone does not keep the folder.
(
  cd fresh || exit 1
  unset CIFAR_RUN_DIR
  FAKE_LAUNCHES=$PWD/node.launches FAKE_EXITS=7 FAKE_FAILED_NODES=$(hostname)@1 \
    bash "$SOURCE_DIR/jobs/local_mpirun.sh" -n 1 -c 1 >node.log 2>&1
) && fail "the launch refused by its node checks exited 0"
[[ -z $(find fresh/runs -mindepth 1 2>/dev/null) ]] ||
  fail "refused launches left run folders behind: $(find fresh/runs -mindepth 1)"
(
  cd fresh || exit 1
  unset CIFAR_RUN_DIR
  FAKE_LAUNCHES=$PWD/wrote.launches FAKE_EXITS=0 FAKE_TOUCH=metrics.jsonl \
    bash "$SOURCE_DIR/jobs/local_mpirun.sh" -n 1 -c 1 >wrote.log 2>&1
) || { cat fresh/wrote.log; fail "the launch that writes failed"; }
[[ $(find fresh/runs -name metrics.jsonl | wc -l) == 1 ]] || fail "the run folder of a launch that wrote was removed"
echo "run folders: none left by 3 refused launches (exit codes 2, 2, 7), kept by one that wrote"

# shellcheck source=jobs/cifar_common.sh
source "$SOURCE_DIR/jobs/cifar_common.sh"
# The waits before restarts 1-5: none, then the back-off, doubling, capped.
# backoffs BASE: the five waits with CIFAR_RESTART_BACKOFF=BASE.
backoffs() { CIFAR_RESTART_BACKOFF=$1; for k in 1 2 3 4 5; do cifar_backoff_seconds "$k"; done | paste -sd ' '; }
[[ $(backoffs 10) == "0 10 20 40 80" ]] || fail "waits with a 10 s back-off: $(backoffs 10)"
[[ $(backoffs 0.5) == "0 0.5 1 2 4" ]] || fail "waits with a 0.5 s back-off: $(backoffs 0.5)"
[[ $(backoffs 250) == "0 250 500 600 600" ]] || fail "waits with a 250 s back-off: $(backoffs 250)"
[[ $(backoffs 0) == "0 0 0 0 0" ]] || fail "waits with no back-off: $(backoffs 0)"
(unset CIFAR_RESTART_BACKOFF; cifar_check_restart_settings; [[ $(backoffs "$CIFAR_RESTART_BACKOFF") == "0 10 20 40 80" ]]) ||
  fail "the default waits are not 0 10 20 40 80 s"
echo "waits before restarts 1-5: $(backoffs 10) s (default), $(backoffs 250) s with 250 s (the cap)"

# The hosts a restart keeps: hostfile parsing and the ranks of the hosts left.
CIFAR_RUN_DIR=$PWD/hosts CIFAR_PROBE_TIMEOUT=3
mkdir -p "$CIFAR_RUN_DIR"
cifar_probe_host() { [[ " $lost_hosts " != *" $1 "* ]]; }  # the stand-in probe
# hosts FILE_TEXT NP LOST: reads the hostfile, loses LOST, keeps the result.
hosts() {
  printf '%b' "$1" >hostfile.txt
  cifar_read_hostfile hostfile.txt
  CIFAR_NP=$2 lost_hosts=$3 dropped=0
  cifar_drop_lost_hosts || dropped=$?
}
hosts 'a slots=2\n# rack 2:\nb slots=2   # spare\n\n  c slots=2\na slots=1\n' 7 b
[[ $dropped == 0 && ${CIFAR_HOSTS[*]} == "a c" && ${CIFAR_HOST_SLOTS[*]} == "3 2" && $CIFAR_NP == 5 ]] ||
  fail "losing b of a(3) b(2) c(2) with 7 ranks: hosts '${CIFAR_HOSTS[*]}' slots '${CIFAR_HOST_SLOTS[*]}' np $CIFAR_NP"
[[ $(cat "$CIFAR_HOSTFILE") == $'a slots=3\nc slots=2' ]] || fail "hostfile.alive: $(cat "$CIFAR_HOSTFILE")"
[[ $CIFAR_RESTART_NOTE == "lost host(s) b (no answer to a probe within 3 s); continuing on a,c with 5 rank(s) instead of 7 ($CIFAR_HOSTFILE)" ]] ||
  fail "note: $CIFAR_RESTART_NOTE"
echo "lost b of a(3) b(2) c(2), 7 ranks: $CIFAR_RESTART_NOTE"
hosts 'a slots=4\nb slots=4\n' 2 b
[[ ${CIFAR_HOSTS[*]} == a && $CIFAR_NP == 2 ]] || fail "2 ranks that fit on a: hosts ${CIFAR_HOSTS[*]}, np $CIFAR_NP"
hosts 'a\nb\nc\nd\n' 8 'b d'
[[ ${CIFAR_HOSTS[*]} == "a c" && $CIFAR_NP == 4 && $(cat "$CIFAR_HOSTFILE") == $'a\nc' ]] ||
  fail "no slots given, losing 2 of 4 hosts with 8 ranks: hosts ${CIFAR_HOSTS[*]}, np $CIFAR_NP"
hosts 'a slots=1\nb slots=1\n' 2 ''
[[ $dropped == 0 && $CIFAR_NP == 2 && $CIFAR_RESTART_NOTE == "no host lost (all 2 answer a probe): again 2 rank(s)" ]] ||
  fail "nothing lost: np $CIFAR_NP, note $CIFAR_RESTART_NOTE"
hosts 'a slots=1\nb slots=1\n' 2 'a b' >lost_all.log
if [[ $dropped != 1 ]] || ! grep -q 'lost every host: none of a,b ran a probe' lost_all.log; then
  cat lost_all.log
  fail "losing every host must stop the restarts"
fi
# A host cifar_mpi named as failing its node checks (exit code 7) is left out
# though it answers its probe; c is lost as well.
CIFAR_FAILED_NODES_FILE=$CIFAR_RUN_DIR/failed_nodes
echo b.cluster.example >"$CIFAR_FAILED_NODES_FILE"
hosts 'a slots=2
b slots=2
c slots=2
' 6 c
[[ ${CIFAR_HOSTS[*]} == a && $CIFAR_NP == 2 &&
  $CIFAR_RESTART_NOTE == "lost host(s) b (failed its node checks), c (no answer to a probe within 3 s);"* ]] ||
  fail "a failed node check: hosts ${CIFAR_HOSTS[*]}, np $CIFAR_NP, note $CIFAR_RESTART_NOTE"
rm "$CIFAR_FAILED_NODES_FILE"
echo "hostfile arithmetic: 6 cases pass"
echo PASS
