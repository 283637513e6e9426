"""A TCP proxy in front of Postgres that loses one reply after its commit.

``LostReply(url, matches)`` listens on a local port and relays every
connection to the server, reading the protocol's messages on the way. The
first time a client runs a statement whose text ``matches`` (a simple
Query, or the Bind of a statement whose Parse had that text), the proxy
lets the statement reach the server and holds back the server's replies;
those that end inside a transaction go on to the client (it may wait for
them before it sends its COMMIT), and once the server says the connection is
idle again — the transaction, or the statement on its own, has committed —
the proxy drops what it holds and closes the connection. The client
sees its connection lost mid-call although its statement committed: the
ambiguous outcome a real network gives when a server or a link dies between
the commit and its reply. Every later connection and statement is relayed
untouched.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from collections.abc import Callable
from urllib.parse import urlsplit

__all__ = ["LostReply"]

_SSL_REQUEST, _GSS_REQUEST, _PROTOCOL_3 = 80877103, 80877104, 196608


class _Relay:
    """One client connection and its server connection."""

    def __init__(self, proxy: LostReply, client: socket.socket) -> None:
        self.proxy = proxy
        self.client = client
        self.server = socket.create_connection(proxy.upstream)
        self.armed: str | None = None  # the matched statement whose reply is to be lost
        self.statements: dict[bytes, str] = {}  # prepared statement name -> its text
        self.single_bytes = 0  # answers to SSL/GSS requests: one byte, no message frame

    def start(self) -> None:
        for target in (self._from_client, self._from_server):
            threading.Thread(target=target, daemon=True).start()

    def close(self) -> None:
        for s in (self.client, self.server):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def _from_client(self) -> None:
        buf = b""
        started = False
        try:
            while chunk := self.client.recv(65536):
                buf += chunk
                while True:
                    if not started:  # untyped: SSLRequest, GSSENCRequest or the StartupMessage
                        if len(buf) < 8:
                            break
                        size, code = struct.unpack("!ii", buf[:8])
                        if len(buf) < size:
                            break
                        if code in (_SSL_REQUEST, _GSS_REQUEST):
                            self.single_bytes += 1
                        elif code == _PROTOCOL_3:
                            started = True
                        buf = buf[size:]
                        continue
                    if len(buf) < 5:
                        break
                    size = struct.unpack("!i", buf[1:5])[0]
                    if len(buf) < 1 + size:
                        break
                    self._seen(buf[:1], buf[5 : 1 + size])
                    buf = buf[1 + size :]
                # Armed before the statement reaches the server, so its replies are held.
                self.server.sendall(chunk)
        except OSError:
            pass
        self.close()

    def _seen(self, kind: bytes, body: bytes) -> None:
        if kind == b"P":  # Parse: name, query (a prepare: nothing runs yet)
            name, rest = body.split(b"\0", 1)
            self.statements[name] = rest.split(b"\0", 1)[0].decode()
        elif kind == b"B":  # Bind: portal, statement (it runs)
            statement = body.split(b"\0", 2)[1]
            query = self.statements.get(statement)
            if query is not None:
                self._maybe_arm(query)
        elif kind == b"Q":  # a simple query
            self._maybe_arm(body.split(b"\0", 1)[0].decode())

    def _maybe_arm(self, query: str) -> None:
        if self.armed is None and self.proxy._take(query):
            self.armed = query

    def _from_server(self) -> None:
        buf = held = b""
        try:
            while chunk := self.server.recv(65536):
                buf += chunk
                out = b""
                while buf and self.single_bytes:
                    out, buf = out + buf[:1], buf[1:]
                    self.single_bytes -= 1
                while len(buf) >= 5:
                    size = struct.unpack("!i", buf[1:5])[0]
                    if len(buf) < 1 + size:
                        break
                    message, buf = buf[: 1 + size], buf[1 + size :]
                    if self.armed is None:
                        out += message
                        continue
                    held += message
                    if message[:1] != b"Z":
                        continue
                    if message[5:6] == b"I":
                        # Idle: the matched statement's transaction committed.
                        # What is held since is dropped with the connection.
                        if out:
                            self.client.sendall(out)
                        self.proxy._cut(self.armed)
                        self.close()
                        return
                    # Still in a transaction: the client may wait for this
                    # before it sends the COMMIT, so it gets it.
                    out, held = out + held, b""
                if out:
                    self.client.sendall(out)
        except OSError:
            pass
        self.close()


class LostReply:
    """The proxy (see the module); ``url`` is the server's, ``lost`` lists the
    statements whose reply it lost (at most one)."""

    def __init__(self, url: str, matches: Callable[[str], bool]) -> None:
        parts = urlsplit(url)
        self._url = parts
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 5432)
        self._matches = matches
        self._lock = threading.Lock()
        self._taken = False
        self.lost: list[str] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._relays: list[_Relay] = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        """The server's URL with the proxy's address."""
        port = self._listener.getsockname()[1]
        auth = self._url.netloc.rsplit("@", 1)[0] + "@" if "@" in self._url.netloc else ""
        return self._url._replace(netloc=f"{auth}127.0.0.1:{port}").geturl()

    def _take(self, query: str) -> bool:
        with self._lock:
            if self._taken or not self._matches(query):
                return False
            self._taken = True
            return True

    def _cut(self, query: str) -> None:
        with self._lock:
            self.lost.append(query)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            relay = _Relay(self, client)
            self._relays.append(relay)
            relay.start()

    def close(self) -> None:
        self._listener.close()
        for relay in self._relays:
            relay.close()

    def __enter__(self) -> LostReply:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
