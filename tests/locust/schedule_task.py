# schedule_task puts a task next in line: every visit is followed by a checkout. Exact per name.
from locust import HttpUser, TaskSet, constant, task
from locust.exception import StopUser

VISITS = 4


class Flow(TaskSet):
    def on_start(self):
        self.visits = 0

    def checkout(self):
        self.client.post("/echo", json={"visit": self.visits}, name="checkout")

    @task
    def visit(self):
        if self.visits == VISITS:
            raise StopUser()
        self.visits += 1
        self.client.get("/", name="visit")
        self.schedule_task(self.checkout)


class Buyer(HttpUser):
    wait_time = constant(0)
    tasks = [Flow]
