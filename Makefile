# The quickstart's commands, plus the lint the CI runs.
.PHONY: demo up down test test-unit test-e2e lint soak bench

# The whole demo on LocalStack, started and stopped.
demo:
	@bash scripts/demo

# The demo, left running to drive by hand with the standin CLI.
up:
	@bash scripts/demo --keep

# Stops what `make up` and `make test-e2e` left running.
down:
	@bash scripts/demo --stop
	@bash scripts/test --down

test:
	@bash scripts/test

# The tests that need no LocalStack: a loop of a few minutes.
test-unit:
	@bash scripts/test --unit

# The LocalStack tests alone (TESTS="--test artifacts" for some), on the stack the last
# run left up (deployed again when what it is built from changed); `make down` stops it.
test-e2e:
	@bash scripts/test --e2e $(TESTS)

# Hundreds of stand-ins under faults, judged by an oracle (SOAK_ARGS: see scripts/soak --help).
soak:
	@bash scripts/soak $(SOAK_ARGS)

# Push against follow against the floor; costs; cold starts; the receiver's CPU.
bench:
	@bash scripts/bench

lint:
	@bash scripts/lint
