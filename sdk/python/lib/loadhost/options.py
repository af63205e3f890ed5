"""Options the plugin declares: the `-e` settings it reads, each with a type, a default or `!`
(required) and a one-line help.

    from loadhost import declare_options, env

    declare_options(
        'TARGET_URL:url=http://127.0.0.1:8080/ "the page to GET"',
        'USERS:int! "how many users"',
        'PAUSE:duration=250ms "the pause between two requests"',
    )

    def do_task(task):
        url = env("TARGET_URL")  # "http://127.0.0.1:8080/" unless -e TARGET_URL=... says otherwise
        users = env("USERS")      # an int: loadhost run refuses a run without it
        pause = env("PAUSE")      # seconds, as a float: 0.25

Call `declare_options` at the top level with string literals: the build (build.sh, or loadhost for
a script run as it is) reads the calls from the source, without running it, into the component's
`loadhost:options` section. Then `loadhost inspect` lists them, and `loadhost run` refuses before
any load a run that lacks a required option or gives one a value of the wrong type, and warns about
an `-e` no option has (`BLOB_BYTE`: did you mean BLOB_BYTES?).

A declaration is `NAME:TYPE[!][=DEFAULT] [HELP]`: NAME an environment variable's name; TYPE one of
`string`, `int`, `float`, `bool`, `duration`, `url`; `!` for a required option (which has no
default); DEFAULT a word without white space or quotes, or quoted; HELP quoted, "…" or '…' (no
escapes: a text holds no quote of its own kind). `env(NAME)` gives the value typed: str, int,
float, bool, float seconds, str; None for an option neither required nor with a default that is
not given.
"""

import math
import re
from typing import NamedTuple, Optional

TYPES = ("string", "int", "float", "bool", "duration", "url")

BOOLEAN = "a boolean (true/false, 1/0, yes/no, on/off)"
_TRUE = frozenset(("1", "true", "yes", "on"))
_FALSE = frozenset(("0", "false", "no", "off", ""))

# What a value of each type looks like, in the words every SDK and the host use.
EXPECTED = {
    "string": "a text",
    "int": "an integer",
    "float": "a number",
    "bool": BOOLEAN,
    "duration": "a duration such as 500ms, 5s, 1.5m, 2h or 1m30s",
    "url": "an absolute URL such as http://127.0.0.1:8080/",
}

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_INT = re.compile(r"[+-]?[0-9]+\Z")
_FLOAT_TEXT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^/?#\s]+[^\s]*\Z")
_DURATION_PART = re.compile(r"([0-9.]+)(ms|s|m|h)")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_MAX_SECONDS = 1e9
_I64 = 2**63


class Option(NamedTuple):
    """One declared option."""

    name: str
    type: str
    required: bool
    default: Optional[str]
    help: str

    def about(self) -> str:
        """`int: how many users`: the type and the help, as the messages say them."""
        return f"{self.type}: {self.help}" if self.help else self.type


class Unfit(ValueError):
    """A value that is not one of its option's type; `expected` says what it should look like."""

    def __init__(self, expected: str):
        super().__init__(expected)
        self.expected = expected


# Every option declared so far, by name.
_declared: dict = {}


def declared(name: str) -> Optional[Option]:
    """The option declared as `name`, if any."""
    return _declared.get(name)


def declare_options(*declarations: str) -> None:
    """Declare the `-e` options the plugin reads, each as `NAME:TYPE[!][=DEFAULT] [HELP]` (see the
    module's documentation); `env(NAME)` then reads each typed, with its declared default.

    Call it at the top level of app.py (or the script) with string literals. The build imports
    the module, so this call checks each declaration then, and a wrong one fails the build."""
    for declaration in declarations:
        call = f"declare_options({declaration!r})"
        if type(declaration) is not str:
            raise TypeError(f"{call}: a declaration is a string NAME:TYPE[!][=DEFAULT] [HELP], got {type(declaration).__name__}")
        try:
            option = parse(declaration)
        except ValueError as err:
            raise ValueError(f"{call}: {err}") from None
        known = _declared.get(option.name)
        if known is not None and known != option:
            raise ValueError(f"{call}: {option.name} is declared already, differently")
        _declared[option.name] = option


