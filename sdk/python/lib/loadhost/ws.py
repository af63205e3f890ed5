"""WebSocket connections over the host's `loadhost:plugin/websocket` import.

The host does the handshake, TLS, framing, pings and the close handshake, and records `ws_sessions`,
`ws_connecting`, `ws_session_duration`, `ws_msgs_sent`, `ws_msgs_received` and `ws_ping` by itself;
the plugin sends and receives whole messages:

    from loadhost import ws

    conn = ws.connect("ws://127.0.0.1:8080/ws/echo", timeout=5)
    conn.send_text("hello")
    message = conn.receive(timeout=5)   # "hello" (str); bytes for a binary message; ws.Close
    conn.close()

A connection may outlive the task that opened it: keep it in a module global (each worker is its
own instance) and later tasks of the same worker reuse it. The host drops it with the instance when
that is replaced (after a trap or a timeout). A host the user did not allow (`loadhost run
--allow-host HOST[:PORT]`) raises `Denied` without any connection being made.
"""

from dataclasses import dataclass

from componentize_py_types import Err
from wit_world.imports import websocket as _host
from ._values import as_bytes, timeout_ms


class WebSocketError(Exception):
    """Why a connection could not be opened or used (the base of the cases below)."""


class InvalidRequest(WebSocketError):
    """The URL or a header could not be used."""


class Denied(WebSocketError):
    """The host is not on the user's allow-list (`--allow-host`); no connection was made."""


class NetworkError(WebSocketError):
    """Connecting, the handshake, sending or receiving failed; the connection is unusable."""


class TooManyConnections(WebSocketError):
    """The instance already has `limit` connections open (WebSocket and gRPC streams together)."""

    def __init__(self, message: str, limit: int):
        super().__init__(message)
        #: How many connections an instance may have open.
        self.limit = limit


class Timeout(WebSocketError, TimeoutError):
    """Nothing arrived within the timeout; the connection is still open."""


class Closed(WebSocketError):
    """The connection is closed (by either side); it can only be dropped."""


class TooLarge(WebSocketError):
    """A message larger than the host's cap (`--max-response-body`) arrived or was to be sent."""

    def __init__(self, message: str, limit: int):
        super().__init__(message)
        #: The cap, in bytes.
        self.limit = limit


@dataclass(frozen=True)
class Close:
    """The peer closed the connection (the host answered the close handshake): what `receive`
    returns then. `code` is 1005 when the peer sent none."""

    code: int
    reason: str = ""


def _headers(headers) -> list:
    pairs = headers.items() if isinstance(headers, dict) else headers or ()
    return [(str(name), as_bytes(value)) for name, value in pairs]


def _message(message):
    """The WIT `message` as a Python value: str, bytes or Close."""
    if isinstance(message, _host.Message_Text):
        return message.value
    if isinstance(message, _host.Message_Binary):
        return bytes(message.value)
    return Close(message.value.code, message.value.reason)


def _error(error, url: str) -> WebSocketError:
    """The SDK exception for the host's `websocket.error` variant."""
    if isinstance(error, _host.Error_Denied):
        return Denied(f"WebSocket to {url} denied: the host is not allowed (loadhost run --allow-host)")
    if isinstance(error, _host.Error_InvalidRequest):
        return InvalidRequest(error.value)
    if isinstance(error, _host.Error_Network):
        return NetworkError(error.value)
    if isinstance(error, _host.Error_TooManyConnections):
        message = f"too many connections: this instance already has {error.value} open (close or drop one)"
        return TooManyConnections(message, error.value)
    if isinstance(error, _host.Error_Timeout):
        return Timeout(f"WebSocket {url}: nothing arrived within the timeout")
    if isinstance(error, _host.Error_Closed):
        return Closed(f"WebSocket {url} is closed")
    if isinstance(error, _host.Error_TooLarge):
        return TooLarge(f"WebSocket {url}: a message is larger than {error.value} bytes", error.value)
    return WebSocketError(repr(error))


