#!/usr/bin/env bash
# dev/bench/time_to_accuracy.sh — how long a configuration takes to reach a
# test accuracy: runs it to --target-accuracy at one world size for several
# seeds, one after the other, and prints a table (per seed: time to target,
# epochs, final accuracy; then mean and standard deviation). The time is
# training plus evaluation from the first step, as published time-to-accuracy
# figures count it; start-up is printed apart. A benchmark, run by hand; not a test.
#
#   dev/bench/time_to_accuracy.sh --config config/speed94.ini --target 0.94 [--np 2] [--seeds 0,1,2]
#                                 [--archive PATH] [-- extra cifar_mpi args]
#
# --vs-peer PEER.py --peer-data DIR: side by side on the same machine and data.
# For each seed, alternately, the airbench94 peer on the CPU
# (dev/bench/airbench_cpu.py PEER.py, reading DIR's train.pt/test.pt, which
# the peer's make_data.py writes from the same archive), then cifar_mpi to the
# peer's own final TTA accuracy; prints both times to that accuracy and their
# ratio (cifar_mpi / peer), then the means. --target is then ignored.
# PEER_PYTHON names the Python that runs the peer (default python3; it needs
# torch and torchvision, e.g. Debian's /usr/bin/python3).
#
#   dev/bench/time_to_accuracy.sh --config config/speed94_muon.ini --np 2 --seeds 0,1 \
#       --vs-peer PATH/airbench94.py --peer-data DIR
set -euo pipefail
cd "$(dirname "$0")/../.."

config=config/speed94.ini target=0.94 np=2 seeds=0,1,2 archive=${CIFAR10_ARCHIVE:-} peer="" peer_data=""
extra=()
while (($#)); do
  case $1 in
    --config) config=$2; shift 2 ;;
    --target) target=$2; shift 2 ;;
    --np) np=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --archive) archive=$2; shift 2 ;;
    --vs-peer) peer=$2; shift 2 ;;
    --peer-data) peer_data=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "usage: $0 --config INI --target ACC [--np N] [--seeds 0,1,2] [--archive PATH] [-- args]" >&2; exit 2 ;;
  esac
done
[[ -f $config ]] || { echo "time_to_accuracy: config '$config' not found" >&2; exit 2; }
if [[ -n $peer ]]; then
  [[ -f $peer ]] || { echo "time_to_accuracy: --vs-peer '$peer' not found" >&2; exit 2; }
  [[ -f $peer_data/train.pt && -f $peer_data/test.pt ]] ||
    { echo "time_to_accuracy: --peer-data '$peer_data' lacks train.pt/test.pt (the peer's make_data.py writes them)" >&2; exit 2; }
fi

work=${BENCH_WORK:-build/bench/tta}
mkdir -p "$work"
cmake --build --preset cpu --target cifar_mpi cifar_pack >/dev/null
if [[ ! -f data/cifar10.h5 ]]; then
  [[ -n $archive && -f $archive ]] || { echo "time_to_accuracy: no data/cifar10.h5; pass --archive" >&2; exit 1; }
  mkdir -p data && build/cpu/cifar_pack --input "$archive" --output data/cifar10.h5 >/dev/null
fi
root_flags=()
[[ $(id -u) -eq 0 ]] && root_flags=(--allow-run-as-root)
((np > $(nproc))) && root_flags+=(--oversubscribe)

field() { sed -nE "s/.*[ ]$1=([0-9.]+).*/\1/p" "$2" | tail -n 1; }

# The peer's final row, "|  1  |  eval  | loss | acc | val | tta | seconds |": its TTA accuracy and time.
peer_field() { awk -F'|' -v col="$1" '$3 ~ /eval/ {v = $col} END {gsub(/ /, "", v); print v}' "$2"; }

if [[ -n $peer ]]; then
  printf '%-6s %10s %12s %14s %8s\n' seed "peer acc" "peer time(s)" "cifar_mpi(s)" ratio
  ratios=()
  IFS=, read -r -a seed_list <<<"$seeds"
  for seed in "${seed_list[@]}"; do
    plog=$work/peer$seed.log log=$work/vs$seed.log
    AIRBENCH_DATA=$peer_data AIRBENCH_RUNS=1 "${PEER_PYTHON:-python3}" dev/bench/airbench_cpu.py "$peer" >"$plog" 2>&1 ||
      { tail -n 20 "$plog"; echo "time_to_accuracy: the peer failed (seed $seed)" >&2; exit 1; }
    peer_acc=$(peer_field 7 "$plog") peer_time=$(peer_field 8 "$plog")
    [[ -n $peer_acc && -n $peer_time ]] || { tail -n 5 "$plog"; echo "time_to_accuracy: no final row in $plog" >&2; exit 1; }
    mpirun "${root_flags[@]}" -np "$np" build/cpu/cifar_mpi --config "$config" --seed "$seed" \
      --target-accuracy "$peer_acc" --output "$work/vs$seed.pth" --metrics "$work/vs$seed.jsonl" \
      "${extra[@]}" >"$log" 2>&1 || { tail -n 20 "$log"; echo "time_to_accuracy: seed $seed failed" >&2; exit 1; }
    if grep -q '^TIME_TO_TARGET' "$log"; then
      t=$(field seconds "$log")
      ratio=$(awk -v a="$t" -v b="$peer_time" 'BEGIN {printf "%.3f", a / b}')
      ratios+=("$ratio")
    else
      t="not reached ($(field test_accuracy "$log"))" ratio=-
    fi
    printf '%-6s %10s %12s %14s %8s\n' "$seed" "$peer_acc" "$peer_time" "$t" "$ratio"
  done
  if ((${#ratios[@]})); then
    printf '%s\n' "${ratios[@]}" | awk -v np="$np" '{s += $1; k++} END {
      printf "mean ratio %.3f (cifar_mpi at np %d / the peer, each to the peer'"'"'s accuracy) over %d seed(s)\n", s / k, np, k}'
  fi
  exit 0
fi

printf '%-6s %12s %7s %10s %10s\n' seed "time(s)" epochs accuracy "startup(s)"
times=()
IFS=, read -r -a seed_list <<<"$seeds"
for seed in "${seed_list[@]}"; do
  log=$work/seed$seed.log
  mpirun "${root_flags[@]}" -np "$np" build/cpu/cifar_mpi --config "$config" --seed "$seed" \
    --target-accuracy "$target" --output "$work/seed$seed.pth" --metrics "$work/seed$seed.jsonl" \
    "${extra[@]}" >"$log" 2>&1 || { tail -n 20 "$log"; echo "time_to_accuracy: seed $seed failed" >&2; exit 1; }
  startup=$(sed -nE 's/^start-up .* ([0-9.]+) s$/\1/p' "$log")
  accuracy=$(field test_accuracy "$log")
  if grep -q '^TIME_TO_TARGET' "$log"; then
    t=$(field seconds "$log"); epochs=$(field epochs "$log")
    times+=("$t")
  else
    t="not reached"; epochs=-
  fi
  printf '%-6s %12s %7s %10s %10s\n' "$seed" "$t" "$epochs" "$accuracy" "$startup"
done
if ((${#times[@]})); then
  printf '%s\n' "${times[@]}" | awk -v n="${#seed_list[@]}" -v np="$np" -v target="$target" '
    {s += $1; ss += $1 * $1; k++}
    END {m = s / k; sd = k > 1 ? sqrt((ss - k * m * m) / (k - 1)) : 0
         printf "mean %.1f s, std %.1f s over %d of %d seed(s) reaching %s at np %d\n", m, sd, k, n, target, np}'
fi
