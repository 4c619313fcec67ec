"""Stand-ins for modules that exist only on other machines (injected by tests; never shipped)."""
