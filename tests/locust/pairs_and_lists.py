# params and a form as lists of pairs (a key repeated), a JSON list posted and read back, a
# response's text and url judged. Exact per name, failures included.
from locust import HttpUser, constant, task
from locust.exception import StopUser

TURNS = 4


class Lister(HttpUser):
    wait_time = constant(0)

    def on_start(self):
        self.turns = 0

    @task
    def go(self):
        if self.turns == TURNS:
            raise StopUser()
        self.turns += 1
        r = self.client.get("/", params=[("a", 1), ("a", 2)], name="pairs")
        assert r.ok and "a=1&a=2" in r.url, r.url
        with self.client.post("/echo", data=[("k", "x"), ("k", "y")], name="form-pairs", catch_response=True) as f:
            if f.text != "k=x&k=y":
                f.failure(f.text)
        with self.client.post("/echo", json=[1, 2, self.turns], name="json-list", catch_response=True) as j:
            if j.json() != [1, 2, self.turns] or self.turns == 3:
                j.failure("list")
