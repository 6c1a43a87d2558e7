#!/usr/bin/env bash
# One device call of this session's work: build in place (sm_90), the whole pytest suite on CUDA,
# the decoder A/B (scripts/decode_ab.py), bench_geometry (issue 2's case on this GPU) and Nsight
# Compute over the hue / ColorJitter / RandAugment kernels, the resized_crop tap-mode A/B
# (scripts/rc_taps_ab.py) with Nsight Compute on each mode, and the 1-GPU training rows with GPU
# decode (bench_train, EfficientNet-b0, --quick). Logs under $OUT.
#   bash scripts/gpu_session.sh [build] [tests] [decode_ab] [decode_split] [decode_bench] [geometry] [geometry_full] [ncu] [color] [augment]
#                               [rc_taps] [ncu_rc] [train] [train_ab] [loader_probe] [contention] [profile] [balance] [augment_quick]
#                               [stages] [scan_ab] [save_so] [gil] [profile_decode] [smi] [cpu_pairs] [decode_trace] [waits] [window]
#   (PYTEST_FILES / PYTEST_K select tests, BALANCE_ARGS scripts/resident_balance.py's, PROFILE_ARGS the steps of scripts/profile_ops.py, TRAIN_AB_ARGS the train_ab runs,
#    STAGES_ARGS scripts/prefetch_stages.py's and STAGES_ENV the environments it runs under, each "default" or VAR=value;
#    PROFILE_DECODE_ARGS scripts/profile_decode.py's and PROFILE_DECODE_ENV its environments, the same way; SCAN_AB_ARGS scripts/scan_ab.py's;
#    gil: scripts/gil_share.py (GIL_ARGS, e.g. --native) on GIL_MODEL (efficientnet_b0) with each of GIL_LOADERS (synthetic torchaug), py-spy's wheel in .gl/;
#    build: the library carried in .gl/ by scripts/build_for_device.sh when it was built from these sources, else built here;
#    cpu_pairs: lscpu, then scripts/cpu_pairs.py (which CPUs slow each other down as hyper-threads of one core do);
#    decode_trace: examples/train.py (EfficientNet-b0, GPU decode, 2 workers) eager and with --cuda-graph under
#      TORCHAUG_DECODE_TRACE=1, then scripts/trace_gaps.py: where the producer's decode calls spend their time;
#    waits: examples/train.py --trace-out (4 traced steps after 50; EfficientNet-b0, GPU decode, 2 workers) in each of WAITS_MODES
#      (eager graph) under each of WAITS_ENV ("default" or VAR=value), then scripts/api_waits.py: each thread's longest CUDA calls;
#    window: scripts/pipeline_window.py (WINDOW_ARGS): the Prefetcher over 2 byte-reading workers at a long window, which side bounds it;
#    save_so: the built library stripped and gzipped to $OUT/_C.so.gz, to carry to a later machine in .gl/)
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
steps=" $* "
jpeg_folder() {  # 1,024 generated 500x375 JPEGs (mean ~40 KB) in ImageFolder layout under $1
  python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from bench_train import make_jpeg_folder; make_jpeg_folder('$1', n=1024)"
}
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader
if [[ $steps == *" build "* ]]; then
  use_carried_or_build
fi
if [[ $steps == *" save_so "* ]]; then
  strip --strip-unneeded torchaug/_C*.so -o /tmp/_C.so && gzip -9c /tmp/_C.so > "$OUT/_C.so.gz" && ls -l "$OUT/_C.so.gz"
fi
if [[ $steps == *" tests "* ]]; then
  t0=$(date +%s)
  python3 -m pytest ${PYTEST_FILES:-tests} -q -ra -p no:cacheprovider ${PYTEST_K:+-k "$PYTEST_K"} 2>&1 | tee "$OUT/pytest.log" | grep -E "^(FAILED|ERROR)|passed|failed|^E " | head -40
  echo "pytest: $(( $(date +%s) - t0 )) s"
fi
if [[ $steps == *" cpu_pairs "* ]]; then
  lscpu | grep -E "Model name|^CPU\(s\)|Thread|Core|Socket|NUMA node|Hypervisor|Virtualization"
  timeout 120 python3 scripts/cpu_pairs.py --work 0.02 --json "$OUT/cpu_pairs.json" 2>&1 | tee "$OUT/cpu_pairs.log"
fi
if [[ $steps == *" decode_trace "* ]]; then
  jpeg_folder /tmp/tracedata
  for mode in ${TRACE_MODES:-eager graph}; do
    extra=; [ $mode = graph ] && extra=--cuda-graph
    TORCHAUG_DECODE_TRACE=1 timeout 200 python3 examples/train.py --model efficientnet_b0 --loader torchaug --decode gpu --workers 2 \
      --data /tmp/tracedata --warmup 20 --steps 100 --length 30000 $extra 2> "$OUT/trace_$mode.log" | tail -1 | cut -c1-600
  done
  python3 scripts/trace_gaps.py "$OUT"/trace_*.log
