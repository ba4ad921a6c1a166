"""The Run aggregate: one request's lifecycle, budget, cancellation, guards and release."""

from __future__ import annotations

from domain.run_answers import RunAnswers
from domain.run_drafts import RunDrafts
from domain.run_guards import RunGuards
from domain.run_steps import RunSteps


class Run(RunSteps, RunDrafts, RunAnswers, RunGuards):
    """One request's execution: identity, deadline, budget and exactly one termination.

    It is composed of one layer per phase, each with its own events and commands, all on
    :class:`~domain.run_core.RunCore` (start, state, queries, shared checks):
    :class:`~domain.run_steps.RunSteps` (routing, status, model steps, charges) on
    :class:`~domain.run_termination.RunTermination` (how a run ends),
    :class:`~domain.run_drafts.RunDrafts` (the drafts the model proposed),
    :class:`~domain.run_answers.RunAnswers` (a knowledge answer's passages and proposal), and
    :class:`~domain.run_guards.RunGuards` (guards and release).

    eventsourcing redefines every event class of an aggregate's bases on the aggregate itself,
    so each event is recorded as ``Run.<Name>`` with the topic ``domain.run:Run.<Name>``
    whichever layer declares it: the stored topics are those of the one-module aggregate this
    was, and ``tests/unit/test_event_topics.py`` pins them.
    """
