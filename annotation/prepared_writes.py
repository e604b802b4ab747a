"""Prepared writes: the SQL of a hot path's writes built once per process, not once a request.

What annotation.prepared does for reads, for the writes of an autosave, "start next" and a
review claim. Django builds an UPDATE's SQL anew on every call (about 1 ms of CPU for the
autosave's conditional UPDATE of the annotation, bench/bench_request_cpu.py), and
``Model.save()`` does a good deal of work around its INSERT or UPDATE. Here:

- ``@prepared_update`` on a function of keyword arguments that gives ``(queryset, values)``:
  the rows to change, and their new values as ``queryset.update(**values)`` takes them. The
  first call on a database connection builds it with stand-in arguments and keeps the SQL and
  where each argument goes among its parameters; each call runs that SQL with its own
  arguments and gives the number of rows changed, as ``update()`` does. The arguments are a
  prepared read's (ids, keys, aware times) and also numbers (floats) and JSON values (dicts or
  lists, as a new value of a JSON column). The query's shape may depend on which arguments are
  given, never on their values.
- ``insert(instance)`` and ``save(instance)``: ``instance.save()`` of a new row and of an
  existing one (every column), with the SQL built once per model and connection and the
  values prepared on each call as Django prepares them (``pre_save``, ``get_db_prep_save``:
  ``auto_now`` times, JSON).

None of them sends Django's pre_save or post_save signals: Redline connects no receiver to them
(tests/annotation/test_prepared_writes.py fails if one is connected to a model written here).
``update.queryset(**arguments)`` gives the plain queryset and values, which tests compare.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.db.models import Model, QuerySet
from django.db.models.sql import InsertQuery, UpdateQuery

from annotation.prepared import _ID, _ID_RANGE, PreparedReadError, _kind, _stand_in

# Every prepared update made so far (tests compare each with its plain queryset).
EVERY_PREPARED_UPDATE: list[PreparedUpdate] = []


class PreparedWriteError(Exception):
    """A prepared write's query or row does not keep to the rules above."""


def _write_kind(name: str, value: Any) -> str:
    if isinstance(value, float):
        return "number"
    if isinstance(value, (dict, list)):
        return "json"
    try:
        return _kind(name, value)
    except PreparedReadError:
        raise PreparedWriteError(f"{name} must be an id, a key, an aware time, a number or a JSON "
                                 f"object or list, not {value!r:.40}") from None


# A write's ids and counts may be positive-only columns (a version): Django turns a value out
# of a column's range into "changes nothing" with no parameter, so its stand-ins are positive.
_COUNT = -_ID


def _write_stand_in(kind: str, position: int) -> Any:
    if kind == "id":
        return _COUNT + position
    if kind == "number":
        return _ID - position - 0.5
    if kind == "json":
        return {"prepared write argument": position}
    return _stand_in(kind, position)


def _param_key(param: Any) -> tuple[type, Any]:
    """A parameter as something to compare: a JSON value wrapped for the driver by what it
    holds, an integer typed for the driver (psycopg's Int4) as an integer."""
    held = getattr(param, "obj", None)  # psycopg's Jsonb
    if isinstance(held, (dict, list)):
        return type(param), json.dumps(held, sort_keys=True)
    if isinstance(param, int) and not isinstance(param, bool):
        return int, int(param)
    return type(param), param


