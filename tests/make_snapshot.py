#!/usr/bin/env python3
"""Writes PyTorch CUDA memory snapshots (what `torch.cuda.memory._dump_snapshot` writes) from
planted parameters, one per rank, for rankprof's snapshot tests and speed checks. Python 3
stdlib only; no GPU.

    python3 tests/make_snapshot.py OUT_DIR [--ranks 4] [--steps 6] [--plant 1:2147483648]
        [--allocs 40] [--depth 12] [--target-bytes N] [--check]

Each rank R writes `OUT_DIR/snap-TP-R-memory.pickle` (SGLang's name) and OUT_DIR/plant.json
says what was planted. The structure is `_snapshot`'s docstring (torch/cuda/memory.py) as
torch's C++ (`_cuda_memorySnapshot`, `py_symbolize`) fills it:

  {'segments': [Segment], 'device_traces': [[TraceEntry] per device], 'allocator_settings': {...}}
  Segment    device, address, total_size, allocated_size, active_size, requested_size, stream,
             segment_type, segment_pool_id (tuple), is_expandable, frames, blocks
  Block      address, size, requested_size, state, frames
  TraceEntry action, addr (oom: device_free), size, stream, time_us, compile_context,
             user_metadata, frames
  Frame      name, filename, line (innermost first)

with torch's sharing: one dict per distinct frame, shared by every stack that holds it; one
stack list per allocation, shared by its block (while live) and its alloc, free_requested and
free_completed entries (the allocator records frees with the context of the allocation); one
string object per key. Rank R uses device R; the other devices' traces are empty lists.

The pickle is written by a streaming writer that emits the opcodes CPython's pickler
(protocol 4, the default `pickle.dump` of Python 3.8-3.13 that `_dump_snapshot` uses) writes
for that object, so a file of any size is written in little memory; `--check` loads each file
with `pickle` and checks that `pickle.dumps(obj, protocol=4)` gives the same opcodes and
arguments (FRAME boundaries aside).

Per rank, in trace order: weights (8 x 128 MiB, `model.py:30 __init__`) live before recording
(in the segments only; one of them is freed during the trace); a KV pool (1 GiB,
`memory_pool.py:120 _create_buffers`) at step 0, kept; per step, `--allocs` activations of 1-64
MiB from four call sites (one with torch frames only), all freed at the step's end, the last
one of the last step only requested to be freed (a block `active_pending_free`); on a planted
rank, BYTES from `model.py:42 load_weights` at step 1, kept. Rank 0 records one `oom` entry.
"""

import argparse
import io
import json
import os
import pickle
import pickletools
import random
import struct
import sys

MIB = 1 << 20
T0 = 1_750_000_000_000_000

# ---- the streaming pickle writer (protocol 4, as Lib/pickle.py's _Pickler writes) ----


class Shared:
    """An object pickled once and referred to by its memo slot after: `key` names it."""

    def __init__(self, key, obj):
        self.key, self.obj = key, obj


class Stream:
    """A list whose items come from an iterator (written as a list, in batches of 1000)."""

    def __init__(self, items):
        self.items = items


