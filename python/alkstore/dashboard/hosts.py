"""The names the dashboard answers to (ADR 0025): its defence against DNS rebinding.

A page of ``attacker.example`` can re-point its own name at 127.0.0.1; the
browser then treats the dashboard as that page's own origin, lets it read every
response and send it forms. The one thing the page cannot change is the
``Host`` header: it stays ``attacker.example``. So a request is served only
when its Host names this machine (127.0.0.1, localhost, [::1]) or a name the
operator allowed. Ports are not compared: a rebinding page picks the name, not
the port, and the Origin check (security.py) compares the whole origin.

This module needs nothing but the standard library, so the command line
checks ``--allowed-host`` with it before it starts anything.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable

__all__ = ["LOCAL_NAMES", "HostAllowList", "allowed_name", "parse_host"]

#: Always allowed: a browser reaches the dashboard under these only from this machine.
LOCAL_NAMES = ("127.0.0.1", "localhost", "[::1]")

# RFC 9110's Host: a bracketed IPv6 literal or a reg-name / IPv4, then an optional port.
# Reg-names are narrowed to what DNS and /etc/hosts use: letters, digits, ".", "-", "_".
_HOST = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::(?P<port>[0-9]{1,5}))?")


def parse_host(text: str) -> tuple[str, int | None] | None:
    """The host (lower case; an IPv6 address in brackets) and port of a ``Host`` value,
    or None when it is malformed."""
    m = _HOST.fullmatch(text)
    if m is None:
        return None
    host = m["host"].lower()
    if host.startswith("["):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            return None
    port = int(m["port"]) if m["port"] else None
    if port is not None and port > 65535:
        return None
    return host, port


def allowed_name(name: str) -> str:
    """An allowed-host entry as the check compares it: ``::1`` and ``[::1]`` alike, any
    port dropped. ValueError for anything that is not a host name or address."""
    text = name.strip()
    if text.count(":") >= 2 and not text.startswith("["):
        text = f"[{text}]"  # a bare IPv6 address, as --host takes it
    parsed = parse_host(text)
    if parsed is None:
        raise ValueError(f"not an allowed host (a name or an address, no scheme or path): {name!r}")
    return parsed[0]


class HostAllowList:
    """The local names plus ``extra`` (names or addresses, any port)."""

    def __init__(self, extra: Iterable[str] = ()) -> None:
        self.names = frozenset(LOCAL_NAMES) | {allowed_name(n) for n in extra}

    def allows(self, header: str | None) -> bool:
        parsed = parse_host(header) if header is not None else None
        return parsed is not None and parsed[0] in self.names
