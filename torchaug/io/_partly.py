"""A batch split between the decoders: DataLoader workers decode a share of its JPEGs on the CPU
(libjpeg-turbo) and hand the rest over as bytes, which the Prefetcher decodes on the GPU (nvJPEG)
and joins to the decoded share in one RaggedImages, in the batch's order.

The point is the GPU's time beside a training step: every file nvJPEG decodes costs a hardware
engine pass plus a colour-conversion kernel that waits for SMs the model holds (benchmarks/RESULTS.md,
case 5, sessions 17 and 24), while a file the CPU decodes costs the GPU only its pixels' copy. With 2
workers, the share they can take is what their cores decode in a step's time; the GPU does the rest.
DALI's hw_decoder_load splits a batch between nvJPEG's engines and its CPU lanes in one process; here
the CPU share is decoded in the workers, beside reading the files.

Measured on an H100 machine (benchmarks/RESULTS.md, case 5, session 40): 2 workers decoded ~500
images a second each there, and with 20% of EfficientNet-b0's batches decoded by them training was
no faster than with nvJPEG decoding everything.
"""
from functools import partial
from typing import Sequence

import torch

from ._decode import DecodeFailure, _mode_code, decode_jpeg_ragged
from ._encoded import EncodedImages, _as_array
from ._ragged import RaggedImages, collate_first_field
from ._shm import shared_bytes

__all__ = ["PartlyDecoded", "collate_partly_decoded"]


class PartlyDecoded:
    """A batch of B JPEG files whose first `cpu_count` were decoded on the CPU (`decoded`, a CHW
    RaggedImages of those that decoded; `failures`, (index, reason) of those that did not) and whose
    other B - cpu_count are still `encoded` (EncodedImages). `mode` and `apply_exif_orientation` are
    the ones the CPU share was decoded with; the rest must be decoded with the same.

    torchaug.io.decode_jpeg_ragged(batch, device=...) decodes the rest on `device` and returns the whole
    batch as one RaggedImages (sample i is file i); the Prefetcher does that for such batches.
    DataLoader's pin_memory=True pins both parts."""

    def __init__(self, decoded: RaggedImages, encoded: EncodedImages, cpu_count: int,
                 failures: Sequence = (), mode: str = "rgb", apply_exif_orientation: bool = False):
        if not isinstance(decoded, RaggedImages) or not isinstance(encoded, EncodedImages):
            raise TypeError(f"torchaug.io.PartlyDecoded: decoded must be a RaggedImages and encoded an EncodedImages, "
                            f"got {type(decoded).__name__} and {type(encoded).__name__}")
        if decoded.channels_last:
            raise ValueError("torchaug.io.PartlyDecoded: decoded must be CHW (as torchaug.io.decode_jpeg_ragged writes), got HWC")
        self.decoded = decoded
        self.encoded = encoded
        self.cpu_count = int(cpu_count)
        self.failures = [DecodeFailure((int(i), str(r))) for i, r in failures]
        if len(decoded) + len(self.failures) != self.cpu_count:
            raise ValueError(f"torchaug.io.PartlyDecoded: {len(decoded)} decoded and {len(self.failures)} failed files "
                             f"do not add up to cpu_count={self.cpu_count}")
        self.mode = mode
        self.apply_exif_orientation = bool(apply_exif_orientation)

    def __len__(self) -> int:
        return self.cpu_count + len(self.encoded)

    def pin_memory(self, device=None) -> "PartlyDecoded":
        return PartlyDecoded(self.decoded.pin_memory(), self.encoded.pin_memory(), self.cpu_count, self.failures,
                             self.mode, self.apply_exif_orientation)

    def __repr__(self) -> str:
        return f"PartlyDecoded({self.cpu_count} files decoded on the CPU, {len(self.encoded)} encoded)"


def _cpu_share_count(cpu_share, n: int) -> int:
    if isinstance(cpu_share, bool) or not isinstance(cpu_share, (int, float)) or not 0 <= cpu_share <= 1:
        raise ValueError(f"torchaug.io.collate_partly_decoded: cpu_share must be a number in [0, 1], got {cpu_share!r}")
    return int(round(cpu_share * n))


