#!/usr/bin/env python3
"""Map/reduce `rankprof analyze` on a Ray cluster: one map task on each node that holds trace
files (pinned there with node affinity), running the rankprof binary on that node's local files
with `--save-partial`; the partials come back as bytes and the driver runs
`rankprof analyze --from-partials` on them. See examples/ray/README.md.

Where the traces are, one of:
  --node NODE=DIR          (repeatable) a Ray node (its node id, its IP address, or a custom
                           resource it was started with, e.g. `nodeA`) and the directory of
                           trace files on it;
  --capture-record FILE    a `.rankprof-capture.json` written by `rankprof capture start
                           --output-dir DIR`: the output dir on every node whose address is
                           the host of one of the recorded workers' URLs.

Everything after `--` goes to the reduce (`rankprof analyze --from-partials ... ARGS`), e.g.
`-- --format json`. The reduce's stdout and exit code are this script's.
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
from urllib.parse import urlparse

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--node", action="append", default=[], metavar="NODE=DIR")
    p.add_argument("--capture-record", metavar="FILE")
    p.add_argument("--address", default="auto", help="Ray cluster address (default: auto)")
    p.add_argument("--rankprof", default="rankprof", help="the rankprof binary on every node")
    p.add_argument("--read-args", default="", help="extra arguments for every map task "
                   "(e.g. '--stage DECODE --profile-id X'), split on spaces")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for the maps")
    p.add_argument("reduce_args", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    if a.reduce_args and a.reduce_args[0] == "--":
        a.reduce_args = a.reduce_args[1:]
    if not a.node and not a.capture_record:
        p.error("give --node NODE=DIR (repeatable) or --capture-record FILE")
    return a


def resolve_node(nodes, key):
    """The alive Ray node that `key` names: its node id, its IP, or a custom resource."""
    for n in nodes:
        if key in (n["NodeID"], n["NodeManagerAddress"], n.get("NodeManagerHostname")):
            return n
        if key in n.get("Resources", {}) and key not in ("CPU", "GPU", "memory",
                                                         "object_store_memory"):
            return n
    sys.exit(f"error: no alive Ray node is {key!r} (node id, IP, hostname or custom resource)")


def nodes_from_record(nodes, path):
    """(node, dir) for every node hosting a worker of the capture record."""
    with open(path) as f:
        rec = json.load(f)
    out_dir = rec.get("output_dir")
    if not out_dir:
        sys.exit(f"error: {path} has no output_dir (capture start without --output-dir?)")
    hosts = set()
    for w in rec.get("workers", []):
        h = urlparse(w if "://" in w else "http://" + w).hostname
        if h:
            try:
                hosts.add(socket.gethostbyname(h))
            except OSError:
                hosts.add(h)
    if not hosts and rec.get("hostname"):
        hosts.add(rec["hostname"])
    found = [n for n in nodes if n["NodeManagerAddress"] in hosts
             or n.get("NodeManagerHostname") in hosts]
    if not found:
        sys.exit(f"error: no Ray node runs on {sorted(hosts)} (the workers of {path})")
    return [(n, out_dir) for n in found]


@ray.remote(num_cpus=0)
def map_task(rankprof, trace_dir, read_args):
    """On the node holding `trace_dir`: its partial as bytes, with rankprof's exit code and
    stderr."""
    with tempfile.TemporaryDirectory() as t:
        out = os.path.join(t, "partial.json.gz")
        cmd = [rankprof, "analyze", "--profile-dir", trace_dir, "--save-partial", out, *read_args]
        r = subprocess.run(cmd, capture_output=True, text=True)
        data = b""
        if r.returncode in (0, 3) and os.path.exists(out):
            with open(out, "rb") as f:
                data = f.read()
        node = ray.get_runtime_context().get_node_id()
        return {"host": socket.gethostname(), "node": node, "dir": trace_dir, "code": r.returncode,
                "stderr": r.stderr, "partial": data}


def main(argv):
    a = parse_args(argv)
    ray.init(address=a.address, logging_level="ERROR", log_to_driver=False)
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    targets = []
    for spec in a.node:
        key, sep, d = spec.partition("=")
        if not sep or not d:
            sys.exit(f"error: --node {spec!r} is not NODE=DIR")
        targets.append((resolve_node(nodes, key), d))
    if a.capture_record:
        targets += nodes_from_record(nodes, a.capture_record)
    read_args = a.read_args.split()
    refs = [
        map_task.options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=n["NodeID"], soft=False)
        ).remote(a.rankprof, d, read_args)
        for n, d in targets
    ]
    results = ray.get(refs, timeout=a.timeout)
    failed = False
    with tempfile.TemporaryDirectory() as t:
        paths = []
        for i, r in enumerate(results):
            sys.stderr.write(f"rankprof_ray: map on node {r['node']} ({r['host']}): {r['dir']}\n")
            sys.stderr.write(r["stderr"])
            if not r["partial"]:
                sys.stderr.write(f"error: map task on {r['host']} ({r['dir']}) failed "
                                 f"with exit code {r['code']}\n")
                failed = True
                continue
            p = os.path.join(t, f"partial-{i:04d}.json.gz")
            with open(p, "wb") as f:
                f.write(r["partial"])
            paths.append(p)
        if failed:
            return 2
        cmd = [a.rankprof, "analyze", "--from-partials", *paths, *a.reduce_args]
        return subprocess.run(cmd).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
