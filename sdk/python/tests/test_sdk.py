"""Unit tests of the SDK's pure-Python parts on the host's CPython, with the componentize-py
bindings replaced by small fakes (the end-to-end path is proved by building and running plugins).

    python3 -B -m unittest discover -s sdk/python/tests
"""

import importlib
import os
import sys
import types
import unittest
from dataclasses import dataclass
from typing import Any, Optional

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))


def _module(name: str, **attrs) -> types.ModuleType:
    """Register a fake module under `name` with `attrs`."""
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    sys.modules[name] = module
    return module


@dataclass(frozen=True)
class Err(Exception):
    value: Any


def _case(name: str):
    return dataclass(type(name, (), {"__annotations__": {"value": str}}))


@dataclass
class Task:
    scenario: str
    worker_id: int
    iteration: int
    attempt: int
    input: bytes


@dataclass
class Request:
    method: str
    url: str
    headers: list
    body: bytes
    timeout_ms: Optional[int]


@dataclass
class ResponseParts:
    headers: bool
    body: bool


@dataclass
class WitResponse:
    status: int
    headers: list
    body: bytes


@dataclass
class RequestOptions:
    parts: ResponseParts
    redirects: Optional[int]
    cookies: bool
    decompress: bool
    name: Optional[str]


@dataclass
class ResponseInfo:
    response: WitResponse
    final_url: str
    redirects: int


CALLS: list = []


def _record(kind):
    def call(*args):
        CALLS.append((kind, *args))
        return args[1] if kind == "check" else None

    return call


_module("componentize_py_types", Err=Err)
_module("wit_world")
_module("wit_world.exports", Doer=type("Doer", (), {}), Lifecycle=type("Lifecycle", (), {}))
_module("wit_world.imports")
_module(
    "wit_world.imports.types",
    Task=Task,
    TaskError_Retryable=_case("TaskError_Retryable"),
    TaskError_Failed=_case("TaskError_Failed"),
    TaskError_Abort=_case("TaskError_Abort"),
)
_module("wit_world.imports.metrics", **{k: _record(k) for k in ("counter", "gauge", "trend", "check")})
HOST_HTTP = _module(
    "wit_world.imports.http",
    Request=Request,
    ResponseParts=ResponseParts,
    RequestOptions=RequestOptions,
    ResponseInfo=ResponseInfo,
    Error_InvalidRequest=_case("Error_InvalidRequest"),
    Error_Denied=_case("Error_Denied"),
    Error_Network=_case("Error_Network"),
)

import loadhost  # noqa: E402 (after the fakes)
from loadhost import config, cookies, http  # noqa: E402
from wit_world.imports import types as wit_types  # noqa: E402


# The fake plugin's folder: error texts name the plugin's files relative to it.
_HERE = os.path.dirname(os.path.abspath(__file__))
# The environment before loadhost_entry guards it, to put back after each test that imports it.
_REAL_ENVIRON = os.environ


def _entry(**app_functions):
    """loadhost_entry freshly imported over a fake `app` (in this folder) with these functions."""
    _module("app", __file__=os.path.join(_HERE, "app.py"), **app_functions)
    sys.modules.pop("loadhost_entry", None)
    return importlib.import_module("loadhost_entry")


