#!/usr/bin/env bash
# Per-instruction profile of one kernel launch (Nsight Compute's SourceCounters: executed
# instructions and stall samples per SASS instruction, with the CUDA line from -lineinfo), written
# as CSV under $OUT; scripts/profile/ncu_summary.py sums it by opcode and source line (the CUDA view of
# a library carried from scripts/build_for_device.sh is empty: ncu_summary.py --listing maps the SASS
# CSV to lines here, its docstring says how).
#   bash scripts/profile/ncu_source.sh [kernel regex] [python script]
# defaults: resized_crop_kernel in scripts/profile/resized_crop.py (RandomResizedCrop + flip + normalize);
# scripts/profile/chain.py is the RandAugment chain (resized_crop_kernel, augment_resident_kernel).
set -uo pipefail
source "$(dirname "$0")/../device_env.sh"
use_carried_or_build > "$OUT/carried.log" 2>&1; tail -1 "$OUT/carried.log"   # the carried .gl build, else one here
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1 || true)
K=${1:-resized_crop_kernel}
S=${2:-scripts/profile/resized_crop.py}
tag=$(echo "$K" | tr -c 'A-Za-z0-9_\n' '_')
"$NCU" --clock-control none --kernel-name regex:"$K" --launch-skip 3 --launch-count 1 --section SourceCounters \
  --section InstructionStats --section SpeedOfLight --section WarpStateStats --section Occupancy \
  --import-source yes -f -o "$OUT/ncu_$tag" python3 "$S" > "$OUT/ncu_$tag.log" 2>&1
tail -3 "$OUT/ncu_$tag.log"
"$NCU" -i "$OUT/ncu_$tag.ncu-rep" --print-summary none 2>/dev/null | grep -E "Duration|Executed Ipc A|Issue Slots Busy|Warp Cycles Per Issued|Achieved Occupancy|Executed Instructions  |Memory Throughput|Stall" | head -20
for v in "sass" "cuda"; do
  "$NCU" -i "$OUT/ncu_$tag.ncu-rep" --page source --csv --print-source "$v" > "$OUT/ncu_${tag}_$v.csv" 2> "$OUT/ncu_${tag}_$v.err"
  echo "print-source $v: $(wc -l < "$OUT/ncu_${tag}_$v.csv") lines; $(head -c 300 "$OUT/ncu_${tag}_$v.err")"
done
python3 scripts/profile/ncu_summary.py "$OUT"/ncu_${tag}_sass.csv 2>&1 | head -45
python3 scripts/profile/ncu_summary.py "$OUT"/ncu_${tag}_cuda.csv 2>&1 | sed -n '/top rows/,$p' | head -45
tar czf "$OUT/ncu_$tag.tgz" -C "$OUT" $(cd "$OUT" && ls ncu_${tag}_*.csv ncu_$tag.log) && rm -f "$OUT"/ncu_${tag}_*.csv "$OUT/ncu_$tag.ncu-rep"
