"""Clips (..., T, C, H, W): every random transform draws once per clip and applies that draw to
each frame of the clip (a clip stays one scene), keeps the leading dimensions, and replays."""
import pytest
import torch

import torchaug.transforms as T

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
CASES = {
    "RandomResizedCrop": lambda: T.RandomResizedCrop(16),
    "RandomHorizontalFlip": lambda: T.RandomHorizontalFlip(),
    "ColorJitter": lambda: T.ColorJitter(0.4, 0.4, 0.4, 0.1),
    "RandAugment": lambda: T.RandAugment(),
    "AugMix": lambda: T.AugMix(),
    "RandomAffine": lambda: T.RandomAffine(20, translate=(0.1, 0.1)),
    "RandomRotation": lambda: T.RandomRotation(30),
    "RandomPerspective": lambda: T.RandomPerspective(p=1.0),
    "RandomCrop": lambda: T.RandomCrop(12, padding=2),
    "ElasticTransform": lambda: T.ElasticTransform(),
    "GaussianBlur": lambda: T.GaussianBlur(5, (0.1, 2.0)),
    "GaussianNoise": lambda: T.Compose([T.ToDtype(torch.float32, scale=True), T.GaussianNoise()]),
    "RandomErasing": lambda: T.RandomErasing(1.0, value="random"),
    "RandomSaltAndPepper": lambda: T.RandomSaltAndPepper(),
    "RandomChannelPermutation": lambda: T.RandomChannelPermutation(),
    "RandomPhotometricDistort": lambda: T.RandomPhotometricDistort(),
    "RandomApply": lambda: T.RandomApply([T.RandomInvert(1.0), T.RandomHorizontalFlip(1.0)]),
    "RandomChoice": lambda: T.RandomChoice([T.RandomInvert(1.0), T.RandomGrayscale(1.0), T.RandomPosterize(2, 1.0)]),
    "RandomOrder": lambda: T.RandomOrder([T.RandomSolarize(100, 1.0), T.RandomAdjustSharpness(3.0, 1.0)]),
    "Compose": lambda: T.Compose([T.RandomResizedCrop(16), T.RandomHorizontalFlip(), T.ToDtype(torch.float32, scale=True),
                                  T.Normalize(MEAN, STD)]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_draw_per_clip_for_all_its_frames(case):
    torch.manual_seed(0)
    clips, frames = 6, 3
    scene = torch.randint(0, 256, (clips, 1, 3, 24, 28), dtype=torch.uint8)
    video = scene.expand(clips, frames, 3, 24, 28).clone()  # every frame of a clip the same image
    t = CASES[case]()
    out, p = t(video, return_params=True)
    assert out.shape[:2] == (clips, frames)
    for b in range(clips):  # one draw per clip: its frames stay equal
        for f in range(1, frames):
            assert torch.equal(out[b, f], out[b, 0]), (case, b, f)
    # clips draw apart: not every clip got the same result (the scenes are the same image)
    same = scene[:1].expand_as(scene).clone().expand(clips, frames, 3, 24, 28).clone()
    out_same = t(same)
    if case not in ("RandomApply", "RandomChoice", "RandomOrder", "RandomHorizontalFlip", "RandomChannelPermutation"):
        assert any(not torch.equal(out_same[b], out_same[0]) for b in range(1, clips)), case
    # replay, and more leading dimensions
    assert torch.equal(t(video, params=p), out)
    more = t(video.view(2, 3, frames, 3, 24, 28))
    assert more.shape[:3] == (2, 3, frames)


def test_clips_refuse_targets_and_lists():
    video = torch.zeros(2, 3, 3, 16, 16, dtype=torch.uint8)
    boxes = [T.BoundingBoxes(torch.tensor([[1.0, 1, 4, 4]]), "XYXY", (16, 16))] * 2
    with pytest.raises(TypeError, match=r"RandomAffine: targets with clips \(\.\.\., T, C, H, W\) are not supported"):
        T.RandomAffine(10)(video, boxes)
    with pytest.raises(TypeError, match=r"RandomZoomOut: takes no clips"):
        T.RandomZoomOut(p=1.0)(video)
    assert T.UniformTemporalSubsample(2)(video).shape == (2, 2, 3, 16, 16)
