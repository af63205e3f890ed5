# params, a form body and a raw body; the echo is judged. Exact per name, failures included.
from locust import HttpUser, constant, task
from locust.exception import StopUser

TURNS = 5


class Forms(HttpUser):
    wait_time = constant(0)

    def on_start(self):
        self.turns = 0

    @task
    def send(self):
        if self.turns == TURNS:
            raise StopUser()
        self.turns += 1
        self.client.get("/", params={"page": self.turns, "tag": ["a", "b"]}, name="query")
        with self.client.post("/echo", data={"name": "Ada Lovelace", "n": self.turns}, name="form",
                              catch_response=True) as response:
            if response.text != f"name=Ada+Lovelace&n={self.turns}":
                response.failure(response.text)
        with self.client.put("/echo", data=b"\x00\x01raw", name="raw", catch_response=True) as response:
            if response.content != b"\x00\x01raw" or self.turns == 2:
                response.failure("raw")
