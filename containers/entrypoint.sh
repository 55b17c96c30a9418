#!/bin/bash
# /opt/cifar_mpi/bin/cifar-container-entry — the images' entry point (podman
# run, docker run, enroot start): finds the training data in the folder
# mounted at /data (CIFAR_DATA_DIR), then runs the command given.
#   /data/cifar10.h5 present           -> CIFAR_DATA=/data/cifar10.h5
#   only /data/cifar-10-binary.tar.gz  -> packed once with cifar_pack into
#                                         /data/cifar10.h5 (or, if /data is
#                                         read-only, $HOME/cifar10.h5)
# CIFAR_DATA set by the caller is kept as it is. Runtimes that start the
# command directly (ch-run, apptainer exec, srun --container-image) skip this
# script: give them --data (the job scripts do).
set -euo pipefail

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
