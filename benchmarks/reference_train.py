"""A classification training script in the shape of torchvision's references/classification
train.py, and not written around torchaug: the references' preset class (a v2 Compose held in
self.transforms), an ImageFolder, a RandomSampler (DistributedSampler under torchrun), a DataLoader
with pinned memory, AMP with a GradScaler, SGD, and a loss.item() every step as their metric logger
does. benchmarks/bench_accelerate.py runs it three ways: as it is (the workers decode and augment on
the CPU), with --accelerate, which adds the two lines a user adds after building the loader,

    import torchaug
    data_loader = torchaug.accelerate(data_loader)

and with --synthetic (one batch on the device, the model's own speed). tests/test_accelerate.py
runs it with the two lines under torchrun on the CPU (gloo).

    python benchmarks/reference_train.py --data-path DIR [--model resnet50] [-b 256] [-j 16]
        [--auto-augment ta_wide] [--random-erase 0.1] [--amp] [--accelerate | --synthetic]
        [--warmup 40] [--steps 100] [--device cuda]

The last line printed is a JSON summary: images per second over the timed steps, and the CPU time
that the process and its DataLoader workers used in them (cores busy on average).
"""
import argparse
import json
import os
import time

import torch
import torchvision
from torch import nn
from torchvision.transforms import v2 as T
from torchvision.transforms.functional import InterpolationMode


class ClassificationPresetTrain:
    """The references' training preset (use_v2, PIL backend)."""

    def __init__(self, *, crop_size, mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225),
                 interpolation=InterpolationMode.BILINEAR, hflip_prob=0.5, auto_augment_policy=None,
                 ra_magnitude=9, augmix_severity=3, random_erase_prob=0.0):
        transforms = [T.RandomResizedCrop(crop_size, interpolation=interpolation, antialias=True)]
        if hflip_prob > 0:
            transforms.append(T.RandomHorizontalFlip(hflip_prob))
        if auto_augment_policy == "ra":
            transforms.append(T.RandAugment(interpolation=interpolation, magnitude=ra_magnitude))
        elif auto_augment_policy == "ta_wide":
            transforms.append(T.TrivialAugmentWide(interpolation=interpolation))
        elif auto_augment_policy == "augmix":
            transforms.append(T.AugMix(interpolation=interpolation, severity=augmix_severity))
        elif auto_augment_policy is not None:
            transforms.append(T.AutoAugment(policy=T.AutoAugmentPolicy(auto_augment_policy), interpolation=interpolation))
        transforms += [T.PILToTensor(), T.ToDtype(torch.float, scale=True), T.Normalize(mean=mean, std=std)]
        if random_erase_prob > 0:
            transforms.append(T.RandomErasing(p=random_erase_prob))
        transforms.append(T.ToPureTensor())
        self.transforms = T.Compose(transforms)

    def __call__(self, img):
        return self.transforms(img)


