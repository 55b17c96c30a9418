#!/usr/bin/env bash
# run_fuzz.sh WORK HARNESS [OPTIONS...] -- INPUT_DIR...
# One bounded fuzzing run of a harness (ctest's fuzz.<name>): starts from an
# empty WORK/corpus, into which libFuzzer writes the new inputs it keeps,
# reading the committed INPUT_DIRs as seeds. A crash, leak, hang or sanitizer
# report fails the run; its input is in WORK (crash-*, leak-*, timeout-*,
# oom-*) and, base64, in the log.
set -euo pipefail
work=$1 harness=$2
shift 2
options=()
while (($#)) && [[ $1 != -- ]]; do options+=("$1"); shift; done
shift
rm -rf "$work"
mkdir -p "$work/corpus"
exec "$harness" "${options[@]}" "$work/corpus" "$@"
