#!/usr/bin/env bash
# container.inside_outside: `mpirun -np 2 cifar_mpi` inside the image (podman
# run) writes the same model file, byte for byte, as the same command run on
# the host with the same binary; and the time from `podman run` to the first
# training step is reported. Each side runs in its default environment (the
# image's, the host's: no OMP_NUM_THREADS forced on either); the host's
# OPENBLAS_* settings go in too: they choose OpenBLAS's kernels, and other
# kernels round differently.
# shellcheck source=tests/containers/lib.sh
source "$(dirname "$0")/lib.sh"
make_data
mkdir -p outside inside && chmod 0777 inside

mpi 2 "$OUTSIDE_BIN/cifar_mpi" --data "$WORK/data.h5" "${kTrain[@]}" --output "$WORK/outside/model.pth" >outside.log 2>&1 ||
  { cat outside.log; fail "training outside the image failed"; }
train_inside_and_compare "podman run ... mpirun -np 2 cifar_mpi" \
  podman run --rm --network none --env 'OPENBLAS_*' --volume "$WORK:$WORK" --workdir "$WORK" "$IMAGE_TAG" \
  mpirun "${kMpirunOptions[@]}" -np 2 cifar_mpi --data "$WORK/data.h5" "${kTrain[@]}" --output "$WORK/inside/model.pth"
echo "image on disk to first training step (podman run, 2 ranks): $first_step s"
echo "PASS: inside and outside the image, the same model file ($(stat -c %s inside/model.pth) bytes)"
