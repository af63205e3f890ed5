# A SequentialTaskSet walks its steps in order (a weight repeats a step); on_stop runs when the
# user stops. Exact per name.
from locust import HttpUser, SequentialTaskSet, constant, task
from locust.exception import StopUser

LOOPS = 3


class Checkout(SequentialTaskSet):
    def on_start(self):
        self.steps = 0

    @task
    def cart(self):
        self.client.get("/?page=cart", name="cart")

    @task(2)
    def address(self):
        self.client.post("/echo", data={"street": "Main"}, name="address")

    @task
    def pay(self):
        self.client.post("/echo", json={"card": "4111"}, name="pay")
        self.steps += 1
        if self.steps == LOOPS:
            raise StopUser()

    def on_stop(self):
        self.client.get("/?page=bye", name="bye")


class Buyer(HttpUser):
    wait_time = constant(0.005)
    tasks = [Checkout]
