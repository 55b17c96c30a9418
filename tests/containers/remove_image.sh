#!/usr/bin/env bash
# container.remove_image (fixture cleanup, after every test that uses the
# image): removes the test image from podman's store (podman removes with it
# each build step no other image uses) and its exports (the docker archive,
# the Charliecloud directory, the squashfs, the build context), about 4 GB
# together, so that a test run leaves only its small work folders behind.
# The Debian base image stays: the cache that makes the next build take
# seconds.
set -euo pipefail
: "${IMAGE_OUT:?}" "${IMAGE_TAG:?}" "${SOURCE_DIR:?}"
export CONTAINERS_CONF=${CONTAINERS_CONF:-$SOURCE_DIR/containers/podman.conf}
freed=$(du -sm "$IMAGE_OUT" 2>/dev/null | cut -f1) || freed=0
rm -rf "$IMAGE_OUT"
if podman image exists "$IMAGE_TAG"; then
  freed=$((freed + $(podman image inspect --format '{{.Size}}' "$IMAGE_TAG") / 1000000))
  podman rmi "$IMAGE_TAG" >/dev/null
fi
! podman image exists "$IMAGE_TAG" || { echo "FAIL: $IMAGE_TAG is still in podman's store" >&2; exit 1; }
echo "PASS: removed $IMAGE_TAG and its exports in $IMAGE_OUT (${freed} MB)"