def _typed_as(param: Any, prepare: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """`prepare`, giving an integer the type the compiler gave this parameter (psycopg's Int4
    for a column Django types so), else as it is."""
    typed = type(param)
    if isinstance(param, int) and typed not in (int, bool):
        return lambda value: typed(prepare(value))
    return prepare


def _unchanged(value: Any) -> Any:
    return value


@contextmanager
def _executing(connection: Any) -> Iterator[Any]:
    """A cursor, and a failed write marks the transaction it is in for rollback, as Django's
    update() and save() do (a caller that catches the error cannot go on writing in it)."""
    with transaction.mark_for_rollback_on_error(connection.alias), connection.cursor() as cursor:
        yield cursor


@dataclass
class _UpdatePlan:
    """One compiled UPDATE on one database connection."""

    sql: str
    # Per parameter: the argument it takes and how its value is prepared, or None for a
    # constant of the query (in `constants`).
    slots: list[tuple[str, Callable[[Any], Any]] | None]
    constants: list[Any]

    def run(self, connection: Any, arguments: Mapping[str, Any]) -> int:
        params = [slot[1](arguments[slot[0]]) if slot is not None else constant
                  for slot, constant in zip(self.slots, self.constants, strict=True)]
        with _executing(connection) as cursor:
            cursor.execute(self.sql, params)
            return cursor.rowcount


def _update_query(queryset: QuerySet, values: Mapping[str, Any]) -> UpdateQuery:
    """The UPDATE that ``queryset.update(**values)`` runs."""
    query = queryset.query.chain(UpdateQuery)
    query.add_update_values(values)
    query.annotations = {}
    if query.related_updates:
        raise PreparedWriteError("a prepared update changes the columns of one table")
    return query


class PreparedUpdate:
    """An UPDATE built by `build(**arguments)`, compiled once per database connection (see the module)."""

    def __init__(self, build: Callable[..., tuple[QuerySet, dict[str, Any]]]):
        self.build = build
        self.__doc__ = build.__doc__
        EVERY_PREPARED_UPDATE.append(self)

    def __repr__(self) -> str:
        return f"<prepared update {self.build.__module__}.{self.build.__qualname__}>"

    def queryset(self, **arguments: Any) -> tuple[QuerySet, dict[str, Any]]:
        """The plain queryset and values: ``queryset.update(**values)`` is the same write."""
        return self.build(**arguments)

    def __call__(self, **arguments: Any) -> int:
        kinds = tuple(sorted((name, _write_kind(name, value)) for name, value in arguments.items()))
        if any(kind == "id" and not _ID_RANGE[0] <= arguments[name] <= _ID_RANGE[1] for name, kind in kinds):
            return 0  # no row has such an id
        connection = connections[DEFAULT_DB_ALIAS]
        plans = connection.__dict__.setdefault("redline_prepared_writes", {})
        plan = plans.get((self, kinds))
        if plan is None:
            plan = plans[(self, kinds)] = self._plan(kinds, connection)
        return plan.run(connection, arguments)

    def _plan(self, kinds: tuple[tuple[str, str], ...], connection: Any) -> _UpdatePlan:
        stand_ins = {name: _write_stand_in(kind, position) for position, (name, kind) in enumerate(kinds)}
        queryset, values = self.build(**stand_ins)
        query = _update_query(queryset, values)
        sql, params = query.get_compiler(DEFAULT_DB_ALIAS).as_sql()
        preparers = {name: self._preparer(kind, stand_ins[name], query, connection) for name, kind in kinds}
        by_key = {_param_key(preparers[name](value)): name for name, value in stand_ins.items()}
        names = [by_key.get(_param_key(param)) for param in params]
        missing = set(stand_ins) - set(names)
        if missing:
            raise PreparedWriteError(f"the update does not use {sorted(missing)} as they are given")
        slots = [(name, _typed_as(param, preparers[name])) if name is not None else None
                 for name, param in zip(names, params, strict=True)]
        return _UpdatePlan(sql=sql, slots=slots, constants=list(params))

    @staticmethod
    def _preparer(kind: str, stand_in: Any, query: UpdateQuery, connection: Any) -> Callable[[Any], Any]:
        """How an argument's value becomes its parameter: a time as the database takes it, a
        JSON value as its column's field prepares it; anything else as it is."""
        if kind == "time":
            return connection.ops.adapt_datetimefield_value
        if kind == "json":
            fields = [field for field, _model, value in query.values if value is stand_in]
            if not fields:
                raise PreparedWriteError("a JSON argument is only a new value of a column")
            field = fields[0]
            return lambda value: field.get_db_prep_save(value, connection=connection)
        return _unchanged


def prepared_update(build: Callable[..., tuple[QuerySet, dict[str, Any]]]) -> PreparedUpdate:
    """Decorator: ``@prepared_update`` on a function of keyword arguments that gives (queryset, values)."""
    return PreparedUpdate(build)


def _columns(model: type[Model]) -> list[Any]:
    """The columns a save writes: every concrete one but the automatic key."""
    meta = model._meta
    if meta.pk is not meta.auto_field or meta.db_returning_fields != [meta.pk] or meta.parents:
        raise PreparedWriteError(f"{model.__name__}: a prepared write needs one table with an automatic key "
                                 "and no column the database fills in")
    return [field for field in meta.local_concrete_fields if field is not meta.pk]


def _values(instance: Model, columns: list[Any], *, adding: bool) -> list[Any]:
    """The columns' values as Model.save() takes them (``auto_now`` times filled in)."""
    values = [field.pre_save(instance, adding) for field in columns]
    for field, value in zip(columns, values, strict=True):
        if hasattr(value, "resolve_expression"):
            raise PreparedWriteError(f"{field.name} is an expression: save this row plainly")
    return values


def _params(pairs: Iterable[tuple[Any, Any]], connection: Any) -> list[Any]:
    """Each (column, value) as the column's field prepares it for the database."""
    return [field.get_db_prep_save(value, connection=connection) for field, value in pairs]


def _plans(connection: Any) -> dict[Any, str]:
    return connection.__dict__.setdefault("redline_prepared_saves", {})


def insert(instance: Model) -> None:
    """``instance.save()`` of a new row: its INSERT, with the id it gets set on it."""
    model = type(instance)
    if not instance._state.adding or instance.pk is not None:
        raise PreparedWriteError(f"insert() makes a new {model.__name__}; this one has a row")
    columns = _columns(model)
    connection = connections[DEFAULT_DB_ALIAS]
    sql = _plans(connection).get(("insert", model))
    if sql is None:
        if not connection.features.can_return_columns_from_insert:
            raise PreparedWriteError("the database cannot give the new row's id (INSERT ... RETURNING)")
        query = InsertQuery(model)
        query.insert_values(columns, [instance])
        compiler = query.get_compiler(DEFAULT_DB_ALIAS)
        compiler.returning_fields = [model._meta.pk]
        [(sql, example)] = compiler.as_sql()
        if len(example) != len(columns):
            raise PreparedWriteError(f"{model.__name__}: a column takes other than one parameter")
        _plans(connection)[("insert", model)] = sql
    values = _values(instance, columns, adding=True)
    with _executing(connection) as cursor:
        cursor.execute(sql, _params(zip(columns, values, strict=True), connection))
        instance.pk = cursor.fetchone()[0]
    instance._state.adding = False
    instance._state.db = DEFAULT_DB_ALIAS


def save(instance: Model) -> None:
    """``instance.save()`` of an existing row: every column but its id, by its id; the model's
    DoesNotExist when the row is gone."""
    model = type(instance)
    columns = _columns(model)
    connection = connections[DEFAULT_DB_ALIAS]
    values = _values(instance, columns, adding=False)
    # Django writes a column set to None as NULL in the SQL itself: one statement per such set.
    nulls = tuple(value is None for value in values)
    given = [(field, value) for field, value in zip(columns, values, strict=True) if value is not None]
    sql = _plans(connection).get(("save", model, nulls))
    if sql is None:
        query = UpdateQuery(model)
        query.add_update_fields([(field, None, value) for field, value in zip(columns, values, strict=True)])
        query.add_filter("pk", _ID)
        sql, params = query.get_compiler(DEFAULT_DB_ALIAS).as_sql()
        if len(params) != len(given) + 1 or params[-1] != _ID:
            raise PreparedWriteError(f"{model.__name__}: a column takes other than one parameter")
        _plans(connection)[("save", model, nulls)] = sql
    with _executing(connection) as cursor:
        cursor.execute(sql, [*_params(given, connection),
                             model._meta.pk.get_db_prep_value(instance.pk, connection)])
        changed = cursor.rowcount
    if not changed:
        raise model.DoesNotExist(f"{model.__name__} {instance.pk} is no longer there to save.")
