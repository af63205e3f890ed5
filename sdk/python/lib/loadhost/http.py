"""An HTTP client for plugins, over the host's one-call `loadhost:plugin/http` import.

The host does the network work (pooled keep-alive connections, TLS) and records the built-in HTTP
metrics (`http_reqs`, `http_req_duration`, ...) for every request without plugin code:

    from loadhost import http

    response = http.get("http://127.0.0.1:8080/")
    echoed = http.post("http://127.0.0.1:8080/echo", json={"id": 7})
    status_only = http.get("http://127.0.0.1:8080/", discard_headers=True, discard_body=True)
    login = http.post("http://127.0.0.1:8080/login", auth=("ada", "secret"), name="login")
    login.final_url, login.redirects  # where the response came from, after redirects

As a browser or k6 does, the host follows up to 10 redirects (`redirects=N`; 0: none), keeps a
cookie jar per worker (`cookies=False` for one request; `loadhost.cookies` reads or changes the
jar) and asks for and decodes gzip, deflate and br bodies (`decompress=False` to get them as they
came); `name="login"` names the endpoint in the per-endpoint HTTP metrics. These are the host's
`send-opts` call; requests before it existed (`send`/`send-with`) were raw HTTP, so a plugin that
relied on seeing a 302 or a compressed body now passes `redirects=0` or `decompress=False`.

A response with a status of 400 or more counts in `http_req_failed`, as in k6. A request that
expects another status says so, with statuses and `range`s: `expected_statuses=[range(200, 300),
404]` for one request, `http.set_expected_statuses(range(200, 300), 404)` for every request of the
worker from then on (k6's `expectedStatuses` and `setResponseCallback`; call it in `init`).

A host the user did not allow (`loadhost run --allow-host HOST[:PORT]`) raises `Denied` without any
connection being made. Unlike the Rust SDK there is no wasi:http path: the Python plugin's world
does not import wasi:http, so `LOADHOST_HTTP=wasi` has no effect here.
"""

import base64 as _base64
import json as _json
import time

from componentize_py_types import Err
from wit_world.imports import http as _host
from ._values import U32_MAX, as_bytes, timeout_ms


#: How many redirects a request follows unless told otherwise (k6's `maxRedirects`).
DEFAULT_REDIRECTS = 10


class HttpError(Exception):
    """Why a request got no response (the base of the three cases below)."""


class InvalidRequest(HttpError):
    """The URL or the method could not be used."""


class Denied(HttpError):
    """The host is not on the user's allow-list (`--allow-host`); no connection was made."""


class NetworkError(HttpError):
    """Connecting, sending or receiving failed (or the timeout passed)."""


class Response:
    """A complete response: the body has been read to its end."""

    __slots__ = ("status", "headers", "body", "elapsed", "final_url", "redirects")

    def __init__(
        self, status: int, headers: list, body: bytes, elapsed: float, final_url: str = "", redirects: int = 0
    ):
        #: The status code.
        self.status = status
        #: Header names (lower-case) and values, as `(str, bytes)` pairs (empty with `discard_headers`).
        self.headers = headers
        #: The whole body (`b""` with `discard_body`).
        self.body = body
        #: Seconds from sending the request to the end of the body, as the plugin saw it.
        self.elapsed = elapsed
        #: The URL that answered: the request's, or the last redirect's.
        self.final_url = final_url
        #: How many redirects were followed to get this response.
        self.redirects = redirects

    def header(self, name: str):
        """The first value (bytes) of header `name` (case-insensitive), or None."""
        name = name.lower()
        for key, value in self.headers:
            if key.lower() == name:
                return value
        return None

    def text(self) -> str:
        """The body as text (invalid UTF-8 replaced)."""
        return self.body.decode("utf-8", "replace")

    def json(self):
        """The body parsed as JSON."""
        return _json.loads(self.body)

    @property
    def ok(self) -> bool:
        """Whether the status is 2xx."""
        return 200 <= self.status < 300

    def __repr__(self) -> str:
        return f"<Response {self.status}, {len(self.body)} bytes>"


