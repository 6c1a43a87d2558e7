"""The base of every torchaug transform: parameters are drawn in make_params (torch RNG, on the
images' device, optionally from a torch.Generator) and applied in transform; forward does only
those two steps and keeps nothing on self, so that the same module can run on several streams."""
import math
import numbers
import operator
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
from torch import nn

from ..functional._utils import all_chw_tensors, generator_device, sizes_tensor
from ..io._ragged import RaggedImages
from . import _draws as D
from . import _targets


class BatchInfo:
    """What make_params needs to know of its input: batch size, device, and image sizes (uniform,
    or per sample for a list of images of different sizes or a RaggedImages batch)."""

    def __init__(self, images):
        if isinstance(images, torch.Tensor) and images.dim() >= 3:  # the common case first
            # (C, H, W), (B, C, H, W), or clips (..., T, C, H, W): one sample per clip
            self.batch = 1 if images.dim() == 3 else images.shape[0] if images.dim() == 4 else int(math.prod(images.shape[:-4]))
            self.device = images.device
            self.like = images
            self.channels = images.shape[-3]
            self.uniform_size = (images.shape[-2], images.shape[-1])
            self.ragged = False
        elif isinstance(images, BatchInfo):  # a copy (what make_params saw, for the targets)
            self.__dict__.update(images.__dict__)
        elif isinstance(images, RaggedImages):  # the sizes without a tensor per image
            if len(images) == 0:
                raise ValueError("torchaug: empty RaggedImages batch")
            self.batch = len(images)
            self.device = images.device
            self.like = images.data  # a tensor on the batch's device (ops that make parameters take one)
            self.channels = images.channels
            self._host_sizes = images.sizes
            self._host_sizes_t = images.host_layout()[1]  # the tensor its crop passes to the op too
            self.uniform_size = None
            self.ragged = True
        elif isinstance(images, (list, tuple)):
            if len(images) == 0:
                raise ValueError("torchaug: empty list of images")
            self.batch = len(images)
            self.device = images[0].device
            self.like = images[0]
            self.channels = images[0].shape[0]
            self._images = tuple(images)  # host_sizes reads their sizes when asked (a flip's draw does not)
            self._host_sizes = None
            self._host_sizes_t = None
            self.uniform_size: Optional[Tuple[int, int]] = None
            self.ragged = True
        else:
            raise TypeError(
                "torchaug: images must be a (C, H, W) or (B, C, H, W) tensor or a list of (C, H, W) tensors, "
                f"got {type(images).__name__}{' of shape ' + str(tuple(images.shape)) if isinstance(images, torch.Tensor) else ''}"
            )

    @property
    def host_sizes(self) -> List[Tuple[int, int]]:
        """A ragged batch's (H, W) per sample, on the host."""
        if self._host_sizes is None:
            shapes = map(operator.attrgetter("shape"), self._images)
            self._host_sizes = list(map(operator.itemgetter(-2, -1), shapes))
        return self._host_sizes

    def sizes(self) -> torch.Tensor:
        """(B, 2) int64 [H, W] on the images' device."""
        if self.ragged:
            host = self._host_sizes_t
            if host is None:
                host = sizes_tensor(self.host_sizes)
            return host.to(self.device, non_blocking=True)
        return torch.tensor(self.uniform_size, dtype=torch.int64, device=self.device).expand(self.batch, 2)


