"""The resident augment kernel's own time (CUPTI, dependent launches off, samples in index order) for
uniform batches [op, identity] of 256 x 3 x 224 x 224 uint8 images with the fused normalize to
float32: one row per RandAugment op (nearest), and three geometric ops bilinear. Less noisy than
resident_balance.py's wall-clock rows for A/B of the kernel's code (run it on each library, alternating).

    python3 scripts/resident_op_costs.py [--calls 20] [--json out.json]
"""
import argparse
import json
import os
import sys

os.environ["TORCHAUG_DEPENDENT_LAUNCH"] = "0"
os.environ["TORCHAUG_RESIDENT_ORDER"] = "0"
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402

import torchaug.functional as F  # noqa: E402
from harness import kernel_us  # noqa: E402

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
MAGNITUDES = {"brightness": 0.3, "contrast": 0.3, "saturation": 0.3, "sharpness": 0.3, "posterize": 5.0, "solarize": 128.0,
              "shear_x": 0.3, "shear_y": 0.3, "translate_x": 30.0, "translate_y": 30.0, "rotate": 20.0}
OPS = ["identity", "brightness", "saturation", "contrast", "sharpness", "posterize", "solarize", "autocontrast",
       "equalize", "shear_x", "shear_y", "translate_x", "translate_y", "rotate"]
BILINEAR = ["identity", "shear_x", "rotate"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--calls", type=int, default=20)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--json")
    a = p.parse_args()
    torch.manual_seed(0)
    x = torch.randint(0, 256, (a.batch, 3, 224, 224), dtype=torch.uint8, device="cuda")
    ident = F.AUGMENT_OPS["identity"]
    us = {}
    for interpolation, names in (("nearest", OPS), ("bilinear", BILINEAR)):
        for name in names:
            ops = torch.tensor([[F.AUGMENT_OPS[name], ident]], device="cuda").expand(a.batch, 2).contiguous()
            mags = torch.tensor([[MAGNITUDES.get(name, 0.0), 0.0]], device="cuda").expand(a.batch, 2).contiguous()

            def run(i, ops=ops, mags=mags, interpolation=interpolation):
                return F.augment(x, ops, mags, interpolation, validate=False, mean=MEAN, std=STD, out_dtype=torch.float32)

            times = [v for k, v in kernel_us(run, a.calls).items() if "augment_resident" in k]
            us[name + ("" if interpolation == "nearest" else " bilinear")] = times[0]
    print(f"{torch.cuda.get_device_name(0)}: resident kernel, us a call: " + " ".join(f"{k}={v:.1f}" for k, v in us.items()))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(0), "batch": a.batch, "kernel_us": us}, f, indent=1)


if __name__ == "__main__":
    main()
