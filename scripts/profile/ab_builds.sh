#!/usr/bin/env bash
# Two or more builds of the library side by side on the GPU machine, for a kernel change that claims
# the same results and a speed-up: resized_crop's outputs compared bit for bit
# (scripts/profile/ab_outputs.py) and benchmarks/bench_geometry.py --torchaug-only run in turn, build
# after build, ROUNDS times (default 2), so that the machine's drift does not favour one of them.
# The build under test is the carried one (.gl, scripts/build_for_device.sh); the others are
# .gl_ab/<name>.so.xz, each a _C.cpython-*.so of the same Python and torch compressed with xz (three
# fit in one call's carry beside .gl), "old" the baseline:
#   xz -c .gl/_C.cpython-312-x86_64-linux-gnu.so > .gl_ab/old.so.xz     (before the change is built)
#   bash scripts/profile/ab_builds.sh                                      (carry .gl and .gl_ab)
set -uo pipefail
source "$(dirname "$0")/../device_env.sh"
use_carried_or_build > "$OUT/carried.log" 2>&1; tail -1 "$OUT/carried.log"
grep -q "built from other" "$OUT/carried.log" && exit 3
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
AB=${AB_ROOT:-/tmp/ab}
VARS="new"
rm -rf "$AB/new" && mkdir -p "$AB/new" && cp -r torchaug benchmarks scripts "$AB/new/"
for f in .gl_ab/*.so.xz; do
  [ -e "$f" ] || continue
  v=$(basename "$f" .so.xz); VARS="$VARS $v"
  rm -rf "$AB/$v" && mkdir -p "$AB/$v" && cp -r torchaug benchmarks scripts "$AB/$v/"
  python3 -c "import lzma, sys; open(sys.argv[2], 'wb').write(lzma.open(sys.argv[1]).read())" "$f" "$AB/$v"/torchaug/_C.cpython-*.so
done
echo "builds: $VARS"
for v in $VARS; do (cd "$AB/$v" && PYTHONPATH="$AB/$v" python3 scripts/profile/ab_outputs.py "$OUT/out_$v.pt" | tail -1); done
if [ -e "$OUT/out_old.pt" ]; then
  for v in $VARS; do
    [ "$v" = old ] || { echo "== $v against old"; python3 scripts/profile/ab_outputs.py --compare "$OUT/out_old.pt" "$OUT/out_$v.pt" | tail -8; }
  done
fi
rm -f "$OUT"/out_*.pt
# bench_geometry's rows (from its JSON): case, implementation and img/s
for r in $(seq 1 "${ROUNDS:-2}"); do
  for v in $VARS; do
    (cd "$AB/$v" && PYTHONPATH="$AB/$v" python3 benchmarks/bench_geometry.py --torchaug-only --json "$OUT/ab_${v}_$r.json" > "$OUT/ab_${v}_$r.log" 2>&1)
    python3 -c "import json, sys; print(f'{sys.argv[2]}, round {sys.argv[3]}:', '; '.join(f\"{r['case'][:30]} / {r['impl'][:30]}: {r['img_per_s']:,.0f}\" for r in json.load(open(sys.argv[1]))['rows']))" \
      "$OUT/ab_${v}_$r.json" "$v" "$r" || tail -5 "$OUT/ab_${v}_$r.log"
  done
done
