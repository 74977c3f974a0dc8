#!/usr/bin/python3
"""The PyTorch side of `sluice bench pipeline`: the quick start's input pipeline written as a PyTorch user
would write it, on the same TFRecord shards.

TFRecord shards of tf.train.Example (image: 784 raw uint8 bytes, label: int64) -> parse the Example
(python3-protobuf, C++ implementation) -> decode to a float32 [784] tensor, standardised as the trainer
does -> shuffle (a buffer of --shuffle examples in all, split across the workers) -> batch (--batch),
through a torch.utils.data.DataLoader with --workers worker processes, each reading its share of the files
(an IterableDataset sharded by worker id). TFRecord framing is read here: the length, and both masked
CRC32C checksums verified (python3-crc32c, hardware-accelerated), as sluice verifies them.

Prints one JSON line: samples, batches, seconds (from creating the DataLoader's iterator to the last
batch, so the interpreter's start and `import torch` are not counted), cpu_seconds (this process and its
workers, over the same span) and workers. Exit status 1 with the reason on stderr for a bad record.

  /usr/bin/python3 torch_pipeline.py --workers 2 --batch 256 --shuffle 10000 train-*.tfrecord
"""
import argparse
import json
import random
import resource
import struct
import sys
import time

import crc32c
import numpy as np
import torch
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

PIXEL_MEAN = 0.2860  # examples/fashion_mnist_trainer/model.h
PIXEL_STD = 0.3530
IMAGE_SIZE = 28 * 28


def example_class():
    """tf.train.Example built from its descriptor at run time: no protoc step, same wire format."""
    f = descriptor_pb2.FileDescriptorProto(name="bench_example.proto", package="tensorflow", syntax="proto3")
    T = descriptor_pb2.FieldDescriptorProto

    def message(name, fields):
        m = f.message_type.add(name=name)
        for fname, number, ftype, label, type_name, packed, oneof in fields:
            fd = m.field.add(name=fname, number=number, type=ftype, label=label)
            if type_name:
                fd.type_name = type_name
            if packed:
                fd.options.packed = True
            if oneof is not None:
                fd.oneof_index = oneof
        return m

    opt, rep = T.LABEL_OPTIONAL, T.LABEL_REPEATED
    message("BytesList", [("value", 1, T.TYPE_BYTES, rep, None, False, None)])
    message("FloatList", [("value", 1, T.TYPE_FLOAT, rep, None, True, None)])
    message("Int64List", [("value", 1, T.TYPE_INT64, rep, None, True, None)])
    feature = message("Feature", [
        ("bytes_list", 1, T.TYPE_MESSAGE, opt, ".tensorflow.BytesList", False, 0),
        ("float_list", 2, T.TYPE_MESSAGE, opt, ".tensorflow.FloatList", False, 0),
        ("int64_list", 3, T.TYPE_MESSAGE, opt, ".tensorflow.Int64List", False, 0),
    ])
    feature.oneof_decl.add(name="kind")
    features = message("Features", [("feature", 1, T.TYPE_MESSAGE, rep, ".tensorflow.Features.FeatureEntry",
                                     False, None)])
    entry = features.nested_type.add(name="FeatureEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=T.TYPE_STRING, label=opt)
    entry.field.add(name="value", number=2, type=T.TYPE_MESSAGE, label=opt, type_name=".tensorflow.Feature")
    message("Example", [("features", 1, T.TYPE_MESSAGE, opt, ".tensorflow.Features", False, None)])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    descriptor = pool.FindMessageTypeByName("tensorflow.Example")
    if hasattr(message_factory, "GetMessageClass"):
        return message_factory.GetMessageClass(descriptor)
    return message_factory.MessageFactory(pool).GetPrototype(descriptor)


def masked_crc(data):
    crc = crc32c.crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def read_records(path):
    """The records of one uncompressed TFRecord file, both CRCs verified."""
    with open(path, "rb", buffering=1 << 20) as f:
        offset = 0
        while True:
            header = f.read(12)
            if not header:
                return
            if len(header) < 12:
                raise ValueError(f"{path}: truncated record header at byte offset {offset}")
            length_bytes = header[:8]
            if masked_crc(length_bytes) != struct.unpack("<I", header[8:])[0]:
                raise ValueError(f"{path}: bad length CRC at byte offset {offset}")
            (length,) = struct.unpack("<Q", length_bytes)
            data = f.read(length)
            footer = f.read(4)
            if len(data) < length or len(footer) < 4:
                raise ValueError(f"{path}: truncated record at byte offset {offset}")
            if masked_crc(data) != struct.unpack("<I", footer)[0]:
                raise ValueError(f"{path}: bad data CRC at byte offset {offset}")
            offset += 16 + length
            yield data


class FashionMnistRecords(IterableDataset):
    """(float32 [784] standardised pixels, int64 label) from the shards this worker owns, shuffled through
    this worker's part of the shuffle buffer."""

    def __init__(self, files, shuffle_buffer, seed):
        self.files = files
        self.shuffle_buffer = shuffle_buffer
        self.seed = seed

    def __iter__(self):
        info = get_worker_info()
        worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
        example = example_class()
        rng = random.Random(self.seed * 1000003 + worker)
        capacity = max(1, self.shuffle_buffer // workers)
        buffer = []
        for path in self.files[worker::workers]:
            for record in read_records(path):
                ex = example.FromString(record)
                feature = ex.features.feature
                image = feature["image"].bytes_list.value[0]
                if len(image) != IMAGE_SIZE:
                    raise ValueError(f"{path}: image has {len(image)} bytes, expected {IMAGE_SIZE}")
                pixels = np.frombuffer(image, dtype=np.uint8).astype(np.float32)
                pixels = (pixels * np.float32(1.0 / 255.0) - np.float32(PIXEL_MEAN)) * np.float32(
                    1.0 / PIXEL_STD)
                item = (torch.from_numpy(pixels), feature["label"].int64_list.value[0])
                if len(buffer) < capacity:
                    buffer.append(item)
                    continue
                i = rng.randrange(capacity)
                yield buffer[i]
                buffer[i] = item
        rng.shuffle(buffer)
        yield from buffer


def one_thread(_worker_id):
    torch.set_num_threads(1)


def cpu_seconds():
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, required=True)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--shuffle", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    torch.set_num_threads(1)
    dataset = FashionMnistRecords(sorted(args.files), args.shuffle, args.seed)
    loader = DataLoader(dataset, batch_size=args.batch, num_workers=args.workers, worker_init_fn=one_thread)
    cpu_start = cpu_seconds()
    start = time.perf_counter()
    samples = batches = 0
    label_sum = 0
    for images, labels in loader:
        if images.dtype != torch.float32 or images.shape[1] != IMAGE_SIZE:
            raise ValueError(f"unexpected batch {images.dtype} {tuple(images.shape)}")
        samples += images.shape[0]
        batches += 1
        label_sum += int(labels.sum())
    seconds = time.perf_counter() - start
    del loader  # the workers are joined by now: their CPU time is in RUSAGE_CHILDREN
    print(json.dumps({"samples": samples, "batches": batches, "seconds": seconds,
                      "cpu_seconds": cpu_seconds() - cpu_start, "workers": args.workers,
                      "label_sum": label_sum}))


if __name__ == "__main__":
    try:
        main()
    except ValueError as e:
        print(f"torch_pipeline.py: {e}", file=sys.stderr)
        sys.exit(1)
