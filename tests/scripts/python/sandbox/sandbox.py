"""What a script may touch: its own folder, read-only, and nothing else. Each attempt is a check
(tests/e2e/runner_python.rs asserts every one passes)."""

import os

HERE = os.path.dirname(__file__)


def refused(action) -> bool:
    try:
        action()
    except OSError:
        return True
    return False


def write_here():
    with open(os.path.join(HERE, "written.txt"), "w") as out:
        out.write("a script may not write in its folder")


def read(path):
    with open(path) as found:
        return found.read()


def do_task(task) -> None:
    from loadhost import check

    check("reads its own folder", read(os.path.join(HERE, "data.txt")).strip() == "rows")
    check("write in its folder refused", refused(write_here))
    check("mkdir in its folder refused", refused(lambda: os.mkdir(os.path.join(HERE, "made"))))
    check("read outside its folder refused", refused(lambda: read("/etc/hostname")))
    check("read through .. refused", refused(lambda: read(os.path.join(HERE, "..", "outside.txt"))))
    check("read through a symlink out refused", refused(lambda: read(os.path.join(HERE, "link.txt"))))
