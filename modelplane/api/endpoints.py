"""Where a ModelEndpoint may send the fleet gateway: never inside (issue 23).

A ModelEndpoint's URL becomes a backend of the fleet gateway, which then proxies any caller's
request there, from inside the gateway's cluster. `endpoint_host_problem(host, allow_private)` says
why a URL's host must not be one (or None), from the host as written (no DNS lookup: validation is
pure and offline; a public name that resolves inside is the operator's to prevent, docs/security.md):
- refused always: loopback and unspecified addresses, `localhost`; link-local addresses
  (169.254.0.0/16 with the clouds' metadata service, fe80::/10); the clouds' metadata names; a
  name of the cluster's own service domain (`*.svc`, `*.cluster.local`, `kubernetes...`) or a
  single-label name (the cluster's DNS search list would resolve it to a Service);
- refused unless the ModelEndpoint sets `allowPrivateNetwork: true`: private, shared (CGNAT) and
  unique-local addresses and `*.internal` names, which are usually other machines of the operator.
IPv4-mapped IPv6 addresses are read as their IPv4 address; a host whose last label is numeric (the
octal, hex and dotless spellings of an address) is refused. The fleet gateway's own hostname is
refused across objects (`refs.endpoint_loops`).
"""

from __future__ import annotations

import ipaddress

METADATA_NAMES = frozenset({"metadata", "metadata.google.internal", "metadata.goog", "instance-data",
                            "instance-data.ec2.internal", "metadata.azure.com"})
CLUSTER_SUFFIXES = (".svc", ".cluster.local", ".svc.cluster.local")
PRIVATE_SUFFIXES = (".internal", ".local", ".lan", ".home.arpa")
_SHARED = ipaddress.ip_network("100.64.0.0/10")


def endpoint_host_problem(host: str, allow_private: bool) -> str | None:
    name = host.lower().rstrip(".")
    address = _address(name)
    if address is not None:
        return _address_problem(address, allow_private)
    last = name.rsplit(".", 1)[-1]
    if last.isdigit() or last.startswith("0x"):
        return (f"{host} is neither an IP address nor a DNS name (resolvers read octal, hex and dotless forms "
                "of an address); write the address in dotted decimal or the DNS name")
    if name == "localhost" or name.endswith(".localhost"):
        return f"{host} is this machine (loopback): the gateway would call itself"
    if name in METADATA_NAMES:
        return f"{host} is a cloud metadata service: it hands out the node's credentials"
    if name.startswith("kubernetes") and (name.count(".") <= 1 or name.endswith(CLUSTER_SUFFIXES)) \
            or name.endswith(CLUSTER_SUFFIXES):
        return f"{host} is a name of the cluster's own service domain: the gateway would route into the cluster"
    if "." not in name:
        return (f"{host} has no domain: the cluster's DNS search list would resolve it to a Service of the "
                "gateway's cluster; write the endpoint's full DNS name")
    if name.endswith(PRIVATE_SUFFIXES) and not allow_private:
        return f"{host} is a private DNS name; set allowPrivateNetwork: true if the gateway is meant to reach it"
    return None


def _address(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        address = ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _address_problem(address: ipaddress.IPv4Address | ipaddress.IPv6Address, allow_private: bool) -> str | None:
    if address.is_loopback or address.is_unspecified:
        return f"{address} is this machine (loopback or unspecified): the gateway would call itself"
    if address.is_link_local:
        return f"{address} is link-local (the clouds' metadata service lives at 169.254.169.254)"
    if address.is_multicast or address.is_reserved:
        return f"{address} is a multicast or reserved address, not an endpoint"
    private = address.is_private or (isinstance(address, ipaddress.IPv4Address) and address in _SHARED)
    if private and not allow_private:
        return (f"{address} is a private address; set allowPrivateNetwork: true if the gateway is meant to reach "
                "it (an on-premises endpoint)")
    return None
