"""JPEG decoding of whole batches: torch.ops.torchaug.decode_jpeg, on the CPU with
libjpeg-turbo or on CUDA with nvJPEG (the hardware JPEG engines of A100 / H100 where the file
allows), into one buffer on the device."""
from typing import List, Sequence, Tuple, Union

import torch

from .. import _cuda_queues
from ._ragged import RaggedImages

__all__ = ["decode_jpeg", "decode_jpeg_ragged", "read_file", "DecodeFailure"]

# Messages of the per-sample status codes (csrc/ops/jpeg_header.h: jpeg::Status).
_STATUS = {
    1: "the data is empty (0 bytes)",
    2: "not a JPEG file (it does not start with the SOI marker FF D8)",
    3: "truncated JPEG (the data ends before the image's EOI marker, or is too short for the size its header declares)",
    4: "corrupt JPEG header (a malformed marker segment)",
    5: "unsupported JPEG (12-bit, lossless, 2-component or height given by a DNL marker)",
    6: "image too large (more than 2**28 pixels)",
    7: "corrupt JPEG data",
}

_MODES = {"unchanged": 0, "gray": 1, "rgb": 3}


class DecodeFailure(Tuple[int, str]):
    """(index, reason) of a sample that did not decode (on_error="skip")."""


def _mode_code(mode) -> int:
    name = getattr(mode, "name", mode)  # torchvision.io.ImageReadMode
    if isinstance(name, str) and name.lower() in _MODES:
        return _MODES[name.lower()]
    if isinstance(mode, int) and not isinstance(mode, bool) and mode in _MODES.values():
        return mode
    raise ValueError(f"torchaug.io.decode_jpeg: mode must be 'unchanged', 'gray' or 'rgb' (or torchvision's "
                     f"ImageReadMode.UNCHANGED / GRAY / RGB), got {mode!r}")


def _as_byte_tensors(data) -> List[torch.Tensor]:
    from ._encoded import EncodedImages

    if isinstance(data, EncodedImages):
        return data.tensors()
    items = [data] if isinstance(data, (torch.Tensor, bytes, bytearray, memoryview)) else list(data)
    out = []
    for i, d in enumerate(items):
        if isinstance(d, (bytes, bytearray, memoryview)):
            d = torch.frombuffer(bytearray(d), dtype=torch.uint8) if len(d) else torch.empty(0, dtype=torch.uint8)
        if not isinstance(d, torch.Tensor):
            raise TypeError(f"torchaug.io.decode_jpeg: input {i} must be a uint8 tensor or bytes, got {type(d).__name__}")
        out.append(d)
    return out


def _check_on_error(on_error) -> None:
    if on_error not in ("raise", "skip"):
        raise ValueError(f"torchaug.io.decode_jpeg: on_error must be 'raise' or 'skip', got {on_error!r}")


def _decode(data, device, mode, apply_exif_orientation, on_error, hw_load=None):
    if hw_load is not None and (isinstance(hw_load, bool) or not isinstance(hw_load, (int, float)) or not 0 <= hw_load <= 1):
        raise ValueError(f"torchaug.io.decode_jpeg: hw_load must be None or a number in [0, 1], got {hw_load!r}")
    _check_on_error(on_error)
    tensors = _as_byte_tensors(data)
    device = torch.device(device) if device is not None else torch.device("cpu")
    if device.type == "cuda":
        _cuda_queues.check("torchaug.io.decode_jpeg")
        if device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
    flat, offsets, sizes, status = torch.ops.torchaug.decode_jpeg(
        tensors, _mode_code(mode), bool(apply_exif_orientation), on_error == "skip", device,
        None if hw_load is None else float(hw_load))
    failures = [DecodeFailure((i, _STATUS.get(int(s), f"status {int(s)}"))) for i, s in enumerate(status.tolist()) if s != 0]
    return flat, offsets.tolist(), sizes.tolist(), failures


