#!/usr/bin/env bash
# dev/gpu_check.sh — owns the proof run of cifar_mpi on a GPU machine that
# has no network, in two calls of one device machine each:
#
#   prove    (the default) unpack the carried Debian dependencies
#            (dev/gpu_deps.sh), build the `cuda` preset's programs and GPU
#            tests (`cuda12` with --flavour cuda12) against the machine's pip
#            LibTorch and NCCL, run the GPU tests under short per-test
#            timeouts, then `cifar_mpi --self-test` (every GPU path once, its
#            table in the summary; at np 2 too, and a rank's injected fault,
#            where the machine has 2 or more GPUs) and the graphed runs the
#            self-test has no row for; one table, each step PASS, FAIL (with
#            its log's first error line) or SKIP. Sized for 5 minutes of one
#            H200, the build included.
#   measure  the benchmarks: cifar_mpi eager and graphed against PyTorch
#            eager and torch.compile for the convnet and resnet18 in fp32 and
#            bf16, the profile for the scaling model, the speed recipes
#            (E1, speed94_muon, speed94 at np 1, 2, 4, 8 as GPUs allow) and
#            the peers (fulcrum's E1, Hiverge, airbench94) by the record's
#            compute-honest rules (docs/time_to_accuracy.md); then exact resume,
#            --check-env's placement and the CPU suites against this LibTorch.
#
# Every step logs to $OUT/<step>.log under its own timeout; a failing step
# does not stop the others; $OUT/summary.md (rewritten after every step) has
# the tables. The whole run keeps to GPU_DEADLINE_S: a step that would start
# later is reported SKIP. At the end the logs go into one archive
# (GPU_ARCHIVE).
#
# The dry run (--dry-run or GPU_DRY_RUN=1) runs the same steps on this
# machine's CPU with the cpu preset's programs (build/cpu), the MPI backend
# and --device cpu: every path a CPU can run really runs, the rest is SKIP
# (needs a GPU). CI runs the prove pass as a dry run (ctest gpu_check.dry_run), so the
# script itself is tested before a device is lent.
#
# Usage, from the repository root:
#   OUT=/some/dir bash dev/gpu_check.sh prove          # the first device call
#   OUT=/some/dir bash dev/gpu_check.sh prove --flavour cuda12  # the CUDA 12 build (drivers R525+)
#   OUT=/some/dir bash dev/gpu_check.sh measure        # the second
#   OUT=/some/dir bash dev/gpu_check.sh build test_gpu # chosen steps, in order
#   OUT=/some/dir bash dev/gpu_check.sh prove --dry-run  # on a CPU machine
# Needs, carried next to the working tree: .debs (dev/gpu_deps.sh download);
# for measure also .gpu/ddp_recipe.py (a copy of the PyTorch DDP recipe) and
# the peers (.gpu/airbench, .gpu/hiverge, .gpu/fulcrum); .gpu/cifar-10-batches-bin is optional (synthetic binary-layout
# data is made when it is absent).
set -euo pipefail
cd "$(dirname "$0")/.."
readonly repo=$PWD

# ---- the call: prove, measure or named steps; the dry run -------------------
: "${GPU_DRY_RUN:=0}"
args=()
# --flavour cuda13 (the default: the `cuda` preset, drivers R580+) or cuda12
# (the `cuda12` preset, drivers R525+): which build is made and run.
: "${GPU_FLAVOUR:=cuda13}"
while (($#)); do
  case $1 in
    --dry-run) GPU_DRY_RUN=1 ;;
    --flavour) GPU_FLAVOUR=${2:-}; shift ;;
    --flavour=*) GPU_FLAVOUR=${1#--flavour=} ;;
    *) args+=("$1") ;;
  esac
  shift
done
case $GPU_FLAVOUR in
  cuda13) readonly kPreset=cuda ;;
  cuda12) readonly kPreset=cuda12 ;;
  *) echo "gpu_check: --flavour is cuda13 or cuda12 (got '$GPU_FLAVOUR')" >&2; exit 2 ;;
