"""How much of resized_crop's tile kernel time is load imbalance between samples (case 4's crop:
256 x 500x375 uint8 -> 224x224, RandomResizedCrop's boxes): the kernel on batches whose boxes are all
the whole image or all small, then RandomResizedCrop's boxes in their drawn order, largest crop
first and smallest first (images and boxes permuted on the host beforehand).

    python3 scripts/crop_balance.py [--draws 3] [--iters 40]
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torchaug.functional as F  # noqa: E402
import torchaug.transforms as T  # noqa: E402
from harness import time_cuda  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--draws", type=int, default=3)
    p.add_argument("--iters", type=int, default=40)
    a = p.parse_args()
    B, H, W, dev = 256, 375, 500, "cuda"
    torch.manual_seed(0)
    x = torch.randint(0, 256, (B, 3, H, W), dtype=torch.uint8, device=dev)

    def ms(img, boxes):
        return time_cuda(lambda i: F.resized_crop_boxes(img, boxes, [224, 224], validate=False), a.iters)["ms"]

    def uniform(top, left, h, w):
        return torch.tensor([[top, left, h, w]], device=dev).expand(B, 4).contiguous()

    print(f"uniform boxes (ms): whole image {ms(x, uniform(0, 0, H, W)):.4f}, 224x224 {ms(x, uniform(50, 100, 224, 224)):.4f}, "
          f"100x130 {ms(x, uniform(50, 100, 100, 130)):.4f}", flush=True)
    # the tile height (TORCHAUG_RC_TILE_ROWS): if the time follows the tile count on small crops, a
    # tile's fixed work (tap tables, barriers) is what the kernel spends
    for rows in ("16", "32", "56"):
        os.environ["TORCHAUG_RC_TILE_ROWS"] = rows
        print(f"tiles of {rows} rows: whole image {ms(x, uniform(0, 0, H, W)):.4f}, 100x130 {ms(x, uniform(50, 100, 100, 130)):.4f}, "
              f"RandomResizedCrop boxes {ms(x, T.RandomResizedCrop(224).make_params(x)['boxes']):.4f}", flush=True)
    del os.environ["TORCHAUG_RC_TILE_ROWS"]
    rrc = T.RandomResizedCrop(224)
    for k in range(a.draws):
        boxes = rrc.make_params(x)["boxes"]
        area = (boxes[:, 2] * boxes[:, 3]).float()
        desc = torch.argsort(area, descending=True)
        asc = desc.flip(0)
        xd, bd, xa, ba = x[desc].contiguous(), boxes[desc].contiguous(), x[asc].contiguous(), boxes[asc].contiguous()
        print(f"draw {k}: drawn order {ms(x, boxes):.4f} ms, largest first {ms(xd, bd):.4f}, smallest first {ms(xa, ba):.4f}; "
              f"crop area mean {area.mean() / (H * W):.2f} of the image", flush=True)


if __name__ == "__main__":
    main()
