"""Unit tests of the SDK's pure-Python parts on the host's CPython, with the componentize-py
bindings replaced by small fakes (the end-to-end path is proved by building and running plugins).

    python3 -B -m unittest discover -s sdk/python/tests
"""

import importlib
import importlib.machinery
import os
import re
import sys
import types
import unittest
from dataclasses import dataclass
from typing import Any, Optional

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "runner"))


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
_module("wit_world.exports", Doer=type("Doer", (), {}), Lifecycle=type("Lifecycle", (), {}), Plan=type("Plan", (), {}))
_module("wit_world.imports")
_module(
    "wit_world.imports.types",
    Task=Task,
    TaskError_Retryable=_case("TaskError_Retryable"),
    TaskError_Failed=_case("TaskError_Failed"),
    TaskError_Abort=_case("TaskError_Abort"),
)
_module("wit_world.imports.metrics", **{k: _record(k) for k in ("counter", "gauge", "trend", "check")})
_module("wit_world.imports.pause", sleep=_record("sleep"))
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

@dataclass
class CloseFrame:
    code: int
    reason: str


def _unit(name: str):
    return dataclass(type(name, (), {}))


def _typed(name: str, kind):
    return dataclass(type(name, (), {"__annotations__": {"value": kind}}))


class FakeConnection:
    """The host's websocket `connection` resource: an echo peer with scripted failures."""

    opened: list = []

    def __init__(self, url):
        self.url = url
        self.inbox = []
        self.sent = []
        self.released = False
        self.closed_with = None

    @classmethod
    def connect(cls, url, headers, timeout_ms):
        if "denied" in url:
            raise Err(HOST_WS.Error_Denied(url))
        if "many" in url:
            raise Err(HOST_WS.Error_TooManyConnections(8))
        conn = cls(url)
        conn.headers, conn.timeout_ms = headers, timeout_ms
        cls.opened.append(conn)
        return conn

    def send_text(self, text):
        if text == "break":
            raise Err(HOST_WS.Error_Network("connection reset"))
        self.sent.append(text)
        self.inbox.append(HOST_WS.Message_Text(text))

    def send_binary(self, data):
        self.sent.append(data)
        self.inbox.append(HOST_WS.Message_Binary(data))

    def receive(self, timeout_ms):
        self.receive_timeout_ms = timeout_ms
        if not self.inbox:
            raise Err(HOST_WS.Error_Timeout())
        return self.inbox.pop(0)

    def ping(self, timeout_ms):
        return 2.5

    def close(self, code, reason):
        self.closed_with = (code, reason)

    def __exit__(self, *args):
        self.released = True


HOST_WS = _module(
    "wit_world.imports.websocket",
    Connection=FakeConnection,
    CloseFrame=CloseFrame,
    Message_Text=_typed("Message_Text", str),
    Message_Binary=_typed("Message_Binary", bytes),
    Message_Close=_typed("Message_Close", CloseFrame),
    Error_InvalidRequest=_case("Error_InvalidRequest"),
    Error_Denied=_case("Error_Denied"),
    Error_Network=_case("Error_Network"),
    Error_TooManyConnections=_typed("Error_TooManyConnections", int),
    Error_Timeout=_unit("Error_Timeout"),
    Error_Closed=_unit("Error_Closed"),
    Error_TooLarge=_typed("Error_TooLarge", int),
)


@dataclass
class GrpcStatus:
    code: int
    message: str
    trailers: list


@dataclass
class GrpcResponse:
    message: bytes
    headers: list
    trailers: list


HOST_GRPC = _module(
    "wit_world.imports.grpc",
    Status=GrpcStatus,
    Response=GrpcResponse,
    Error_InvalidRequest=_case("Error_InvalidRequest"),
    Error_Denied=_case("Error_Denied"),
    Error_Network=_case("Error_Network"),
    Error_TooManyConnections=_typed("Error_TooManyConnections", int),
    Error_Timeout=_unit("Error_Timeout"),
    Error_Status=_typed("Error_Status", GrpcStatus),
    Error_TooLarge=_typed("Error_TooLarge", int),
)


import loadhost  # noqa: E402 (after the fakes)
from loadhost import config, cookies, grpc, http, options, ws  # noqa: E402
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


