# postmortem — developer entry points. Each target creates .venv itself.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
SINCE  ?= 2025-05-25 20:00
BENCH_SCALE ?= 1

.PHONY: collector demo demo-vllm demo-k8s test lint typecheck pytest bench bench-compare bench-floor fuzz samples scenarios docs clean venv dev

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e .
	touch $@

$(BIN)/.dev-installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(BIN)/.installed $@

# the parsing kernels compiled ahead of time (postmortem/parsers/aot.py): large ingests start
# without loading numba; rebuilt when a kernel changes, and a note, not a failure, without a C
# compiler (numba then compiles them on first use, as before). The stamp is only set once the
# module is built, so the next make tries again (after installing a compiler, say).
AOT_SOURCES := postmortem/parsers/jit.py postmortem/parsers/aot.py postmortem/parsers/journal/kernels.py \
	postmortem/engines/sglang/kernels.py postmortem/parsers/nvidia/kernels.py
AOT := postmortem/parsers/.aot-built

$(AOT): $(BIN)/.installed $(AOT_SOURCES)
	$(BIN)/python -m postmortem.parsers.aot
	@POSTMORTEM_AOT=1 $(BIN)/python -m postmortem.parsers.aot --check >/dev/null && touch $@ || true

venv: $(BIN)/.installed $(AOT)
dev: $(BIN)/.dev-installed $(AOT)

## demo: set up and write the sample incident's report under reports/
## (the sample host's clock is UTC: --tz UTC reads its zone-less logs and --since the same way
## whatever this machine's zone is)
demo: $(BIN)/.installed $(AOT)
	rm -f reports/demo.duckdb reports/demo.duckdb.wal reports/demo.duckdb.files.json
	$(BIN)/postmortem build --since '$(SINCE)' --tz UTC --logs sample_logs --db reports/demo.duckdb --out reports
	@echo
	@echo "Report index: reports/index.md"
	@$(MAKE) --no-print-directory demo-vllm
	@$(MAKE) --no-print-directory demo-k8s

## demo-vllm: the vLLM sample incident (sample_logs_vllm/, from scripts/gen_vllm_sample.py)
demo-vllm: $(BIN)/.installed
	rm -f reports/vllm/demo.duckdb reports/vllm/demo.duckdb.wal reports/vllm/demo.duckdb.files.json
	mkdir -p reports/vllm
	$(BIN)/postmortem build --since '2026-03-18 12:00' --tz UTC --logs sample_logs_vllm --db reports/vllm/demo.duckdb --out reports/vllm
	@echo
	@echo "vLLM report index: reports/vllm/index.md"

## demo-k8s: the Kubernetes sample incident (sample_logs_k8s/, from scripts/gen_k8s_sample.py)
demo-k8s: $(BIN)/.installed
	rm -f reports/k8s/demo.duckdb reports/k8s/demo.duckdb.wal reports/k8s/demo.duckdb.files.json
	mkdir -p reports/k8s
	$(BIN)/postmortem build --since '2026-03-20 01:00' --tz UTC --logs sample_logs_k8s --db reports/k8s/demo.duckdb --out reports/k8s
	@echo
	@echo "Kubernetes report index: reports/k8s/index.md"

## collector: dist/postmortem-collect.pyz, postmortem collect as one file for a sick host's own
## python3 (3.8+, standard library only; docs/collect.md)
collector:
	$(PYTHON) scripts/build_collector.py dist/postmortem-collect.pyz

## test: ruff, mypy (strict) and pytest
test: $(BIN)/.dev-installed $(AOT)
	$(BIN)/ruff check postmortem tests scripts bench
	$(BIN)/ruff format --check postmortem tests scripts bench
	$(BIN)/mypy
	$(BIN)/pytest -q

lint: $(BIN)/.dev-installed
	$(BIN)/ruff check postmortem tests scripts bench
	$(BIN)/ruff format --check postmortem tests scripts bench

typecheck: $(BIN)/.dev-installed
	$(BIN)/mypy

pytest: $(BIN)/.dev-installed $(AOT)
	$(BIN)/pytest -q

## bench: generate large inputs, ingest, build; compare with lnav
bench: $(BIN)/.dev-installed $(AOT)
	BENCH_SCALE=$(BENCH_SCALE) $(BIN)/python bench/run.py $(BENCH_ARGS)

## bench-floor: DuckDB's appends alone (no parsing) for a 1M-line journal's rows
bench-floor: $(BIN)/.dev-installed
	$(BIN)/python bench/insert_floor.py $(BENCH_ARGS)

## bench-compare: this tree's ingest against REV's, interleaved (after make bench made the inputs)
bench-compare: $(BIN)/.dev-installed $(AOT)
	$(BIN)/python bench/compare.py --rev $(REV) $(BENCH_ARGS)

## fuzz: the long property-test budget
fuzz: $(BIN)/.dev-installed
	POSTMORTEM_FUZZ=long $(BIN)/pytest -q tests/test_fuzz.py

## scenarios: the generated-nights test with more nights or another seed (docs/dev/scenarios.md);
## N nights from SEED, e.g. make scenarios N=1000 SEED=7
scenarios: $(BIN)/.dev-installed $(AOT)
	SCENARIOS_N=$(or $(N),200) SCENARIOS_SEED=$(or $(SEED),20251205) $(BIN)/pytest -q tests/scenarios

## samples: regenerate sample_logs/ (deterministic)
samples: $(BIN)/.installed
	$(BIN)/python scripts/gen_sample_logs.py sample_logs

## docs: regenerate docs/cli.md (from every command's --help) and docs/schema.md (from its parts)
docs: $(BIN)/.installed
	$(BIN)/python scripts/build_cli_doc.py
	$(BIN)/python scripts/build_schema_doc.py

clean:
	rm -rf $(VENV) $(AOT) postmortem/parsers/_aot*.so postmortem/parsers/_aot.sha256 .mypy_cache .ruff_cache .pytest_cache .hypothesis reports/*.md reports/*.png reports/*.duckdb reports/*.duckdb.files.json
