#!/usr/bin/env bash
# tests/jobs/fake_cifar_mpi.sh — a stand-in for cifar_mpi (or for the launcher
# srun / mpirun) in the tests of the job scripts' restarts, installed under
# the name it stands in for. Each launch appends its name and arguments as a
# line to $FAKE_LAUNCHES, then ends as the next word of $FAKE_EXITS says (the
# last word repeats): a number is an exit code, "kill9" kills itself with
# SIGKILL. A launcher's probe (`... true`) is answered at once: it fails for
# the nodes named in $FAKE_DEAD_NODES (--nodelist=NODE or --host NODE), an
# entry NODE@K only once K launches were made. $FAKE_TOUCH names a file that
# each launch creates in the folder of its --metrics (a run that wrote).
# $FAKE_FAILED_NODES: entries NODE@K make launch K write NODE to
# $CIFAR_FAILED_NODES_FILE, as cifar_mpi does for a node that failed its checks.
# `srun --version` answers "slurm $FAKE_SLURM_VERSION" (default 22.05.8) and
# is no launch.
set -euo pipefail

if [[ $* == --version ]]; then
  echo "slurm ${FAKE_SLURM_VERSION:-22.05.8}"
  exit 0
fi
if [[ ${!#} == true ]]; then
  made=0
  [[ ! -f ${FAKE_LAUNCHES:-} ]] || made=$(wc -l <"$FAKE_LAUNCHES")
  for entry in ${FAKE_DEAD_NODES:-}; do
    dead=${entry%@*}
    [[ $entry != *@* ]] || ((made >= ${entry#*@})) || continue
    for word in "$@"; do
      [[ $word != "--nodelist=$dead" && $word != "$dead" ]] || exit 1
    done
  done
  exit 0
fi
echo "${0##*/} $*" >>"${FAKE_LAUNCHES:?}"
if [[ -n ${FAKE_TOUCH:-} ]]; then
  args=("$@")
  for i in "${!args[@]}"; do
    [[ ${args[i]} != --metrics ]] || touch "$(dirname "${args[i + 1]}")/$FAKE_TOUCH"
  done
fi
n=$(wc -l <"$FAKE_LAUNCHES")
for entry in ${FAKE_FAILED_NODES:-}; do
  [[ ${entry#*@} != "$n" ]] || echo "${entry%@*}" >>"${CIFAR_FAILED_NODES_FILE:?}"
done
read -r -a exits <<<"${FAKE_EXITS:-0}"
((n <= ${#exits[@]})) || n=${#exits[@]}
case ${exits[n - 1]} in
  kill9) kill -9 $$ ;;
  *) exit "${exits[n - 1]}" ;;
esac