class Sleep(unittest.TestCase):
    def setUp(self):
        CALLS.clear()

    def test_seconds_become_whole_milliseconds_and_a_bad_argument_names_the_call(self):
        loadhost.sleep(0.25)
        loadhost.sleep(0.0001)
        loadhost.sleep(2)
        self.assertEqual([c[1:] for c in CALLS], [(250,), (1,), (2000,)])
        for bad in ("1s", -1, float("nan"), float("inf"), None, True):
            with self.assertRaisesRegex(TypeError, r"^sleep\(seconds\): expected a finite number of seconds"):
                loadhost.sleep(bad)
        self.assertEqual(len(CALLS), 3, "nothing slept for a bad argument")


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


class Groups(unittest.TestCase):
    def setUp(self):
        CALLS.clear()

    def test_groups_nest_time_themselves_and_tag_the_checks_inside(self):
        self.assertIsNone(loadhost.current_group())
        with loadhost.group("checkout"):
            loadhost.check("cart ok", True, {"tier": "gold"})
            with loadhost.group("pay"):
                self.assertEqual(loadhost.current_group(), "::checkout::pay")
                loadhost.check("paid", False)
                loadhost.check("mine", True, {"group": "own"})
            loadhost.counter("orders", 1)
        self.assertIsNone(loadhost.current_group())
        checks = [c for c in CALLS if c[0] == "check"]
        self.assertEqual(
            checks,
            [
                ("check", "cart ok", True, [("tier", "gold"), ("group", "::checkout")]),
                ("check", "paid", False, [("group", "::checkout::pay")]),
                ("check", "mine", True, [("group", "own")]),
            ],
        )
        self.assertIn(("counter", "orders", 1, []), CALLS, "other metrics carry no group")
        trends = [(c[1], c[3]) for c in CALLS if c[0] == "trend"]
        self.assertEqual(
            trends,
            [("group_duration", [("group", "::checkout::pay")]), ("group_duration", [("group", "::checkout")])],
        )
        self.assertTrue(all(c[2] >= 0 for c in CALLS if c[0] == "trend"))

    def test_a_group_ends_on_an_exception_and_works_as_a_decorator(self):
        @loadhost.group("login")
        def login():
            raise RuntimeError("refused")

        with self.assertRaisesRegex(RuntimeError, "refused"):
            login()
        self.assertIsNone(loadhost.current_group())
        self.assertEqual([c[3] for c in CALLS if c[0] == "trend"], [[("group", "::login")]])

    def test_a_bad_name_is_refused_naming_the_call(self):
        for bad, error, text in (
            ("", ValueError, "group(''): a group's name must be non-empty and must not contain '::'"),
            ("a::b", ValueError, "must not contain '::'"),
            (7, TypeError, "group(7): a group's name must be a str, got int 7"),
        ):
            with self.assertRaises(error) as raised:
                loadhost.group(bad)
            self.assertIn(text, str(raised.exception))
        with self.assertRaisesRegex(ValueError, "longer than 256 bytes"):
            with loadhost.group("x" * 300):
                pass
        self.assertEqual(CALLS, [])


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


