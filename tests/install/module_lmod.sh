#!/usr/bin/env bash
# install.module_lmod: Debian's Lmod loads the installed module files, Lua
# (share/modulefiles) and Tcl (share/modules/modulefiles): PATH reaches the
# installed programs, CIFAR_MPI_HOME and HDF5_USE_FILE_LOCKING are set, and
# the program found on PATH passes `--check-env --strict` and trains a few
# steps from another folder with `--config default` and CIFAR_DATA; unloading
# takes it all back.
# shellcheck source=tests/install/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
lmod_init=${LMOD_INIT:-/usr/share/lmod/lmod/init/bash}
[[ -r $lmod_init ]] || fail "$lmod_init missing: install Debian's lmod (bash tools/setup.sh)"
set +u  # Lmod's shell functions read unset variables
# shellcheck source=/dev/null
source "$lmod_init"
set -u
unset CIFAR_MPI_HOME CIFAR_DATA HDF5_USE_FILE_LOCKING
cd "$WORK"
"$PREFIX/bin/cifar_pack" --synthetic 256 --test-count 64 --seed 1 --output "$WORK/cifar10.h5"

# load_and_run MODULEPATH_DIR KIND
load_and_run() {
  local dir=$1 kind=$2 log=$WORK/$2.log
  echo "== $kind module file in $dir"
  module use "$dir"
  module load cifar_mpi
  module list 2>&1 | tee "$log"
  expect "$log" "cifar_mpi/$VERSION"
  [[ $(command -v cifar_mpi) == "$PREFIX/bin/cifar_mpi" ]] || fail "$kind: cifar_mpi on PATH is '$(command -v cifar_mpi)'"
  [[ $(command -v plot_metrics) == "$PREFIX/bin/plot_metrics" ]] || fail "$kind: plot_metrics not on PATH"
  [[ $CIFAR_MPI_HOME == "$PREFIX" ]] || fail "$kind: CIFAR_MPI_HOME=$CIFAR_MPI_HOME, expected $PREFIX"
  [[ $HDF5_USE_FILE_LOCKING == FALSE ]] || fail "$kind: HDF5_USE_FILE_LOCKING=$HDF5_USE_FILE_LOCKING"
  mkdir -p "$WORK/$kind" && cd "$WORK/$kind"
  CIFAR_DATA=$WORK/cifar10.h5 cifar_mpi --check-env --strict --device cpu 2>&1 | tee -a "$log"
  expect "$log" '^placement: no problems found$'
  expect "$log" '^ready to train$'
  CIFAR_DATA=$WORK/cifar10.h5 mpi 2 -x CIFAR_DATA cifar_mpi --config default --epochs 1 --max-steps 2 \
    --batch-size 16 --log-every 1 --eval false 2>&1 | tee -a "$log"
  expect "$log" "^configuration \(file $PREFIX/share/cifar_mpi/config/default.ini, command line wins\):$"
  expect "$log" '^Epoch: 0 \| Batch: 1/'
  [[ -s ddp_model.pth ]] || fail "$kind: no ddp_model.pth in $PWD"
  module unload cifar_mpi
  module unuse "$dir"
  [[ -z ${CIFAR_MPI_HOME:-} && -z ${HDF5_USE_FILE_LOCKING:-} ]] || fail "$kind: unload left CIFAR_MPI_HOME or HDF5_USE_FILE_LOCKING set"
  # Lmod also drops duplicate PATH entries, so PATH need not equal what it was.
  [[ :$PATH: != *":$PREFIX/bin:"* ]] || fail "$kind: unload left $PREFIX/bin on PATH=$PATH"
  cd "$WORK"
}

load_and_run "$PREFIX/share/modulefiles" lua
load_and_run "$PREFIX/share/modules/modulefiles" tcl
echo "PASS: Lmod $(module --version 2>&1 | grep -oE 'Version [0-9.]+' | head -n1) loaded the Lua and Tcl module files;" \
  "the program on PATH checked its placement and trained"
