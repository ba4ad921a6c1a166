"""Composition: the one place that builds a process's service from ``Settings``.

It sits above every adapter and the read side (``domain`` ← ``application`` ← ``infrastructure``
← ``projections`` ← ``bootstrap`` ← ``api`` ← ``cli``): ``composition`` opens the store, the read
side's engine, the model provider, the tools, the projections and recovery; ``run_config`` turns
settings (or a scenario's limits) into the run limits a chat service is built with. The app's
lifespan, every CLI command, the benches and the tests call it, passing fakes through
``Overrides``.
"""
