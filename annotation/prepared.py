"""Prepared reads: the SQL of a hot path's read built once per process, not once a request.

Django builds a statement's SQL anew each time a queryset runs. For the reads that every
autosave, workspace view and "start next" makes, building it (resolving the lookups, compiling
the columns of every select_related table and the subqueries) costs 0.3 to 1 ms of CPU, ten to
forty times what SQLite or PostgreSQL take to run the statement (bench/bench_request_cpu.py).

A :class:`PreparedRead` wraps a function that builds the queryset from integer arguments (ids).
The first call on a database connection builds it once with stand-in ids, compiles it, and keeps
the SQL, where each argument goes among its parameters, and Django's compiler (which knows how
to turn the columns into values and model instances). Each call then runs that SQL with its own
ids and gives what the queryset would have given: model instances, with their select_related
relations and annotations, or dicts for a ``values()`` queryset.

What a prepared read may be:
- Its arguments are ids (integers), given by keyword; the query's shape does not depend on them.
- Everything else in it is fixed: a constant, a setting read at import, or SQL such as
  ``Now()``, which the database evaluates on every run.
- It reads, without ``prefetch_related`` (run those reads plainly); it may lock the rows it
  reads (``select_for_update``), inside a transaction, as Django requires.

``read.queryset(**ids)`` is the plain queryset: tests compare the two on the same rows
(tests/annotation/test_prepared.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import QuerySet
from django.db.models.query import ModelIterable, ValuesIterable, get_related_populators
from django.db.transaction import TransactionManagementError

# Stand-in ids for building the query: no row has a negative id, and each argument gets its
# own, so that its places among the parameters can be found.
_STAND_IN = -7_300_000_001


# Every prepared read made so far (tests compare each with its plain queryset).
EVERY_PREPARED_READ: list[PreparedRead] = []


class PreparedReadError(Exception):
    """A prepared read's query does not keep to the rules above."""


@dataclass
class _Plan:
    """One compiled read on one database connection."""

    sql: str
    # Per parameter: the argument's name, or None for a constant of the query (in `constants`).
    slots: list[str | None]
    constants: list[Any]
    compiler: Any
    names: list[str] | None  # the keys of a values() read; None for model instances
    # Per column that needs one, how a database value becomes a Python one (as results_iter finds them).
    converters: dict[int, Any]

    def rows(self, ids: dict[str, int]) -> list[Any]:
        compiler = self.compiler
        if compiler.query.select_for_update and not compiler.connection.in_atomic_block:
            raise TransactionManagementError("select_for_update cannot be used outside of a transaction.")
        params = [ids[slot] if slot is not None else constant
                  for slot, constant in zip(self.slots, self.constants, strict=True)]
        with compiler.connection.cursor() as cursor:
            cursor.execute(self.sql, params)
            fetched = cursor.fetchall()
        converted = list(compiler.apply_converters(fetched, self.converters)) if self.converters else fetched
        if self.names is not None:
            return [dict(zip(self.names, row, strict=False)) for row in converted]
        return [self._instance(row) for row in converted]

    @cached_property
    def _model_layout(self) -> tuple[Any, slice, list[str], list[Any]]:
        """What ModelIterable works out per query: the model, its columns in the row, their
        attribute names, and the populators that fill the select_related relations."""
        compiler = self.compiler
        klass_info = compiler.klass_info
        columns = slice(klass_info["select_fields"][0], klass_info["select_fields"][-1] + 1)
        names = [column[0].target.attname for column in compiler.select[columns]]
        populators = get_related_populators(klass_info, compiler.select, compiler.using)
        return klass_info["model"], columns, names, populators

    def _instance(self, row: list[Any]) -> Any:
        """A model instance from a row, as Django's ModelIterable makes it."""
        model, columns, names, populators = self._model_layout
        instance = model.from_db(self.compiler.using, names, row[columns])
        for populator in populators:
            populator.populate(row, instance)
        for name, position in (self.compiler.annotation_col_map or {}).items():
            setattr(instance, name, row[position])
        return instance


class PreparedRead:
    """A read built by `build(**ids)`, compiled once per database connection (see the module)."""

    def __init__(self, build: Callable[..., QuerySet]):
        self.build = build
        self.__doc__ = build.__doc__
        EVERY_PREPARED_READ.append(self)

    def __repr__(self) -> str:
        return f"<prepared read {self.build.__module__}.{self.build.__qualname__}>"

    def queryset(self, **ids: int) -> QuerySet:
        """The plain queryset, built and compiled as Django does on every call."""
        return self.build(**ids)

    def __call__(self, **ids: int) -> list[Any]:
        for name, value in ids.items():
            if not isinstance(value, int) or isinstance(value, bool):
                raise PreparedReadError(f"{name} must be an id (an integer), not {value!r:.40}")
        connection = connections[DEFAULT_DB_ALIAS]
        plans = connection.__dict__.setdefault("redline_prepared_reads", {})
        key = (self, tuple(sorted(ids)))
        plan = plans.get(key)
        if plan is None:
            plan = plans[key] = self._plan(sorted(ids))
        return plan.rows(ids)

    def one(self, **ids: int) -> Any:
        """The single row the read finds, or the model's DoesNotExist (as ``.get()``)."""
        rows = self(**ids)
        if len(rows) != 1:
            model = self.build(**{name: _STAND_IN for name in ids}).model
            if not rows:
                raise model.DoesNotExist(f"{model.__name__} matching {ids} does not exist.")
            raise model.MultipleObjectsReturned(f"{len(rows)} {model.__name__} rows match {ids}.")
        return rows[0]

    def _plan(self, names: list[str]) -> _Plan:
        stand_ins = {name: _STAND_IN - position for position, name in enumerate(names)}
        queryset = self.build(**stand_ins)
        if queryset._iterable_class not in (ModelIterable, ValuesIterable):
            raise PreparedReadError("a prepared read gives model instances or values() dicts")
        if queryset._prefetch_related_lookups:
            raise PreparedReadError("a prepared read does not prefetch: run that read plainly")
        compiler = queryset.query.get_compiler(DEFAULT_DB_ALIAS)
        sql, params = compiler.as_sql()
        by_value = {value: name for name, value in stand_ins.items()}
        slots = [by_value.get(param) if isinstance(param, int) else None for param in params]
        missing = set(names) - set(slots)
        if missing:
            raise PreparedReadError(f"the query does not use {sorted(missing)} as ids")
        query = queryset.query
        values = queryset._iterable_class is ValuesIterable
        names_of_values = (list(query.selected) if query.selected else
                           [*query.extra_select, *query.values_select, *query.annotation_select])
        if compiler.has_composite_fields([column[0] for column in compiler.select]):
            raise PreparedReadError("a prepared read does not select composite primary keys")
        converters = compiler.get_converters([column[0] for column in compiler.select[:compiler.col_count]])
        return _Plan(sql=sql, slots=slots, constants=list(params), compiler=compiler, converters=converters,
                     names=names_of_values if values else None)


def prepared(build: Callable[..., QuerySet]) -> PreparedRead:
    """Decorator: ``@prepared`` on a function of ids that builds a queryset."""
    return PreparedRead(build)
