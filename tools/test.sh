#!/usr/bin/env bash
# tools/test.sh — everything a newcomer or CI needs to run the tests:
#   tools/test.sh          the default `cpu` preset, every label (no torch
#                          download): what to run before every commit
#   tools/test.sh --all    the four presets below, warnings as errors
#                          (-DCIFAR_WERROR=ON) and clang-tidy: what CI runs
#                          (.ci/run)
# It installs the system packages (tools/setup.sh) and, for the cuda and
# cuda12 presets, their pinned PyPI torch; then a gate of seconds, before anything builds:
# `tools/lint.sh format floors names shell` (formatting, include floors,
# file names in comments and docs, the shell scripts' lint). Then, for each preset, it configures, builds and
# runs ctest, the `unit` label first, so that a broken change fails in
# minutes:
#   cpu        Debian's LibTorch 1.13 (CPU), gcc: every target, every label.
#   cpu-debug  Debian's LibTorch 1.13, clang 14 with ASan + UBSan (every
#              finding fatal) and libFuzzer: the unit and MPI test programs,
#              cifar_mpi and the fuzz harnesses (build target test_programs);
#              the unit, fuzz and mpi labels (each harness replays its
#              committed inputs, then fuzzes for CIFAR_FUZZ_SECONDS). Then
#              `tools/lint.sh tidy`: clang-tidy over src/ with this preset's
#              compile database (estimated at ~6 minutes on 2 cores).
#   cuda       PyPI's LibTorch 2.15 cu132 from .venv-torch: every target, so
#              each GPU source compiles and links; the unit label and the
#              tests that depend on the LibTorch (kCudaTests: files, exact
#              resumes, end-to-end training) run against it, the Python tests
#              with that venv's torch.
#   cuda12     PyPI's LibTorch 2.10 cu128 from .venv-torch-cuda12 (the CUDA 12
#              flavour, for drivers R525-R575): the programs, then the tests
#              of the CUDA stack check and of --check-env, which start the
#              programs against that LibTorch and its CUDA 12 runtime.
# With cpu and cuda, the cpu build's Python tests that load its model files
# run a second time with the venv's python: model files from Debian's
# LibTorch against a current torch.load. CIFAR_PRESETS (e.g. "cpu cuda") overrides the presets; with
# --all, or where CI is set (CI=true), the configure gets -DCIFAR_WERROR=ON.
# Other arguments go to ctest and replace each preset's label selection
# (tools/test.sh -L unit, tools/test.sh --all -R sampler); clang-tidy is
# then left out. A failing step does not stop the next preset; the script
# fails at the end, naming what failed. CIFAR_TEST_PRUNE=1 (CI) removes
# each preset's build once it has run, to bound the disk the run needs.
# docs/dev/ci.md has the times and the disk.
set -euo pipefail
cd "$(dirname "$0")/.."

all=0
ctest_args=()
for arg in "$@"; do
  if [[ $arg == --all ]]; then all=1; else ctest_args+=("$arg"); fi
done
set -- "${ctest_args[@]}"
default_presets=cpu
((all)) && default_presets="cpu cpu-debug cuda cuda12"
read -r -a presets <<<"${CIFAR_PRESETS:-${CIFAR_PRESET:-$default_presets}}"
werror=OFF
[[ $all == 1 || -n ${CI:-} ]] && werror=ON
# The CUDA presets' torch flavours (tools/setup_torch.sh) and their venvs.
declare -A kFlavourOf=([cuda]=cuda13 [cuda12]=cuda12) kVenvOf=([cuda]=.venv-torch [cuda12]=.venv-torch-cuda12)
setup_torch=0
torch_flavours=()
setup_sanitizers=0
for p in "${presets[@]}"; do
  [[ $p == cuda ]] && setup_torch=1
  [[ $p == cpu-debug ]] && setup_sanitizers=1
done
# cuda13 first, whatever the presets' order: the cpu preset's Python tests use it.
for p in cuda cuda12; do
  [[ " ${presets[*]} " == *" $p "* ]] && torch_flavours+=("${kFlavourOf[$p]}")
