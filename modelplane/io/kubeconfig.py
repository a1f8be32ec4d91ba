"""A Kubernetes client from a kubeconfig, with errors that never quote the kubeconfig.

A kubeconfig holds credentials (tokens, client keys), and the errors of its readers quote it: a YAML
error shows the line it stopped at, the `kubernetes` client names values. `client_from_text` (a
kubeconfig held in stack config) and `client_from_file` (the CLI's `--kubeconfig` or the default)
turn every failure into `KubeconfigError`, whose message says where (line and column) and what kind
of problem, never any of the text.
"""

from __future__ import annotations

import os
from typing import Any

import yaml
from kubernetes import client, config


class KubeconfigError(Exception):
    """A kubeconfig that cannot be used; the message quotes none of it."""


def client_from_text(text: str) -> client.ApiClient:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise KubeconfigError(f"is not YAML{_where(error)}") from None
    return _client(lambda: config.new_client_from_config_dict(data))


def client_from_file(path: str | None, context: str | None) -> client.ApiClient:
    if path is not None and not os.path.isfile(path):
        raise KubeconfigError("cannot be read: no such file")
    try:
        return _client(lambda: config.new_client_from_config(config_file=path, context=context))
    except OSError as error:
        raise KubeconfigError(f"cannot be read: {error.strerror}") from None


def _client(make: Any) -> client.ApiClient:
    try:
        return make()  # type: ignore[no-any-return]
    except OSError:
        raise
    except yaml.YAMLError as error:
        raise KubeconfigError(f"is not YAML{_where(error)}") from None
    except config.ConfigException:
        raise KubeconfigError("names no usable cluster, user and context (check current-context, clusters, users "
                              "and contexts)") from None
    except (TypeError, AttributeError, ValueError, KeyError):
        raise KubeconfigError("is not a kubeconfig: clusters, users and contexts must be lists of named "
                              "entries") from None


def _where(error: yaml.YAMLError) -> str:
    mark = getattr(error, "problem_mark", None)
    return f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
