"""torchaug.graphed: a chain of transforms captured once in a CUDA graph and replayed per batch.

A chain's call costs about 0.1 ms of Python and launches, which bounds small batches (online or RL
augmentation of a few samples at a time) by the host. torchaug's transforms draw every random
parameter on the GPU from the CUDA generator's graph-safe state, without a host synchronisation, so
a captured chain replays with fresh crops, flips, ops and factors each time: after the same
torch.cuda.manual_seed, a replay gives what the eager chain gives."""
from typing import Any, Callable

import torch
from torch import nn


def _own_generators(chain) -> list:
    """The types of the chain's modules that draw from a generator of their own (generator=): a
    graph would replay those draws unchanged (a CPU generator draws on the host, and a graph replays
    only the default CUDA generator's state fresh)."""
    if not isinstance(chain, nn.Module):
        return []
    names = [type(m).__name__ for m in chain.modules() if isinstance(getattr(m, "generator", None), torch.Generator)]
    return list(dict.fromkeys(names))


class GraphedChain:
    """`chain` captured in a CUDA graph for batches like `example`; see torchaug.graphed.

    Calling it with a batch copies the batch into the graph's input, replays the graph and returns
    the graph's output: the same tensor(s) at every call, overwritten by the next one (clone what
    must outlive it). replay() replays on the input as it is (write `input` in place to feed it)."""

    def __init__(self, chain: Callable, example: torch.Tensor):
        if not callable(chain):
            raise TypeError(f"torchaug.graphed: chain must be callable, got {type(chain).__name__}")
        own = _own_generators(chain)
        if own:
            raise ValueError(f"torchaug.graphed: {', '.join(own)} built with generator=: a CUDA graph would replay its "
                             f"draws unchanged; build the transforms without it (draws from the default CUDA generator "
                             f"are made fresh at every replay)")
        if not isinstance(example, torch.Tensor) or example.device.type != "cuda":
            got = f"a {example.device.type} tensor" if isinstance(example, torch.Tensor) else type(example).__name__
            raise ValueError(f"torchaug.graphed: example must be a CUDA tensor (a batch like those the graph replays "
                             f"on), got {got}")
        # kept alive with the graph: tensors the chain made before the capture (cached constants)
        # are read by the graph's kernels at every replay
        self.chain = chain
        self.input = torch.empty_like(example).copy_(example)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.device(example.device):
            # the warm-up (lazy initialisation, the caching allocator's first blocks) off the
            # capturing stream, as torch.cuda.graphs asks
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                chain(self.input)
            torch.cuda.current_stream().wait_stream(side)
            try:
                with torch.cuda.graph(self.graph):
                    self.output = chain(self.input)
            except RuntimeError as e:
                raise RuntimeError(f"torchaug.graphed: {type(chain).__name__} could not be captured in a CUDA graph (a "
                                   f"step that synchronises with the host, or a draw made on the host?): {e}") from e

    def replay(self) -> Any:
        self.graph.replay()
        return self.output

    def __call__(self, batch: torch.Tensor) -> Any:
        x = self.input
        if not isinstance(batch, torch.Tensor) or batch.shape != x.shape or batch.dtype != x.dtype or batch.device != x.device:
            got = (f"{tuple(batch.shape)} {batch.dtype} on {batch.device}" if isinstance(batch, torch.Tensor)
                   else type(batch).__name__)
            raise ValueError(f"torchaug.graphed: the graph was captured for batches of {tuple(x.shape)} {x.dtype} on "
                             f"{x.device}, got {got}")
        if batch.data_ptr() != x.data_ptr():
            x.copy_(batch)
        return self.replay()


def graphed(chain: Callable, example: torch.Tensor) -> GraphedChain:
    """`chain` (a transform or Compose of torchaug's, or any callable of one batch whose random draws
    are made on the GPU) captured once in a CUDA graph for batches of `example`'s shape, dtype and
    device, and replayed at each call: one graph launch instead of the chain's Python and kernel
    launches, with fresh random draws at every replay (after the same torch.cuda.manual_seed, what
    the eager chain gives). The returned output is overwritten by the next call.

        g = torchaug.graphed(chain, torch.empty(32, 3, 375, 500, dtype=torch.uint8, device="cuda"))
        for batch in batches:
            out = g(batch)

    A transform built with generator= draws from that generator, which a graph would replay
    unchanged: refused. Randomness drawn on the host by other callables (Python's random, a CPU
    tensor) is replayed as captured."""
    return GraphedChain(chain, example)
