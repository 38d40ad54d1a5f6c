"""Streamed bodies: reply writers (the fault seams), the shell's frames and session, and the
relays that splice a client to a sandbox's port."""
