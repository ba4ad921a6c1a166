"""The run lifecycle through the chat use case: SPEC §10 outcomes, paths, commits, hung ports."""
