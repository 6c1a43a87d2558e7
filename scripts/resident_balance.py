"""How much of the resident augment kernel's time is load imbalance between its blocks (a block per
sample, ~2 waves on an H100): per-op costs from batches where every sample runs the same op, then
RandAugment(2, 9) programs timed in their drawn order, in longest-first order (the samples and their
programs permuted on the host: what a kernel taking its samples longest-first would run) and in
shortest-first order, beside a greedy list-scheduling model of the same costs; then the same
programs with the kernel ordering them itself (TORCHAUG_RESIDENT_ORDER=1, the default, and
=longest; the rows before run with 0), every op's cost (--all-ops: the ones RandAugment does not draw, and the
geometric ops bilinear), and case 4's chain with --ab-env (the kernel's order) 0 and 1 in alternate rounds.

    python3 scripts/resident_balance.py [--programs 4] [--iters 20] [--all-ops] [--chain-rounds 3] [--json out.json]
"""
import argparse
import heapq
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torchaug.functional as F  # noqa: E402
import torchaug.transforms as T  # noqa: E402
from chain_ab import chain_ab  # noqa: E402
from harness import kernel_us, time_cuda  # noqa: E402

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def makespan(costs, sms):
    """Greedy list scheduling in the given order (the hardware's block dispatch, roughly)."""
    free = [0.0] * sms
    for c in costs:
        t = heapq.heappop(free)
        heapq.heappush(free, t + c)
    return max(free)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--programs", type=int, default=4)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--all-ops", action="store_true")
    p.add_argument("--chain-rounds", type=int, default=3)
    p.add_argument("--ab-env", default="TORCHAUG_RESIDENT_ORDER", help="the variable the chain's A/B sets to 0 and 1")
    p.add_argument("--fill-probe", action="store_true",
                   help="identity programs on 1 .. 2 x SMs samples: is a block's load + store bound by its SM or by DRAM")
    p.add_argument("--json")
    a = p.parse_args()
    B, dev = a.batch, "cuda"
    os.environ["TORCHAUG_RESIDENT_ORDER"] = "0"  # the index order, unless a row says otherwise
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    torch.manual_seed(0)
    x = torch.randint(0, 256, (B, 3, 224, 224), dtype=torch.uint8, device=dev)

    def run(img, ops, mags, out_dtype=torch.float32, interpolation="nearest"):
        if out_dtype is None:
            return F.augment(img, ops, mags, interpolation, validate=False)
        return F.augment(img, ops, mags, interpolation, validate=False, mean=MEAN, std=STD, out_dtype=out_dtype)

    def resident_ms(fn, calls=10):
        """The resident kernel's own mean time per call."""
        times = [v for k, v in kernel_us(lambda i: fn(), calls).items() if "augment_resident" in k]
        return times[0] / 1e3 if times else float("nan")

    def ms(img, ops, mags, out_dtype=torch.float32, interpolation="nearest"):
        return time_cuda(lambda i: run(img, ops, mags, out_dtype, interpolation), a.iters)["ms"]

    fill_rows = []
    if a.fill_probe:
        # one sample per SM at most (one wave) up to two waves: if a block's load + normalize + store
        # is bound by its SM, a wave takes the same time however many SMs run; if by DRAM, it grows
        for n in (1, 8, 33, 66, 99, 132, min(2 * sms, B)):
            ops = torch.zeros((n, 2), dtype=torch.int64, device=dev)
            mags = torch.zeros((n, 2), device=dev)
            row = {"samples": n}
            for label, dt in (("u8", None), ("bf16", torch.bfloat16), ("f32", torch.float32)):
                row[label] = resident_ms(lambda: run(x[:n], ops, mags, dt))
            fill_rows.append(row)
            print(f"identity, {n} samples: uint8 out {row['u8'] * 1e3:.1f} us, bf16 {row['bf16'] * 1e3:.1f}, "
                  f"float32 {row['f32'] * 1e3:.1f}", flush=True)
    policy = T.RandAugment(2, 9)
    progs = [policy.make_params(x) for _ in range(a.programs)]
    used = sorted({int(v) for pr in progs for v in pr["ops"].flatten().tolist()})
    # a magnitude per op as the programs have it (the first sample that uses it)
    mag_of = {}
    for pr in progs:
        for o, m in zip(pr["ops"].flatten().tolist(), pr["magnitudes"].flatten().tolist()):
            mag_of.setdefault(int(o), float(m))
    names = {v: k for k, v in F.AUGMENT_OPS.items()}
    ident = F.AUGMENT_OPS["identity"]

    def uniform(op, interpolation="nearest"):
        ops = torch.tensor([[op, ident]], device=dev).expand(B, 2).contiguous()
        mags = torch.tensor([[mag_of.get(op, 0.5), 0.0]], device=dev, dtype=torch.float32).expand(B, 2).contiguous()
        return ms(x, ops, mags, interpolation=interpolation)

    base = uniform(ident)
    cost = {}
    print(f"SMs {sms}, batch {B}; uniform batches [op, identity], fused normalize to float32 (ms):")
    print(f"  identity {base:.4f}")
    for op in used:
        if op == ident:
            continue
        t = uniform(op)
        cost[op] = max(t - base, 0.0)
        print(f"  {names[op]:<13} {t:.4f}  (+{cost[op] * 1e3:.1f} us)")
    cost[ident] = 0.0
    extra = {}
    if a.all_ops:
        for name, op in F.AUGMENT_OPS.items():
            if op not in cost:
                extra[name] = uniform(op) - base
        for name in ("shear_x", "translate_x", "rotate"):
            extra[name + " bilinear"] = uniform(F.AUGMENT_OPS[name], "bilinear") - uniform(ident, "bilinear")
        print("  other ops: " + ", ".join(f"{k} +{v * 1e3:.1f} us" for k, v in extra.items()), flush=True)
    # a sample's own time in a uniform batch: the batch time over its waves (the base's share too)
    waves = -(-B // sms)
    per_base = base / waves

    rows = []
    for k, pr in enumerate(progs):
        ops, mags = pr["ops"], pr["magnitudes"]
        est = torch.tensor([per_base + sum(cost[int(o)] / waves for o in row) for row in ops.tolist()])
        order = torch.argsort(est, descending=True)
        rev = order.flip(0)
        o_d, o_a = order.to(dev), rev.to(dev)
        r = {
            "program": k,
            "drawn": ms(x, ops, mags),
            "longest_first": ms(x[o_d], ops[o_d], mags[o_d]),
            "shortest_first": ms(x[o_a], ops[o_a], mags[o_a]),
            "drawn_u8": ms(x, ops, mags, None),
            "longest_first_u8": ms(x[o_d], ops[o_d], mags[o_d], None),
            "drawn_bf16": ms(x, ops, mags, torch.bfloat16),
            "model_drawn": makespan(est.tolist(), sms),
            "model_longest_first": makespan(est[order].tolist(), sms),
            "model_shortest_first": makespan(est[rev].tolist(), sms),
            "model_bound": max(float(est.sum()) / sms, float(est.max())),
        }
        # other orders, for the stores' overlap with other blocks' compute (DRAM idles while a wave
        # of long programs computes): longest and shortest alternately, and some short ones first
        d = order.tolist()
        alt = [d[(i // 2) if i % 2 == 0 else len(d) - 1 - i // 2] for i in range(len(d))]
        others = {"alternate": alt}
        for frac in (4, 2):
            kk = sms // frac
            others[f"short{kk}_then_longest"] = d[len(d) - kk:][::-1] + d[:len(d) - kk]
        for name, perm in others.items():
            o = torch.tensor(perm, device=dev)
            assert sorted(perm) == list(range(B))
            r[name] = ms(x[o], ops[o], mags[o])
        print(f"program {k}, other orders: " + ", ".join(f"{n} {r[n]:.4f}" for n in others), flush=True)
        os.environ["TORCHAUG_RESIDENT_ORDER"] = "1"
        r["kernel_order"] = ms(x, ops, mags)
        r["kernel_order_u8"] = ms(x, ops, mags, None)
        os.environ["TORCHAUG_RESIDENT_ORDER"] = "longest"
        r["kernel_longest"] = ms(x, ops, mags)
        os.environ["TORCHAUG_RESIDENT_ORDER"] = "0"
        rows.append(r)
        print(f"program {k}: drawn {r['drawn']:.4f} ms, longest-first {r['longest_first']:.4f}, shortest-first "
              f"{r['shortest_first']:.4f}; uint8 out {r['drawn_u8']:.4f} / {r['longest_first_u8']:.4f}; bf16 out "
              f"{r['drawn_bf16']:.4f}; model {r['model_drawn']:.4f} / {r['model_longest_first']:.4f} / "
              f"{r['model_shortest_first']:.4f}, bound {r['model_bound']:.4f}; the kernel's order {r['kernel_order']:.4f} "
              f"(uint8 out {r['kernel_order_u8']:.4f}), longest first alone {r['kernel_longest']:.4f}", flush=True)
    # case 4's chain (bench_augment's first row) with the A/B variable (--ab-env; the kernel's order
    # by default) 0 and 1 in alternate rounds, then its kernels under each (CUPTI: us a call)
    os.environ["TORCHAUG_RESIDENT_ORDER"] = "1"
    chain_rows, kernels = chain_ab(a.ab_env, ["0", "1"], a.chain_rounds, batch=B)
    for mode in ("0", "1"):
        print(f"chain kernels, {a.ab_env}={mode} (us a call): "
              + ", ".join(f"{k} {v:.1f}" for k, v in sorted(kernels[mode].items(), key=lambda kv: -kv[1])), flush=True)
    print(f"chain RRC224+flip+RandAugment(2,9)+normalize, ms a batch: {a.ab_env}=0 "
          + " ".join(f"{v:.4f}" for v in chain_rows["0"]) + "; =1 " + " ".join(f"{v:.4f}" for v in chain_rows["1"]),
          flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(0), "sms": sms, "base_ms": base,
                       "cost_ms": {names[o]: c for o, c in cost.items()}, "other_ops_ms": extra, "programs": rows, "fill_probe_ms": fill_rows,
                       "ab_env": a.ab_env, "chain_ms": chain_rows,
                       "chain_kernels_us": kernels}, f, indent=1)


if __name__ == "__main__":
    main()
