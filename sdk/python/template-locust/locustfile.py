"""__NAME__: a locustfile. loadhost runs it unchanged, and so does Locust: see README.md."""

from locust import HttpUser, between, task


class Visitor(HttpUser):
    # Each user waits 0.5 to 1.5 s after each task.
    wait_time = between(0.5, 1.5)

    def on_start(self):
        # Once per user, before its first task (a login, say).
        self.client.get("/", name="start")

    @task(3)
    def home(self):
        with self.client.get("/", name="home", catch_response=True) as response:
            if response.status_code != 200:
                response.failure(f"status {response.status_code}")

    @task(1)
    def page(self):
        response = self.client.get("/bytes?n=512", name="page")
        if len(response.content) != 512:
            raise ValueError(f"expected 512 bytes, got {len(response.content)}")
