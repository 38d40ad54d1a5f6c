"""The fake's own control API under ``/_fake``: what a test sets or reads out of band
(sandboxes, faults, the clock, the journal), behind the control key."""
