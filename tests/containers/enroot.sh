#!/usr/bin/env bash
# container.enroot: the image under Enroot, as GPU clusters run containers.
# The squashfs that `tools/build_image.sh --export enroot` wrote
# (container.build_image) is unpacked with `enroot create` and started with
# `enroot start`, which runs the image's entry point; as root and as an
# unprivileged user (nobody, in a user namespace: how Enroot runs on a
# cluster), `mpirun -np 2 cifar_mpi` in the container must write the same
# model file, byte for byte, as the same command on the host. Then, as root,
# `enroot start` of the squashfs itself (mounted with squashfuse, nothing
# unpacked: Pyxis's use_squashfuse) must too. Prints each way's time from
# the image on disk to the first training step. Enroot is the one
# container.enroot_pyxis_build made (THIRD_PARTY_OUT).
# shellcheck source=tests/containers/lib.sh
source "$(dirname "$0")/lib.sh"
: "${THIRD_PARTY_OUT:?}"
export PATH=$THIRD_PARTY_OUT/enroot/bin:$PATH  # enroot runs its helpers by name
sqsh=$IMAGE_OUT/cifar_mpi-cpu.sqsh
[[ -s $sqsh ]] || fail "no $sqsh: container.build_image exports it (tools/build_image.sh cpu --export enroot)"
command -v enroot >/dev/null || fail "no enroot in $THIRD_PARTY_OUT/enroot/bin (container.enroot_pyxis_build)"
kNobody=65534

names=()
cleanup() {
  local entry
  for entry in "${names[@]+"${names[@]}"}"; do as_user "${entry%%:*}" enroot remove --force "${entry#*:}" >/dev/null 2>&1 || true; done
}
trap cleanup EXIT
# as_user UID COMMAND...: COMMAND as that user (root: as it is), HOME in the work folder.
as_user() {
  local uid=$1
  shift
  if ((uid == 0)); then
    "$@"
  else
    mkdir -p "$WORK/home-$uid" && chown "$uid" "$WORK/home-$uid"
    setpriv --reuid="$uid" --regid="$uid" --clear-groups env HOME="$WORK/home-$uid" "$@"
  fi
}
seconds_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

make_data
mkdir -p outside && chmod 0777 .
# The recipe's configuration, short: 20 steps of 16 images per rank.
kShort=(--config default --data "$WORK/data.h5" --max-steps 20 --batch-size 16 --eval false --metrics "" --log-every 1)
"$MPIEXEC" --allow-run-as-root --oversubscribe -np 2 "$OUTSIDE_BIN/cifar_mpi" "${kShort[@]}" \
  --output "$WORK/outside/model.pth" >outside.log 2>&1 || { cat outside.log; fail "training outside the image failed"; }
# Bit for bit needs the host's OpenBLAS kernel choice inside too.
env_args=()
for name in $(compgen -e | grep '^OPENBLAS_' || true); do env_args+=(--env "$name"); done

for uid in 0 "$kNobody"; do
  who=root
  ((uid == 0)) || who="an unprivileged user (uid $uid)"
  name=cifar-test-$$-$uid
  names+=("$uid:$name")
  rm -rf inside && mkdir -p inside && chmod 0777 inside
  started=$(date +%s.%N)
  as_user "$uid" enroot create --name "$name" "$sqsh" >"create-$uid.log" 2>&1 ||
    { cat "create-$uid.log"; fail "enroot create as $who failed"; }
  created=$(seconds_since "$started")
  # Open MPI refuses root unless told; Enroot keeps the caller's uid inside.
  # nobody's login shell is nologin: bash, as a user's account gives it.
  root_flag=()
  user_env=(--env SHELL=/bin/bash)
  ((uid != 0)) || { root_flag=(--allow-run-as-root); user_env=(); }
  train_inside_and_compare "enroot start ... mpirun -np 2 cifar_mpi as $who" \
    as_user "$uid" enroot start "${env_args[@]+"${env_args[@]}"}" "${user_env[@]+"${user_env[@]}"}" --mount "$WORK:$WORK" "$name" \
    mpirun "${root_flag[@]+"${root_flag[@]}"}" -np 2 cifar_mpi "${kShort[@]}" --output "$WORK/inside/model.pth"
  echo "as $who: image on disk to first training step: $(awk -v a="$created" -v b="$first_step" \
    'BEGIN { printf "%.1f", a + b }') s (enroot create $created s, enroot start to the step $first_step s)"
done
# The squashfs started as it is: squashfuse needs /dev/fuse, which only root
# may open on some hosts (0600); Pyxis mounts it as root too.
rm -rf inside && mkdir -p inside && chmod 0777 inside
train_inside_and_compare "enroot start cifar_mpi-cpu.sqsh ... mpirun -np 2 cifar_mpi" \
  enroot start "${env_args[@]+"${env_args[@]}"}" --mount "$WORK:$WORK" "$sqsh" \
  mpirun --allow-run-as-root -np 2 cifar_mpi "${kShort[@]}" --output "$WORK/inside/model.pth"
echo "squashfs started as it is (squashfuse): image on disk to first training step: $first_step s"
echo "PASS: enroot create and start as root and as uid $kNobody, enroot start of the squashfs;" \
  "mpirun -np 2 in the container, the host's model byte for byte"
