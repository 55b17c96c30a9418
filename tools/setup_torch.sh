#!/usr/bin/env bash
# tools/setup_torch.sh [cuda13|cuda12] — a project-local Python environment
# with PyPI's CUDA build of torch, one per CUDA flavour (without an argument,
# the one this node's NVIDIA driver runs, else cuda13), each pinned in its
# requirements file with its nvidia-* wheels (cuDNN, NCCL, cuBLAS, the CUDA
# runtime, ...) plus numpy, h5py and matplotlib:
#   cuda13 (default)  .venv-torch/         tools/torch-cuda13-requirements.txt
#                     torch 2.15.0 (CUDA 13.2): drivers R580 and newer
#   cuda12            .venv-torch-cuda12/  tools/torch-cuda12-requirements.txt
#                     torch 2.10.0 (CUDA 12.8): drivers R525 and newer
# The `cuda` and `cuda12` presets build against the LibTorch inside them
# (cmake/Dependencies.cmake asks its python for torch.utils.cmake_prefix_path,
# the CUDA runtime's and NCCL's wheels), and their test runs use its python
# as CIFAR_TEST_PYTHON.
#
# Idempotent: a venv whose stamp matches the requirements file is kept as is.
# The wheels (about 3 GB a flavour) are kept in the machine's cache folder, so
# a new clone on a machine that installed them once installs offline. pip's
# own HTTP cache cannot be relied on for that: it stores only responses that
# carry caching headers, and a registry mirror may send none (the one here
# does not).
#
#   CIFAR_TORCH_VENV     where the venv goes (default: the flavour's, above)
#   CIFAR_TORCH_WHEELS   the wheel cache (default: ${XDG_CACHE_HOME:-~/.cache}/cifar_mpi/wheels);
#                        set but empty: no cache, pip installs from the index and
#                        keeps nothing (a one-off machine such as CI's: 3 GB less disk)
#   CIFAR_TORCH_BASE_PY  the python that creates the venv (default: /usr/bin/python3,
#                        Debian 12's 3.11 with python3-venv, from tools/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

# Without an argument: the flavour this node's driver runs (cuda13 where no
# driver answers: a build machine).
driver_flavour() {
  local driver
  driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n1) || true
  if [[ $driver =~ ^([0-9]+)\. ]] && ((BASH_REMATCH[1] < 580)); then echo cuda12; else echo cuda13; fi
}
flavour=${1:-$(driver_flavour)}
case $flavour in
  cuda13) default_venv=$PWD/.venv-torch ;;
  cuda12) default_venv=$PWD/.venv-torch-cuda12 ;;
  *) echo "setup_torch: the flavour is cuda13 or cuda12 (got '$flavour')" >&2; exit 2 ;;
esac
venv=${CIFAR_TORCH_VENV:-$default_venv}
base_py=${CIFAR_TORCH_BASE_PY:-/usr/bin/python3}
wheels=${CIFAR_TORCH_WHEELS-${XDG_CACHE_HOME:-$HOME/.cache}/cifar_mpi/wheels}
req=tools/torch-$flavour-requirements.txt
stamp=$venv/.requirements.sha256
want=$(sha256sum "$req" | cut -d' ' -f1)

report() {
  "$venv/bin/python" - <<'EOF'
import torch, numpy, h5py, matplotlib
import nvidia.nccl, nvidia.cudnn
print(f"torch {torch.__version__} (CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}, "
      f"NCCL {'.'.join(map(str, torch.cuda.nccl.version()))}), numpy {numpy.__version__}, "
      f"h5py {h5py.__version__}, matplotlib {matplotlib.__version__}")
EOF
}

if [[ -x $venv/bin/python && -f $stamp && $(<"$stamp") == "$want" ]]; then
  echo "setup_torch: $venv up to date: $(report)"
  exit 0
fi

[[ -x $base_py ]] || { echo "setup_torch: $base_py missing (run tools/setup.sh)" >&2; exit 1; }
t0=$SECONDS
echo "setup_torch: creating $venv from $req, wheels ${wheels:+cached in $wheels}${wheels:-not kept (CIFAR_TORCH_WHEELS is empty)}"
rm -rf "$venv"
"$base_py" -m venv "$venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check --no-input)
# --no-deps: the file pins every package; pip check proves nothing is missing.
# Offline from the wheel cache when it holds them all, else fill it first.
# --no-compile: no .pyc for the 4.6 GB (saves a quarter of the install time).
install=(install --quiet --no-compile --no-index --find-links "$wheels" --no-deps -r "$req")
if [[ -z $wheels ]]; then
  "${pip[@]}" install --quiet --no-compile --no-cache-dir --only-binary=:all: --no-deps -r "$req"
elif ! "${pip[@]}" "${install[@]}" 2>/dev/null; then
  t1=$SECONDS
  mkdir -p "$wheels"
  "${pip[@]}" download --quiet --only-binary=:all: --no-deps -r "$req" -d "$wheels"
  echo "setup_torch: downloaded into $wheels in $((SECONDS - t1)) s ($(du -sh "$wheels" | cut -f1))"
  "${pip[@]}" "${install[@]}"
fi
"$venv/bin/python" -m pip check --disable-pip-version-check
echo "$want" >"$stamp"
echo "setup_torch: $(report)"
echo "setup_torch: $venv ready in $((SECONDS - t0)) s, $(du -sh "$venv" | cut -f1)"
preset=cuda
[[ $flavour == cuda12 ]] && preset=cuda12
echo "setup_torch: build the $flavour flavour with: cmake --preset $preset && cmake --build --preset $preset"
