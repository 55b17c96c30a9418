#!/usr/bin/env bash
# Every program's outputs follow cifar_mpi's rules (src/outputs/output_policy):
# cifar_eval --json and cifar_pack --output / --synthetic-binary (an archive or a folder) never
# replace an input of the same command, a file a run owns (its model file,
# metrics file or checkpoint, proven by the owner record beside it; a name
# --resume auto takes for a checkpoint) or a file of another kind. Each
# refusal: exit code 2, one error line naming the file and why, the file
# unchanged. The program's own earlier output is replaced, said in one line.
# shellcheck source=tests/e2e/common.sh
source "$(dirname "$0")/../e2e/common.sh"

# A run that owns its files: a model file, a metrics file and checkpoints.
mpi 1 "$CIFAR_MPI" --data "$E2E_DATA" --epochs 1 --max-steps 2 --batch-size 16 --eval false --log-every 1000 \
  --output model.pth --metrics metrics.jsonl --checkpoint-dir ck >train.log 2>&1 || { cat train.log; fail "training failed"; }
checkpoint=$(find ck -name 'ckpt-*.pt' | sort | tail -n 1)
[[ -n $checkpoint && -f ck/.$(basename "$checkpoint").run ]] || fail "the run wrote no recorded checkpoint"
cp "$E2E_DATA" data.h5
echo "a user's notes" >notes.txt
cp notes.txt notes.tar.gz
"$CIFAR_PACK" --synthetic-binary own.tar.gz --seed 1 >/dev/null || fail "cifar_pack --synthetic-binary failed"

# refused PATTERN FILE PROGRAM ARGS...: exit code 2, one error line with PATTERN, FILE unchanged.
refused() {
  local pattern=$1 file=$2 rc=0 before
  shift 2
  before=$(md5sum <"$file")
  "$@" >refused.log 2>&1 || rc=$?
  [[ $rc == 2 ]] || { cat refused.log; fail "$* exited $rc, expected 2"; }
  [[ $(grep -c 'error' refused.log) == 1 ]] || { cat refused.log; fail "$*: expected one error line"; }
  grep -qF -- "$pattern" refused.log || { cat refused.log; fail "$*: the error does not say '$pattern'"; }
  [[ $(md5sum <"$file") == "$before" ]] || fail "$*: $file changed"
  echo "ok: $(grep -o 'error.*' refused.log | cut -c1-200)"
}
eval_json() { refused "$1" "$2" mpi 1 "$CIFAR_EVAL" --threads 1 --weights model.pth --data data.h5 --json "$2"; }
pack() { refused "$1" "$2" "$CIFAR_PACK" --synthetic 64 --test-count 32 --output "$2"; }

eval_json "--json model.pth is the same file as --weights model.pth: an output never replaces an input" model.pth
eval_json "--json data.h5 is the same file as --data data.h5" data.h5
eval_json "is named like a checkpoint" "$checkpoint"
eval_json "--json metrics.jsonl is a metrics file of run" metrics.jsonl
eval_json "--json notes.txt exists and is not of the kind --json writes (evaluation JSON of cifar_eval)" notes.txt
pack "is named like a checkpoint" "$checkpoint"
pack "--output model.pth is a model file of run" model.pth
pack "--output notes.txt exists and is not of the kind --output writes (data file packed by cifar_pack)" notes.txt
refused "--output own.tar.gz is the same file as --input own.tar.gz" own.tar.gz \
  "$CIFAR_PACK" --input own.tar.gz --output own.tar.gz
refused "--synthetic-binary notes.tar.gz exists and is not of the kind" notes.tar.gz \
  "$CIFAR_PACK" --synthetic-binary notes.tar.gz
# The folder form: never over batches cifar_pack did not write (the real
# CIFAR-10's, say); its own earlier layout is replaced, and said.
mkdir -p real/cifar-10-batches-bin
echo "real batch" >real/cifar-10-batches-bin/data_batch_1.bin
refused "real/cifar-10-batches-bin holds 1 file(s) cifar_pack did not write (data_batch_1.bin" \
  real/cifar-10-batches-bin/data_batch_1.bin "$CIFAR_PACK" --synthetic-binary real
"$CIFAR_PACK" --synthetic-binary layout >/dev/null || fail "cifar_pack --synthetic-binary DIR failed"
"$CIFAR_PACK" --synthetic-binary layout --seed 2 >layout.log || fail "cifar_pack --synthetic-binary DIR again failed"
grep -q "replaced the earlier synthetic layout of cifar_pack in layout/cifar-10-batches-bin" layout.log ||
  { cat layout.log; fail "no replace line for the folder form"; }
# The checkpoint's record names the file, also without the checkpoint's name.
cp "$checkpoint" ck/copy.pt
cp "ck/.$(basename "$checkpoint").run" ck/.copy.pt.run
pack "--output ck/copy.pt is a checkpoint file of run" ck/copy.pt

# Their own earlier output is replaced, and they say so.
"$CIFAR_PACK" --synthetic 64 --test-count 32 --output small.h5 >pack1.log || fail "cifar_pack failed"
"$CIFAR_PACK" --synthetic 64 --test-count 32 --seed 2 --output small.h5 >pack2.log || fail "cifar_pack failed"
grep -q "replaced the earlier data file packed by cifar_pack small.h5 (" pack2.log || { cat pack2.log; fail "no replace line"; }
"$CIFAR_PACK" --synthetic-binary own.tar.gz --seed 2 >pack3.log || fail "cifar_pack --synthetic-binary failed"
grep -q "replaced the earlier gzip archive own.tar.gz (" pack3.log || { cat pack3.log; fail "no replace line"; }
for i in 1 2; do
  mpi 1 "$CIFAR_EVAL" --threads 1 --weights model.pth --data small.h5 --json e.json >"eval$i.log" 2>&1 ||
    { cat "eval$i.log"; fail "cifar_eval failed"; }
done
grep -q "wrote e.json" eval1.log || { cat eval1.log; fail "no wrote line"; }
grep -q "replaced the earlier evaluation JSON of cifar_eval e.json (" eval2.log || { cat eval2.log; fail "no replace line"; }
echo "ok: every refusal left its file as it was; own outputs replaced"
