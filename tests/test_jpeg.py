"""JPEG artefacts (functional.jpeg, transforms.JPEG): against libjpeg-turbo (PIL's encoder and
decoder with their defaults, which torchvision's encode_jpeg / decode_jpeg also use) quality by
quality: the same error against the original (PSNR within 0.2 dB) and pixels close to its
(PSNR > 40 dB between the two); a quality per sample; CPU and CUDA alike."""
import io
import os

import numpy as np
import pytest
import torch
from conftest import ASSETS

import torchaug.functional as F
import torchaug.transforms as T


def _photos(size=(203, 151)):
    from PIL import Image
    return [np.asarray(Image.open(p).convert("RGB").resize(size)) for p in ASSETS[:2]]


def _libjpeg(img: np.ndarray, quality: int) -> np.ndarray:
    from PIL import Image
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="JPEG", quality=quality)
    out = Image.open(buf)
    return np.asarray(out.convert("RGB") if img.ndim == 3 else out)


def _psnr(a, b) -> float:
    mse = ((np.asarray(a, np.float64) - np.asarray(b, np.float64)) ** 2).mean()
    return float(10 * np.log10(255 ** 2 / max(mse, 1e-12)))


@pytest.mark.parametrize("quality", [1, 5, 25, 50, 75, 95, 100])
@pytest.mark.parametrize("channels", [1, 3])
def test_artefacts_are_libjpegs(quality, channels, device):
    for img in _photos():
        if channels == 1:
            img = np.ascontiguousarray(img[..., 1])
        x = torch.from_numpy(img.copy())
        x = (x.permute(2, 0, 1) if channels == 3 else x[None]).contiguous().to(device)
        ours = F.jpeg(x, quality).cpu()
        ours = ours.permute(1, 2, 0).numpy() if channels == 3 else ours[0].numpy()
        ref = _libjpeg(img, quality)
        if quality < 100:
            assert abs(_psnr(img, ours) - _psnr(img, ref)) < 0.2, (quality, _psnr(img, ours), _psnr(img, ref))
        else:  # every step 1: libjpeg's fixed-point rounding is most of its error, float DCTs round less
            assert _psnr(img, ours) > _psnr(img, ref) - 0.2, (quality, _psnr(img, ours), _psnr(img, ref))
        assert _psnr(ref, ours) > 40, (quality, _psnr(ref, ours))


def test_a_quality_per_sample_and_the_transform(device):
    x = torch.stack([torch.from_numpy(p.copy()).permute(2, 0, 1) for p in _photos((64, 48))]).to(device)
    q = torch.tensor([10, 90], device=device)
    both = F.jpeg(x, q)
    assert all(torch.equal(both[i], F.jpeg(x[i], int(q[i]))) for i in range(2))
    cl = F.jpeg(x.contiguous(memory_format=torch.channels_last), q)
    assert cl.is_contiguous(memory_format=torch.channels_last) and torch.equal(cl, both)
    t = T.JPEG((5, 50), generator=torch.Generator().manual_seed(0))
    big = x.repeat(20, 1, 1, 1)
    out, p = t(big, return_params=True)
    assert p["quality"].min() >= 5 and p["quality"].max() <= 50 and len(set(p["quality"].tolist())) > 5
    assert torch.equal(t(big, params=p), out) and torch.equal(out[3], F.jpeg(big[3], int(p["quality"][3])))
    assert T.JPEG(70)(x[0]).shape == x[0].shape


def test_errors():
    with pytest.raises(TypeError, match="jpeg: images must be uint8"):
        F.jpeg(torch.zeros(3, 8, 8), 50)
    with pytest.raises(ValueError, match="jpeg: images must have 1 or 3 channels, got 2"):
        F.jpeg(torch.zeros(2, 8, 8, dtype=torch.uint8), 50)
    with pytest.raises(ValueError, match=r"jpeg: quality must be in \[1, 100\]"):
        F.jpeg(torch.zeros(3, 8, 8, dtype=torch.uint8), 0)
    with pytest.raises(ValueError, match=r"JPEG: quality must be an int or \(min, max\) ints with 1 <= min <= max <= 100"):
        T.JPEG((50, 101))
