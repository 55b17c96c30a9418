#!/usr/bin/env bash
# tools/main_job.sh — the main job in one command: install packages, build,
# pack CIFAR-10 into data/cifar10.h5 (once, and again when it was packed by a
# cifar_pack older than the file's checksum header), and train the reference recipe
# (config/default.ini) data-parallel with mpirun.
#
#   tools/main_job.sh                      # 2 ranks
#   NP=4 tools/main_job.sh --epochs 2      # extra arguments go to cifar_mpi
#
# Data, first found wins: $CIFAR10_ARCHIVE (the .tar.gz or its extracted
# folder), data/cifar-10-binary.tar.gz, data/cifar-10-batches-bin,
# ../shared/data/cifar-10-binary.tar.gz, else a download (needs internet).
set -euo pipefail
cd "$(dirname "$0")/.."

np=${NP:-2}
h5=data/cifar10.h5

# Only what this job needs: the packages to build and run the program (no
# test, Slurm or Python packages, no PyPI torch), and only its two programs.
bash tools/setup.sh --main-job
cmake --preset cpu >/dev/null
cmake --build --preset cpu -j "$(nproc)" --target cifar_mpi cifar_pack

# A file packed by a cifar_pack older than the checksum header (docs/data.md)
# is refused by the reader; it is packed again here, from the same sources.
header="cifar_mpi packed CIFAR-10, HDF5 from byte 512"
if [[ -f $h5 ]] && ! cmp -s -n ${#header} "$h5" <(printf %s "$header"); then
  echo "main_job: $h5 has no checksum header (packed by an older cifar_pack): packing it again"
  repack=1
fi
if [[ ! -f $h5 || -n ${repack:-} ]]; then
  source_path=""
  for candidate in "${CIFAR10_ARCHIVE:-}" data/cifar-10-binary.tar.gz data/cifar-10-batches-bin \
                   ../shared/data/cifar-10-binary.tar.gz; do
    if [[ -n $candidate && -e $candidate ]]; then source_path=$candidate; break; fi
  done
  if [[ -z $source_path ]]; then
    echo "main_job: no CIFAR-10 archive found; downloading (set CIFAR10_ARCHIVE to use a local copy)"
    bash tools/download_cifar10.sh data
    source_path=data/cifar-10-binary.tar.gz
  fi
  mkdir -p data
  build/cpu/cifar_pack --input "$source_path" --output "$h5"
fi

mkdir -p runs
mpi_flags=()
[[ $(id -u) -eq 0 ]] && mpi_flags+=(--allow-run-as-root)
if ((np > $(nproc))); then
  echo "main_job: $np ranks on $(nproc) cores: oversubscribing (each rank gets a share of a core)"
  mpi_flags+=(--oversubscribe)
fi
# One rank per core slot; each rank sizes its threads from the cores it is bound to.
exec mpirun "${mpi_flags[@]}" -np "$np" build/cpu/cifar_mpi --config config/default.ini --data "$h5" "$@"