def decode_jpeg(
    input: Union[torch.Tensor, Sequence[torch.Tensor]],
    *,
    device: Union[str, torch.device] = "cpu",
    mode="rgb",
    apply_exif_orientation: bool = False,
    on_error: str = "raise",
    hw_load=None,
):
    """Decodes JPEG files: `input` is one 1-D uint8 tensor of a file's bytes (or bytes), a list of
    them, or an EncodedImages batch. Returns a (C, H, W) uint8 tensor for one file, a list of them
    for a list, on `device` (torchvision.io.decode_jpeg's signature and results; on the CPU the
    pixels equal PIL's / torchvision's libjpeg-turbo output). The list's tensors are views into one
    buffer, decoded in one batched call (nvJPEG's hardware decoder on CUDA).

    mode: "rgb" (default), "gray" or "unchanged" (1 channel for grayscale files, else 3), or a
    torchvision ImageReadMode. apply_exif_orientation: rotate / mirror as the file's EXIF
    orientation says. on_error="raise": a bad file raises a RuntimeError naming its index and what
    is wrong; "skip": returns (images, failures), images holding only the files that decoded and
    failures a list of (index, reason).

    hw_load (CUDA only): the share, in [0, 1], of the files nvJPEG's hardware engines can take that
    they get; the rest go at the same time through nvJPEG's hybrid decoder (Huffman decoding on CPU
    threads, TORCHAUG_NVJPEG_THREADS of them, the rest on the GPU), as DALI's hw_decoder_load.
    None: 1.0 (on H100s every smaller share measured slower). Where the GPU has no JPEG engines every
    file takes the hybrid decoder.
    The two decoders' pixels differ by a level or so, so a file's pixels can depend on the share.
    Calls from different threads decode at the same time on CUDA, each on a decoder of its own (up
    to TORCHAUG_NVJPEG_DECODERS per device, default 2; with 1 they take turns, each doing its host
    work while another's batch decodes): the Prefetcher's `threads` use this."""
    single = isinstance(input, (torch.Tensor, bytes, bytearray, memoryview))
    flat, offsets, sizes, failures = _decode(input, device, mode, apply_exif_orientation, on_error, hw_load)
    images = [flat[o:o + c * h * w].view(c, h, w) for o, (c, h, w) in zip(offsets, sizes) if c > 0]
    if single and on_error == "raise":
        return images[0]
    return (images, failures) if on_error == "skip" else images


def decode_jpeg_ragged(
    input, *, device="cpu", mode="rgb", apply_exif_orientation: bool = False, on_error: str = "raise", hw_load=None
):
    """decode_jpeg returning the batch as one RaggedImages (the flat buffer and the sizes) instead of
    a list: what RandomResizedCrop / Resize turn into a dense batch in one launch. Every image must
    have the same channel count (mode "rgb" or "gray"). With on_error="skip": (RaggedImages,
    failures)."""
    flat, _offsets, sizes, failures = _decode(input, device, mode, apply_exif_orientation, on_error, hw_load)
    kept = [(c, h, w) for c, h, w in sizes if c > 0]
    channels = {c for c, _, _ in kept}
    if len(channels) > 1:
        raise ValueError("torchaug.io.decode_jpeg_ragged: mode='unchanged' gave a batch mixing 1- and 3-channel "
                         "images; pass mode='rgb' or mode='gray'")
    ragged = RaggedImages(flat, [(h, w) for _, h, w in kept], channels.pop() if channels else 3, channels_last=False)
    return (ragged, failures) if on_error == "skip" else ragged


def read_file(path) -> torch.Tensor:
    """The bytes of a file as a 1-D uint8 tensor (torchvision.io.read_file)."""
    with open(path, "rb") as f:
        data = f.read()
    return torch.frombuffer(bytearray(data), dtype=torch.uint8) if data else torch.empty(0, dtype=torch.uint8)