class Writer:
    FRAME_TARGET = 64 * 1024

    def __init__(self, f):
        self.f = f
        self.frame = bytearray()
        self.memo = {}  # ('s', str) / ('k', key) -> slot
        self.slots = 0
        self.frame_starts = 0

    def w(self, b):
        self.frame += b

    def commit(self, force=False):
        if self.frame and (len(self.frame) >= self.FRAME_TARGET or force):
            if len(self.frame) >= 4:
                self.f.write(b"\x95" + struct.pack("<Q", len(self.frame)))
            self.f.write(self.frame)
            self.frame = bytearray()

    def memoize(self, key):
        self.memo[key] = self.slots
        self.slots += 1
        self.w(b"\x94")

    def get(self, slot):
        self.w(b"h" + struct.pack("<B", slot) if slot < 256 else b"j" + struct.pack("<I", slot))

    def dump(self, obj):
        self.f.write(b"\x80\x04")
        self.save(obj)
        self.w(b".")
        self.commit(force=True)

    def forget(self, key):
        self.memo.pop(("k", key), None)

    def save(self, obj):
        self.commit()
        if isinstance(obj, Shared):
            k = ("k", obj.key)
            if k in self.memo:
                return self.get(self.memo[k])
            return self.save_container(obj.obj, k)
        if obj is None:
            return self.w(b"N")
        if obj is True or obj is False:
            return self.w(b"\x88" if obj else b"\x89")
        if isinstance(obj, int):
            return self.save_int(obj)
        if isinstance(obj, float):
            return self.w(b"G" + struct.pack(">d", obj))
        if isinstance(obj, str):
            k = ("s", obj)
            if k in self.memo:
                return self.get(self.memo[k])
            b = obj.encode("utf-8", "surrogatepass")
            if len(b) < 256:
                self.w(b"\x8c" + struct.pack("<B", len(b)) + b)
            else:
                self.w(b"X" + struct.pack("<I", len(b)) + b)
            return self.memoize(k)
        if isinstance(obj, tuple) and len(obj) == 2:
            self.save(obj[0])
            self.save(obj[1])
            self.w(b"\x86")
            return self.memoize(("t", id(obj), self.slots))
        return self.save_container(obj, ("c", self.slots))

    def save_int(self, x):
        if 0 <= x <= 0xFF:
            self.w(b"K" + struct.pack("<B", x))
        elif 0 <= x <= 0xFFFF:
            self.w(b"M" + struct.pack("<H", x))
        elif -0x80000000 <= x <= 0x7FFFFFFF:
            self.w(b"J" + struct.pack("<i", x))
        else:
            n = (x.bit_length() >> 3) + 1
            b = x.to_bytes(n, "little", signed=True)
            if x < 0 and n > 1 and b[-1] == 0xFF and (b[-2] & 0x80) != 0:
                b = b[:-1]
            self.w(b"\x8a" + struct.pack("<B", len(b)) + b)

    def save_container(self, obj, key):
        if isinstance(obj, dict):
            self.w(b"}")
            self.memoize(key)
            self.batches(list(obj.items()), pairs=True)
        else:
            self.w(b"]")
            self.memoize(key)
            self.batches(obj.items if isinstance(obj, Stream) else iter(obj), pairs=False)

    def batches(self, items, pairs):
        it = iter(items)
        while True:
            batch = []
            for x in it:
                batch.append(x)
                if len(batch) == 1000:
                    break
            if not batch:
                return
            if len(batch) > 1:
                self.w(b"(")
            for x in batch:
                if pairs:
                    self.save(x[0])
                    self.save(x[1])
                else:
                    self.save(x)
            if len(batch) > 1:
                self.w(b"u" if pairs else b"e")
            else:
                self.w(b"s" if pairs else b"a")
            if len(batch) < 1000:
                return


# ---- the simulated program ----

PY = "/opt/venv/lib/python3.11/site-packages/torch"
ALLOC_CPP = [
    ("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc", "/pytorch/c10/cuda/CUDACachingAllocator.cpp", 1224),
    ("c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate", "/pytorch/c10/cuda/CUDACachingAllocator.cpp", 3526),
    ("at::detail::empty_generic", "/pytorch/aten/src/ATen/EmptyTensor.cpp", 178),
    ("??", "??", 0),
]
SITES = {
    "init": [("__init__", "/srv/app/model.py", 30), ("build", "/srv/app/train.py", 20)],
    "plant": [("load_weights", "/srv/app/model.py", 42), ("build", "/srv/app/train.py", 22)],
    "kv": [("_create_buffers", "/opt/venv/lib/python3.11/site-packages/sglang/srt/mem_cache/memory_pool.py", 120),
           ("__init__", "/opt/venv/lib/python3.11/site-packages/sglang/srt/mem_cache/memory_pool.py", 98)],
    "forward": [("forward", "/srv/app/model.py", 88), ("run_step", "/srv/app/train.py", 57)],
    "attention": [("attention", "/srv/app/model.py", 95), ("forward", "/srv/app/model.py", 89), ("run_step", "/srv/app/train.py", 57)],
    "mlp": [("mlp", "/srv/app/layers.py", 12), ("forward", "/srv/app/model.py", 90), ("run_step", "/srv/app/train.py", 57)],
    "torch_only": [],
}
TORCH_PY = [("forward", PY + "/nn/modules/linear.py", 125), ("_call_impl", PY + "/nn/modules/module.py", 1747)]
OUTER = [("main", "/srv/app/train.py", 101), ("<module>", "/srv/app/train.py", 120)]


