#!/usr/bin/env bash
# Short DDP check (issue 5): build, the 2-GPU decode test, then examples/train.py with torchaug
# (nvJPEG decode, 2 byte-reading workers per rank) on 2 GPUs and on 1, efficientnet_b0; JSON lines
# are printed as they come.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" TORCH_CUDA_ARCH_LIST=9.0 MAX_JOBS=32 TORCHAUG_CUDA=1
python3 setup.py build_ext --inplace > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
python3 -m pytest tests/test_decode.py -q -p no:cacheprovider -k "second_gpu or batch_mixes" 2>&1 | tail -1
DATA=$(mktemp -d)
python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from bench_train import make_jpeg_folder; make_jpeg_folder('$DATA', n=1024)"
common="--data $DATA --batch-size 256 --warmup 20 --steps 60 --length $((2 * 256 * 62)) --model efficientnet_b0 --loader torchaug --decode gpu --workers 2"
timeout 100 torchrun --standalone --nproc_per_node 2 examples/train.py $common 2> "$OUT/ddp2.err" | grep '^{' || { echo "2 GPUs: FAILED"; tr '\r' '\n' < "$OUT/ddp2.err" | tail -3; }
timeout 80 python3 examples/train.py $common 2> "$OUT/ddp1.err" | grep '^{' || echo "1 GPU: FAILED"