class Metrics(unittest.TestCase):
    def setUp(self):
        CALLS.clear()

    def test_tags_accept_dicts_pairs_and_nothing(self):
        loadhost.counter("a", 2, {"k": 1})
        loadhost.gauge("b", 3, [("x", "y")])
        loadhost.trend("c", 1.5)
        self.assertEqual(
            CALLS, [("counter", "a", 2, [("k", "1")]), ("gauge", "b", 3.0, [("x", "y")]), ("trend", "c", 1.5, [])]
        )

    def test_check_returns_ok_as_bool(self):
        self.assertIs(loadhost.check("c", 1), True)
        self.assertIs(loadhost.check("c", None), False)

    def test_a_wrong_argument_names_the_call_and_records_nothing(self):
        cases = (
            (lambda: loadhost.counter("items", 2.5), TypeError,
             "metrics.counter('items', 2.5): delta must be a non-negative integer, got float 2.5"),
            (lambda: loadhost.counter("items", -1), ValueError,
             "metrics.counter('items', -1): delta must be a non-negative integer below 2**64, got int -1"),
            (lambda: loadhost.counter("items", 2**64), ValueError, "below 2**64, got int 18446744073709551616"),
            (lambda: loadhost.counter("items", True), TypeError, "got bool True"),
            (lambda: loadhost.trend("t", "6.4ms"), TypeError,
             "metrics.trend('t', '6.4ms'): value must be a finite number, got str '6.4ms'"),
            (lambda: loadhost.trend("t", float("nan")), ValueError,
             "metrics.trend('t', nan): value must be a finite number, got float nan"),
            (lambda: loadhost.gauge("g", float("-inf")), ValueError, "got float -inf"),
            (lambda: loadhost.gauge("g", None), TypeError, "metrics.gauge('g', None): value must be a finite number"),
            (lambda: loadhost.gauge("g", 10**400), ValueError, "value must be a finite number, got int 1000"),
            (lambda: loadhost.check("", True), ValueError, "metrics.check('', True): name must be a non-empty string"),
            (lambda: loadhost.trend(None, 1.0), TypeError, "name must be a non-empty string, got NoneType None"),
            (lambda: loadhost.counter("c", 1, "route=/"), TypeError, "tags must be a dict or (key, value) pairs"),
            (lambda: loadhost.counter("c", 1, [("a", "b", "c")]), TypeError, "got the item tuple ('a', 'b', 'c')"),
            (lambda: loadhost.counter("c", 1, {1: "x"}), TypeError, "a tag key must be a non-empty string, got int 1"),
            (lambda: loadhost.counter("c", 1, {"k": None}), TypeError,
             "metrics.counter('c', 1): tag 'k' must be a string (or a number), got NoneType None"),
        )
        for call, error, text in cases:
            with self.assertRaises(error) as raised:
                call()
            self.assertIn(text, str(raised.exception))
        self.assertEqual(CALLS, [])

    def test_declarations_need_a_name_and_a_known_kind_and_record_nothing(self):
        loadhost.declare_metrics("journey_ms:trend", "orders{tier}:counter", "status is 200:check", "even:rate")
        cases = (
            (("orders",), ValueError, "declare_metrics('orders'): a declaration is NAME[{TAG,...}]:KIND"),
            ((":trend",), ValueError, "declare_metrics(':trend'): a declaration is NAME"),
            (("orders:histogram",), ValueError, "the kind after the last ':' is trend, counter, gauge or check, got 'histogram'"),
            ((7,), TypeError, "declare_metrics(7): a declaration is a string NAME[{TAG,...}]:KIND, got int 7"),
        )
        for args, error, text in cases:
            with self.assertRaises(error) as raised:
                loadhost.declare_metrics(*args)
            self.assertIn(text, str(raised.exception))
        self.assertEqual(CALLS, [])

    def test_numbers_of_other_types_are_accepted(self):
        from fractions import Fraction

        loadhost.trend("t", Fraction(1, 4))
        loadhost.gauge("g", 7)
        loadhost.counter("c", 2**64 - 1, [("ok", True), ("n", 1.5)])
        self.assertEqual(
            CALLS,
            [
                ("trend", "t", 0.25, []),
                ("gauge", "g", 7.0, []),
                ("counter", "c", 2**64 - 1, [("ok", "True"), ("n", "1.5")]),
            ],
        )


