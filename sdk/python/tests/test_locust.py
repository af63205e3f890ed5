"""Unit tests of the runner's Locust layer (sdk/python/runner/locust) on the host's CPython, with the
fake bindings of test_sdk. The counts against the real Locust are tests/e2e/locust_files.rs."""

import unittest

import test_sdk  # noqa: F401 (registers the fake bindings first)
from locust import HttpUser, SequentialTaskSet, TaskSet, User, constant, constant_pacing, tag, task
from locust import _adapt, events
from locust.exception import RescheduleTask, StopUser
from locust.user import Runner


class _Env:
    host = None
    events = events


def _user(cls):
    return cls(_Env())


class DealTest(unittest.TestCase):
    def test_fixed_counts_first_then_the_weights_in_turn(self):
        class Admin(User):
            fixed_count = 1

        class A(User):
            weight = 2

        class B(User):
            weight = 1

        dealt = [_adapt._deal([Admin, A, B], worker).__name__ for worker in range(7)]
        self.assertEqual(dealt, ["Admin", "A", "B", "A", "A", "B", "A"])


class RunnerTest(unittest.TestCase):
    def test_a_sequence_interrupts_back_to_the_user_and_stop_calls_on_stop_inward_out(self):
        said = []

        class Steps(SequentialTaskSet):
            def on_start(self):
                said.append("steps start")

            @task
            def one(self):
                said.append("one")

            @task
            def out(self):
                said.append("out")
                self.interrupt(reschedule=False)

            def on_stop(self):
                said.append("steps stop")

        class Walker(User):
            wait_time = constant(0.25)
            tasks = [Steps]

            def on_start(self):
                self.walks = 0

            def on_stop(self):
                said.append("user stop")

        slept = []
        runner = Runner(_user(Walker))
        for _ in range(4):
            self.assertIsNone(runner.turn(slept.append))
        self.assertEqual(said, ["steps start", "one", "out", "steps stop", "steps start", "one", "out", "steps stop"])
        self.assertEqual(slept, [0.25] * 4)

        class Inner(SequentialTaskSet):
            @task
            def stop(self):
                raise StopUser()

            def on_stop(self):
                said.append("inner stop")

        class Quitter(User):
            tasks = [Inner]

            def on_stop(self):
                said.append("user stop")

        said.clear()
        runner = Runner(_user(Quitter))
        runner.turn(slept.append)
        self.assertEqual(said, ["inner stop", "user stop"])
        slept.clear()
        runner.turn(slept.append)
        self.assertEqual((said, slept), (["inner stop", "user stop"], [1.0]), "a stopped user only idles")

    def test_a_task_error_is_returned_after_the_wait_and_reschedule_still_waits(self):
        class Faulty(User):
            wait_time = constant(0.5)

            @task
            def boom(self):
                raise ValueError("bug")

        slept = []
        error = Runner(_user(Faulty)).turn(slept.append)
        self.assertIsInstance(error, ValueError)
        self.assertEqual(slept, [0.5])

        class Early(User):
            wait_time = constant(0.1)

            @task
            def early(self):
                raise RescheduleTask()

        slept.clear()
        self.assertIsNone(Runner(_user(Early)).turn(slept.append))
        self.assertEqual(slept, [0.1])

    def test_weights_repeat_tasks_and_tags_filter_them(self):
        class Tagged(User):
            @tag("read")
            @task(3)
            def read(self):
                pass

            @tag("write")
            @task
            def write(self):
                pass

            class Nested(TaskSet):
                @task
                def inside(self):
                    pass

            tasks = [tag("read")(Nested)]

        names = sorted(getattr(t, "__name__", "") for t in Tagged.tasks)
        self.assertEqual(names, ["Nested", "read", "read", "read", "write"])
        _adapt._filter(Tagged, None, {"write"})
        self.assertEqual(sorted(t.__name__ for t in Tagged.tasks), ["Nested", "read", "read", "read"])
        _adapt._filter(Tagged, {"read"}, None)
        self.assertEqual(len(Tagged.tasks), 4)


class WaitTest(unittest.TestCase):
    def test_constant_pacing_waits_what_the_task_left(self):
        import time as real_time

        pace = constant_pacing(1.0)

        class Holder:
            pass

        holder = Holder()
        holder._cp_last_run = real_time.monotonic() - 0.4  # a task that took 0.4 s
        self.assertAlmostEqual(pace(holder), 0.6, delta=0.05)


class ClientTest(unittest.TestCase):
    def test_a_user_without_a_host_says_which_setting_names_it(self):
        class NoHost(HttpUser):
            @task
            def go(self):
                self.client.get("/")

        with self.assertRaisesRegex(ValueError, "LOCUST_HOST"):
            _user(NoHost).client.get("/")

    def test_a_plain_response_is_a_context_manager_as_requests_is(self):
        from locust.clients import Response

        response = Response("GET", "http://h/", 200, [], b"{}", 0.01)
        with response as same:
            self.assertIs(same, response)
        with self.assertRaises(KeyError), response:
            raise KeyError("not swallowed")


if __name__ == "__main__":
    unittest.main()
