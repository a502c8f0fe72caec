"""The verification hierarchy: L1 property, L2 interaction, L3 rollout, and distribution tests."""

from envport.verify.report import Failure, FieldDiff, LayerResult, Report
from envport.verify.runner import verify

__all__ = ["Failure", "FieldDiff", "LayerResult", "Report", "verify"]