class Options(unittest.TestCase):
    DECLARED = (
        'TARGET_URL:url=http://127.0.0.1:8080/ "the page to GET"',
        "USERS:int! 'how many users'",
        "PAUSE:duration=1m30s",
        "RATIO:float=0.5",
        "VERBOSE:bool=off \"it's chatty\"",
        "GREETING:string='hello world'",
        "TOKEN:string",
    )

    def setUp(self):
        options._declared.clear()
        loadhost.declare_options(*self.DECLARED)
        config._at_runtime = True
        config.take_bad_setting()
        for name in ("TARGET_URL", "USERS", "PAUSE", "RATIO", "VERBOSE", "GREETING", "TOKEN"):
            os.environ.pop(name, None)

    def tearDown(self):
        options._declared.clear()
        config._at_runtime = False
        config.take_bad_setting()

    def test_defaults_come_from_the_declaration_and_values_read_by_its_type(self):
        self.assertEqual(loadhost.env("TARGET_URL"), "http://127.0.0.1:8080/")
        self.assertEqual(loadhost.env("PAUSE"), 90.0)
        self.assertEqual(loadhost.env("RATIO"), 0.5)
        self.assertIs(loadhost.env("VERBOSE"), False)
        self.assertEqual(loadhost.env("GREETING"), "hello world")
        self.assertIsNone(loadhost.env("TOKEN"))
        os.environ.update(TARGET_URL=" ws://h/echo ", USERS=" 12 ", PAUSE="250ms", RATIO="1e-1", VERBOSE="Yes", TOKEN=" x ")
        self.assertEqual(loadhost.env("TARGET_URL"), "ws://h/echo")
        self.assertEqual(loadhost.env("USERS"), 12)
        self.assertEqual(loadhost.env("PAUSE"), 0.25)
        self.assertEqual(loadhost.env("RATIO"), 0.1)
        self.assertIs(loadhost.env("VERBOSE"), True)
        self.assertEqual(loadhost.env("TOKEN"), " x ", "a string as given")
        self.assertIsNone(config.take_bad_setting())

    def test_the_users_mistakes_abort_with_the_message_every_sdk_gives(self):
        with self.assertRaisesRegex(loadhost.ConfigError, r"^-e USERS is required \(int: how many users\)$"):
            loadhost.env("USERS")
        self.assertEqual(config.take_bad_setting(), "-e USERS is required (int: how many users)")
        for name, value, expected in (
            ("USERS", "ten", "an integer"),
            ("USERS", "1_000", "an integer"),
            ("USERS", "99999999999999999999", "an integer from -9223372036854775808 to 9223372036854775807"),
            ("PAUSE", "5", "a duration such as 500ms, 5s, 1.5m, 2h or 1m30s"),
            ("TARGET_URL", "127.0.0.1:8080", "an absolute URL such as http://127.0.0.1:8080/"),
            ("VERBOSE", "maybe", "a boolean (true/false, 1/0, yes/no, on/off)"),
            ("RATIO", "inf", "a number"),
        ):
            os.environ[name] = value
            with self.assertRaises(loadhost.ConfigError) as raised:
                loadhost.env(name)
            self.assertEqual(str(raised.exception), f"{name}={value}: expected {expected}")
            self.assertEqual(config.take_bad_setting(), f"{name}={value}: expected {expected}")
            del os.environ[name]

    def test_a_declared_option_takes_its_default_from_the_declaration_only(self):
        with self.assertRaisesRegex(TypeError, r"env\('RATIO', 0.7\): RATIO is declared with declare_options"):
            loadhost.env("RATIO", 0.7)

    def test_declarations_are_checked_as_the_host_checks_them(self):
        for declaration, says in (
            ("USERS", "expected NAME:TYPE"),
            ("9LIVES:int", "an option's name"),
            ("USERS:integer", "unknown type 'integer' (string, int, float, bool, duration, url)"),
            ("USERS:int!=5", "a required option ('!') has no default"),
            ("USERS:int=ten", "its default is not an integer"),
            ("PAUSE:duration=5", "its default is not a duration"),
            ("U:url=localhost", "its default is not an absolute URL"),
            ("USERS:int=", "nothing after '='"),
            ("USERS:int='5", "a default's quote is not closed"),
            ("NAME:string=it's", "quoted as a whole"),
            ("USERS:int how many", "the help goes last, in quotes"),
            ("USERS:int 'how' many", "'many' after the help"),
            ("USERS:int=5", "USERS is declared already, differently"),
        ):
            with self.assertRaisesRegex(ValueError, "^declare_options\\(" + re.escape(repr(declaration)) + "\\): .*" + re.escape(says)):
                loadhost.declare_options(declaration)
        with self.assertRaisesRegex(TypeError, "got int"):
            loadhost.declare_options(7)
        loadhost.declare_options("USERS:int! \"how many users\"")  # the same again counts once

    def test_durations_read_as_the_host_reads_them(self):
        for text, seconds in (("500ms", 0.5), ("5s", 5.0), ("1.5m", 90.0), ("2h", 7200.0), ("1m30s", 90.0)):
            self.assertEqual(options.duration(text), seconds, text)
        for text in ("", "5", "5x", "1 s", "-1s", "1e3s", "1..5s", "99999999999h"):
            self.assertIsNone(options.duration(text), text)


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

        def send_expecting(request, options, statuses):
            self.expected.append(statuses)
            return send_opts(request, options)

        self.expected = []
        self.worker_expected = []
        HOST_HTTP.send_opts = send_opts
        HOST_HTTP.send_with = send_with
        HOST_HTTP.send_expecting = send_expecting
        HOST_HTTP.set_expected_statuses = self.worker_expected.append

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

    def test_expected_statuses_go_to_the_host_as_inclusive_ranges(self):
        http.get("http://h/gone", expected_statuses=[range(200, 300), 404])
        http.get("http://h/")
        http.get("http://h/", expected_statuses=404)
        self.assertEqual(self.expected, [[(200, 299), (404, 404)], [(404, 404)]], "only requests that ask")
        self.assertEqual(len(self.sent), 3)
        http.set_expected_statuses(range(200, 400), 404)
        http.set_expected_statuses()
        self.assertEqual(self.worker_expected, [[(200, 399), (404, 404)], []])
        for bad, error in ((range(300, 200), ValueError), (range(200, 300, 2), ValueError), ("404", TypeError),
                           (-1, ValueError), (True, TypeError)):
            with self.assertRaises(error):
                http.get("http://h/", expected_statuses=[bad])
        with self.assertRaisesRegex(ValueError, "set_expected_statuses: 70000 is not a status"):
            http.set_expected_statuses(70000)
        self.assertEqual(len(self.sent), 3)

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


