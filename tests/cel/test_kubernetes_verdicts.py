"""Our verdict on every case of tests/cel/verdicts.py equals Kubernetes' (and each recorded
divergence is still exactly as recorded). tests/e2e/test_cel_api_server.py checks the admission
half of the same table against a real kube-apiserver."""

from __future__ import annotations

import pytest

from modelplane.cel import Device, SelectorError, SelectorEvaluator, check_selector
from tests.cel.verdicts import CASES, DIVERGENCES, Case, Verdict


def our_verdict(case: Case) -> Verdict:
    try:
        check_selector(case.cel)
    except SelectorError:
        return Verdict.REJECTED
    if case.kubernetes is Verdict.ACCEPTED:
        return Verdict.ACCEPTED
    result = SelectorEvaluator().evaluate(case.cel, Device.from_class_device(case.device))
    if result.matched:
        return Verdict.TRUE
    return Verdict.ERROR if result.reason and result.reason.startswith("error:") else Verdict.FALSE


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_we_agree_with_kubernetes(case: Case) -> None:
    assert our_verdict(case) is case.kubernetes, case.source


@pytest.mark.parametrize("case", DIVERGENCES, ids=lambda c: c.name)
def test_recorded_divergences_are_still_as_recorded(case) -> None:
    assert case.kubernetes is not case.ours
    assert our_verdict(case) is case.ours, case.why


def test_the_table_covers_every_verdict() -> None:
    assert {case.kubernetes for case in CASES} == set(Verdict)
    assert len({case.name for case in (*CASES, *DIVERGENCES)}) == len(CASES) + len(DIVERGENCES)
