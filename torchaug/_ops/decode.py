"""Fake kernel of the decode family (decode_jpeg). The size of the decoded buffer depends on the
files' contents, so the fake kernel gives it an unbacked size; the metadata tensors are (B,) and
(B, 3) on the CPU, as the real kernel returns them."""
import torch

from ._common import register_fake


@register_fake("torchaug::decode_jpeg")
def _decode_jpeg_fake(data, mode=3, apply_exif_orientation=False, skip_errors=False, device=None, hw_load=None):
    torch._check(mode in (0, 1, 3), lambda: f"torchaug::decode_jpeg: mode must be 0 (unchanged), 1 (gray) or 3 (rgb), got {mode}")
    torch._check(hw_load is None or 0.0 <= hw_load <= 1.0,
                 lambda: f"torchaug::decode_jpeg: hw_load must be in [0, 1] (the hardware decoder's share of the batch), got {hw_load}")
    for i, t in enumerate(data):
        torch._check(t.dtype == torch.uint8 and t.dim() == 1,
                     lambda: f"torchaug::decode_jpeg: data[{i}] must be a 1-D uint8 tensor, got {t.dtype} {tuple(t.shape)}")
    n = torch.library.get_ctx().new_dynamic_size()
    batch = len(data)
    out = torch.empty((n,), dtype=torch.uint8, device=device if device is not None else "cpu")
    return (out, torch.empty((batch,), dtype=torch.int64), torch.empty((batch, 3), dtype=torch.int64),
            torch.empty((batch,), dtype=torch.int32))
