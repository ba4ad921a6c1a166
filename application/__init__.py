"""Use cases against ports: the event store application and (later) the chat runtime."""
