"""Reads the tidy CSVs of `analyze --csv-dir DIR` with pandas AND polars, and prints what a
user's script would see: per table its columns, row count and column types (as each library
inferred them), plus a few sums computed here (pandas groupby / polars group_by), as JSON.

Usage: check_tidy.py DIR
"""
import json
import os
import re
import sys

import pandas as pd
import polars as pl

d = sys.argv[1]
out = {"tables": {}}
for f in sorted(os.listdir(d)):
    if not f.endswith(".csv"):
        continue
    name = f[:-4]
    p = os.path.join(d, f)
    a = pd.read_csv(p)
    b = pl.read_csv(p)
    assert list(a.columns) == b.columns, (f, list(a.columns), b.columns)
    assert len(a) == b.height, (f, len(a), b.height)
    bad = [c for c in a.columns if not re.fullmatch(r"[a-z][a-z0-9_]*", c)]
    out["tables"][name] = {
        "columns": list(a.columns),
        "rows": len(a),
        "bad_headers": bad,
        "pandas_types": {c: str(t) for c, t in a.dtypes.items()},
        "polars_types": {c: str(t) for c, t in zip(b.columns, b.dtypes)},
    }

kbr = pd.read_csv(os.path.join(d, "kernels_by_rank.csv"))
# total ns per (kernel, rank) and per kernel, via pandas
out["kernel_rank_ns"] = {
    f"{k}|{r}": int(v) for (k, r), v in kbr.groupby(["kernel", "rank"])["total_ns"].sum().items()
}
# per kernel over ranks, via polars
kp = pl.read_csv(os.path.join(d, "kernels_by_rank.csv")).group_by("kernel").agg(pl.col("total_ns").sum())
out["kernel_ns_polars"] = {k: int(v) for k, v in zip(kp["kernel"], kp["total_ns"])}
ks = pd.read_csv(os.path.join(d, "kernels.csv"))
out["kernel_ns_table"] = {k: int(v) for k, v in zip(ks["kernel"], ks["total_ns"])}
sbr = pl.read_csv(os.path.join(d, "steps_by_rank.csv"))
w = sbr.group_by("rank").agg(pl.col("work_ns").sum()).sort("rank")
out["work_ns_by_rank"] = {r: int(v) for r, v in zip(w["rank"], w["work_ns"])}
cl = pd.read_csv(os.path.join(d, "classes.csv"))
out["class_rank_ns"] = {f"{c}|{r}": int(v) for c, r, v in zip(cl["class"], cl["rank"], cl["total_ns"])}
json.dump(out, sys.stdout, indent=1, sort_keys=True)
