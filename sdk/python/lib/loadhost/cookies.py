"""The worker's cookie jar.

The host keeps one jar per worker (plugin instance): every request of `loadhost.http` sends the
jar's cookies that match its URL and keeps every `Set-Cookie` of its responses (RFC 6265), unless
the request says `cookies=False` or the run `--no-cookies`. A replaced instance starts empty.

    from loadhost import cookies

    cookies.set("http://127.0.0.1:8080/", "session=abc; Path=/")
    assert cookies.get("http://127.0.0.1:8080/account") == [("session", "abc")]
    cookies.clear()
"""

from componentize_py_types import Err
from wit_world.imports import http as _host

from .http import _error

__all__ = ["get", "set", "clear"]


def get(url: str) -> list:
    """The `(name, value)` pairs of the cookies a request to `url` would carry (none under
    `--no-cookies`). Raises `loadhost.http.HttpError` for a URL the host cannot use."""
    try:
        return [(name, value) for name, value in _host.cookies_for(url)]
    except Err as err:
        raise _error(err.value) from None


def set(url: str, set_cookie: str) -> None:  # noqa: A001 (the module's verb, as cookies.get)
    """Store a cookie as a response from `url` with this `Set-Cookie` value would
    (`"name=value; Path=/; Max-Age=60"`). Raises `loadhost.http.HttpError`, also under
    `--no-cookies`."""
    try:
        _host.add_cookie(url, set_cookie)
    except Err as err:
        raise _error(err.value) from None


def clear() -> None:
    """Forget every cookie of the worker's jar."""
    _host.clear_cookies()
