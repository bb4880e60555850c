"""The one table of addresses net.http refuses (SPEC §14): every address of every refused
network, in every IPv6 spelling that reaches it, is refused; public addresses are not."""

from __future__ import annotations

import ipaddress

from hypothesis import given
from hypothesis import strategies as st

from forgec.host.addresses import REFUSED, refused


@st.composite
def refused_addresses(draw: st.DrawFn) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    network, _ = draw(st.sampled_from(REFUSED))
    offset = draw(st.integers(0, network.num_addresses - 1))
    return network.network_address + offset


def _embeddings(ip: ipaddress.IPv4Address) -> list[ipaddress.IPv6Address]:
    n = int(ip)
    return [
        ipaddress.IPv6Address((0xFFFF << 32) | n),  # ::ffff:a.b.c.d
        ipaddress.IPv6Address(n) if n > 1 else ipaddress.IPv6Address((0xFFFF << 32) | n),
        ipaddress.IPv6Address((0x0064FF9B << 96) | n),  # 64:ff9b::a.b.c.d
        ipaddress.IPv6Address((0x2002 << 112) | (n << 80)),  # 6to4 2002:aabb:ccdd::
    ]


@given(refused_addresses())
def test_every_address_of_a_refused_network_is_refused(ip) -> None:
    assert refused(ip) is not None
    assert refused(str(ip)) is not None
    if isinstance(ip, ipaddress.IPv4Address):
        for form in _embeddings(ip):
            assert refused(form) is not None, form


@given(st.integers(0, 2**32 - 1))
def test_a_public_ipv4_address_is_allowed_in_every_spelling(n: int) -> None:
    ip = ipaddress.IPv4Address(n)
    if any(ip in net for net, _ in REFUSED if net.version == 4) or not ip.is_global:
        assert refused(ip) is not None
        return
    assert refused(ip) is None
    assert refused(ipaddress.IPv6Address((0xFFFF << 32) | n)) is None


def test_named_cases() -> None:
    for address, why in (
        ("169.254.169.254", "metadata"),
        ("100.64.0.1", "carrier-grade"),
        ("fd00::1", "unique-local"),
        ("fe80::1%eth0", "link-local"),
        ("::ffff:10.0.0.1", "private"),
        ("::", "unspecified"),
        ("ff02::1", "multicast"),
        ("0.0.0.0", "unspecified"),
    ):
        reason = refused(address)
        assert reason is not None and why in reason, (address, reason)
    for public in ("93.184.216.34", "2606:4700::1111", "1.1.1.1"):
        assert refused(public) is None
