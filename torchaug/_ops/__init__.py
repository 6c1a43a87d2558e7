"""Loads the compiled operators (torch.ops.torchaug.*) and registers their fake kernels and
autograd formulas, one module per family."""
import torch


def _load_library():
    """Imports torchaug._C (its load runs the TORCH_LIBRARY registrations). A library that does not
    load is an ImportError that says which torch it was built for and which one is installed: a
    library built for another torch fails with undefined symbols, the most common cause."""
    try:
        from .. import _C  # noqa: F401
    except (ImportError, OSError) as e:
        try:
            from .._build_info import CUDA_VERSION, TORCH_VERSION
            built = f"torch {TORCH_VERSION}" + (f" with CUDA {CUDA_VERSION}" if CUDA_VERSION else " (CPU only)")
        except ImportError:
            built = "an unknown torch (no torchaug/_build_info.py: the library was not built by setup.py)"
        cuda = f" with CUDA {torch.version.cuda}" if torch.version.cuda else " (CPU only)"
        raise ImportError(f"torchaug: the compiled library torchaug._C does not load: {e}. It was built for {built}; "
                          f"the installed torch is {torch.__version__}{cuda}. Rebuild torchaug against the installed "
                          f"torch (bash scripts/setup.sh, or pip install --no-build-isolation .).") from e


_load_library()

from . import augment, color, convert, decode, detection, filter, geometry  # noqa: F401,E402

ops = torch.ops.torchaug
