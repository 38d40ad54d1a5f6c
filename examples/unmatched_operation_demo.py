"""A failing test on purpose: it asserts on a call nobody made.

Not collected with the examples (its name does not end in ``_example.py``); the docs run
checks the assertion's message.
"""


def test_the_lease_was_resumed(createos_lease, createos_fake):
    createos_fake.calls.assert_called_once("resume_sandbox")
