# The two commands of the quickstart, plus the lint the CI runs.
.PHONY: demo test lint

demo:
	@bash scripts/demo

test:
	@bash scripts/test

lint:
	@bash scripts/lint
