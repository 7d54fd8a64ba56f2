# The quickstart's commands, plus the lint the CI runs.
.PHONY: demo up down test lint soak bench

# The whole demo on LocalStack, started and stopped.
demo:
	@bash scripts/demo

# The demo, left running to drive by hand with the standin CLI.
up:
	@bash scripts/demo --keep

# Stops what `make up` left running.
down:
	@bash scripts/demo --stop

test:
	@bash scripts/test

# Hundreds of stand-ins under faults, judged by an oracle (SOAK_ARGS: see scripts/soak --help).
soak:
	@bash scripts/soak $(SOAK_ARGS)

# Push against follow against the floor; costs; cold starts; the receiver's CPU.
bench:
	@bash scripts/bench

lint:
	@bash scripts/lint
