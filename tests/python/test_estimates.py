"""sphsim --check's estimates against what a run of the same scene takes: the device memory (the
summary line's device_bytes, the sum of the run's device buffers) within 5 %, with and without
neighbour lists, for fluids and spheres; the bytes per sphere of the box of the speed comparison
with LAMMPS; and the output file's size (the file a run writes) within 5 %, for two scenes and two
sets of output.fields; and the host estimate's room for particle mode's contact states."""
import importlib.util
import json
import subprocess

import pytest

ROOT_SCENES = {
    "dam_break_2d": ("scenes/dam_break_2d.json", []),
    "dam_break_2d_walk": ("scenes/dam_break_2d.json", ["--set", "grid.neighbour_list=off"]),
    "dam_break_3d": ("scenes/dam_break_3d.json", ["--set", "fluid.particle_count=20000"]),
    "spheres_3d": ("scenes/spheres_3d.json", []),
}


def sphsim(sphsim_bin, *args):
    p = subprocess.run([str(sphsim_bin), *map(str, args)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    return p


@pytest.mark.parametrize("name", sorted(ROOT_SCENES))
def test_device_memory_estimate(sphsim_bin, repo_root, tmp_path, name):
    scene, sets = ROOT_SCENES[name]
    scene = repo_root / scene
    check = json.loads(sphsim(sphsim_bin, scene, *sets, "--check").stdout)["check"]
    # a few steps: the contact solver takes its scratch at the first
    end = 3 * check["dt_s"]
    run = sphsim(sphsim_bin, scene, *sets, "--set", f"time.end={end:.9g}", "-o", tmp_path / "e.h5", "--quiet")
    summary = json.loads(run.stdout.strip().splitlines()[-1])
    # the lists count where the run holds them (on this device "auto" always does at these sizes), the
    # contact geometry cache where it is on (on this CPU device, for spheres)
    assert summary.get("contact_cache", False) == ("spheres" in name)
    want = check["estimated_device_bytes"] + (check["estimated_list_bytes"] if summary.get("neighbour_lists") else 0) + \
        (check["estimated_cache_bytes"] if summary.get("contact_cache") else 0)
    assert summary["device_bytes"] == pytest.approx(want, rel=0.05), (summary["device_bytes"], want)
    assert ("grid.neighbour_list=off" in sets) == (not summary.get("neighbour_lists", False)) or "spheres" in name


# Device bytes per sphere of the box below: at most the 200 B the granular issue asks for
# (docs/contacts.md, "Memory": 200.0 B).
BOX_BYTES_PER_SPHERE = 200.0


def test_sphere_box_memory_per_sphere(sphsim_bin, repo_root, tmp_path):
    """The 59 319-sphere box of the comparison with LAMMPS (scripts/granular/bench_gran.py) in at
    most BOX_BYTES_PER_SPHERE of device memory per sphere, estimated and as the run allocates
    it (within 5 % of each other), as GPUs run it; the contact geometry cache that CPUs add
    takes 48 B a slot, 384 B a sphere, on top (docs/contacts.md, "Geometry cache")."""
    spec = importlib.util.spec_from_file_location("bench_gran", repo_root / "scripts" / "granular" / "bench_gran.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    path = tmp_path / "box.json"
    path.write_text(json.dumps(bench.scene(0.05)))
    check = json.loads(sphsim(sphsim_bin, path, "--check").stdout)["check"]
    n = check["particles"]
    assert n == 39 ** 3
    assert check["estimated_device_bytes"] / n <= BOX_BYTES_PER_SPHERE, check["estimated_device_bytes"] / n
    end = 2 * check["dt_s"]
    used = {}
    for cache in (0, 1):
        run = sphsim(sphsim_bin, path, "--set", f"time.end={end:.9g}", "-o", tmp_path / f"box{cache}.h5", "--quiet",
                     "--tune", f"contact_cache={cache}")
        summary = json.loads(run.stdout.strip().splitlines()[-1])
        assert summary.get("contact_cache", False) == bool(cache)
        used[cache] = summary["device_bytes"]
    assert used[0] == pytest.approx(check["estimated_device_bytes"], rel=0.05)
    assert used[0] / n <= BOX_BYTES_PER_SPHERE, used[0] / n
    # the cache: 3 float4 a slot, 384 B a sphere, for one float4 in all without it
    assert check["estimated_cache_bytes"] == n * 8 * 48
    assert used[1] - used[0] == check["estimated_cache_bytes"] - 16


OUTPUT_CASES = {
    "dam_break_2d_all": ("scenes/dam_break_2d.json", ["--set", "time.end=0.02", "--set", "output.interval=0.002"]),
    "dam_break_2d_positions": ("scenes/dam_break_2d.json", ["--set", "time.end=0.02", "--set", "output.interval=0.002",
                                                            "--set", 'output.fields=["position"]']),
    "spheres_2d_all": ("scenes/spheres_2d.json", ["--set", "time.end=0.05", "--set", "output.interval=0.005"]),
    # objects: their surfaces go to /sphsim/geometry (a primitive's tessellation, a mesh as it is)
    "wedge_2d": ("scenes/dam_break_wedge_2d.json", ["--set", "time.end=0.02"]),
    "pillar_3d": ("scenes/dam_break_pillar_3d.json", ["--set", "time.end=0.02"]),
    "spheres_2d_positions": ("scenes/spheres_2d.json", ["--set", "time.end=0.05", "--set", "output.interval=0.005",
                                                        "--set", 'output.fields=["position"]']),
}


@pytest.mark.parametrize("name", sorted(OUTPUT_CASES))
def test_output_size_estimate(sphsim_bin, repo_root, tmp_path, name):
    """--check's estimated_output_bytes against the size of the file a run writes: the file's
    layout is allocated in full at creation, so the two agree within 5 % and 16 KB (a few KB of
    metadata), and the estimate follows output.fields."""
    scene, sets = OUTPUT_CASES[name]
    scene = repo_root / scene
    check = json.loads(sphsim(sphsim_bin, scene, *sets, "--check").stdout)["check"]
    out = tmp_path / "o.h5"
    sphsim(sphsim_bin, scene, *sets, "-o", out, "--quiet")
    size = out.stat().st_size
    print(f"{name}: estimated {check['estimated_output_bytes']}, file {size} bytes")
    assert check["estimated_output_bytes"] == pytest.approx(size, rel=0.05), (check["estimated_output_bytes"], size)
    assert abs(check["estimated_output_bytes"] - size) < 16384, (check["estimated_output_bytes"], size)


def test_output_size_estimate_follows_fields(sphsim_bin, repo_root):
    scene = repo_root / "scenes/dam_break_2d.json"
    full = json.loads(sphsim(sphsim_bin, scene, "--check").stdout)["check"]["estimated_output_bytes"]
    pos = json.loads(sphsim(sphsim_bin, scene, "--check", "--set", 'output.fields=["position"]').stdout)
    # position, velocity, id and type are always written (29 B a particle a snapshot of 41)
    assert pos["check"]["estimated_output_bytes"] < 0.8 * full


@pytest.mark.parametrize("scene", ["scenes/spheres_3d.json", "scenes/spheres_2d.json"])
def test_host_estimate_holds_the_contact_states(sphsim_bin, repo_root, tmp_path, scene):
    """Particle mode: the host estimate makes room for a contact state (what each snapshot
    stores for --resume, /sphsim/restart/solver_state_bytes) in each of the two staging buffers
    the writer may hold at once, on top of the snapshot's own arrays."""
    import h5py
    scene = repo_root / scene
    check = json.loads(sphsim(sphsim_bin, scene, "--check").stdout)["check"]
    out = tmp_path / "s.h5"
    sphsim(sphsim_bin, scene, "--set", "time.end=0", "-o", out, "--quiet")
    with h5py.File(out, "r") as f:
        state = int(f["sphsim/restart/solver_state_bytes"][0])
        rows = sum(f["VTKHDF/PointData"][k][0:check["particles"]].nbytes for k in f["VTKHDF/PointData"]) + \
            f["VTKHDF/Points"][0:check["particles"]].nbytes
    assert state >= 76 * check["particles"]  # 3 words a slot, the angular velocity
    assert check["estimated_host_bytes"] >= 2 * state + rows, (check["estimated_host_bytes"], state, rows)
