"""torch_retention.py's helper module: `_bank` keeps every tensor it is given."""
_bank = []


def remember(t):
    _bank.append(t)
