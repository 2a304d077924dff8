"""infra/: the cluster configs parse, pass Ray's own schema, and agree with each other and the package.

They cannot run here (no cloud, no Kubernetes, no Docker); what can be
checked is that they are well formed for this Ray and that the versions,
image and entry points are the same everywhere.
"""

from __future__ import annotations

import copy
import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
INFRA = ROOT / "infra"


def dockerfile() -> str:
    return (INFRA / "Dockerfile").read_text()


def base_image() -> tuple[str, str]:
    """(Ray version, Python tag) of the Dockerfile's FROM rayproject/ray:<ray>-py<NN>."""
    m = re.search(r"^FROM rayproject/ray:(\d+\.\d+\.\d+)-py(\d+)\s*$", dockerfile(), re.MULTILINE)
    assert m, "infra/Dockerfile must start FROM rayproject/ray:<version>-py<NN>"
    return m.group(1), m.group(2)


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_ray_and_python_versions_agree_everywhere():
    from packaging.requirements import Requirement

    ray_version, py = base_image()
    # The pip line pins the same Ray, so installing the package cannot swap it.
    assert f'"ray[default]=={ray_version}"' in dockerfile()
    assert f"ray.__version__ == '{ray_version}'" in dockerfile()
    kuberay = yaml.safe_load((INFRA / "kuberay-raycluster.yaml").read_text())
    assert kuberay["spec"]["rayVersion"] == ray_version
    # The pin satisfies the package's own requirement on Ray, and the Python it needs.
    reqs = {Requirement(r).name: Requirement(r) for r in pyproject()["project"]["dependencies"]}
    assert reqs["ray"].specifier.contains(ray_version)
    assert "default" in reqs["ray"].extras
    py_version = f"{py[0]}.{py[1:]}"
    from packaging.specifiers import SpecifierSet

    assert SpecifierSet(pyproject()["project"]["requires-python"]).contains(py_version + ".0")
    # The docs tell the driver to install the same versions.
    readme = (INFRA / "README.md").read_text()
    assert f'"ray[default]=={ray_version}"' in readme and f"python{py_version}" in readme


def test_image_installs_every_package_of_the_project():
    text = dockerfile()
    packages = pyproject()["tool"]["setuptools"]["packages"]
    for top in sorted({p.split(".")[0] for p in packages}):
        assert re.search(rf"^COPY .*\b{top}\b", text, re.MULTILINE), f"the image does not copy {top}/"
        assert top in text.split("RUN pip install", 1)[1], f"the image does not check that {top} imports"
    assert re.search(r"pip install [^\n]*\s\.\s", text), "the image must pip install the package itself"


def test_image_warms_the_numba_cache_it_runs_with(monkeypatch, tmp_path):
    """The image compiles every kernel at build time, after installing the package, into the
    cache folder its ENV names, the folder `acesup warm` itself writes to under that ENV."""
    text = dockerfile()
    m = re.search(r"^ENV NUMBA_CACHE_DIR=(\S+)", text, re.MULTILINE)
    assert m, "the image must set NUMBA_CACHE_DIR to a folder the ray user can write"
    install = text.index("RUN pip install")
    assert re.search(r"^RUN acesup warm\s*$", text[install:], re.MULTILINE), "the image must run `acesup warm` after pip install"
    from pipeline.warm import stamp_path

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba-cache"))
    assert stamp_path(("standard", "solver"), engine="e").is_relative_to(tmp_path / "numba-cache")


def test_same_image_on_every_node():
    version = pyproject()["project"]["version"]
    launcher = yaml.safe_load((INFRA / "ray-cluster.yaml").read_text())
    kuberay = yaml.safe_load((INFRA / "kuberay-raycluster.yaml").read_text())
    images = {launcher["docker"]["image"]}
    images.add(kuberay["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["image"])
    for group in kuberay["spec"]["workerGroupSpecs"]:
        images.update(c["image"] for c in group["template"]["spec"]["containers"])
    assert images == {f"REGISTRY/acesup:{version}"}
    assert f"-t REGISTRY/acesup:{version}" in dockerfile()
    assert f"REGISTRY/acesup:{version}" in (INFRA / "README.md").read_text()


def test_cluster_launcher_config_passes_rays_schema():
    from ray.autoscaler._private.util import prepare_config, validate_config

    raw = yaml.safe_load((INFRA / "ray-cluster.yaml").read_text())
    config = prepare_config(copy.deepcopy(raw))
    validate_config(config)
    assert config["head_node_type"] in config["available_node_types"]
    head = config["available_node_types"][config["head_node_type"]]
    assert head["resources"] == {"CPU": 0}, "batches belong on the workers, the head runs the driver"
    workers = [t for name, t in config["available_node_types"].items() if name != config["head_node_type"]]
    assert workers and all(t["max_workers"] >= 1 for t in workers)
    assert any("ray start --head" in c for c in config["head_start_ray_commands"])
    assert any("ray start --address=$RAY_HEAD_IP:6379" in c for c in config["worker_start_ray_commands"])


def test_kuberay_manifest_shape():
    doc = yaml.safe_load((INFRA / "kuberay-raycluster.yaml").read_text())
    assert doc["apiVersion"] == "ray.io/v1" and doc["kind"] == "RayCluster"
    spec = doc["spec"]
    head = spec["headGroupSpec"]
    assert head["rayStartParams"]["num-cpus"] == "0"
    (head_container,) = head["template"]["spec"]["containers"]
    assert {p["containerPort"] for p in head_container["ports"]} >= {6379, 8265, 10001}
    for group in spec["workerGroupSpecs"]:
        assert 0 <= group["minReplicas"] <= group["replicas"] <= group["maxReplicas"]
        for c in group["template"]["spec"]["containers"]:
            # Ray takes its CPU count from the limit: requests and limits must agree.
            assert c["resources"]["requests"]["cpu"] == c["resources"]["limits"]["cpu"]
            env = {e["name"]: e["value"] for e in c["env"]}
            assert env["NUMBA_CACHE_DIR"].startswith("/tmp")


def test_infra_readme_commands_use_the_real_entry_points():
    readme = (INFRA / "README.md").read_text()
    from pipeline.cli import build_parser

    parser = build_parser()
    for line in readme.splitlines():
        line = line.strip().rstrip("\\").strip()
        if line.startswith("acesup "):
            argv = line.split()[1:]
            # Every acesup command line in the docs parses with the real command line.
            args = parser.parse_args(argv)
            assert args.command in ("nightly", "serve")
    assert "--ray-address auto" in readme and "s3://" in readme
