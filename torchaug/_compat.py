"""torchvision where its compiled ops do not load: PyPI's torchvision wheels are CUDA builds, and
beside a CPU-only torch (torch's CPU wheel) `import torchvision` fails while registering fake kernels
for ops whose schemas its library never defined. Its Python parts (models, transforms, tv_tensors)
work once the schemas it registers fakes for exist: import_torchvision() defines them where that is
the failure, and is a plain import otherwise. examples/train.py and the tests use it."""
import sys

import torch

_fragment = None  # the torchvision::* schemas defined here, kept for the life of the process


def import_torchvision():
    """torchvision, imported; where its compiled ops do not load (see above) with the two schemas it
    needs defined first. Any other import error is raised as it is."""
    global _fragment
    try:
        import torchvision

        return torchvision
    except RuntimeError as e:
        if "torchvision::" not in str(e):
            raise
    for name in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
        del sys.modules[name]
    if _fragment is None:
        _fragment = torch.library.Library("torchvision", "FRAGMENT")
        _fragment.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        _fragment.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    import torchvision

    return torchvision
