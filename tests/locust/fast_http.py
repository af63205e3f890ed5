# FastHttpUser (Locust's geventhttpclient user) with its client's methods: head, patch, delete,
# options and put. Exact per name.
from locust import FastHttpUser, constant, task
from locust.exception import StopUser

TURNS = 3


class Quick(FastHttpUser):
    wait_time = constant(0)

    def on_start(self):
        self.turns = 0

    @task
    def methods(self):
        if self.turns == TURNS:
            raise StopUser()
        self.turns += 1
        self.client.head("/", name="head")
        self.client.patch("/echo", data="p", name="patch")
        self.client.delete("/?id=1", name="delete")
        self.client.options("/", name="options")
        self.client.put("/echo", json={"n": self.turns}, name="put")