fi
if [[ $steps == *" waits "* ]]; then
  jpeg_folder /tmp/tracedata
  for e in ${WAITS_ENV:-default}; do
    for mode in ${WAITS_MODES:-eager graph}; do
      extra=; [ $mode = graph ] && extra=--cuda-graph
      tag=$mode-$(echo "$e" | tr = -); echo "== api waits, $mode, $e"
      [ "$e" = default ] && e=
      env $e timeout 200 python3 examples/train.py --model efficientnet_b0 --loader torchaug --decode gpu --workers 2 --data /tmp/tracedata \
        --warmup 20 --steps 54 --length 30000 --trace-steps 4 --trace-out "/tmp/trace_$tag.json.gz" $extra 2>&1 | tail -1 | cut -c1-400
      python3 scripts/api_waits.py "/tmp/trace_$tag.json.gz" --longest 3 > "$OUT/api_waits_$tag.txt"; head -12 "$OUT/api_waits_$tag.txt"
    done
  done
fi
[[ $steps == *" window "* ]] && timeout 400 python3 scripts/pipeline_window.py ${WINDOW_ARGS:-} --json "$OUT/window.json" 2>&1 | grep -v Warning | tee "$OUT/window.log"
[[ $steps == *" decode_ab "* ]] && timeout 600 python3 scripts/decode_ab.py 2>&1 | tee "$OUT/decode_ab.log"
[[ $steps == *" scan_ab "* ]] && timeout 300 python3 scripts/scan_ab.py ${SCAN_AB_ARGS:-} --json "$OUT/scan_ab.json" 2>&1 | tee "$OUT/scan_ab.log"
[[ $steps == *" decode_split "* ]] && timeout 500 python3 scripts/decode_split.py ${SPLIT_ARGS:-} 2>&1 | tee "$OUT/decode_split.log"
[[ $steps == *" decode_bench "* ]] && timeout 500 python3 benchmarks/bench_decode.py ${DECODE_ARGS:-} --json "$OUT/bench_decode.json" --markdown "$OUT/bench_decode.md" > "$OUT/bench_decode.log" 2>&1; [[ $steps == *" decode_bench "* ]] && tail -25 "$OUT/bench_decode.log"
if [[ $steps == *" profile_decode "* ]]; then  # scripts/profile_decode.py under each of PROFILE_DECODE_ENV ("default" or VAR=value)
  for e in ${PROFILE_DECODE_ENV:-default}; do
    echo "== profile_decode, $e"
    if [ "$e" = default ]; then e=; fi
    env $e timeout 200 python3 scripts/profile_decode.py ${PROFILE_DECODE_ARGS:-} --json "$OUT/profile_decode_$(echo "${e:-default}" | tr = -).json" 2>&1 | tee -a "$OUT/profile_decode.log"
  done
fi
[[ $steps == *" profile "* ]] && timeout 400 python3 scripts/profile_ops.py ${PROFILE_ARGS:-} 2>&1 | tee "$OUT/profile_ops.log"
[[ $steps == *" color_ab "* ]] && timeout 300 python3 scripts/color_ab.py 2>&1 | tee "$OUT/color_ab.log"
[[ $steps == *" geometry "* ]] && python3 benchmarks/bench_geometry.py --quick --json "$OUT/bench_geometry.json" --markdown "$OUT/bench_geometry.md" 2>&1 | tee "$OUT/bench_geometry.log" | grep -E "^\| RRC|target" | head -20
[[ $steps == *" geometry_full "* ]] && python3 benchmarks/bench_geometry.py --json "$OUT/bench_geometry.json" --markdown "$OUT/bench_geometry.md" 2>&1 | tee "$OUT/bench_geometry.log" | grep -E "^\| RRC|target" | head -20
[[ $steps == *" rc_taps "* ]] && timeout 300 python3 scripts/rc_taps_ab.py 2>&1 | tee "$OUT/rc_taps_ab.log"
if [[ $steps == *" ncu_rc "* ]]; then
  NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1 || true)
  for m in exponent scaled words; do
    TORCHAUG_RC_TAPS=$m "$NCU" --kernel-name regex:resized_crop_kernel --launch-skip 3 --launch-count 1 --section SpeedOfLight \
      --section Occupancy --section WarpStateStats --section LaunchStats --section InstructionStats --section ComputeWorkloadAnalysis \
      python3 scripts/profile_resized_crop.py > "$OUT/ncu_rc_$m.txt" 2>&1
    echo "== ncu resized_crop taps=$m"; grep -E "Duration|Issue Slots Busy|Executed Ipc A|Warp Cycles Per Issued|Stall|Executed Instructions  |Achieved Occupancy|Pipe" "$OUT/ncu_rc_$m.txt" | head -16
  done
