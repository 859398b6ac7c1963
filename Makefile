# Attention Lab: every entry point is a make target. `make` alone lists them.
#
# The targets that take a module number check it first with the syllabus (labkit/syllabus.py), which needs only
# the standard library (python -m labkit.syllabus), so a missing or wrong M= is explained
# before .venv is built. The commands behind exp, experiments, quiz, notebooks and list live in
# labkit/course/cli.py.

SELF := $(lastword $(MAKEFILE_LIST))
.DEFAULT_GOAL := help
SHELL := /bin/bash

VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# The Python that creates .venv: python3.11 (what the course pins), else 3.12 or 3.13, else python3. The
# range, 3.11 to 3.13, is pyproject.toml's requires-python; `make pythons` checks both of its ends.
# Each candidate is asked for its own path, so a pyenv shim that names a version it cannot run is skipped.
ifndef PYTHON
PYTHON := $(or $(firstword $(foreach candidate,python3.11 python3.12 python3.13 python3,\
	$(shell $(candidate) -c 'import sys; print(sys.executable)' 2>/dev/null))),python3)
endif
# LANG=zh-CN asks for the Chinese edition (简体中文), and so does a Chinese locale (zh_CN.UTF-8); LANG=en for
# English; ATTENTION_LAB_LANG, when set, decides. The targets that show the learner something pass it on as --lang,
# the module checks (CHECK) as ATTENTION_LAB_LANG.
EDITION := $(or $(ATTENTION_LAB_LANG),$(if $(filter zh%,$(LANG)),zh-CN,en))
CLI := $(PY) -m labkit.course --lang $(EDITION)
ZH_FOLDER := $(if $(filter zh-CN,$(EDITION)),/zh-CN)
# Module checks run before .venv exists, so they use .venv's Python only once it is there.
CHECK = ATTENTION_LAB_LANG=$(EDITION) $(if $(wildcard $(PY)),$(PY),$(PYTHON)) -m labkit.syllabus check
# make exp M=03; make test ARGS="-k rope -x"
M ?=
ARGS ?=
FORCE ?=
SOLUTIONS ?=
FILE ?=
ROUTE ?=

.PHONY: help setup lab answers workspace test pythons list exp experiments quiz grade notebooks translations portability slides bench train-tiny clean distclean

help: ## list the targets (the default)
	@echo "Attention Lab. Usage: make TARGET [M=NN] [ARGS=...]"
	@echo
	@awk 'BEGIN { FS = ":.*## " } /^[a-z][a-z-]*:.*## / { printf "  %-12s %s\n", $$1, $$2 }' $(SELF)
	@echo
	@echo "M=NN picks a module (3 or 03); ARGS=... goes to pytest (test), the benchmarks (bench) or portability."

setup: $(STAMP) ## create .venv and install the pinned requirements, minimind_ref and labkit (editable)
	@:

# The venv itself: refuse a Python outside 3.11-3.13 rather than half-build with it (numpy and IPython
# have no release for 3.10 that the pins can use; 3.14 is not checked).
$(PY):
	@if ! "$(PYTHON)" -c 'import sys; sys.exit(not (3, 11) <= sys.version_info[:2] <= (3, 13))' 2>/dev/null; then \
		if command -v "$(PYTHON)" >/dev/null; then found=$$("$(PYTHON)" --version 2>&1); else found="not found"; fi; \
		echo "Attention Lab needs Python 3.11, 3.12 or 3.13 (3.11 recommended) to create $(VENV);" \
		     "'$(PYTHON)' is $$found. Install python3.11, or run: make setup PYTHON=/path/to/python3.11" >&2; \
		exit 1; \
	fi
	@echo "Creating $(VENV) with $(PYTHON) ($$("$(PYTHON)" --version 2>&1))"
	@"$(PYTHON)" -m venv $(VENV) || { rm -rf $(VENV); exit 1; }

# Re-installs only when requirements.txt or pyproject.toml changed. --no-deps: torch comes only
# from requirements.txt, pinned, never from the package's own unpinned "torch" dependency.
$(STAMP): requirements.txt pyproject.toml | $(PY)
	$(PY) -m pip install -r requirements.txt
	$(PY) -m pip install --no-deps -e .
	@touch $@

# Jupyter refuses to run as root unless told; root is normal in containers and cloud sandboxes.
# The server's root is the course, so that a notebook's relative links (../docs/glossary.md) open;
# the file browser starts in the folder named.
JUPYTER = $(VENV)/bin/jupyter lab --ServerApp.root_dir=. $(if $(filter 0,$(shell id -u)),--allow-root)
lab: setup ## start here: your own copies of the notebooks (workspace/, made on first use, never overwritten), in JupyterLab (LANG=zh-CN: 中文)
	@$(CLI) workspace
	$(JUPYTER) --LabApp.default_url=/lab/tree/workspace$(ZH_FOLDER)

answers: setup ## the answer book: JupyterLab on the solved notebooks (notebooks/)
	$(JUPYTER) --LabApp.default_url=/lab/tree/notebooks$(ZH_FOLDER)

