#!/usr/bin/env bash
# program.check_env.placement: `cifar_mpi --check-env` judges real launches.
#   1. 2 ranks bound to one core each (mpirun --bind-to core) with --threads 2,
#      OMP_NUM_THREADS=8 (no warning: nothing reads it), NCCL_SOCKET_IFNAME and NCCL_IB_HCA naming nothing that
#      exists: a warning with its fix for each, exit 0 ("ready to train").
#   2. The same with --strict: exit 1, no "ready to train".
#   3. 2 ranks bound to the same core (--cpu-set 0): "overlapping cores".
#   4. One unbound rank, OMP_NUM_THREADS=1, no NCCL settings, --device cpu:
#      nothing to warn about on any machine; --strict passes.
#   5. One rank more than the node has CPUs (on nodes of up to 8): a warning.
# Every launch names the data file (E2E_DATA): --check-env opens it as
# training does. Needs MPIEXEC, CIFAR_MPI and E2E_DATA; 2 cores (ctest PROCESSORS 2).
set -euo pipefail
: "${MPIEXEC:?}" "${CIFAR_MPI:?}" "${E2E_DATA:?}"

mpi() {
  "$MPIEXEC" --allow-run-as-root --mca btl self,vader,tcp --mca btl_vader_single_copy_mechanism none "$@"
}
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
expect() {  # expect OUTPUT_FILE REGEX
  grep -Eq -- "$2" "$1" || { cat "$1"; fail "no line matching /$2/ in the output above"; }
}

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Only what each case sets: no NCCL settings from the caller's environment.
unset NCCL_SOCKET_IFNAME NCCL_IB_HCA CUDA_VISIBLE_DEVICES

echo "== 1. mis-placed: one core per rank, 2 threads, OMP_NUM_THREADS=8, missing NCCL interface and adapter"
rc=0
OMP_NUM_THREADS=8 NCCL_SOCKET_IFNAME=ib9 NCCL_IB_HCA=mlx5_9 \
  mpi -x OMP_NUM_THREADS -x NCCL_SOCKET_IFNAME -x NCCL_IB_HCA -np 2 --bind-to core \
  "$CIFAR_MPI" --data "$E2E_DATA" --check-env --backend mpi --device cpu --threads 2 >"$out/1.txt" 2>&1 || rc=$?
cat "$out/1.txt"
((rc == 0)) || fail "warnings alone must not fail --check-env (exit $rc)"
expect "$out/1.txt" '^placement warning: host [^,]+, rank 0: runs 2 intra-op threads on 1 core\(s\) [0-9]+\. Fix: use at most 1 thread\(s\) per rank .*mpirun --map-by slot:PE=2 --bind-to core'
expect "$out/1.txt" '^placement warning: host [^,]+, rank 1: runs 2 intra-op threads on 1 core\(s\)'
# cifar_mpi sets its thread pools from its options: OMP_NUM_THREADS is no placement problem.
if grep -q '^placement warning: .*OMP_NUM_THREADS' "$out/1.txt"; then fail "a placement warning about OMP_NUM_THREADS, which nothing reads"; fi
expect "$out/1.txt" '^placement warning: host [^,]+, ranks 0-1: NCCL_SOCKET_IFNAME=ib9: no network interface here matches ib9 \(interfaces: .*lo.*\); NCCL.s bootstrap will find no interface and fail\. Fix: '
expect "$out/1.txt" '^placement warning: host [^,]+, ranks 0-1: NCCL_IB_HCA=mlx5_9 names InfiniBand adapters, but this host has none .*Fix: unset NCCL_IB_HCA'
expect "$out/1.txt" '^placement: 4 warning\(s\)$'
expect "$out/1.txt" '^ready to train$'

echo "== 2. the same with --strict"
rc=0
OMP_NUM_THREADS=8 NCCL_SOCKET_IFNAME=ib9 mpi -x OMP_NUM_THREADS -x NCCL_SOCKET_IFNAME -np 2 --bind-to core \
  "$CIFAR_MPI" --data "$E2E_DATA" --check-env --strict --backend mpi --device cpu --threads 2 >"$out/2.txt" 2>&1 || rc=$?
cat "$out/2.txt"
((rc == 1)) || fail "--strict with warnings must exit 1 (got $rc)"
expect "$out/2.txt" '^--strict: 3 placement warning\(s\) count as errors$'
if grep -q '^ready to train' "$out/2.txt"; then fail "--strict with warnings printed 'ready to train'"; fi

echo "== 3. two ranks bound to the same core"
OMP_NUM_THREADS=1 mpi -x OMP_NUM_THREADS -np 2 --cpu-set 0 --bind-to core:overload-allowed \
  "$CIFAR_MPI" --data "$E2E_DATA" --check-env --backend mpi --device cpu >"$out/3.txt" 2>&1 || { cat "$out/3.txt"; fail "exit $?"; }
cat "$out/3.txt"
expect "$out/3.txt" '^placement warning: host [^,]+, ranks 0-1: are bound to overlapping cores \(rank 0: 0; rank 1: 0\) and compete for them\. Fix: give each rank its own cores: mpirun --map-by slot:PE=[0-9]+ --bind-to core'

echo "== 4. nothing to warn about: --strict passes"
OMP_NUM_THREADS=1 mpi -x OMP_NUM_THREADS -np 1 --bind-to none "$CIFAR_MPI" --data "$E2E_DATA" --check-env --strict --device cpu \
  >"$out/4.txt" 2>&1 || { cat "$out/4.txt"; fail "a clean launch failed --check-env --strict"; }
cat "$out/4.txt"
expect "$out/4.txt" '^placement: no problems found$'
expect "$out/4.txt" '^ready to train$'
echo "== 5. more ranks than CPUs"
cpus=$(getconf _NPROCESSORS_ONLN)
if ((cpus <= 8)); then
  OMP_NUM_THREADS=1 mpi -x OMP_NUM_THREADS -np $((cpus + 1)) --oversubscribe --bind-to none \
    "$CIFAR_MPI" --data "$E2E_DATA" --check-env --device cpu >"$out/5.txt" 2>&1 || { cat "$out/5.txt"; fail "exit $?"; }
  cat "$out/5.txt"
  expect "$out/5.txt" "^placement warning: host [^,]+, ranks 0-$cpus: $((cpus + 1)) ranks run on a node with $cpus CPU core\\(s\\), so they take turns on them\\. Fix: run at most $cpus rank\\(s\\) per node"
  expect "$out/5.txt" '^ready to train$'
else
  echo "skipped: $cpus CPUs"
fi
echo "PASS: 6 warnings with fixes for a mis-placed launch, exit 1 under --strict, shared cores found, a clean launch passes, more ranks than CPUs found"