class Transform(nn.Module):
    """make_params(images) -> dict of per-sample tensors; transform(images, params) -> output.

    forward(images, *targets, params=None, return_params=False): draws parameters unless given
    (replay) and returns the output, and the parameters when asked. Targets (bounding boxes, masks,
    keypoints: torchvision's tv_tensors or torchaug.transforms' wrappers, alone or in lists and
    dicts per sample; see _targets.py) follow the geometric transforms and pass through the
    others; with targets the output is (images, *targets)."""

    # whether make_params / transform take a RaggedImages batch as it is; the others get its list
    # of (C, H_i, W_i) views (RaggedImages.images()), as if the caller had passed the list
    _TAKES_RAGGED = False
    # whether the transform takes a list of (C, H_i, W_i) images itself; the others run on each
    # group of images of one size as a batch (per_size), and give back a list
    _TAKES_LIST = False
    # whether make_params(images, *targets) reads the targets (RandomIoUCrop reads the boxes)
    _NEEDS_TARGETS = False
    # whether the transform takes clips (..., T, C, H, W) itself; the others draw one set of
    # parameters per clip and apply it to the clip's frames (per_clip)
    _TAKES_CLIPS = False

    def __init__(self, generator: Optional[torch.Generator] = None):
        super().__init__()
        self.generator = generator

    def make_params(self, images) -> Dict[str, Any]:
        return {}

    def _params_for(self, images, targets: Tuple[Any, ...]) -> Dict[str, Any]:
        """make_params, with the targets for the transforms that read them (_NEEDS_TARGETS)."""
        return self.make_params(images, *targets) if self._NEEDS_TARGETS else self.make_params(images)

    def _per_frame(self, params: Dict[str, Any], clips: int, frames: int) -> Dict[str, Any]:
        """The parameters drawn for `clips` clips, for each of their frames (per_clip)."""
        return _per_frame(params, clips, frames)

    def extra_repr(self) -> str:
        # the constructor's settings that are plain values (what repr(transform) and plans show)
        scalar = (bool, int, float, str, torch.dtype, type(None))

        def shown(v) -> bool:
            if isinstance(v, (list, tuple)):
                return len(v) <= 8 and all(isinstance(e, scalar) for e in v)
            return isinstance(v, scalar) or isinstance(getattr(v, "name", None), str)  # enums

        return ", ".join(f"{k}={v!r}" if isinstance(v, (list, tuple) + scalar) else f"{k}={v.name}"
                         for k, v in vars(self).items() if not k.startswith("_") and k not in ("training", "generator") and shown(v))

    def transform(self, images, params: Dict[str, Any]):
        raise NotImplementedError

    def forward(self, images, *targets, params: Optional[Dict[str, Any]] = None, return_params: bool = False):
        images = as_input(self, images)
        if not self._TAKES_CLIPS and isinstance(images, torch.Tensor) and images.dim() >= 5:
            return per_clip(self, images, targets, params, return_params)
        if not self._TAKES_LIST and is_image_list(images):
            out, targets, params = per_size(self, images, targets, params)
            result = (out,) + tuple(targets) if targets else out
            return (result, params) if return_params else result
        if params is None:
            params = self._params_for(images, targets)
        out = self.transform(images, params)
        if targets:
            out = (out,) + tuple(self.transform_targets(images, targets, params))
        return (out, params) if return_params else out

    # -- targets (bounding boxes, masks, keypoints) --------------------------------------------
    def transform_targets(self, images, targets: Tuple[Any, ...], params: Dict[str, Any]) -> Tuple[Any, ...]:
        """The targets of `images` moved as transform(images, params) moved the pixels."""
        return _targets.follow(self, images, targets, params, BatchInfo(images), type(self).__name__)

    def _target_steps(self, images, info: "BatchInfo", params: Dict[str, Any]) -> Optional[List["_targets.Step"]]:
        """What the transform did to each sample's plane (geometric transforms); None: nothing."""
        return None

    def _transform_masks(self, masks, idx: torch.Tensor, params: Dict[str, Any], info: "BatchInfo"):
        """masks (n, 1, H, W) (or a list of (1, H_i, W_i)) of samples idx (n,), resampled with
        nearest interpolation as the images of those samples were."""
        raise NotImplementedError

    # -- TorchScript ---------------------------------------------------------------------------
    def _scriptable(self) -> Optional[nn.Module]:
        """The TorchScript form of this transform (torchaug.transforms._script), None if it has none."""
        return None

    def __prepare_scriptable__(self):
        # torch.jit.script(transform) scripts the module returned here (as torchvision does)
        scripted = self._scriptable()
        if scripted is None:
            raise RuntimeError(
                f"torchaug.transforms.{type(self).__name__} has no TorchScript form; torch.jit.script supports "
                f"{', '.join(scriptable_transforms())} (use torch.compile or torch.export for the others)"
            )
        return scripted

    # -- random numbers on the images' device ------------------------------------------------
    def _rand(self, shape, device, dtype=torch.float32) -> torch.Tensor:
        """Uniform [0, 1) numbers on `device` (from the generator's device when it is another): the
        same draw as the TorchScript forms make (_draws.rand_on)."""
        return D.rand_on(list(shape), torch.device(device), *self._gen(), dtype)

    def _bernoulli(self, shape, p: float, device) -> torch.Tensor:
        """Bool coins with P(True) = p on `device`, one kernel (generator rules as _rand)."""
        return D.bernoulli_on(list(shape), p, torch.device(device), *self._gen())

    def _randint(self, high: int, shape, device) -> torch.Tensor:
        """int64 uniform in [0, high) on `device` (generator rules as _rand)."""
        return D.randint_on(high, list(shape), torch.device(device), *self._gen())

    def _gen(self) -> Tuple[Optional[torch.Generator], str]:
        """(generator, its device) as the _script draw functions take them."""
        return self.generator, generator_device(self.generator)

    def _uniform(self, shape, low: float, high: float, device, dtype=torch.float64) -> torch.Tensor:
        return D.uniform_on(list(shape), low, high, torch.device(device), *self._gen(), dtype)


