"""The download Job installs nothing at run time: its image has `hf` baked in, every package pinned by
hash (images/downloader), and the image is a setting (issue 23). What this does not check: that the
image builds and runs (no container registry or builder here; docs/security.md says so)."""

from __future__ import annotations

import re
from pathlib import Path

from modelplane.api import load
from modelplane.compose import Settings, render
from modelplane.scheduling import place

ROOT = Path(__file__).resolve().parents[2]
IMAGE = ROOT / "images" / "downloader"


def download_jobs(settings: Settings) -> list[dict]:
    manifests = load([ROOT / "examples" / "kimi-k2"])
    out = render(manifests, place(manifests.fleet, manifests.workloads), settings)
    return [m for ms in out.clusters.values() for m in ms if m["kind"] == "Job"]


def test_the_job_runs_hf_from_its_image_and_installs_nothing() -> None:
    jobs = download_jobs(Settings())
    assert jobs
    for job in jobs:
        [container] = job["spec"]["template"]["spec"]["containers"]
        script = container["command"][-1]
        assert "hf download" in script
        assert not re.search(r"\b(pip|pip3|uv|apt-get|apk|curl|wget)\b", script), script
        assert [e["name"] for e in container["env"]][:2] == ["REPO", "REVISION"]


def test_the_image_is_a_setting_and_the_default_can_never_be_pulled_from_someone_elses_registry() -> None:
    assert Settings().downloader_image.split("/")[0].endswith(".invalid"), "RFC 2606: never resolves"
    pinned = "registry.example.com/hf-downloader@sha256:" + "0" * 64
    assert {c["image"] for job in download_jobs(Settings(downloader_image=pinned))
            for c in job["spec"]["template"]["spec"]["containers"]} == {pinned}


def test_the_image_installs_only_hash_pinned_wheels_of_the_pinned_huggingface_hub() -> None:
    dockerfile = (IMAGE / "Dockerfile").read_text()
    assert "--require-hashes" in dockerfile and "--only-binary=:all:" in dockerfile
    requirements = (IMAGE / "requirements.txt").read_text()
    pins = re.findall(r"^([a-z0-9-]+)==(\S+) \\$", requirements, re.MULTILINE)
    assert ("huggingface-hub", Settings().huggingface_hub_version) in pins
    blocks = re.split(r"^(?=[a-z0-9-]+==)", requirements.split("\n\n")[0], flags=re.MULTILINE)[1:]
    assert len(blocks) == len(pins)
    assert all(re.search(r"--hash=sha256:[0-9a-f]{64}", block) for block in blocks), "every package has a hash"