esac
set -- "${args[@]}"
if [[ ${1:-} == __step ]]; then :
elif [[ $# == 0 || $1 == prove ]]; then GPU_MODE=prove
elif [[ $1 == measure ]]; then GPU_MODE=measure
else GPU_MODE=steps; fi
: "${GPU_MODE:=steps}"
export GPU_MODE GPU_DRY_RUN GPU_FLAVOUR

# ---- settings (environment) -------------------------------------------------
# The prove call's deadline is 5 minutes of device time, the build included
# (its budget per step: docs/dev/gpu_check.md); the others keep 8 minutes.
if [[ $GPU_MODE == prove ]]; then : "${GPU_DEADLINE_S:=300}"; else : "${GPU_DEADLINE_S:=480}"; fi
: "${OUT:=$repo/build/gpu-check}"
: "${GPU_DEBS:=.debs}"                     # from dev/gpu_deps.sh download
: "${GPU_PREFIX:=/tmp/cifar-gpudeps}"      # where the .debs are unpacked
: "${GPU_WORK:=/tmp/cifar-gpu-work}"       # data files, models, scratch
# The flavour's preset's binary dir (the dry run: the cpu preset's); relative
# to the repository root, or absolute.
if [[ $GPU_DRY_RUN == 1 ]]; then : "${GPU_BUILD:=build/cpu}"; else : "${GPU_BUILD:=build/$kPreset}"; fi
: "${GPU_JOBS:=$(nproc)}"
# What the build step compiles: the programs and the GPU tests first (the
# device time is short); test_cpu builds the rest when it runs.
: "${GPU_BUILD_TARGETS:=cifar_mpi cifar_pack compare_models gpu_test gpu_step_test}"
: "${GPU_PYTHON:=}"                        # empty: the flavour's venv (tools/setup_torch.sh), else
                                           # /opt/torch/.venv/bin/python3, else python3
: "${GPU_CUDA_HOME:=${CUDA_HOME:-/usr/local/cuda}}"
: "${GPU_SEED_DDP:=.gpu/ddp_recipe.py}"      # the PyTorch DDP recipe (convnet peer)
: "${GPU_AIRBENCH:=.gpu/airbench}"         # a copy of airbench (airbench94.py, make_data.py)
: "${GPU_HIVERGE:=.gpu/hiverge}"           # a copy of hiverge/cifar10-speedrun (cifar10_speedrun.py)
: "${GPU_FULCRUM:=.gpu/fulcrum}"           # a copy of fulcrumresearch/cifar-10-speedrun (runners/recipes/e1.py)
: "${GPU_SPEED_RUNS:=3}"                   # measured runs of each side (and world size) in record_*
: "${GPU_WORLD_SIZES:=1 2 4 8}"            # cifar_mpi's in record_*_cpp, those the GPUs allow
: "${GPU_RECORD_TARGET:=0.94}"             # the accuracy of record_*'s pass rate and p-value
: "${GPU_RECORD_ARGS:=--cuda-graphs true}" # cifar_mpi's further arguments in record_*_cpp
: "${GPU_BIN_DATA:=.gpu/cifar-10-batches-bin}"  # binary-layout data for the Python peers
# Images in the synthetic data sets: enough for the benchmarks' epochs; the
# prove pass's runs take a few steps of a small file (a CPU's steps are slow).
if [[ $GPU_MODE != prove ]]; then : "${GPU_IMAGES:=20000}" "${GPU_TEST_IMAGES:=10000}"
elif [[ $GPU_DRY_RUN == 1 ]]; then : "${GPU_IMAGES:=1024}" "${GPU_TEST_IMAGES:=256}"
else : "${GPU_IMAGES:=4096}" "${GPU_TEST_IMAGES:=1024}"; fi
: "${GPU_BATCH:=256}"                      # per-rank batch, both sides of each comparison
: "${GPU_BENCH_EPOCHS:=2}"                 # the last epoch's rate is the cifar_mpi figure
: "${GPU_SEED_WORKERS:=0}"                 # DataLoader workers for the DDP recipe (0: in process;
                                           # its 8 worker processes hung on one H200 machine)
# cifar_pack arguments before `--output FILE` (the data tool's synthetic mode).
: "${GPU_PACK_ARGS:=--synthetic $GPU_IMAGES --test-count $GPU_TEST_IMAGES}"
# Arguments every cifar_mpi run shares; the training runs add theirs.
: "${GPU_TRAIN_ARGS:=--batch-size $GPU_BATCH --log-every 10}"
# The prove pass's runs: batch and optimiser steps per run (a graphed run
# warms up 3 steps, captures the 4th and replays the rest), and the
# --comm-timeout that lets the watchdog name a stalled collective well
# before the step's own limit ends the run.
if [[ $GPU_DRY_RUN == 1 ]]; then : "${GPU_PROVE_BATCH:=32}" "${GPU_PROVE_STEPS:=4}"
else : "${GPU_PROVE_BATCH:=256}" "${GPU_PROVE_STEPS:=12}"; fi
: "${GPU_COMM_TIMEOUT:=30}"
# ctest's limit per GPU test: below test_gpu's own, so that a hung test is
# named by ctest instead of the whole step ending as a timeout.
: "${GPU_CTEST_TIMEOUT:=60}"
# Each step's limit in seconds (120 when not listed). The prove pass's
# (deps .. prove_*) are sized for an H200 machine with 16 cores: their usual
# times add up to about 4 minutes on one GPU (docs/dev/gpu_check.md); a run's
# limit is its --comm-timeout and 15 s of start-up, so a stall still prints
# the watchdog's message. The self-test's rows have their own limit (90 s
# each), so a hung row is its FAIL before the step's limit.
: "${GPU_STEP_TIMEOUTS:=deps=30 env=20 build=120 pack=15 test_gpu=100 self_test=150 self_test_np2=150 self_test_fault_np2=120 prove_speed94_muon_graphs=75 prove_e1_graphs=75 prove_muon_mpi2=45 prove_captured_collectives=10 prove_newton_schulz_bf16=10 train_graphs=90 check_env=45 train_nccl=60 train_mpi2=60 bench_convnet_cpp=45 bench_convnet_py=90 bench_resnet18_cpp=45 bench_convnet_torch=150 bench_resnet18_torch=180 bench_convnet_bf16=45 bench_resnet18_bf16=45 bench_resnet18_nocl=45 bench_convnet_host=45 test_cpu=150 train_resume=120 bench_resnet18_host=45 bench_convnet_graphs=45 bench_resnet18_graphs=45 bench_convnet_graphs_bf16=45 bench_resnet18_graphs_bf16=45 profile=90 record_e1=300 record_hiverge=240 record_e1_cpp=150 record_e1_cpp_bf16=150 record_speed94_muon_cpp=150 record_airbench=150 record_speed94_cpp=150}"
: "${GPU_ARCHIVE:=1}"                      # 1: at the end, every log in $OUT/gpu_check_logs.tgz, beside summary.md only
# The PyTorch peers' variants (dev/bench/torch_peer_bench.py): eager and
# torch.compile's CUDA-graph mode, fp32 and bf16, as cifar_mpi's four below.
readonly kPeerVariants=eager,compile,eager-bf16,compile-bf16
# The prove pass: the build, the GPU tests, the two paths they alone reach
# (read from their log), the self-test (a row per path; at np 2 and with an
# injected fault where there are 2 or more GPUs), then the runs of paths it
# has no row for.
readonly kProveSteps=(deps env build pack test_gpu prove_captured_collectives prove_newton_schulz_bf16
                      self_test self_test_np2 self_test_fault_np2 prove_speed94_muon_graphs prove_e1_graphs
                      prove_muon_mpi2)
# The measure pass, in order of what it needs most, as the deadline may cut
# the tail: the throughput table (fp32 first), the profile for the scaling
# model, the speed recipes and their peers by the record's rules, then exact
# resume, the placement check and the CPU suites against this LibTorch.
readonly kMeasureSteps=(deps env build pack
                        bench_convnet_cpp bench_convnet_graphs bench_convnet_torch
                        bench_resnet18_cpp bench_resnet18_graphs bench_resnet18_torch
                        bench_convnet_bf16 bench_convnet_graphs_bf16 bench_resnet18_bf16 bench_resnet18_graphs_bf16
                        profile
                        record_e1 record_hiverge record_e1_cpp record_speed94_muon_cpp
                        record_airbench record_speed94_cpp record_e1_cpp_bf16
                        bench_convnet_py
                        bench_convnet_host bench_resnet18_host bench_resnet18_nocl
                        train_resume check_env test_cpu)
# What each step of the prove pass proves (its row in the table).
declare -A kPath=(
  [deps]="the carried MPI, HDF5, Boost and archive libraries"
  [env]="driver, toolkit and torch versions"
  [build]="the cuda preset's programs and GPU tests"
  [pack]="the synthetic data file"
  [test_gpu]="the GPU tests (ctest -L gpu)"
  [prove_captured_collectives]="a captured broadcast and all-gather at np 1 (gpu_step_test)"
  [prove_newton_schulz_bf16]="bf16 against fp32 Newton-Schulz on the GPU (gpu_test)"
  [self_test]="cifar_mpi --self-test at np 1: every single-rank path (its table below)"
  [self_test_np2]="cifar_mpi --self-test at np 2: NCCL all-reduce and NCCL in a CUDA graph (its table below)"
  [self_test_fault_np2]="a rank's fault in the self-test at np 2 ends the job, naming the rank"
  [prove_speed94_muon_graphs]="speed94_muon, graphs off and on, equal bit for bit (--deterministic true)"
  [prove_e1_graphs]="e1 at 24, 28 and 32 px (a graph each), graphs off and on, equal bit for bit"
  [prove_muon_mpi2]="Muon at np 2 over MPI on CUDA tensors"
)

h5=$GPU_WORK/synthetic-$GPU_IMAGES.h5
figures=$GPU_WORK/figures

# ---- helpers ------------------------------------------------------------------
python_bin() {
  local venv=$repo/.venv-torch
  [[ $GPU_FLAVOUR == cuda12 ]] && venv=$repo/.venv-torch-cuda12
  if [[ -n $GPU_PYTHON ]]; then echo "$GPU_PYTHON"
  elif [[ -x $venv/bin/python ]]; then echo "$venv/bin/python"
  elif [[ -x /opt/torch/.venv/bin/python3 ]]; then echo /opt/torch/.venv/bin/python3
  else command -v python3; fi
}

dry() { [[ $GPU_DRY_RUN == 1 ]]; }

# skip REASON: ends the step as SKIP (REASON); run_step reads the reason.
skip() {
  echo "$1" >"$figures/$step.skip"
  echo "SKIP: $1"
  exit 77
}

# load_env: the relocated dependencies, CUDA's tools, the Python with torch.
# The dry run uses this machine's own (an Open MPI that runs as root and
# oversubscribes the CPUs, as the tests' launches do).
load_env() {
  if dry; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
    export OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader,tcp}
    export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
  elif [[ -f $GPU_PREFIX/env.sh ]]; then
    # shellcheck source=/dev/null
    source "$GPU_PREFIX/env.sh"
  fi
  if [[ -x $GPU_CUDA_HOME/bin/nvcc ]]; then
    export PATH=$GPU_CUDA_HOME/bin:$PATH CUDACXX=$GPU_CUDA_HOME/bin/nvcc CUDAToolkit_ROOT=$GPU_CUDA_HOME
  fi
  PY=$(python_bin)
}

figure() { printf '%s\n' "$*" >"$figures/$step"; }
# joined ITEMS...: the items separated by "; ".
joined() { local IFS=';' all; all="$*"; echo "${all//;/; }"; }

# build_dir: GPU_BUILD as an absolute path.
build_dir() { if [[ $GPU_BUILD == /* ]]; then echo "$GPU_BUILD"; else echo "$repo/$GPU_BUILD"; fi; }
cifar_mpi_bin() { echo "$(build_dir)/cifar_mpi"; }

# tool_bin NAME: a built tool, wherever its folder's CMakeLists puts it.
tool_bin() {
  local f
  f=$(find "$(build_dir)" -name "$1" -type f -perm -u+x -not -path '*/tests/containers/*' -print -quit 2>/dev/null)
  [[ -n $f ]] || { echo "$1 was not built under $GPU_BUILD" >&2; return 1; }
  echo "$f"
}

# last_metric KEY JSONL: KEY in the last record of a cifar_mpi metrics file
# (JSON Lines: epoch, train_loss, test_loss, test_accuracy, images_per_second).
last_metric() {
  "$PY" - "$@" <<'EOF'
import json, sys
key, path, value = sys.argv[1], sys.argv[2], ""
try:
    for line in open(path):
        value = json.loads(line).get(key, value)
except (OSError, ValueError):
    pass
print(f"{value:.4g}" if isinstance(value, float) else value)
EOF
}

# images_per_second NAME: the last epoch's rate of run NAME, from its metrics
# file or else the last "N img/s" in its log.
images_per_second() {
  local rate
  rate=$(last_metric images_per_second "$OUT/$1.jsonl")
  [[ -n $rate ]] || rate=$(grep -oE '[0-9][0-9.]* ?(img|images)/s' "$OUT/$1.log" | tail -n1 | grep -oE '^[0-9.]+' || true)
  if [[ -n $rate ]]; then printf '%.0f\n' "$rate"; else echo n/a; fi
}

# Open MPI binds each rank to one core by default; the trainer's threads need more.
readonly kMpirun=(mpirun --bind-to none)

# ---- steps (each runs in its own process, under `timeout`) ---------------------
step_deps() {
  if dry; then skip "dry run: this machine's own libraries"; fi
  bash dev/gpu_deps.sh unpack "$GPU_DEBS" "$GPU_PREFIX"
  bash dev/gpu_deps.sh selftest "$GPU_PREFIX"
  figure "prefix $(du -sh "$GPU_PREFIX" | cut -f1); $(grep -c 'hello from rank' "$OUT/deps.log" || true)/2 MPI ranks"
}

step_env() {
  if dry; then skip "dry run: no GPU stack to report"; fi
  local ok=0
  nvidia-smi || ok=1
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv || ok=1
  echo "== toolchain"
  local tool
  for tool in "nvcc --version" "gcc --version" "g++ --version" "cmake --version" "ninja --version" "ldd --version"; do
    echo "$ $tool: $($tool 2>&1 | grep -m1 -iE 'release|[0-9]+\.[0-9]+' || echo missing)"
  done
  echo "kernel $(uname -r); $(grep -m1 PRETTY_NAME /etc/os-release 2>/dev/null || true)"
  echo "== python: $PY"
  "$PY" - <<'EOF' || ok=1
import os, torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available(),
      "cxx11abi", torch.compiled_with_cxx11_abi(), "nccl", torch.cuda.nccl.version())
print("cmake_prefix_path", torch.utils.cmake_prefix_path)
import nvidia.nccl
nccl = list(nvidia.nccl.__path__)[0]
print("nvidia.nccl", nccl, sorted(os.listdir(os.path.join(nccl, "lib"))), os.path.exists(os.path.join(nccl, "include", "nccl.h")))
print("device", torch.cuda.get_device_name(0), torch.cuda.get_device_capability(0))
EOF
  local gpu
  gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -n1 || true)
  figure "${gpu:-no nvidia-smi}; torch $("$PY" -c 'import torch; print(torch.__version__)' 2>/dev/null || echo missing)"
  return "$ok"
}

step_build() {
  # The dry run's programs are the cpu preset's, built before it runs (ctest
  # builds nothing; the test that runs it depends on them being there).
  if dry; then
    "$(cifar_mpi_bin)" --help >/dev/null
    skip "dry run: $GPU_BUILD as built"
  fi
  local torch_prefix nccl_root
  torch_prefix=$("$PY" -c 'import torch; print(torch.utils.cmake_prefix_path)')
  nccl_root=$("$PY" -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])')
  local args=(--preset "$kPreset" -DCIFAR_BUILD_TESTS=ON
              "-DCMAKE_PREFIX_PATH=$torch_prefix;$GPU_PREFIX/usr"
              "-DNCCL_ROOT=$nccl_root" "-DPython3_EXECUTABLE=$PY" "-DCIFAR_TEST_PYTHON=$PY"
              "-DCIFAR_TORCH_PYTHON=$PY"
              # A lent machine's torch is whatever it has: the proof runs on it
              # even outside the tested range, and the env step records which.
              -DCIFAR_TORCH_ANY_VERSION=ON)
  if declare -p GPU_DEPS_CMAKE_ARGS >/dev/null 2>&1; then args+=("${GPU_DEPS_CMAKE_ARGS[@]}"); fi
  # The preset compiles through ccache, which a lent machine may lack.
  command -v ccache >/dev/null || args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=)
  local t0=$SECONDS
  cmake "${args[@]}" | tee "$GPU_WORK/configure.txt"
  local summary
  summary=$(grep -o 'LibTorch .*NCCL communicator: [A-Z]*' "$GPU_WORK/configure.txt" || true)
  local targets
  read -r -a targets <<<"$GPU_BUILD_TARGETS"
  # -k 0: one run shows every compile error, not only the first.
  cmake --build "$GPU_BUILD" -j "$GPU_JOBS" --target "${targets[@]}" -- -k 0
  grep -E '^(Torch_DIR|NCCL_LIBRARY|MPI_mpi_LIBRARY|HDF5_hdf5_LIBRARY_RELEASE|Boost_DIR|LibArchive_LIBRARY|GTest_DIR|CMAKE_CUDA_COMPILER):' \
    "$GPU_BUILD/CMakeCache.txt" | tee "$OUT/cmake_found.txt"
  ldd "$(cifar_mpi_bin)" | grep -E 'torch|c10|nccl|mpi|hdf5|boost|archive|not found' | tee "$OUT/cifar_mpi_ldd.txt"
  figure "${summary:-configure summary missing}; built in $((SECONDS - t0)) s, $GPU_JOBS jobs"
  "$(cifar_mpi_bin)" --help >/dev/null
  # A GPU build that fell back to the NCCL stub or a CPU LibTorch proves nothing.
  [[ $summary == *"CUDA in LibTorch: ON"*"NCCL communicator: ON" ]] ||
    { echo "the build has no CUDA LibTorch or no NCCL communicator: $summary"; return 1; }
}

# ctest_figure LOG: "passed/total" from ctest's summary line.
ctest_figure() {
  sed -nE 's/.*tests passed, ([0-9]+) tests failed out of ([0-9]+).*/\2 \1/p' "$1" | tail -n1 |
    awk '{printf "%d/%d passed", $1 - $2, $1}'
}

# The GPU tests, with -V so that every case's result is in the log (the
# prove_* rows below read theirs from it). A dry run's tests skip themselves
# (no device): the step is then SKIP.
step_test_gpu() {
  local rc=0
  ctest --test-dir "$(build_dir)/tests/gpu" -L gpu --no-tests=error -V --timeout "$GPU_CTEST_TIMEOUT" -j 1 || rc=$?
  local ran passed skipped
  ran=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: ' "$OUT/test_gpu.log" || true)
  passed=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .* Passed' "$OUT/test_gpu.log" || true)
  skipped=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*Skipped' "$OUT/test_gpu.log" || true)
  figure "of $ran test programs $passed passed, $skipped skipped, $((ran - passed - skipped)) failed"
  ((rc == 0)) || return "$rc"
  # ctest counts a program whose every case skipped as Skipped, not failed:
  # on the device that is a GPU the tests could not use.
  if ((skipped > 0)); then
    if dry; then skip "needs a GPU: ctest ran $ran test programs, each skipped itself"; fi
    skip "$skipped of $ran test programs skipped every case (no usable GPU? test_gpu.log)"
  fi
}

# gtest_row CASE: a prove row read from test_gpu's log: PASS, FAIL with the
# case's own output, or SKIP with the reason the test gave (no device).
gtest_row() {
  local case=$1 log=$OUT/test_gpu.log
  [[ -f $log ]] || { echo "error: test_gpu has not run (the prove pass runs it first)"; return 1; }
  # A failure first: the case runs at np 1 and np 2 in gpu_test, and may pass in one only.
  if ! grep -qF "[  FAILED  ] $case" "$log" && grep -qF "[       OK ] $case" "$log"; then
    figure "$case passed (test_gpu.log)"
    return 0
  fi
  # The case's lines, from its start to its result, without ctest's prefixes.
  sed -n "/\[ RUN      \] $case\$/,/\] $case (/p" "$log" | sed -E 's/^[0-9]+: //'
  if ! grep -qF "[  FAILED  ] $case" "$log" && grep -qF "[  SKIPPED ] $case" "$log"; then
    local why
    why=$(sed -n "/\[ RUN      \] $case\$/,/SKIPPED/p" "$log" | grep -A1 -m1 ': Skipped$' | tail -n1 | sed -E 's/^[0-9]+: //')
    if dry; then skip "needs a GPU"; fi
    skip "${why:-skipped by the test}"
  fi
  grep -qF "[  FAILED  ] $case" "$log" || echo "error: $case did not finish (its test program failed or timed out: test_gpu.log)"
  return 1
}
step_prove_captured_collectives() { gtest_row CudaGraphStep.CapturesBroadcastAndAllGatherAtOneRank; }
step_prove_newton_schulz_bf16() { gtest_row MuonOnGpu.Bf16NewtonSchulzMatchesFp32; }

# tiny NAME NP BACKEND [args...]: one prove run of GPU_PROVE_STEPS steps on
# the small synthetic file, with --comm-timeout GPU_COMM_TIMEOUT. The dry
# run: on the CPU with the MPI backend. Passes when the run succeeds and its
# last training loss is a finite number.
tiny() {
  local name=$1 np=$2 backend=$3 device=cuda
  shift 3
  if dry; then device=cpu backend=mpi; fi
  # A warm machine keeps the last call's files: none of them may pass for this run's.
  rm -f "$OUT/$name.jsonl" "$GPU_WORK/$name.pth"
  "${kMpirun[@]}" -np "$np" "$(cifar_mpi_bin)" --device "$device" --backend "$backend" --data "${TINY_DATA:-$h5}" \
    --epochs "${TINY_EPOCHS:-1}" --max-steps "${TINY_STEPS:-$GPU_PROVE_STEPS}" --comm-timeout "$GPU_COMM_TIMEOUT" --log-every 4 \
    --output "$GPU_WORK/$name.pth" --metrics "$OUT/$name.jsonl" "$@"
  local loss
  loss=$(last_metric train_loss "$OUT/$name.jsonl")
  [[ $loss =~ ^[0-9] ]] || { echo "error: $name: no finite training loss in $name.jsonl ('$loss')"; return 1; }
}

# prove_single NAME NP BACKEND [args...]: one run as a row; its figure is the loss.
prove_single() {
  tiny "$@"
  figure "train_loss $(last_metric train_loss "$OUT/$1.jsonl") after $GPU_PROVE_STEPS steps"
}

step_prove_muon_mpi2() {
  prove_single muon_mpi2 2 mpi --batch-size "$GPU_PROVE_BATCH" --optimizer muon --muon-matrices true
}

# gpu_count: the GPUs the driver lists (GPU_COUNT when set; 0 on a dry run).
gpu_count() {
  if [[ -n ${GPU_COUNT:-} ]]; then echo "$GPU_COUNT"
  elif dry; then echo 0
  else nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true; fi
}

# self_test NP [mpirun args...]: cifar_mpi --self-test at NP ranks, on the
# GPUs (--device cuda: a GPU it cannot use is an error; the dry run: the
# CPU). Its table goes to $OUT/<step>_table.md, which summary.md shows; its
# count line is the figure. On the device every GPU row must run: one that
# skipped proved nothing.
self_test() {
  local np=$1 device=cuda rc=0
  shift
  if dry; then device=cpu; fi
  "${kMpirun[@]}" "$@" -np "$np" "$(cifar_mpi_bin)" --self-test --device "$device" \
    --comm-timeout "$GPU_COMM_TIMEOUT" || rc=$?
  sed -n '/^self-test table:/,$p' "$OUT/$step.log" | grep '^|' >"$OUT/${step}_table.md" || true
  figure "$(grep -m1 -E '^self-test: [0-9]+ passed' "$OUT/$step.log" || echo 'no table printed')"
  ((rc == 0)) || return "$rc"
  if ! dry && grep -q 'needs a GPU' "$OUT/${step}_table.md"; then
    echo "error: a GPU row of the self-test skipped on the device"
    return 1
  fi
}

step_self_test() { self_test 1; }
step_self_test_np2() {
  (($(gpu_count) >= 2)) || skip "needs 2 or more GPUs"
  self_test 2
}
# A rank-local failure in the self-test's multi-rank rows (an injected
# fault on rank 1, which its single-rank rows' children do not see): the job
# must end, quickly and naming the rank, rather than hang. Ended so, the
# ranks leave their temporary folders: they go in one of the step's own.
step_self_test_fault_np2() {
  (($(gpu_count) >= 2)) || skip "needs 2 or more GPUs"
  local device=cuda rc=0 t0=$SECONDS tmp=$GPU_WORK/self_test_fault_tmp
  if dry; then device=cpu; fi
  mkdir -p "$tmp"
  CIFAR_FAULT_INJECT=rank=1,step=1,kind=throw TMPDIR=$tmp "${kMpirun[@]}" -x CIFAR_FAULT_INJECT -x TMPDIR -np 2 \
    "$(cifar_mpi_bin)" --self-test --device "$device" --comm-timeout "$GPU_COMM_TIMEOUT" || rc=$?
  rm -rf "$tmp"
  ((rc != 0)) || { echo "error: the fault injected on rank 1 did not end the job"; return 1; }
  grep -q 'injected fault .*rank 1 fails' "$OUT/$step.log" ||
    { echo "error: the job ended (exit code $rc) without naming rank 1's injected fault"; return 1; }
  figure "the job ended with exit code $rc after $((SECONDS - t0)) s, naming rank 1's fault"
}

# graphs_pair CONFIG [args...]: the speed recipe CONFIG (its model, optimiser,
# schedule and augmentation) with graphs off and on under --deterministic
# true; the models must be equal bit for bit. A CPU cannot capture: the dry
# run runs graphs off twice, which checks the comparison and the CPU's
# repeatability.
graphs_pair() {
  local config=$1 second=true
  shift
  if dry; then second=false; fi
  local args=(--config "config/$config.ini" --global-batch-size "$GPU_PROVE_BATCH" --eval false --deterministic true
              "$@")
  tiny "${config}_eager" 1 nccl "${args[@]}" --cuda-graphs false
  tiny "${config}_graphed" 1 nccl "${args[@]}" --cuda-graphs "$second"
  local diff
  diff=$(largest_difference "${config}_eager" "${config}_graphed" "$(sed -nE 's/^model *= *//p' "config/$config.ini")")
  figure "largest relative difference graphs off/$([[ $second == true ]] && echo on || echo off) ${diff:-n/a}"
  [[ $diff == 0 || $diff == 0.0 ]] || { echo "error: $config: graphed and eager models differ: ${diff:-no comparison}"; return 1; }
}
step_prove_speed94_muon_graphs() { graphs_pair speed94_muon; }
# E1's resolution schedule, an epoch at each size, each of 6 steps: 3 warm-up
# steps, then a captured graph per size, replayed.
step_prove_e1_graphs() {
  local data=$GPU_WORK/six-steps.h5
  "$(tool_bin cifar_pack)" --synthetic $((6 * GPU_PROVE_BATCH)) --test-count 64 --output "$data" >/dev/null
  TINY_DATA=$data TINY_EPOCHS=3 TINY_STEPS=18 graphs_pair e1 --resolution-schedule 24:1,28:1,32
}

step_test_cpu() {
  # The CPU-side suites against this machine's LibTorch, with the GPU hidden so
  # that `--backend auto` picks MPI on the CPU as on the CI machines. Not here:
  # the simulated hosts (need iproute2), Slurm, and the no-GPU error test.
  cmake --build "$GPU_BUILD" -j "$GPU_JOBS" -- -k 0
  CUDA_VISIBLE_DEVICES='' ctest --test-dir "$GPU_BUILD" -L 'unit|mpi' -LE 'gpu|multinode|slurm' \
    -E 'nccl_without_gpu' --output-on-failure --timeout 100 \
    -j "$((GPU_JOBS / 2 > 0 ? GPU_JOBS / 2 : 1))" ||
    { figure "$(ctest_figure "$OUT/test_cpu.log")"; return 1; }
  figure "$(ctest_figure "$OUT/test_cpu.log")"
}

# --check-env on the GPU: each rank's line has the GPU's NUMA node (sysfs, from
# its PCI bus id). Once as the training steps launch (np 1), and once
# mis-placed on purpose, which must warn at least 3 times: 2 ranks bound to
# one core each running 4 threads, the GPU hidden by CUDA_VISIBLE_DEVICES, an
# NCCL_SOCKET_IFNAME that names no interface.
step_check_env() {
  # --data: --check-env opens the data file as training does (step pack made it).
  "${kMpirun[@]}" -np 1 "$(cifar_mpi_bin)" --check-env --data "$h5" | tee "$OUT/check_env_launch.txt"
  CUDA_VISIBLE_DEVICES='' NCCL_SOCKET_IFNAME=ib9 mpirun --bind-to core -np 2 "$(cifar_mpi_bin)" --check-env \
    --data "$h5" --backend mpi --threads 4 | tee "$OUT/check_env_misplaced.txt"
  local launch misplaced
  launch=$(grep -c '^placement warning' "$OUT/check_env_launch.txt" || true)
  misplaced=$(grep -c '^placement warning' "$OUT/check_env_misplaced.txt" || true)
  figure "$(grep -m1 -oE 'device=[^ ]+ .*' "$OUT/check_env_launch.txt" | cut -c1-80); $launch warning(s) as launched, $misplaced mis-placed"
  ((misplaced >= 3)) || { echo "expected at least 3 warnings for the mis-placed launch, got $misplaced"; return 1; }
}

step_pack() {
  local pack args
  pack=$(tool_bin cifar_pack)
  read -r -a args <<<"$GPU_PACK_ARGS"
  mkdir -p "$GPU_WORK"
  "$pack" "${args[@]}" --output "$h5"
  h5dump -H "$h5" | head -n 40 || true
  figure "$(du -h "$h5" | cut -f1) $(basename "$h5") ($GPU_PACK_ARGS)"
}

# train NP BACKEND MODEL EPOCHS NAME [extra args...]: one cifar_mpi run on the
# synthetic file; its metrics go to $OUT/NAME.jsonl.
train() {
  local np=$1 backend=$2 model=$3 epochs=$4 name=$5 common
  shift 5
  read -r -a common <<<"$GPU_TRAIN_ARGS"
  "${kMpirun[@]}" -np "$np" "$(cifar_mpi_bin)" --backend "$backend" --device cuda --model "$model" \
    --data "$h5" --epochs "$epochs" --output "$GPU_WORK/$name.pth" --metrics "$OUT/$name.jsonl" \
    "${common[@]}" "$@"
}

train_figure() {
  local name=$1
  figure "train_loss $(last_metric train_loss "$OUT/$name.jsonl"), test_accuracy $(last_metric test_accuracy "$OUT/$name.jsonl"), $(images_per_second "$name") img/s"
}

step_train_nccl() { train 1 nccl convnet 1 train_nccl; train_figure train_nccl; }

# Checkpoints of a CUDA run, with deterministic cuDNN kernels: 2 epochs
# straight, twice, and the same run stopped at step 50 (a step checkpoint) and
# resumed with --resume auto. The figure has both largest relative
# differences: straight vs straight (what the GPU repeats) and straight vs
# resumed (the resume's own error); an exact resume has the second at 0.
step_train_resume() {
  local ckpt=$GPU_WORK/ckpt args=(--eval false --seed 3 --shuffle true --augment true --deterministic true)
  rm -rf "$ckpt"
  train 1 nccl convnet 2 resume_straight "${args[@]}"
  train 1 nccl convnet 2 resume_again "${args[@]}"
  train 1 nccl convnet 2 resume_first "${args[@]}" --checkpoint-dir "$ckpt" --checkpoint-every-steps 25 \
    --max-steps 50
  ls -l "$ckpt"
  train 1 nccl convnet 2 resume_second "${args[@]}" --checkpoint-dir "$ckpt" --resume auto | tee "$GPU_WORK/resume.log"
  grep -q 'resumed from checkpoint .*s000050' "$GPU_WORK/resume.log" || { echo "did not resume from step 50"; return 1; }
  local repeat resumed
  repeat=$(largest_difference resume_straight resume_again)
  resumed=$(largest_difference resume_straight resume_second)
  figure "resumed at step 50 of 158; largest relative difference straight/straight $repeat, straight/resumed $resumed"
}

# --cuda-graphs against eager steps with the same graph-safe optimiser, both
# with deterministic cuDNN: 2 epochs each (the last batch of an epoch is
# partial and runs eagerly between replays). The figure: the largest relative
# difference of the two models (0 when capture changes nothing) and both
# runs' images/s (deterministic kernels: see bench_*_graphs for the speed).
step_train_graphs() {
  local args=(--eval false --seed 3 --shuffle true --augment true --deterministic true --fused-optimizer true)
  train 1 nccl convnet 2 graphs_eager "${args[@]}" --cuda-graphs false
  train 1 nccl convnet 2 graphs_on "${args[@]}" --cuda-graphs true
  local diff
  diff=$(largest_difference graphs_eager graphs_on)
  figure "largest relative difference eager/graphed $diff; eager $(images_per_second graphs_eager) img/s, graphed $(images_per_second graphs_on) img/s"
  [[ $diff == 0 || $diff == 0.0 ]] || { echo "graphed and eager runs differ: $diff"; return 1; }
}

# largest_difference A B [MODEL]: compare_models' largest relative difference of two runs' models.
# (Its output goes to the step's log through a file: `tee /dev/stderr` would
# reopen the log and write over it from the start.)
largest_difference() {
  local report=$GPU_WORK/compare_$1_$2.txt
  "$(tool_bin compare_models)" --a "$GPU_WORK/$1.pth" --b "$GPU_WORK/$2.pth" --model "${3:-convnet}" --rtol 1e9 \
    >"$report" 2>&1 || true
  cat "$report" >&2
  sed -nE 's/.*largest relative difference ([0-9.e+-]+).*/\1/p' "$report" | tail -n1
}
step_train_mpi2() { train 2 mpi convnet 1 train_mpi2; train_figure train_mpi2; }

# bench_cpp MODEL VARIANT [extra args...]: images/s of one cifar_mpi setting.
bench_cpp() {
  local model=$1 variant=$2
  shift 2
  train 1 nccl "$model" "$GPU_BENCH_EPOCHS" "bench_${model}_${variant}" --eval false "$@"
  figure "$(images_per_second "bench_${model}_${variant}")"
}
step_bench_convnet_cpp() { bench_cpp convnet cpp; }
step_bench_resnet18_cpp() { bench_cpp resnet18 cpp; }
# Speed options, each against the default (fp32, channels_last, data on the GPU).
step_bench_convnet_bf16() { bench_cpp convnet bf16 --precision bf16; }
step_bench_resnet18_bf16() { bench_cpp resnet18 bf16 --precision bf16; }
step_bench_resnet18_nocl() { bench_cpp resnet18 nocl --channels-last false; }
step_bench_convnet_host() { bench_cpp convnet host --data-on-device false; }
step_bench_resnet18_host() { bench_cpp resnet18 host --data-on-device false; }
step_bench_convnet_graphs() { bench_cpp convnet graphs --cuda-graphs true; }
step_bench_resnet18_graphs() { bench_cpp resnet18 graphs --cuda-graphs true; }
step_bench_convnet_graphs_bf16() { bench_cpp convnet graphs_bf16 --cuda-graphs true --precision bf16; }
step_bench_resnet18_graphs_bf16() { bench_cpp resnet18 graphs_bf16 --cuda-graphs true --precision bf16; }

# binary_data: the Python peers' CIFAR-10 binary folder (synthetic when not carried).
binary_data() {
  if [[ -f $GPU_BIN_DATA/data_batch_1.bin ]]; then echo "$GPU_BIN_DATA"; return; fi
  local dir=$GPU_WORK/cifar-10-batches-bin-$GPU_IMAGES
  if [[ ! -f $dir/test_batch.bin ]]; then
    mkdir -p "$dir"
    "$PY" - "$dir" "$GPU_IMAGES" <<'EOF'
import os, sys
import numpy as np
out, n = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(0)
def write(name, rows):
    raw = rng.integers(0, 256, (rows, 3073), dtype=np.uint8)
    raw[:, 0] = rng.integers(0, 10, rows)
    raw.tofile(os.path.join(out, name + ".tmp"))
    os.replace(os.path.join(out, name + ".tmp"), os.path.join(out, name))
for i in range(1, 6):
    write(f"data_batch_{i}.bin", -(-n // 5))
write("test_batch.bin", 1000)
EOF
  fi
  echo "$dir"
}

step_bench_convnet_py() {
  [[ -f $GPU_SEED_DDP ]] || { echo "$GPU_SEED_DDP missing: carry a copy of the PyTorch DDP recipe script"; return 1; }
  local data
  data=$(binary_data)
  "$PY" "$GPU_SEED_DDP" --data "$data" --world-size 1 --epochs "$GPU_BENCH_EPOCHS" --batch-size "$GPU_BATCH" \
    --limit "$GPU_IMAGES" --workers "$GPU_SEED_WORKERS" --out "$GPU_WORK/seed_model.pth"
  figure "$(grep -oE 'images_per_second=[0-9.]+' "$OUT/bench_convnet_py.log" | tail -n1 | cut -d= -f2)"
}

# torch_peer MODEL: the PyTorch peers of one model, in one process, with the
# images on the GPU as cifar_mpi has them: eager and torch.compile
# (reduce-overhead: CUDA graphs), fp32 and bf16 (kPeerVariants). Each
# variant's images/s is also kept as figure peer_MODEL_VARIANT for the table.
torch_peer() {
  local model=$1 data v ips summary=()
  data=$(binary_data)
  "$PY" dev/bench/torch_peer_bench.py --model "$model" --variants "$kPeerVariants" --batch-size "$GPU_BATCH" \
    --steps 60 --warmup 10 --channels-last --data "$data" --limit "$GPU_IMAGES"
  for v in ${kPeerVariants//,/ }; do
    ips=$(sed -nE "s/^TORCH_PEER_RESULT model=$model variant=$v images_per_second=([0-9.]+).*/\1/p" "$OUT/$step.log" |
      tail -n1)
    echo "${ips:-n/a}" >"$figures/peer_${model}_$v"
    summary+=("$v ${ips:-n/a}")
  done
  figure "$(joined "${summary[@]}")"
}
step_bench_convnet_torch() { torch_peer convnet; }
step_bench_resnet18_torch() { torch_peer resnet18; }

# A 1-GPU `--profile true` run of each model (forward, backward and the rest
# of a step, measured), and tools/scaling_model's projection from it for 1 to
# 64 nodes of 8 GPUs (docs/scaling.md): the measured single-GPU input that
# replaces the assumed one there. Logs profile_MODEL.txt, scaling_MODEL.txt.
step_profile() {
  local m measured efficiency one=()
  for m in resnet18 convnet; do
    train 1 nccl "$m" 1 "profile_$m" --eval false --profile true --max-steps 60 2>&1 | tee "$OUT/profile_$m.txt"
    python3 tools/scaling_model/scaling_model.py --model "$m" --batch "$GPU_BATCH" --profile-log "$OUT/profile_$m.txt" \
      --ranks-per-node 8 --nodes 1 2 8 64 --inter-busbw 20 | tee "$OUT/scaling_$m.txt"
    measured=$(sed -nE 's/^one rank: (step [0-9.]+ ms \([^)]*\)).*/\1/p' "$OUT/scaling_$m.txt" | head -n1)
    efficiency=$(awk '$1 == 64 { print $NF }' "$OUT/scaling_$m.txt")
    one+=("$m $measured, efficiency at 64 x 8 GPUs $efficiency (overlap)")
  done
  figure "$(joined "${one[@]}"); projections in scaling_*.txt"
}

# The speed recipes and their peers by the CIFAR-10 record's compute-honest
# rules (docs/time_to_accuracy.md), on the same GPU and data: per run the
# preparation and training are timed, the build and the final evaluation are
# not, and every side is scored with the record's six views of every test
# image. Each step writes its runs to $OUT/<step>_runs.txt and
# dev/bench/tta_stats.py's summary (n, time mean ± sd, accuracy, pass rate,
# p-value) to $OUT/<step>_stats.txt; summary.md shows them. With the real
# archive carried as .gpu/cifar-10-batches-bin the accuracies mean something;
# on random data only the times compare. The dry run prints the commands
# (checking the step up to them) and skips.

# run_or_print CMD...: the command, or on a dry run its words.
run_or_print() {
  if dry; then printf '%q ' "$@"; echo; else "$@"; fi
}

# record_stats: the runs' summary as the step's figure and stats file.
record_stats() {
  dry && skip "dry run: commands printed"
  "$PY" "$repo/dev/bench/tta_stats.py" --target "$GPU_RECORD_TARGET" "$OUT/${step}_runs.txt" | tee "$OUT/${step}_stats.txt"
  figure "$(tail -n +2 "$OUT/${step}_stats.txt" | tr -s ' ' | paste -sd ';' -)"
}

# world_sizes: those of GPU_WORLD_SIZES the machine has GPUs for.
world_sizes() {
  local gpus np
  if dry; then gpus=1; else gpus=$(nvidia-smi -L | grep -c '^GPU'); fi
  for np in $GPU_WORLD_SIZES; do ((np > gpus)) || echo "$np"; done
}

# record_cpp CONFIG NAME [ARGS...]: cifar_mpi's recipe (with ARGS) at each
# world size, one warm-up run (left out) and GPU_SPEED_RUNS measured runs each.
record_cpp() {
  local config=$1 name=$2 np r run data=$GPU_WORK/speed94.h5
  shift 2
  dry || data=$(speed94_data)
  : >"$OUT/${step}_runs.txt"
  for np in $(world_sizes); do
    for ((r = -1; r < GPU_SPEED_RUNS; r++)); do
      run=$OUT/${name}_np${np}_$r
      # shellcheck disable=SC2086  # GPU_RECORD_ARGS: words
      run_or_print "${kMpirun[@]}" -np "$np" "$(cifar_mpi_bin)" --config "$config" --backend nccl --device cuda \
        --data "$data" --seed "$((r + 1))" --output "$GPU_WORK/${name}_np${np}_$r.pth" --metrics "$run.jsonl" \
        --tta mirror-translate --tta-fraction 1 $GPU_RECORD_ARGS "$@" >"$run.log" 2>&1
      if ((r < 0)) || dry; then continue; fi  # the warm-up: page cache, GPU clocks
      "$PY" "$repo/dev/bench/tta_stats.py" --cifar-mpi-run "$name@np$np" "$((r + 1))" "$run.log" "$run.jsonl" \
        >>"$OUT/${step}_runs.txt"
    done
  done
  dry && cat "$OUT/${name}"_np*.log
  record_stats
}

step_record_e1_cpp() { record_cpp config/e1.ini e1.ini; }
# E1 in bf16, what --precision auto would choose on the GPU: its time and
# accuracy beside record_e1_cpp's decide whether auto becomes E1's default.
step_record_e1_cpp_bf16() { record_cpp config/e1.ini e1_bf16 --precision bf16; }
step_record_speed94_muon_cpp() { record_cpp config/speed94_muon.ini speed94_muon.ini; }
step_record_speed94_cpp() { record_cpp config/speed94.ini speed94.ini; }

# record_peer PEER SCRIPT: dev/bench/record_peers.py on the peers' data, GPU_SPEED_RUNS runs.
record_peer() {
  local data=$GPU_WORK/airbench_data
  [[ -f $2 ]] || dry || { echo "$2 missing: carry a copy of the peer (docs/dev/gpu_check.md)"; return 1; }
  if dry; then python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read())' "$repo/dev/bench/record_peers.py"
  else data=$(airbench_data); fi
  run_or_print "$PY" "$repo/dev/bench/record_peers.py" "$1" "$2" --data "$data" \
    --seeds "$(seq -s, 0 $((GPU_SPEED_RUNS - 1)))" | tee "$OUT/${step}_runs.txt"
  record_stats
}

step_record_e1() { record_peer e1 "$GPU_FULCRUM/runners/recipes/e1.py"; }
step_record_hiverge() { record_peer hiverge "$GPU_HIVERGE/cifar10_speedrun.py"; }
step_record_airbench() { record_peer airbench "$GPU_AIRBENCH/airbench94.py"; }

# airbench_data: the peers' train.pt/test.pt (their make_data.py) of speed_binary_data.
airbench_data() {
  local bin data=$GPU_WORK/airbench_data
  bin=$(speed_binary_data)
  if [[ ! -f $data/train.pt ]]; then
    tar -C "$(dirname "$bin")" -czf "$GPU_WORK/airbench_src.tar.gz" "$(basename "$bin")" >&2
    "$PY" "$GPU_AIRBENCH/make_data.py" "$GPU_WORK/airbench_src.tar.gz" "$data" >&2
  fi
  echo "$data"
}

# speed_binary_data: CIFAR-10's binary layout at full size (5 x 10,000
# training and 10,000 test images, so the schedule is the published 476
# steps): the carried real folder, else random images and labels.
speed_binary_data() {
  if [[ -f $GPU_BIN_DATA/data_batch_1.bin ]]; then echo "$GPU_BIN_DATA"; return; fi
  local dir=$GPU_WORK/speed/cifar-10-batches-bin
  if [[ ! -f $dir/test_batch.bin ]]; then
    mkdir -p "$dir"
    "$PY" - "$dir" <<'EOF'
import os, sys
import numpy as np
out = sys.argv[1]
rng = np.random.default_rng(0)
with open(os.path.join(out, "batches.meta.txt"), "w") as f:
    f.write("\n".join(["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]) + "\n")
for name in [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]:
    raw = rng.integers(0, 256, (10000, 3073), dtype=np.uint8)
    raw[:, 0] = rng.integers(0, 10, 10000)
    raw.tofile(os.path.join(out, name + ".tmp"))
    os.replace(os.path.join(out, name + ".tmp"), os.path.join(out, name))
EOF
  fi
  echo "$dir"
}

# speed94_data: speed_binary_data packed as HDF5 for cifar_mpi (the images the peer trains on).
speed94_data() {
  local out=$GPU_WORK/speed94.h5
  [[ -f $out ]] || "$(tool_bin cifar_pack)" --input "$(speed_binary_data)" --output "$out" >&2
  echo "$out"
}

# ---- the driver -------------------------------------------------------------------
step_timeout() {
  local kv
  for kv in $GPU_STEP_TIMEOUTS; do
    [[ ${kv%%=*} == "$1" ]] && { echo "${kv#*=}"; return; }
  done
  echo 120
}

declare -A status=() seconds=()
ran=()

# figure_of NAME: a step's (or a peer variant's) figure, n/a when it has none.
figure_of() { cat "$figures/$1" 2>/dev/null || echo n/a; }
# ratio A B: A / B to two decimals, n/a unless both are numbers above 0.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2fx\n", a / b; else print "n/a" }'; }
# larger A B: the larger of two figures (n/a counts as nothing).
larger() { awk -v a="$1" -v b="$2" 'BEGIN { x = a + 0; y = b + 0; if (x <= 0 && y <= 0) print "n/a"; else print (x > y ? a : b) }'; }

# The throughput table: cifar_mpi eager and graphed against PyTorch eager and
# torch.compile (CUDA graphs), each model in fp32 and bf16, images/s at np 1.
throughput_table() {
  local m p eager_step graphed_step peer_suffix eager graphed torch_eager compiled best
  echo "| model | precision | cifar_mpi eager | cifar_mpi graphed | PyTorch eager | torch.compile | best cifar_mpi / eager | / compile |"
  echo "|---|---|---|---|---|---|---|---|"
  for m in convnet resnet18; do
    for p in fp32 bf16; do
      eager_step=cpp graphed_step=graphs peer_suffix=""
      [[ $p == bf16 ]] && { eager_step=bf16 graphed_step=graphs_bf16 peer_suffix=-bf16; }
      eager=$(figure_of "bench_${m}_$eager_step")
      graphed=$(figure_of "bench_${m}_$graphed_step")
      torch_eager=$(figure_of "peer_${m}_eager$peer_suffix")
      compiled=$(figure_of "peer_${m}_compile$peer_suffix")
      best=$(larger "$eager" "$graphed")
      echo "| $m | $p | $eager | $graphed | $torch_eager | $compiled | $(ratio "$best" "$torch_eager") | $(ratio "$best" "$compiled") |"
    done
  done
  echo
  echo "Goals (one H200): convnet fp32 at least 400,000 img/s; resnet18, fp32 and bf16, at least 1.2x"
  echo "PyTorch eager and at least 1.0x torch.compile. np 1, batch $GPU_BATCH, channels_last, data on the GPU, the"
  echo "last of $GPU_BENCH_EPOCHS epochs of $GPU_IMAGES images; the peers: dev/bench/torch_peer_bench.py (60 timed steps)."
}

# first_error LOG: the line that says why a step failed: the first
# "error:" line (cifar_mpi's, the watchdog's, the compiler's), else the line
# after GoogleTest's first "Failure", else a failing ctest or mpirun line,
# else the log's last line.
first_error() {
  local log=$1 line
  line=$(grep -m1 -iE '(^|[^a-z_])error:' "$log" 2>/dev/null || true)
  [[ -n $line ]] || line=$(grep -m1 -A1 -E ': Failure$' "$log" 2>/dev/null | tail -n1 || true)
  [[ -n $line ]] || line=$(grep -m1 -E '\*\*\*(Failed|Timeout|Exception)|FAILED|Timeout|exited on signal|non-zero exit' "$log" 2>/dev/null || true)
  [[ -n $line ]] || line=$(grep -v '^[[:space:]]*$' "$log" 2>/dev/null | tail -n1 || true)
  # One table cell: no pipes, no ANSI colours, at most 160 characters.
  line=$(printf '%s' "$line" | sed -E 's/\x1b\[[0-9;]*m//g; s/^[0-9]+: //; s/\|/\//g; s/^[[:space:]]+//')
  echo "${line:0:160}"
}

# The one table: each step, what it proves, its result, and for a failure
# the first error line of its log (else its figure).
step_table() {
  local s detail
  echo "| step | path | status | s | figure, or the first error line |"
  echo "|---|---|---|---|---|"
  for s in "${ran[@]}"; do
    detail=$(cat "$figures/$s" 2>/dev/null || true)
    [[ ${status[$s]} != FAIL* ]] || detail=$(first_error "$OUT/$s.log")
    echo "| $s | ${kPath[$s]:-} | ${status[$s]} | ${seconds[$s]} | $detail |"
  done
}

write_summary() {
  local f=$OUT/summary.md s m
  {
    echo "# cifar_mpi GPU check ($GPU_MODE$(dry && echo ', dry run on the CPU')) — $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -n)"
    echo
    step_table
    echo
    # The self-test's own tables (prove), each below its step's name.
    for s in self_test self_test_np2; do
      if [[ -s $OUT/${s}_table.md ]]; then echo "$s:"; echo; cat "$OUT/${s}_table.md"; echo; fi
    done
    # The throughput tables belong to the measure pass (and named bench steps).
    if [[ $GPU_MODE != prove ]]; then
      throughput_table
      echo
      echo "| other setting | img/s |"
      echo "|---|---|"
      for m in convnet_py convnet_host resnet18_host resnet18_nocl; do
        echo "| $m | $(figure_of "bench_$m") |"
      done
      echo
      echo "convnet_py: the PyTorch DDP recipe (DataLoader + PIL transforms, in process);"
      echo "host: --data-on-device false; nocl: --channels-last false."
      echo
      echo "Time to accuracy by the record's compute-honest rules (docs/time_to_accuracy.md), seconds:"
      for m in "$OUT"/record_*_stats.txt; do
        [[ -f $m ]] && { echo; echo '```'; cat "$m"; echo '```'; }
      done
    fi
    echo "Logs: <step>.log (at the end of a run, in gpu_check_logs.tgz)."
  } >"$f.tmp"
  mv "$f.tmp" "$f"
}

run_step() {
  local name=$1 limit left rc
  left=$((GPU_DEADLINE_S - SECONDS))
  limit=$(step_timeout "$name")
  ((limit < left)) || limit=$left
  ran+=("$name")
  if ((limit < 10)); then
    status[$name]="SKIP (deadline)"; seconds[$name]=0
    write_summary
    return
  fi
  local t0=$SECONDS
  echo "gpu_check: $name (limit ${limit}s)"
  rm -f "$figures/$name.skip"
  if timeout -k 10 "$limit" bash "$repo/dev/gpu_check.sh" __step "$name" >"$OUT/$name.log" 2>&1; then
    status[$name]=PASS
  else
    rc=$?
    if ((rc == 77)) && [[ -f $figures/$name.skip ]]; then status[$name]="SKIP ($(cat "$figures/$name.skip"))"
    elif ((rc == 124 || rc == 137)); then status[$name]="FAIL (timeout ${limit}s)"
    else status[$name]="FAIL (exit $rc)"; fi
  fi
  seconds[$name]=$((SECONDS - t0))
  echo "gpu_check: $name ${status[$name]} in ${seconds[$name]}s"
  write_summary
}

# With GPU_ARCHIVE=1, every file of the run but summary.md goes into one
# archive, $OUT/gpu_check_logs.tgz: a device call brings back few files
# whole. GPU_ARCHIVE=0 leaves them loose.
archive_logs() {
  [[ $GPU_ARCHIVE == 1 ]] || return 0
  local path files=() archive=$GPU_WORK/gpu_check_logs.tgz
  for path in "$OUT"/* "$OUT"/.[!.]*; do
    [[ -e $path ]] || continue
    case ${path##*/} in summary.md | gpu_check_logs.tgz) ;; *) files+=("${path##*/}") ;; esac
  done
  ((${#files[@]})) || return 0
  tar -C "$OUT" -czf "$archive" "${files[@]}"
  (cd "$OUT" && rm -rf -- "${files[@]}")
  mv "$archive" "$OUT/"
  echo "gpu_check: logs in $OUT/gpu_check_logs.tgz (GPU_ARCHIVE=0 leaves them loose)"
}

# passed STATUS: whether a step's result counts as passed. A skip does on a
# dry run (a GPU path, or a step for the device machine only); on the
# device every step must pass: a GPU test that skipped itself proved nothing.
passed() {
  [[ $1 == PASS ]] && return 0
  dry && [[ $1 == SKIP* && $1 != "SKIP (deadline)" ]]
}

main() {
  mkdir -p "$OUT" "$GPU_WORK" "$figures"
  OUT=$(cd "$OUT" && pwd)
  export OUT GPU_DEADLINE_S GPU_DEBS GPU_PREFIX GPU_WORK GPU_BUILD GPU_JOBS GPU_BUILD_TARGETS GPU_PYTHON GPU_CUDA_HOME \
         GPU_SEED_DDP GPU_BIN_DATA GPU_IMAGES GPU_TEST_IMAGES GPU_BATCH GPU_BENCH_EPOCHS GPU_SEED_WORKERS GPU_PACK_ARGS \
         GPU_TRAIN_ARGS GPU_STEP_TIMEOUTS GPU_PROVE_BATCH GPU_PROVE_STEPS GPU_COMM_TIMEOUT GPU_CTEST_TIMEOUT \
         GPU_FULCRUM GPU_SPEED_RUNS GPU_WORLD_SIZES GPU_RECORD_TARGET GPU_RECORD_ARGS
  rm -f "$figures"/*
  local steps=()
  case $GPU_MODE in
    prove) steps=("${kProveSteps[@]}") ;;
    measure) steps=("${kMeasureSteps[@]}") ;;
    *) steps=("$@") ;;
  esac
  local s
  for s in "${steps[@]}"; do
    declare -F "step_$s" >/dev/null ||
      { echo "gpu_check: unknown step '$s' (prove, measure, or steps: ${kProveSteps[*]} ${kMeasureSteps[*]})" >&2; exit 2; }
  done
  echo "gpu_check: $GPU_MODE$(dry && echo ' (dry run on the CPU)'), deadline ${GPU_DEADLINE_S}s, programs in $GPU_BUILD"
  for s in "${steps[@]}"; do run_step "$s"; done
  archive_logs
  cat "$OUT/summary.md"
  local failed=()
  for s in "${ran[@]}"; do passed "${status[$s]}" || failed+=("$s"); done
  ((${#failed[@]} == 0)) || { echo "gpu_check: not passed: ${failed[*]}" >&2; return 1; }
}

if [[ ${1:-} == __step ]]; then
  step=$2
  load_env
  mkdir -p "$figures"
  echo "== $step on $(uname -n) at $(date -u +%H:%M:%S)"
  "step_$step"
else
  main "$@"
fi
