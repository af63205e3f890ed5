# Several User classes: fixed_count takes its users first, the rest follow the weights. With 4
# users: 1 admin, then shoppers and browsers 2:1. Exact per name.
from locust import HttpUser, constant, task
from locust.exception import StopUser

TURNS = 4


class Counted(HttpUser):
    abstract = True
    wait_time = constant(0.005)

    def on_start(self):
        self.turns = 0

    def turn(self):
        if self.turns == TURNS:
            raise StopUser()
        self.turns += 1


class Admin(Counted):
    fixed_count = 1

    @task
    def report(self):
        self.turn()
        self.client.get("/?report=1", name="admin")


class Shopper(Counted):
    weight = 2

    @task
    def buy(self):
        self.turn()
        self.client.post("/echo", json={"sku": 1}, name="shopper")


class Browser(Counted):
    weight = 1

    @task
    def look(self):
        self.turn()
        self.client.get("/bytes?n=1", name="browser")
