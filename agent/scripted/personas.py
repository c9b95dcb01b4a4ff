"""The servers the scripted server can play: llama.cpp, vLLM, Ollama and LM Studio.

A persona (script key `server: {persona: llama.cpp, models: [...], context_window: 2048}`)
answers its server's own discovery endpoints in that server's JSON, and the reply key
`server_error: context_overflow` sends its exact error body. The bodies are the servers' own:
llama.cpp's as a real llama-server sends them, vLLM's, Ollama's and LM Studio's as their
documented error shapes and the messages users report; OpenAI's and Anthropic's as their
APIs document them. Without a persona the scripted server lists `models` when the script
gives them, and has no discovery endpoint otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

LLAMA_CPP = "llama.cpp"
VLLM = "vllm"
OLLAMA = "ollama"
LM_STUDIO = "lmstudio"
OPENAI = "openai"
ANTHROPIC = "anthropic"
PERSONAS = (LLAMA_CPP, VLLM, OLLAMA, LM_STUDIO, OPENAI, ANTHROPIC)

LLAMA_LOADING = {"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}}
"""What llama-server answers on every route until its model is loaded."""

Body = dict[str, Any] | str
"""A JSON body, or a plain-text one (Ollama's router answers 404 in text)."""


@dataclass(frozen=True)
class Persona:
    """A server the scripted server plays: its name, the models it serves, its window."""

    name: str = ""
    models: tuple[str, ...] = ()
    context_window: int = 4096
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Any) -> Persona:
        """The script's `server:` mapping as a Persona; unknown keys and names are refused."""
        if not isinstance(data, dict):
            raise ValueError(f"server must be a mapping, got {data!r}")
        unknown = set(data) - {"persona", "models", "context_window", "extra"}
        if unknown:
            raise ValueError(f"unknown server keys: {sorted(unknown)}")
        name = data.get("persona") or ""
        if name and name not in PERSONAS:
            raise ValueError(f"unknown persona {name!r} (known: {', '.join(PERSONAS)})")
        models = data.get("models") or ()
        if not isinstance(models, list | tuple) or not all(isinstance(m, str) for m in models):
            raise ValueError("server.models must be a list of model names")
        window = data.get("context_window", 4096)
        if not isinstance(window, int) or window <= 0:
            raise ValueError("server.context_window must be a positive number of tokens")
        return cls(name, tuple(models), window, dict(data.get("extra") or {}))

    # -- discovery endpoints ------------------------------------------------------------------
    def get(self, path: str) -> tuple[int, Body] | None:
        """The answer to a GET of `path`, or None when this server has no such endpoint.

        `extra: {discovery: false}` plays a server that answers none (behind a proxy, say);
        `extra: {loading: true}` one that answers 503 while it loads its model.
        """
        if not self.extra.get("discovery", True):
            return None
        if self.extra.get("loading") and path in ("/v1/models", "/models", "/props", "/health"):
            return 503, LLAMA_LOADING  # llama-server's answer while it loads its model
        if path in ("/v1/models", "/models"):
            return self._listing()
        if self.name == LLAMA_CPP and path == "/props":
            return 200, self._props()
        if self.name == OLLAMA and path == "/api/tags":
            return 200, {"models": [_ollama_tag(m) for m in self.models]}
        if self.name == LM_STUDIO and path == "/api/v0/models":
            return 200, {"object": "list", "data": [self._lmstudio_entry(m) for m in self.models]}
        return None

    def post(self, path: str, body: Any) -> tuple[int, Body] | None:
        """The answer to a POST of a discovery `path`, or None when it is not one."""
        if self.name == OLLAMA and path == "/api/show" and self.extra.get("discovery", True):
            model = body.get("model") or body.get("name") if isinstance(body, dict) else None
            if model not in self.models and f"{model}:latest" not in self.models:
                return 404, {"error": f"model '{model}' not found"}
            return 200, self._ollama_show()
        return None

    def _listing(self) -> tuple[int, Body] | None:
        if not self.models:
            return None
        entries = [self._listing_entry(m) for m in self.models]
        if self.name == LLAMA_CPP:
            return 200, {
                "models": [{"name": m, "model": m} for m in self.models],
                "object": "list",
                "data": entries,
            }
        return 200, {"object": "list", "data": entries}

    def _listing_entry(self, model: str) -> dict[str, Any]:
        entry: dict[str, Any] = {"id": model, "object": "model", "created": 0}
        if self.name == LLAMA_CPP:
            entry.update(
                aliases=[model],
                tags=[],
                owned_by="llamacpp",
                meta={
                    "vocab_type": 2,
                    "n_vocab": 49152,
                    "n_ctx": self.context_window,
                    "n_ctx_train": 8192,
                    "n_embd": 576,
                    "n_params": 134515008,
                },
            )
        elif self.name == VLLM:
            entry.update(
                owned_by="vllm", root=model, parent=None, max_model_len=self.context_window
            )
        elif self.name == OLLAMA:
            entry["owned_by"] = "library"
        else:
            entry["owned_by"] = "organization_owner" if self.name == LM_STUDIO else "system"
        return entry

    def _props(self) -> dict[str, Any]:
        """llama.cpp `/props`, the fields a client reads (a real one has many more)."""
        model = self.models[0] if self.models else "model.gguf"
        return {
            "default_generation_settings": {"n_ctx": self.context_window, "params": {}},
            "total_slots": 1,
            "model_alias": model,
            "model_path": model,
            "modalities": {"vision": False, "audio": False},
            "build_info": "b0-scripted",
        }

    def _lmstudio_entry(self, model: str) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "id": model,
            "object": "model",
            "type": "llm",
            "publisher": "scripted",
            "arch": "llama",
            "compatibility_type": "gguf",
            "quantization": "Q4_K_M",
            "state": "loaded" if self.extra.get("loaded", True) else "not-loaded",
            "max_context_length": int(self.extra.get("max_context_length", 32768)),
        }
        if self.extra.get("loaded", True):
            entry["loaded_context_length"] = self.context_window
        return entry

    def _ollama_show(self) -> dict[str, Any]:
        parameters = 'stop                           "<|im_end|>"'
        if self.extra.get("num_ctx", True):
            parameters = f"num_ctx                        {self.context_window}\n{parameters}"
        return {
            "modelfile": "# Modelfile generated by scripted",
            "parameters": parameters,
            "template": "{{ .Prompt }}",
            "details": {"format": "gguf", "family": "llama", "parameter_size": "135M"},
            "model_info": {
                "general.architecture": "llama",
                "llama.context_length": int(self.extra.get("context_length", 131072)),
                "llama.embedding_length": 576,
            },
            "capabilities": ["completion", "tools"],
        }

    # -- errors -------------------------------------------------------------------------------
    def not_found(self, path: str, method: str) -> tuple[int, Body] | None:
        """This server's 404 for a path it does not serve (a wrong base_url), or None."""
        if self.name == LLAMA_CPP:
            return 404, {
                "error": {"message": "File Not Found", "type": "not_found_error", "code": 404}
            }
        if self.name == VLLM:
            return 404, {"detail": "Not Found"}
        if self.name == OLLAMA:
            return 404, "404 page not found"
        if self.name == LM_STUDIO:
            return 200, {"error": f"Unexpected endpoint or method. ({method} {path})"}
        return None

    def error(self, name: str, model: str, prompt_tokens: int) -> tuple[int, Body]:
        """The server's own error `name` (context_overflow, model_not_found) for a request."""
        table = _ERRORS.get(self.name or OPENAI, {})
        make = table.get(name)
        if make is None:
            known = ", ".join(sorted(table)) or "none"
            return 500, {"error": f"scripted server: {self.name} has no error {name!r} ({known})"}
        tokens = max(prompt_tokens, self.context_window + 1)
        return make(model, tokens, self.context_window)


