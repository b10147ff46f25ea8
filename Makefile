# Two commands do all setup on a fresh machine: `make demo` and `make test`.
# Both create .venv and install the project from its own files; both are idempotent.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: demo test lint typecheck pytest bench schemas eval-evidence eval-schema eval-ambiqt eval-unanswerable eval-memory eval-admission clean smoke-cloud report-browser postgres-server

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

pytest: $(STAMP) report-browser postgres-server
	$(BIN)/python -m pytest -p no:cacheprovider --hypothesis-profile=ci --durations=15

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

# The Workspace Database suites (and later the PostgreSQL store) run a real PostgreSQL server on
# 127.0.0.1 (tests/support/postgres.py). Install Debian's `postgresql` when no server binaries
# are found (root with apt-get). Those tests never skip, so without a server this fails loudly.
postgres-server:
	@if [ -n "$$THT_PG_BINDIR" ] && [ -x "$$THT_PG_BINDIR/postgres" ]; then exit 0; fi; \
	d="$$(pg_config --bindir 2>/dev/null)"; \
	if [ -n "$$d" ] && [ -x "$$d/postgres" ] && [ -x "$$d/initdb" ]; then exit 0; fi; \
	if ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing postgresql (the PostgreSQL test server)"; \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq postgresql; } >/dev/null 2>&1 \
	  && ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 \
	  || { echo "could not install postgresql: the PostgreSQL tests need it" >&2; exit 1; }; \
	else \
	  echo "PostgreSQL server binaries missing: apt-get install -y postgresql (as root), or set THT_PG_BINDIR" >&2; \
	  exit 1; \
	fi

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

# Schema linking on BIRD mini-dev (docs/schema-linking.md): table recall@3/@5 and column recall@10,
# with and without the question's evidence, beside a name-only BM25 baseline; weights tuned on a
# locked split's complement only (golden/schema_linking/split.json). Writes
# golden/schema_linking/results.json; BIRD_DIR overrides the data, EVAL_JSON=FILE the report.
eval-schema: $(STAMP)
	$(BIN)/python -m benchmarks.eval_schema_linking

# F1 ambiguity detection on AmbiQT (../shared/data/ambiqt; AMBIQT_DIR overrides): recall per type
# (P precomputed aggregates, J split tables) and the false-alarm rate on the same questions over
# the schema without the added table; rules tuned on the dev third only (hash of db and
# question). Writes golden/ambiqt/report.json; EVAL_JSON=FILE writes elsewhere.
eval-ambiqt: $(STAMP)
	$(BIN)/python -m benchmarks.eval_ambiqt

# F1's unanswerable terms on BIRD mini-dev (every question answerable): false ones, and the probe
eval-unanswerable: $(STAMP)
	$(BIN)/python -m benchmarks.eval_unanswerable

# F2 memory recall on benchmarks/data/memory_recall (its README): hit@3, false recall and
# cross-lingual hit@3 per split, dense-only, BM25-only and fused; floors tuned on the dev split
# only (EVAL_TUNE=1 prints the dev grid). Writes golden/memory_recall/report.json.
eval-memory: $(STAMP)
	$(BIN)/python -m benchmarks.eval_memory_recall

# Question Admission's scope relevance (docs/disambiguation.md): BIRD mini-dev in scope, on
# other databases and off topic; English questions on the Italian demo schema with the word bridge
eval-admission: $(STAMP)
	EVAL_JSON=golden/admission/report.json $(BIN)/python -m benchmarks.eval_admission

schemas: $(STAMP)
	$(BIN)/tht schemas export

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .hypothesis
