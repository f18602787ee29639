"""Reads back the Parquet files of `analyze --parquet DIR` with pyarrow and pandas, and checks
them cell by cell against the CSV files of the same analysis (`analyze --csv-dir CSV_DIR`, a
different writer: text, parsed here with the csv module); a CSV stream with `# name: title`
sections (`analyze --format csv`) is read the same way.

For every CSV table there must be DIR/name.parquet with the same
column names in the same order and the same number of rows; each column's Parquet type is
int64 (every CSV cell an integer or empty), double (numbers; a float column may print as
integers) or string (any text, digits included: the CSV cannot tell those apart, so the
caller checks the types of known columns); an empty CSV cell is a
null; integers are equal, floats equal (the CSV prints the shortest round-trip form), strings
equal. Prints JSON: per table its rows, columns and types (as pyarrow and pandas see them),
the mismatches found, the number of empty cells checked as nulls, and the ranks table as records (for figure checks by the caller).

Usage: check_parquet.py DIR CSV_DIR|CSV_FILE
"""
import csv
import json
import math
import os
import re
import sys

import pandas as pd
import pyarrow.parquet as pq

INT = re.compile(r"-?[0-9]+")


def sections(text):
    """The CSV stream's tables: name -> (columns, rows of strings)."""
    out = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("# ") and ": " in line:
            name = line[2:].split(": ", 1)[0]
            block = []
            i += 1
            while i < len(lines) and lines[i] != "":
                block.append(lines[i])
                i += 1
            rows = list(csv.reader(block))
            out[name] = (rows[0], rows[1:])
        i += 1
    return out


def csv_dir(d):
    """The CSV files of a directory: stem -> (columns, rows of strings)."""
    out = {}
    for f in sorted(os.listdir(d)):
        if f.endswith(".csv"):
            with open(os.path.join(d, f), encoding="utf-8", newline="") as fh:
                rows = list(csv.reader(fh))
            out[f[: -len(".csv")]] = (rows[0], rows[1:])
    return out


def expected_type(cells):
    full = [c for c in cells if c != ""]
    if all(INT.fullmatch(c) for c in full):
        return "int64"
    try:
        [float(c) for c in full]
        return "double"
    except ValueError:
        return "string"


def same(kind, text, value):
    if text == "":
        return value is None
    if value is None:
        return False
    if kind == "int64":
        return int(text) == value
    if kind == "double":
        want = float(text)
        return want == value or (math.isnan(want) and math.isnan(value))
    return text == value


def main():
    d, csv_file = sys.argv[1], sys.argv[2]
    if os.path.isdir(csv_file):
        tables = csv_dir(csv_file)
    else:
        with open(csv_file, encoding="utf-8") as f:
            tables = sections(f.read())
    out = {"tables": {}, "mismatches": [], "extra_files": [], "ranks": [], "nulls": 0}
    for name, (columns, rows) in tables.items():
        path = os.path.join(d, name + ".parquet")
        if not os.path.exists(path):
            out["mismatches"].append(f"{name}: no {name}.parquet")
            continue
        t = pq.read_table(path)
        df = pd.read_parquet(path)
        types = {f.name: str(f.type) for f in t.schema}
        out["tables"][name] = {
            "rows": t.num_rows,
            "columns": t.column_names,
            "arrow_types": types,
            "pandas_types": {c: str(v) for c, v in df.dtypes.items()},
        }
        if t.column_names != columns:
            out["mismatches"].append(f"{name}: columns {t.column_names} != {columns}")
            continue
        if t.num_rows != len(rows) or len(df) != len(rows):
            out["mismatches"].append(f"{name}: {t.num_rows} rows != {len(rows)}")
            continue
        for j, col in enumerate(columns):
            cells = [r[j] if j < len(r) else "" for r in rows]
            kind = expected_type(cells)
            # "3.0" prints as "3": a float column may look all-integer in the CSV; and a text
            # column may hold digits only (step names such as "12").
            if kind == "int64" and types[col] == "double":
                kind = "double"
            if types[col] == "string":
                kind = "string"
            if types[col] != kind:
                out["mismatches"].append(f"{name}.{col}: type {types[col]} != {kind}")
                continue
            values = t.column(j).to_pylist()
            out["nulls"] += sum(1 for c in cells if c == "")
            for k, (text, value) in enumerate(zip(cells, values)):
                if not same(kind, text, value):
                    out["mismatches"].append(f"{name}.{col}[{k}]: {value!r} != {text!r}")
        if name == "ranks":
            out["ranks"] = json.loads(df.to_json(orient="records"))
    listed = {n + ".parquet" for n in tables}
    out["extra_files"] = sorted(f for f in os.listdir(d) if f not in listed)
    json.dump(out, sys.stdout, indent=1, sort_keys=True)


main()
