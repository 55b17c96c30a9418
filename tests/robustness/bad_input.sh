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
# shellcheck source=tests/e2e/common.sh
source "$here/../e2e/common.sh"

# The cases are independent launches, most of their time start-up and
# mpirun's wait after a rank exits non-zero, so they run side by side
# (common.sh's `background`, 4 at a time), each in a folder of its own,
# cases/NAME: its working folder, where its default outputs (out/model.pth,
# out/metrics.jsonl) and every path it is meant to write to lie. inputs/
# holds what the cases only read. A case's file list (its folder and inputs/)
# must be the same after its run as before it; the whole work folder's, after
# all of them, as before the first.
# shellcheck disable=SC2054  # a comma-separated capability list, one argument of setpriv
as_user=(setpriv --bounding-set -dac_override,-dac_read_search)
inputs=$PWD/inputs
cases=$PWD/cases
files_now() { find . -path ./logs -prune -o -print | sort; }

# [data=F] [output=F] [metrics=F] check_failure NAME CODE PATTERN [--as-user] [-- OPTIONS...]:
# cifar_mpi on 2 ranks, in cases/NAME, with these paths (default: the good
# data, and outputs in cases/NAME/out/) and OPTIONS exits CODE, prints exactly
# one error line, from one rank, containing PATTERN, and creates no file.
# --as-user: without root's permission override. Its output and the largest
# rank's peak memory (KiB, rss.txt) are left in logs/NAME/.
check_failure() {
  local name=$1 code=$2 pattern=$3
  shift 3
  local wrap=()
  if [[ ${1:-} == --as-user ]]; then
    wrap=("${as_user[@]}")
    shift
  fi
  [[ ${1:-} != -- ]] || shift
  local logs=$PWD/logs/$name
  mkdir -p "$logs"
  cd "$cases/$name"
  local before
  before=$(find "$cases/$name" "$inputs" | sort)
  set +e
  local args=(--data "${data:-$inputs/good.h5}" --output "${output:-out/model.pth}"
              --metrics "${metrics:-out/metrics.jsonl}" --epochs 1 --eval false "$@")
  /usr/bin/time -q -f %M -o "$logs/rss.txt" "$MPIEXEC" --allow-run-as-root --oversubscribe --bind-to none \
    --mca btl self,vader,tcp --mca btl_vader_single_copy_mechanism none -np 2 \
    "${wrap[@]}" "$CIFAR_MPI" "${args[@]}" >"$logs/out.txt" 2>"$logs/err.txt"
  local rc=$?
  set -e
  cat "$logs/out.txt" "$logs/err.txt" >"$logs/all.txt"
  [[ $rc -eq $code ]] || { cat "$logs/all.txt"; fail "$name: '${args[*]}' exited $rc, expected $code"; }
  local n
  n=$(grep -c "error:" "$logs/all.txt" || true)
  [[ $n -eq 1 ]] || { cat "$logs/all.txt"; fail "$name: '${args[*]}' printed $n error lines, expected 1"; }
  grep -qE '^\[rank [0-9]+/2 [^]]*\] error: ' "$logs/all.txt" ||
    { cat "$logs/all.txt"; fail "$name: '${args[*]}': the error line names no rank"; }
  grep -q -- "$pattern" "$logs/all.txt" ||
    { cat "$logs/all.txt"; fail "$name: '${args[*]}' error does not mention '$pattern'"; }
  local after
  after=$(find "$cases/$name" "$inputs" | sort)
  [[ $after == "$before" ]] ||
    { diff <(echo "$before") <(echo "$after") || true; fail "$name: '${args[*]}' left files behind"; }
  echo "ok (exit $rc): ${args[*]:0:6} -> $(grep error: "$logs/all.txt")"
}
# expect_failure NAME CODE PATTERN ...: check_failure, started in the background.
expect_failure() { background "logs/$1.log" check_failure "$@"; }

