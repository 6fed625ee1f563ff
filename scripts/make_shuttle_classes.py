"""Build ``shuttle_classes.csv.gz`` (the Statlog class of every bundled Shuttle row) and ``shuttle_high.csv.gz``
(the 8,903 rows of class 'High', Statlog class 4, which the bundled ODDS anomaly version removed).

Source: ``data/Shuttle.rda`` of the R package mlbench (Debian ``r-cran-mlbench``; the UCI Statlog (Shuttle) data,
CC BY 4.0): ``apt-get download r-cran-mlbench && dpkg-deb -x r-cran-mlbench_*.deb deb`` then
``python scripts/make_shuttle_classes.py deb/usr/lib/R/site-library/mlbench/data/Shuttle.rda``.

A minimal reader of R's XDR serialisation (format 2/3: pairlists, symbols, strings, integer/double vectors,
lists, attributes, references) — enough for a data.frame of numbers and one factor; no R needed. The rows are
matched to the bundled ``shuttle.csv.gz`` by their 9 feature values; the script checks that every bundled row
has exactly one class, that the anomaly flag is ``class != Rad.Flow``, and that the bundled rows plus the 'High'
rows are the RDA's 58,000 (row, class) pairs as multisets; otherwise it writes nothing.
"""

from __future__ import annotations

import collections
import gzip
import io
import lzma
import struct
import sys
from importlib import resources

import numpy as np


class _Reader:
    def __init__(self, buf: bytes):
        self.b, self.i, self.refs = buf, 0, []

    def int(self):
        v = struct.unpack_from(">i", self.b, self.i)[0]
        self.i += 4
        return v

    def item(self):
        flags = self.int()
        t, has_attr, has_tag = flags & 0xFF, bool(flags & (1 << 9)), bool(flags & (1 << 10))
        if t == 254:  # NILVALUE
            return None
        if t == 255:  # REFSXP
            return self.refs[(flags >> 8) - 1]
        if t == 1:  # SYMSXP
            name = self.item()
            self.refs.append(("sym", name))
            return ("sym", name)
        if t == 2:  # LISTSXP (pairlist)
            attr = self.item() if has_attr else None
            tag = self.item() if has_tag else None
            car = self.item()
            cdr = self.item()
            out = [(tag[1] if tag else None, car)]
            if isinstance(cdr, list):
                out += cdr
            return out if attr is None else out
        if t == 9:  # CHARSXP
            n = self.int()
            if n == -1:
                return None
            s = self.b[self.i:self.i + n].decode("utf-8", "replace")
            self.i += n
            return s
        if t in (10, 13):  # LGLSXP, INTSXP
            n = self.int()
            v = np.frombuffer(self.b, dtype=">i4", count=n, offset=self.i).astype(np.int64)
            self.i += 4 * n
        elif t == 14:  # REALSXP
            n = self.int()
            v = np.frombuffer(self.b, dtype=">f8", count=n, offset=self.i).astype(np.float64)
            self.i += 8 * n
        elif t in (16, 19):  # STRSXP, VECSXP
            n = self.int()
            v = [self.item() for _ in range(n)]
        else:
            raise ValueError(f"unsupported SEXP type {t}")
        attrs = dict((k, val) for k, val in self.item()) if has_attr else {}
        return ("vec", v, attrs)


def read_rda(path):
    buf = lzma.open(path).read() if open(path, "rb").read(2) == b"\xfd7" else gzip.open(path).read()
    assert buf[:5] in (b"RDX2\n", b"RDX3\n"), buf[:5]
    r = _Reader(buf[5:])
    assert r.b[:2] == b"X\n"
    r.i = 2
    version = r.int()
    r.int(), r.int()  # writer R version, minimal reader version
    if version == 3:
        r.i += r.int()  # native encoding
    return dict(r.item())


def main(path):
    objs = read_rda(path)
    _, cols, attrs = objs["Shuttle"]
    names = attrs["names"][1]
    print("columns:", names)
    feats = np.column_stack([np.asarray(c[1], dtype=np.float64) for c in cols[:9]])
    codes, fattrs = cols[9][1], cols[9][2]
    levels = fattrs["levels"][1]
    labels = np.asarray(levels, dtype=object)[codes - 1]
    print("rows:", feats.shape[0], "classes:", collections.Counter(labels.tolist()))
    raw = resources.files("dpcore.datasets").joinpath("data/shuttle.csv.gz").read_bytes()
    text = gzip.decompress(raw).decode()
    header, *lines = text.strip().split("\n")
    print("bundled header:", header)
    bundled = np.array([[float(v) for v in ln.split(",")] for ln in lines])
    bx, flag = bundled[:, :9], bundled[:, 9]
    index = collections.defaultdict(list)
    for i, row in enumerate(feats):
        index[row.tobytes()].append(labels[i])
    out = []
    for j, row in enumerate(bx):
        cands = set(index.get(row.tobytes(), []))
        if len(cands) != 1:
            raise SystemExit(f"bundled row {j} matches {sorted(cands)} in the RDA: not the same data")
        out.append(cands.pop())
    out = np.asarray(out, dtype=object)
    ok = bool(np.all((out != "Rad.Flow") == (flag != 0)))
    high = feats[labels == "High"]
    print(f"matched {len(out)} bundled rows (of {feats.shape[0]}); anomaly flag == (class != Rad.Flow): {ok}; "
          f"classes of the bundled rows: {collections.Counter(out.tolist())}")
    # the bundled file is the RDA without class 'High' (ODDS: Statlog class 4 removed): check as multisets
    whole = collections.Counter(zip([r.tobytes() for r in feats], labels.tolist()))
    union = collections.Counter(zip([r.tobytes() for r in bx], out.tolist()))
    union.update(zip([r.tobytes() for r in high], ["High"] * high.shape[0]))
    if not ok or whole != union or np.any(np.round(feats) != feats):
        raise SystemExit("mismatch: not bundling")
    print("bundled rows + the", high.shape[0], "'High' rows == the RDA (as multisets of (row, class)): True")
    base = "python/dpcore/datasets/data/"
    with gzip.GzipFile(base + "shuttle_classes.csv.gz", "wb", mtime=0) as fh:
        fh.write(("class\n" + "\n".join(out.tolist()) + "\n").encode())
    with gzip.GzipFile(base + "shuttle_high.csv.gz", "wb", mtime=0) as fh:
        fh.write((",".join(f"f{j}" for j in range(1, 10)) + "\n"
                  + "\n".join(",".join(str(int(v)) for v in r) for r in high) + "\n").encode())
    print("wrote", base + "shuttle_classes.csv.gz", base + "shuttle_high.csv.gz")

if __name__ == "__main__":
    main(sys.argv[1])
