# A TaskSet with its own wait_time, picked by a user with another; tasks given as a dict of
# weights on the TaskSet. Exact per name (the set's tasks are picked at random: compare totals).
# compare: total
from locust import HttpUser, TaskSet, constant, task
from locust.exception import StopUser

TURNS = 8


class Browse(TaskSet):
    wait_time = constant(0.001)

    def on_start(self):
        self.user.turns = 0

    def page(self):
        self.client.get("/?p=page", name="page")

    def item(self):
        self.client.get("/?p=item", name="item")

    def count(self):
        self.user.turns += 1
        if self.user.turns > TURNS:
            raise StopUser()

    tasks = {page: 3, item: 1}

    def get_next_task(self):
        self.count()
        return super().get_next_task()


class Shopper(HttpUser):
    wait_time = constant(1)
    tasks = [Browse]
