"""The standard library a load script reaches for, in the runner (tests/e2e/runner_python.rs): each
use is a check, and a use that raises fails the task naming its line."""

import base64
import csv
import datetime
import decimal
import gzip
import hashlib
import hmac
import json
import logging
import os
import random
import re
import statistics
import tomllib
import urllib.parse
import uuid
import xml.etree.ElementTree as ElementTree
import zlib

from loadhost import check

HERE = os.path.dirname(__file__)


def do_task(task) -> None:
    check("datetime.strptime", datetime.datetime.strptime("2026-12-01", "%Y-%m-%d").day == 1)
    check("json", json.loads('{"a": [1, 2]}')["a"] == [1, 2])
    check("re", re.fullmatch(r"order-(\d+)", "order-17").group(1) == "17")
    check("hashlib", hashlib.sha256(b"x").hexdigest().startswith("2d711642"))
    check("hmac", len(hmac.new(b"key", b"msg", "sha256").digest()) == 32)
    check("base64", base64.b64decode(base64.b64encode(b"\x00\xff")) == b"\x00\xff")
    check("uuid", len(str(uuid.uuid4())) == 36)
    check("random", 1 <= random.randint(1, 6) <= 6)
    check("statistics", statistics.mean([1, 2, 3]) == 2)
    check("decimal", decimal.Decimal("0.1") + decimal.Decimal("0.2") == decimal.Decimal("0.3"))
    check("urllib.parse", urllib.parse.quote("a b/c") == "a%20b/c")
    check("gzip", gzip.decompress(gzip.compress(b"body")) == b"body")
    check("zlib", zlib.decompress(zlib.compress(b"body")) == b"body")
    check("xml", ElementTree.fromstring("<a><b>1</b></a>").find("b").text == "1")
    check("tomllib", tomllib.loads("rate = 5")["rate"] == 5)
    logging.getLogger("journey").info("logging works")
    check("logging", True)
    with open(os.path.join(HERE, "users.csv"), newline="", encoding="utf-8-sig") as rows:
        check("csv with a BOM", [row["name"] for row in csv.DictReader(rows)] == ["ada", "linus"])
    with open(os.path.join(HERE, "latin1.txt"), encoding="latin-1") as text:
        check("latin-1", text.read().strip() == "caf\u00e9")
