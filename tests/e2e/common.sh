# shellcheck shell=bash
# Shared helpers of the end-to-end test scripts (sourced).
set -euo pipefail
WORK=${1:?usage: $0 WORK_DIR}
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"

# mpirun as the tests need it: root allowed (CI), more ranks than cores.
mpi() {
  local np=$1
  shift
  "$MPIEXEC" --allow-run-as-root --oversubscribe --bind-to none --mca btl self,vader,tcp \
    --mca btl_vader_single_copy_mechanism none -np "$np" "$@"
}

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# run_folder_of LOG: the run folder a jobs/local_mpirun.sh launch printed in LOG.
run_folder_of() { sed -n 's/.*run folder \(.*\); to resume it.*/\1/p' "$1"; }

# compare A B RTOL WHAT: compare_models A B --rtol RTOL, launched once (it
# loads LibTorch): its last line shown, its exit code judged; fails with WHAT.
compare() {
  local out rc=0
  out=$("$COMPARE_MODELS" "$1" "$2" --rtol "$3") || rc=$?
  tail -n 1 <<<"$out"
  ((rc == 0)) || fail "$4"
}

# Side by side: `background LOG COMMAND...` starts COMMAND (a function of the
# script or a program) in the background, its output in LOG, at most 4 at a
# time; `wait_background WHAT` waits for all of them, shows each LOG in the
# order started, and fails naming WHAT when any failed. For independent
# launches that spend their time starting up (mpirun, loading LibTorch)
# rather than computing: one after the other, that wait adds up.
# Each gets its own Open MPI session folder (orte_tmpdir_base): mpiruns that
# start together race to create and remove the shared /tmp/ompi.HOST.UID
# ("mkdir ... File exists", orte_init failed).
background_pids=()
background_logs=()
background_tmp=()
background() {
  local log=$1 tmp
  shift
  while (($(jobs -rp | wc -l) >= 4)); do wait -n || true; done
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/cifar-ompi.XXXXXX")
  OMPI_MCA_orte_tmpdir_base=$tmp "$@" >"$log" 2>&1 &
  background_pids+=("$!")
  background_logs+=("$log")
  background_tmp+=("$tmp")
}
wait_background() {
  local i failed=0
  for i in "${!background_pids[@]}"; do
    wait "${background_pids[$i]}" || failed=1
    cat "${background_logs[$i]}"
    rm -rf "${background_tmp[$i]}"
  done
  background_pids=()
  background_logs=()
  background_tmp=()
  ((failed == 0)) || fail "$1 (see above)"
}
