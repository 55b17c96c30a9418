#!/usr/bin/env bash
# container.build_image (fixture): tools/build_image.sh builds the cpu image
# from Debian's packages (the Debian base too, with mmdebstrap, when podman
# has none: on a new machine, from nothing) and exports it as a docker
# archive, a Charliecloud directory and an Enroot squashfs. Checks what the image must be: its
# programs find every library, it runs as a non-root user, it has no
# compiler, a login shell finds its programs, the archive is one that
# `docker load` reads.
# shellcheck source=tests/containers/lib.sh
source "$(dirname "$0")/lib.sh"

started=$SECONDS
bash "$SOURCE_DIR/tools/build_image.sh" cpu --build "$BUILD_DIR" --out "$IMAGE_OUT" --tag "$IMAGE_TAG" \
  --export all || fail "tools/build_image.sh cpu failed"
echo "built and exported in $((SECONDS - started)) s"

checks=$(podman run --rm --network none "$IMAGE_TAG" bash -c '
  echo "user $(id -u)"
  for p in /opt/cifar_mpi/bin/cifar_mpi /opt/cifar_mpi/bin/cifar_pack; do ldd "$p" | grep "not found" || true; done
  for c in cc gcc g++ c++ clang cmake make ld; do command -v "$c" || true; done
  cifar_mpi --help | head -n 1
  command -v plot_metrics >/dev/null || echo "no plot_metrics"
  bash -lc "command -v cifar_eval >/dev/null" && echo "login shell finds the programs"') ||
  fail "podman run $IMAGE_TAG failed"
echo "$checks"
grep -q '^user 1000$' <<<"$checks" || fail "the image does not run as its user cifar (uid 1000)"
! grep -q 'not found' <<<"$checks" || fail "programs in the image miss libraries"
grep -q '^login shell finds the programs$' <<<"$checks" || fail "a login shell (bash -l) does not find the programs"
grep -q '^no plot_metrics$' <<<"$checks" || fail "the image has plot_metrics, which needs a Python with matplotlib it lacks"
! grep -qE '^/' <<<"$checks" || fail "the image holds build tools: $(grep -E '^/' <<<"$checks" | tr '\n' ' ')"
# (The listing is read whole: `tar | grep -q` fails under pipefail when grep stops early.)
archive_files=$(tar -tf "$IMAGE_OUT/cifar_mpi-cpu.docker.tar")
grep -qx manifest.json <<<"$archive_files" ||
  fail "$IMAGE_OUT/cifar_mpi-cpu.docker.tar has no manifest.json: not a docker archive"
[[ -x $CH_IMAGE/opt/cifar_mpi/bin/cifar_mpi && -s $CH_IMAGE/ch/environment ]] ||
  fail "$CH_IMAGE is no Charliecloud directory image"
# What Enroot and Pyxis read from the squashfs: the environment and the entry point.
sqsh_etc=$(unsquashfs -cat "$IMAGE_OUT/cifar_mpi-cpu.sqsh" etc/environment etc/rc) ||
  fail "$IMAGE_OUT/cifar_mpi-cpu.sqsh is no squashfs with /etc/environment and /etc/rc"
grep -q '^PATH=/opt/cifar_mpi/bin:' <<<"$sqsh_etc" || fail "the Enroot image's /etc/environment lacks the image's PATH"
grep -q "exec '/opt/cifar_mpi/bin/cifar-container-entry' \"\$@\"" <<<"$sqsh_etc" ||
  fail "the Enroot image's /etc/rc does not run the entry point: $sqsh_etc"
echo "PASS: image $IMAGE_TAG, $(($(podman image inspect --format '{{.Size}}' "$IMAGE_TAG") / 1000000)) MB"
