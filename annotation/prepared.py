"""Prepared reads: the SQL of a hot path's read built once per process, not once a request.

Django builds a statement's SQL anew each time a queryset runs. For the reads that every
autosave, workspace view and "start next" makes, building it (resolving the lookups, compiling
the columns of every select_related table and the subqueries) costs 0.3 to 1 ms of CPU, ten to
forty times what SQLite or PostgreSQL take to run the statement (bench/bench_request_cpu.py).

A :class:`PreparedRead` wraps a function that builds the queryset from its keyword arguments.
The first call on a database connection builds it once with stand-in arguments, compiles it, and
keeps the SQL, where each argument goes among its parameters, and Django's compiler (which knows
how to turn the columns into values and model instances). Each call then runs that SQL with its
own arguments and gives what the queryset would have given: model instances, with their
select_related relations and annotations, or dicts for a ``values()`` queryset.

What a prepared read may be:
- Its arguments, given by keyword, are ids (integers), keys (strings) or times (aware
  datetimes), each compared as it is (``pk=annotation_id``, ``expire_date__gt=now``), and the
  query's shape does not depend on them.
- Everything else in it is fixed: a constant, a setting read at import, or SQL such as
  ``Now()``, which the database evaluates on every run. Constants that are words (a state, a
  purpose, a role: letters, digits and underscores) or counts (whole numbers, not negative:
  a negative one could make ``- -1`` a comment) are written into the SQL itself rather than
  passed as parameters, so that the database plans the statement knowing them: PostgreSQL keeps
  one plan for a prepared statement's runs only when it is as good as one made for the values,
  and a partial index whose condition names a state (the review queue's) is usable only when
  the state is in the SQL. Without them it plans every run anew.
- An id argument may be written into the SQL too (``PreparedRead(build, written=("study_id",))``):
  each of its values is then a statement of its own, planned for that value. This is for a read
  whose best plan depends on the id, as the review picks' on the study (a few items, or most of
  the table): a plan kept for every study would walk a large study's queue to pick a small one's
  item. A connection keeps at most PLANS_KEPT plans, and psycopg at most its `prepared_max`
  prepared statements (it deallocates the least used).
- It reads, without ``prefetch_related`` (run those reads plainly); it may lock the rows it
  reads (``select_for_update``), inside a transaction, as Django requires.

``read.queryset(**arguments)`` is the plain queryset: tests compare the two on the same rows
(tests/annotation/test_prepared.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cached_property
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import QuerySet
from django.db.models.query import ModelIterable, ValuesIterable, get_related_populators
from django.db.transaction import TransactionManagementError

# Stand-ins for building the query, each argument its own, so that its places among the
# parameters can be found: ids no row has, keys no session has, a time long past. The ids are
# within a 32-bit column's range (auth_user's): Django turns a lookup outside a field's range
# into "finds nothing" with no parameter at all.
_ID, _KEY, _TIME = -2_000_000_001, "\x00prepared read argument {}", datetime(1901, 1, 1, tzinfo=UTC)


# The ids a 64-bit integer column can hold (a URL may carry any number of digits).
_ID_RANGE = (-(2**63), 2**63 - 1)


def _kind(name: str, value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return "id"
    if isinstance(value, str):
        return "key"
    if isinstance(value, datetime) and value.tzinfo is not None:
        return "time"
    raise PreparedReadError(f"{name} must be an id (an integer), a key (a string) or an aware time, "
                            f"not {value!r:.40}")


def _stand_in(kind: str, position: int) -> Any:
    if kind == "id":
        return _ID - position
    if kind == "key":
        return _KEY.format(position)
    return _TIME + timedelta(microseconds=position + 1)


# A constant written into the SQL as a literal: a word, which needs no quoting beyond its quotes.
_WORD = re.compile(r"[A-Za-z0-9_]{0,64}")
# A parameter's place in Django's SQL (%s), and an escaped percent sign (%%), which is not one.
_PLACEHOLDER = re.compile(r"%%|%s")


def _with_words_written(
    sql: str, params: list[Any], slots: list[str | None], written: dict[str, int]
) -> tuple[str, list[Any], list[str | None]]:
    """The SQL with each constant parameter that is a word or a count written in as a literal
    ('submitted', 1), and each argument in `written` as its value (an id, not negative); the
    parameters and slots left."""
    kept_params, kept_slots = [], []
    positions = iter(zip(params, slots, strict=True))

    def place(match: re.Match) -> str:
        if match.group() == "%%":
            return "%%"
        param, slot = next(positions)
        if slot is None and isinstance(param, str) and _WORD.fullmatch(param):
            return f"'{param}'"
        if slot is None and isinstance(param, int) and not isinstance(param, bool) and param >= 0:
            return str(int(param))  # psycopg's Int4 too
        if slot in written:
            return str(written[slot])
        kept_params.append(param)
        kept_slots.append(slot)
        return "%s"

    text = _PLACEHOLDER.sub(place, sql)
    if next(positions, None) is not None:
        raise PreparedReadError("the query's SQL has fewer places than parameters")
    return text, kept_params, kept_slots


# The plans a connection keeps; the reads with written ids make one per value.
PLANS_KEPT = 1000


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
    times: set[str]  # the arguments that are times, passed as the database takes them
    constants: list[Any]
    compiler: Any
    names: list[str] | None  # the keys of a values() read; None for model instances
    # Per column that needs one, how a database value becomes a Python one (as results_iter finds them).
    converters: dict[int, Any]

    def rows(self, arguments: dict[str, Any]) -> list[Any]:
        compiler = self.compiler
        if compiler.query.select_for_update and not compiler.connection.in_atomic_block:
            raise TransactionManagementError("select_for_update cannot be used outside of a transaction.")
        for name in self.times:
            arguments[name] = compiler.connection.ops.adapt_datetimefield_value(arguments[name])
        params = [arguments[slot] if slot is not None else constant
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
    """A read built by `build(**arguments)`, compiled once per database connection (see the module)."""

    def __init__(self, build: Callable[..., QuerySet], written: tuple[str, ...] = ()):
        self.build = build
        self.written = written
        self.__doc__ = build.__doc__
        EVERY_PREPARED_READ.append(self)

    def __repr__(self) -> str:
        return f"<prepared read {self.build.__module__}.{self.build.__qualname__}>"

    def queryset(self, **arguments: Any) -> QuerySet:
        """The plain queryset, built and compiled as Django does on every call."""
        return self.build(**arguments)

    def __call__(self, **arguments: Any) -> list[Any]:
        kinds = tuple(sorted((name, _kind(name, value)) for name, value in arguments.items()))
        if any(kind == "id" and not _ID_RANGE[0] <= arguments[name] <= _ID_RANGE[1] for name, kind in kinds):
            return []  # no row has such an id: Django's lookups find nothing too (and SQLite would overflow)
        written = {name: arguments[name] for name in self.written}
        if any(not isinstance(value, int) or isinstance(value, bool) for value in written.values()):
            raise PreparedReadError(f"{self.written} are written into the SQL: they must be ids")
        if any(value < 0 for value in written.values()):
            return []  # no row has a negative id
        connection = connections[DEFAULT_DB_ALIAS]
        plans = connection.__dict__.setdefault("redline_prepared_reads", {})
        key = (self, kinds, *written.values())
        plan = plans.get(key)
        if plan is None:
            if len(plans) >= PLANS_KEPT:
                plans.clear()  # a long-lived connection that met many studies' reviewers: build again
            plan = plans[key] = self._plan(kinds, connection, written)
        return plan.rows(dict(arguments))

    def one(self, **arguments: Any) -> Any:
        """The single row the read finds, or the model's DoesNotExist (as ``.get()``)."""
        rows = self(**arguments)
        if len(rows) != 1:
            model = self.build(**arguments).model
            if not rows:
                raise model.DoesNotExist(f"{model.__name__} matching {arguments} does not exist.")
            raise model.MultipleObjectsReturned(f"{len(rows)} {model.__name__} rows match {arguments}.")
        return rows[0]

    def _plan(self, kinds: tuple[tuple[str, str], ...], connection: Any, written: dict[str, int]) -> _Plan:
        stand_ins = {name: _stand_in(kind, position) for position, (name, kind) in enumerate(kinds)}
        times = {name for name, kind in kinds if kind == "time"}
        queryset = self.build(**stand_ins)
        if queryset._iterable_class not in (ModelIterable, ValuesIterable):
            raise PreparedReadError("a prepared read gives model instances or values() dicts")
        if queryset._prefetch_related_lookups:
            raise PreparedReadError("a prepared read does not prefetch: run that read plainly")
        compiler = queryset.query.get_compiler(DEFAULT_DB_ALIAS)
        sql, params = compiler.as_sql()
        # A time reaches the parameters as the database takes it (a string, for SQLite).
        passed = {name: connection.ops.adapt_datetimefield_value(value) if name in times else value
                  for name, value in stand_ins.items()}
        by_value = {(type(value), value): name for name, value in passed.items()}
        slots = [by_value.get((type(param), param)) for param in params]
        missing = set(stand_ins) - set(slots)
        if missing:
            raise PreparedReadError(f"the query does not use {sorted(missing)} as they are given")
        query = queryset.query
        values = queryset._iterable_class is ValuesIterable
        names_of_values = (list(query.selected) if query.selected else
                           [*query.extra_select, *query.values_select, *query.annotation_select])
        if compiler.has_composite_fields([column[0] for column in compiler.select]):
            raise PreparedReadError("a prepared read does not select composite primary keys")
        converters = compiler.get_converters([column[0] for column in compiler.select[:compiler.col_count]])
        sql, params, slots = _with_words_written(sql, list(params), slots, written)
        return _Plan(sql=sql, slots=slots, times=times, constants=params, compiler=compiler,
                     converters=converters, names=names_of_values if values else None)


def prepared(build: Callable[..., QuerySet]) -> PreparedRead:
    """Decorator: ``@prepared`` on a function of ids, keys or times that builds a queryset."""
    return PreparedRead(build)
