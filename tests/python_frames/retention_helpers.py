"""A helper module of retention_cases.py: `_bank` is the module global that keeps every tensor it is
given (the bug a "kept by" line must name)."""
_bank = []


def remember(t):
    _bank.append(t)
