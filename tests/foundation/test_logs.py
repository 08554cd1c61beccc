"""sim.logs: a logger made only once logging is loaded behaves, before then, as logging's
defaults would (and afterwards is the named logger with its NullHandler)."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

import pytest

from sim import logs
from sim.logs import LazyLogger

LEVELS = (logs.DEBUG, logs.INFO, logs.WARNING, logs.ERROR)


def test_the_levels_are_loggings():
    assert LEVELS == (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR)


def test_before_logging_is_loaded_a_logger_listens_as_loggings_defaults(monkeypatch):
    probe = ("import json, logging\nlog = logging.getLogger('sim.probe')\n"
             f"print(json.dumps([log.isEnabledFor(level) for level in {LEVELS!r}]))")
    fresh = json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True,
                                      text=True, check=True).stdout)
    monkeypatch.delitem(sys.modules, "logging")
    lazy = LazyLogger("sim.probe")
    assert [lazy.isEnabledFor(level) for level in LEVELS] == fresh
    lazy.log(logs.ERROR, "%s", "nobody listens")
    lazy.info("%s", "nobody listens")
    assert "logging" not in sys.modules and lazy._logger is None


@pytest.mark.parametrize("level, kept", [(logging.INFO, ["info", "error"]),
                                         (logging.ERROR, ["error"])])
def test_once_logging_is_loaded_a_logger_is_the_named_one(level, kept, caplog):
    name = f"sim.probe.loaded{level}"  # a logger of its own
    lazy = LazyLogger(name)
    with caplog.at_level(level, logger=name):
        lazy.info("%s", "info")
        lazy.log(logs.ERROR, "%s", "error")
        assert [lazy.isEnabledFor(x) for x in LEVELS] == [x >= level for x in LEVELS]
    assert [r.getMessage() for r in caplog.records if r.name == name] == kept
    named = logging.getLogger(name)
    assert lazy._logger is named
    assert [type(h) for h in named.handlers] == [logging.NullHandler]
