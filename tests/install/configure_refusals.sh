#!/usr/bin/env bash
# What the configure refuses, each with one message that names what it found
# and what to use: a compiler older than C++20 needs (a stand-in g++ that
# reports GCC 10), a compiler that ignores -std=c++20 (a stand-in whose
# __cplusplus stays C++17), a LibTorch outside the tested range (stand-in
# LibTorch configs of 1.12 and 2.16), and a LibTorch whose CUDA targets name
# a target that nothing defines (a stand-in 2.10 that links torch::nvtoolsext,
# as LibTorch releases before the CUDA flavours' did). The last two configure
# the real project against the stand-in with -DTorch_DIR; the configure stops
# right after find_package(Torch), before anything is built.
#   configure_refusals.sh WORK
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
# WORK (fresh, the working folder) and fail.
# shellcheck source=tests/e2e/common.sh
source "$source_dir/tests/e2e/common.sh"
work=$WORK

# refused NAME REGEX CMAKE-ARGS...: configuring fails, and its one error
# message (CMake's "CMake Error at ...:" block) matches REGEX.
refused() {
  local name=$1 regex=$2 out
  shift 2
  out=$work/$name.log
  if cmake -S "$source_dir" -B "$work/$name" -G Ninja -DCIFAR_BUILD_TESTS=OFF -DCIFAR_TORCH_PYTHON= "$@" >"$out" 2>&1; then
    cat "$out"
    fail "$name: the configure succeeded"
  fi
  local errors
  errors=$(grep -c '^CMake Error' "$out" || true)
  ((errors == 1)) || { cat "$out"; fail "$name: $errors error messages, not one"; }
  # CMake folds a long message over several lines: join them to match.
  local message
  message=$(sed -n '/^CMake Error/,/^$/p' "$out" | tr -s ' \n' ' ')
  grep -Eq -- "$regex" <<<"$message" || { cat "$out"; fail "$name: the message does not match /$regex/"; }
  echo "ok   $name:$(sed -n '/^CMake Error/,/^Call Stack/p' "$out" | sed '1d;$d' | tr -s ' \n' ' ')"
}

# A stand-in compiler: GCC 12 that says it is GCC 10 (CMake reads the version
# from __GNUC__ when it identifies the compiler).
old_gcc=$work/gcc10/g++
mkdir -p "${old_gcc%/*}"
cat >"$old_gcc" <<'EOF'
#!/bin/sh
exec g++ -U__GNUC__ -D__GNUC__=10 -Wno-builtin-macro-redefined "$@"
EOF
chmod +x "$old_gcc"
refused old_compiler "C\+\+ compiler .*g\+\+ \(GNU 10\.[0-9.]*\) is too old: cifar_mpi needs C\+\+20: GCC 11\+ or clang 14\+" \
  -DCMAKE_CXX_COMPILER="$old_gcc"

# A stand-in compiler that takes -std=c++20 but compiles C++17, as GCC 10
# does in part (its __cplusplus is 201709L).
no_cxx20=$work/nocxx20/g++
mkdir -p "${no_cxx20%/*}"
cat >"$no_cxx20" <<'EOF'
#!/bin/bash
args=("${@/#-std=c++20/-std=c++17}")
exec g++ "${args[@]}"
EOF
chmod +x "$no_cxx20"
refused compiler_without_cxx20 "C\+\+ compiler .* does not compile C\+\+20 \(__cplusplus < 202002L with -std=c\+\+20\): cifar_mpi needs C\+\+20" \
  -DCMAKE_CXX_COMPILER="$no_cxx20"

# stand_in_torch DIR VERSION [LINKS]: a LibTorch CMake config of VERSION whose
# torch target links LINKS.
stand_in_torch() {
  mkdir -p "$1"
  cat >"$1/TorchConfigVersion.cmake" <<EOF
set(PACKAGE_VERSION "$2")
set(PACKAGE_VERSION_COMPATIBLE TRUE)
EOF
  cat >"$1/TorchConfig.cmake" <<EOF
add_library(torch INTERFACE IMPORTED)
set_target_properties(torch PROPERTIES INTERFACE_LINK_LIBRARIES "${3:-}")
set(TORCH_LIBRARIES torch)
set(TORCH_INSTALL_PREFIX "$1")
set(TORCH_CXX_FLAGS "")
set(Torch_FOUND TRUE)
EOF
}
stand_in_torch "$work/torch-2.16/share/cmake/Torch" 2.16.0
refused torch_too_new "LibTorch 2\.16\.0 \(.*torch-2\.16/share/cmake/Torch\) is outside the range cifar_mpi is tested with, 1\.13 to 2\.15: use .*tools/setup_torch.sh \(torch 2\.15, cuda preset\); or configure with -DCIFAR_TORCH_ANY_VERSION=ON" \
  -DTorch_DIR="$work/torch-2.16/share/cmake/Torch"
stand_in_torch "$work/torch-1.12/share/cmake/Torch" 1.12.1
refused torch_too_old "LibTorch 1\.12\.1 .* is outside the range cifar_mpi is tested with, 1\.13 to 2\.15: use Debian's libtorch-dev 1\.13" \
  -DTorch_DIR="$work/torch-1.12/share/cmake/Torch"
stand_in_torch "$work/torch-nvtx/share/cmake/Torch" 2.10.0 "torch::cudart;torch::nvtoolsext"
refused torch_cuda_targets "LibTorch 2\.10\.0 .* links CUDA targets that are not defined here \(torch::cudart, torch::nvtoolsext\)" \
  -DTorch_DIR="$work/torch-nvtx/share/cmake/Torch"
echo PASS