class Frames:
    """One dict per distinct frame (torch's py_symbolize), shared."""

    def __init__(self):
        self.cache = {}

    def frame(self, name, filename, line):
        k = (name, filename, line)
        if k not in self.cache:
            self.cache[k] = Shared(("frame",) + k, {"name": name, "filename": filename, "line": line})
        return self.cache[k]

    def stack(self, site, depth):
        pad = [("PyObject_Call", "/usr/local/src/python/Objects/call.c", 300 + i) for i in range(depth)]
        user = SITES[site]
        frames = ALLOC_CPP + TORCH_PY + user + pad + (OUTER if user else [])
        return [self.frame(*f) for f in frames]


def simulate(rank, a, rng):
    """The rank's allocations, in order: ('alloc'|'free'|'free_requested'|'oom'|'segment_alloc', id, size, site)."""
    ev = []
    nid = [0]

    def alloc(size, site):
        nid[0] += 1
        ev.append(("alloc", nid[0], size, site))
        return nid[0]

    ev.append(("free_pre", 3, 128 * MIB, "init"))  # a weight freed during the trace
    kv = alloc(1024 * MIB, "kv")
    for step in range(a.steps):
        ev.append(("segment_alloc", 0, 64 * MIB, "forward"))
        if step == 1 and rank in a.plants:
            alloc(a.plants[rank], "plant")
        acts = []
        for i in range(a.allocs):
            site = ["forward", "attention", "mlp", "torch_only"][i % 4]
            acts.append(alloc(rng.randrange(2, 129) * MIB // 2, site))
        if rank == 0 and step == a.steps - 1:
            ev.append(("oom", 0, 80 * 1024 * MIB, "forward"))
        last = step == a.steps - 1
        for k, i in enumerate(acts):
            ev.append(("free_requested", i, None, None))
            if not (last and k == len(acts) - 1):
                ev.append(("free", i, None, None))
    del kv
    return ev


class Rank:
    def __init__(self, rank, a):
        self.rank, self.a = rank, a
        self.frames = Frames()
        self.pre = [(i, 128 * MIB) for i in range(8)]  # ids -8..-1 as 0..7 below

    def events(self):
        return simulate(self.rank, self.a, random.Random(1000))

    def end_state(self):
        """Live allocations at the snapshot: id -> (size, site, state)."""
        live = {("pre", i): (s, "init", "active_allocated") for i, s in self.pre}
        sizes = {}
        for kind, i, size, site in self.events():
            if kind == "alloc":
                sizes[i] = (size, site)
                live[("t", i)] = (size, site, "active_allocated")
            elif kind == "free_pre":
                live.pop(("pre", i), None)
            elif kind == "free_requested":
                size, site = sizes[i]
                live[("t", i)] = (size, site, "active_pending_free")
            elif kind == "free":
                live.pop(("t", i), None)
        return live

    def stack(self, key, site):
        return Shared(("tb", key), self.frames.stack(site, self.a.depth))

    def addr(self, key):
        kind, i = key
        return 0x7F0000000000 + (i + 1) * (4 << 30) if kind == "pre" else 0x7E0000000000 + i * (256 * MIB + 4096)

    def segments(self, live):
        out = []
        for key in sorted(live, key=self.addr):
            size, site, state = live[key]
            slack = 2 * MIB
            blocks = [
                {"address": self.addr(key), "size": size, "requested_size": size - 512, "state": state, "frames": self.stack(key, site)},
                {"address": self.addr(key) + size, "size": slack, "requested_size": 0, "state": "inactive", "frames": []},
            ]
            out.append(self.segment(self.addr(key), blocks))
        cached = [{"address": 0x7D0000000000, "size": 20 * MIB, "requested_size": 0, "state": "inactive", "frames": []}]
        out.append(self.segment(0x7D0000000000, cached))
        return out

    def segment(self, address, blocks):
        return {
            "device": self.rank,
            "address": address,
            "total_size": sum(b["size"] for b in blocks),
            "allocated_size": sum(b["size"] for b in blocks if b["state"] == "active_allocated"),
            "active_size": sum(b["size"] for b in blocks if b["state"].startswith("active")),
            "requested_size": sum(b["requested_size"] for b in blocks),
            "stream": 0,
            "segment_type": "large",
            "segment_pool_id": (0, 0),
            "is_expandable": False,
            "frames": [],
            "blocks": blocks,
        }

    def entries(self, writer):
        t = T0 + self.rank * 7
        sizes = {}
        for kind, i, size, site in self.events():
            t += 13
            e = {"action": None}
            if kind == "alloc":
                sizes[i] = (size, site)
                e = {"action": "alloc", "addr": self.addr(("t", i)), "size": size}
                frames = self.stack(("t", i), site)
            elif kind == "free_pre":
                e = {"action": "free_requested", "addr": self.addr(("pre", i)), "size": size}
                yield self.entry(e, t, self.stack(("pre", i), site))
                e = {"action": "free_completed", "addr": self.addr(("pre", i)), "size": size}
                frames = self.stack(("pre", i), site)
            elif kind in ("free_requested", "free"):
                size, site = sizes[i]
                name = "free_requested" if kind == "free_requested" else "free_completed"
                e = {"action": name, "addr": self.addr(("t", i)), "size": size}
                frames = self.stack(("t", i), site)
            elif kind == "oom":
                e = {"action": "oom", "device_free": 3 * MIB, "size": size}
                frames = Shared(("tb", "oom", t), self.frames.stack(site, self.a.depth))
            else:
                e = {"action": "segment_alloc", "addr": 0x7C0000000000 + t, "size": size}
                frames = Shared(("tb", "seg", t), self.frames.stack(site, self.a.depth))
            yield self.entry(e, t, frames)
            if kind == "free":
                writer.forget(("tb", ("t", i)))

    def entry(self, e, t, frames):
        e.update({"stream": 0, "time_us": t, "compile_context": "N/A", "user_metadata": "", "frames": frames})
        return e

    def snapshot(self, writer):
        n = self.a.ranks
        traces = [Stream(self.entries(writer)) if d == self.rank else [] for d in range(n)]
        return {
            "segments": self.segments(self.end_state()),
            "device_traces": traces,
            "allocator_settings": {
                "PYTORCH_CUDA_ALLOC_CONF": "",
                "max_split_size": -1,
                "garbage_collection_threshold": 0.0,
                "expandable_segments": False,
                "pinned_num_register_threads": 1,
                "release_lock_on_cudamalloc": False,
                "pinned_use_cuda_host_register": False,
                "roundup_power2_divisions": {},
            },
        }


def write_rank(rank, a):
    path = os.path.join(a.out, f"{a.prefix}-TP-{rank}-memory.pickle")
    with open(path, "wb") as f:
        w = Writer(io.BufferedWriter(f, 1 << 20))
        w.dump(Rank(rank, a).snapshot(w))
        w.f.flush()
    return path


def check(path):
    """The file loads, and CPython's pickler writes the same opcodes for what it holds."""
    data = open(path, "rb").read()
    obj = pickle.loads(data)
    ops = lambda b: [(o.name, arg) for o, arg, _ in pickletools.genops(b) if o.name != "FRAME"]
    again = pickle.dumps(obj, protocol=4)
    if ops(data) != ops(again):
        sys.exit(f"{path}: not what pickle.dumps writes")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--allocs", type=int, default=40)
    p.add_argument("--depth", type=int, default=4, help="extra native frames per stack")
    p.add_argument("--plant", action="append", default=[], help="RANK:BYTES")
    p.add_argument("--prefix", default="snap")
    p.add_argument("--target-bytes", type=int, default=0, help="one rank, steps until the file is this big (about)")
    p.add_argument("--check", action="store_true")
    a = p.parse_args()
    a.plants = {int(r): int(b) for r, b in (x.split(":") for x in a.plant)}
    os.makedirs(a.out, exist_ok=True)
    if a.target_bytes:
        # About 170 bytes of pickle per entry and 3 entries per allocation at depth 4 (+5 per
        # extra frame): scale the steps.
        per_alloc = 3 * 120 + 5 * (len(ALLOC_CPP) + 9 + a.depth)
        a.steps = max(2, a.target_bytes // (per_alloc * a.allocs))
        a.ranks = 1
    paths = [write_rank(r, a) for r in range(a.ranks)]
    if a.check:
        for path in paths:
            check(path)
    with open(os.path.join(a.out, "plant.json"), "w") as f:
        json.dump({"ranks": a.ranks, "steps": a.steps, "allocs": a.allocs,
                   "planted": [{"rank": r, "bytes": b, "frame": "/srv/app/model.py:42 load_weights"} for r, b in sorted(a.plants.items())]}, f, indent=1)
    print(json.dumps({"files": paths}))


if __name__ == "__main__":
    main()
