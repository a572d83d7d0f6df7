"""Run a test's code where file permissions bind, even when the tests run as root."""

import json
import os

NOBODY = 65534


def run_unprivileged(call, on_child_error, always_fork: bool = False) -> dict:
    """``call()`` (which returns a JSON-able dict) as user nobody when this process is root.

    Root ignores file permissions, so a read-only path would not be read-only for it: the
    call then runs in a forked child that drops to nobody and reports through a pipe.
    ``on_child_error(exc)`` makes the report when the child fails before ``call`` answers.
    ``always_fork=True`` runs ``call`` in a forked child even when not root (for a call that
    changes the process, e.g. re-imports a package).
    """
    root = os.geteuid() == 0
    if not root and not always_fork:
        return call()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: drop to nobody, report, and leave without running pytest's teardown
        try:
            os.close(read_end)
            if root:
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
            answer = call()
        except BaseException as exc:
            answer = on_child_error(exc)
        finally:
            os.write(write_end, json.dumps(answer).encode())
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    return json.loads(data)
