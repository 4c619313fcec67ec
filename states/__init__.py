"""The conversation state machine: one transition table (machine.py) and one module per state."""
