"""The failure profile of PROTOCOL.md section 5, computed from tidy tables of final verdicts.

Pure and vectorised: pandas, numpy and scipy only (matplotlib in :mod:`.figures`), no Django.
Start at :func:`failure_profile`; the input schema is documented in :mod:`.tidy`.
"""

from scoring.metrics.analysis.profile import TABLE_CAPTIONS, failure_profile
from scoring.metrics.analysis.tidy import TidyError, validate_tidy

__all__ = ["TABLE_CAPTIONS", "TidyError", "failure_profile", "validate_tidy"]
