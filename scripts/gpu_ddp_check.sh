#!/usr/bin/env bash
# Short DDP check (issue 5): build, the 2-GPU decode test, then examples/train.py with torchaug
# (nvJPEG decode, 2 byte-reading workers per rank) on 2 GPUs and on 1, efficientnet_b0; JSON lines
# are printed as they come. A 2-GPU run still going after DUMP_AFTER seconds gets SIGUSR1 (every
# rank prints all its threads' Python stacks to $OUT/ddp2_<label>.err) and is then stopped.
# VARIANTS: space-separated labels run in order: lazy (CUDA's default lazy module loading), eager
# (CUDA_MODULE_LOADING=EAGER), and 1gpu.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}; mkdir -p "$OUT"
VARIANTS=${VARIANTS:-"lazy 1gpu"}
DUMP_AFTER=${DUMP_AFTER:-75}
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" TORCH_CUDA_ARCH_LIST=9.0 MAX_JOBS=32 TORCHAUG_CUDA=1
python3 setup.py build_ext --inplace > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
[ -n "${SKIP_TEST:-}" ] || python3 -m pytest tests/test_decode.py -q -p no:cacheprovider -k "second_gpu or batch_mixes" 2>&1 | tail -1
DATA=$(mktemp -d)
python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from bench_train import make_jpeg_folder; make_jpeg_folder('$DATA', n=1024)"
common="--data $DATA --batch-size 256 --warmup 20 --steps 60 --length $((2 * 256 * 62)) --model efficientnet_b0 --loader torchaug --decode gpu --workers 2"

ranks() {  # the train.py processes torchrun started (not torchrun itself)
  for p in $(pgrep -f examples/train.py); do grep -q torchrun "/proc/$p/cmdline" 2>/dev/null || echo "$p"; done
}

ddp2() {  # label, env assignments...
  local label=$1; shift
  local t0=$SECONDS
  env "$@" timeout -k 5 $((DUMP_AFTER + 15)) torchrun --standalone --nproc_per_node 2 examples/train.py $common \
      > "$OUT/ddp2_$label.out" 2> "$OUT/ddp2_$label.err" &
  local job=$!
  ( sleep "$DUMP_AFTER"; for p in $(ranks); do kill -USR1 "$p"; done ) &
  local dog=$!
  wait "$job"; local rc=$?
  kill "$dog" 2>/dev/null
  if grep '^{' "$OUT/ddp2_$label.out"; then echo "2 GPUs ($label): rc $rc, $((SECONDS - t0)) s"; return; fi
  echo "2 GPUs ($label): FAILED rc $rc after $((SECONDS - t0)) s; progress:"
  tr '\r' '\n' < "$OUT/ddp2_$label.err" | grep -E 'it/s|s/it|img/s' | tail -2
  echo "stacks (threads with torchaug / decode / queue frames):"
  grep -E '^(Thread|Current thread)|File ".*(torchaug|train\.py|queue|threading\.py|distributed)' "$OUT/ddp2_$label.err" | head -80
}

for v in $VARIANTS; do
  case $v in
    lazy) ddp2 lazy CUDA_MODULE_LOADING=LAZY ;;
    eager) ddp2 eager CUDA_MODULE_LOADING=EAGER ;;
    1gpu) timeout 80 python3 examples/train.py $common 2> "$OUT/ddp1.err" | grep '^{' || echo "1 GPU: FAILED" ;;
  esac
done