def partly_decode(files: Sequence, cpu_share: float = 0.5, mode: str = "rgb",
                  apply_exif_orientation: bool = False) -> PartlyDecoded:
    """Decodes the first round(cpu_share * len(files)) files on the CPU into shared memory (in a
    DataLoader worker: one of the worker's reused segments, so handing the batch over copies nothing)
    and packs the rest as an EncodedImages. Files that do not decode are recorded, not raised: the
    Prefetcher's on_decode_error (or decode_jpeg_ragged's on_error) decides, as for the GPU's share."""
    code = _mode_code(mode)
    if code == 0:
        raise ValueError("torchaug.io.collate_partly_decoded: mode must be 'rgb' or 'gray' (one channel count for the "
                         f"whole batch, a RaggedImages), got {mode!r}")
    k = _cpu_share_count(cpu_share, len(files))
    # tensors and bytes as decode_jpeg takes them; anything else (ImageFolderBytes' arrays) through
    # EncodedImages' own check of a file
    cpu_files = [f if isinstance(f, (torch.Tensor, bytes, bytearray, memoryview)) else torch.from_numpy(_as_array(f, i))
                 for i, f in enumerate(files[:k])]
    data, sizes, failures = torch.empty(0, dtype=torch.uint8), [], []
    if k:  # the decoder's buffer holds the kept images back to back (failed files get no slot)
        ragged, failures = decode_jpeg_ragged(cpu_files, mode=mode, apply_exif_orientation=apply_exif_orientation, on_error="skip")
        data, sizes = ragged.data, ragged.sizes
    out, lease = shared_bytes(data.numel())
    out.copy_(data)
    decoded = RaggedImages(out, sizes, 1 if code == 1 else 3, channels_last=False)
    decoded._lease = lease
    return PartlyDecoded(decoded, EncodedImages.from_bytes(files[k:]), k, failures, mode, apply_exif_orientation)


def collate_partly_decoded(samples: Sequence, cpu_share: float = 0.5, mode: str = "rgb",
                           apply_exif_orientation: bool = False):
    """DataLoader collate_fn for (file bytes, label, ...) samples (ImageFolderBytes, TarShards) or bare
    file bytes: the files go into one PartlyDecoded (the first round(cpu_share * B) decoded in the
    worker, the rest left to the GPU), the other fields through torch's default_collate. Set the
    share with functools.partial(collate_partly_decoded, cpu_share=0.4) (picklable, for spawned
    workers too)."""
    return collate_first_field(samples, partial(partly_decode, cpu_share=cpu_share, mode=mode,
                                                apply_exif_orientation=apply_exif_orientation), "collate_partly_decoded")


def join_decoded(batch: PartlyDecoded, device, mode, apply_exif_orientation: bool, on_error: str, hw_load=None):
    """decode_jpeg_ragged for a PartlyDecoded batch: the encoded share decoded on `device`, the
    decoded share moved there (a non_blocking copy from pinned memory), both in one buffer in the
    batch's order. Returns (RaggedImages, failures) with failures of both shares, by batch index."""
    if _mode_code(mode) != _mode_code(batch.mode) or bool(apply_exif_orientation) != batch.apply_exif_orientation:
        raise ValueError(f"torchaug.io.decode_jpeg_ragged: a PartlyDecoded batch's CPU share was decoded with mode={batch.mode!r}, "
                         f"apply_exif_orientation={batch.apply_exif_orientation}; the rest must be decoded with the same, "
                         f"got mode={mode!r}, apply_exif_orientation={bool(apply_exif_orientation)}")
    rest, rest_failures = decode_jpeg_ragged(batch.encoded, device=device, mode=mode, apply_exif_orientation=apply_exif_orientation,
                                             on_error="skip", hw_load=hw_load)
    failures = batch.failures + [DecodeFailure((i + batch.cpu_count, r)) for i, r in rest_failures]
    if failures and on_error == "raise":
        i, reason = failures[0]
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        raise RuntimeError(f"torchaug.io.decode_jpeg_ragged: sample {i}: {reason}{more} (pass on_error='skip' to skip bad samples)")
    decoded = batch.decoded
    n = decoded.data.numel()
    data = torch.empty(n + rest.data.numel(), dtype=torch.uint8, device=rest.device)
    if n:
        data[:n].copy_(decoded.data, non_blocking=True)
    data[n:].copy_(rest.data)
    return RaggedImages(data, decoded.sizes + rest.sizes, decoded.channels, channels_last=False), failures