def parse(line: str) -> Option:
    """One declaration, checked by the rules the host applies (a ValueError says what is wrong)."""
    name, colon, rest = line.partition(":")
    name = name.strip()
    if not colon:
        raise ValueError("expected NAME:TYPE[!][=DEFAULT] [HELP], such as 'USERS:int=10 \"how many users\"'")
    if not _NAME.match(name) or len(name) > 128:
        raise ValueError("an option's name is 1 to 128 letters, digits or '_', not starting with a digit")
    rest = rest.lstrip()
    word = re.match(r"[A-Za-z]*", rest).group()
    if word not in TYPES:
        raise ValueError(f"unknown type {word!r} ({', '.join(TYPES)})")
    rest = rest[len(word) :].lstrip()
    required = rest.startswith("!")
    if required:
        rest = rest[1:].lstrip()
    default = None
    if rest.startswith("="):
        if required:
            raise ValueError("a required option ('!') has no default")
        default, rest = _default(rest[1:].lstrip())
        try:
            convert(word, default)
        except Unfit as unfit:
            raise ValueError(f"its default is not {unfit.expected}") from None
        rest = rest.lstrip()
    help_text = ""
    if rest:
        quoted = _quoted(rest)
        if quoted is None:
            raise ValueError("the help goes last, in quotes (\"…\" or '…'), after the type or the default")
        help_text, after = quoted
        if after.strip():
            raise ValueError(f"{after.strip()!r} after the help: the help goes last")
    return Option(name, word, required, default, help_text.strip())


def _quoted(text: str):
    """The text inside the quotes `text` starts with and what follows them, or None."""
    if not text or text[0] not in "\"'":
        return None
    end = text.find(text[0], 1)
    return None if end < 0 else (text[1:end], text[end + 1 :])


def _default(text: str):
    """A default at the start of `text` (quoted, or a word) and what follows it."""
    if text[:1] in ("'", '"'):
        quoted = _quoted(text)
        if quoted is None:
            raise ValueError("a default's quote is not closed")
        return quoted
    word = re.match(r"\S*", text).group()
    if not word:
        raise ValueError("nothing after '=': write the default, or \"\" for an empty one")
    if "'" in word or '"' in word:
        raise ValueError(f"{word!r}: a default with a quote in it is quoted as a whole")
    return word, text[len(word) :]


def convert(type_name: str, raw: str):
    """`raw` as a value of `type_name`: the same rules in every SDK and the host (white space
    around it ignored, but for a string). Raises Unfit."""
    text = raw.strip()
    if type_name == "string":
        return raw
    if type_name == "int":
        if not _INT.match(text):
            raise Unfit(EXPECTED["int"])
        value = int(text)
        if not -_I64 <= value < _I64:
            raise Unfit(f"an integer from {-_I64} to {_I64 - 1}")
        return value
    if type_name == "float":
        value = float(text) if _FLOAT_TEXT.match(text) else math.nan
        if not math.isfinite(value):
            raise Unfit(EXPECTED["float"])
        return value
    if type_name == "bool":
        word = text.lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
        raise Unfit(BOOLEAN)
    if type_name == "duration":
        seconds = duration(text)
        if seconds is None:
            raise Unfit(EXPECTED["duration"])
        return seconds
    if type_name == "url":
        if not _URL.match(text):
            raise Unfit(EXPECTED["url"])
        return text
    raise ValueError(f"unknown type {type_name!r}")


def duration(text: str):
    """Seconds in a duration as loadhost's flags take it (`500ms`, `1.5m`, `1m30s`), or None."""
    at, seconds = 0, 0.0
    while at < len(text):
        part = _DURATION_PART.match(text, at)
        if part is None or part.group(1).count(".") > 1 or part.group(1) == ".":
            return None
        seconds += float(part.group(1)) * _UNITS[part.group(2)]
        at = part.end()
    if at == 0 or not math.isfinite(seconds) or seconds > _MAX_SECONDS:
        return None
    return seconds
