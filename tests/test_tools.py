"""The repository's tools: the profile readers of scripts/profile/ on small inputs,
benchmarks/RESULTS.md being what benchmarks/results.py builds from benchmarks/results/, and the CPU
benchmark's smoke run."""
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
    assert len(cases) == 6 and len(rows) == 12
    for case in cases:
        impls = {r["impl"].split()[0] for r in rows if r["case"] == case}
        assert impls == {"torchaug", "torchvision"}, case
    assert all(r["img_per_s"] > 0 for r in rows)
