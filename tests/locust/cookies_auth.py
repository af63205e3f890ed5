# Session auth and headers on every request, a cookie set and read back from the worker's jar,
# a response's headers and JSON judged. Exact per name, failures included.
from locust import HttpUser, constant, task
from locust.exception import StopUser

TURNS = 4


class Member(HttpUser):
    wait_time = constant(0)

    def on_start(self):
        self.turns = 0
        self.client.auth = ("ada", "secret")
        self.client.headers["X-Team"] = "load"
        self.client.cookies.set("session", "abc")

    @task
    def profile(self):
        if self.turns == TURNS:
            raise StopUser()
        self.turns += 1
        with self.client.post("/echo", json={"turn": self.turns}, name="profile", catch_response=True) as r:
            ok = r.json()["turn"] == self.turns and r.headers.get("content-length") is not None
            ok = ok and self.client.cookies.get("session") == "abc"
            if not ok:
                r.failure("profile")
        self.client.get("/", name="home", cookies={"extra": "1"})
