# A LoadTestShape of two steps: 2 users for 2 s, then 4 users until 4 s, then the test ends. Each
# user makes one request every 0.25 s, so about 2 × 2 × 4 + 4 × 2 × 4 = 48 in all, in both tools;
# the command line's -u, -r and -t have no effect on a shape, in Locust as here.
from locust import HttpUser, LoadTestShape, constant_pacing, task


class Reader(HttpUser):
    wait_time = constant_pacing(0.25)

    @task
    def read(self):
        self.client.get("/", name="home")


class Steps(LoadTestShape):
    stages = [(2, 2, 20), (4, 4, 20)]

    def tick(self):
        run_time = self.get_run_time()
        for until, users, rate in self.stages:
            if run_time < until:
                return (users, rate)
        return None