# Never run by make clean: workspace/ holds the learner's work.
# FORCE=1 is the only value that replaces a copy (any other is refused by name); each replaced copy is
# saved beside it first.
workspace: ## make your missing copies in workspace/ (M=03: one; M=03 FORCE=1: replace it, saving the old one; FORCE=1: all)
	@$(CHECK) workspace $(if $(M),"$(M)")
	@$(MAKE) --no-print-directory setup
	@$(CLI) workspace $(if $(M),"$(M)") $(if $(FORCE),--force="$(FORCE)")

# The suite runs on every core (pyproject's addopts), except the tests marked serial, claims about
# time, which run after it one at a time, from the files that may hold them (SERIAL, conftest.py's
# SERIAL_FILES: collecting the whole suite again was half of that pass's time). Exit status 5 is
# pytest's "no test selected", which an ARGS="-k ..." filter makes normal in one of the two passes.
SERIAL = tests/course/test_experiments.py
test: setup ## lint (ruff), then the whole test suite: tests/ and every notebook under nbval (ARGS=... to pytest)
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -m "not serial" $(ARGS) || [ $$? -eq 5 ]
	$(PY) -m pytest -m serial -n0 $(or $(ARGS),$(SERIAL)) || [ $$? -eq 5 ]

pythons: ## build the environment on the lowest and highest Python the course supports (3.11, 3.13) and run a slice of the suite on each
	@.ci/pythons

list: setup ## list modules and what each has
	@$(CLI) list

exp: ## run one module's experiment scripts: make exp M=03
	@$(CHECK) exp "$(M)"
	@$(MAKE) --no-print-directory setup
	@$(CLI) exp "$(M)"

experiments: setup ## run every module's experiment scripts
	@$(CLI) experiments

quiz: ## take a module's quiz in the terminal: make quiz M=03 (ROUTE=express: the core's questions only)
	@$(CHECK) quiz "$(M)"
	@$(MAKE) --no-print-directory setup
	@$(CLI) quiz "$(M)" $(if $(ROUTE),--route "$(ROUTE)")

# The grader's own exit status is 0 (every stage passes), 1 (a stage fails), 2 (a usage mistake);
# make reports any failure as its own status 2, so scripts that need the difference call
# `python -m labkit.grader FILE` directly.
GRADE_NEEDS_FILE_en := make grade needs your file, as in: make grade FILE=path/to/my_attention.py
GRADE_NEEDS_FILE_zh-CN := make grade 需要你的文件，例如：make grade FILE=path/to/my_attention.py
grade: ## grade your attention layer stage by stage: make grade FILE=path/to/my_attention.py (module 10; LANG=zh-CN: 中文)
	@if [ -z "$(FILE)" ]; then echo "$(GRADE_NEEDS_FILE_$(EDITION))" >&2; exit 2; fi
	@$(MAKE) --no-print-directory setup
	@$(PY) -m labkit.grader --lang $(EDITION) "$(FILE)" $(ARGS)

notebooks: ## re-execute notebooks in place to refresh stored outputs, in English and in Chinese (all, or M=03)
	@$(CHECK) notebooks $(if $(M),"$(M)")
	@$(MAKE) --no-print-directory setup
	@# Each English notebook, then its Chinese twin, built and run in Chinese (its outputs are Chinese).
	@$(CLI) notebooks $(if $(M),"$(M)")
	@# The rest of the edition (the glossary page; it says which notebooks lack a translation).
	-@$(PY) -m labkit.course.translation build $(if $(M),"$(M)",all)

# The Chinese edition (CONTRIBUTING.md, "The Chinese edition"): notebooks/zh-CN/ and docs/glossary.zh-CN.md,
# built from the English and translations/zh-CN/. Exit 1, naming each text, while one lacks a translation.
translations: setup ## build the Chinese notebooks and glossary page from the English and translations/zh-CN/ (all, or M=03)
	@$(PY) -m labkit.course.translation build $(if $(M),"$(M)",all)

portability: ## run notebooks as other machines would; list stored outputs that would change (all, or M=03)
	@$(CHECK) portability $(if $(M),"$(M)")
	@$(MAKE) --no-print-directory setup
	@$(CLI) portability $(if $(M),"$(M)") $(ARGS)

slides: ## a module's notebook as offline 16:9 slides: make slides M=03 (outputs/slides/NN_slug.slides.html; SOLUTIONS=0: NN_slug.no-solutions.slides.html)
	@$(CHECK) slides "$(M)"
	@$(MAKE) --no-print-directory setup
	@$(CLI) slides "$(M)" $(if $(filter 0,$(SOLUTIONS)),--no-solutions)

bench: setup ## run the benchmarks (benchmarks/run_all.py; ARGS=--quick etc.)
	$(PY) benchmarks/run_all.py $(ARGS)

train-tiny: setup ## train the small MiniMind behind module 09 on the CPU (ARGS=--check: rebuild, compare)
	$(PY) -m labkit.tiny_model $(ARGS)

# workspace/ (the learner's copies) is never touched: nothing here names it.
clean: ## remove generated files: outputs/, caches, build metadata (keeps .venv and your workspace/)
	rm -rf outputs
	rm -rf .pytest_cache
	find . \( -path ./.venv -o -path ./.git \) -prune -o \
		\( -name __pycache__ -o -name .pytest_cache -o -name .ipynb_checkpoints -o -name '*.egg-info' \) \
		-type d -prune -exec rm -rf {} +

distclean: clean ## clean, and remove .venv too
	rm -rf $(VENV)