mkdir -p logs "$inputs"
cp "$E2E_DATA" "$inputs/good.h5"
for name in missing unreadable not_hdf5 data_folder truncated corrupted output_under_file output_read_only \
  metrics_under_file metrics_read_only data_fifo data_device resume_folder declares_more no_checksum \
  output_folder metrics_fifo output_is_input same_output long_name checkpoint_dir_file old_layout corrupted_resealed; do
  mkdir -p "$cases/$name/out"
done

# Data files.
cp "$inputs/good.h5" "$inputs/unreadable.h5"
chmod 000 "$inputs/unreadable.h5"
mkdir "$inputs/folder.h5"
head -c 100000 "$inputs/good.h5" >"$inputs/truncated.h5"
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
cp "$inputs/good.h5" "$inputs/corrupted.h5"
"$PYTHON" - "$inputs/corrupted.h5" <<'PY'
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
cp "$inputs/corrupted.h5" "$inputs/corrupted_resealed.h5"
reseal "$inputs/corrupted_resealed.h5"
# Inputs that would block the reader (a FIFO) or feed it without end (a device).
mkfifo "$inputs/fifo.h5"
# HDF5 files that declare more than they hold, or hold it without checksums.
craft() {  # craft OUT KIND: a copy of the good file, changed by h5py
  cp "$inputs/good.h5" "$1"
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
craft "$inputs/declares_more.h5" declares-more
craft "$inputs/no_checksum.h5" no-checksum
# What the output cases write to: a folder under a regular file, a read-only
# folder, a folder and a FIFO where a file should be, a copy of the data.
for name in output_under_file metrics_under_file checkpoint_dir_file; do touch "$cases/$name/plain_file"; done
for name in output_read_only metrics_read_only; do mkdir -m 555 "$cases/$name/read_only"; done
mkdir "$cases/output_folder/folder.h5"
mkfifo "$cases/metrics_fifo/fifo.h5"
cp "$inputs/good.h5" "$cases/output_is_input/input_copy.h5"
# cifar_pack: a 120-byte archive whose header claims a 4 GiB member.
"$PYTHON" - hostile.tar.gz <<'PY'
import gzip, sys, tarfile
member = tarfile.TarInfo("cifar-10-batches-bin/data_batch_1.bin")
member.size = 4 << 30
open(sys.argv[1], "wb").write(gzip.compress(member.tobuf(tarfile.USTAR_FORMAT)))
PY
all_before=$(files_now)

data="$inputs/missing.h5" expect_failure missing 6 "no such file"
data="$inputs/unreadable.h5" expect_failure unreadable 6 "unreadable.h5': cannot be read (Permission denied)" --as-user
data="$here/bad_input.sh" expect_failure not_hdf5 6 "not an HDF5 file"
data="$inputs/folder.h5" expect_failure data_folder 6 "folder.h5': is a folder"
data="$inputs/truncated.h5" expect_failure truncated 6 \
  "truncated.h5': truncated: cifar_pack wrote $(stat -c %s "$inputs/good.h5") bytes, 100000 are left"
# A file packed before the checksum header: refused with the command that repacks it.
old_layout=$SOURCE_DIR/tests/data/old-layout-synthetic-2-1.h5
data="$old_layout" expect_failure old_layout 6 "has no checksum header (it was packed by a cifar_pack older than the header"
data="$inputs/corrupted.h5" expect_failure corrupted 6 "corrupted.h5': damaged: the MD5 of its bytes after the header is"
data="$inputs/corrupted_resealed.h5" expect_failure corrupted_resealed 6 "checksum error"

# Output and metrics paths: a folder under a regular file, and a read-only folder.
c=$cases/output_under_file
output="$c/plain_file/model.pth" expect_failure output_under_file 2 "--output $c/plain_file/model.pth"
c=$cases/output_read_only
output="$c/read_only/model.pth" expect_failure output_read_only 2 "--output $c/read_only/model.pth" --as-user
c=$cases/metrics_under_file
metrics="$c/plain_file/m.jsonl" expect_failure metrics_under_file 2 "--metrics $c/plain_file/m.jsonl"
c=$cases/metrics_read_only
metrics="$c/read_only/m.jsonl" expect_failure metrics_read_only 2 "--metrics $c/read_only/m.jsonl" --as-user

# Inputs that would block the reader (a FIFO) or feed it without end (a
# device): refused before they are opened.
data="$inputs/fifo.h5" expect_failure data_fifo 6 "fifo.h5': is not a regular file (a FIFO, socket or device)"
data=/dev/zero expect_failure data_device 6 "'/dev/zero': is not a regular file"
expect_failure resume_folder 6 "checkpoint '$inputs/folder.h5' is a folder, not a file" -- --resume "$inputs/folder.h5"

# HDF5 files that declare more than they hold, or hold it without checksums.
data="$inputs/declares_more.h5" expect_failure declares_more 6 \
  "dataset /train/images: declares 1661 chunk(s) of data but only 1 were ever written"
data="$inputs/no_checksum.h5" expect_failure no_checksum 6 "dataset /train/labels: has no Fletcher32 checksum filter"

# Outputs that could only fail after training, or that would replace an input.
c=$cases/output_folder
output="$c/folder.h5" expect_failure output_folder 2 \
  "--output $c/folder.h5 is a folder, not a file; name a file to write"
c=$cases/metrics_fifo
metrics="$c/fifo.h5" expect_failure metrics_fifo 2 "--metrics $c/fifo.h5 is not a regular file"
c=$cases/output_is_input
data="$c/input_copy.h5" output="$c/input_copy.h5" expect_failure output_is_input 2 \
  "--output $c/input_copy.h5 is the same file as --data $c/input_copy.h5: an output never overwrites an input"
output=out/same.jsonl metrics=out/same.jsonl expect_failure same_output 2 "--output and --metrics name the same file"
long_name=out/$(printf 'm%.0s' {1..250}).pth  # fine for the file system, too long for its temporary name
output=$long_name expect_failure long_name 2 "--output $long_name: cannot create out/.$(basename "$long_name").tmp-"
c=$cases/checkpoint_dir_file
expect_failure checkpoint_dir_file 2 \
  "--checkpoint-dir $c/plain_file: cannot write to folder $c/plain_file" -- --checkpoint-dir "$c/plain_file"

# cifar_pack on the hostile archive, meanwhile.
rc=0
/usr/bin/time -q -f %M -o logs/pack_rss.txt "$CIFAR_PACK" --input hostile.tar.gz --output logs/x.h5 >logs/pack.txt 2>&1 || rc=$?
wait_background "a bad input was not refused as expected"

# What some cases must show beyond the common checks.
grep -q "dataset /train/images" logs/corrupted_resealed/all.txt || fail "the checksum error does not name the dataset"
grep -qF "repack it with \`cifar_pack --input cifar-10-binary.tar.gz --output $old_layout\` (a synthetic file: the \`cifar_pack --synthetic\` command that made it)" logs/old_layout/all.txt ||
  fail "the message does not give the command that repacks the file"
rss_kib=$(tail -n 1 logs/declares_more/rss.txt)
echo "peak memory of a rank: $((rss_kib / 1024)) MiB for a $(stat -c %s "$inputs/declares_more.h5")-byte file declaring 1.7 million images"
((rss_kib < 1024 * 1024)) || fail "a rank used $((rss_kib / 1024)) MiB: sizes were allocated before they were checked"
for name in output_read_only metrics_read_only; do
  [[ -z $(ls -A "$cases/$name/read_only") ]] || fail "files were written: $(ls -A "$cases/$name/read_only")"
done
cmp -s "$inputs/good.h5" "$cases/output_is_input/input_copy.h5" || fail "the input was changed"
grep -q "(File name too long); choose another path" logs/long_name/all.txt || fail "the reason is not named"
files_after=$(files_now)
[[ $files_after == "$all_before" ]] ||
  { diff <(echo "$all_before") <(echo "$files_after") || true; fail "the runs left files behind"; }

rss_kib=$(tail -n 1 logs/pack_rss.txt)
{ [[ $rc == 6 ]] && grep -q "data_batch_1.bin claims 4294967296 bytes, more than the 30730000 of a CIFAR-10 batch file" \
  logs/pack.txt; } || { cat logs/pack.txt; fail "cifar_pack on a hostile $(stat -c %s hostile.tar.gz)-byte archive: exit $rc"; }
((rss_kib < 1024 * 1024)) || fail "cifar_pack used $((rss_kib / 1024)) MiB on a 4 GiB claim"
[[ ! -e logs/x.h5 ]] || fail "cifar_pack wrote output"
echo "ok (exit 6, peak $((rss_kib / 1024)) MiB): cifar_pack on a $(stat -c %s hostile.tar.gz)-byte archive -> $(grep error: logs/pack.txt)"
# cifar_pack's output: a folder it cannot write is one line before any input
# is read (exit 2); an earlier file it replaces is said.
rc=0
"$CIFAR_PACK" --synthetic 64 --test-count 32 --output "$cases/checkpoint_dir_file/plain_file/x.h5" >logs/pack_out.txt 2>&1 ||
  rc=$?
{ [[ $rc == 2 && $(wc -l <logs/pack_out.txt) == 1 ]] &&
  grep -q "error: --output $cases/checkpoint_dir_file/plain_file/x.h5: cannot write to folder" logs/pack_out.txt; } ||
  { cat logs/pack_out.txt; fail "cifar_pack into an unwritable folder: exit $rc"; }
# A read-only file system is named as such, not as a permission (a tmpfs
# mounted read-only; mounting needs root, as CI runs).
if [[ $(id -u) == 0 ]] && mkdir -p ro_fs && mount -t tmpfs -o ro,size=1m tmpfs ro_fs 2>/dev/null; then
  rc=0
  "$CIFAR_PACK" --synthetic 64 --test-count 32 --output ro_fs/x.h5 >logs/pack_ro.txt 2>&1 || rc=$?
  umount ro_fs
  { [[ $rc == 2 ]] && grep -q "cannot write to folder $PWD/ro_fs (read-only file system)" logs/pack_ro.txt; } ||
    { cat logs/pack_ro.txt; fail "a read-only file system was not named: exit $rc"; }
else
  echo "note: the read-only file system case needs root (mount); left out"
fi
# A --tensorboard folder on a full file system: the run fails at its start
# and leaves neither the folder it made nor its lock file (a 64 KiB tmpfs,
# filled).
if [[ $(id -u) == 0 ]] && mkdir -p full_fs && mount -t tmpfs -o size=64k tmpfs full_fs 2>/dev/null; then
  dd if=/dev/zero of=full_fs/filler bs=4k count=64 2>/dev/null || true
  rc=0
  "$CIFAR_MPI" --data "$E2E_DATA" --tensorboard full_fs/tb --output logs/tb.pth --metrics "" --max-steps 2 \
    --eval false >logs/tb_full.txt 2>&1 || rc=$?
  left=$(find full_fs -mindepth 1 ! -name filler)
  umount full_fs
  { [[ $rc != 0 && -z $left ]] && grep -q "No space left on device" logs/tb_full.txt; } ||
    { cat logs/tb_full.txt; fail "--tensorboard on a full disk: exit $rc, left: ${left:-nothing}"; }
  echo "ok (exit $rc): --tensorboard on a full file system leaves nothing behind"
else
  echo "note: the full file system case needs root (mount); left out"
fi
"$CIFAR_PACK" --synthetic 64 --test-count 32 --output logs/twice.h5 >/dev/null
"$CIFAR_PACK" --synthetic 64 --test-count 32 --output logs/twice.h5 | grep -q "^replaced the earlier data file packed by cifar_pack logs/twice.h5 (" ||
  fail "cifar_pack replaced its --output without a word"
echo "PASS"
