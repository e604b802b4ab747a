"""Pure rules of the annotation workflow: functions and dataclasses that import no Django and
touch no database (the workflow's states, assignment designs, window times, returns, risk, the
default taxonomy, study settings, agreement statistics, audit diffs, the guidelines' checks and
rendering, a verdict against its gold one and the practice pass rule, agreement with gold,
pseudonyms, the items a recruited participant is given).

May import only the standard library, each other and the pure metrics (``scoring.metrics``);
tested without a database.
"""
