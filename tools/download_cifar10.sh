#!/usr/bin/env bash
# tools/download_cifar10.sh — fetch the official CIFAR-10 binary release and
# verify its md5, for users with internet access. Then pack it:
#   tools/download_cifar10.sh data/            # writes data/cifar-10-binary.tar.gz
#   build/cpu/cifar_pack --input data/cifar-10-binary.tar.gz --output data/cifar10.h5
# The download goes to a temporary name and is renamed only once its md5 matches.
set -euo pipefail

readonly url="https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"
readonly expected_md5="c32a1d4ab5d03f1284b67883e8d87530"

usage() {
  echo "usage: $0 [DEST_DIR]   (default: current folder)" >&2
  exit 2
}

(($# <= 1)) || usage
[[ ${1:-} != -h && ${1:-} != --help ]] || usage
dest_dir=${1:-.}
mkdir -p -- "$dest_dir"
final="$dest_dir/cifar-10-binary.tar.gz"

md5_of() { md5sum -- "$1" | cut -d' ' -f1; }

if [[ -f $final ]] && [[ $(md5_of "$final") == "$expected_md5" ]]; then
  echo "download_cifar10: $final is already present and verified"
  exit 0
fi

command -v curl >/dev/null || { echo "download_cifar10: curl is not installed (apt-get install curl)" >&2; exit 1; }

tmp=$(mktemp "$dest_dir/.cifar-10-binary.tar.gz.XXXXXX")
trap 'rm -f -- "$tmp"' EXIT

echo "download_cifar10: fetching $url"
curl --fail --location --retry 3 --connect-timeout 30 --output "$tmp" "$url"

actual=$(md5_of "$tmp")
if [[ $actual != "$expected_md5" ]]; then
  echo "download_cifar10: md5 mismatch: got $actual, expected $expected_md5; the download is damaged, try again" >&2
  exit 1
fi

chmod 0644 -- "$tmp"
sync -- "$tmp" 2>/dev/null || sync
mv -- "$tmp" "$final"
trap - EXIT
echo "download_cifar10: $final verified (md5 $expected_md5)"
