"""`mcp_servers:` and `mcp:` in config.yaml, and a project's .mcp.json (M1)."""

from __future__ import annotations

import json

import pytest

from agent.config import ConfigError, load_config
from agent.mcp.settings import expand, read_project_servers


def config_with(home, text):
    (home / "config.yaml").write_text(text)
    return load_config(home)


def test_servers_of_both_transports_are_read(hermes_home):
    """M1: stdio (command, args, env, cwd) and streamable HTTP (url, headers) servers."""
    config = config_with(
        hermes_home,
        "mcp_servers:\n"
        "  git: {command: uvx, args: [mcp-server-git], env: {A: b}, cwd: sub, trust: [git_log]}\n"
        "  docs: {url: 'https://example.com/mcp', headers: {X-Key: '${DOCS_KEY}'}}\n"
        "mcp: {max_schema_tokens: 3000, tool_search: always}\n",
    )
    git, docs = config.mcp_servers["git"], config.mcp_servers["docs"]
    assert (git.transport, git.command, git.args, git.env, git.cwd) == (
        "stdio",
        "uvx",
        ("mcp-server-git",),
        (("A", "b"),),
        "sub",
    )
    assert git.trusts("git_log") and not git.trusts("git_commit")
    assert (docs.transport, docs.url, docs.headers) == (
        "http",
        "https://example.com/mcp",
        (("X-Key", "${DOCS_KEY}"),),
    )
    assert config.mcp.max_schema_tokens == 3000 and config.mcp.tool_search == "always"
    assert "DOCS_KEY" not in repr(docs) and "b" not in repr(git.env and git)


@pytest.mark.parametrize(
    ("yaml_text", "line", "words"),
    [
        ("mcp_servers:\n  git:\n    comand: uvx\n", 3, "unknown key `git.comand`"),
        # H1: another client's approval key says what approves tools here.
        ("mcp_servers:\n  g:\n    command: x\n    alwaysAllow: [t]\n", 4, "`trust:` (all,"),
        ("mcp_servers:\n  git:\n    args: [x]\n", 2, "needs `command`"),
        ("mcp_servers:\n  bad.name: {command: x}\n", 2, "server name 'bad.name'"),
        ("mcp_servers:\n  g:\n    command: x\n    trust: some\n", 4, "`g.trust` must be"),
        ("mcp_servers:\n  h:\n    url: ftp://x\n", 3, "`h.url` must start with http"),
        ("mcp_servers:\n  h:\n    type: sse\n    url: http://x\n", 3, "`h.type` must be"),
        ("mcp_servers: [a]\n", 1, "`mcp_servers` must map"),
        ("mcp:\n  max_schema_tokens: lots\n", 2, "whole number of tokens"),
        ("mcp:\n  tool_search: sometimes\n", 2, "must be one of auto, always, never"),
        ("mcp_servers:\n  g:\n    command: x\n    timeout_seconds: -1\n", 4, "positive number"),
    ],
)
def test_a_config_mistake_names_the_file_line_and_key(hermes_home, yaml_text, line, words):
    """M1: like every setting, a bad MCP entry is one sentence naming file, line and key."""
    with pytest.raises(ConfigError) as caught:
        config_with(hermes_home, yaml_text)
    message = str(caught.value)
    assert f"config.yaml, line {line}" in message and words in message


def test_project_servers_come_from_mcp_json_without_trust(tmp_path):
    """M1, M2: `.mcp.json` (mcpServers) gives project servers; a `trust` there is ignored
    with a sentence (only the user's config trusts tools); a bad entry is skipped."""
    (tmp_path / ".mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "fs": {"command": "npx", "args": ["server-fs"], "trust": "all"},
                    "web": {"type": "http", "url": "http://127.0.0.1:9/mcp"},
                    "broken": {"args": ["no command"]},
                    "we ird": {"command": "x"},
                }
            }
        )
    )
    servers, problems = read_project_servers(tmp_path)
    assert [s.name for s in servers] == ["fs", "web"]
    assert all(s.origin == "project" for s in servers)
    assert not servers[0].trust_all and not servers[0].trusts("anything")
    assert any("`fs.trust` is ignored" in p for p in problems)
    assert any("needs `command`" in p for p in problems)
    assert any("'we ird'" in p for p in problems)


@pytest.mark.parametrize("content", [b"{not json", b"[1, 2]", b"\xff\xfe", b'{"mcpServers": 3}'])
def test_a_broken_mcp_json_is_a_sentence_never_a_crash(tmp_path, content):
    """M1: the repository's file cannot stop the app: at worst its servers are skipped."""
    (tmp_path / ".mcp.json").write_bytes(content)
    servers, problems = read_project_servers(tmp_path)
    assert servers == []
    assert all(p.startswith(".mcp.json") for p in problems)


def test_the_consent_fingerprint_changes_with_what_would_run(tmp_path):
    """M1: consent is for exactly the command shown: another command is another fingerprint."""
    path = tmp_path / ".mcp.json"
    path.write_text(json.dumps({"mcpServers": {"s": {"command": "a", "args": ["1"]}}}))
    first = read_project_servers(tmp_path)[0][0].fingerprint
    path.write_text(json.dumps({"mcpServers": {"s": {"command": "a", "args": ["1", "; rm"]}}}))
    assert read_project_servers(tmp_path)[0][0].fingerprint != first


def test_variables_expand_and_a_missing_one_is_named():
    """M1: `${VAR}` and `${VAR:-default}` in commands, env, urls and headers."""
    env = {"TOKEN": "abc"}
    assert expand("Bearer ${TOKEN}", env) == "Bearer abc"
    assert expand("${MISSING:-fallback}", env) == "fallback"
    with pytest.raises(Exception, match="MISSING"):
        expand("${MISSING}", env)
