#!/usr/bin/env bash
# DDP scaling of examples/train.py on a multi-GPU machine: per model, synthetic data
# and torchaug (2 byte-reading workers per rank, nvJPEG decode + RRC + flip + RandAugment(2, 9) +
# normalize on the GPU) on 1 GPU and under torchrun on GPUS GPUs (default: 1, 2 where there are more,
# and all); batch 256 per GPU, bf16, channels_last, WARMUP (30) warm-up + STEPS - WARMUP (STEPS 120)
# timed steps, 1,024 generated 500x375 JPEGs repeated. The same run moves by several percent from
# one launch to the next on a multi-GPU machine, more than the 97%-of-synthetic target leaves, so
# each configuration runs REPEATS (3) times, synthetic and torchaug back to back, and the table
# gives each one's median (the runs' range in its note). Each row's note also gives, from its median
# run, rank 0's training-loop thread CPU per step and the host's slowest step against its median. Each run's JSON line
# goes to $OUT/ddp.jsonl, its stderr to $OUT/ddp_*.err, and the table to $OUT/bench_ddp.json
# (benchmarks/results/'s format).
# A run takes about a minute on a 4x H200 machine (some 40 s of it the start: imports, workers, NCCL,
# cuDNN's autotuning): the default (2 models x 3 GPU counts x 2 loaders x 3 repeats) takes over half
# an hour; choose models, GPUS and REPEATS to fit the time at hand.
# A library built elsewhere for this machine's torch may be carried in .gl/ (use_carried_or_build).
#   bash benchmarks/bench_ddp.sh [models...]        (default: efficientnet_b0 resnet50)
#   (RUN_TIMEOUT: seconds a run may take, default 150; SKIP_TESTS=1 leaves out the decode / prefetch tests)
set -uo pipefail
MAX_JOBS=${MAX_JOBS:-32}
source "$(dirname "$0")/../scripts/device_env.sh"
NGPU=$(nvidia-smi -L | wc -l)
nvidia-smi --query-gpu=name --format=csv,noheader | head -1; echo "GPUs: $NGPU"
nvidia-smi topo -m 2>/dev/null | head -4
use_carried_or_build
# the decoder and the Prefetcher on every GPU (tests that need 2 GPUs run here)
[ -n "${SKIP_TESTS:-}" ] || python3 -m pytest tests/test_decode.py tests/test_prefetch.py -q -p no:cacheprovider ${PYTEST_K:+-k "$PYTEST_K"} 2>&1 \
  | tee "$OUT/pytest_ddp.log" | grep -E "^(FAILED|ERROR)|passed|failed" | head -20
DATA=$(mktemp -d)
python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from bench_train import make_jpeg_folder; print('data: mean %.0f KB' % (make_jpeg_folder('$DATA', n=1024) / 1e3))"
STEPS=${STEPS:-120} WARMUP=${WARMUP:-30}
common="--data $DATA --batch-size 256 --warmup $WARMUP --steps $STEPS --length $((NGPU * 256 * (STEPS + 2))) --timeout 60"
models=${*:-efficientnet_b0 resnet50}
gpus=${GPUS:-$(printf '%s\n' 1 2 "$NGPU" | awk -v n="$NGPU" '$1 <= n && !seen[$1]++' | tr '\n' ' ')}
echo "GPU counts: $gpus"
for rep in $(seq "${REPEATS:-3}"); do
  for m in $models; do
    for n in $gpus; do
      for cfg in "synthetic" "torchaug --decode gpu --workers 2"; do
        if [ "$n" = 1 ]; then launch="python3"; else launch="torchrun --standalone --nproc_per_node $n"; fi
        t0=$SECONDS
        err="$OUT/ddp_${m}_${cfg%% *}_${n}_$rep.err"
        r=$(timeout "${RUN_TIMEOUT:-150}" $launch examples/train.py --model "$m" --loader $cfg $common 2> "$err" | grep '^{' | tail -1)
        echo "$m | ${cfg} | GPUs $n | run $rep | $((SECONDS - t0)) s | ${r:-FAILED (see $(basename "$err"))}"
        if [ -n "$r" ]; then echo "$r" >> "$OUT/ddp.jsonl"; rm -f "$err"; else tail -5 "$err"; fi
      done
    done
  done
done
python3 - "$OUT/ddp.jsonl" "$OUT/bench_ddp.json" <<'PY'
import json, statistics, sys
sys.path.insert(0, "benchmarks")
from harness import Results
runs = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    runs.setdefault((r["model"], r["world_size"], r["loader"]), []).append(r)
res = Results("DDP training, EfficientNet-b0 and ResNet-50 (bf16, channels_last)")
for (model, n, loader), rs in sorted(runs.items(), key=lambda kv: (kv[0][0], kv[0][2] != "synthetic", kv[0][1])):
    b = rs[0]["batch_size"]
    speeds = sorted(r["img_per_s"] for r in rs)
    med = statistics.median(speeds)
    runs_note = f"median of {len(rs)} runs ({speeds[0]:,.0f} to {speeds[-1]:,.0f} img/s)" if len(rs) > 1 else "one run"
    note = f"{runs_note}, {rs[0]['timed_steps']} timed steps each, batch {b} a GPU"
    target = None
    synth = runs.get((model, n, "synthetic"))
    if loader == "torchaug" and synth:
        ref = statistics.median(r["img_per_s"] for r in synth)
        note += f"; {100 * med / ref:.1f}% of synthetic"
        target = 0.97 * ref
    mid = sorted(rs, key=lambda r: r["img_per_s"])[(len(rs) - 1) // 2]
    if "cpu_ms_per_step" in mid and "step_ms" in mid:
        note += (f"; median run's rank 0: loop thread {mid['cpu_ms_per_step']['loop_thread']:.0f} ms CPU a step, "
                 f"slowest step {mid['step_ms']['max'] / mid['step_ms']['p50']:.1f}x the median")
    impl = "torchaug, GPU decode, 2 byte-reading workers a rank" if loader == "torchaug" else "synthetic data"
    res.add(f"{model}, {n} GPU{'s' if n > 1 else ''}", impl, b * n, {"ms": 1e3 * b * n / med}, note=note, target=target)
res.save(sys.argv[2], None)
PY
