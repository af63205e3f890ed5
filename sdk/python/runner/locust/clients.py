"""`self.client` of an HttpUser: a requests-like session over loadhost's HTTP client.

The host sends every request (pooled connections, the `--allow-host` list, cookies per worker)
and counts it in `http_reqs`, `http_req_duration` and `http_req_failed` as for any script; this
module only speaks requests' and Locust's language over it. What differs from Locust is in
docs/migrating.md ("From Locust").
"""

import datetime
import http as _http
import json as _json
import time
import urllib.parse

from loadhost import check
from loadhost import cookies as _cookies
from loadhost import http as _lh

from .exception import CatchResponseError, ResponseError

# Every status is expected of a `catch_response=True` request: the locustfile's verdict is what
# counts (as the check `METHOD NAME`), not the status.
_ANY_STATUS = [range(0, 65536)]


class HTTPError(ResponseError):
    """What `raise_for_status()` raises (requests' `HTTPError`)."""


class Headers(dict):
    """Response headers by name, any case (`response.headers["Content-Type"]`)."""

    def __init__(self, pairs):
        super().__init__()
        for name, value in pairs:
            text = value.decode("latin-1") if isinstance(value, bytes) else str(value)
            key = name.lower()
            super().__setitem__(key, f"{self[key]}, {text}" if key in self else text)

    def __getitem__(self, name):
        return super().__getitem__(name.lower())

    def __contains__(self, name):
        return super().__contains__(name.lower())

    def get(self, name, default=None):
        return super().get(name.lower(), default)


class Response:
    """A response as requests shows it (Locust's `HttpUser` hands these out)."""

    def __init__(self, method, url, status, headers, body, elapsed, error=None):
        self.request_method = method
        self.url = url
        self.status_code = status
        self.headers = Headers(headers)
        self.content = body
        self.elapsed = datetime.timedelta(seconds=elapsed)
        self.error = error
        self.encoding = "utf-8"

    @property
    def text(self):
        return self.content.decode(self.encoding or "utf-8", "replace")

    @property
    def ok(self):
        return self.error is None and 0 < self.status_code < 400

    @property
    def reason(self):
        try:
            return _http.HTTPStatus(self.status_code).phrase
        except ValueError:
            return ""

    @property
    def cookies(self):
        jar = {}
        for value in self.headers.get("set-cookie", "").split(", "):
            name, sep, rest = value.partition("=")
            if sep and name.strip():
                jar[name.strip()] = rest.split(";", 1)[0]
        return jar

    def json(self, **kwargs):
        return _json.loads(self.content, **kwargs)

    def raise_for_status(self):
        if self.error is not None:
            raise self.error
        if self.status_code >= 400:
            kind = "Client" if self.status_code < 500 else "Server"
            raise HTTPError(f"{self.status_code} {kind} Error: {self.reason} for url: {self.url}")

    def __bool__(self):
        return self.ok

    def __repr__(self):
        return f"<Response [{self.status_code}]>"

    # `with self.client.get(...) as response:` without catch_response, as requests allows.
    def __enter__(self):
        return self

    def __exit__(self, kind, value, traceback):
        return False


class ResponseContextManager:
    """`with self.client.get(..., catch_response=True) as response:`: the locustfile says whether
    the request passed (`success()`, `failure(text)`); without a word, it passed if it is `ok`."""

    def __init__(self, response, check_name):
        self._response = response
        self._check = check_name
        self._verdict = None

    def __getattr__(self, name):
        return getattr(self._response, name)

    def __enter__(self):
        return self

    def __exit__(self, kind, value, traceback):
        # Raising a CatchResponseError or ResponseError in the block fails the request and ends
        # there; any other error (a StopUser, a bug) goes on, the request judged as it stood.
        caught = isinstance(value, (CatchResponseError, ResponseError))
        if caught:
            self._verdict = False
        check(self._check, bool(self._response.ok if self._verdict is None else self._verdict))
        return caught

    def success(self):
        self._verdict = True

    def failure(self, exc):
        self._verdict = False
        self.failure_text = str(exc)

    def __bool__(self):
        return self._response.ok


