"""Shows that tests/test_prefetch.py's stream-safety check can fail: with the hand-over (wait on the
batch's event + record_stream) removed, a slow producer or a slow consumer must give wrong batches.
Run on the GPU machine by scripts/gpu_check.sh; exits non-zero if the broken prefetcher is NOT caught."""
import sys

import torch

sys.path.insert(0, "tests")
import torchaug.prefetch as P  # noqa: E402
from test_prefetch import _batches, _checksums  # noqa: E402

assert torch.cuda.is_available()
batches = _batches(12)
caught = {}
for name, producer_sleep, consumer_sleep in [("slow producer", 50_000_000, 0), ("slow consumer", 0, 50_000_000)]:
    def transform(x, s=producer_sleep):
        if s:
            torch.cuda._sleep(s)
        return x.flip(-1) + 1
    expected = _checksums(P.Prefetcher(batches, transform, device="cuda", depth=2), consumer_sleep)
    original = P._PrefetchIterator._hand_over
    P._PrefetchIterator._hand_over = lambda self, batch, done: batch  # no wait, no record_stream
    try:
        broken = _checksums(P.Prefetcher(batches, transform, device="cuda", depth=2), consumer_sleep)
    finally:
        P._PrefetchIterator._hand_over = original
    caught[name] = not torch.equal(broken, expected)
print("prefetch mutation:", ", ".join(f"{k}: {'caught' if v else 'NOT caught'}" for k, v in caught.items()))
sys.exit(0 if all(caught.values()) else 1)
