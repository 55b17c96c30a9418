#!/usr/bin/env bash
# dev/setup_python_tools.sh — the project-local Python environment
# .venv-tools (at the repository root, ignored by git) with the pinned PyPI
# packages of dev/requirements-tools.txt (TensorBoard's reader for the
# --tensorboard test). Called by tools/setup.sh. Idempotent: it does nothing
# when the environment already holds exactly that file's packages; pip's
# cache makes a rebuild quick. Debian's python3 (with python3-venv) is the base.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${CIFAR_TOOLS_VENV:-$root/.venv-tools}
requirements=$root/dev/requirements-tools.txt
stamp=$venv/.requirements.sha256

wanted=$(sha256sum "$requirements" | cut -d' ' -f1)
if [[ -x $venv/bin/python3 && -f $stamp && $(cat "$stamp") == "$wanted" ]]; then
  echo "setup: $venv is up to date"
  exit 0
fi
echo "setup: making $venv from dev/requirements-tools.txt"
rm -rf "$venv"
/usr/bin/python3 -m venv "$venv"
"$venv/bin/python3" -m pip install --quiet --disable-pip-version-check --no-input -r "$requirements"
"$venv/bin/python3" -c "from tensorboard.backend.event_processing import event_accumulator" ||
  { echo "setup: $venv cannot import TensorBoard's event accumulator" >&2; exit 1; }
echo "$wanted" >"$stamp"
