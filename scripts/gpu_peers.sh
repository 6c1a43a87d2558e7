#!/usr/bin/env bash
# The peer benchmark on the GPU machine: torchaug beside DALI and CV-CUDA (benchmarks/bench_peers.py)
# and the README's chart from its JSON (benchmarks/chart.py). The peers' wheels are larger than what
# one device call carries, so they travel in parts made here by
#   bash scripts/gpu_peers.sh --pack        (downloads them into .whl/, splits them into .whl/parts/)
# and carried one part a call (.whl/parts/p00, p01, ...) while the machine stays warm; then, in the
# same machine's next call (carrying .gl from scripts/build_for_device.sh):
#   export OUT; bash scripts/gpu_peers.sh   (results: $OUT/bench_peers.{json,md,log}, $OUT/peers.png)
# Without the parts it measures torchaug alone and says the peers were not measured.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --pack ]; then
  set -e
  plat=(--python-version 3.12 --only-binary=:all: --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
        --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64)
  mkdir -p .whl/small
  python3 -m pip download -q --no-deps "${plat[@]}" -d .whl "nvidia-dali-cuda130==2.4.*" "cvcuda-cu13==0.19.*" "nvidia-nvimgcodec-cu13==0.9.*"
  # DALI's other needs (its METADATA) that the device's image lacks or has in other versions, and nvJPEG for nvImageCodec
  python3 -m pip download -q --no-deps "${plat[@]}" -d .whl/small astunparse==1.6.3 gast==0.6.0 six==1.17.0 optree \
    "packaging<=26.3" nvtx makefun "libcst~=1.8" pyyaml nvidia-nvjpeg==13.0.1.86
  rm -rf .whl/parts && mkdir .whl/parts
  (cd .whl && tar -cf - ./*.whl small | split -b 58m -d - parts/p)
  ls -s --block-size=M .whl/parts
  exit 0
fi
source scripts/device_env.sh
use_carried_or_build
if ls .whl/parts/p* > /dev/null 2>&1; then
  mkdir -p /tmp/peer_wheels && cat .whl/parts/p* | tar -xf - -C /tmp/peer_wheels \
    && python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site /tmp/peer_wheels/*.whl /tmp/peer_wheels/small/*.whl \
    && export PYTHONPATH="/tmp/site:$PYTHONPATH" LD_LIBRARY_PATH="/tmp/site/nvidia/cu13/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    || echo "gpu_peers: the carried wheels did not install; the peers will be reported as not measured"
fi
python3 benchmarks/bench_peers.py --json "$OUT/bench_peers.json" --markdown "$OUT/bench_peers.md" 2>&1 | tee "$OUT/bench_peers.log" | grep -v "^\s*$" | tail -60
python3 benchmarks/chart.py --json "$OUT/bench_peers.json" --png "$OUT/peers.png"
