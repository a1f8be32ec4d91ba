"""Cost per hour: the pricing field's validation, and what a placement costs per deployment, cluster and fleet."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest
from pydantic import ValidationError

from modelplane.api import Fleet, InferenceClass
from modelplane.scheduling import place
from modelplane.scheduling.cost import Cost, placement_cost, priced
from tests.builders import API, cluster, deployment, exclusive_pool, fleet, gang, gpu, pool, workloads


def priced_class(name: str, price: str | None, currency: str | None = None) -> InferenceClass:
    spec: dict[str, Any] = {"devices": [gpu()]}
    if price is not None:
        spec["pricing"] = {"perNodeHour": price, **({"currency": currency} if currency else {})}
    return InferenceClass.model_validate({"apiVersion": API, "kind": "InferenceClass", "metadata": {"name": name},
                                          "spec": spec})


@pytest.mark.parametrize("pricing, message", [
    ({"perNodeHour": 3.67}, 'write the price as a decimal string, perNodeHour: "3.67"'),
    ({"perNodeHour": "-1"}, "'-1' is not a price: use a decimal string"),
    ({"perNodeHour": "1e3"}, "'1e3' is not a price"),
    ({"perNodeHour": "1.1234567"}, "at most 9 digits before and 6 after the point"),
    ({"perNodeHour": "1", "currency": "usd"}, "'usd' is not an ISO 4217 currency code"),
    ({"currency": "USD"}, "perNodeHour\n  Field required"),
])
def test_a_bad_price_says_what_is_allowed(pricing: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as error:
        InferenceClass.model_validate({"apiVersion": API, "kind": "InferenceClass", "metadata": {"name": "c"},
                                       "spec": {"devices": [gpu()], "pricing": pricing}})
    assert message in str(error.value)


def test_currency_defaults_to_usd() -> None:
    assert priced_class("c", "40.9664").spec.pricing.currency == "USD"


@dataclass(frozen=True)
class Case:
    name: str
    fleet: Fleet
    replicas: int
    fleet_cost: str
    idle: str
    deployment: str


CASES = [
    Case("a deployment costs its nodes x the pool's price; an autoscaling pool costs what is used",
         fleet(cluster("a", exclusive_pool("gpu", cls="p", nodes=0, max_nodes=4)), classes=(priced_class("p", "2.50"),)),
         replicas=2, fleet_cost="5.00 USD/h", idle="-", deployment="5.00 USD/h"),
    Case("the free nodes of a fixed-size pool are idle and still paid",
         fleet(cluster("a", exclusive_pool("gpu", cls="p", nodes=3)), classes=(priced_class("p", "2.50"),)),
         replicas=1, fleet_cost="7.50 USD/h", idle="5.00 USD/h", deployment="2.50 USD/h"),
    Case("a class without a price is unpriced, never zero",
         fleet(cluster("a", exclusive_pool("gpu", cls="free", nodes=2)), classes=(priced_class("free", None),)),
         replicas=1, fleet_cost="2 unpriced node(s)", idle="1 unpriced node(s)", deployment="1 unpriced node(s)"),
    Case("currencies are kept apart",
         fleet(cluster("a", exclusive_pool("x", cls="usd", nodes=1)), cluster("b", exclusive_pool("y", cls="eur", nodes=1)),
               classes=(priced_class("usd", "1.25"), priced_class("eur", "2", "EUR"))),
         replicas=2, fleet_cost="2.00 EUR/h + 1.25 USD/h", idle="-", deployment="2.00 EUR/h + 1.25 USD/h"),
    Case("a short deployment with nothing placed costs nothing",
         fleet(cluster("a", exclusive_pool("gpu", cls="p", nodes=0, max_nodes=1)), classes=(priced_class("p", "2.50"),)),
         replicas=0, fleet_cost="-", idle="-", deployment="-"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_placement_cost(case: Case) -> None:
    engine = gang(workers=1) if case.replicas == 0 else None  # a gang of two nodes cannot fit one node
    deployed = deployment("d", *([engine] if engine else []), replicas=max(case.replicas, 1))
    cost = placement_cost(case.fleet, place(case.fleet, workloads(deployed)))
    assert (cost.fleet.text(), cost.idle_total.text(), cost.deployments["ml/d"].text()) == (
        case.fleet_cost, case.idle, case.deployment)


def test_the_fleet_is_the_sum_of_its_clusters_exactly() -> None:
    prices = fleet(cluster("a", pool("gpu", cls="p", nodes=3)), cluster("b", pool("gpu", cls="p", nodes=3)),
                   classes=(priced_class("p", "0.333333"),))
    cost = placement_cost(prices, place(prices, workloads(deployment("d", replicas=2))))
    assert cost.fleet.amounts == {"USD": Decimal("1.999998")}, "six nodes at 0.333333, no float rounding"
    assert cost.fleet.to_json() == {"perHour": {"USD": "1.999998"}, "unpricedNodes": 0}


def test_cost_is_shown_only_when_some_class_has_a_price() -> None:
    assert not priced(fleet(cluster("a")))
    assert priced(fleet(cluster("a"), classes=(priced_class("h100", None), priced_class("p", "1"))))


def test_a_signed_difference_reads_as_a_change() -> None:
    change = Cost({"USD": Decimal("5")}, 1) - Cost({"USD": Decimal("7.5")}, 3)
    assert change.text(signed=True) == "-2.50 USD/h, -2 unpriced node(s)"
