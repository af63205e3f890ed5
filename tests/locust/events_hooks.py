# Event hooks load and fire: a request listener; a custom command-line option with its default.
# (Module state is per user in loadhost, shared by the users of a process in Locust: the listener's
# count is only read by the user that made it.) Exact per name.
from locust import HttpUser, constant, events, task
from locust.exception import StopUser

seen = {"requests": 0}


@events.init_command_line_parser.add_listener
def options(parser):
    parser.add_argument("--turns", type=int, default=4, help="turns per user")


@events.request.add_listener
def count(request_type, name, response_time, response_length, exception, **kwargs):
    seen["requests"] += 1


class Hooked(HttpUser):
    wait_time = constant(0)

    def on_start(self):
        self.turns = 0

    @task
    def go(self):
        if self.turns == self.environment.parsed_options.turns:
            raise StopUser()
        self.turns += 1
        self.client.get("/", name="hooked")
        assert seen["requests"] > 0, "the request listener fired"
        if self.turns % 2 == 0:
            self.client.get("/?even=1", name="every-second")
