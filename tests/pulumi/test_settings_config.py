"""Stack config overrides of `compose.Settings` (`pulumi.config.settings`): the download Job's image, the one
that runs beside the Hugging Face token, is taken only pinned by digest (issue 23: "an image with the tool
baked in (pinned by digest, overridable)"). Digest syntax: the OCI image spec's `algorithm:encoded`, sha256
with 64 lowercase hex digits."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

from modelplane.compose import Settings
from modelplane.pulumi.config import settings

DIGEST = "sha256:" + "0123456789abcdef" * 4


class Config:
    """The one call `settings` makes of a `pulumi.Config`."""

    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str) -> str | None:
        return self.values.get(key)


def configured(values: dict[str, str]) -> Settings:
    config: Any = Config(values)
    return settings(config)


@pytest.mark.parametrize("image", [f"registry.example.com/hf-downloader@{DIGEST}",
                                   f"registry.example.com:5000/team/hf-downloader:2.4.0@{DIGEST}"])
def test_a_downloader_image_pinned_by_digest_is_taken(image: str) -> None:
    assert configured({"downloaderImage": image}).downloader_image == image


@pytest.mark.parametrize("image", [
    "registry.example.com/hf-downloader:2.4.0",
    "registry.example.com/hf-downloader",
    f"registry.example.com/hf-downloader@{DIGEST[:-1]}",
    f"registry.example.com/hf-downloader@{DIGEST.upper()}",
    f"registry.example.com/hf-downloader@{DIGEST}\n",
    f"@{DIGEST}",
])
def test_a_downloader_image_by_tag_or_malformed_digest_is_refused_by_name(image: str) -> None:
    with pytest.raises(pulumi.RunError) as raised:
        configured({"downloaderImage": image})
    assert str(raised.value).startswith("modelplane:downloaderImage must name its image by digest")
    assert "\n" not in str(raised.value), "control characters are escaped"


def test_unset_keeps_the_default_and_other_images_may_use_tags() -> None:
    chosen = configured({"endpointPickerImage": "registry.example.com/epp:v0.3.2"})
    assert (chosen.downloader_image, chosen.endpoint_picker_image) == (
        Settings().downloader_image, "registry.example.com/epp:v0.3.2")