class WebSocket(unittest.TestCase):
    def setUp(self):
        FakeConnection.opened.clear()

    def test_connect_sends_headers_and_timeout_in_milliseconds(self):
        conn = ws.connect("ws://h/echo", headers={"x-k": "v"}, timeout=2.5)
        opened = FakeConnection.opened[0]
        self.assertEqual((opened.url, opened.headers, opened.timeout_ms), ("ws://h/echo", [("x-k", b"v")], 2500))
        self.assertEqual(conn.url, "ws://h/echo")
        ws.connect("ws://h/echo", headers=[("a", b"\x00")])
        self.assertEqual((FakeConnection.opened[1].headers, FakeConnection.opened[1].timeout_ms), ([("a", b"\x00")], None))

    def test_messages_come_back_as_str_bytes_or_close(self):
        conn = ws.connect("ws://h/")
        conn.send_text("hello")
        conn.send_binary(bytearray(b"\x01\x02"))
        conn.send("again")
        conn.send(b"raw")
        self.assertEqual(conn.receive(timeout=1), "hello")
        self.assertEqual(FakeConnection.opened[0].receive_timeout_ms, 1000)
        received = conn.receive()
        self.assertEqual((received, type(received)), (b"\x01\x02", bytes))
        self.assertEqual([conn.receive(), conn.receive()], ["again", b"raw"])
        FakeConnection.opened[0].inbox.append(HOST_WS.Message_Close(CloseFrame(1001, "going away")))
        self.assertEqual(conn.receive(), ws.Close(1001, "going away"))
        self.assertIsNone(FakeConnection.opened[0].receive_timeout_ms)

    def test_wrong_argument_types_are_refused(self):
        conn = ws.connect("ws://h/")
        with self.assertRaisesRegex(TypeError, "send_text takes a str"):
            conn.send_text(b"x")
        with self.assertRaisesRegex(TypeError, "send_binary takes bytes"):
            conn.send_binary("x")
        with self.assertRaisesRegex(ValueError, "close code"):
            conn.close(70000)
        self.assertEqual(FakeConnection.opened[0].sent, [])

    def test_host_errors_become_exceptions_of_one_family(self):
        with self.assertRaisesRegex(ws.Denied, "denied: the host is not allowed .*--allow-host"):
            ws.connect("ws://denied/")
        with self.assertRaises(ws.TooManyConnections) as raised:
            ws.connect("ws://many/")
        self.assertEqual(raised.exception.limit, 8)
        conn = ws.connect("ws://h/")
        with self.assertRaises(ws.Timeout) as raised:
            conn.receive(timeout=0.1)
        self.assertIsInstance(raised.exception, TimeoutError)
        with self.assertRaisesRegex(ws.NetworkError, "connection reset"):
            conn.send_text("break")
        for case in (ws.Denied, ws.TooManyConnections, ws.Timeout, ws.NetworkError, ws.Closed, ws.InvalidRequest, ws.TooLarge):
            self.assertTrue(issubclass(case, ws.WebSocketError))

    def test_close_and_drop_release_the_connection_once(self):
        conn = ws.connect("ws://h/")
        host = FakeConnection.opened[0]
        conn.ping(timeout=1)
        self.assertEqual(conn.ping(), 0.0025, "seconds, as every time in the Python SDK")
        conn.close(4000, "done")
        self.assertEqual((host.closed_with, host.released, conn.closed), ((4000, "done"), True, True))
        conn.close()
        with self.assertRaisesRegex(ws.Closed, "is closed"):
            conn.send_text("x")
        with ws.connect("ws://h/") as other:
            other.send_text("x")
        self.assertEqual((FakeConnection.opened[1].closed_with, FakeConnection.opened[1].released), ((1000, ""), True))
        dropped = ws.connect("ws://h/")
        dropped.drop()
        dropped.drop()
        self.assertEqual((FakeConnection.opened[2].closed_with, FakeConnection.opened[2].released), (None, True))


