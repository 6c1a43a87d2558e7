"""Input side of the pipeline: JPEG decoding (CPU libjpeg-turbo / CUDA nvJPEG), batches of encoded
files that DataLoader workers hand over as raw bytes, dataset readers (image folders, tar shards),
and ragged batches of decoded images."""
from ._decode import DecodeFailure, decode_jpeg, decode_jpeg_ragged, read_file
from ._encoded import EncodedImages, ImageFolderBytes, TarShards, collate_encoded, read_batch, write_tar_shards
from ._ragged import RaggedImages, collate_ragged

__all__ = [
    "DecodeFailure", "decode_jpeg", "decode_jpeg_ragged", "read_file",
    "EncodedImages", "ImageFolderBytes", "TarShards", "collate_encoded", "read_batch", "write_tar_shards",
    "RaggedImages", "collate_ragged",
]
