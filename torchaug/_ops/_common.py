import torch
from torch._prims_common import suggest_memory_format


def image_memory_format(images: torch.Tensor) -> torch.memory_format:
    """The memory format an op's output keeps (csrc/ops/common.h: image_memory_format)."""
    if images.dim() == 4 and suggest_memory_format(images) == torch.channels_last:
        return torch.channels_last
    return torch.contiguous_format


def empty_image(shape, dtype, device, memory_format) -> torch.Tensor:
    return torch.empty(shape, dtype=dtype, device=device).contiguous(memory_format=memory_format)


def register_fake(name: str, host_args=("offsets", "sizes")):
    """torch.library.register_fake for a torchaug op, whose fake kernel first refuses a meta tensor
    among real ones: the dispatcher sends such a call to the fake kernel (Meta outranks CPU and
    CUDA), which would return an uninitialised tensor on the real tensors' device. host_args: the
    arguments that always live on the CPU (a ragged batch's layout)."""
    op = name.split("::", 1)[1]

    def wrap(fn):
        def checked(*args, **kwargs):
            names = [arg.name for arg in getattr(torch.ops.torchaug, op).default._schema.arguments]
            names = names[:len(args)] + list(kwargs)
            tensors = [(names[i] if i < len(names) else f"argument {i}", a)
                       for i, a in enumerate(list(args) + list(kwargs.values())) if isinstance(a, torch.Tensor)]
            meta = [n for n, a in tensors if a.device.type == "meta"]
            real = [a.device for n, a in tensors if a.device.type != "meta" and n not in host_args]
            if meta and real:
                real = real[0]
                raise RuntimeError(f"torchaug::{op}: {', '.join(meta)} must be on the device of the other tensors "
                                   f"({real}), got a meta tensor")
            return fn(*args, **kwargs)

        checked.__name__ = getattr(fn, "__name__", "fake")
        checked.__doc__ = fn.__doc__
        return torch.library.register_fake(name)(checked)

    return wrap


def draws_rows(op: str, rand, draws: int, batch: int, like):
    """(B, the tensor the outputs are made like) of an op that maps uniform draws to parameters
    (csrc/ops/common.h: resolve_draws): rand's rows, else `batch` samples on like's device."""
    if rand is not None:
        torch._check(rand.dim() == 2 and rand.shape[1] == draws,
                     lambda: f"{op}: rand must be a (B, {draws}) float64 tensor of uniform draws, got {rand.dtype} of shape "
                             f"{tuple(rand.shape)}")
        return rand.shape[0], rand
    torch._check(like is not None, lambda: f"{op}: without rand, like (a tensor on the batch's device) must be given")
    torch._check(batch >= 0, lambda: f"{op}: batch must be the number of samples to draw for (a non-negative integer), got {batch}")
    return batch, like
