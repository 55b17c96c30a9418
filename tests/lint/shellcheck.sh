#!/usr/bin/env bash
# Every tracked shell script through shellcheck at its default severity:
# files ending .sh and files whose first line is a sh or bash shebang, listed
# by git, so a new script is checked without being named here. From the
# repository root, where the `# shellcheck source=` paths start; -x follows them.
set -euo pipefail
cd "$(dirname "$0")/../.."

command -v shellcheck >/dev/null ||
  { echo "FAIL: shellcheck not found; install the shellcheck package (tools/setup.sh does)" >&2; exit 1; }
git rev-parse --is-inside-work-tree >/dev/null 2>&1 ||
  { echo "FAIL: $PWD is not a git work tree; the scripts are listed with git ls-files" >&2; exit 1; }

scripts=()
while IFS= read -r -d '' f; do
  [[ -f $f ]] || continue  # tracked but deleted in the work tree
  first=
  IFS= read -r first <"$f" || true
  if [[ $f == *.sh || $first =~ ^\#!.*[/\ ](ba|da|k)?sh([[:space:]]|$) ]]; then scripts+=("$f"); fi
done < <(git ls-files -z)
((${#scripts[@]})) || { echo "FAIL: git ls-files listed no shell script" >&2; exit 1; }

echo "$(shellcheck --version | sed -n 's/^version: /shellcheck /p') over ${#scripts[@]} scripts"
shellcheck -x "${scripts[@]}"
echo "PASS: no finding"
