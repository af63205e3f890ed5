"""gRPC calls over the host's `loadhost:plugin/grpc` import.

The host owns the HTTP/2 connections (h2c for `http://`, TLS for `https://`), deadlines, status
and trailers, and records `grpc_reqs` (tagged with the status code), `grpc_req_duration`,
`grpc_streams`, ... by itself. Messages stay protobuf bytes: the plugin encodes and decodes them
(with the pure-Python `protobuf` runtime copied into its folder, or by hand), so the host needs no
schema:

    from loadhost import grpc

    try:
        response = grpc.call("http://127.0.0.1:8080", "/pkg.Service/Method", request_bytes, timeout=5)
    except grpc.GrpcError as err:
        ...  # err.code (grpc.UNAVAILABLE, ...), err.message, err.trailers
    reply = response.message

Every failure is a `GrpcError` with the status `code` a gRPC client would report: the server's
(or the deadline's, 4) for a call that ended with a status other than OK, and for the host's own
reasons `NetworkError` (14 UNAVAILABLE, as `grpc_reqs` counts it), `Denied` (7, not on
`--allow-host`; no connection was made), `InvalidRequest` (3), `TooManyConnections` and
`TooLarge` (8 RESOURCE_EXHAUSTED) and, for a stream's `receive`, `Timeout` (4).
"""

import time

from componentize_py_types import Err
from wit_world.imports import grpc as _host
from ._values import as_bytes, timeout_ms


# The gRPC status codes (https://grpc.github.io/grpc/core/md_doc_statuscodes.html).
OK = 0
CANCELLED = 1
UNKNOWN = 2
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
NOT_FOUND = 5
ALREADY_EXISTS = 6
PERMISSION_DENIED = 7
RESOURCE_EXHAUSTED = 8
FAILED_PRECONDITION = 9
ABORTED = 10
OUT_OF_RANGE = 11
UNIMPLEMENTED = 12
INTERNAL = 13
UNAVAILABLE = 14
DATA_LOSS = 15
UNAUTHENTICATED = 16


class GrpcError(Exception):
    """A call ended without a response: `code` is the gRPC status code, `message` its message and
    `trailers` the server's trailers (`(name, bytes)` pairs; empty when the host gave up itself).
    Raised as is for a status the server (or the deadline) gave; the subclasses are the host's
    own reasons."""

    def __init__(self, code: int, message: str, trailers=()):
        super().__init__(f"gRPC status {code}: {message}" if message else f"gRPC status {code}")
        #: The gRPC status code (0 OK, 4 DEADLINE_EXCEEDED, 14 UNAVAILABLE, ...).
        self.code = code
        #: The status message.
        self.message = message
        #: The trailers that came with the status.
        self.trailers = list(trailers)

    def trailer(self, name: str):
        """The first value (bytes) of trailer `name` (case-insensitive), or None."""
        return _find(self.trailers, name)


class InvalidRequest(GrpcError):
    """The target, the method or the metadata could not be used (code 3, INVALID_ARGUMENT)."""

    def __init__(self, message: str):
        super().__init__(INVALID_ARGUMENT, message)


class Denied(GrpcError):
    """The host is not on the user's allow-list (`--allow-host`); no connection was made (code 7,
    PERMISSION_DENIED)."""

    def __init__(self, message: str):
        super().__init__(PERMISSION_DENIED, message)


class NetworkError(GrpcError):
    """The connection failed (code 14, UNAVAILABLE, as gRPC clients report it and `grpc_reqs`
    counts it)."""

    def __init__(self, message: str):
        super().__init__(UNAVAILABLE, message)


class TooManyConnections(GrpcError):
    """The instance already has `limit` connections open (WebSocket and gRPC streams together)
    (code 8, RESOURCE_EXHAUSTED)."""

    def __init__(self, limit: int):
        super().__init__(RESOURCE_EXHAUSTED, f"too many connections: this instance already has {limit} open")
        #: How many connections an instance may have open.
        self.limit = limit


class TooLarge(GrpcError):
    """A message larger than the host's cap (`--max-response-body`, `limit` bytes) (code 8,
    RESOURCE_EXHAUSTED)."""

    def __init__(self, limit: int):
        super().__init__(RESOURCE_EXHAUSTED, f"a message is larger than {limit} bytes")
        #: The cap, in bytes.
        self.limit = limit


class Timeout(GrpcError, TimeoutError):
    """Nothing arrived within a stream `receive`'s timeout; the stream is still open (code 4)."""

    def __init__(self):
        super().__init__(DEADLINE_EXCEEDED, "nothing arrived within the timeout")


def _find(pairs, name: str):
    name = name.lower()
    for key, value in pairs:
        if key.lower() == name:
            return value
    return None


