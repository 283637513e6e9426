# alkstore developer commands. `make` (or `make help`) lists them.
#
# Every target that needs the Python package builds ONE release wheel with
# maturin into dist/ and installs exactly that wheel, so tests and the demo
# import alkstore from site-packages, never from python/ on sys.path.
# `dist` builds the artifacts for PyPI into dist/release/ instead (ADR 0023).

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

PYTHON ?= python3
PIP := $(PYTHON) -m pip
MATURIN_SPEC := maturin>=1.7,<2.0
# Extras installed with the wheel; `lint` adds its own.
EXTRAS ?= test

# Release artifacts (SPEC §21, ADR 0023): an sdist and an abi3 wheel for
# manylinux2014 (glibc 2.17) x86_64, linked by zig against glibc 2.17's symbols.
# Their own directory, so `install` still finds exactly one wheel in dist/.
DIST_DIR := dist/release
DIST_TARGET := x86_64-unknown-linux-gnu
# ziglang is pinned to the zig the wheel was verified with (zig releases change
# its command line); the checkers only need a version with today's output.
DIST_TOOLS_SPEC := 'maturin>=1.16,<2.0' 'ziglang==0.17.1' 'auditwheel>=6.1,<7' 'twine>=6.1' 'check-jsonschema>=0.33'
WORKFLOW := .github/workflows/release.yml

# One cargo target dir for maturin, cargo test and cargo bench, so a run
# compiles each dependency once per profile.
export CARGO_TARGET_DIR ?= $(CURDIR)/target
export PIP_DISABLE_PIP_VERSION_CHECK := 1
export PIP_ROOT_USER_ACTION := ignore

.PHONY: help
help: ## Show this list
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | \
		awk 'BEGIN {FS = ":.*## "}; {printf "  make %-10s %s\n", $$1, $$2}'

.PHONY: tools
tools: ## Install the build tool (maturin) into the current Python
	@$(PYTHON) -m maturin --version >/dev/null 2>&1 || $(PIP) install --quiet '$(MATURIN_SPEC)'
	@command -v cargo >/dev/null || { echo "cargo not found: install Rust from https://rustup.rs" >&2; exit 1; }

.PHONY: wheel
wheel: tools ## Build the release wheel into dist/ (one maturin build)
	rm -f dist/alkstore-*.whl
	$(PYTHON) -m maturin build --release --out dist

.PHONY: install
install: wheel ## Build the wheel and install exactly that wheel (+ test extras)
	@wheels=(dist/alkstore-*.whl); \
	if [ "$${#wheels[@]}" -ne 1 ] || [ ! -f "$${wheels[0]}" ]; then \
		echo "expected exactly one wheel in dist/, found: $${wheels[*]}" >&2; exit 1; \
	fi; \
	wheel="$${wheels[0]}"; \
	echo "installing $$wheel$(if $(EXTRAS),[$(EXTRAS)])"; \
	$(PIP) install --quiet "$$wheel$(if $(EXTRAS),[$(EXTRAS)])"; \
	$(PIP) install --quiet --force-reinstall --no-deps "$$wheel"
	@# Checked from the repo root, where pytest runs: python/ must not shadow the install.
	@$(PYTHON) -c '$(CHECK_INSTALLED)'

CHECK_INSTALLED := import alkstore, sys; f = alkstore.__file__ or "?"; 	sys.exit(0 if "site-packages" in f else "alkstore imported from " + f + ", not from site-packages")

.PHONY: demo
demo: EXTRAS =
demo: install ## Build, install, then run the tour: python -m alkstore demo
	$(PYTHON) -m alkstore demo

.PHONY: test
test: install ## Build + install the wheel, then Rust tests and pytest (Postgres too)
	cargo test --workspace
	@# cargo test does not build bench targets; keep the criterion benches compiling.
	cargo build -p alkstore-benches --benches
	$(PYTHON) -m pytest

# Material prints a banner about MkDocs 2.0 at every build; ADR 0036 records why the
# site stays on MkDocs 1.x, so the build log leaves it out.
.PHONY: docs
docs: EXTRAS = docs
docs: install ## Build the docs site into site/: docs/ and the API reference, mkdocs --strict
	NO_MKDOCS_2_WARNING=1 $(PYTHON) -m mkdocs build --strict

.PHONY: lint
lint: EXTRAS = test,lint
lint: install ## rustfmt, clippy, ruff, mypy --strict, stubtest
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings
	$(PYTHON) -m ruff check
	$(PYTHON) -m ruff format --check
	$(PYTHON) -m mypy --strict python tests
	$(PYTHON) -m mypy.stubtest alkstore._core

.PHONY: bench
bench: install ## criterion claim benchmarks, then the Python workloads A-D
	cargo bench -p alkstore-benches
	$(PYTHON) benches/workloads.py

# Minutes of faults per engine for `make soak` (the suite runs a 1-minute profile).
SOAK_MINUTES ?= 10
SOAK_SEED ?= 1
SOAK_WORKERS ?= 4

.PHONY: soak
soak: install ## The soak with a ledger, SOAK_MINUTES (10) per engine; writes docs/reliability.md
	@mkdir -p target/soak
	status=0; \
	for engine in sqlite postgres; do \
		$(PYTHON) benches/soak.py --engine $$engine --minutes $(SOAK_MINUTES) --workers $(SOAK_WORKERS) \
			--seed $(SOAK_SEED) --json target/soak/$$engine.json || status=1; \
	done; \
	$(PYTHON) benches/soak.py --render docs/reliability.md target/soak/sqlite.json target/soak/postgres.json; \
	exit $$status

.PHONY: dist-tools
dist-tools: ## Install the release tools (ziglang, auditwheel, twine, check-jsonschema)
	@$(PIP) install --quiet $(DIST_TOOLS_SPEC)

.PHONY: dist
dist: tools dist-tools ## Build the sdist and the manylinux2014 x86_64 abi3 wheel into dist/release/
	rm -rf $(DIST_DIR)
	@# maturin finds zig through `python3 -m ziglang` unless told which Python has it.
	py="$$($(PYTHON) -c 'import sys; print(sys.executable)')"; \
	CARGO_ZIGBUILD_PYTHON_PATH="$$py" $(PYTHON) -m maturin build --release --zig \
		--compatibility manylinux2014 --target $(DIST_TARGET) --interpreter "$$py" --out $(DIST_DIR)
	$(PYTHON) -m maturin sdist --out $(DIST_DIR)

.PHONY: dist-check
dist-check: dist-tools ## Check dist/release/ and release.yml; smoke-test the wheel on CPython 3.11-3.13
	$(PYTHON) scripts/check_dist.py $(DIST_DIR)
	$(PYTHON) -m twine check --strict $(DIST_DIR)/*
	@# The workflow cannot run here: parse it and check it against GitHub's workflow
	@# schema, plus actionlint where one is on PATH (its PyPI package fetches the
	@# binary from outside the package registries when it installs, so not here).
	$(PYTHON) -m check_jsonschema --builtin-schema vendor.github-workflows $(WORKFLOW)
	@if command -v actionlint >/dev/null; then echo "actionlint $(WORKFLOW)"; actionlint $(WORKFLOW); fi
	$(PYTHON) scripts/smoke_wheel.py $(DIST_DIR)/alkstore-*.whl

.PHONY: clean
clean: ## Remove build outputs and caches
	cargo clean
	rm -rf dist site .pytest_cache .mypy_cache .ruff_cache .hypothesis
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
	find python -name '_core*.so' -delete
