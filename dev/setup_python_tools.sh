#!/usr/bin/env bash
# dev/setup_python_tools.sh [tools|easybuild] — a project-local Python
# environment (at the repository root, ignored by git) with the pinned PyPI
# packages of its requirements file:
#   tools (default)  .venv-tools      dev/requirements-tools.txt      TensorBoard's
#                    reader for the --tensorboard tests; made by tools/setup.sh
#   easybuild        .venv-easybuild  dev/requirements-easybuild.txt  EasyBuild,
#                    which builds easybuild/cifar_mpi-<version>.eb (install.easyconfig)
# Idempotent: it does nothing when the environment already holds exactly that
# file's packages (a stamp of the file's hash); pip's cache makes a rebuild
# quick. Debian's python3 (with python3-venv) is the base.
#   CIFAR_TOOLS_VENV / CIFAR_EASYBUILD_VENV   where the venv goes instead
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
case ${1:-tools} in
  tools)
    venv=${CIFAR_TOOLS_VENV:-$root/.venv-tools}
    requirements=$root/dev/requirements-tools.txt
    check=("$venv/bin/python3" -c "from tensorboard.backend.event_processing import event_accumulator")
    ;;
  easybuild)
    venv=${CIFAR_EASYBUILD_VENV:-$root/.venv-easybuild}
    requirements=$root/dev/requirements-easybuild.txt
    # eb runs the first `python` on PATH, or EB_PYTHON.
    check=(env "EB_PYTHON=$venv/bin/python3" "$venv/bin/eb" --version)
    ;;
  *) echo "setup: the environment is tools or easybuild (got '$1')" >&2; exit 2 ;;
esac
stamp=$venv/.requirements.sha256

wanted=$(sha256sum "$requirements" | cut -d' ' -f1)
if [[ -x $venv/bin/python3 && -f $stamp && $(cat "$stamp") == "$wanted" ]]; then
  echo "setup: $venv is up to date"
  exit 0
fi
echo "setup: making $venv from ${requirements#"$root"/}"
rm -rf "$venv"
/usr/bin/python3 -m venv "$venv"
"$venv/bin/python3" -m pip install --quiet --disable-pip-version-check --no-input -r "$requirements"
"${check[@]}" >/dev/null || { echo "setup: $venv fails its check: ${check[*]}" >&2; exit 1; }
echo "$wanted" >"$stamp"