class HttpSession:
    """The client of one user: `base_url` (the user's host) joined to relative URLs, headers and
    auth kept for every request, and Locust's `events.request` fired after each."""

    def __init__(self, base_url, request_event=None, user=None):
        self.base_url = base_url or ""
        self.headers = {}
        self.auth = None
        self.request_event = request_event
        self.user = user
        self.cookies = _Cookies(self)

    def _url(self, url):
        if urllib.parse.urlsplit(url).scheme:
            return url
        if not self.base_url:
            raise ValueError(
                f"no host for {url!r}: set `host` on the User class or pass -e LOCUST_HOST=URL (Locust's -H)"
            )
        return self.base_url.rstrip("/") + "/" + url.lstrip("/") if url else self.base_url

    def request(
        self,
        method,
        url,
        name=None,
        catch_response=False,
        context=None,
        *,
        params=None,
        data=None,
        json=None,
        headers=None,
        cookies=None,
        auth=None,
        timeout=None,
        allow_redirects=True,
        files=None,
        verify=None,
        stream=None,
        proxies=None,
        cert=None,
    ):
        if files is not None:
            raise TypeError("files= (multipart uploads) is not supported by loadhost's Locust layer")
        if proxies is not None or cert is not None:
            raise TypeError("proxies= and cert= are not supported: loadhost's host holds connections")
        full = self._url(url)
        if params:
            query = urllib.parse.urlencode(params, doseq=True)
            full += ("&" if urllib.parse.urlsplit(full).query else "?") + query
        pairs = dict(self.headers)
        pairs.update(headers or {})
        body = b""
        if data is not None:
            if isinstance(data, (dict, list, tuple)):
                body = urllib.parse.urlencode(data, doseq=True)
                if not any(k.lower() == "content-type" for k in pairs):
                    pairs["Content-Type"] = "application/x-www-form-urlencoded"
            else:
                body = data
        if cookies:
            cookie = "; ".join(f"{k}={v}" for k, v in cookies.items())
            pairs["Cookie"] = cookie
        if isinstance(timeout, tuple):
            timeout = sum(t for t in timeout if t is not None) or None
        options = {
            "headers": pairs,
            "body": body,
            "json": json,
            "timeout": timeout,
            "redirects": _lh.DEFAULT_REDIRECTS if allow_redirects else 0,
            "auth": auth or self.auth,
            "name": name,
        }
        if catch_response:
            options["expected_statuses"] = _ANY_STATUS
        started = time.time()
        error = None
        try:
            got = _lh.request(method, full, **options)
            response = Response(method, got.final_url or full, got.status, got.headers, got.body, got.elapsed)
        except _lh.Denied:
            raise
        except _lh.HttpError as err:
            error = err
            response = Response(method, full, 0, [], b"", time.time() - started, error=err)
        shown = name or url
        if self.request_event is not None:
            self.request_event.fire(
                request_type=method,
                name=shown,
                response_time=response.elapsed.total_seconds() * 1000,
                response_length=len(response.content),
                response=response,
                context=context or {},
                exception=error or (None if response.ok else HTTPError(f"{response.status_code}")),
                start_time=started,
                url=full,
            )
        if catch_response:
            return ResponseContextManager(response, f"{method} {shown}")
        return response

    def get(self, url, **kwargs):
        return self.request("GET", url, **kwargs)

    def post(self, url, data=None, json=None, **kwargs):
        return self.request("POST", url, data=data, json=json, **kwargs)

    def put(self, url, data=None, **kwargs):
        return self.request("PUT", url, data=data, **kwargs)

    def patch(self, url, data=None, **kwargs):
        return self.request("PATCH", url, data=data, **kwargs)

    def delete(self, url, **kwargs):
        return self.request("DELETE", url, **kwargs)

    def head(self, url, **kwargs):
        return self.request("HEAD", url, **kwargs)

    def options(self, url, **kwargs):
        return self.request("OPTIONS", url, **kwargs)


class _Cookies:
    """`self.client.cookies`: the worker's cookie jar, which the host keeps, seen from the host."""

    def __init__(self, session):
        self._session = session

    def clear(self, *args):
        _cookies.clear()

    def get(self, name, default=None, **kwargs):
        for key, value in _cookies.get(self._session._url("/")):
            if key == name:
                return value
        return default

    def set(self, name, value, **kwargs):
        _cookies.set(self._session._url("/"), f"{name}={value}; Path=/")

    def get_dict(self):
        return dict(_cookies.get(self._session._url("/")))
