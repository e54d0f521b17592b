"""Fixtures for sphsim's Python end-to-end tests: the repository root, the built programs,
running a scene given as a dict, ParaView's pvpython under Xvfb, and the reader module."""
import importlib.util
import json
import os
import pathlib
import shutil
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def repo_root():
    return REPO


@pytest.fixture(scope="session")
def sphsim_bin():
    """build/sphsim (built by `make`)."""
    p = REPO / "build" / "sphsim"
    if not p.is_file():
        pytest.fail(f"{p} not found: run `make` first")
    return p


@pytest.fixture(scope="session")
def test_output_bin():
    """build/test_output: the output module's cmocka test, whose writer loop the crash test kills."""
    p = REPO / "build" / "test_output"
    if not p.is_file():
        pytest.fail(f"{p} not found: run `make build/test_output` first")
    return p


def write_scene(directory, scene, name="scene.json"):
    """Write `scene` (a dict, or JSON text) to directory/name; returns the path."""
    path = pathlib.Path(directory) / name
    path.write_text(scene if isinstance(scene, str) else json.dumps(scene, indent=2) + "\n")
    return path


class SceneRun:
    """The result of running sphsim on a scene: paths and the completed process."""

    def __init__(self, scene_path, out, proc):
        self.scene_path = scene_path
        self.out = out
        self.xmf = out.with_suffix(".xmf")
        self.proc = proc
        self.summary = None
        for line in proc.stdout.splitlines():
            if line.startswith("{"):
                try:
                    self.summary = json.loads(line)
                except ValueError:
                    pass


@pytest.fixture(scope="session")
def run_scene(sphsim_bin, tmp_path_factory):
    """run_scene(scene, *args, name="run", expect_rc=0) runs `sphsim scene.json -o out.h5
    --overwrite --quiet *args` in a fresh directory; returns a SceneRun."""

    def run(scene, *args, name="run", expect_rc=0, overwrite=True, timeout=300):
        d = tmp_path_factory.mktemp(name)
        scene_path = write_scene(d, scene)
        out = d / "out.h5"
        cmd = [str(sphsim_bin), str(scene_path), "-o", str(out), "--quiet"]
        if overwrite:
            cmd.append("--overwrite")
        cmd += list(args)
        proc = subprocess.run(cmd, cwd=d, capture_output=True, text=True, timeout=timeout)
        if expect_rc is not None and proc.returncode != expect_rc:
            pytest.fail(f"{' '.join(cmd)} exited {proc.returncode} (expected {expect_rc}):\n"
                        f"stdout: {proc.stdout}\nstderr: {proc.stderr}")
        return SceneRun(scene_path, out, proc)

    return run


@pytest.fixture(scope="session")
def pvpython():
    """pvpython(script, *args) runs a script with ParaView's pvpython under `xvfb-run -a`.
    ParaView (Debian package `paraview`) and Xvfb (`xvfb`) are required: the test fails without
    them, unless SPHSIM_SKIP_PARAVIEW=1 says to skip on purpose."""
    missing = [t for t in ("pvpython", "xvfb-run") if shutil.which(t) is None]
    if missing:
        msg = (f"{' and '.join(missing)} not found: install the Debian packages paraview and xvfb "
               "(scripts/setup.sh --tests)")
        if os.environ.get("SPHSIM_SKIP_PARAVIEW") == "1":
            pytest.skip(msg + " (skipped: SPHSIM_SKIP_PARAVIEW=1)")
        pytest.fail(msg)

    def run(script, *args, timeout=300, cwd=None):
        cmd = ["xvfb-run", "-a", "pvpython", str(script)] + [str(a) for a in args]
        # On a loaded machine VTK's window sometimes fails to connect to the virtual display
        # ("bad X server connection", then SIGABRT), before the script runs: seen in 3 of 8 and
        # 6 of 10 runs with two simulations beside it on 2 cores, never without. That failure is
        # the display's, not the script's, so it is retried (three tries in all).
        for _ in range(3):
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd)
            if proc.returncode == 0 or "bad X server connection" not in proc.stderr:
                break
        return proc

    return run


@pytest.fixture(scope="session")
def reader():
    """The scripts/sphsim_reader.py module."""
    spec = importlib.util.spec_from_file_location("sphsim_reader", REPO / "scripts" / "sphsim_reader.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
