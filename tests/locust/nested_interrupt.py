# A nested TaskSet runs until it interrupts itself, handing control back to the user, who picks
# it again: each visit enters, looks twice and leaves. Exact per name.
from locust import HttpUser, SequentialTaskSet, constant, task
from locust.exception import StopUser

VISITS = 3


class Shop(SequentialTaskSet):
    def on_start(self):
        if self.user.visits == VISITS:
            raise StopUser()
        self.user.visits += 1
        self.client.get("/?page=shop", name="shop-enter")

    @task(2)
    def look(self):
        self.client.get("/bytes?n=5", name="shop-look")

    @task
    def leave(self):
        self.interrupt(reschedule=False)

    def on_stop(self):
        self.client.get("/?page=left", name="shop-left")


class Visitor(HttpUser):
    wait_time = constant(0.005)
    tasks = [Shop]

    def on_start(self):
        self.visits = 0
