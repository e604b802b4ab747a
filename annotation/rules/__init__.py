"""Pure rules of the annotation workflow: functions and dataclasses that import no Django and
touch no database (the workflow's states, assignment designs, window times, returns, risk, the
default taxonomy, study settings, agreement statistics, audit diffs).

May import only the standard library, each other and the pure metrics (``scoring.metrics``);
tested without a database.
"""