def cpu_seconds() -> float:
    """User + system CPU time of this process (all its threads) and its descendants (the DataLoader
    workers), from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    parent, used = {}, {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parent[int(name)] = int(fields[1])
            used[int(name)] = (int(fields[11]) + int(fields[12])) / tick
    total, todo = 0.0, [os.getpid()]
    while todo:
        pid = todo.pop()
        total += used.get(pid, 0.0)
        todo += [p for p, q in parent.items() if q == pid]
    return total


def init_distributed(args):
    args.distributed = "RANK" in os.environ and "WORLD_SIZE" in os.environ
    if args.distributed:
        args.rank, args.world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        args.gpu = int(os.environ["LOCAL_RANK"])
        if args.device == "cuda":
            torch.cuda.set_device(args.gpu)
        torch.distributed.init_process_group("nccl" if args.device == "cuda" else "gloo")
    else:
        args.rank, args.world_size = 0, 1


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def load_data(traindir, args):
    dataset = torchvision.datasets.ImageFolder(
        traindir,
        ClassificationPresetTrain(crop_size=args.train_crop_size, interpolation=InterpolationMode(args.interpolation),
                                  auto_augment_policy=args.auto_augment, random_erase_prob=args.random_erase,
                                  ra_magnitude=args.ra_magnitude))
    if args.distributed:
        sampler = torch.utils.data.distributed.DistributedSampler(dataset, shuffle=True)
    else:
        sampler = torch.utils.data.RandomSampler(dataset)
    return dataset, sampler


def train_one_epoch(model, criterion, optimizer, data_loader, device, args, scaler, clock):
    model.train()
    for i, (image, target) in enumerate(data_loader):
        if i == args.warmup:
            synchronize(device)
            clock.update(t0=time.perf_counter(), cpu0=cpu_seconds(), step0=i)
        image, target = image.to(device, non_blocking=True), target.to(device, non_blocking=True)
        with torch.autocast(device.type, enabled=scaler is not None):
            output = model(image)
            loss = criterion(output, target)
        optimizer.zero_grad()
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()
        loss.item()  # the metric logger's
        if i + 1 == args.steps:  # measured before the loop ends, while the workers still live
            synchronize(device)
            clock.update(t1=time.perf_counter(), cpu1=cpu_seconds(), steps=i + 1 - clock["step0"])
            break


class Synthetic:
    """One batch on the device, handed out `steps` times (the model's own speed)."""

    def __init__(self, batch, size, classes, steps, device):
        self.x = torch.randn(batch, 3, size, size, device=device)
        self.y = torch.randint(0, classes, (batch,), device=device)
        self.steps = steps

    def __iter__(self):
        return iter([(self.x, self.y)] * self.steps)


def main(args):
    init_distributed(args)
    device = torch.device(args.device)
    torch.backends.cudnn.benchmark = True
    dataset, train_sampler = load_data(args.data_path, args)
    data_loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch_size, sampler=train_sampler,
                                              num_workers=args.workers, pin_memory=True)
    if args.accelerate:
        import torchaug
        data_loader = torchaug.accelerate(data_loader)
    if args.synthetic:
        data_loader = Synthetic(args.batch_size, args.train_crop_size, len(dataset.classes), args.steps, device)
    if len(dataset) < args.batch_size * args.steps * args.world_size:
        raise SystemExit(f"reference_train: {len(dataset)} images make fewer than --steps {args.steps} batches")

    model = torchvision.models.get_model(args.model, weights=None, num_classes=len(dataset.classes)).to(device)
    if args.distributed:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[args.gpu] if device.type == "cuda" else None)
    criterion = nn.CrossEntropyLoss(label_smoothing=args.label_smoothing)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum, weight_decay=args.weight_decay)
    scaler = torch.amp.GradScaler(device.type) if args.amp else None

    if args.distributed:
        train_sampler.set_epoch(0)
    clock = {}
    train_one_epoch(model, criterion, optimizer, data_loader, device, args, scaler, clock)
    wall = clock["t1"] - clock["t0"]
    summary = {"model": args.model, "mode": "synthetic" if args.synthetic else "accelerate" if args.accelerate else "stock",
               "workers": args.workers, "batch_size": args.batch_size, "steps": clock["steps"],
               "img_per_s": clock["steps"] * args.batch_size * args.world_size / wall,
               "cpu_cores": (clock["cpu1"] - clock["cpu0"]) / wall}
    if args.accelerate:  # the benchmark's record of what ran where, and the Prefetcher's host time
        summary.update(plan=data_loader.plan, prefetch_ms_per_batch=data_loader.prefetcher.stats.per_batch_ms())
    if args.rank == 0:
        print(json.dumps(summary), flush=True)
    if args.distributed:
        torch.distributed.destroy_process_group()


def get_args_parser():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-path", required=True, help="an ImageFolder of training images")
    p.add_argument("--device", default="cuda", help="cuda, or cpu (gloo under torchrun)")
    p.add_argument("--model", default="resnet50")
    p.add_argument("-b", "--batch-size", default=256, type=int, help="images per GPU")
    p.add_argument("-j", "--workers", default=16, type=int, help="DataLoader workers")
    p.add_argument("--lr", default=0.5, type=float)
    p.add_argument("--momentum", default=0.9, type=float)
    p.add_argument("--wd", "--weight-decay", default=2e-5, type=float, dest="weight_decay")
    p.add_argument("--label-smoothing", default=0.1, type=float)
    p.add_argument("--auto-augment", default="ta_wide", help="ra, ta_wide, augmix, an AutoAugmentPolicy, or none")
    p.add_argument("--ra-magnitude", default=9, type=int)
    p.add_argument("--random-erase", default=0.1, type=float)
    p.add_argument("--interpolation", default="bilinear")
    p.add_argument("--train-crop-size", default=224, type=int)
    p.add_argument("--amp", action="store_true", help="mixed precision (float16 autocast and a GradScaler)")
    p.add_argument("--accelerate", action="store_true", help="the two lines: torchaug.accelerate(data_loader)")
    p.add_argument("--synthetic", action="store_true", help="one device batch instead of the data")
    p.add_argument("--warmup", default=40, type=int, help="steps before the timed ones")
    p.add_argument("--steps", default=100, type=int, help="steps in all (one epoch at most)")
    return p


if __name__ == "__main__":
    args = get_args_parser().parse_args()
    if args.auto_augment == "none":
        args.auto_augment = None
    main(args)
