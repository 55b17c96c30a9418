#!/usr/bin/env bash
# tests/fuzz/campaign.sh [SECONDS] [TARGET...] — a fuzzing campaign: every
# harness (default: config cifar_binary hdf5 checkpoint) fuzzes for SECONDS
# (default 3600) at once, at nice 19, from the cpu-debug build
# (CIFAR_FUZZ_BUILD, default build/cpu-debug; build it first with
# `cmake --preset cpu-debug && cmake --build --preset cpu-debug`).
# libFuzzer's fork mode keeps a target going after a finding: each crash,
# leak, timeout (20 s; cifar_binary 60 s) or out-of-memory (2.5 GB) is counted and its input
# written to OUT/<target>/artifacts/. OUT is CIFAR_FUZZ_OUT (default
# BUILD/fuzz-campaign): per target its log, the inputs it found (corpus/) and
# the artifacts. At the end one line per target: executions, coverage,
# corpus and findings, from libFuzzer's last stat line. docs/dev/fuzzing.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-3600}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(config cifar_binary hdf5 checkpoint)
build=${CIFAR_FUZZ_BUILD:-build/cpu-debug}
out=${CIFAR_FUZZ_OUT:-$build/fuzz-campaign}

# Seconds one input may take before libFuzzer calls it a hang. A complete
# release described to cifar_binary (six 30 MB batch files) takes 16-20 s of
# CPU to read and hash under ASan and coverage; its limit leaves room for that
# on a loaded machine, and a real hang still ends in a minute.
timeout_for() { case $1 in cifar_binary) echo 60 ;; *) echo 20 ;; esac; }

run_target() {
  local name=$1 dir=$out/$1
  mkdir -p "$dir/corpus" "$dir/artifacts"
  # The binary is copied, so that a rebuild during the campaign does not replace it under the fuzzer.
  cp "$build/tests/fuzz/${name}_fuzz" "$dir/${name}_fuzz"
  nice -n 19 "$dir/${name}_fuzz" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
    -timeout="$(timeout_for "$name")" -rss_limit_mb=2560 -malloc_limit_mb=2560 -detect_leaks=1 \
    -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$dir/artifacts/" \
    "$dir/corpus" "tests/fuzz/corpus/$name" >"$dir/log.txt" 2>&1
}

for name in "${targets[@]}"; do
  [[ -x $build/tests/fuzz/${name}_fuzz ]] || { echo "campaign: no $build/tests/fuzz/${name}_fuzz; build the cpu-debug preset" >&2; exit 2; }
done
echo "campaign: ${targets[*]}, ${seconds} s each, output in $out"
pids=()
for name in "${targets[@]}"; do
  run_target "$name" &
  pids+=($!)
done
wait "${pids[@]}" || true
for name in "${targets[@]}"; do
  # Fork mode's stat line: "#EXECS: cov: N ft: N corp: N exec/s N oom/timeout/crash: a/b/c time: Ns ..."
  last=$(grep -E '^#[0-9]+: cov:' "$out/$name/log.txt" | tail -1)
  echo "campaign: $name: ${last:-no stat line, see $out/$name/log.txt}; artifacts: $(find "$out/$name/artifacts" -type f | wc -l)"
done
