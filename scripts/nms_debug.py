"""Where CPU and CUDA batched_nms disagree (many small categories): the differing boxes, their
categories and their IoUs with the boxes of their category."""
import sys

import torch

sys.path.insert(0, "tests")
from test_detection import random_boxes  # noqa: E402
from torchaug import ops as tops  # noqa: E402

gen = torch.Generator().manual_seed(7)
boxes = random_boxes(10000, gen, size=1000.0, max_wh=80.0)
scores = torch.rand(10000, generator=gen)
torch.randint(0, 20, (10000,), generator=gen)
many = torch.randint(0, 700, (10000,), generator=gen)
for thr in (0.3, 0.5):
    a = tops.batched_nms(boxes, scores, many, thr)
    b = tops.batched_nms(boxes.cuda(), scores.cuda(), many.cuda(), thr).cpu()
    sa, sb = set(a.tolist()), set(b.tolist())
    print(f"thr {thr}: cpu {len(a)} cuda {len(b)} equal {torch.equal(a, b)} only cpu {sorted(sa - sb)[:10]} only cuda {sorted(sb - sa)[:10]}")
    if sa == sb and not torch.equal(a, b):
        d = (a != b).nonzero()[:5, 0]
        print("  order differs at", d.tolist(), "scores", scores[a[d]].tolist(), scores[b[d]].tolist())
    for i in sorted(sa ^ sb)[:3]:
        same = (many == many[i]).nonzero()[:, 0]
        from torchaug.ops import box_iou
        iou = box_iou(boxes[i:i + 1].double(), boxes[same].double())[0]
        print("  box", i, "class", int(many[i]), "score", float(scores[i]), "ious", [(int(j), round(float(v), 6), float(scores[j])) for j, v in zip(same, iou) if v > 0])
a = tops.nms(boxes, scores, 0.3)
b = tops.nms(boxes.cuda(), scores.cuda(), 0.3).cpu()
print("plain nms 0.3 equal", torch.equal(a, b))