def request(
    method: str,
    url: str,
    *,
    headers=None,
    body=b"",
    json=None,
    timeout=None,
    discard_headers=False,
    discard_body=False,
    redirects=DEFAULT_REDIRECTS,
    cookies=True,
    decompress=True,
    name=None,
    auth=None,
    expected_statuses=None,
) -> Response:
    """Send a request with any method and return the whole response.

    `headers` is a dict or a sequence of `(name, value)` pairs (values str or bytes). `json` (any
    JSON-serialisable value) replaces `body` and sets `content-type: application/json` unless given.
    `timeout` is in seconds: give up when no response has started by then. Raises `HttpError`.

    `discard_headers=True` leaves the response headers out of the plugin (`Response.headers` is
    empty); `discard_body=True` leaves the body out (`Response.body` is `b""`), as k6's
    `discardResponseBodies`. The host still reads the whole response and counts it in the HTTP
    metrics (`data_received`, ...); a plugin that only checks the status saves copying them in.

    `redirects` is how many redirects to follow at most (default, or None: 10; 0: none, the
    redirect itself is the response); 303, and a POST's 301 or 302, become a GET without a body,
    307 and 308 keep the method and the body. `cookies=False` neither sends the worker's cookies nor keeps the
    response's `Set-Cookie`s. `decompress=False` adds no `Accept-Encoding` and hands a gzip,
    deflate or br body back as it came. `name` names the endpoint in the per-endpoint HTTP metrics
    (k6's `name` tag; default: the method and the URL's path with ids folded). `auth=(user,
    password)` sends HTTP basic authentication (`Authorization: Basic ...`). `expected_statuses`
    (statuses and `range`s, such as `[range(200, 300), 404]`) judges this request's responses (each
    redirect hop too) in `http_req_failed` instead of the worker's statuses (default: below 400).
    """
    pairs = list(headers.items() if isinstance(headers, dict) else headers or ())
    if auth is not None:
        try:
            user, password = auth
        except (TypeError, ValueError):
            raise TypeError("auth takes a (user, password) pair") from None
        credentials = _base64.b64encode(as_bytes(user) + b":" + as_bytes(password)).decode("ascii")
        pairs.append(("authorization", "Basic " + credentials))
    if redirects is None:
        redirects = DEFAULT_REDIRECTS
    if isinstance(redirects, bool) or not isinstance(redirects, int) or not 0 <= redirects <= U32_MAX:
        raise ValueError(f"redirects must be an integer from 0 to {U32_MAX}, not {redirects!r}")
    if name is not None and not isinstance(name, str):
        raise TypeError(f"name must be a str, not {type(name).__name__}")
    if json is not None:
        body = _json.dumps(json, separators=(",", ":"))
        if not any(name.lower() == "content-type" for name, _ in pairs):
            pairs.append(("content-type", "application/json"))
    expected = None if expected_statuses is None else _ranges("expected_statuses", expected_statuses)
    wait_ms = timeout_ms(timeout)
    wit_request = _host.Request(
        method=method.upper(),
        url=url,
        headers=[(str(name), as_bytes(value)) for name, value in pairs],
        body=as_bytes(body),
        timeout_ms=wait_ms,
    )
    options = _host.RequestOptions(
        parts=_host.ResponseParts(headers=not discard_headers, body=not discard_body),
        redirects=redirects,
        cookies=bool(cookies),
        decompress=bool(decompress),
        name=name,
    )
    started = time.perf_counter()
    try:
        if expected is None:
            info = _host.send_opts(wit_request, options)
        else:
            info = _host.send_expecting(wit_request, options, expected)
    except Err as err:
        raise _error(err.value) from None
    response = info.response
    elapsed = time.perf_counter() - started
    return Response(response.status, response.headers, response.body, elapsed, info.final_url, info.redirects)


def set_expected_statuses(*statuses) -> None:
    """Judge every request of this worker from now on by `statuses` (statuses and `range`s:
    `set_expected_statuses(range(200, 300), 404)`): a response with one of them does not count in
    `http_req_failed`, any other does (k6's `setResponseCallback(expectedStatuses(...))`). No
    argument restores the default, every status below 400. Each worker starts with the default:
    call it in `init` to set it for all of them."""
    _host.set_expected_statuses(_ranges("set_expected_statuses", statuses))


def _ranges(call: str, statuses) -> list:
    """Statuses and `range`s as the host's inclusive (from, to) pairs, or the error naming `call`."""
    if isinstance(statuses, (int, range)):
        statuses = [statuses]
    out = []
    for status in statuses:
        if isinstance(status, range):
            if status.step != 1 or len(status) == 0 or status.start < 0 or status.stop - 1 > 65535:
                raise ValueError(f"{call}: {status!r} must be a non-empty range of statuses with step 1")
            out.append((status.start, status.stop - 1))
        elif isinstance(status, int) and not isinstance(status, bool):
            if not 0 <= status <= 65535:
                raise ValueError(f"{call}: {status} is not a status")
            out.append((status, status))
        else:
            raise TypeError(f"{call}: expected statuses (int) and ranges, got {type(status).__name__} {status!r}")
    return out


def get(url: str, **options) -> Response:
    """A `GET` request (options as for `request`)."""
    return request("GET", url, **options)


def post(url: str, body=b"", **options) -> Response:
    """A `POST` request with `body`, or with `json=...` (options as for `request`)."""
    return request("POST", url, body=body, **options)


def put(url: str, body=b"", **options) -> Response:
    """A `PUT` request with `body`, or with `json=...` (options as for `request`)."""
    return request("PUT", url, body=body, **options)


def delete(url: str, **options) -> Response:
    """A `DELETE` request (options as for `request`)."""
    return request("DELETE", url, **options)


def _error(error) -> HttpError:
    """The SDK exception for the host's `http.error` variant."""
    if isinstance(error, _host.Error_Denied):
        return Denied(f"request to {error.value} denied: the host is not allowed (loadhost run --allow-host)")
    if isinstance(error, _host.Error_InvalidRequest):
        return InvalidRequest(error.value)
    return NetworkError(error.value)
