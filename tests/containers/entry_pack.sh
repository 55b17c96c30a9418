#!/usr/bin/env bash
# container.entry_pack: only the CIFAR-10 archive is mounted at /data (a
# synthetic one in the official layout): the image's entry point packs it
# once into /data/cifar10.h5, which `cifar_mpi --check-env` then opens and
# checks; a second start finds the packed file and packs nothing.
# shellcheck source=tests/containers/lib.sh
source "$(dirname "$0")/lib.sh"
mkdir -p data && chmod 0777 data
"$CIFAR_PACK" --synthetic-binary data/cifar-10-binary.tar.gz >/dev/null

for start in first second; do
  podman run --rm --network none --volume "$WORK/data:/data" "$IMAGE_TAG" cifar_mpi --check-env >"$start.log" 2>&1 ||
    { cat "$start.log"; fail "cifar_mpi --check-env with only the archive in /data failed ($start start)"; }
done
grep -F '[cifar-container-entry] packing /data/cifar-10-binary.tar.gz into /data/cifar10.h5' first.log ||
  { cat first.log; fail "the first start did not pack the archive"; }
! grep -q packing second.log || { cat second.log; fail "the second start packed again"; }
[[ -s data/cifar10.h5 ]] || fail "no data/cifar10.h5 after the first start"
tail -n 3 second.log
echo "PASS: the entry point packed /data's archive once, and --check-env read it"
