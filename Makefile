# The quickstart's commands, plus the lint the CI runs.
.PHONY: demo up down test lint

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

lint:
	@bash scripts/lint