done
CIFAR_SETUP_TORCH=0 CIFAR_SETUP_SANITIZERS=$setup_sanitizers bash tools/setup.sh
# The realdata test packs the real CIFAR-10 archive, named by CIFAR_REAL_DATA,
# else found where the main job looks for it; without one it is left out, and
# this says so.
: "${CIFAR_REAL_DATA:=${CIFAR10_ARCHIVE:-data/cifar-10-binary.tar.gz}}"
have_real_data=0
if [[ -f $CIFAR_REAL_DATA ]]; then
  CIFAR_REAL_DATA=$(realpath "$CIFAR_REAL_DATA")  # ctest runs the test in the build folder
  export CIFAR_REAL_DATA
  have_real_data=1
else
  echo "== test.sh: the realdata test is left out: no CIFAR-10 archive at '$CIFAR_REAL_DATA' (set CIFAR_REAL_DATA" \
    "or CIFAR10_ARCHIVE to cifar-10-binary.tar.gz, or put it in data/; tools/download_cifar10.sh data fetches it)"
fi
# The Enroot and Pyxis tests (label enroot) build both from their sources,
# which neither Debian nor PyPI ships: a folder holding enroot/ and pyxis/,
# named by CIFAR_THIRD_PARTY; without one they are left out, and this says so.
have_third_party=0
if [[ -n ${CIFAR_THIRD_PARTY:-} && -f $CIFAR_THIRD_PARTY/enroot/enroot.in && -f $CIFAR_THIRD_PARTY/pyxis/Makefile ]]; then
  CIFAR_THIRD_PARTY=$(realpath "$CIFAR_THIRD_PARTY")
  export CIFAR_THIRD_PARTY
  have_third_party=1
else
  echo "== test.sh: the Enroot and Pyxis tests are left out: no enroot/ and pyxis/ sources in" \
    "CIFAR_THIRD_PARTY='${CIFAR_THIRD_PARTY:-}' (tests/README.md says where to get them)"
fi
# The gate: seconds, before anything builds or downloads.
echo "== test.sh: gate: tools/lint.sh format floors names shell"
bash tools/lint.sh format floors names shell ||
  { echo "== test.sh: the gate failed (above: each failure names its file and the fix); nothing was built" >&2; exit 1; }
