"""Issue 15, files mode: the real program (`__main__.py`) reads credentials sets and kubeconfig
Secrets from stack config (`modelplane.pulumi.config`), under the mock engine of test_clouds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane.pulumi.names import config_path
from tests.pulumi.harness import dev_config, is_secret, run_program, unwrap
from tests.pulumi.test_clouds import BYO_KUBECONFIG, EXAMPLE, CloudEngine

SECRET_PATH = "'modelplane:secrets.modelplane-system.byo-cluster-kubeconfig.kubeconfig'"


def more_clouds(secrets: Any = None, credentials: Any = None, manifests: str = str(EXAMPLE)) -> tuple[dict[str, str], list[str]]:
    """The dev stack's config pointed at examples/more-clouds, with these secret trees."""
    if secrets is None:
        secrets = {"modelplane-system": {"byo-cluster-kubeconfig": {"kubeconfig": BYO_KUBECONFIG}}}
    if credentials is None:
        credentials = {"azure-prod": {"subscriptionId": "sub-0001", "tenantId": "tenant-0001"}}
    overrides: dict[str, Any] = {"modelplane:manifests": [manifests], "modelplane:onpremKubeconfig": None,
                                 "modelplane:secrets": {"secure": json.dumps(secrets)}}
    if credentials is not False:
        overrides["modelplane:credentials"] = {"secure": json.dumps(credentials)}
    return dev_config(**overrides)


def test_an_existing_clusters_kubeconfig_secret_is_read_from_modelplane_secrets() -> None:
    run = run_program(CloudEngine(preview=True), more_clouds())
    kubeconfig = run.engine.named("modelplane:byo-us-east-existing-k8s").inputs["kubeconfig"]
    assert is_secret(kubeconfig) and unwrap(kubeconfig) == BYO_KUBECONFIG


def test_a_missing_kubeconfig_secret_is_an_error_that_names_the_key_to_set() -> None:
    with pytest.raises(Exception, match=r"InferenceCluster byo-us-east: its kubeconfig Secret 'byo-cluster-kubeconfig' "
                                        r"\(key 'kubeconfig'\) is not in stack config; set it with: pulumi config set "
                                        r"--secret --path " + SECRET_PATH.replace(".", r"\.")):
        run_program(CloudEngine(preview=True), more_clouds(secrets={"ml-team": {}}))


def test_a_credentials_set_becomes_the_settings_of_an_explicit_provider() -> None:
    run = run_program(CloudEngine(preview=True), more_clouds())
    azure = run.engine.named("modelplane:aks-westeurope-aks-azure").inputs
    assert {key: (is_secret(azure[key]), unwrap(azure[key])) for key in ("subscriptionId", "tenantId")} == {
        "subscriptionId": (True, "sub-0001"), "tenantId": (True, "tenant-0001")}


@pytest.mark.parametrize(("credentials", "message"), [
    (False, r"spec.cluster.aks.credentials.name 'azure-prod' names no credentials set; define it in stack config: "
            r"pulumi config set --secret --path 'modelplane:credentials.azure-prod.<setting>' <value>"),
    ({"azure-prod": "sub-0001"}, r"modelplane:credentials must map a credentials set's name -> provider setting -> value"),
], ids=["undefined set", "a set that is not a map"])
def test_bad_credentials_config_is_a_clear_error(credentials: Any, message: str) -> None:
    with pytest.raises(Exception, match=message):
        run_program(CloudEngine(preview=True), more_clouds(credentials=credentials))


def test_an_identity_secret_is_named_in_a_warning_in_files_mode(tmp_path: Path) -> None:
    docs = list(yaml.safe_load_all((EXAMPLE / "fleet.yaml").read_text()))
    byo = next(doc for doc in docs if doc["metadata"]["name"] == "byo-us-east")
    byo["spec"]["cluster"]["existing"]["identitySecretRef"] = {"name": "byo-sa", "key": "credentials.json"}
    (tmp_path / "fleet.yaml").write_text(yaml.safe_dump_all(docs))
    (tmp_path / "model.yaml").write_text((EXAMPLE / "model.yaml").read_text())
    run = run_program(CloudEngine(preview=True), more_clouds(manifests=str(tmp_path)))
    assert any("InferenceCluster byo-us-east: spec.cluster.existing.identitySecretRef is read only with the control "
               "cluster" in line for line in run.logs)


@pytest.mark.parametrize(("parts", "want"), [
    (("secrets", "modelplane-system", "byo", "kubeconfig"), "modelplane:secrets.modelplane-system.byo.kubeconfig"),
    (("secrets", "modelplane-system", "byo-sa", "credentials.json"),
     'modelplane:secrets.modelplane-system.byo-sa["credentials.json"]'),
], ids=["plain", "a key with a dot"])
def test_config_paths_quote_the_parts_pulumi_would_split(parts: tuple[str, ...], want: str) -> None:
    assert config_path("modelplane", *parts) == want
