#!/usr/bin/env python3
"""The `s3-small-objects` baseline: what users pick today to train from S3 in Python.

torch's DataLoader over a map-style dataset whose __getitem__ does one boto3 get_object per
sample; one boto3 client per worker, created in worker_init_fn (clients are not fork-safe).
Debian's python3-torch and python3-boto3, run with /usr/bin/python3 by bench/run:

    s3_baseline.py --endpoint URL --bucket B --prefix P [--workers 4] [--batch 32]

Credentials and region come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_REGION, as
boto3 reads them. Like the C++ drivers (bench/dataset_bench.cc) it lists the prefix untimed,
times one epoch, checks that every sample arrived with its listed size, and prints one JSON
line: objects, bytes, wall_s, peak_rss_mb. Batches are lists of uint8 tensors (collate_fn
keeps them as a list), as libtorch's DataLoader hands out vectors of examples: no stacking
copy that ours would not make. The workers are processes, so peak_rss_mb is the peak over the
run of the summed proportional set size (PSS: shared pages split between the processes that
map them, so torch's libraries count once) of this process and its workers.
"""
import argparse
import json
import os
import sys
import threading
import time
import warnings

import boto3
import botocore.config
import torch
import torch.utils.data


def make_client(endpoint):
    return boto3.client("s3", endpoint_url=endpoint,
                        config=botocore.config.Config(s3={"addressing_style": "path"}))


class S3MapDataset(torch.utils.data.Dataset):
    """One object per sample, fetched with one get_object call."""

    def __init__(self, endpoint, bucket, keys):
        self.endpoint = endpoint
        self.bucket = bucket
        self.keys = keys
        self.client = None  # one per worker, made in worker_init_fn

    def __len__(self):
        return len(self.keys)

    def __getitem__(self, index):
        body = self.client.get_object(Bucket=self.bucket, Key=self.keys[index])["Body"].read()
        return torch.frombuffer(bytearray(body), dtype=torch.uint8)


def worker_init_fn(_worker_id):
    dataset = torch.utils.data.get_worker_info().dataset
    dataset.client = make_client(dataset.endpoint)


def collate_list(samples):
    return samples


def tree_memory_kb(root):
    """PSS (else RSS) of process `root` and its descendants, in KiB."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                pass
    tree = {root}
    grew = True
    while grew:
        more = {p for p, pp in parents.items() if pp in tree and p not in tree}
        tree |= more
        grew = bool(more)
    total = 0
    for p in tree:
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                fields = dict(line.split()[:2] for line in f if line.endswith("kB\n"))
            total += int(fields.get("Pss:", fields.get("Rss:", 0)))
        except (OSError, ValueError):
            pass
    return total


class PeakMemory(threading.Thread):
    def __init__(self, interval_s=0.05):
        super().__init__(daemon=True)
        self.interval_s = interval_s
        self.peak_kb = 0
        self.done = threading.Event()

    def run(self):
        while not self.done.is_set():
            self.peak_kb = max(self.peak_kb, tree_memory_kb(os.getpid()))
            self.done.wait(self.interval_s)

    def stop(self):
        self.done.set()
        self.join()
        self.peak_kb = max(self.peak_kb, tree_memory_kb(os.getpid()))
        return self.peak_kb / 1024.0


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--bucket", required=True)
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args()
    # torch warns when workers outnumber cores (4 on a 2-core runner); the count is the point.
    warnings.filterwarnings("ignore", message="This DataLoader will create")

    sizes = {}
    pages = make_client(args.endpoint).get_paginator("list_objects_v2")
    for page in pages.paginate(Bucket=args.bucket, Prefix=args.prefix):
        for o in page.get("Contents", []):
            sizes[o["Key"]] = o["Size"]
    keys = sorted(sizes)
    dataset = S3MapDataset(args.endpoint, args.bucket, keys)
    loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch, shuffle=False,
                                         num_workers=args.workers, worker_init_fn=worker_init_fn,
                                         collate_fn=collate_list)

    memory = PeakMemory()
    memory.start()
    samples = 0
    nbytes = 0
    t0 = time.monotonic()
    for batch in loader:
        for sample in batch:
            if sample.numel() != sizes[keys[samples]]:
                sys.exit(f"s3_baseline.py: sample {samples} has {sample.numel()} bytes, "
                         f"listed {sizes[keys[samples]]}")
            samples += 1
            nbytes += sample.numel()
    wall = time.monotonic() - t0
    peak_mb = memory.stop()
    if samples != len(keys):
        sys.exit(f"s3_baseline.py: got {samples} samples, listed {len(keys)}")
    print(json.dumps({"objects": samples, "bytes": nbytes, "wall_s": round(wall, 4),
                      "peak_rss_mb": round(peak_mb, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