def _ollama_tag(model: str) -> dict[str, Any]:
    return {
        "name": model,
        "model": model,
        "modified_at": "2025-01-01T00:00:00Z",
        "size": 98362432,
        "digest": "0" * 64,
        "details": {"format": "gguf", "family": "llama", "parameter_size": "135M"},
    }


ErrorMaker = Callable[[str, int, int], tuple[int, Body]]


def _llama_overflow(_model: str, tokens: int, window: int) -> tuple[int, Body]:
    message = (
        f"request ({tokens} tokens) exceeds the available context size ({window} tokens), "
        "try increasing it"
    )
    return 400, {
        "error": {
            "code": 400,
            "message": message,
            "type": "exceed_context_size_error",
            "n_prompt_tokens": tokens,
            "n_ctx": window,
        }
    }


def _vllm_overflow(_model: str, tokens: int, window: int) -> tuple[int, Body]:
    message = (
        f"This model's maximum context length is {window} tokens. However, you requested "
        f"{tokens} tokens ({tokens - 16} in the messages, 16 in the completion). Please reduce "
        "the length of the messages or completion."
    )
    return 400, {
        "object": "error",
        "message": message,
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    }


def _vllm_model(model: str, _tokens: int, _window: int) -> tuple[int, Body]:
    return 404, {
        "object": "error",
        "message": f"The model `{model}` does not exist.",
        "type": "NotFoundError",
        "param": None,
        "code": 404,
    }


