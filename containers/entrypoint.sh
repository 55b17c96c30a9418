#!/bin/bash
# /opt/cifar_mpi/bin/cifar-container-entry — the images' entry point (podman
# run, docker run, enroot start): finds the training data in the folder
# mounted at /data (CIFAR_DATA_DIR), gives temporary files a writable place and
# Open MPI a transport the runtime allows, then runs the command given.
#   /data/cifar10.h5 present           -> CIFAR_DATA=/data/cifar10.h5
#   only /data/cifar-10-binary.tar.gz  -> packed once with cifar_pack into
#                                         /data/cifar10.h5 (or, if /data is
#                                         read-only, $HOME/cifar10.h5)
# CIFAR_DATA set by the caller is kept as it is. Runtimes that start the
# command directly (ch-run, apptainer exec, srun --container-image) skip this
# script: give them --data (the job scripts do).
# A read-only container (docker run --read-only without --tmpfs /tmp) has no
# writable $TMPDIR or /tmp, where mpirun makes its session folder (else a page
# of errors): temporary files then go to /dev/shm, with a one-line note, or,
# without a writable /dev/shm either, the script ends saying what to add.
set -euo pipefail

# writable_tmp: $TMPDIR, else /tmp, else /dev/shm (exported as TMPDIR), else
# ends the container with the fix.
writable_tmp() {
  local tmp=${TMPDIR:-/tmp}
  [[ -d $tmp && -w $tmp ]] && return 0
  if [[ -d /dev/shm && -w /dev/shm ]]; then
    echo "[cifar-container-entry] $tmp is not writable (read-only container?): temporary files go to /dev/shm (--tmpfs /tmp gives them their own)" >&2
    export TMPDIR=/dev/shm
    return 0
  fi
  echo "[cifar-container-entry] error: $tmp is not writable (read-only container?) and mpirun needs it: add --tmpfs /tmp" >&2
  exit 2
}
writable_tmp
# Open MPI's shared-memory transport without cross-memory attach
# (process_vm_readv), which Docker's and podman's default seccomp profiles
# forbid: else every rank prints "Read -1, expected ..., errno = 1".
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}

data_dir=${CIFAR_DATA_DIR:-/data}
if [[ -z ${CIFAR_DATA:-} && -d $data_dir ]]; then
  archive=$data_dir/cifar-10-binary.tar.gz
  if [[ -r $data_dir/cifar10.h5 ]]; then
    export CIFAR_DATA=$data_dir/cifar10.h5
  elif [[ -r $archive ]]; then
    target=$data_dir/cifar10.h5
    [[ -w $data_dir ]] || target=$HOME/cifar10.h5
    if [[ ! -r $target ]]; then
      echo "[cifar-container-entry] packing $archive into $target (once)" >&2
      # cifar_pack writes atomically: a second container never reads half a file.
      cifar_pack --input "$archive" --output "$target" >&2
    fi
    export CIFAR_DATA=$target
  fi
fi
exec "$@"
