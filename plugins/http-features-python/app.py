"""The host's HTTP options through the Python SDK (tests/e2e/http_features.rs): one
`GET $TARGET_URL` per task with the SDK's defaults (follow redirects, keep cookies, decode the body).

Checks `status is 200`, `redirects as expected` (`EXPECT_REDIRECTS`, default 0), `final url as
expected` (with `EXPECT_FINAL`), and `decoded` (the body is as long as the target's
`x-decoded-length`, without `content-encoding`, when the target says a decoded length). A request
error fails the task with its text.
"""

import functools

from loadhost import Failed, Task, check, declare_metrics, declare_options, env, http

declare_metrics(
    "status is 200:check",
    "redirects as expected:check",
    "final url as expected:check",
    "decoded:check",
)
declare_options(
    'TARGET_URL:url=http://127.0.0.1:8080/ "the page to GET"',
    'EXPECT_REDIRECTS:int=0 "how many redirects the request should follow"',
    'EXPECT_FINAL:string "the URL the response should come from (none: not checked)"',
)


@functools.cache
def settings() -> tuple:
    """TARGET_URL, EXPECT_REDIRECTS and EXPECT_FINAL, read once per instance."""
    return (
        env("TARGET_URL"),
        env("EXPECT_REDIRECTS"),
        env("EXPECT_FINAL") or "",
    )


def do_task(task: Task) -> None:
    """GET the target once and check where the response came from and its body."""
    url, redirects, final = settings()
    try:
        response = http.get(url, name="features")
    except http.HttpError as err:
        raise Failed(str(err)) from None
    check("redirects as expected", response.redirects == redirects)
    if final:
        check("final url as expected", response.final_url == final)
    decoded_length = response.header("x-decoded-length")
    if decoded_length is not None:
        check(
            "decoded",
            len(response.body) == int(decoded_length)
            and response.body.startswith(b"loadhost sends")
            and response.header("content-encoding") is None,
        )
    if not check("status is 200", response.status == 200):
        raise Failed(f"GET {url} answered {response.status}")
