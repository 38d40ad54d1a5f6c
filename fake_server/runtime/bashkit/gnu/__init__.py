"""GNU tools in place of bashkit builtins that stop short of GNU behaviour.

Each module's docstring names the bashkit limit it exists for; ``bashkit.shell`` installs
them as custom commands of every interpreter.
"""
