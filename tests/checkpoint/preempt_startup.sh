#!/usr/bin/env bash
# A preemption signal in the first moments of a job: SIGUSR1 reaches rank 1
# of 2 as soon as its handler exists (cifar_mpi installs it first thing in
# main(), before MPI starts; the test watches SigCgt in /proc/PID/status).
# Every rank stops cleanly before the first step with exit code 3 and no
# MPI_Abort; no rank dies by the signal, and nothing is written (nothing was
# trained).
# shellcheck source=tests/checkpoint/lib.sh
source "$(dirname "$0")/lib.sh"

marker=$WORK/early.pth  # unique on this machine: finds this run's ranks
run 2 early.log "${quiet[@]}" --batch-size 32 --epochs 1 --output "$marker" --checkpoint-dir ckpt &
launcher=$!
usr1_caught() { (($(printf '%d' "0x$(awk '/^SigCgt:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0)") & 0x200)); }
rank1=
for _ in $(seq 4000); do
  pid=$(rank_pid_of "$marker" 1)
  [[ -n $pid ]] && usr1_caught "$pid" && rank1=$pid && break
  kill -0 $launcher 2>/dev/null || break
  sleep 0.005
done
[[ -n $rank1 ]] || { wait $launcher; cat early.log; fail "rank 1 with its SIGUSR1 handler not found"; }
kill -s USR1 "$rank1"
echo "sent SIGUSR1 to rank 1 (pid $rank1) as soon as its handler was installed"
expect_preempted $launcher early.log
expect_in early.log 'preempted by SIGUSR1 during start-up, before the first step: nothing trained, nothing new to save; exit code 3'
grep -m1 'preempted by' early.log
[[ ! -e $marker && -z $(ls -A ckpt 2>/dev/null) ]] || fail "files were written: $(ls -A ckpt 2>/dev/null) $marker"
echo PASS
