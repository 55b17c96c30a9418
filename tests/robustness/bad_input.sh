#!/usr/bin/env bash
# Bad input stops the run before training with one clear message (printed
# once, by one rank), a non-zero exit code, and no file left behind — no
# model, no metrics, no temporary file: a missing, unreadable, corrupted,
# truncated or foreign data file, a FIFO or a device instead of a file, an
# HDF5 file that declares more than it holds, and output or metrics paths
# that cannot be written or that name an input. Sizes read from files are
# checked before anything is allocated for them (the ranks' and cifar_pack's
# peak memory is measured). (Bad options and config files:
# tests/e2e/bad_config.sh.)
#
# The tests run as root, which ignores permission bits; the "unreadable" and
# "read-only folder" cases therefore run the ranks without the capabilities
# that let root override them (setpriv drops CAP_DAC_OVERRIDE and
# CAP_DAC_READ_SEARCH), so the kernel refuses access as it would for a user.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../e2e/common.sh"

as_user=(setpriv --bounding-set -dac_override,-dac_read_search)
files_now() { find . -path ./logs -prune -o -print | sort; }

# [data=F] [output=F] [metrics=F] expect_failure CODE PATTERN [--as-user] [-- OPTIONS...]:
# cifar_mpi on 2 ranks with these paths (default: the good data, and outputs
# in out/) and OPTIONS exits CODE, prints exactly one error line, from one
# rank, containing PATTERN, and creates no file. --as-user: without root's
# permission override. The largest rank's peak memory (KiB) is left in logs/rss.txt.
expect_failure() {
  local code=$1 pattern=$2
  shift 2
  local wrap=()
  if [[ ${1:-} == --as-user ]]; then
    wrap=("${as_user[@]}")
    shift
  fi
  [[ ${1:-} != -- ]] || shift
  local before
  before=$(files_now)
  set +e
  local args=(--data "${data:-$E2E_DATA}" --output "${output:-out/model.pth}"
              --metrics "${metrics:-out/metrics.jsonl}" --epochs 1 --eval false "$@")
  /usr/bin/time -q -f %M -o logs/rss.txt "$MPIEXEC" --allow-run-as-root --oversubscribe --bind-to none \
    --mca btl self,vader,tcp --mca btl_vader_single_copy_mechanism none -np 2 \
    "${wrap[@]}" "$CIFAR_MPI" "${args[@]}" >logs/out.txt 2>logs/err.txt
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
data="$PWD/truncated.h5" expect_failure 1 "truncated.h5': truncated: cifar_pack wrote $(stat -c %s good.h5) bytes, 100000 are left"
# A file packed before the checksum header: refused with the command that repacks it.
data="$SOURCE_DIR/tests/data/old-layout-synthetic-2-1.h5" expect_failure 1 \
  "has no checksum header (it was packed by a cifar_pack older than the header"
grep -qF "repack it with \`cifar_pack --input cifar-10-binary.tar.gz --output $SOURCE_DIR/tests/data/old-layout-synthetic-2-1.h5\`" \
  logs/all.txt || fail "the message does not give the command that repacks the file"

reseal() {  # reseal FILE: the checksum header (src/data/packed_header.hpp) written again after FILE was changed on purpose
  "$PYTHON" - "$1" <<'PY'
import hashlib, os, sys
path = sys.argv[1]
with open(path, "r+b") as f:
    f.seek(512)
    digest = hashlib.md5(f.read()).hexdigest()
    header = "cifar_mpi packed CIFAR-10, HDF5 from byte 512\nsize %d\nmd5 %s\n" % (os.path.getsize(path), digest)
    f.seek(0)
    f.write(header.encode().ljust(512, b"\0"))
PY
}

# Corrupted: one flipped bit inside the first stored chunk of /train/images.
# The checksum header refuses the file before HDF5 reads it; resealed (as if
# the bit had flipped before the header was written), the chunk's Fletcher32
# checksum must catch it.
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
data="$PWD/corrupted.h5" expect_failure 1 "corrupted.h5': damaged: the MD5 of its bytes after the header is"
reseal corrupted.h5
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

# Inputs that would block the reader (a FIFO) or feed it without end (a
# device): refused before they are opened.
mkfifo fifo.h5
data="$PWD/fifo.h5" expect_failure 1 "fifo.h5': is not a regular file (a FIFO, socket or device)"
data=/dev/zero expect_failure 1 "'/dev/zero': is not a regular file"
expect_failure 1 "checkpoint '$PWD/folder.h5' is a folder, not a file" -- --resume "$PWD/folder.h5"

# HDF5 files that declare more than they hold, or hold it without checksums.
craft() {  # craft OUT KIND: a copy of the good file, changed by h5py
  cp good.h5 "$1"
  "$PYTHON" - "$1" "$2" <<'PY'
import sys, h5py, numpy as np
path, kind = sys.argv[1], sys.argv[2]
with h5py.File(path, "r+") as f:
    g = f["train"]
    if kind == "declares-more":  # 1.7 million images, one chunk of them written
        n = 1700000
        del g["images"], g["labels"]
        g.create_dataset("images", (n, 3, 32, 32), "u1", chunks=(1024, 3, 32, 32), fletcher32=True)[0:1024] = 1
        g.create_dataset("labels", (n,), "u1", chunks=(16384,), fletcher32=True)[0:16384] = 1
        g.attrs["count"] = np.int64(n)
    elif kind == "no-checksum":
        labels = g["labels"][...]
        del g["labels"]
        g.create_dataset("labels", data=labels, chunks=(len(labels),))
PY
  reseal "$1"
}
craft declares_more.h5 declares-more
data="$PWD/declares_more.h5" expect_failure 1 \
  "dataset /train/images: declares 1661 chunk(s) of data but only 1 were ever written"
rss_kib=$(tail -n 1 logs/rss.txt)
echo "peak memory of a rank: $((rss_kib / 1024)) MiB for a $(stat -c %s declares_more.h5)-byte file declaring 1.7 million images"
((rss_kib < 1024 * 1024)) || fail "a rank used $((rss_kib / 1024)) MiB: sizes were allocated before they were checked"
craft no_checksum.h5 no-checksum
data="$PWD/no_checksum.h5" expect_failure 1 "dataset /train/labels: has no Fletcher32 checksum filter"

# Outputs that could only fail after training, or that would replace an input.
cp good.h5 input_copy.h5
output="$PWD/folder.h5" expect_failure 2 "--output $PWD/folder.h5 is a folder, not a file; name a file to write"
metrics="$PWD/fifo.h5" expect_failure 2 "--metrics $PWD/fifo.h5 is not a regular file"
data="$PWD/input_copy.h5" output="$PWD/input_copy.h5" expect_failure 2 \
  "--output $PWD/input_copy.h5 is the same file as --data $PWD/input_copy.h5: an output never overwrites an input"
cmp -s good.h5 input_copy.h5 || fail "the input was changed"
output=out/same.jsonl metrics=out/same.jsonl expect_failure 2 "--output and --metrics name the same file"
long_name=out/$(printf 'm%.0s' {1..250}).pth  # fine for the file system, too long for its temporary name
output=$long_name expect_failure 2 "--output $long_name: cannot create out/.$(basename "$long_name").tmp-"
grep -q "(File name too long); choose another path" logs/all.txt || fail "the reason is not named"
expect_failure 2 "--checkpoint-dir $PWD/plain_file: cannot write to folder $PWD/plain_file" -- \
  --checkpoint-dir "$PWD/plain_file"

# cifar_pack: a 120-byte archive whose header claims a 4 GiB member.
"$PYTHON" - hostile.tar.gz <<'PY'
import gzip, sys, tarfile
member = tarfile.TarInfo("cifar-10-batches-bin/data_batch_1.bin")
member.size = 4 << 30
open(sys.argv[1], "wb").write(gzip.compress(member.tobuf(tarfile.USTAR_FORMAT)))
PY
rc=0
/usr/bin/time -q -f %M -o logs/rss.txt "$CIFAR_PACK" --input hostile.tar.gz --output logs/x.h5 >logs/pack.txt 2>&1 || rc=$?
rss_kib=$(tail -n 1 logs/rss.txt)
[[ $rc == 1 ]] && grep -q "data_batch_1.bin claims 4294967296 bytes, more than the 30730000 of a CIFAR-10 batch file" \
  logs/pack.txt || { cat logs/pack.txt; fail "cifar_pack on a hostile $(stat -c %s hostile.tar.gz)-byte archive: exit $rc"; }
((rss_kib < 1024 * 1024)) || fail "cifar_pack used $((rss_kib / 1024)) MiB on a 4 GiB claim"
[[ ! -e logs/x.h5 ]] || fail "cifar_pack wrote output"
echo "ok (exit 1, peak $((rss_kib / 1024)) MiB): cifar_pack on a $(stat -c %s hostile.tar.gz)-byte archive -> $(grep error: logs/pack.txt)"
echo "PASS"
