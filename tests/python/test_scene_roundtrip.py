"""The resolved scene that --check prints (and every output file stores), without its "derived"
and "provenance" parts, is itself a valid scene that resolves to the same values
(docs/scene-format.md): for every shipped scene, and for a run to t = 0. Its derived keys
(`every_steps` of a gauge, `file_fnv1a` of a mesh or motion table) are checked when read back:
a changed file is refused."""
import json
import pathlib
import shutil
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
SCENES = sorted(p.name for p in (REPO / "scenes").glob("*.json"))


def check(sphsim_bin, scene, *sets, rc=0):
    p = subprocess.run([str(sphsim_bin), str(scene), "--check", "-q", *[a for s in sets for a in ("--set", s)]],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == rc, p.stderr[-800:]
    return json.loads(p.stdout)["scene"] if rc == 0 else p.stderr


@pytest.fixture(scope="module")
def scenes(tmp_path_factory):
    """A copy of scenes/ (meshes and motion tables included), so that the scenes written back sit
    beside the files they name."""
    d = tmp_path_factory.mktemp("roundtrip") / "scenes"
    shutil.copytree(REPO / "scenes", d)
    return d


@pytest.mark.parametrize("name", SCENES)
def test_resolved_scene_resolves_to_itself(sphsim_bin, scenes, name):
    first = check(sphsim_bin, scenes / name)
    again = dict(first)
    again.pop("derived"), again.pop("provenance")
    back = scenes / ("back_" + name)
    back.write_text(json.dumps(again))
    second = check(sphsim_bin, back)
    for d in (first, second):
        d.pop("provenance")
        d["name"] = None  # a scene without a name takes its file's
    assert second == first


def test_a_run_to_time_zero_resolves_to_itself(sphsim_bin, scenes):
    first = check(sphsim_bin, scenes / "dam_break_2d.json", "time.end=0")
    again = {k: v for k, v in first.items() if k not in ("derived", "provenance")}
    back = scenes / "back_t0.json"
    back.write_text(json.dumps(again))
    assert check(sphsim_bin, back)["output"] == first["output"]


def test_derived_keys_are_checked(sphsim_bin, scenes):
    scene = check(sphsim_bin, scenes / "wavemaker_2d.json")
    scene.pop("derived"), scene.pop("provenance")
    table = scene["objects"][0]["motion"][0]
    assert len(table["file_fnv1a"]) == 16
    bad = dict(scene, objects=[dict(scene["objects"][0], motion=[dict(table, file_fnv1a="0" * 16)])])
    path = scenes / "back_bad_hash.json"
    path.write_text(json.dumps(bad))
    err = check(sphsim_bin, path, rc=3)
    assert "objects[0].motion[0].file_fnv1a" in err and "is not the file the scene was resolved with" in err
    gauges = [dict(g, every_steps=g["every_steps"] + 1) if g["type"] == "height" else g for g in scene["gauges"]]
    path.write_text(json.dumps(dict(scene, gauges=gauges)))
    err = check(sphsim_bin, path, rc=3)
    assert ".every_steps: " in err and "every_steps is derived: leave it out" in err