class Env(unittest.TestCase):
    def setUp(self):
        config._at_runtime = True
        os.environ.update(LH_INT="7", LH_FLOAT="0.5", LH_BOOL="Yes", LH_STR="s", LH_BAD="x")

    def tearDown(self):
        config._at_runtime = False

    def test_values_parse_like_the_default(self):
        self.assertEqual(loadhost.env("LH_INT", 1), 7)
        self.assertEqual(loadhost.env("LH_FLOAT", 1.0), 0.5)
        self.assertIs(loadhost.env("LH_BOOL", False), True)
        self.assertEqual(loadhost.env("LH_STR"), "s")
        self.assertEqual(loadhost.env("LH_UNSET", 3), 3)
        self.assertIsNone(loadhost.env("LH_UNSET"))

    def test_a_value_that_does_not_parse_aborts(self):
        for default, expected in (
            (1, "an integer"),
            (1.0, "a number"),
            (True, "a boolean (true/false, 1/0, yes/no, on/off)"),
        ):
            with self.assertRaises(loadhost.ConfigError) as raised:
                loadhost.env("LH_BAD", default)
            self.assertIsInstance(raised.exception, loadhost.Abort)
            self.assertEqual(str(raised.exception), f"LH_BAD=x: expected {expected}")
            self.assertEqual(config.take_bad_setting(), f"LH_BAD=x: expected {expected}")

    def test_numbers_must_be_finite_and_empty_is_false(self):
        os.environ.update(LH_INF="inf", LH_EMPTY=" ")
        with self.assertRaisesRegex(loadhost.ConfigError, "^LH_INF=inf: expected a number$"):
            loadhost.env("LH_INF", 0.0)
        self.assertIs(loadhost.env("LH_EMPTY", True), False)
        config.take_bad_setting()

    def test_the_first_bad_setting_of_a_call_is_kept(self):
        os.environ.update(LH_BAD2="y")
        for key in ("LH_BAD", "LH_BAD2"):
            with self.assertRaises(loadhost.ConfigError):
                loadhost.env(key, 0)
        self.assertEqual(config.take_bad_setting(), "LH_BAD=x: expected an integer")
        self.assertIsNone(config.take_bad_setting())

    def test_reading_at_import_time_is_refused(self):
        config._at_runtime = False
        with self.assertRaisesRegex(RuntimeError, "build time"):
            loadhost.env("LH_INT", 1)


class Http(unittest.TestCase):
    def setUp(self):
        self.sent = []
        self.parts = []
        self.options = []

        # As the host's `send-opts`: the whole response is read, only the parts asked for come
        # back; a URL with "redirect" answers as if two redirects led to /final.
        def send_opts(request, options):
            parts = options.parts
            self.sent.append(request)
            self.parts.append(parts)
            self.options.append(options)
            if "denied" in request.url:
                raise Err(HOST_HTTP.Error_Denied(request.url))
            if "broken" in request.url:
                raise Err(HOST_HTTP.Error_Network("refused"))
            headers = [("Content-Type", b"application/json")] if parts.headers else []
            response = WitResponse(201, headers, b'{"a": 1}' if parts.body else b"")
            if "redirect" in request.url and options.redirects:
                return ResponseInfo(response, "http://h/final", 2)
            return ResponseInfo(response, request.url, 0)

        def send_with(request, parts):
            raise AssertionError("the SDK sends with send-opts")

        HOST_HTTP.send_opts = send_opts
        HOST_HTTP.send_with = send_with

    def test_post_json_sets_body_header_and_timeout(self):
        response = http.post("http://h/", json={"a": 1}, headers={"x-k": "v"}, timeout=1.5)
        request = self.sent[0]
        self.assertEqual((request.method, request.body, request.timeout_ms), ("POST", b'{"a":1}', 1500))
        self.assertEqual(request.headers, [("x-k", b"v"), ("content-type", b"application/json")])
        self.assertTrue(response.ok)
        self.assertEqual(response.json(), {"a": 1})
        self.assertEqual(response.header("content-type"), b"application/json")
        self.assertIsNone(response.header("missing"))

    def test_get_sends_no_body_and_no_timeout(self):
        http.get("http://h/", headers=[("a", b"\x00")])
        self.assertEqual((self.sent[0].method, self.sent[0].body, self.sent[0].timeout_ms), ("GET", b"", None))

    def test_by_default_headers_and_body_come_back(self):
        response = http.get("http://h/")
        self.assertEqual(self.parts, [ResponseParts(headers=True, body=True)])
        self.assertEqual((response.header("content-type"), response.body), (b"application/json", b'{"a": 1}'))

    def test_discard_headers_and_discard_body_ask_for_the_status_only(self):
        response = http.get("http://h/", discard_headers=True, discard_body=True)
        self.assertEqual(self.parts, [ResponseParts(headers=False, body=False)])
        self.assertEqual((response.status, response.headers, response.body), (201, [], b""))
        self.assertIsNone(response.header("content-type"))

    def test_each_part_is_left_out_on_its_own(self):
        kept_body = http.post("http://h/", json={"a": 1}, discard_headers=True)
        kept_headers = http.request("PUT", "http://h/", body="x", discard_body=True)
        self.assertEqual(self.parts, [ResponseParts(False, True), ResponseParts(True, False)])
        self.assertEqual((kept_body.headers, kept_body.json()), ([], {"a": 1}))
        self.assertEqual((kept_headers.header("content-type"), kept_headers.body), (b"application/json", b""))
        self.assertEqual([r.method for r in self.sent], ["POST", "PUT"])

    def test_host_errors_become_exceptions(self):
        with self.assertRaisesRegex(http.Denied, "--allow-host"):
            http.get("http://denied/")
        with self.assertRaises(http.NetworkError):
            http.delete("http://broken/")

    def test_by_default_redirects_cookies_and_decompression_are_on(self):
        response = http.get("http://h/")
        self.assertEqual(
            self.options,
            [RequestOptions(ResponseParts(True, True), redirects=10, cookies=True, decompress=True, name=None)],
        )
        self.assertEqual((response.final_url, response.redirects), ("http://h/", 0))

    def test_options_reach_the_host(self):
        http.post("http://h/", json={}, redirects=0, cookies=False, decompress=False, name="login")
        self.assertEqual(
            self.options[0],
            RequestOptions(ResponseParts(True, True), redirects=0, cookies=False, decompress=False, name="login"),
        )
        http.get("http://h/", redirects=None)
        self.assertEqual(self.options[1].redirects, 10, "None is the default")

    def test_the_response_says_where_it_came_from(self):
        response = http.get("http://h/redirect")
        self.assertEqual((response.final_url, response.redirects), ("http://h/final", 2))
        self.assertIn("final", repr(response.final_url))

    def test_basic_auth_sets_the_authorization_header(self):
        http.get("http://h/", auth=("Aladdin", "open sesame"), headers={"x": "1"})
        self.assertEqual(
            self.sent[0].headers, [("x", b"1"), ("authorization", b"Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==")]
        )
        with self.assertRaisesRegex(TypeError, "auth takes a"):
            http.get("http://h/", auth="user:pass")

    def test_bad_options_are_refused_before_sending(self):
        for bad in (-1, 2**32, 1.5, True, "3"):
            with self.assertRaisesRegex(ValueError, "redirects must be"):
                http.get("http://h/", redirects=bad)
        with self.assertRaisesRegex(TypeError, "name must be a str"):
            http.get("http://h/", name=7)
        self.assertEqual(self.sent, [])


