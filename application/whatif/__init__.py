"""What-if re-release (``harness audit replay``): a recorded diagnosis's release run again.

:mod:`.replay` runs the release pipeline over a run's recorded events (other rules, another
judge), :mod:`.answers` answers its model calls from the recording, :mod:`.decision`
summarises both decisions alike, :mod:`.records` keeps the result in the run's replay stream.
"""
