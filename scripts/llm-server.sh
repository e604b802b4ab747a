#!/usr/bin/env bash
# Installs llama-cpp-python's OpenAI-compatible server into .venv, for LLMFactsF1 on a local
# model (`make demo LLM=1`, `make bench`, the slow tests). Idempotent: a second run does nothing.
#
# No binary wheel is published, so the first run compiles llama.cpp from source: 7.5 CPU-minutes,
# about 4 minutes on 2 idle cores, much longer on a busy machine. A new virtualenv installs
# the kept wheel in seconds. The build targets plain AVX2 rather than the build
# machine's own CPU (GGML_NATIVE=OFF): a native build can crash with an illegal instruction on
# machines that report features they do not run. The wheel is kept once per machine, in the
# user's cache folder (${XDG_CACHE_HOME:-~/.cache}/redline/wheels), so a fresh clone does not
# compile it again; LLM_WHEEL_DIR overrides the folder.
set -euo pipefail
version=0.3.36
python=.venv/bin/python
if "$python" -c "import llama_cpp, llama_cpp.server, sys; sys.exit(llama_cpp.__version__ != '$version')" 2>/dev/null; then
  exit 0
fi
wheels=${LLM_WHEEL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/redline/wheels}
mkdir -p "$wheels"
wheel=$(ls "$wheels"/llama_cpp_python-"$version"-*.whl 2>/dev/null | head -n 1 || true)
if [ -z "$wheel" ]; then
  echo "Building llama-cpp-python $version (compiles llama.cpp: minutes; see docs/getting-started.md)"
  started=$(date +%s)
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" \
    CMAKE_BUILD_PARALLEL_LEVEL=${LLM_BUILD_JOBS:-2} \
    .venv/bin/pip wheel -q --no-deps --no-binary llama-cpp-python -w "$wheels" \
    "llama-cpp-python==$version"
  echo "llama-cpp-python built in $(( $(date +%s) - started )) s"
  wheel=$(ls "$wheels"/llama_cpp_python-"$version"-*.whl | head -n 1)
fi
.venv/bin/pip install -q "${wheel}[server]"
