# Knora — the two commands a newcomer needs: `make run` and `make test`.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8080

.PHONY: run test install install-test browser fonts lint typecheck bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# pip runs only when pyproject.toml changed since the last install (a stamp in the venv): `make run` on an
# unchanged checkout starts in seconds. `make clean` or deleting .venv starts over.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	@touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[test,minilm,s3]'
	@touch $@ $(VENV)/.installed

install: $(VENV)/.installed

install-test: $(VENV)/.installed-test
	@$(MAKE) -s browser fonts

# Chromium for the browser tests comes from Debian's packages (no browser download by Playwright).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "chromium missing: sudo apt-get install chromium" >&2; fi; }

# Fonts the OCR tests render their scanned pages with (tests/fakes/scans.py): Chinese (WenQuanYi Zen Hei) and
# Latin (DejaVu Sans), from Debian's packages like chromium.
fonts:
	@[ -f /usr/share/fonts/truetype/wqy/wqy-zenhei.ttc ] && [ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-wqy-zenhei fonts-dejavu-core >/dev/null; \
	  else echo "fonts missing: sudo apt-get install fonts-wqy-zenhei fonts-dejavu-core" >&2; fi; }

# Sets up and starts Knora on its embedded default (SQLite, local embedder, bundled sample knowledge base).
run: install
	$(BIN)/knora serve --host $(HOST) --port $(PORT)

# Installs the test dependencies, checks lint and types, and runs the whole test suite.
test: install-test
	$(MAKE) -s lint typecheck
	$(BIN)/python -m pytest -q

# ruff's rule sets and line length are in pyproject.toml ([tool.ruff]).
lint:
	$(BIN)/ruff check knora tests benchmarks

# Strict typing on the whole package.
typecheck:
	$(BIN)/mypy --strict knora

bench: install
	$(BIN)/pip install -q -e '.[bench]'
	$(BIN)/python benchmarks/ingest.py
	$(BIN)/python benchmarks/retrieval.py
	$(BIN)/python benchmarks/pipeline.py
	$(BIN)/python benchmarks/stream.py
	$(BIN)/python benchmarks/agent.py
	$(BIN)/python benchmarks/fuzz.py

clean:
	rm -rf $(VENV) .knora .pytest_cache