def as_input(transform, images):
    """images as `transform` takes them: a RaggedImages batch stays one for the transforms that take
    it (_TAKES_RAGGED) and becomes its list of views for the others (plain callables included)."""
    if isinstance(images, RaggedImages) and not getattr(transform, "_TAKES_RAGGED", False):
        return images.images()
    return images


def is_image_list(images) -> bool:
    return isinstance(images, (list, tuple)) and len(images) > 0 and all_chw_tensors(images)


def per_size(transform, images, targets: Tuple[Any, ...], params: Optional[Dict[str, Any]]):
    """transform on a list of (C, H_i, W_i) images, for the transforms that take batches of one
    size: the images of each size (and dtype) go through it as one batch, each sample with its own
    parameters as in any batch, and come back as a list in their order; targets (one entry per
    image in each target list) follow their images. Returns (images, targets, params), params
    {"per_size": [(indices, the group's parameters), ...]} (what replays it)."""
    name = type(transform).__name__
    b = len(images)
    for tg in targets:
        if not (isinstance(tg, (list, tuple)) and len(tg) == b):
            raise TypeError(f"torchaug.transforms.{name}: with a list of {b} images of different sizes, each target must be a "
                            f"list of {b} per-image targets, got {type(tg).__name__}")
    if params is None:
        groups: Dict[Any, List[int]] = {}
        for i, im in enumerate(images):
            groups.setdefault((tuple(im.shape), im.dtype, im.device), []).append(i)
        plan = [(idx, None) for idx in groups.values()]
    else:
        plan = params.get("per_size") if isinstance(params, dict) else None
        if not isinstance(plan, list) or sorted(i for idx, _ in plan for i in idx) != list(range(b)):
            raise ValueError(f"torchaug.transforms.{name}: params for a list of {b} images must be the {{'per_size': ...}} "
                             "that a call on that list returned")
    out: List[Any] = [None] * b
    out_targets = [[None] * b for _ in targets]
    drawn = []
    for idx, p in plan:
        x = torch.stack([images[i] for i in idx])
        sub = tuple([tg[i] for i in idx] for tg in targets)
        res, p = transform(x, *sub, params=p, return_params=True)
        imgs = res[0] if sub else res
        if not (isinstance(imgs, torch.Tensor) and imgs.dim() == 4 and imgs.shape[0] == len(idx)):
            raise TypeError(f"torchaug.transforms.{name}: takes a list of images only where it gives one image per image")
        for k, i in enumerate(idx):
            out[i] = imgs[k]
            for j in range(len(targets)):
                out_targets[j][i] = res[1 + j][k]
        drawn.append((idx, p))
    return out, tuple(type(tg)(o) for tg, o in zip(targets, out_targets)), {"per_size": drawn}


