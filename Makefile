# Two commands set everything up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
RUN_STAMP := $(VENV)/.run-stamp
TEST_STAMP := $(VENV)/.test-stamp

.PHONY: run test bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# `make run` installs what the main job needs (dsh, no extra); `make test` the whole set.
$(RUN_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $(RUN_STAMP)

$(TEST_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[all,test,dev,interop,swebench]'
	touch $(TEST_STAMP) $(RUN_STAMP)

# The main job: an agent on a sample task in a scratch workspace. With DEEPSEEK_API_KEY set
# it uses DeepSeek; without, a scripted demo model answers over a loopback HTTP server.
# `make run TASK="..."` runs your own task; add WORKSPACE=dir to run it in that directory.
TASK ?=
WORKSPACE ?=
run: $(RUN_STAMP)
	$(BIN)/dsh demo $(if $(TASK),"$(TASK)") $(if $(WORKSPACE),--cwd "$(WORKSPACE)") $(if $(YES),--yes)

# With DSH_TEST_USER set (as .ci/run does when root), the sandbox and trust tests run again as that user.
test: $(TEST_STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy --strict src
	$(BIN)/pytest
	$(if $(DSH_TEST_USER),scripts/test-unprivileged)

bench: $(TEST_STAMP)
	for f in bench/*.py; do $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV)
