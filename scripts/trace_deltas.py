"""Step times of a TORCHAUG_DECODE_TRACE=1 log (csrc/cuda/decode.cu's trace lines on stderr): for
each pair of consecutive steps of a thread, how often it occurred and the mean and total ms between
them, largest total first.

    TORCHAUG_DECODE_TRACE=1 python3 some_script.py 2> trace.log; python3 scripts/trace_deltas.py trace.log
"""
import re,sys,collections
last={}; acc=collections.defaultdict(list)
for line in open(sys.argv[1]):
    m=re.match(r"torchaug decode_jpeg cuda:\d+ thread (\d+) t=([\d.]+): (.*) \(", line)
    if not m: continue
    th,t,step=m.group(1),float(m.group(2)),m.group(3)
    if th in last:
        acc[(last[th][1],step)].append(1e3*(t-last[th][0]))
    last[th]=(t,step)
for k,v in sorted(acc.items(), key=lambda kv:-sum(kv[1])):
    print(f"{k[0]:>32s} -> {k[1]:32s} n={len(v):4d} mean {sum(v)/len(v):8.3f} ms  total {sum(v):9.1f}")
