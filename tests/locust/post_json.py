# A login in on_start sets a header every later request carries; each task posts JSON and judges
# the echo with catch_response. Exact per name, failures included.
from locust import HttpUser, between, task
from locust.exception import StopUser

TURNS = 6


class Api(HttpUser):
    wait_time = between(0.005, 0.02)

    def on_start(self):
        self.turns = 0
        reply = self.client.post("/echo", json={"user": "ada", "password": "secret"}, name="login")
        self.client.headers.update({"Authorization": "Bearer " + reply.json()["user"]})

    @task
    def order(self):
        if self.turns == TURNS:
            raise StopUser()
        self.turns += 1
        item = {"id": self.turns, "qty": 2}
        with self.client.post("/echo", json=item, name="order", catch_response=True) as response:
            # Every third order "fails" on the locustfile's own judgement.
            if response.json() != item or self.turns % 3 == 0:
                response.failure("echo differs")
