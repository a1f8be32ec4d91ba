"""The cloud SDKs warn about their own deprecated classes when imported; that is not ours to fix."""

import pytest


def pytest_configure(config: pytest.Config) -> None:
    for module in ("pulumi_aws", "pulumi_gcp"):
        config.addinivalue_line("filterwarnings", f"ignore::DeprecationWarning:{module}.*")
