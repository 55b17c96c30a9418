#!/usr/bin/env bash
# tools/lint.sh — the repository's static checks. Usage:
#   tools/lint.sh                    all of them, fastest first: floors,
#                                    names, format, shell, tidy
#   tools/lint.sh floors             src/'s includes run down the floors
#                                    (python3 tests/util/include_floors.py src)
#   tools/lint.sh names              every project file that a comment or a
#                                    page of docs/ names exists
#                                    (python3 tests/lint/file_names.py)
#   tools/lint.sh format [--fix]     every tracked C++ file as .clang-format
#                                    says (clang-format 14); --fix rewrites them
#   tools/lint.sh shell              every tracked shell script through the
#                                    linter shellcheck (tests/lint/shellcheck.sh)
#   tools/lint.sh tidy [BUILD_DIR]   clang-tidy 14 (.clang-tidy) over src/,
#                                    with BUILD_DIR's compile database (default
#                                    build/cpu-debug: clang 14, as CI builds;
#                                    configured with `cmake --preset cpu-debug`
#                                    first if it has none). Needs no build:
#                                    the precompiled header is left out.
# Several names run those checks in the order given (tools/test.sh's gate is
# `tools/lint.sh format floors names shell`, seconds). Each failure names the file
# and the fix; the exit status is non-zero if any check failed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

# The C++ formatter and linter: version 14, the one .clang-format and
# .clang-tidy were written for (another version formats some lines otherwise).
pick() {
  local name
  for name in "$@"; do
    if command -v "$name" >/dev/null; then
      echo "$name"
      return 0
    fi
  done
  return 1
}

lint_floors() {
  echo "== lint: floors (tests/util/include_floors.py)"
  python3 tests/util/include_floors.py src
}

lint_names() {
  echo "== lint: names (tests/lint/file_names.py)"
  python3 tests/lint/file_names.py
}

