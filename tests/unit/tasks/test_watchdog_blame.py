"""The watchdog names the user's code only when the user's code is what waits (issue 66,
defect 4: an idle Trident run beside load was told that the coordinator's next_tuple,
blocked in zmq's poll inside sparkstorm, was a call of the user's to hand to a thread)."""

from __future__ import annotations

import sys
import threading
import time

from sparkstorm.control import mailbox
from sparkstorm.tasks.watchdog import OWN, blocked_at, blocked_message


def _blocked_in(handler, request: object = None) -> tuple[str, str]:
    """What the watchdog reports of a thread inside ``mailbox.call`` to ``handler``."""
    box = f"watchdog-{id(handler)}"
    address = mailbox.serve(box, handler, mailbox.LOOPBACK)
    worker = threading.Thread(target=mailbox.call, args=(address, box, request), daemon=True)
    worker.start()
    time.sleep(0.3)  # well inside the call
    try:
        return blocked_at(
            "next_tuple() of spout 'trident-coordinator' task 1",
            sys._current_frames().get(worker.ident),
        )
    finally:
        worker.join(5)
        mailbox.forget(box)


def users_own_wait(request: object) -> None:
    time.sleep(1.0)  # the user's frame, waiting


def test_a_wait_of_sparkstorms_own_is_not_blamed_on_the_user():
    call, stack = _blocked_in(time.sleep, 1.0)  # no frame of the user's on the stack
    assert call.startswith(OWN)
    message = blocked_message(call, 5, " in continuous worker 0")
    assert "hand the work to a thread of your own" not in message
    assert "sparkstorm is waiting there on something outside your code" in message
    assert "mailbox.py" in stack  # what it waits in, shown


def test_a_users_wait_is_named_with_the_users_frames():
    call, stack = _blocked_in(users_own_wait)
    assert not call.startswith(OWN)
    assert "hand the work to a thread of your own" in blocked_message(call, 5)
    assert "test_watchdog_blame.py" in stack and "users_own_wait" in stack
