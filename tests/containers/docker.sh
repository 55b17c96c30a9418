#!/usr/bin/env bash
# container.docker: the image under Docker, as the users of the recipe run it.
# The test starts its own dockerd (no network, its own data and exec roots
# and socket in a temporary folder; overlay2, else vfs), `docker load`s the
# archive that container.build_image exported, then:
#   1. docker run IMAGE cifar_mpi --check-env --data ...        succeeds, and
#      docker run IMAGE cifar_mpi --self-test (as docs/containers.md shows it,
#      no data, no options) passes every CPU path of the image;
#   2. docker run ... mpirun -np 2 cifar_mpi --config default ... writes the
#      same model file, byte for byte, as the same command on the host, each
#      side in its default environment (the image's, the host's); the time
#      from `docker run` to the first training step is printed;
#   3. docker run --read-only (no --tmpfs /tmp) trains: the entry point moves
#      temporary files to /dev/shm and says so in one line; and with
#      OMP_NUM_THREADS=1 (as launchers set it) the model is still the same;
#   4. docker run -d, then docker exec: a shell in the running container
#      finds the programs and the configs.
# The daemon is stopped and its folder removed on every exit. Needs root (or
# a rootless or group-owned Docker daemon already running, which it then
# uses); without either it is skipped (exit 77).
# shellcheck source=tests/containers/lib.sh
source "$(dirname "$0")/lib.sh"

skip() {
  echo "SKIP: $*"
  exit 77
}
# Debian's docker CLI (docker.io) where installed: another `docker` earlier
# on PATH may be a different program.
docker_cli=/usr/bin/docker
[[ -x $docker_cli ]] || docker_cli=$(command -v docker || true)
docker() { "$docker_cli" "$@"; }

# ---- the daemon ----------------------------------------------------------------
daemon_root=
dockerd_pid=
containers=()
cleanup() {
  local c
  for c in "${containers[@]+"${containers[@]}"}"; do docker rm -f "$c" >/dev/null 2>&1 || true; done
  [[ -n $daemon_root ]] || return 0
  stop_dockerd
  unmount_under "$daemon_root"
  rm -rf "$daemon_root"
}
trap cleanup EXIT

# unmount_under DIR: what a stopped or failed daemon left mounted in DIR
# (its data root, layers, containers' /dev/shm), innermost first.
unmount_under() {
  local mounts
  mounts=$(awk -v r="$1/" 'index($2, r) == 1 {print $2}' /proc/mounts | sort -r)
  [[ -z $mounts ]] || xargs -r umount -l <<<"$mounts" 2>/dev/null || true
}

# stop_dockerd: SIGTERM (it stops its containerd and unmounts), SIGKILL after 20 s.
stop_dockerd() {
  [[ -n $dockerd_pid ]] || return 0
  kill "$dockerd_pid" 2>/dev/null || true
  local i
  for i in $(seq 200); do
    kill -0 "$dockerd_pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -9 "$dockerd_pid" 2>/dev/null || true
  wait "$dockerd_pid" 2>/dev/null || true
  dockerd_pid=
}

# start_dockerd DRIVER: a daemon with that storage driver (its roots in
# $daemon_root/DRIVER) answering on $DOCKER_HOST within 30 s, else 1 (its log
# in dockerd-DRIVER.log).
start_dockerd() {
  local root=$daemon_root/$1
  dockerd --iptables=false --ip-masq=false --bridge=none --storage-driver "$1" \
    --data-root "$root/data" --exec-root "$root/exec" --pidfile "$root/dockerd.pid" \
    --host "$DOCKER_HOST" >"dockerd-$1.log" 2>&1 &
  dockerd_pid=$!
  local i
  for i in $(seq 300); do
    docker version >/dev/null 2>&1 && return 0
    kill -0 "$dockerd_pid" 2>/dev/null || break
    sleep 0.1
  done
  stop_dockerd
  unmount_under "$root"
  return 1
}

if [[ $(id -u) == 0 ]]; then
  if ! command -v dockerd >/dev/null || [[ -z $docker_cli ]]; then
    fail "dockerd or docker is missing: tools/setup.sh installs them (apt-get install docker.io)"
  fi
  # A short path: the daemon's sockets must fit in a socket address (108 bytes).
  daemon_root=$(mktemp -d /tmp/cifar-docker.XXXXXX)
  export DOCKER_HOST=unix://$daemon_root/docker.sock
  started=$(date +%s.%N)
  driver=overlay2
  start_dockerd overlay2 || {
    driver=vfs
    tail -n 3 dockerd-overlay2.log
    start_dockerd vfs || { cat dockerd-vfs.log; fail "dockerd started with neither overlay2 nor vfs"; }
  }
  echo "dockerd $(docker version --format '{{.Server.Version}}'), storage driver $driver," \
    "answering after $(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
elif [[ -n $docker_cli ]] && docker info >/dev/null 2>&1; then
  echo "using the running Docker daemon ($(docker context show 2>/dev/null || echo "${DOCKER_HOST:-default}"))"
else
  skip "not root (dockerd needs root) and no rootless or group-owned Docker daemon answers"
fi

