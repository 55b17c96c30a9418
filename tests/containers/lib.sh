# shellcheck shell=bash
# shellcheck disable=SC2034  # the variables are for the scripts that source this file
# Shared by the container tests (sourced): the e2e helpers (WORK, mpi, fail),
# where the image and its exports are, podman's settings, and one short
# training configuration run the same way outside and inside the image.
# shellcheck source=tests/e2e/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../e2e/common.sh"
: "${IMAGE_OUT:?}" "${IMAGE_TAG:?}" "${SOURCE_DIR:?}" "${CIFAR_PACK:?}"
export CONTAINERS_CONF=${CONTAINERS_CONF:-$SOURCE_DIR/containers/podman.conf}
export USER=${USER:-$(id -un)}  # ch-run needs it
CH_IMAGE=$IMAGE_OUT/cifar_mpi-cpu.ch
# The programs that tools/build_image.sh copied into the image, run outside it.
OUTSIDE_BIN=$IMAGE_OUT/cpu/context/prefix/bin
# The tests' `podman run`s need no network (--network none: Open MPI's ranks
# in one container talk over loopback), so no CNI/netavark set-up either.
# The image's user (uid 1000) writes into the work folder.
chmod 0777 "$WORK"

# make_data: a small synthetic training set, $WORK/data.h5.
make_data() {
  "$CIFAR_PACK" --synthetic 256 --test-count 64 --seed 3 --output "$WORK/data.h5" >/dev/null
}
# 6 steps of SGD on 2 ranks, each step logged; the output file is the
# caller's (its name is part of the model file: same name, same bytes).
kTrain=(--model convnet --optimizer sgd --momentum 0.9 --lr 0.05 --seed 3 --max-steps 6 --epochs 1
  --batch-size 16 --eval false --metrics "" --log-every 1)
# shellcheck disable=SC2054  # btl takes a comma-separated list
kMpirunOptions=(--oversubscribe --bind-to none --mca btl self,vader,tcp --mca btl_vader_single_copy_mechanism none)

# seconds_until LOG PATTERN PID: waits until LOG has a line matching PATTERN
# (or PID has ended) and prints the seconds since the call began.
seconds_until() {
  local started now
  started=$(date +%s.%N)
  until grep -qE "$2" "$1" 2>/dev/null || ! kill -0 "$3" 2>/dev/null; do sleep 0.05; done
  now=$(date +%s.%N)
  awk -v a="$started" -v b="$now" 'BEGIN { printf "%.1f", b - a }'
}

# train_inside_and_compare WHAT COMMAND...: runs COMMAND, a training that
# writes $WORK/inside/model.pth (its output in inside.log), sets first_step
# to the seconds from its start to its first training step, shows each
# side's thread counts, and fails naming WHAT unless the model equals
# outside/model.pth byte for byte.
train_inside_and_compare() {
  local what=$1 pid
  shift
  "$@" >inside.log 2>&1 &
  pid=$!
  first_step=$(seconds_until inside.log '^Epoch: 0 \| Batch: 1/' "$pid")
  wait "$pid" || { cat inside.log; fail "$what failed"; }
  echo "outside: $(grep -m1 '^threads per rank' outside.log)"
  echo "inside:  $(grep -m1 '^threads per rank' inside.log)"
  tail -n 1 inside.log
  cmp outside/model.pth inside/model.pth || fail "the model trained by $what differs from the one trained outside"
  echo "byte for byte: outside/model.pth = inside/model.pth ($(stat -c %s inside/model.pth) bytes, cmp)"
}
