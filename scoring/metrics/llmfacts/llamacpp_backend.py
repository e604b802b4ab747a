"""Chat backend running a GGUF model in this process with llama-cpp-python, greedy decoding,
answers constrained to each step's JSON schema by a llama.cpp grammar.

llama_cpp is imported when the model loads: importing this module costs nothing, and it works
without llama-cpp-python installed until it is used (``scripts/llm-server.sh`` installs it).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .errors import BackendError
from .prompts import Message
from .transformers_backend import end_of_first_repeat


class LlamaCppBackend:
    """A GGUF chat model run by llama.cpp, greedy (temperature 0, repeat penalty 1.1 as in
    llama-cpp-python's server), ``answer_mode`` ``"gbnf"``.

    ``chat(messages, schema=...)`` compiles ``schema`` into a llama.cpp grammar (GBNF), so the
    model can only write tokens that keep the answer valid under it. An answer cut at
    ``max_tokens`` while repeating a list item is closed before the repeat. One model in one
    process answers one call at a time: calls are serialised and ``max_concurrency`` is 1.
    """

    max_concurrency = 1
    answer_mode = "gbnf"

    def __init__(
        self,
        model_path: str | os.PathLike[str],
        *,
        max_tokens: int = 512,
        context_tokens: int = 8192,
        threads: int | None = None,
    ) -> None:
        self.model_path = Path(model_path)
        self.max_tokens = max_tokens
        self.context_tokens = context_tokens
        self.threads = threads
        self._lock = threading.Lock()
        self._model: Any = None
        self._grammars: dict[str, Any] = {}

    @property
    def model_id(self) -> str:
        """Model file and answer length limit: both can change the answer."""
        return f"llama.cpp:{self.model_path.name}:max_tokens={self.max_tokens}"

    def load(self) -> None:
        """Load the model now rather than on the first call; safe to call twice."""
        with self._lock:
            self._load_locked()

    def chat(self, messages: Sequence[Message], *, schema: dict[str, Any] | None = None) -> str:
        """The model's greedy answer, following ``schema`` when given; raises
        :class:`BackendError` when the model cannot be loaded or the schema compiled."""
        with self._lock:
            self._load_locked()
            options: dict[str, Any] = {}
            if schema is not None:
                options["grammar"] = self._grammar_locked(schema)
            response = self._model.create_chat_completion(
                messages=[dict(message) for message in messages],
                temperature=0.0,
                top_k=1,
                # As llama-cpp-python's server does by default: without it a small model
                # loops on its fact list until the token limit.
                repeat_penalty=1.1,
                max_tokens=self.max_tokens,
                seed=0,
                **options,
            )
        choice = response["choices"][0]
        text: str = choice["message"]["content"] or ""
        if schema is not None and choice.get("finish_reason") == "length":
            text = end_of_first_repeat(text) or text
        return text

    def _grammar_locked(self, schema: dict[str, Any]) -> Any:
        from llama_cpp.llama_grammar import LlamaGrammar

        key = json.dumps(schema)  # key order matters: the reason comes before the label
        if key not in self._grammars:
            try:
                self._grammars[key] = LlamaGrammar.from_json_schema(key, verbose=False)
            except (ValueError, RuntimeError) as error:
                raise BackendError(f"cannot compile the answer schema: {error}") from error
        return self._grammars[key]

    def _load_locked(self) -> None:
        if self._model is not None:
            return
        try:
            from llama_cpp import Llama

            self._model = Llama(
                model_path=str(self.model_path),
                n_ctx=self.context_tokens,
                n_threads=self.threads,
                n_threads_batch=self.threads,
                seed=0,
                verbose=False,
            )
        except (ImportError, ValueError, OSError) as error:
            raise BackendError(f"cannot load {self.model_path}: {error}") from error
