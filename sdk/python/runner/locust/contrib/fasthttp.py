"""`from locust.contrib.fasthttp import FastHttpUser`: the same user as `locust.FastHttpUser`."""

from ..user import FastHttpUser

__all__ = ["FastHttpUser"]
