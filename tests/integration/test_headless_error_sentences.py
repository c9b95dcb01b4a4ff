"""Error sentences that match the cause (issue 17 item 9), through the CLI over real HTTP(S):
a drop mid-answer, an untrusted certificate, https against an http server, a 500's own
message, retries counted from 1, and a failed attempt's text said to be replaced (W11, Z3)."""

from __future__ import annotations

import shutil

import pytest
from helpers import write_config
from integration.test_headless_errors import run_cli

from agent.scripted import Script, ScriptedServer
from agent.scripted.certs import self_signed_cert


@pytest.fixture
def serve(hermes_home):
    servers = []

    def start(replies, *, tls_dir=None, **kw):
        cert = self_signed_cert(tls_dir) if tls_dir is not None else (None, None)
        server = ScriptedServer(Script.from_dict({"replies": replies}), certfile=cert[0],
                                keyfile=cert[1]).start()  # fmt: skip
        servers.append(server)
        write_config(hermes_home, server, **kw)
        return server

    yield start
    for server in servers:
        server.stop()


def errors(proc) -> list[str]:
    assert "Traceback" not in proc.stderr, proc.stderr
    return [line for line in proc.stderr.splitlines() if line.startswith("hermes-tui:")]


def test_a_drop_mid_answer_says_so_and_that_the_retry_replaces_its_text(hermes_home, serve):
    cut = "This stream will be cut short here"
    serve([{"text": cut, "drop_after": 3, "chunk_size": 4}, {"text": "The whole answer."}])
    proc = run_cli(hermes_home, "run", "hello")
    assert proc.returncode == 0, proc.stderr
    # Streamed as it came (Z3): the cut text on a line of its own, said to be replaced.
    partial, answer = proc.stdout.split("\n", 1)
    assert partial and cut.startswith(partial), proc.stdout
    assert answer == "The whole answer.\n"
    assert "[retrying: the partial answer above is replaced]" in proc.stderr
    retries = [line for line in proc.stderr.splitlines() if line.startswith("retrying")]
    assert len(retries) == 1, proc.stderr
    assert retries[0].startswith("retrying (1/"), retries[0]
    assert "dropped mid-answer" in retries[0] and "Cannot reach" not in retries[0]


def test_a_500_shows_the_server_s_own_message(hermes_home, serve):
    down = {"status": 500, "error_message": "CUDA out of memory on device 0"}
    serve([down, down], agent={"max_retries": 2})
    proc = run_cli(hermes_home, "run", "hello")
    [line] = errors(proc)
    assert "HTTP 500" in line and "CUDA out of memory on device 0" in line, line


needs_openssl = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")


@needs_openssl
def test_an_untrusted_certificate_names_the_fix(hermes_home, serve, tmp_path):
    serve([{"text": "never"}], tls_dir=tmp_path)
    proc = run_cli(hermes_home, "run", "hello")
    [line] = errors(proc)
    assert "TLS certificate" in line and "not trusted" in line, line
    assert "SSL_CERT_FILE" in line and "ca_file" in line, line
    assert "retrying" not in proc.stderr, "a certificate does not change on a retry"


@needs_openssl
def test_the_certificate_trusted_with_ca_file_works(hermes_home, serve, tmp_path):
    server = serve([{"text": "Over TLS."}], tls_dir=tmp_path)
    write_config(hermes_home, server, provider={"ca_file": str(tmp_path / "cert.pem")})
    proc = run_cli(hermes_home, "run", "hello")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Over TLS.\n"


def test_https_against_an_http_server_says_it_speaks_http(hermes_home, serve):
    server = serve([{"text": "never"}])
    plain = server.openai_base_url
    write_config(hermes_home, server, provider={"base_url": plain.replace("http:", "https:")})
    proc = run_cli(hermes_home, "run", "hello")
    [line] = errors(proc)
    assert "speaks plain http, not https" in line and plain in line, line
    assert "retrying" not in proc.stderr
