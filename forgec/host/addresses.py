"""Which IP addresses `net.http` may connect to (SPEC §14 "No reach into the machine's own
network"): one table of refused networks, read by the resolver in `http.py`.

An address is refused when it lies in a network of `REFUSED` — loopback, private (RFC 1918 and
the 100.64.0.0/10 carrier-grade NAT range), link-local (169.254.0.0/16 with the cloud metadata
address 169.254.169.254, fe80::/10), unique-local fc00::/7, multicast, unspecified, broadcast,
and the reserved and documentation ranges no public server uses. An IPv6 address that embeds an
IPv4 one (IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible `::a.b.c.d`, NAT64 `64:ff9b::/96`,
6to4 `2002::/16`) is judged by the IPv4 address it reaches. Anything the table does not name but
Python's `ipaddress` does not call global is refused too: an unknown special range is never
taken for a public server (deny by default).
"""

from __future__ import annotations

import ipaddress

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

# (network, what it is), in the order a reason is looked up
REFUSED: tuple[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, str], ...] = tuple(
    (ipaddress.ip_network(net), what)
    for net, what in (
        ("0.0.0.0/8", "unspecified"),
        ("127.0.0.0/8", "loopback"),
        ("10.0.0.0/8", "private"),
        ("172.16.0.0/12", "private"),
        ("192.168.0.0/16", "private"),
        ("100.64.0.0/10", "private (carrier-grade NAT)"),
        ("169.254.169.254/32", "link-local (the cloud metadata address)"),
        ("169.254.0.0/16", "link-local"),
        ("224.0.0.0/4", "multicast"),
        ("255.255.255.255/32", "broadcast"),
        ("240.0.0.0/4", "reserved"),
        ("192.0.0.0/24", "reserved"),
        ("192.0.2.0/24", "documentation"),
        ("198.51.100.0/24", "documentation"),
        ("203.0.113.0/24", "documentation"),
        ("198.18.0.0/15", "reserved (benchmarking)"),
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        ("fe80::/10", "link-local"),
        ("fec0::/10", "site-local"),
        ("fc00::/7", "unique-local"),
        ("ff00::/8", "multicast"),
        ("100::/64", "reserved (discard)"),
        ("2001:db8::/32", "documentation"),
    )
)


def embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address reaches, when it is one of the embedding forms."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    packed = int(ip)
    if packed >> 32 == 0 and packed > 1:  # IPv4-compatible ::a.b.c.d (not :: or ::1)
        return ipaddress.IPv4Address(packed & 0xFFFFFFFF)
    if packed >> 32 == 0x0064FF9B << 64:  # NAT64 well-known prefix 64:ff9b::/96
        return ipaddress.IPv4Address(packed & 0xFFFFFFFF)
    return None


def refused(address: str | Address) -> str | None:
    """Why `net.http` must not connect to `address` ("loopback", "private", ...), or None."""
    ip = ipaddress.ip_address(address) if isinstance(address, str) else address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.scope_id:
            return "link-local (scoped)"
        inner = embedded_ipv4(ip)
        if inner is not None:
            why = refused(inner)
            return None if why is None else f"{why}, inside an IPv6 address"
    for network, what in REFUSED:
        if ip.version == network.version and ip in network:
            return what
    if not ip.is_global:
        return "not a public address"
    return None