class Cookies(unittest.TestCase):
    def setUp(self):
        self.jar = {}

        def cookies_for(url):
            if not url.startswith("http"):
                raise Err(HOST_HTTP.Error_InvalidRequest(f"invalid URL {url!r}"))
            return sorted(self.jar.items())

        def add_cookie(url, set_cookie):
            if not url.startswith("http"):
                raise Err(HOST_HTTP.Error_InvalidRequest(f"invalid URL {url!r}"))
            name, _, rest = set_cookie.partition("=")
            self.jar[name] = rest.split(";")[0]

        HOST_HTTP.cookies_for = cookies_for
        HOST_HTTP.add_cookie = add_cookie
        HOST_HTTP.clear_cookies = self.jar.clear

    def test_set_get_and_clear(self):
        cookies.set("http://h/", "session=abc; Path=/")
        self.assertEqual(cookies.get("http://h/account"), [("session", "abc")])
        cookies.clear()
        self.assertEqual(cookies.get("http://h/"), [])
        self.assertIs(loadhost.cookies, cookies)

    def test_host_errors_become_exceptions(self):
        with self.assertRaisesRegex(http.InvalidRequest, "invalid URL"):
            cookies.get("ftp://h/")
        with self.assertRaises(http.HttpError):
            cookies.set("nope", "a=b")