disk_free() { df -h --output=avail . | tail -n 1 | tr -d ' '; }
echo "== test.sh: $(disk_free) free on the disk of $PWD"
# PyPI's torch (per flavour about 3 GB of wheels to download and 5-7 GB to
# unpack on a new machine, 50-190 s) installs in the background, one flavour
# at a time, while the presets that do not use it build and test; whatever
# uses a flavour waits for it first, and a cuda preset starts the install of
# the next flavour as it begins.
pending_flavours=("${torch_flavours[@]}")
ready_flavours=" "
torch_pid=
torch_flavour=
mkdir -p build
start_next_flavour() {
  [[ -z $torch_pid ]] && ((${#pending_flavours[@]})) || return 0
  torch_flavour=${pending_flavours[0]}
  pending_flavours=("${pending_flavours[@]:1}")
  bash tools/setup_torch.sh "$torch_flavour" >"build/setup_torch-$torch_flavour.log" 2>&1 &
  torch_pid=$!
}
# need_flavour FLAVOUR: returns once its venv is ready (those queued before it first).
need_flavour() {
  local rc
  while [[ $ready_flavours != *" $1 "* ]]; do
    start_next_flavour
    [[ -n $torch_pid ]] || { echo "== test.sh: torch flavour $1 was not set up" >&2; exit 1; }
    rc=0
    wait "$torch_pid" || rc=$?
    torch_pid=
    sed 's/^/setup_torch: /' "build/setup_torch-$torch_flavour.log"
    ((rc == 0)) || { echo "== test.sh: tools/setup_torch.sh $torch_flavour failed ($rc)" >&2; exit "$rc"; }
    ready_flavours+="$torch_flavour "
  done
}
start_next_flavour
# With CIFAR_TEST_PRUNE=1 (.ci/run: a one-off machine whose free disk is not
# known), each preset's build folder, all but its Testing/ logs, is removed
# once its tests have run, and a flavour's venv once no later preset uses it:
# the run's disk peak is that of one preset, not of all four (docs/dev/ci.md).
# prune PRESET LATER...: LATER are the presets still to run; the cuda
# flavour's venv also serves a later cpu run (its Python tests).
prune() {
  [[ ${CIFAR_TEST_PRUNE:-0} == 1 ]] || return 0
  local preset=$1 later=" ${*:2} "
  find "build/$preset" -mindepth 1 -maxdepth 1 ! -name Testing -exec rm -rf {} +
  if [[ -n ${kVenvOf[$preset]:-} && $later != *" $preset "* ]] && [[ $preset != cuda || $later != *" cpu "* ]]; then
    rm -rf "${kVenvOf[$preset]}"
  fi
  echo "== test.sh: pruned build/$preset (CIFAR_TEST_PRUNE=1): $(disk_free) free"
}

jobs=$(nproc)
# What the cuda run adds to its unit label: the tests whose outcome depends on
# the LibTorch under test, because they read or write its files or train and
# evaluate with it end to end: the checkpoint and model files and exact
# resumes, training against the Python recipe, the evaluation tool, the
# programs that reduce or gather tensors across two ranks, the program's own
# start-up. Launching, signals, stalls, bad input and containers do not
# depend on it (the same code above LibTorch): the cpu run has them.
readonly kCudaTests='^checkpoint\.(make_data|resume_[a-z]+|bad_checkpoints|damaged_checkpoints|run_identity)$'\
'|^e2e\.(make_data|equivalence|python_accuracy|cifar_eval|target_accuracy)$'\
'|^(gradient_reducer|muon_distributed|evaluation|comm_mpi)_test\.np2$|^program\.'
# The CUDA stack's and placement's unit tests (CudaStack, GpuBinding; the
# CUDA presets run each GoogleTest program as one test), the program's
# start-up, the GPU proof's dry run.
readonly kCuda12Tests='^(gpu_unit_test|comm_unit_test)$|^program\.|^gpu_check\.dry_run$'
# The cuda12 build: the programs users run and the test programs its tests
# start (the GPU proof's GPU_BUILD_TARGETS, cifar_eval and the two unit
# programs); the cuda build compiles every target.
readonly kCuda12Targets=(cifar_mpi cifar_pack cifar_eval compare_models gpu_unit_test comm_unit_test gpu_test gpu_step_test)
failed=()
for index in "${!presets[@]}"; do
  preset=${presets[index]}
  echo "== test.sh: preset $preset ($(disk_free) free)"
  [[ -z ${kFlavourOf[$preset]:-} ]] || need_flavour "${kFlavourOf[$preset]}"
  start_next_flavour
  t0=$SECONDS
  # CI's cpu run, like the CUDA and cpu-debug presets, runs each GoogleTest
  # program as one test (LibTorch loaded once per program); run alone, or given
  # ctest arguments, it keeps one test per TEST, so that -R picks TESTs.
  per_program=()
  [[ $preset == cpu ]] && per_program=("-DCIFAR_UNIT_TESTS_PER_PROGRAM=$((all == 1 && $# == 0))")
  cmake --preset "$preset" "-DCIFAR_WERROR=$werror" "${per_program[@]}"
  targets=()
  [[ $preset == cuda12 && $# -eq 0 ]] && targets=(--target "${kCuda12Targets[@]}")
  cmake --build --preset "$preset" -j "$jobs" "${targets[@]}"
  echo "== test.sh: preset $preset configured and built in $((SECONDS - t0)) s"
  t0=$SECONDS
  # A failing preset does not stop the next one; the script fails at the end.
  if (($#)); then
    ctest --preset "$preset" -j 1 --timeout 600 "$@" || failed+=("$preset")
  elif [[ $preset == cuda12 ]]; then
    # The CUDA 12 flavour differs from cuda in its LibTorch and CUDA runtime
    # alone, whose every test the cuda run has: here the programs start
    # against them (--check-env, the placement, the CUDA stack's own check)
    # and the GPU proof's dry run trains each path for a few steps.
    ctest --preset "$preset" -j 1 --timeout 600 -R "$kCuda12Tests" || failed+=("$preset")
  elif [[ $preset == cpu-debug ]]; then
    # Its test preset selects unit|mpi|fuzz. The GoogleTest programs (one test
    # each) and the harnesses (one process, one core each) run two at a time,
    # the unit label first; the MPI launches one at a time. Three Pack tests
    # write and read whole-size archives (184 MB: the layout's own counts),
    # 40 s in the cpu run and over 2 minutes under ASan, where the harness of
    # the same reader (fuzz.cifar_binary) covers its parsing: left out here.
    GTEST_FILTER=-Pack.GeneratedArchiveMatchesItsBinFiles:Pack.AnArchiveWithAChangedByteIsRefusedAsDamaged:Pack.AHardLinkedMemberHoldsItsTargetsBytes \
      ctest --preset "$preset" -j 2 --timeout 900 -L unit || failed+=("$preset (unit)")
    ctest --preset "$preset" -j 2 --timeout 900 -L fuzz -LE unit || failed+=("$preset (fuzz)")
    ctest --preset "$preset" -j 1 --timeout 600 -L mpi -LE 'unit|fuzz|e2e|robustness|multinode|slurm' \
      || failed+=("$preset (mpi)")
  else
    # The unit tests are one process each (cpu: each TEST; cuda: each
    # program), most of their second loading LibTorch: two at a time halve
    # their time on 2 cores (154 s -> 74 s).
    # The others launch several MPI ranks, or time signals and stalls: one at
    # a time. The cuda run has every unit test (even the torch-free ones
    # link LibTorch, whose wheels export libstdc++ code that once changed
    # what torch-free code did: src/util/paths.hpp) and kCudaTests
    # (docs/dev/ci.md).
    left_out=unit\|slurm
    ((have_real_data)) || left_out+=\|realdata
    ((have_third_party)) || left_out+=\|enroot
    rest=(-LE "$left_out")
    # The GPU proof's dry run is the cuda12 run's when there is one (it
    # trains each path against LibTorch 2.x), else the cpu run's.
    [[ $preset == cpu && " ${presets[*]} " == *" cuda12 "* ]] && rest+=(-E '^gpu_check\.dry_run$')
    [[ $preset == cuda ]] && rest=(-R "$kCudaTests")
    ctest --preset "$preset" -j 2 --timeout 600 -L unit || failed+=("$preset (unit)")
    ctest --preset "$preset" -j 1 --timeout 600 "${rest[@]}" || failed+=("$preset")
    # The Slurm tests (cpu only) side by side: each runs its own cluster and
    # mostly waits for Slurm (~45 s together, ~110 s one at a time).
    if [[ $preset == cpu ]]; then
      ctest --preset "$preset" -j 6 --timeout 600 -L slurm || failed+=("$preset (slurm)")
    fi
  fi
  # The model files that the apt LibTorch writes, read by the current torch.load
  # of the wheel: the cpu build's Python tests that load them (the model file,
  # cifar_eval's recomputation) once more with the venv's python.
  venv_py=$PWD/${kVenvOf[cuda]}/bin/python
  if [[ $preset == cpu && $setup_torch == 1 && $# -eq 0 ]]; then
    need_flavour "${kFlavourOf[cuda]}"
    cmake --preset cpu "-DCIFAR_TEST_PYTHON=$venv_py" >/dev/null
    ctest --preset cpu -j 1 --timeout 600 -L python -R '^(model\.python_interop|e2e\.cifar_eval)$' ||
      failed+=("cpu (Python tests with $venv_py)")
    cmake --preset cpu -UCIFAR_TEST_PYTHON >/dev/null
  fi
  echo "== test.sh: preset $preset tested in $((SECONDS - t0)) s"
  # clang-tidy needs this preset's compile database (clang 14), not its build.
  if [[ $preset == cpu-debug && $# -eq 0 ]]; then
    bash tools/lint.sh tidy build/cpu-debug || failed+=("cpu-debug (clang-tidy: tools/lint.sh tidy)")
  fi
  prune "$preset" "${presets[@]:index+1}"
done
if ((${#failed[@]})); then
  echo "== test.sh: failed: ${failed[*]}" >&2
  exit 1
fi