class Grpc(unittest.TestCase):
    def setUp(self):
        self.calls = []

        def call(target, method, metadata, message, timeout_ms):
            self.calls.append((target, method, metadata, message, timeout_ms))
            status = dict(metadata).get("x-loadhost-status")
            if "denied" in target:
                raise Err(HOST_GRPC.Error_Denied(target))
            if "down" in target:
                raise Err(HOST_GRPC.Error_Network("connection refused"))
            if status is not None:
                raise Err(HOST_GRPC.Error_Status(GrpcStatus(int(status), "injected", [("x-why", b"test")])))
            return GrpcResponse(message, [("content-type", b"application/grpc")], [("grpc-status", b"0")])

        HOST_GRPC.call = call

    def test_a_call_sends_bytes_metadata_and_deadline(self):
        response = grpc.call("http://h:1", "/p.S/M", b"\x0a\x01x", metadata={"X-Key": "v", "k-bin": b"\x00"}, timeout=1.5)
        self.assertEqual(self.calls, [("http://h:1", "/p.S/M", [("x-key", b"v"), ("k-bin", b"\x00")], b"\x0a\x01x", 1500)])
        self.assertEqual(response.message, b"\x0a\x01x")
        self.assertEqual((response.header("Content-Type"), response.trailer("grpc-status")), (b"application/grpc", b"0"))
        self.assertIsNone(response.header("missing"))
        grpc.call("http://h:1", "/p.S/M", bytearray(b"y"))
        self.assertEqual(self.calls[1][2:], ([], b"y", None))

    def test_a_status_other_than_ok_raises_grpc_error_with_code_and_message(self):
        with self.assertRaises(grpc.GrpcError) as raised:
            grpc.call("http://h", "/p.S/M", b"", metadata=[("x-loadhost-status", "14")])
        error = raised.exception
        self.assertEqual((error.code, error.message, error.trailer("x-why")), (grpc.UNAVAILABLE, "injected", b"test"))
        self.assertIs(type(error), grpc.GrpcError)
        self.assertEqual(str(error), "gRPC status 14: injected")

    def test_the_hosts_own_reasons_carry_the_code_a_grpc_client_reports(self):
        with self.assertRaisesRegex(grpc.Denied, "denied: the host is not allowed") as raised:
            grpc.call("http://denied", "/p.S/M", b"")
        self.assertEqual(raised.exception.code, grpc.PERMISSION_DENIED)
        with self.assertRaises(grpc.NetworkError) as raised:
            grpc.call("http://down", "/p.S/M", b"")
        self.assertEqual((raised.exception.code, raised.exception.message), (grpc.UNAVAILABLE, "connection refused"))
        self.assertIsInstance(raised.exception, grpc.GrpcError)

    def test_text_is_not_a_message(self):
        with self.assertRaisesRegex(TypeError, "protobuf bytes, not str"):
            grpc.call("http://h", "/p.S/M", "hello")
        self.assertEqual(self.calls, [])

    def test_a_stream_sends_receives_and_ends(self):
        test = self

        class FakeStream:
            @classmethod
            def open(cls, target, method, metadata, timeout_ms):
                stream = cls()
                stream.opened = (target, method, metadata, timeout_ms)
                stream.queue, stream.half_closed, stream.released = [], False, False
                test.stream = stream
                return stream

            def send(self, message):
                self.queue.append(message)

            def close_send(self):
                self.half_closed = True

            def receive(self, timeout_ms):
                if self.queue:
                    return self.queue.pop(0)
                if self.half_closed:
                    return None
                raise Err(HOST_GRPC.Error_Timeout())

            def trailers(self):
                return [("grpc-status", b"0")] if self.half_closed else []

            def __exit__(self, *args):
                self.released = True

        HOST_GRPC.StreamingCall = FakeStream
        with grpc.stream("http://h", "/p.S/Bidi", metadata={"a": "b"}, timeout=3) as call:
            call.send(b"one")
            self.assertEqual(call.receive(timeout=1), b"one")
            with self.assertRaises(grpc.Timeout) as raised:
                call.receive(timeout=0.01)
            self.assertEqual(raised.exception.code, grpc.DEADLINE_EXCEEDED)
            call.send(b"two")
            call.close_send()
            self.assertEqual(list(call), [b"two"])
            self.assertEqual(call.trailers(), [("grpc-status", b"0")])
        self.assertEqual(self.stream.opened, ("http://h", "/p.S/Bidi", [("a", b"b")], 3000))
        self.assertTrue(self.stream.released)


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

    def test_packages_installed_with_pip_may_read_the_environment_at_build_time(self):
        import tempfile

        with tempfile.TemporaryDirectory() as folder:
            # As `pip install --target`: a package and a module, listed in a dist-info's RECORD.
            os.mkdir(os.path.join(folder, "envpkg"))
            with open(os.path.join(folder, "envpkg", "__init__.py"), "w") as module:
                module.write("import os\nIMPLEMENTATION = os.getenv('ENVPKG_IMPLEMENTATION', 'python')\n")
            with open(os.path.join(folder, "envmod.py"), "w") as module:
                module.write("import os\nHOME = os.environ.get('HOME')\n")
            os.mkdir(os.path.join(folder, "envpkg-1.0.dist-info"))
            with open(os.path.join(folder, "envpkg-1.0.dist-info", "RECORD"), "w") as record:
                record.write("envpkg/__init__.py,sha256=x,1\nenvpkg-1.0.dist-info/RECORD,,\n../../bin/tool,,\n")
            self.assertEqual(config.installed_packages([folder, "/nonexistent"]), frozenset({"envpkg"}))
            sys.path.insert(0, folder)
            try:
                config._at_runtime = False
                # The entry finds the plugin's folder from app's spec, without importing it.
                origin = os.path.join(folder, "app.py")
                spec = importlib.machinery.ModuleSpec("app", None, origin=origin)
                _module("app", __file__=origin, __spec__=spec, do_task=lambda task: None)
                sys.modules.pop("loadhost_entry", None)
                importlib.import_module("loadhost_entry")
                self.assertEqual(config._third_party, frozenset({"envpkg"}))
                self.assertEqual(importlib.import_module("envpkg").IMPLEMENTATION, "python")
                # A module not installed by pip is the plugin's own: its read is refused.
                with self.assertRaisesRegex(RuntimeError, "^os.environ was read while the plugin was being imported"):
                    importlib.import_module("envmod")
            finally:
                sys.path.remove(folder)
                for name in ("envpkg", "envmod"):
                    sys.modules.pop(name, None)
                config._third_party = frozenset()

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


