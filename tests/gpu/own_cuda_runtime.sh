#!/usr/bin/env bash
# A CUDA build loads its own CUDA runtime and NCCL, the files it was linked
# with (its torch wheels'), even when LD_LIBRARY_PATH puts others first, as a
# site's `module load cuda/12.x` does: copies of both in a folder on
# LD_LIBRARY_PATH are not the files --check-env names.
# Usage: own_cuda_runtime.sh WORK (CIFAR_MPI, E2E_DATA in the environment)
# shellcheck source=tests/e2e/common.sh
source "$(dirname "$0")/../e2e/common.sh"

# loaded LOG: the runtime's and NCCL's files --check-env names, one a line
# ("runtime 12.8 (built for 12.8) from FILE;", "NCCL: 2.27.5 (built for 2.27.5) from FILE").
loaded() {
  sed -n -e 's/.*CUDA: .*runtime [0-9.]*\( (built for [0-9.]*)\)\{0,1\} from \([^;]*\);.*/\2/p' \
    -e 's/.*NCCL: .* from \(.*\)$/\1/p' "$1"
}
check_env() { "$CIFAR_MPI" --check-env --device cpu --backend mpi --data "$E2E_DATA" >"$1" 2>&1 || true; }

check_env own.log
mapfile -t own < <(loaded own.log)
((${#own[@]} == 2)) || { cat own.log; fail "--check-env named no CUDA runtime and NCCL files"; }
mkdir other
cp "${own[@]}" other/
LD_LIBRARY_PATH=$PWD/other check_env other.log
mapfile -t with_path < <(loaded other.log)
[[ ${with_path[*]} == "${own[*]}" ]] ||
  { cat other.log; fail "with LD_LIBRARY_PATH=$PWD/other the program loaded ${with_path[*]}, not its own ${own[*]}"; }
echo "LD_LIBRARY_PATH=$PWD/other (copies of $(basename "${own[0]}") and $(basename "${own[1]}")): still loads ${own[*]}"
echo PASS
