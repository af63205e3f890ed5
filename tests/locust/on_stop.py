# on_stop of the user runs when it stops itself, after its task set's. Exact per name.
from locust import HttpUser, SequentialTaskSet, constant, task
from locust.exception import StopUser


class Session(SequentialTaskSet):
    @task
    def work(self):
        self.client.get("/?work=1", name="work")

    @task
    def done(self):
        raise StopUser()

    def on_stop(self):
        self.client.get("/?set=stop", name="set-stop")


class Worker(HttpUser):
    wait_time = constant(0)
    tasks = [Session]

    def on_start(self):
        self.client.post("/echo", data="login", name="login")

    def on_stop(self):
        self.client.post("/echo", data="logout", name="logout")
