#!/usr/bin/env bash
# install.train_elsewhere: the installed programs train a few steps from
# folders outside the source and build trees:
#   1. cifar_mpi --config default (found by name next to the program) with the
#      config's own data/cifar10.h5, relative to the working folder;
#   2. CIFAR_DATA naming the file, --config smoke, in a folder without data/;
#   3. the installed job script local_mpirun.sh, which finds the installed
#      program and config by itself.
# shellcheck source=tests/install/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
unset CIFAR_MPI_HOME CIFAR_BUILD CIFAR_CONFIG CIFAR_DATA  # found from the install alone

here=$WORK/elsewhere
mkdir -p "$here/data"
cd "$here"
"$PREFIX/bin/cifar_pack" --synthetic 256 --test-count 64 --seed 1 --output data/cifar10.h5

echo "== 1. --config default, data/cifar10.h5 here"
mpi 2 "$PREFIX/bin/cifar_mpi" --config default --epochs 1 --max-steps 3 --batch-size 32 --log-every 1 | tee train1.log
expect train1.log "^configuration \(file $PREFIX/share/cifar_mpi/config/default.ini, command line wins\):$"
expect train1.log '^  blas-threads += -1$'  # a key only default.ini sets
expect train1.log '^Epoch: 0 \| Batch: 2/'
expect train1.log '^RESULT train_seconds=[0-9.]+ images_per_second=[0-9.]+ test_accuracy=[0-9.]+$'
[[ -s ddp_model.pth ]] || fail "no ddp_model.pth in $here"
grep -Eq '"steps": 3, .*"world_size": 2' runs/metrics.jsonl || fail "metrics: $(cat runs/metrics.jsonl)"
# The installed cifar_eval scores that model on data/cifar10.h5 (its default) as the run's own evaluation did.
mpi 2 "$PREFIX/bin/cifar_eval" --weights ddp_model.pth | tee eval1.log
accuracy=$(sed -n 's/.*test_accuracy=\([0-9.]*\)$/\1/p' train1.log)
expect eval1.log "^accuracy $accuracy \([0-9]+ correct\)"

echo "== 2. CIFAR_DATA and --config smoke, no data/ here"
mkdir -p "$WORK/other" && cd "$WORK/other"
CIFAR_DATA=$here/data/cifar10.h5 mpi 1 "$PREFIX/bin/cifar_mpi" --config smoke --max-steps 2 --eval false | tee train2.log
expect train2.log "^data $here/data/cifar10.h5: 256 train / "
expect train2.log '^RESULT '
[[ -s runs/smoke_model.pth ]] || fail "no runs/smoke_model.pth (smoke.ini's --output) in $PWD"

echo "== 3. the installed local_mpirun.sh"
mkdir -p "$WORK/job" && cd "$WORK/job"
CIFAR_DATA=$here/data/cifar10.h5 CIFAR_EXTRA_ARGS="--epochs 1 --max-steps 2 --batch-size 16 --log-every 1" \
  "$PREFIX/share/cifar_mpi/jobs/local_mpirun.sh" -n 2 | tee train3.log
expect train3.log "launch: mpirun -np 2 .* $PREFIX/bin/cifar_mpi --config $PREFIX/share/cifar_mpi/config/default.ini --data $here/data/cifar10.h5 "
expect train3.log '^RESULT '
# Each launch trains in its own run folder, runs/local-<date>-<time>-<pid>, which it prints.
run_dir=$(run_folder_of train3.log)
[[ $run_dir == "$PWD"/runs/local-* && -s $run_dir/model.pth ]] || fail "no model.pth in the launch's run folder '$run_dir'"
echo "PASS: the installed cifar_mpi trained from $here, from $WORK/other (CIFAR_DATA) and through its job script"