class Connection:
    """An open WebSocket connection (from `connect`). Also a context manager that closes it."""

    __slots__ = ("url", "_resource")

    def __init__(self, url: str, resource):
        #: The URL it was opened with.
        self.url = url
        self._resource = resource

    def _live(self):
        # A dropped connection is Closed, as the host says of one closed by either side: the same
        # handling covers both in a plugin.
        if self._resource is None:
            raise Closed(f"WebSocket {self.url} is closed")
        return self._resource

    def send_text(self, text: str) -> None:
        """Send a text message."""
        if not isinstance(text, str):
            raise TypeError(f"send_text takes a str, not {type(text).__name__}")
        try:
            self._live().send_text(text)
        except Err as err:
            raise _error(err.value, self.url) from None

    def send_binary(self, data) -> None:
        """Send a binary message (bytes, bytearray or memoryview)."""
        if isinstance(data, str):
            raise TypeError("send_binary takes bytes, not str (send_text sends text)")
        try:
            self._live().send_binary(bytes(data))
        except Err as err:
            raise _error(err.value, self.url) from None

    def send(self, data) -> None:
        """Send a str as a text message, anything else (bytes) as a binary one."""
        if isinstance(data, str):
            self.send_text(data)
        else:
            self.send_binary(data)

    def receive(self, timeout=None):
        """The next message: a str (text), bytes (binary) or a `Close` (the peer closed; later
        calls raise `Closed`). Waits at most `timeout` seconds (None: until one comes or the
        connection ends), then raises `Timeout`; the connection stays open. Pings are answered by
        the host and never returned."""
        try:
            message = self._live().receive(timeout_ms(timeout))
        except Err as err:
            raise _error(err.value, self.url) from None
        return _message(message)

    def ping(self, timeout=None) -> float:
        """Send a ping and wait for its pong, at most `timeout` seconds (None: the host's 10 s); the
        round trip in seconds (the host records it as `ws_ping`). Messages that arrive meanwhile are
        kept for `receive`."""
        try:
            return self._live().ping(timeout_ms(timeout)) / 1000.0
        except Err as err:
            raise _error(err.value, self.url) from None

    def close(self, code: int = 1000, reason: str = "") -> None:
        """Start the close handshake with `code` (1000: normal) and `reason`, and release the
        connection (the host awaits the peer's close on the side, at most 1 s). Closing one already
        closed or dropped does nothing; an error of the handshake is raised after the connection is
        released."""
        if self._resource is None:
            return
        if isinstance(code, bool) or not isinstance(code, int) or not 0 <= code <= 0xFFFF:
            raise ValueError(f"close code must be an integer from 0 to 65535, not {code!r}")
        try:
            self._resource.close(code, str(reason))
        except Err as err:
            if not isinstance(err.value, _host.Error_Closed):
                raise _error(err.value, self.url) from None
        finally:
            self.drop()

    def drop(self) -> None:
        """Release the connection without the close handshake (the host ends it): what to do with
        one that failed. Later calls raise `Closed`."""
        resource, self._resource = self._resource, None
        if resource is not None:
            resource.__exit__(None, None, None)

    @property
    def closed(self) -> bool:
        """Whether `close` or `drop` has released the connection."""
        return self._resource is None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if exc_type is None:
            self.close()
        else:
            self.drop()
        return None

    def __repr__(self) -> str:
        return f"<Connection {self.url}{' closed' if self._resource is None else ''}>"


def connect(url: str, headers=None, timeout=None) -> Connection:
    """Open a WebSocket connection to `url` (`ws://` or `wss://`, with the run's TLS settings),
    sending `headers` (a dict or `(name, value)` pairs, values str or bytes) with the handshake;
    give up after `timeout` seconds (None: the host's 60 s). Raises `WebSocketError`."""
    url = str(url)
    try:
        resource = _host.Connection.connect(url, _headers(headers), timeout_ms(timeout))
    except Err as err:
        raise _error(err.value, url) from None
    return Connection(url, resource)

