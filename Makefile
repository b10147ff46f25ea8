# Two commands do all setup on a fresh machine: `make demo` and `make test`.
# Both create .venv and install the project from its own files; both are idempotent.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: demo test lint typecheck pytest bench schemas eval-evidence clean smoke-cloud report-browser

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m tht.demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy kernel modules tht

pytest: $(STAMP) report-browser
	$(BIN)/python -m pytest -p no:cacheprovider --hypothesis-profile=ci

# The analytics report test renders the report in headless Chromium. Install Debian's `chromium`
# only when it is missing and this machine can (root with apt-get); never fatal: where it cannot
# be installed, that one test skips and says why.
report-browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing chromium (analytics report test)"; \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	      apt-get install -y -qq chromium; } >/dev/null 2>&1 \
	    || echo "could not install chromium: the report rendering test will skip"; \
	  else \
	    echo "chromium missing (installing it needs root and apt-get): the report rendering test will skip"; \
	  fi; }

test: lint typecheck pytest

bench: $(STAMP)
	$(BIN)/python -m benchmarks

# The Ollama Cloud spike (spec 000 §29 WP 6.1): by hand only; prints `skipped` without OLLAMA_API_KEY.
smoke-cloud: $(STAMP)
	$(BIN)/python -m tht.smoke_cloud

# Evidence retrieval on BIRD mini-dev (docs/evidence.md): hit@1/5/10 and MRR, hybrid vs dense vs
# BM25, RRF k tuned on a documented subset. BIRD_DIR overrides the data folder
# (default golden/evidence/bird); EVAL_JSON=FILE also writes the full report.
eval-evidence: $(STAMP)
	$(BIN)/python -m benchmarks.eval_evidence

schemas: $(STAMP)
	$(BIN)/tht schemas export

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .hypothesis