lint_format() {
  local fix=$1 clang_format
  clang_format=$(pick clang-format-14 clang-format) ||
    { echo "FAIL: clang-format not found; install clang-format-14 (tools/setup.sh does)" >&2; return 1; }
  local files=()
  while IFS= read -r -d '' f; do
    [[ -f $f ]] && files+=("$f")  # tracked but deleted in the work tree: skipped
  done < <(git ls-files -z '*.cpp' '*.hpp' '*.cc' '*.cxx' '*.h' '*.cu' '*.cuh')
  if ((fix)); then
    echo "== lint: format --fix ($clang_format over ${#files[@]} files)"
    printf '%s\0' "${files[@]}" | xargs -0 -n 50 "$clang_format" -i --style=file
    return 0
  fi
  echo "== lint: format ($clang_format over ${#files[@]} files)"
  local out bad rc=0
  out=$(printf '%s\0' "${files[@]}" | xargs -0 -n 50 "$clang_format" --dry-run -Werror --style=file 2>&1) || rc=$?
  # Each difference is reported as "FILE:LINE:COL: error: code should be
  # clang-formatted [-Wclang-format-violations]", then the line; each file once.
  bad=$(sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' <<<"$out" | sort -u)
  if [[ -n $bad ]]; then
    echo "FAIL: $(wc -l <<<"$bad") file(s) differ from .clang-format:" >&2
    while IFS= read -r f; do echo "  $f"; done <<<"$bad" >&2
    echo "  fix: tools/lint.sh format --fix (or $clang_format -i FILE), then review and commit" >&2
    return 1
  fi
  if ((rc != 0)); then
    echo "$out" >&2
    echo "FAIL: $clang_format failed (above): a file it cannot read, or a .clang-format it does not accept" >&2
    return 1
  fi
  echo "PASS: every file as .clang-format says"
}

lint_shell() {
  echo "== lint: shell (tests/lint/shellcheck.sh)"
  bash tests/lint/shellcheck.sh
}

# The compile database of BUILD_DIR, for clang-tidy: the entries that compile
# src/ (the unity build's Unity/unity_*.cxx files, which #include the .cpp
# files, and any source compiled on its own), without the precompiled header
# (-include-pch: its .pch exists only once built, and belongs to the compiler)
# but with the header it stands for, so every file sees what it sees in the
# build. Written to BUILD_DIR/tidy/compile_commands.json.
tidy_database() {
  python3 - "$1" "$root" <<'EOF'
import json, os, shlex, sys
build, root = sys.argv[1], sys.argv[2]
src_build = os.path.join(build, "src") + os.sep
src = os.path.join(root, "src") + os.sep
out = []
for e in json.load(open(os.path.join(build, "compile_commands.json"))):
    f = os.path.join(e["directory"], e["file"])
    if not (f.startswith(src) or (f.startswith(src_build) and "/Unity/" in f)):
        continue
    args = e.get("arguments") or shlex.split(e["command"])
    kept, i = [], 0
    while i < len(args):
        if args[i] == "-Xclang" and i + 3 < len(args) and args[i + 1] == "-include-pch":
            i += 4  # -Xclang -include-pch -Xclang FILE.pch
            continue
        if args[i] == "-include-pch":
            i += 2
            continue
        if args[i] != "-Winvalid-pch":
            kept.append(args[i])
        i += 1
    out.append({"directory": e["directory"], "file": e["file"], "arguments": kept})
if not out:
    sys.exit(f"FAIL: {build}/compile_commands.json has no entry for src/")
os.makedirs(os.path.join(build, "tidy"), exist_ok=True)
json.dump(out, open(os.path.join(build, "tidy", "compile_commands.json"), "w"), indent=1)
print(len(out))
EOF
}

lint_tidy() {
  local build=${1:-build/cpu-debug} clang_tidy count jobs
  clang_tidy=$(pick clang-tidy-14 clang-tidy) ||
    { echo "FAIL: clang-tidy not found; install clang-tidy-14 (tools/setup.sh with CIFAR_SETUP_SANITIZERS=1 does)" >&2; return 1; }
  [[ $build == /* ]] || build=$root/$build
  if [[ ! -f $build/compile_commands.json ]]; then
    if [[ $build != "$root/build/cpu-debug" ]]; then
      echo "FAIL: $build/compile_commands.json is missing; configure that build folder first" >&2
      return 1
    fi
    echo "== lint: tidy: configuring the cpu-debug preset for its compile database"
    cmake --preset cpu-debug >/dev/null
  fi
  count=$(tidy_database "$build") || return 1
  jobs=${CIFAR_LINT_JOBS:-$(nproc)}
  echo "== lint: tidy ($clang_tidy over $count translation units of src/, $jobs at a time)"
  local t0=$SECONDS rc=0
  # Only the project's own files are reported: src/, given as an absolute
  # path (the .clang-tidy's HeaderFilterRegex is the same without one).
  local filter="^$root/src/" logs=$build/tidy/logs
  rm -rf "$logs"
  mkdir -p "$logs"
  # One clang-tidy per translation unit, $jobs at a time, each into its own
  # log (no interleaved lines); .clang-tidy named explicitly, as a build
  # folder outside the repository would not find it.
  # (The single quotes are meant: $1... are the inner bash's arguments.)
  # shellcheck disable=SC2016
  python3 -c 'import json,sys; [print(e["file"]) for e in json.load(open(sys.argv[1]))]' \
    "$build/tidy/compile_commands.json" |
    tr '\n' '\0' |
    xargs -0 -P "$jobs" -I{} bash -c \
      '"$1" --quiet --config-file="$2" -p "$3" --header-filter="$4" "$5" >"$6/${5//\//_}.log" 2>&1' _ \
      "$clang_tidy" "$root/.clang-tidy" "$build/tidy" "$filter" {} "$logs" || rc=$?
  cat "$logs"/*.log >"$build/tidy/clang-tidy.log"
  # The findings, each once (a header's appear once per unit that includes it).
  local findings
  findings=$(grep -E '^[^ ].*:[0-9]+:[0-9]+: (fatal error|error|warning): ' "$build/tidy/clang-tidy.log" | sort -u || true)
  if ((rc != 0)) || [[ -n $findings ]]; then
    if [[ -n $findings ]]; then
      echo "$findings" >&2
      echo "FAIL: $(wc -l <<<"$findings") clang-tidy finding(s) above, in $((SECONDS - t0)) s (whole output:" \
        "$build/tidy/clang-tidy.log)" >&2
      echo "  fix: change the code as the check asks, or end the line with // NOLINT(check-name) and say why;" \
        "a check that is wrong for the whole project comes off in .clang-tidy, with the reason" >&2
    else
      tail -n 40 "$build/tidy/clang-tidy.log" >&2
      echo "FAIL: clang-tidy failed (above; whole output: $build/tidy/clang-tidy.log)" >&2
    fi
    return 1
  fi
  echo "PASS: no clang-tidy finding in src/ ($((SECONDS - t0)) s)"
}

checks=()
fix=0
tidy_build=
while (($#)); do
  case $1 in
    floors | names | format | shell) checks+=("$1") ;;
    tidy)
      checks+=(tidy)
      if [[ ${2:-} != "" && ${2:-} != -* && ! ${2:-} =~ ^(floors|names|format|shell|tidy)$ ]]; then
        tidy_build=$2
        shift
      fi
      ;;
    --fix) fix=1 ;;
    -h | --help)
      sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
      exit 0
      ;;
    *)
      echo "lint.sh: unknown argument '$1'; use floors, names, format [--fix], shell, tidy [BUILD_DIR] (--help)" >&2
      exit 2
      ;;
  esac
  shift
done
((${#checks[@]})) || checks=(floors names format shell tidy)
if ((fix)) && [[ " ${checks[*]} " != *" format "* ]]; then
  echo "lint.sh: --fix goes with format (tools/lint.sh format --fix)" >&2
  exit 2
fi

failed=()
for check in "${checks[@]}"; do
  case $check in
    floors) lint_floors || failed+=(floors) ;;
    names) lint_names || failed+=(names) ;;
    format) lint_format "$fix" || failed+=(format) ;;
    shell) lint_shell || failed+=(shell) ;;
    tidy) lint_tidy "$tidy_build" || failed+=(tidy) ;;
  esac
done
if ((${#failed[@]})); then
  echo "== lint: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "== lint: passed: ${checks[*]}"