def _ollama_overflow(_model: str, _tokens: int, _window: int) -> tuple[int, Body]:
    return 400, {
        "error": {
            "message": "the input length exceeds the context length",
            "type": "invalid_request_error",
            "param": None,
            "code": None,
        }
    }


def _ollama_model(model: str, _tokens: int, _window: int) -> tuple[int, Body]:
    return 404, {
        "error": {
            "message": f'model "{model}" not found, try pulling it first',
            "type": "not_found_error",
            "param": None,
            "code": None,
        }
    }


def _lmstudio_overflow(_model: str, tokens: int, window: int) -> tuple[int, Body]:
    message = (
        "The number of tokens to keep from the initial prompt is greater than the context "
        f"length (n_keep: {tokens}>= n_ctx: {window}). Try to load the model with a larger "
        "context length, or provide a shorter input."
    )
    return 400, {"error": message}


def _openai_overflow(_model: str, tokens: int, window: int) -> tuple[int, Body]:
    message = (
        f"This model's maximum context length is {window} tokens. However, your messages "
        f"resulted in {tokens} tokens. Please reduce the length of the messages."
    )
    return 400, {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }


def _openai_model(model: str, _tokens: int, _window: int) -> tuple[int, Body]:
    message = f"The model `{model}` does not exist or you do not have access to it."
    return 404, {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": None,
            "code": "model_not_found",
        }
    }


def _anthropic_overflow(_model: str, tokens: int, window: int) -> tuple[int, Body]:
    message = f"prompt is too long: {tokens} tokens > {window} maximum"
    return 400, {"type": "error", "error": {"type": "invalid_request_error", "message": message}}


def _anthropic_model(model: str, _tokens: int, _window: int) -> tuple[int, Body]:
    return 404, {
        "type": "error",
        "error": {"type": "not_found_error", "message": f"model: {model}"},
    }


_ERRORS: dict[str, dict[str, ErrorMaker]] = {
    LLAMA_CPP: {"context_overflow": _llama_overflow},
    VLLM: {"context_overflow": _vllm_overflow, "model_not_found": _vllm_model},
    OLLAMA: {"context_overflow": _ollama_overflow, "model_not_found": _ollama_model},
    LM_STUDIO: {"context_overflow": _lmstudio_overflow},
    OPENAI: {"context_overflow": _openai_overflow, "model_not_found": _openai_model},
    ANTHROPIC: {"context_overflow": _anthropic_overflow, "model_not_found": _anthropic_model},
}