class Runner(unittest.TestCase):
    """The runner's loading of a script (what `/script` holds at run time is a folder here)."""

    TASK = Task("default", 0, 0, 0, b"")

    @classmethod
    def setUpClass(cls):
        saved = list(sys.path)
        import loadhost_runner

        cls.runner = loadhost_runner
        # Loading the runner warmed up on its own script and left the import path as it was.
        assert sys.path == saved and "loadhost_warm_up" not in sys.modules and config.plugin_root is None

    def setUp(self):
        import tempfile

        self.saved_path = list(sys.path)
        self.folder = tempfile.TemporaryDirectory()
        self.root = self.folder.name
        self.loaded = []

    def tearDown(self):
        sys.path[:] = self.saved_path
        config.plugin_root = None
        config._at_runtime = False
        for name in self.loaded:
            sys.modules.pop(name, None)
        self.folder.cleanup()

    def write(self, name: str, text: str) -> None:
        path = os.path.join(self.root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as out:
            out.write(text)
        self.loaded.append(os.path.splitext(os.path.basename(name))[0])

    def serve(self, relative: str):
        """The exports over the script `relative`, as the runner serves them (loaded at the first call)."""
        from loadhost import _exports

        _exports.serve(lambda: self.runner.load(self.root, relative), self.runner.missing_module)
        return _exports

    def test_a_script_imports_its_folders_modules_and_runs_through_the_exports(self):
        self.write("rt_helper.py", "def tag():\n    return 'from-helper'\n")
        self.write("rt_journey.py", "import rt_helper\nseen = []\n\ndef setup(options):\n    return rt_helper.tag()\n\n"
                   "def do_task(task):\n    seen.append(task.iteration)\n")
        exports = self.serve("rt_journey.py")
        self.assertEqual(exports.Lifecycle().setup(""), "from-helper")
        self.assertIsNone(exports.Doer().do_task(self.TASK))
        self.assertEqual(sys.modules["rt_journey"].seen, [0])
        self.assertEqual((sys.path, config.plugin_root), ([self.root], self.root))

    def test_an_error_in_a_task_names_the_scripts_file_and_line(self):
        self.write("sub/rt_lookup.py", "def find(name):\n    return {}[name]\n")
        self.write("sub/rt_main.py", "import rt_lookup\n\ndef do_task(task):\n    rt_lookup.find('x')\n")
        with self.assertRaises(Err) as caught:
            self.serve("sub/rt_main.py").Doer().do_task(self.TASK)
        self.assertEqual(caught.exception.value, wit_types.TaskError_Failed("KeyError: 'x' (rt_lookup.py:2)"))

    def test_a_script_that_cannot_be_loaded_fails_every_call_with_one_line(self):
        self.write("rt_syntax.py", "\n\ndef do_task(task)\n    pass\n")
        self.write("rt_nodo.py", "x = 1\n")
        self.write("rt_numpy.py", "import json\nimport numpy_absent_here\n")
        self.write("rt_stdlib.py", "import tracemalloc_absent\n")
        self.write("rt_raises.py", "import json\nSETTINGS = json.loads('{}')\nLIMIT = SETTINGS['limit']\n")
        self.write("rt_exits.py", "import sys\nsys.exit(3)\n")
        self.write("json.py", "def do_task(task):\n    pass\n")
        for relative, says in (
            ("rt_syntax.py", r"^SyntaxError: expected ':' \(rt_syntax\.py:3\)$"),
            ("rt_nodo.py", r"^rt_nodo\.py must define a function do_task\(task\)$"),
            ("rt_numpy.py", r"^ModuleNotFoundError: the Python runner has no module 'numpy_absent_here': a script "
                            r"may import its own files .* \(rt_numpy\.py:2\)$"),
            ("rt_raises.py", r"^KeyError: 'limit' \(rt_raises\.py:3\)$"),
            ("rt_exits.py", r"^SystemExit: 3 \(rt_exits\.py:2\)$"),
            ("absent.py", r"^absent\.py: no such file in the script's folder$"),
            ("../outside.py", r"^LOADHOST_SCRIPT=\.\./outside\.py: expected a \.py file in the script's folder$"),
            ("notes.txt", r"expected a \.py file"),
            ("json.py", r"^json\.py: the runner already has a module named 'json': rename the script$"),
        ):
            exports = self.serve(relative)
            for call in (lambda: exports.Lifecycle().setup(""), lambda: exports.Lifecycle().init(0, "")):
                with self.assertRaises(Err) as caught:
                    call()
                self.assertRegex(caught.exception.value, says, relative)
            # A task aborts the run: no task of it can pass.
            with self.assertRaises(Err) as caught:
                exports.Doer().do_task(self.TASK)
            self.assertIsInstance(caught.exception.value, wit_types.TaskError_Abort, relative)
            self.assertRegex(caught.exception.value.value, says, relative)
        with self.assertRaises(Err) as caught:
            self.serve("rt_stdlib.py").Lifecycle().setup("")
        self.assertIn("the Python runner has no module 'tracemalloc_absent'", caught.exception.value)

    def test_a_standard_library_module_left_out_is_named_as_such(self):
        error = ModuleNotFoundError("No module named 'sqlite3'", name="sqlite3")
        self.assertTrue(self.runner.missing_module(error).startswith(
            "the Python runner has no standard-library module 'sqlite3':"))
        self.assertIsNone(self.runner.missing_module(ModuleNotFoundError("no name")))

    def test_without_loadhost_script_the_runner_says_what_is_missing(self):
        os.environ.pop("LOADHOST_SCRIPT", None)
        with self.assertRaisesRegex(Exception, "^LOADHOST_SCRIPT is not set: it names the script to run"):
            self.runner.load_script()


if __name__ == "__main__":
    unittest.main()
