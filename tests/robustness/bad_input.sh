#!/usr/bin/env bash
# Bad input stops the run before training with one clear message (printed
# once, by one rank), a non-zero exit code, and no file left behind — no
# model, no metrics, no temporary file: a missing, unreadable, corrupted,
# truncated or foreign data file, and output or metrics paths that cannot be
# written. (Bad options and config files: tests/e2e/bad_config.sh.)
#
# The tests run as root, which ignores permission bits; the "unreadable" and
# "read-only folder" cases therefore run the ranks without the capabilities
# that let root override them (setpriv drops CAP_DAC_OVERRIDE and
# CAP_DAC_READ_SEARCH), so the kernel refuses access as it would for a user.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../e2e/common.sh"

as_user=(setpriv --bounding-set -dac_override,-dac_read_search)
files_now() { find . -path ./logs -prune -o -print | sort; }

# [data=F] [output=F] [metrics=F] expect_failure CODE PATTERN [--as-user]:
# cifar_mpi on 2 ranks with these paths (default: the good data, and outputs
# in out/) exits CODE, prints exactly one error line, from one rank,
# containing PATTERN, and creates no file. --as-user: without root's
# permission override.
expect_failure() {
  local code=$1 pattern=$2
  shift 2
  local wrap=()
  if [[ ${1:-} == --as-user ]]; then
    wrap=("${as_user[@]}")
    shift
  fi
  local before
  before=$(files_now)
  set +e
  local args=(--data "${data:-$E2E_DATA}" --output "${output:-out/model.pth}"
              --metrics "${metrics:-out/metrics.jsonl}" --epochs 1 --eval false)
  mpi 2 "${wrap[@]}" "$CIFAR_MPI" "${args[@]}" >logs/out.txt 2>logs/err.txt
  local rc=$?
  set -e
  cat logs/out.txt logs/err.txt >logs/all.txt
  [[ $rc -eq $code ]] || { cat logs/all.txt; fail "'${args[*]}' exited $rc, expected $code"; }
  local n
  n=$(grep -c "error:" logs/all.txt || true)
  [[ $n -eq 1 ]] || { cat logs/all.txt; fail "'${args[*]}' printed $n error lines, expected 1"; }
  grep -qE '^\[rank [0-9]+/2 [^]]*\] error: ' logs/all.txt || { cat logs/all.txt; fail "'${args[*]}': the error line names no rank"; }
  grep -q -- "$pattern" logs/all.txt || { cat logs/all.txt; fail "'${args[*]}' error does not mention '$pattern'"; }
  local after
  after=$(files_now)
  [[ $after == "$before" ]] || { diff <(echo "$before") <(echo "$after") || true; fail "'${args[*]}' left files behind"; }
  echo "ok (exit $rc): ${args[*]:0:6} -> $(grep error: logs/all.txt)"
}

mkdir -p logs out
cp "$E2E_DATA" good.h5

# Data files.
data="$PWD/missing.h5" expect_failure 1 "no such file"
cp good.h5 unreadable.h5
chmod 000 unreadable.h5
data="$PWD/unreadable.h5" expect_failure 1 "unreadable.h5': cannot be read (Permission denied)" --as-user
data="$here/bad_input.sh" expect_failure 1 "not an HDF5 file"
mkdir folder.h5
data="$PWD/folder.h5" expect_failure 1 "folder.h5': is a folder"
head -c 100000 good.h5 >truncated.h5
data="$PWD/truncated.h5" expect_failure 1 "File has been truncated"
# Corrupted: one flipped bit inside the first stored chunk of /train/images;
# its Fletcher32 checksum must catch it.
cp good.h5 corrupted.h5
"$PYTHON" - corrupted.h5 <<'PY'
import sys, h5py
path = sys.argv[1]
with h5py.File(path, "r") as f:
    info = f["/train/images"].id.get_chunk_info(0)
assert info.size > 2000, info
with open(path, "r+b") as f:
    f.seek(info.byte_offset + 1000)
    byte = f.read(1)[0]
    f.seek(info.byte_offset + 1000)
    f.write(bytes([byte ^ 0x01]))
PY
data="$PWD/corrupted.h5" expect_failure 1 "checksum error"
grep -q "dataset /train/images" logs/all.txt || fail "the checksum error does not name the dataset"

# Output and metrics paths: a folder under a regular file, and a read-only folder.
touch plain_file
mkdir read_only
chmod 555 read_only
output="$PWD/plain_file/model.pth" expect_failure 2 "--output $PWD/plain_file/model.pth"
output="$PWD/read_only/model.pth" expect_failure 2 "--output $PWD/read_only/model.pth" --as-user
metrics="$PWD/plain_file/m.jsonl" expect_failure 2 "--metrics $PWD/plain_file/m.jsonl"
metrics="$PWD/read_only/m.jsonl" expect_failure 2 "--metrics $PWD/read_only/m.jsonl" --as-user
[[ -z $(ls -A read_only) && -z $(ls -A out) ]] || fail "files were written: $(ls -A read_only out)"
echo "PASS"
