"""Input side of the pipeline: batches that DataLoader workers hand over as raw decoded images."""
from ._ragged import RaggedImages, collate_ragged

__all__ = ["RaggedImages", "collate_ragged"]
