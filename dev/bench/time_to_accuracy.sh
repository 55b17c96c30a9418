#!/usr/bin/env bash
# dev/bench/time_to_accuracy.sh — a recipe's time and accuracy by the CIFAR-10
# record's "compute-honest" rules (docs/time_to_accuracy.md): the whole
# recipe once per seed, one run after the other. Timed: the run's preparation
# (the "preparation" line: untrained model, whitening, optimiser) and its
# training (the metrics' epoch_seconds: augmentation included, evaluations
# not). Untimed: the build, process, data and communicators, and the final
# evaluation, which scores every run with the record's six views on every
# test image (--tta mirror-translate --tta-fraction 1). Per seed: the timed
# seconds, the accuracy, prepare and train; then dev/bench/tta_stats.py's summary:
# n, time mean ± sd (min-max), accuracy mean ± sd, the pass rate (runs >=
# --target) and the one-sided p-value that the mean accuracy is >= --target.
# A benchmark, run by hand; not a test.
#
#   dev/bench/time_to_accuracy.sh --config INI [--target 0.94] [--np 2] [--seeds 0,1,2]
#                                 [--archive PATH] [-- extra cifar_mpi args]
#
# --vs-peer PEER.py --peer-data DIR: side by side on the same machine and
# data, alternately per seed: the airbench94 peer on the CPU
# (dev/bench/record_peers.py airbench --device cpu, reading DIR's
# train.pt/test.pt from the peer's make_data.py), measured and scored by the
# same rules, then cifar_mpi; the summary adds the ratio of the mean times.
# PEER_PYTHON names the Python that runs the peer (default python3; it needs
# torch and torchvision, e.g. Debian's /usr/bin/python3); PEER_ARGS adds
# record_peers.py arguments (a quick check: --train-epochs 2).
#
#   dev/bench/time_to_accuracy.sh --config config/speed94_muon.ini --np 2 --seeds 0,1 \
#       --vs-peer PATH/airbench94.py --peer-data DIR
set -euo pipefail
cd "$(dirname "$0")/../.."

config="" target=0.94 np=2 seeds=0,1,2 archive=${CIFAR10_ARCHIVE:-} peer="" peer_data=""
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
    *) echo "usage: $0 --config INI [--target ACC] [--np N] [--seeds 0,1,2] [--archive PATH]" \
            "[--vs-peer PEER.py --peer-data DIR] [-- args]" >&2; exit 2 ;;
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
cmake --build --preset cpu --target cifar_mpi cifar_pack >/dev/null  # the build: untimed
if [[ ! -f data/cifar10.h5 ]]; then
  [[ -n $archive && -f $archive ]] || { echo "time_to_accuracy: no data/cifar10.h5; pass --archive" >&2; exit 1; }
  mkdir -p data && build/cpu/cifar_pack --input "$archive" --output data/cifar10.h5 >/dev/null
fi
root_flags=()
[[ $(id -u) -eq 0 ]] && root_flags=(--allow-run-as-root)
((np > $(nproc))) && root_flags+=(--oversubscribe)

runs=$work/runs.txt  # one line per run, tta_stats.py's input
: >"$runs"

peer_run() {
  local seed=$1 log=$work/peer$1.log
  # shellcheck disable=SC2086  # PEER_ARGS: words
  "${PEER_PYTHON:-python3}" dev/bench/record_peers.py airbench "$peer" --device cpu --data "$peer_data" \
    --seeds "$seed" ${PEER_ARGS:-} >"$log" 2>&1 || { tail -n 20 "$log"; echo "time_to_accuracy: the peer failed (seed $seed)" >&2; exit 1; }
  grep '^RUN ' "$log" | tee -a "$runs"
}

cifar_mpi_run() {
  local seed=$1 log=$work/seed$1.log metrics=$work/seed$1.jsonl
  rm -f "$metrics"
  mpirun "${root_flags[@]}" -np "$np" build/cpu/cifar_mpi --config "$config" --seed "$seed" \
    --output "$work/seed$seed.pth" --metrics "$metrics" "${extra[@]}" --tta mirror-translate --tta-fraction 1 \
    >"$log" 2>&1 || { tail -n 20 "$log"; echo "time_to_accuracy: seed $seed failed" >&2; exit 1; }
  python3 dev/bench/tta_stats.py --cifar-mpi-run "cifar_mpi@np$np" "$seed" "$log" "$metrics" | tee -a "$runs"
}

echo "per run: SIDE SEED SECONDS ACCURACY PREPARE TRAIN (cifar_mpi), RUN ... (the peer)"
IFS=, read -r -a seed_list <<<"$seeds"
for seed in "${seed_list[@]}"; do
  [[ -z $peer ]] || peer_run "$seed"
  cifar_mpi_run "$seed"
done
echo
python3 dev/bench/tta_stats.py --target "$target" "$runs"
