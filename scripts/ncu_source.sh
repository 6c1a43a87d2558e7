#!/usr/bin/env bash
# Per-instruction profile of one resized_crop launch of benchmark case 1 (Nsight Compute's
# SourceCounters: executed instructions and stall samples per SASS instruction, with the CUDA line
# from -lineinfo), written as CSV under $OUT; scripts/ncu_summary.py sums it by source line.
#   bash scripts/ncu_source.sh [kernel regex]
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1 || true)
K=${1:-resized_crop_kernel}
"$NCU" --kernel-name regex:"$K" --launch-skip 3 --launch-count 1 --section SourceCounters --section InstructionStats \
  --import-source yes -f -o "$OUT/ncu_src" python3 scripts/profile_resized_crop.py > "$OUT/ncu_src.log" 2>&1
tail -3 "$OUT/ncu_src.log"
for v in "sass" "cuda,sass" "cuda"; do
  "$NCU" -i "$OUT/ncu_src.ncu-rep" --page source --csv --print-source "$v" > "$OUT/ncu_src_${v/,/_}.csv" 2> "$OUT/ncu_src_${v/,/_}.err"
  echo "print-source $v: $(wc -l < "$OUT/ncu_src_${v/,/_}.csv") lines; $(head -c 300 "$OUT/ncu_src_${v/,/_}.err")"
done
head -c 600 "$OUT/ncu_src_sass.csv"; echo
python3 scripts/ncu_summary.py "$OUT"/ncu_src_*.csv 2>&1 | head -60
tar czf "$OUT/ncu_src.tgz" -C "$OUT" $(cd "$OUT" && ls ncu_src_*.csv ncu_src.log) && rm -f "$OUT"/ncu_src_*.csv "$OUT/ncu_src.ncu-rep"