fi
[[ $steps == *" train "* ]] && timeout 420 python3 benchmarks/bench_train.py --quick --models efficientnet_b0 --configs input_gpu,torchaug_gpu \
  --json "$OUT/bench_train.json" --markdown "$OUT/bench_train.md" > "$OUT/bench_train.log" 2>&1; [[ $steps == *" train "* ]] && tail -12 "$OUT/bench_train.log"
[[ $steps == *" contention "* ]] && timeout 200 python3 scripts/decode_contention.py --sizes 2>&1 | tee "$OUT/contention.log"
[[ $steps == *" loader_probe "* ]] && timeout 200 python3 scripts/loader_probe.py 2>&1 | tee "$OUT/loader_probe.log"
if [[ $steps == *" stages "* ]]; then
  for e in ${STAGES_ENV:-default}; do
    echo "== prefetch_stages, $e"
    if [ "$e" = default ]; then e=; fi
    env $e timeout 300 python3 scripts/prefetch_stages.py ${STAGES_ARGS:-} --json "$OUT/stages_$(echo "${e:-default}" | tr = -).json" 2>&1 | tee -a "$OUT/stages.log"
  done
fi
if [[ $steps == *" gil "* ]]; then  # py-spy (a wheel carried in .gl/) on examples/train.py: who holds the GIL
  python3 -m zipfile -e .gl/py_spy-*.whl /tmp/pyspy && chmod +x /tmp/pyspy/py_spy-*.data/scripts/py-spy
  jpeg_folder /tmp/gildata
  for loader in ${GIL_LOADERS:-synthetic torchaug}; do
    timeout 200 python3 scripts/gil_share.py ${GIL_ARGS:-} --py-spy /tmp/pyspy/py_spy-*.data/scripts/py-spy --json "$OUT/gil_$loader.json" -- \
      --model ${GIL_MODEL:-efficientnet_b0} --loader $loader --decode gpu --workers 2 --data /tmp/gildata --warmup 30 --steps ${GIL_STEPS:-450} --length 300000 2>&1 | tee -a "$OUT/gil.log"
  done
fi
if [[ $steps == *" smi "* ]]; then  # the GPU's clocks, power and throttle reasons every 200 ms while the later steps run
  q=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu,clocks_throttle_reasons.active
  nvidia-smi --query-gpu=$q --format=csv,noheader -i 0 > /dev/null 2>&1 || q=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu
  nvidia-smi --query-gpu=power.limit,clocks.max.sm --format=csv -i 0
  nvidia-smi --query-gpu=$q --format=csv,noheader,nounits -i 0 -lms 200 > "$OUT/smi.csv" 2>&1 &
  SMI_PID=$!
  echo "smi: sampling $q"
fi
[[ $steps == *" train_ab "* ]] && timeout 580 python3 scripts/train_ab.py ${TRAIN_AB_ARGS:-} --json "$OUT/train_ab.json" 2>&1 | tee "$OUT/train_ab.log"
[[ $steps == *" color "* ]] && python3 benchmarks/bench_color.py --json "$OUT/bench_color.json" --markdown "$OUT/bench_color.md" > "$OUT/bench_color.log" 2>&1 && grep -E "hue|ColorJitter|memory floor" "$OUT/bench_color.md"
[[ $steps == *" balance "* ]] && timeout 400 python3 scripts/resident_balance.py ${BALANCE_ARGS:---all-ops} --json "$OUT/balance.json" 2>&1 | tee "$OUT/balance.log"
[[ $steps == *" augment_quick "* ]] && python3 benchmarks/bench_augment.py --quick --json "$OUT/bench_augment.json" --markdown "$OUT/bench_augment.md" > "$OUT/bench_augment.log" 2>&1 && grep -E "torchaug|floor|torchvision" "$OUT/bench_augment.md" | head -24
[[ $steps == *" augment "* ]] && python3 benchmarks/bench_augment.py --json "$OUT/bench_augment.json" --markdown "$OUT/bench_augment.md" > "$OUT/bench_augment.log" 2>&1 && grep -E "torchaug|floor" "$OUT/bench_augment.md" | head -12
if [[ $steps == *" ncu "* ]]; then
  NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1 || true)
  for w in hue:color_apply jitter:color_apply augment:augment_slot; do
    "$NCU" --kernel-name regex:"${w#*:}" --launch-skip 3 --launch-count 1 --section SpeedOfLight --section Occupancy \
      --section WarpStateStats --section LaunchStats --section InstructionStats --section ComputeWorkloadAnalysis \
      python3 scripts/profile_color.py "${w%%:*}" > "$OUT/ncu_${w%%:*}.txt" 2>&1
    echo "== ncu ${w%%:*}"; grep -E "  [a-z_]+_kernel|Duration|Throughput|Achieved Occupancy|Registers Per|Issue Slots Busy|Executed Ipc A|Warp Cycles Per Issued|Stall|Executed Instructions  |Local" "$OUT/ncu_${w%%:*}.txt" | head -24
  done
fi
[ -n "${SMI_PID:-}" ] && kill "$SMI_PID" 2>/dev/null
exit 0
