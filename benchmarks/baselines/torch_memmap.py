#!/usr/bin/python3
"""The PyTorch side of `sluice bench pipeline`'s fixed-size-record case: a map-style Dataset over a NumPy
memmap of fixed-size records, as a PyTorch user writes it for such data.

Each record is 1 label byte followed by 784 raw uint8 pixels. __getitem__ decodes one record to a float32
[784] tensor, standardised as the trainer does, and its label; DataLoader(shuffle=True) draws a random
permutation of all records each epoch (random access is cheap on a memmap) and batches --batch of them in
--workers worker processes (one torch thread each).

Prints one JSON line like torch_pipeline.py: samples, batches, seconds (from creating the DataLoader's
iterator to the last batch), cpu_seconds (this process and its workers over that span), workers.

  /usr/bin/python3 torch_memmap.py --workers 2 --batch 256 images.bin
"""
import argparse
import json
import resource
import sys
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

PIXEL_MEAN = 0.2860  # examples/fashion_mnist_trainer/model.h
PIXEL_STD = 0.3530
IMAGE_SIZE = 28 * 28
RECORD_BYTES = 1 + IMAGE_SIZE


class FixedRecords(Dataset):
    def __init__(self, path):
        raw = np.memmap(path, dtype=np.uint8, mode="r")
        if raw.size % RECORD_BYTES != 0:
            raise ValueError(f"{path}: {raw.size} bytes is not a whole number of {RECORD_BYTES}-byte records")
        self.records = raw.reshape(-1, RECORD_BYTES)

    def __len__(self):
        return self.records.shape[0]

    def __getitem__(self, i):
        record = self.records[i]
        pixels = record[1:].astype(np.float32)
        pixels = (pixels * np.float32(1.0 / 255.0) - np.float32(PIXEL_MEAN)) * np.float32(1.0 / PIXEL_STD)
        return torch.from_numpy(pixels), int(record[0])


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
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("file")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    loader = DataLoader(FixedRecords(args.file), batch_size=args.batch, shuffle=True,
                        num_workers=args.workers, worker_init_fn=one_thread)
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
        print(f"torch_memmap.py: {e}", file=sys.stderr)
        sys.exit(1)
