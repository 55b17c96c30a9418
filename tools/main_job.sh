#!/usr/bin/env bash
# tools/main_job.sh — the main job in one command: install packages, build,
# pack CIFAR-10 into data/cifar10.h5 (once, and again when it was packed by a
# cifar_pack older than the file's checksum header), and train the PyTorch DDP
# recipe (config/default.ini) data-parallel with mpirun.
#
#   tools/main_job.sh                      # 2 ranks
#   NP=4 tools/main_job.sh --epochs 2      # extra arguments go to cifar_mpi
#   PRESET=cuda tools/main_job.sh          # built against PyPI's LibTorch 2.x (cuda12: drivers below R580)
#
# The default build is the `cpu` preset, Debian's LibTorch 1.13: what a new
# machine installs in half a minute, and what the run was shown bit-identical
# with the PyTorch recipe on. PRESET=cuda builds against the LibTorch 2.x in
# .venv-torch (tools/setup.sh makes it: 2.6 GB of wheels, too much for a first
# run), which trains about 20% faster on a 2-core Xeon VM, with its own
# rounding (docs/dev/ci.md, "The main job on either LibTorch").
#
# Data, first found wins: $CIFAR10_ARCHIVE (the .tar.gz or its extracted
# folder), data/cifar-10-binary.tar.gz, data/cifar-10-batches-bin, else a
# download (needs internet).
set -euo pipefail
cd "$(dirname "$0")/.."

np=${NP:-2}
h5=data/cifar10.h5
preset=${PRESET:-cpu}
case $preset in
  cpu) ;;
  cuda)
    [[ -x .venv-torch/bin/python ]] ||
      { echo "main_job: PRESET=cuda builds against .venv-torch, which is not there; make it with tools/setup_torch.sh" >&2; exit 2; } ;;
  cuda12)
    [[ -x .venv-torch-cuda12/bin/python ]] ||
      { echo "main_job: PRESET=cuda12 builds against .venv-torch-cuda12, which is not there; make it with tools/setup_torch.sh cuda12" >&2; exit 2; } ;;
  *) echo "main_job: PRESET is cpu (the default), cuda or cuda12, not '$preset'" >&2; exit 2 ;;
esac

# Only what this job needs: the packages to build and run the program (no
# test, Slurm or Python packages, no PyPI torch), and only its two programs.
bash tools/setup.sh --main-job
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)" --target cifar_mpi cifar_pack

# A file packed by a cifar_pack older than the checksum header (docs/data.md)
# is refused by the reader; it is packed again here, from the same sources.
header="cifar_mpi packed CIFAR-10, HDF5 from byte 512"
if [[ -f $h5 ]] && ! cmp -s -n ${#header} "$h5" <(printf %s "$header"); then
  echo "main_job: $h5 has no checksum header (packed by an older cifar_pack): packing it again"
  repack=1
fi
if [[ ! -f $h5 || -n ${repack:-} ]]; then
  source_path=""
  for candidate in "${CIFAR10_ARCHIVE:-}" data/cifar-10-binary.tar.gz data/cifar-10-batches-bin; do
    if [[ -n $candidate && -e $candidate ]]; then source_path=$candidate; break; fi
  done
  if [[ -z $source_path ]]; then
    echo "main_job: no CIFAR-10 archive found; downloading (set CIFAR10_ARCHIVE to use a local copy)"
    bash tools/download_cifar10.sh data
    source_path=data/cifar-10-binary.tar.gz
  fi
  mkdir -p data
  "build/$preset/cifar_pack" --input "$source_path" --output "$h5"
fi

mkdir -p runs
mpi_flags=()
[[ $(id -u) -eq 0 ]] && mpi_flags+=(--allow-run-as-root)
if ((np > $(nproc))); then
  echo "main_job: $np ranks on $(nproc) cores: oversubscribing (each rank gets a share of a core)"
  mpi_flags+=(--oversubscribe)
fi
# One rank per core slot; each rank sizes its threads from the cores it is bound to.
exec mpirun "${mpi_flags[@]}" -np "$np" "build/$preset/cifar_mpi" --config config/default.ini --data "$h5" "$@"
