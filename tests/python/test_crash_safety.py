"""Crash safety by design (docs/output-format.md, "Crash safety"): a reader that polls a file
while sphsim writes it never fails and sees every committed snapshot; a snapshot changes no
metadata of the file but its commit counter; and SIGKILLs at random moments (scripts/kill_stress.py)
leave files that h5py and VTK read and that --resume completes, bit-identical to an
uninterrupted run.

Needs build/sphsim (or $SPHSIM); about two minutes on 2 cores with PoCL (the 100 kills).
"""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("SPHSIM", ROOT / "build" / "sphsim"))
sys.path.insert(0, str(ROOT / "scripts"))
import kill_stress  # noqa: E402

LIVE = {
    "format": 1, "name": "live", "dimensions": 2, "mode": "sph",
    "tank": {"min": [0, 0], "max": [0.4, 0.3]},
    "fluid": {"blocks": [{"min": [0, 0], "max": [0.1, 0.2]}], "spacing": 0.005},
    "time": {"end": 0.06}, "output": {"interval": 0.001},
}


def read_committed(h5):
    """Open without locking (the writer holds the file open) and read every committed
    snapshot's Points and PointData; returns NSteps."""
    with h5py.File(h5, "r", locking=False) as f:
        ns = int(f["VTKHDF/Steps"].attrs["NSteps"])
        if ns == 0:
            return 0
        n = int(f["VTKHDF/NumberOfPoints"][0])
        for k in range(ns):
            po = int(f["VTKHDF/Steps/PointOffsets"][k])
            x = f["VTKHDF/Points"][po:po + n]
            assert x.shape == (n, 3) and np.isfinite(x).all()
            ids = f["VTKHDF/PointData/id"][po:po + n]
            assert np.array_equal(ids, np.arange(n)), f"snapshot {k}: ids"
            for name in f["VTKHDF/PointData"]:
                f["VTKHDF/PointData"][name][po:po + n]
        t = f["sphsim/steps/time"][:ns]
        assert np.all(np.diff(t) > 0)
        return ns


def raw_regions(h5):
    """(offset, size) of every dataset's raw data in the file (contiguous, or Values' chunk)."""
    regions = []
    with h5py.File(h5, "r", locking=False) as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                off = obj.id.get_offset()
                if off is not None:
                    regions.append((off, obj.id.get_storage_size()))
                elif obj.chunks:
                    for i in range(obj.id.get_num_chunks()):
                        c = obj.id.get_chunk_info(i)
                        regions.append((c.byte_offset, c.size))
        f.visititems(visit)
    return regions


def test_live_reader_polls_while_running(tmp_path):
    scene = tmp_path / "live.json"
    scene.write_text(json.dumps(LIVE))
    out = tmp_path / "live.h5"
    proc = subprocess.Popen([str(BIN), str(scene), "-o", str(out), "--quiet"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    seen, copies, reads = [], [], 0
    while proc.poll() is None:
        if out.exists():
            ns = read_committed(out)  # any exception fails the test
            reads += 1
            if not seen or ns != seen[-1]:
                seen.append(ns)
                if len(copies) < 3 and ns >= (0, 5, 20)[len(copies)]:
                    copies.append((ns, out.read_bytes()))
        time.sleep(0.005)
    assert proc.returncode == 0, proc.stderr.read().decode()[-1500:]
    final = read_committed(out)
    assert final == 61
    assert len(copies) == 3, f"copies taken at {[c[0] for c in copies]}"
    assert seen == sorted(seen), f"NSteps went back: {seen}"
    assert len(seen) >= 5, f"the reader saw too few commits ({seen}, {reads} reads)"
    # Every snapshot writes raw data only: the bytes outside the datasets' raw storage (the
    # metadata) of a copy taken during the run differ from the final file's in a few dozen
    # bytes (the commit counter, Values' extent, the checksums of their object headers)
    # and the file never changes size.
    final_bytes = out.read_bytes()
    mask = np.ones(len(final_bytes), dtype=bool)
    for off, size in raw_regions(out):
        mask[off:off + size] = False
    fb = np.frombuffer(final_bytes, dtype=np.uint8)
    for ns, b in copies:
        assert len(b) == len(final_bytes), f"file size changed after NSteps {ns}"
        diff = (np.frombuffer(b, dtype=np.uint8) != fb) & mask
        print(f"NSteps {ns}: {diff.sum()} metadata bytes differ from the final file's")
        assert diff.sum() < 256, f"{diff.sum()} metadata bytes changed since NSteps {ns}"


def test_kill_stress_100(tmp_path):
    """50 kills at random moments and 50 at the first snapshot, each checked with h5py and VTK
    and resumed to the end (scripts/kill_stress.py)."""
    for mode, kills, seed in (("random", 50, 101), ("first", 50, 102)):
        rc = kill_stress.main(["--kills", str(kills), "--mode", mode, "--seed", str(seed), "--bin", str(BIN),
                               "--work", str(tmp_path / mode), "--quiet"])
        assert rc == 0, f"kill_stress --mode {mode}: failures (see the output above)"


def test_kill_before_replace_keeps_old_file(tmp_path):
    """--overwrite: a kill before the new file replaces the old one leaves the old one untouched."""
    rc = kill_stress.main(["--kills", "10", "--mode", "overwrite", "--seed", "103", "--bin", str(BIN),
                           "--work", str(tmp_path), "--quiet"])
    assert rc == 0
