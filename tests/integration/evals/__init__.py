"""Evaluations: ``harness eval``, its history, the recorded evaluations, HolmesGPT imports."""
