"""sim.jit's helper calls: a call no helper has started when the caller asks for its result
runs in the caller (a helper waiting for a core no longer holds the caller up), once."""

import threading

import pytest

from sim import jit


@pytest.fixture()
def one_helper():
    """A pool of exactly one helper thread of the test's own (the process's pool may have
    more: an idle one would take the calls these tests mean the caller to run)."""
    pool = jit._Helpers(1)
    yield pool
    pool.shutdown()


@pytest.fixture()
def busy_helper(one_helper):
    """The one helper thread, held busy until the event is set."""
    pool = one_helper
    release, started = threading.Event(), threading.Event()

    def hold():
        started.set()
        release.wait(timeout=10)

    blocker = pool.submit(hold)
    assert started.wait(timeout=10)
    yield pool, release
    release.set()
    blocker.result()


def test_an_unstarted_call_runs_in_the_caller_once(busy_helper):
    pool, release = busy_helper
    ran = []
    call = pool.submit(lambda: ran.append(threading.current_thread()))
    call.result()  # the helper is busy: without running it here, this would wait for it
    assert ran == [threading.current_thread()]
    release.set()
    done = pool.submit(lambda: None)
    done.result()  # the helper has passed the taken call by now, or the caller ran this one
    assert len(ran) == 1  # not run again by the helper


def test_an_error_of_a_call_run_in_the_caller_is_raised(busy_helper):
    pool, _ = busy_helper

    def fail():
        raise ValueError("from the call")

    with pytest.raises(ValueError, match="from the call"):
        pool.submit(fail).result()


def test_a_started_call_is_waited_for_not_run_again(one_helper):
    pool = one_helper
    inside, release = threading.Event(), threading.Event()
    ran = []

    def body():
        ran.append(threading.current_thread())
        inside.set()
        release.wait(timeout=10)

    call = pool.submit(body)
    assert inside.wait(timeout=10)
    waiter = threading.Thread(target=call.result)
    waiter.start()
    waiter.join(timeout=0.2)
    assert waiter.is_alive()  # waiting for the helper, not running the body a second time
    release.set()
    waiter.join(timeout=10)
    assert not waiter.is_alive()
    assert len(ran) == 1 and ran[0] is not threading.current_thread()
