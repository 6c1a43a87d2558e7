"""Builds torchaug._C against the torch already installed (pip install --no-build-isolation ., or
the scripts' in-place build); torch is never installed or upgraded by the build. The package's
metadata, modules and data are in pyproject.toml.

The CUDA kernels are built when the installed torch has CUDA and nvcc is found; otherwise a
CPU-only extension. TORCHAUG_CUDA=1 forces the CUDA build, TORCHAUG_CUDA=0 the CPU-only one.
TORCH_CUDA_ARCH_LIST picks the GPU architectures (e.g. "9.0" for H100/H200); by default torch
builds for the GPUs it sees. The torch and CUDA versions the library is built for are written to
torchaug/_build_info.py, which names them when the library does not load.
"""
import glob
import os

from setuptools import setup

try:
    import torch
    from torch.utils.cpp_extension import CUDA_HOME, BuildExtension, CppExtension, CUDAExtension
except ImportError:
    raise SystemExit("torchaug builds against the torch installed in your environment, and none is importable "
                     "here. Install torch first, then: pip install --no-build-isolation . (an isolated build "
                     "environment has no torch)") from None

ROOT = os.path.dirname(os.path.abspath(__file__))


def want_cuda() -> bool:
    flag = os.environ.get("TORCHAUG_CUDA", "auto").strip().lower()
    if flag in ("1", "true", "yes", "on"):
        return True
    if flag in ("0", "false", "no", "off"):
        return False
    return torch.version.cuda is not None and CUDA_HOME is not None


def libjpeg_include():
    """The directory holding jpeglib.h (libjpeg-turbo's development headers), or None. TORCHAUG_LIBJPEG=0
    builds without the CPU JPEG decoder."""
    if os.environ.get("TORCHAUG_LIBJPEG", "auto").strip().lower() in ("0", "false", "no", "off"):
        return None
    for d in filter(None, [os.environ.get("TORCHAUG_LIBJPEG_INCLUDE"), "/usr/include", "/usr/local/include",
                           os.path.join(os.environ.get("CONDA_PREFIX", "/nonexistent"), "include")]):
        if os.path.exists(os.path.join(d, "jpeglib.h")):
            return d
    return None


def nvjpeg_include():
    """The directory holding nvjpeg.h: the CUDA toolkit's, else the one of PyPI's nvidia-nvjpeg wheel."""
    candidates = [os.path.join(CUDA_HOME, "include")] if CUDA_HOME else []
    try:
        import nvidia  # namespace package of the nvidia-* wheels
        for root in nvidia.__path__:
            candidates += glob.glob(os.path.join(root, "*", "include")) + glob.glob(os.path.join(root, "*", "*", "include"))
    except ImportError:
        pass
    for d in candidates:
        if os.path.exists(os.path.join(d, "nvjpeg.h")):
            return d
    return None


def extension():
    rel = lambda pattern: sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, pattern)))
    sources = ["csrc/torchaug.cpp", "csrc/python_module.cpp", "csrc/autograd.cpp"] + rel("csrc/ops/*.cpp") + rel("csrc/cpu/*.cpp")
    # -fopenmp: at::parallel_for is inline OpenMP in torch builds whose ATen threading is OpenMP (the
    # PyPI wheels); without the flag every CPU kernel here silently ran on one thread
    # -fno-trapping-math: the CPU kernels' clamps, selects and float -> int conversions may run for
    # every lane, so that their pixel loops vectorize (values are unchanged: only floating-point
    # exception flags, which nothing here reads, may differ). -ffp-contract=off: no product and sum
    # fused where the shared math keeps them apart (the loops compiled for FMA, TORCHAUG_CPU_CLONES)
    extra = {"cxx": ["-O3", "-fopenmp", "-fno-trapping-math", "-ffp-contract=off"]}
    include_dirs, libraries, library_dirs = [], [], []
    jpeg_inc = libjpeg_include()
    if jpeg_inc:
        extra["cxx"].append("-DTORCHAUG_WITH_LIBJPEG")
        include_dirs.append(jpeg_inc)
        libraries.append("jpeg")
    else:
        print("torchaug setup: jpeglib.h not found: building without the CPU JPEG decoder (apt-get install libjpeg-dev)")
    if want_cuda():
        nvjpeg_inc = nvjpeg_include()
        if nvjpeg_inc is None:
            raise RuntimeError("torchaug setup: nvjpeg.h not found (CUDA toolkit or pip install nvidia-nvjpeg)")
        sources += rel("csrc/cuda/*.cu")
        extra["nvcc"] = ["-O3", "--expt-relaxed-constexpr", "-lineinfo"]
        if os.environ.get("TORCHAUG_PTXAS_VERBOSE"):
            extra["nvcc"].append("-Xptxas=-v")
        include_dirs.append(nvjpeg_inc)
        libraries.append("nvjpeg")
        lib = os.path.join(CUDA_HOME, "lib64") if CUDA_HOME else None
        if lib and os.path.isdir(lib):
            library_dirs.append(lib)
        return CUDAExtension("torchaug._C", sources, extra_compile_args=extra, include_dirs=include_dirs,
                             libraries=libraries, library_dirs=library_dirs, extra_link_args=["-fopenmp"])
    return CppExtension("torchaug._C", sources, extra_compile_args=extra, include_dirs=include_dirs,
                        libraries=libraries, extra_link_args=["-fopenmp"])


def write_build_info(cuda: bool) -> None:
    """torchaug/_build_info.py: the torch (and CUDA) the library is built for."""
    text = ('"""Written by setup.py: the torch the compiled library torchaug._C was built for."""\n'
            f"TORCH_VERSION = {torch.__version__!r}\nCUDA_VERSION = {(torch.version.cuda if cuda else None)!r}\n")
    path = os.path.join(ROOT, "torchaug", "_build_info.py")
    if not os.path.exists(path) or open(path).read() != text:
        with open(path, "w") as f:
            f.write(text)


ext = extension()
write_build_info(any(src.endswith(".cu") for src in ext.sources))
setup(ext_modules=[ext], cmdclass={"build_ext": BuildExtension})