# ---- the image -----------------------------------------------------------------
t0=$SECONDS
docker load -i "$IMAGE_OUT/cifar_mpi-cpu.docker.tar" | tail -n 1
echo "docker load: $((SECONDS - t0)) s"
docker image inspect "$IMAGE_TAG" >/dev/null || fail "docker load did not give $IMAGE_TAG"

# The tests' small data set, where the image's entry point looks: DIR/data/cifar10.h5.
mkdir -p data outside inside readonly && chmod 0777 data inside readonly
"$CIFAR_PACK" --synthetic 256 --test-count 64 --seed 3 --output "$WORK/data/cifar10.h5" >/dev/null
# Bit for bit needs the host's OpenBLAS kernel choice (OPENBLAS_CORETYPE and
# the like) inside too; `docker run` takes no wildcard, so each by name.
openblas_env=()
for name in $(compgen -e | grep '^OPENBLAS_' || true); do openblas_env+=(--env "$name"); done

# ---- 1. --check-env ----------------------------------------------------------
docker run --rm -v "$WORK/data:/data" "$IMAGE_TAG" cifar_mpi --check-env --data /data/cifar10.h5 >check_env.log 2>&1 ||
  { cat check_env.log; fail "docker run $IMAGE_TAG cifar_mpi --check-env failed"; }
grep -E '^ +threads:|^ready to train' check_env.log
docker run --rm "$IMAGE_TAG" cifar_mpi --self-test >self_test.log 2>&1 ||
  { cat self_test.log; fail "docker run $IMAGE_TAG cifar_mpi --self-test failed"; }
grep -E '^\| |^self-test:' self_test.log
grep -qE '^self-test: [1-9][0-9]* passed, 0 failed' self_test.log || fail "the self-test in the image passed no row"

# ---- 2. the same command inside and outside, the same model --------------------
# The recipe's configuration, short: 20 steps of 16 images per rank.
kShort=(--config default --max-steps 20 --batch-size 16 --eval false --metrics "" --log-every 1)
"$MPIEXEC" --allow-run-as-root --oversubscribe -np 2 "$OUTSIDE_BIN/cifar_mpi" --data "$WORK/data/cifar10.h5" \
  "${kShort[@]}" --output "$WORK/outside/model.pth" >outside.log 2>&1 ||
  { cat outside.log; fail "training outside the image failed"; }
train_inside_and_compare "docker run ... mpirun -np 2 cifar_mpi" \
  docker run --rm "${openblas_env[@]+"${openblas_env[@]}"}" -v "$WORK:$WORK" -w "$WORK" "$IMAGE_TAG" \
  mpirun -np 2 cifar_mpi --data "$WORK/data/cifar10.h5" "${kShort[@]}" --output "$WORK/inside/model.pth"
echo "image on disk to first training step (docker run, mpirun -np 2): $first_step s"

# ---- 3. a read-only container, with a launcher's OMP_NUM_THREADS --------------
docker run --rm --read-only --env OMP_NUM_THREADS=1 "${openblas_env[@]+"${openblas_env[@]}"}" \
  -v "$WORK:$WORK" -w "$WORK" "$IMAGE_TAG" \
  mpirun -np 2 cifar_mpi --data "$WORK/data/cifar10.h5" "${kShort[@]}" --output "$WORK/readonly/model.pth" \
  >readonly.log 2>&1 || { cat readonly.log; fail "docker run --read-only failed"; }
grep '^\[cifar-container-entry\]' readonly.log || fail "the entry point did not say where temporary files went"
! grep -qi 'session dir\|unable to create' readonly.log || fail "Open MPI complained about its session folder"
echo "read-only, OMP_NUM_THREADS=1: $(grep -m1 '^threads per rank' readonly.log)"
cmp outside/model.pth readonly/model.pth ||
  fail "the model trained under docker run --read-only -e OMP_NUM_THREADS=1 differs from the one trained outside"
echo "byte for byte: outside/model.pth = readonly/model.pth (docker run --read-only --env OMP_NUM_THREADS=1, cmp)"

# ---- 4. a shell in a running container ------------------------------------------
name=cifar-docker-test-$$
containers+=("$name")
docker run -d --name "$name" -v "$WORK/data:/data" "$IMAGE_TAG" sleep 300 >/dev/null
shell=$(docker exec "$name" bash -lc 'command -v cifar_mpi cifar_eval cifar_pack mpirun
  ls /opt/cifar_mpi/share/cifar_mpi/config
  cifar_mpi --config default --check-env --data /data/cifar10.h5 2>&1 | tail -n 1') ||
  fail "docker exec $name bash -l failed"
echo "$shell"
for program in cifar_mpi cifar_eval cifar_pack mpirun; do
  grep -q "/$program\$" <<<"$shell" || fail "a login shell in the container does not find $program"
done
grep -qx default.ini <<<"$shell" || fail "the container has no /opt/cifar_mpi/share/cifar_mpi/config/default.ini"
grep -qx 'ready to train' <<<"$shell" || fail "cifar_mpi --check-env in docker exec did not end ready to train"
echo "PASS: docker load; run --check-env and --self-test; run mpirun -np 2 and run --read-only, the host's model byte for byte; exec"