def per_clip(transform, clips: torch.Tensor, targets: Tuple[Any, ...], params: Optional[Dict[str, Any]], return_params: bool):
    """transform on clips (..., T, C, H, W): one draw per clip (make_params sees the clips' first
    frames), applied to each of its T frames, so that a clip stays one scene; the result keeps the
    leading dimensions. The parameters returned (and replayed) are the clips'."""
    name = type(transform).__name__
    if targets:
        raise TypeError(f"torchaug.transforms.{name}: targets with clips (..., T, C, H, W) are not supported; "
                        "pass the clips alone")
    lead, t = clips.shape[:-4], clips.shape[-4]
    n = int(math.prod(lead))
    x = clips.reshape(n, t, *clips.shape[-3:])
    if params is None:
        params = transform.make_params(x[:, 0])
    out = transform.transform(x.reshape(n * t, *clips.shape[-3:]), transform._per_frame(params, n, t))
    if not (isinstance(out, torch.Tensor) and out.dim() == 4 and out.shape[0] == n * t):
        raise TypeError(f"torchaug.transforms.{name}: takes no clips (..., T, C, H, W) (it gives no image per frame)")
    out = out.reshape(*lead, t, *out.shape[1:])
    return (out, params) if return_params else out


def _per_frame(params, clips: int, frames: int):
    """A clip's parameters for each of its frames: the per-sample tensors (first dimension the
    number of clips) repeated frames times in place, the rest as they are."""
    if isinstance(params, torch.Tensor):
        return params.repeat_interleave(frames, 0) if params.dim() >= 1 and params.shape[0] == clips else params
    if isinstance(params, dict):
        return type(params)((k, _per_frame(v, clips, frames)) for k, v in params.items())
    if isinstance(params, (list, tuple)):
        return type(params)(_per_frame(v, clips, frames) for v in params)
    return params


def scriptable_transforms() -> List[str]:
    """Names of the transforms that torch.jit.script supports."""
    import sys

    pkg = sys.modules[__name__.rsplit(".", 1)[0]]
    classes = [(n, getattr(pkg, n)) for n in pkg.__all__]
    return [n for n, c in classes if isinstance(c, type) and issubclass(c, Transform) and c._scriptable is not Transform._scriptable]


def script_fill(fill, name: str) -> Optional[List[float]]:
    """A transform's fill as its TorchScript form holds it: None, or one value or one per channel."""
    if isinstance(fill, torch.Tensor):
        if fill.dim() > 1:
            raise RuntimeError(f"torchaug.transforms.{name}: a per-sample fill has no TorchScript form")
        return [float(v) for v in fill.reshape(-1).tolist()]
    if fill is None:
        return None
    return [float(v) for v in fill] if isinstance(fill, Sequence) else [float(fill)]


def check_probability(p: float, name: str) -> float:
    if not isinstance(p, numbers.Real) or not 0.0 <= float(p) <= 1.0:
        raise ValueError(f"torchaug.transforms.{name}: p must be a probability in [0, 1], got {p!r}")
    return float(p)


def setup_size(size, name: str) -> List[int]:
    if isinstance(size, numbers.Integral):
        if size <= 0:
            raise ValueError(f"torchaug.transforms.{name}: size must be positive, got {size}")
        return [int(size), int(size)]
    if isinstance(size, Sequence) and len(size) == 1:
        return setup_size(size[0], name)
    if isinstance(size, Sequence) and len(size) == 2 and all(isinstance(s, numbers.Integral) and s > 0 for s in size):
        return [int(size[0]), int(size[1])]
    raise ValueError(f"torchaug.transforms.{name}: size must be a positive int or a sequence of 2 positive ints, got {size!r}")