class Entry(unittest.TestCase):
    TASK = Task("default", 0, 0, 0, b"")

    def tearDown(self):
        os.environ = _REAL_ENVIRON
        config._at_runtime = False

    def test_task_errors_map_to_their_variant(self):
        for raised, variant in (
            (loadhost.Retryable("r"), wit_types.TaskError_Retryable("r")),
            (loadhost.Failed("f"), wit_types.TaskError_Failed("f")),
            (loadhost.Abort("a"), wit_types.TaskError_Abort("a")),
            (loadhost.Failed(), wit_types.TaskError_Failed("Failed")),
        ):

            def do_task(task, raised=raised):
                raise raised

            with self.assertRaises(Err) as caught:
                _entry(do_task=do_task).Doer().do_task(self.TASK)
            self.assertEqual(caught.exception.value, variant)

    def test_other_exceptions_fail_the_task_naming_type_and_line(self):
        def do_task(task):
            {}["missing"]

        with self.assertRaises(Err) as caught:
            _entry(do_task=do_task).Doer().do_task(self.TASK)
        self.assertIsInstance(caught.exception.value, wit_types.TaskError_Failed)
        self.assertRegex(caught.exception.value.value, r"^KeyError: 'missing' \(test_sdk\.py:\d+\)$")

    def test_the_place_is_the_plugins_line_not_the_sdks(self):
        def do_task(task):
            loadhost.trend("t", "6.4ms")  # the line the text must name

        with self.assertRaises(Err) as caught:
            _entry(do_task=do_task).Doer().do_task(self.TASK)
        line = do_task.__code__.co_firstlineno + 1
        self.assertEqual(
            caught.exception.value,
            wit_types.TaskError_Failed(
                f"TypeError: metrics.trend('t', '6.4ms'): value must be a finite number, got str '6.4ms' "
                f"(test_sdk.py:{line})"
            ),
        )

    def test_a_bad_setting_aborts_even_when_the_plugin_catches_it(self):
        os.environ["LH_DELAY"] = "abc"

        def do_task(task):
            try:
                loadhost.env("LH_DELAY", 0)
            except Exception:
                pass

        def init(worker_id, data):
            loadhost.env("LH_DELAY", 0)

        entry = _entry(do_task=do_task, init=init)
        with self.assertRaises(Err) as caught:
            entry.Doer().do_task(self.TASK)
        self.assertEqual(caught.exception.value, wit_types.TaskError_Abort("LH_DELAY=abc: expected an integer"))
        with self.assertRaises(Err) as caught:
            entry.Lifecycle().init(0, "")
        self.assertEqual(caught.exception.value, "LH_DELAY=abc: expected an integer")
        del os.environ["LH_DELAY"]

    def test_os_environ_refuses_the_plugins_reads_at_build_time_only(self):
        import tempfile

        config._at_runtime = False
        _entry(do_task=lambda task: None)
        for read in (lambda: os.environ.get("HOME"), lambda: os.getenv("HOME"), lambda: dict(os.environ),
                     lambda: "HOME" in os.environ, lambda: list(os.environ.items())):
            with self.assertRaisesRegex(RuntimeError, r"^os.environ was read while the plugin was being imported"):
                read()
        # The standard library's own reads pass (tempfile looks at TMPDIR, zoneinfo at PYTHONTZPATH).
        self.assertTrue(tempfile._candidate_tempdir_list())
        config._at_runtime = True
        self.assertEqual(os.environ.get("HOME"), _REAL_ENVIRON.get("HOME"))
        self.assertEqual(dict(os.environ), dict(_REAL_ENVIRON))

    def test_a_pass_returns_and_marks_the_runtime(self):
        config._at_runtime = False
        self.assertIsNone(_entry(do_task=lambda task: None).Doer().do_task(self.TASK))
        self.assertTrue(config._at_runtime)
        config._at_runtime = False

    def test_without_do_task_the_import_fails(self):
        with self.assertRaisesRegex(RuntimeError, "do_task"):
            _entry()

    def test_lifecycle_defaults_and_calls(self):
        lifecycle = _entry(do_task=lambda task: None).Lifecycle()
        self.assertEqual(lifecycle.setup("{}"), "")
        self.assertIsNone(lifecycle.init(3, ""))
        self.assertIsNone(lifecycle.teardown(""))
        seen = []

        def init(worker_id, data):
            raise ValueError(f"no {worker_id} {data}")

        lifecycle = _entry(do_task=lambda t: None, setup=lambda o: 42, init=init, teardown=seen.append).Lifecycle()
        self.assertEqual(lifecycle.setup("{}"), "42")
        with self.assertRaises(Err) as caught:
            lifecycle.init(3, "42")
        self.assertRegex(caught.exception.value, r"^ValueError: no 3 42 \(test_sdk\.py:\d+\)$")
        lifecycle.teardown("42")
        self.assertEqual(seen, ["42"])


if __name__ == "__main__":
    unittest.main()
