"""Log records go to a private, bounded file under logs/, never to the terminal (H7)."""

from __future__ import annotations

import logging
import stat
import threading
import warnings

import pytest

from hermes_tui import logfile


@pytest.fixture
def to_file(hermes_home):
    """setup_logging in this process, undone afterwards (pytest's own handlers are kept)."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    ours = logging.getLogger("hermes_tui").level
    hook, raising = threading.excepthook, logging.raiseExceptions
    # pytest's capture handlers would otherwise be the "handler" that silences lastResort.
    for handler in handlers:
        root.removeHandler(handler)
    path = logfile.setup_logging(hermes_home)
    yield path
    root.removeHandler(logfile._installed)
    logfile._installed.close()
    logfile._installed = None
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(level)
    logging.getLogger("hermes_tui").setLevel(ours)
    threading.excepthook, logging.raiseExceptions = hook, raising
    logging.captureWarnings(False)


def mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_library_records_and_tracebacks_reach_the_file_not_stderr(to_file, capfd):
    for name in ("httpx", "openai", "anthropic", "asyncio", "hermes_tui.storage"):
        logging.getLogger(name).warning("a record from %s", name)
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        logging.getLogger("hermes_tui.agent").exception("turn failed")
    thread = threading.Thread(target=lambda: 1 / 0, name="worker-x")
    thread.start()
    thread.join()
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.warn("a library warning", UserWarning, stacklevel=1)
    out, err = capfd.readouterr()
    assert out == "" and err == "", "nothing reaches the terminal"
    text = to_file.read_text()
    for name in ("httpx", "openai", "anthropic", "asyncio", "hermes_tui.storage"):
        assert f"WARNING {name} [-] a record from {name}" in text
    assert "Traceback" in text and "RuntimeError: boom" in text
    assert "uncaught exception in thread worker-x" in text and "ZeroDivisionError" in text
    assert "a library warning" in text


def test_a_record_logged_for_a_session_names_it_in_the_file(to_file):
    """C6: setting up the log file installs the session stamp (nothing does at import)."""
    from agent.log_context import log_session

    with log_session("sess-c6"):
        logging.getLogger("hermes_tui.agent").warning("inside a turn")
    logging.getLogger("hermes_tui.agent").warning("outside any turn")
    text = to_file.read_text()
    assert "[sess-c6] inside a turn" in text and "[-] outside any turn" in text


def test_the_log_file_and_its_folder_are_private(to_file):
    logging.getLogger("hermes_tui").warning("hello")
    assert to_file.parent.name == "logs"
    assert mode(to_file.parent) == 0o700 and mode(to_file) == 0o600


def test_an_existing_log_file_is_made_private(hermes_home, to_file):
    logfile._installed.close()
    to_file.chmod(0o644)
    logfile.setup_logging(hermes_home)
    assert mode(to_file) == 0o600


def test_the_logs_are_bounded_and_every_rotated_file_is_private(to_file, monkeypatch):
    handler = logfile._installed
    monkeypatch.setattr(handler, "maxBytes", 2_000)
    log = logging.getLogger("hermes_tui.storage")
    for i in range(400):
        log.warning("record %04d %s", i, "x" * 40)
    files = sorted(to_file.parent.iterdir())
    assert len(files) == logfile.BACKUPS + 1
    assert all(path.stat().st_size <= 2_000 for path in files)
    assert all(mode(path) == 0o600 for path in files)
    assert "record 0399" in to_file.read_text()


def test_no_file_no_terminal_either(tmp_path, capfd):
    home = tmp_path / "read-only-home"
    home.write_text("a file where the home directory should be")
    root = logging.getLogger()
    handlers = list(root.handlers)
    for handler in handlers:
        root.removeHandler(handler)
    try:
        assert logfile.setup_logging(home) is None
        logging.getLogger("hermes_tui").warning("dropped")
        assert capfd.readouterr().err == ""
    finally:
        root.removeHandler(logfile._installed)
        logfile._installed = None
        for handler in handlers:
            root.addHandler(handler)
        logging.captureWarnings(False)


def test_a_bug_is_one_line_pointing_at_the_log(to_file, capfd):
    line = logfile.report_bug(KeyError("k"))
    assert line.startswith("internal error (KeyError: 'k')") and str(to_file) in line
    assert capfd.readouterr().err == ""
    assert "unexpected error" in to_file.read_text()
