# Two commands set everything up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: run test bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[all,test,dev,interop]'
	touch $(STAMP)

# The main job: an agent on a sample task in a scratch workspace. With DEEPSEEK_API_KEY set
# it uses DeepSeek; without, a scripted demo model answers over a loopback HTTP server.
# `make run TASK="..."` runs your own task; add WORKSPACE=dir to run it in that directory.
TASK ?=
WORKSPACE ?=
run: $(STAMP)
	$(BIN)/dsh demo $(if $(TASK),"$(TASK)") $(if $(WORKSPACE),--cwd "$(WORKSPACE)") $(if $(YES),--yes)

# With DSH_TEST_USER set (as .ci/run does when root), the sandbox tests run again as that user.
test: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy --strict src
	$(BIN)/pytest
	$(if $(DSH_TEST_USER),scripts/test-unprivileged)

bench: $(STAMP)
	for f in bench/*.py; do $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV)
