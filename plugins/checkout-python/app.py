"""A two-step checkout journey against the built-in target: the Python twin of `plugins/checkout`
(Rust), to show and test groups, checks with tags and expected statuses; `checkout-js` and
`checkout-c` behave the same.

Each worker expects 200-299 and 410 for its requests (set in `init`). Each task with iteration `i`
has the tier `gold` (even `i`) or `silver` (odd `i`), and:
- in the group `checkout`: `GET TARGET_URL/` (`/status?code=503` for a silver task with
  `i % 4 == 1`) and the check `status is 200`, tagged with the tier;
- in the group `pay`, inside it: `GET TARGET_URL/status?code=404`, a request that expects 200-299
  and 404, and the check `basket gone`;
- outside any group: `GET TARGET_URL/status?code=410`, which the worker expects, and the check
  `coupon expired`.

So only the 503s count in `http_req_failed`. A check that does not hold fails the task.
"""

from loadhost import Failed, Task, check, declare_metrics, env, group, http

declare_metrics("status is 200{tier,group}:check", "basket gone{group}:check", "coupon expired:check")


def init(worker_id: int, setup_data: str) -> None:
    """Every request of this worker expects 2xx and 410."""
    http.set_expected_statuses(range(200, 300), 410)


def status(url: str, **options) -> int:
    """GET `url`; a request error fails the task with its text."""
    try:
        return http.get(url, **options).status
    except http.HttpError as err:
        raise Failed(str(err)) from None


def do_task(task: Task) -> None:
    """The journey: checkout, pay inside it, then the coupon."""
    base = env("TARGET_URL", "http://127.0.0.1:8080").rstrip("/")
    i = task.iteration
    tier = "gold" if i % 2 == 0 else "silver"
    with group("checkout"):
        url = f"{base}/status?code=503" if tier == "silver" and i % 4 == 1 else f"{base}/"
        ok = check("status is 200", status(url) == 200, {"tier": tier})
        with group("pay"):
            gone = check("basket gone", status(f"{base}/status?code=404", expected_statuses=[range(200, 300), 404]) == 404)
    expired = check("coupon expired", status(f"{base}/status?code=410") == 410)
    if not (ok and gone and expired):
        raise Failed(f"a check failed on iteration {i} ({tier})")