class Response:
    """A unary call's answer."""

    __slots__ = ("message", "headers", "trailers", "elapsed")

    def __init__(self, message: bytes, headers: list, trailers: list, elapsed: float):
        #: The response message, as protobuf bytes.
        self.message = message
        #: The response headers, `(name, bytes)` pairs with lower-case names.
        self.headers = headers
        #: The trailers (the status was OK).
        self.trailers = trailers
        #: Seconds from the call to its end, as the plugin saw it.
        self.elapsed = elapsed

    def header(self, name: str):
        """The first value (bytes) of header `name` (case-insensitive), or None."""
        return _find(self.headers, name)

    def trailer(self, name: str):
        """The first value (bytes) of trailer `name` (case-insensitive), or None."""
        return _find(self.trailers, name)

    def __repr__(self) -> str:
        return f"<grpc.Response {len(self.message)} bytes>"


def _metadata(metadata) -> list:
    """Metadata as the host takes it: lower-case names, values as bytes (str is UTF-8 encoded)."""
    pairs = metadata.items() if isinstance(metadata, dict) else metadata or ()
    return [(str(name).lower(), as_bytes(value)) for name, value in pairs]


def _message_bytes(message) -> bytes:
    if isinstance(message, str):
        raise TypeError("a gRPC message is protobuf bytes, not str (encode it first)")
    if hasattr(message, "SerializeToString"):  # a protobuf message object
        return message.SerializeToString()
    return bytes(message)


def _error(error, target: str, method: str) -> GrpcError:
    """The SDK exception for the host's `grpc.error` variant."""
    if isinstance(error, _host.Error_Status):
        status = error.value
        return GrpcError(status.code, status.message, status.trailers)
    if isinstance(error, _host.Error_Denied):
        return Denied(f"gRPC call to {target} denied: the host is not allowed (loadhost run --allow-host)")
    if isinstance(error, _host.Error_InvalidRequest):
        return InvalidRequest(error.value)
    if isinstance(error, _host.Error_Network):
        return NetworkError(error.value)
    if isinstance(error, _host.Error_TooManyConnections):
        return TooManyConnections(error.value)
    if isinstance(error, _host.Error_TooLarge):
        return TooLarge(error.value)
    if isinstance(error, _host.Error_Timeout):
        return Timeout()
    return GrpcError(UNKNOWN, f"{method}: {error!r}")


def call(target: str, method: str, message, metadata=None, timeout=None) -> Response:
    """One unary call of `method` (`/package.Service/Method`) on `target` (`http://host:port`,
    h2c, or `https://host:port`) with `message` (protobuf bytes, or a protobuf message object).
    `metadata` is a dict or `(name, value)` pairs (values str or bytes; a name ending in `-bin`
    carries bytes); `timeout` in seconds is sent as the deadline and enforced by the host. Raises
    `GrpcError` (its `code` says why) unless the status is OK."""
    target, method = str(target), str(method)
    body = _message_bytes(message)
    started = time.perf_counter()
    try:
        response = _host.call(target, method, _metadata(metadata), body, timeout_ms(timeout))
    except Err as err:
        raise _error(err.value, target, method) from None
    elapsed = time.perf_counter() - started
    return Response(bytes(response.message), response.headers, response.trailers, elapsed)


class Stream:
    """A streaming call (client, server or bidirectional: the method decides how many messages
    each side sends), from `stream`. It counts once in `grpc_reqs`, with its final status. Also a
    context manager that releases it."""

    __slots__ = ("target", "method", "_resource")

    def __init__(self, target: str, method: str, resource):
        self.target = target
        self.method = method
        self._resource = resource

    def _live(self):
        if self._resource is None:
            raise InvalidRequest(f"the stream {self.method} was dropped")
        return self._resource

    def send(self, message) -> None:
        """Send one message (protobuf bytes, or a protobuf message object)."""
        try:
            self._live().send(_message_bytes(message))
        except Err as err:
            raise _error(err.value, self.target, self.method) from None

    def close_send(self) -> None:
        """Say that no more messages will be sent (half-close)."""
        try:
            self._live().close_send()
        except Err as err:
            raise _error(err.value, self.target, self.method) from None

    def receive(self, timeout=None):
        """The next message from the server (bytes), waiting at most `timeout` seconds (then
        `Timeout`, the stream still open); None once the server has ended the call with OK. A
        status other than OK raises `GrpcError`."""
        try:
            message = self._live().receive(timeout_ms(timeout))
        except Err as err:
            raise _error(err.value, self.target, self.method) from None
        return None if message is None else bytes(message)

    def trailers(self) -> list:
        """The trailers, once `receive` has returned None (empty before)."""
        return self._live().trailers()

    def drop(self) -> None:
        """Release the stream; a call still running is cancelled by the host."""
        resource, self._resource = self._resource, None
        if resource is not None:
            resource.__exit__(None, None, None)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        self.drop()
        return None

    def __iter__(self):
        """The server's messages until it ends the call (each `receive` without a timeout)."""
        while True:
            message = self.receive()
            if message is None:
                return
            yield message


def stream(target: str, method: str, metadata=None, timeout=None) -> Stream:
    """Start a streaming call of `method` on `target` (as for `call`); `timeout` in seconds is the
    whole call's deadline. Raises `GrpcError`."""
    target, method = str(target), str(method)
    try:
        resource = _host.StreamingCall.open(target, method, _metadata(metadata), timeout_ms(timeout))
    except Err as err:
        raise _error(err.value, target, method) from None
    return Stream(target, method, resource)
