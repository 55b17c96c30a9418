#!/usr/bin/env bash
# container.host_mpirun: the hybrid model: the host's mpirun starts 2 ranks,
# each `jobs/cifar_container.sh` -> `ch-run IMAGE -- cifar_mpi` (Charliecloud),
# then each -> `podman run IMAGE` (one container per rank); the ranks find
# each other through the host's Open MPI daemons. Both train, and to the same
# model file as the host's own run of that binary. Also reported: the time
# from mpirun to the first training step with ch-run.
# shellcheck source=tests/containers/lib.sh
source "$(dirname "$0")/lib.sh"
make_data
mkdir -p outside chrun podman && chmod 0777 podman

mpi 2 "$OUTSIDE_BIN/cifar_mpi" --data "$WORK/data.h5" "${kTrain[@]}" --output "$WORK/outside/model.pth" >outside.log 2>&1 ||
  { cat outside.log; fail "training outside the image failed"; }
CIFAR_CONTAINER=$CH_IMAGE CIFAR_CONTAINER_RUNTIME=charliecloud CIFAR_CONTAINER_BINDS=$WORK \
  mpi 2 "$SOURCE_DIR/jobs/cifar_container.sh" --data "$WORK/data.h5" "${kTrain[@]}" \
  --output "$WORK/chrun/model.pth" >chrun.log 2>&1 &
pid=$!
first_step=$(seconds_until chrun.log '^Epoch: 0 \| Batch: 1/' "$pid")
wait "$pid" || { cat chrun.log; fail "host mpirun with ch-run per rank failed"; }
tail -n 3 chrun.log
grep -q '^cifar_mpi: 2 rank(s)' chrun.log || fail "the ranks in ch-run did not form one 2-rank job"
cmp outside/model.pth chrun/model.pth || fail "the model trained in ch-run differs from the one trained outside"
echo "image on disk to first training step (mpirun + ch-run, 2 ranks): $first_step s"

CIFAR_CONTAINER=$IMAGE_TAG CIFAR_CONTAINER_RUNTIME=podman CIFAR_CONTAINER_BINDS=$WORK \
  mpi 2 "$SOURCE_DIR/jobs/cifar_container.sh" --data "$WORK/data.h5" "${kTrain[@]}" \
  --output "$WORK/podman/model.pth" >podman.log 2>&1 || { cat podman.log; fail "host mpirun with podman per rank failed"; }
tail -n 1 podman.log
cmp outside/model.pth podman/model.pth || fail "the model trained in podman per rank differs from the one trained outside"
echo "PASS: host mpirun + ch-run per rank, and + podman per rank, trained 2 ranks, the same model as outside"
