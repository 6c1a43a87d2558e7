"""Builds torchaug._C against the torch already installed (no build isolation, torch is never
reinstalled).

The CUDA kernels are built when the installed torch has CUDA and nvcc is found; otherwise a
CPU-only extension. TORCHAUG_CUDA=1 forces the CUDA build, TORCHAUG_CUDA=0 the CPU-only one.
TORCH_CUDA_ARCH_LIST picks the GPU architectures (e.g. "9.0" for H100/H200); by default torch
builds for the GPUs it sees.
"""
import glob
import os

from setuptools import find_packages, setup

import torch
from torch.utils.cpp_extension import CUDA_HOME, BuildExtension, CppExtension, CUDAExtension

ROOT = os.path.dirname(os.path.abspath(__file__))


def want_cuda() -> bool:
    flag = os.environ.get("TORCHAUG_CUDA", "auto").strip().lower()
    if flag in ("1", "true", "yes", "on"):
        return True
    if flag in ("0", "false", "no", "off"):
        return False
    return torch.version.cuda is not None and CUDA_HOME is not None


def extension():
    rel = lambda pattern: sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, pattern)))
    sources = ["csrc/torchaug.cpp", "csrc/python_module.cpp"] + rel("csrc/host*.cpp") + rel("csrc/cpu/*.cpp")
    extra = {"cxx": ["-O3"]}
    if want_cuda():
        sources += rel("csrc/cuda/*.cu")
        extra["nvcc"] = ["-O3", "--expt-relaxed-constexpr", "-lineinfo"]
        if os.environ.get("TORCHAUG_PTXAS_VERBOSE"):
            extra["nvcc"].append("-Xptxas=-v")
        return CUDAExtension("torchaug._C", sources, extra_compile_args=extra)
    return CppExtension("torchaug._C", sources, extra_compile_args=extra)


setup(
    packages=find_packages(include=["torchaug", "torchaug.*"]),
    package_data={"torchaug": ["assets/images/*.jpg", "assets/images/*.md"]},
    ext_modules=[extension()],
    cmdclass={"build_ext": BuildExtension},
)
