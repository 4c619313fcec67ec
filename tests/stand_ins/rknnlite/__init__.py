"""A stand-in for rknn-toolkit-lite2's ``rknnlite`` package, for tests on machines without an NPU.

Tests put it in ``sys.modules`` as ``rknnlite`` and ``rknnlite.api``; see ``api.py``.
"""
