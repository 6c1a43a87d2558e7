"""The repository's tools: the profile readers of scripts/profile/ on small inputs, the host-time split,
the bitwise comparison of two builds' outputs, benchmarks/RESULTS.md being what benchmarks/results.py
builds from benchmarks/results/, the harness's interleaved rounds, and the CPU benchmark's smoke run."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(*args):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_decode_trace_sums_steps_per_thread(tmp_path):
    # two calls of thread 7 after two of warm-up: enter -> locked 2 ms, locked -> exit 8 ms, 5 ms apart
    lines, t = [], 100.0
    for _ in range(4):
        for step, dt in (("enter", 0.0), ("locked", 0.002), ("exit", 0.008)):
            t += dt
            lines.append(f"torchaug decode_jpeg cuda:0 thread 7 t={t:.3f}: {step} (-1)")
        t += 0.005
    lines.insert(3, "an unrelated line")
    log = tmp_path / "trace.log"
    log.write_text("\n".join(lines) + "\n")
    out = _run("scripts/profile/decode_trace.py", str(log))
    assert out.returncode == 0, out.stderr
    assert "thread 7: 2 calls, median 10.00 ms in a call, 5.00 ms between calls" in out.stdout, out.stdout
    assert "enter -> locked" in out.stdout and "median    2.00 ms" in out.stdout


def test_ncu_summary_sums_by_opcode_and_line(tmp_path):
    csv = tmp_path / "ncu.csv"
    csv.write_text('"Address","Source","Instructions Executed","Warp Stall Sampling (All Samples)"\n'
                   '"0x10","FFMA R1, R2, R3, R1","600","12"\n'
                   '"0x20","@P0 LDG.E R4, [R6.64]","300","40"\n'
                   '"0x30","FFMA R5, R2, R3, R5","100","1"\n')
    out = _run("scripts/profile/ncu_summary.py", str(csv))
    assert out.returncode == 0, out.stderr
    assert "1,000 warp instructions executed" in out.stdout
    assert "FFMA" in out.stdout and "70.0%" in out.stdout and "LDG" in out.stdout and "30.0%" in out.stdout


def test_ncu_summary_attributes_sass_rows_to_lines_through_a_listing(tmp_path):
    # nvdisasm -g -c output of two functions; the CSV's three instructions are those of _Z3fooPf
    listing = tmp_path / "k.sass"
    listing.write_text('\t.section\t.text._Z3fooPf,"ax",@progbits\n'
                       ".text._Z3fooPf:\n"
                       "        /*0000*/                   LDC R1, c[0x0][0x28] ;\n"
                       '\t//## File "/build/src/csrc/cuda/resized_crop.cu", line 89\n'
                       "        /*0010*/                   FFMA R2, R3, R4, R2 ;\n"
                       "        /*0020*/               @P0 LDG.E.U8 R5, desc[UR4][R6.64] ;\n"
                       ".text._Z3barv:\n"
                       '\t//## File "/build/src/csrc/kernels/common.h", line 50\n'
                       "        /*0000*/                   IMAD R1, R2, R3, RZ ;\n"
                       "        /*0010*/                   EXIT ;\n")
    csv = tmp_path / "ncu.csv"
    csv.write_text('"Address","Source","Instructions Executed","Warp Stall Sampling (All Samples)"\n'
                   '"0x7f0000","LDC R1, c[0x0][0x28]","100","1"\n'
                   '"0x7f0010","FFMA R2, R3, R4, R2","600","10"\n'
                   '"0x7f0020","@P0   LDG.E.U8 R5, desc[UR4][R6.64]","300","29"\n')
    out = _run("scripts/profile/ncu_summary.py", str(csv), "--listing", str(listing))
    assert out.returncode == 0, out.stderr
    assert "_Z3fooPf" in out.stdout, out.stdout
    assert " 90.0%  97.5%  resized_crop.cu:89" in out.stdout, out.stdout
    assert " 10.0%   2.5%  ?:0" in out.stdout, out.stdout
    other = tmp_path / "other.csv"  # instructions no function of the listing has
    other.write_text('"Address","Source","Instructions Executed"\n"0x10","BAR.SYNC 0x0","5"\n')
    out = _run("scripts/profile/ncu_summary.py", str(other), "--listing", str(listing))
    assert out.returncode == 0 and "no function of" in out.stdout, out.stdout


def test_host_split_times_a_call_and_names_the_chains_ops():
    for chain, op in (("rrc", "torchaug::resized_crop"), ("cifar", "torchaug::_random_resized_crop_boxes")):
        out = _run("scripts/profile/host_split.py", "--chain", chain, "--batch", "2", "--calls", "3")
        assert out.returncode == 0, out.stderr[-2000:]
        assert f"{chain} chain, batch 2 on " in out.stdout and " us a call" in out.stdout and op in out.stdout


def test_ab_outputs_compares_two_builds_bit_for_bit(tmp_path):
    a, b = tmp_path / "a.pt", tmp_path / "b.pt"
    for f in (a, b):
        out = _run("scripts/profile/ab_outputs.py", str(f), "--device", "cpu", "--quick")
        assert out.returncode == 0, out.stderr[-2000:]
    out = _run("scripts/profile/ab_outputs.py", "--compare", str(a), str(b))
    assert out.returncode == 0 and "0 differ bitwise" in out.stdout, out.stdout
    # one value a build changed by a unit in the last place, another case missing: both reported
    import torch

    cases = torch.load(b)
    key = next(k for k, v in cases.items() if v.dtype == torch.float32)
    cases[key].view(-1)[7] = torch.nextafter(cases[key].view(-1)[7], torch.tensor(float("inf")))
    del cases["cifar-chain"]
    torch.save(cases, b)
    out = _run("scripts/profile/ab_outputs.py", "--compare", str(a), str(b))
    assert out.returncode == 1 and f"DIFF {key}" in out.stdout and "DIFF cifar-chain missing" in out.stdout, out.stdout
    assert "2 differ bitwise" in out.stdout, out.stdout


def test_results_md_is_built_from_the_result_files():
    out = _run("benchmarks/results.py", "--check")
    assert out.returncode == 0, "benchmarks/RESULTS.md differs from what `python3 benchmarks/results.py` builds"


def test_cpu_benchmark_times_every_case_against_torchvision(tmp_path):
    import importlib.util
    import json
    if importlib.util.find_spec("torchvision") is None:
        import pytest
        pytest.skip("needs torchvision (the peer)")
    out = _run("benchmarks/bench_cpu.py", "--quick", "--json", str(tmp_path / "cpu.json"))
    assert out.returncode == 0, out.stderr[-2000:]
    rows = json.loads((tmp_path / "cpu.json").read_text())["rows"]
    cases = {r["case"] for r in rows}
    assert len(cases) == 10 and len(rows) == 20
    assert sum(c.startswith("one image a call") for c in cases) == 4
    for case in cases:
        impls = {r["impl"].split()[0] for r in rows if r["case"] == case}
        assert impls == {"torchaug", "torchvision"}, case
    assert all(r["img_per_s"] > 0 for r in rows)


def test_peer_rows_take_their_target_from_the_fastest_basis_peer(tmp_path):
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    try:
        from bench_peers import add_with_peers
        from harness import Results
    finally:
        sys.path.pop(0)
    res = Results("peers")
    peers = [("DALI", {"ms": 10.0}, "", True), ("CV-CUDA batch", {"ms": 1.0}, "one draw a batch", False),
             ("CV-CUDA loop", {"ms": 20.0}, "", True)]
    add_with_peers(res, "case", 256, {"ms": 1.5}, peers, 5, "torchaug")
    ours, *rest = res.rows
    assert ours["impl"] == "torchaug" and [r["impl"] for r in rest] == ["DALI", "CV-CUDA batch", "CV-CUDA loop"]
    # 5x the fastest per-sample peer (DALI: 25,600 img/s), not the batch-wide call
    assert abs(ours["target_img_per_s"] - 5 * 25600) < 1e-6
    assert "met" in res.markdown().splitlines()[6]
    add_with_peers(res, "no peers", 256, {"ms": 1.5}, [], 5, "torchaug")
    assert "target_img_per_s" not in res.rows[-1]


def test_chart_draws_every_row_of_a_result_file(tmp_path):
    import importlib.util
    import json
    if importlib.util.find_spec("matplotlib") is None:
        import pytest
        pytest.skip("needs matplotlib (the GPU machine has it)")
    src = os.path.join(ROOT, "benchmarks", "results", "bench_peers.json")
    out = _run("benchmarks/chart.py", "--json", src, "--png", str(tmp_path / "chart.png"))
    assert out.returncode == 0, out.stderr[-2000:]
    data = (tmp_path / "chart.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    assert len(json.load(open(src))["rows"]) > 0


def test_interleaved_takes_turns_and_keeps_the_median_of_the_timed_rounds():
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    try:
        from harness import interleaved
    finally:
        sys.path.pop(0)
    calls = []
    times = {"a": iter([100.0, 3.0, 1.0, 2.0]), "b": iter([100.0, 10.0, 30.0, 20.0])}

    def measure(name):
        def run():
            calls.append(name)
            return {"ms": next(times[name])}
        return run

    out = interleaved({"a": measure("a"), "b": measure("b")}, rounds=3, warmup_rounds=1)
    assert calls == ["a", "b"] * 4  # a round is every measure in turn; the warm-up round is one too
    assert out == {"a": {"ms": 2.0, "ms_min": 1.0, "ms_max": 3.0}, "b": {"ms": 20.0, "ms_min": 10.0, "ms_max": 30.0}}
