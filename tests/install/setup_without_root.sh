#!/usr/bin/env bash
# tools/setup.sh without root installs nothing and checks by name what the
# build needs and, unless --main-job, what the tests need too: each piece
# found or MISSING with how to provide it. Run as an unprivileged user
# (nobody, when the test runs as root).
set -euo pipefail
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
as_user=()
[[ $(id -u) != 0 ]] || as_user=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
fail() {
  echo "FAIL: $*"
  exit 1
}
run_setup() { (cd /tmp && "${as_user[@]}" bash "$source_dir/tools/setup.sh" "$@" 2>&1) || true; }
all=$(run_setup)
echo "$all"
grep -q "installing nothing; checking what the build needs" <<<"$all" || fail "no check of the build's needs"
for piece in "cmake >= 3.25" "LibTorch" "GoogleTest" "python3 with torch, h5py and matplotlib" \
  "shellcheck and clang-format-14 (the lint gate)" "Slurm's srun and slurmd" "podman or Charliecloud"; do
  grep -Fq -e "setup:   found   $piece" -e "setup:   MISSING $piece" <<<"$all" || fail "the check does not report $piece"
done
main_job=$(run_setup --main-job)
if grep -q "what the tests need" <<<"$main_job"; then fail "--main-job checked the tests' needs"; fi
echo PASS
