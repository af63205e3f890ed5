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


class ShapeTest(unittest.TestCase):
    def plan(self, shape_class):
        import json

        from locust import shape

        return json.loads(shape.plan(shape_class, _Env()))

    def test_ticks_become_ramps_at_the_spawn_rate_then_holds(self):
        from locust import LoadTestShape

        class Steps(LoadTestShape):
            def tick(self):
                t = self.get_run_time()
                if t < 3:
                    return (10, 5)
                if t < 5:
                    return (4, 2)
                return None

        self.assertEqual(
            self.plan(Steps),
            {
                "vus": 0,
                # 10 users at 5/s take 2 s (the next tick waits for them), held to 3 s; down to 4
                # at 2/s takes 3 s, past the shape's end at 5 s: Locust's next tick comes at 6 s.
                "stages": [
                    {"duration": "2000ms", "target": 10},
                    {"duration": "1000ms", "target": 10},
                    {"duration": "3000ms", "target": 4},
                ],
            },
        )

    def test_the_current_users_are_the_ramps_and_what_cannot_be_planned_is_said(self):
        from locust import LoadTestShape, shape

        class Grow(LoadTestShape):
            def tick(self):
                users = self.get_current_user_count()
                return None if users >= 3 else (users + 1, 100)

        self.assertEqual([s["target"] for s in self.plan(Grow)["stages"]], [1, 1, 2, 2, 3, 3])

        class Never(LoadTestShape):
            def tick(self):
                return None

        class Classes(LoadTestShape):
            def tick(self):
                return (1, 1, [HttpUser])

        class Rounded(LoadTestShape):
            def tick(self):
                t = self.get_run_time()
                return None if t >= 2 else (round(t + 10.0, -1), 10)

        self.assertEqual(self.plan(Rounded)["stages"][0], {"duration": "1000ms", "target": 10})

        class Still(LoadTestShape):
            def tick(self):
                return (5, 0)

        class Forever(LoadTestShape):
            def tick(self):
                return (1, 1)

        for cls, said in [
            (Never, "returned None at once"),
            (Classes, "names user classes per tick"),
            (Still, "a spawn rate of 0: expected a number above 0"),
            (Forever, "did not return None within 24 h"),
        ]:
            with self.assertRaises(shape.ShapeError) as caught:
                self.plan(cls)
            self.assertIn(said, str(caught.exception))

    def test_a_tick_reads_the_clock_a_little_late_as_locusts_do(self):
        from locust import LoadTestShape

        class Until2(LoadTestShape):
            def tick(self):
                return None if self.get_run_time() > 2 else (1, 10)

        # Locust's tick of second 2 reads 2.00x and ends the shape there, not a second later.
        stages = self.plan(Until2)["stages"]
        self.assertEqual(sum(int(s["duration"][:-2]) for s in stages), 2000, stages)
