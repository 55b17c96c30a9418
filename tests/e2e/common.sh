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
