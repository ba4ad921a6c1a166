"""The audit toolkit: tamper-evident chains, exports of the log and their offline verification."""
