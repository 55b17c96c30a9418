#!/usr/bin/env bash
# The content-damage campaign: at least 10,000 damaged files -- checkpoints
# (ours: a small one of the fuzz corpus and a convnet run's), model files
# (cifar_mpi's --output and Python's torch.save) and packed HDF5 files -- each
# with 1 to 4 random bytes changed at random offsets, each read by the
# program's own reader (damage_check: read_checkpoint, load_state_dict,
# load_dataset) and classified refused, accepted-harmless (loaded bitwise as
# the clean file) or ACCEPTED-HARMFUL. Exits non-zero unless every harmful
# and other-exception count is 0. Prints the table, the CPU and the time.
#
#   dev/campaign/damage_campaign.sh [BUILD_DIR] [SCALE]
# BUILD_DIR: a built cpu preset (default build/cpu); SCALE multiplies the
# counts (default 1: 10,500 files). Needs a python3 with torch ($PYTHON, else
# python3; Debian's python3-torch: PYTHON=/usr/bin/python3).
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$src/build/cpu}" && pwd)
scale=${2:-1}
python=${PYTHON:-python3}
work=$(mktemp -d "${TMPDIR:-/tmp}/damage_campaign.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
mkdir harmful

# The clean files, made by the program's own writers (and Python's).
"$build/cifar_pack" --synthetic 64 --test-count 32 --seed 1 --output small.h5 >/dev/null
OMP_NUM_THREADS=1 "$build/cifar_mpi" --data small.h5 --model convnet --epochs 1 --max-steps 2 --batch-size 16 \
  --eval false --metrics "" --log-every 1000 --threads 1 --output ours.pth --checkpoint-dir ckpt \
  --checkpoint-every-steps 2 >train.log 2>&1 || { cat train.log; exit 1; }
convnet_ckpt=$(ls ckpt/*.pt)
"$python" - "$src/dev/bench" <<'PY'
import sys, torch
sys.path.insert(0, sys.argv[1])
from cifar_models import ConvNet
torch.manual_seed(1)
torch.save(dict(ConvNet().state_dict()), "python.pth")
PY

start=$(date +%s)
status=0
campaign() {  # campaign KIND FILE COUNT SEED
  local n=$(($3 * scale))
  echo "# damage_check $1 ${2##*/} $n $4"
  "$build/damage_check" "$1" "$2" "$n" "$4" --keep harmful 2>>errors.log || status=1
}
{
  campaign checkpoint "$src/tests/fuzz/corpus/checkpoint/ckpt-adam-lookahead.pt" 2000 11
  campaign checkpoint "$convnet_ckpt" 1000 12
  campaign model ours.pth 2500 13
  campaign model python.pth 2500 14
  campaign h5 small.h5 2500 15
} | tee table.txt
end=$(date +%s)
echo "files: $(awk -F'\t' '/files/ { sub(/ files/, "", $3); n += $3 } END { print n }' table.txt)," \
  "ACCEPTED-HARMFUL: $(awk -F'\t' '/files/ { sub(/ACCEPTED-HARMFUL /, "", $6); n += $6 } END { print n }' table.txt)," \
  "other exceptions: $(awk -F'\t' '/files/ { sub(/other-exception /, "", $7); n += $7 } END { print n }' table.txt)"
echo "time: $((end - start)) s on $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPU(s)"
if [[ -s errors.log ]]; then cat errors.log; fi
if [[ -n $(ls harmful) ]]; then
  mkdir -p "$src/build/damage_campaign_harmful" && cp harmful/* "$src/build/damage_campaign_harmful/"
  echo "harmful copies kept in build/damage_campaign_harmful"
fi
exit $status
