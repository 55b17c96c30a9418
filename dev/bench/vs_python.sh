#!/usr/bin/env bash
# dev/bench/vs_python.sh — cifar_mpi against the PyTorch DDP recipe it
# replaces (the PyTorch DDP recipe script, its path in SEED_DDP), side by side on this machine: same
# data (the real CIFAR-10), world size, epochs, per-rank batch, model and
# optimiser, runs alternating. Prints one table: training images/s, seconds
# per epoch, peak memory of the largest process (a rank), test accuracy, ratio.
# A benchmark, run by hand; not a test.
#
#   dev/bench/vs_python.sh [--np 2] [--epochs 2] [--rounds 1] [--archive PATH] [-- extra cifar_mpi args]
set -euo pipefail
cd "$(dirname "$0")/../.."

np=2 epochs=2 rounds=1 archive=${CIFAR10_ARCHIVE:-}
seed_ddp=${SEED_DDP:-}
extra=()
while (($#)); do
  case $1 in
    --np) np=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --archive) archive=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "usage: $0 [--np N] [--epochs E] [--rounds R] [--archive PATH] [-- cifar_mpi args]" >&2; exit 2 ;;
  esac
done
if [[ ! -f $archive ]]; then
  echo "vs_python: the CIFAR-10 binary archive (cifar-10-binary.tar.gz) is needed: give it with --archive PATH" \
    "or CIFAR10_ARCHIVE${archive:+ (not found: $archive)}" >&2
  exit 1
fi
if [[ ! -f $seed_ddp ]]; then
  echo "vs_python: the PyTorch DDP recipe script is needed: set SEED_DDP to its path${seed_ddp:+ (not found: $seed_ddp)}" >&2
  exit 1
fi

work=${BENCH_WORK:-build/bench}
mkdir -p "$work"
cmake --build --preset cpu --target cifar_mpi cifar_pack >/dev/null
[[ -f data/cifar10.h5 ]] || { mkdir -p data; build/cpu/cifar_pack --input "$archive" --output data/cifar10.h5 >/dev/null; }
if [[ ! -f $work/cifar-10-batches-bin/test_batch.bin ]]; then tar -xzf "$archive" -C "$work"; fi

root_flags=()
[[ $(id -u) -eq 0 ]] && root_flags=(--allow-run-as-root)

# run NAME COMMAND...: wall time and peak RSS of the largest process in its tree.
run() {
  local name=$1
  shift
  /usr/bin/time -f "%M" -o "$work/$name.rss" "$@" >"$work/$name.log" 2>&1 ||
    { tail -n 20 "$work/$name.log"; echo "vs_python: $name failed" >&2; exit 1; }
}
field() { sed -nE "s/.*$1=([0-9.]+).*/\1/p" "$2" | tail -n 1; }

printf '%-9s %5s %12s %10s %14s %9s\n' run round "images/s" "s/epoch" "peak MiB/rank" accuracy >"$work/table.txt"
declare -A sum_rate=()
for ((r = 1; r <= rounds; r++)); do
  run "python_$r" /usr/bin/python3 "$seed_ddp" --data "$work/cifar-10-batches-bin" --world-size "$np" \
    --epochs "$epochs" --out "$work/seed_model.pth"
  run "cifar_mpi_$r" mpirun "${root_flags[@]}" -np "$np" build/cpu/cifar_mpi --config config/default.ini \
    --epochs "$epochs" --eval false --output "$work/cifar_model.pth" --metrics "$work/cifar_metrics.jsonl" \
    --log-every 1000 "${extra[@]}"
  # Test accuracy outside the timed region, as the recipe does: evaluate the saved model.
  for who in python cifar_mpi; do
    log=$work/${who}_$r.log
    if [[ $who == python ]]; then
      rate=$(field images_per_second "$log"); secs=$(field train_seconds "$log"); acc=$(field test_accuracy "$log")
    else
      rate=$(field images_per_second "$log"); secs=$(field train_seconds "$log")
      acc=$(/usr/bin/python3 tests/e2e/python_accuracy.py "$work/cifar_model.pth" data/cifar10.h5)
    fi
    rss=$(($(tail -n 1 "$work/${who}_$r.rss") / 1024))
    printf '%-9s %5d %12.1f %10.2f %14d %9s\n' "$who" "$r" "$rate" "$(awk -v s="$secs" -v e="$epochs" 'BEGIN{print s / e}')" "$rss" "$acc" \
      >>"$work/table.txt"
    sum_rate[$who]=$(awk -v a="${sum_rate[$who]:-0}" -v b="$rate" 'BEGIN{print a + b}')
  done
done
cat "$work/table.txt"
printf 'ratio cifar_mpi / python (mean images/s over %d round(s), np %d, %d epoch(s)): %.2f\n' "$rounds" "$np" "$epochs" \
  "$(awk -v a="${sum_rate[cifar_mpi]}" -v b="${sum_rate[python]}" 'BEGIN{print a / b}')"
