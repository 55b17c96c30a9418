#!/usr/bin/env bash
# tools/setup.sh — install every system package that cifar_mpi's build, tests
# and main job need on Debian 12 / Ubuntu 22.04+, then (tools/setup_torch.sh)
# the pinned PyPI torch with CUDA in .venv-torch/ (4.6 GB) that the `cuda`
# preset builds against; its 2.6 GB of wheels are kept in
# ~/.cache/cifar_mpi/wheels, and CIFAR_SETUP_TORCH=0 skips that step.
# `tools/setup.sh --main-job` (what tools/main_job.sh runs) installs only what
# configuring the `cpu` preset, building cifar_mpi and cifar_pack and running
# them needs: no test, Slurm, Python or PyPI packages.
# Idempotent: packages already present are not touched and `apt-get update`
# runs at most once per call, only when something is missing. Works as root
# or through sudo.
set -euo pipefail

main_job_only=0
[[ ${1:-} == --main-job ]] && main_job_only=1

packages=(
  # toolchain
  build-essential cmake ninja-build pkg-config ccache git
  # a faster linker than GNU ld (CMakeLists.txt: CIFAR_LINKER)
  mold
  # libraries the program links
  libtorch-dev libopenmpi-dev openmpi-bin libhdf5-dev
  libboost-program-options-dev libarchive-dev
  # fast BLAS for LibTorch on CPU (the reference BLAS is ~1.7x slower)
  libopenblas0-pthread
  # the `cpu` preset configures the tests too (find_package(GTest))
  libgtest-dev
)
if ((!main_job_only)); then
  packages+=(
    hdf5-tools
    # tests
    googletest iproute2 procps time util-linux
    # Slurm for the job-script tests
    slurm-wlm munge
    # install tests: Lmod loads the module files; dpkg-shlibdeps finds the .deb's dependencies
    lmod dpkg-dev
    # Python side: golden files, the reference recipe, plots
    python3 python3-torch python3-torchvision python3-numpy python3-matplotlib python3-h5py
    # the project-local venvs: PyPI-only test tools (dev/setup_python_tools.sh)
    # and PyPI's CUDA torch (tools/setup_torch.sh)
    python3-venv
    # script linting
    shellcheck
  )
fi

# The cpu-debug preset (CIFAR_SETUP_SANITIZERS=1, which tools/test.sh sets when
# it runs that preset): clang with ASan, UBSan and libFuzzer (runtimes in libclang-rt).
if [[ ${CIFAR_SETUP_SANITIZERS:-0} == 1 ]]; then packages+=(clang-14 libclang-rt-14-dev); fi

if [[ $(id -u) -eq 0 ]]; then sudo=(); else sudo=(sudo); fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${#missing[@]} package(s): ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all ${#packages[@]} packages present"
fi

# Debian's libtorch picks its BLAS through the alternatives system; make sure the
# pthread OpenBLAS wins over the reference BLAS (the difference is ~1.7x).
for alt in libblas.so.3-x86_64-linux-gnu liblapack.so.3-x86_64-linux-gnu; do
  target=$(update-alternatives --list "$alt" 2>/dev/null | grep openblas-pthread | head -n1 || true)
  if [[ -n $target ]]; then
    "${sudo[@]}" update-alternatives --set "$alt" "$target" >/dev/null
  fi
done

((main_job_only)) && exit 0
# PyPI packages Debian does not ship (TensorBoard's reader), pinned, in .venv-tools.
bash "$(dirname "$0")/../dev/setup_python_tools.sh"
# PyPI's CUDA LibTorch for the cuda preset, pinned, in .venv-torch.
if [[ ${CIFAR_SETUP_TORCH:-1} != 0 ]]; then
  bash "$(dirname "$0")/setup_torch.sh"
fi
