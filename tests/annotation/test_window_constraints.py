"""The database itself refuses impossible timelines (check constraints and triggers)."""

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.models import F

from annotation.interchange import formats
from annotation.models import CandidateModel, Caption, Clip, Window

pytestmark = pytest.mark.django_db

TOLERANCE_IN_MIGRATION = __import__(
    "annotation.migrations.0002_window_timeline_triggers", fromlist=["TOLERANCE_S"]
).TOLERANCE_S


@pytest.fixture
def caption(study):
    # Rows made directly: these tests are about the database, not the import services.
    clip = Clip.objects.create(
        study=study, name="c", original="x.mp4", original_filename="x.mp4", size_bytes=1,
        sha256="0" * 64, duration=10.0, fps=25, width=16, height=16, codec="h264",
    )
    model = CandidateModel.objects.create(study=study, name="m", alias="Model A")
    caption = Caption.objects.create(clip=clip, model=model, overview="o")
    Window.objects.create(caption=caption, index=0, start=0.0, end=4.0)
    Window.objects.create(caption=caption, index=1, start=4.0, end=8.0)
    return caption


def test_migration_tolerance_equals_the_import_tolerance():
    assert TOLERANCE_IN_MIGRATION == formats.WINDOW_END_TOLERANCE_S


@pytest.mark.parametrize(
    ("index", "start", "end", "message"),
    [
        (2, 8.0, 10.6, "past the clip end"),
        (2, 7.5, 9.0, "overlaps or is out of order"),
        (2, 1.0, 2.0, "overlaps or is out of order"),
        (1, 8.0, 9.0, "window_index_unique|annotation_window.caption_id, annotation_window.index"),
    ],
)
def test_impossible_window_is_refused_by_the_database(caption, index, start, end, message):
    with pytest.raises(IntegrityError, match=message), transaction.atomic():
        Window.objects.create(caption=caption, index=index, start=start, end=end)
    assert caption.windows.count() == 2


@pytest.mark.parametrize(
    ("start", "end", "message"),
    [
        (-1.0, 2.0, "window_start_not_negative"),
        (3.0, 3.0, "window_start_before_end"),
        (3.0, 2.5, "window_start_before_end"),
    ],
)
def test_window_with_impossible_times_is_refused_by_a_check_constraint(caption, start, end, message):
    empty = Caption.objects.create(clip=caption.clip, model=CandidateModel.objects.create(
        study=caption.clip.study, name="m2", alias="Model B"), overview="o")
    with pytest.raises(IntegrityError, match=message), transaction.atomic():
        Window.objects.create(caption=empty, index=0, start=start, end=end)
    assert empty.windows.count() == 0


def test_window_within_the_tolerance_past_the_clip_end_is_stored(caption):
    Window.objects.create(caption=caption, index=2, start=8.0, end=10.4)
    assert caption.windows.count() == 3


def test_moving_a_window_onto_its_neighbour_is_refused(caption):
    with pytest.raises(IntegrityError, match="overlaps or is out of order"), transaction.atomic():
        Window.objects.filter(caption=caption, index=0).update(end=5.0)
    assert Window.objects.get(caption=caption, index=0).end == 4.0


def test_retiming_a_window_in_place_is_allowed(caption):
    Window.objects.filter(caption=caption, index=1).update(start=4.5, end=7.0)
    assert Window.objects.get(caption=caption, index=1).start == 4.5


def test_windows_of_one_statement_that_overlap_each_other_are_refused(caption):
    empty = Caption.objects.create(clip=caption.clip, model=CandidateModel.objects.create(
        study=caption.clip.study, name="m2", alias="Model B"), overview="o")
    with pytest.raises(IntegrityError, match="overlaps or is out of order"), transaction.atomic():
        Window.objects.bulk_create([
            Window(caption=empty, index=0, start=0.0, end=5.0),
            Window(caption=empty, index=1, start=6.0, end=7.0),
            Window(caption=empty, index=2, start=6.5, end=9.0),
        ])
    assert empty.windows.count() == 0


@pytest.mark.postgres
def test_postgres_checks_the_timeline_once_per_statement():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tgname, tgtype & 1 FROM pg_trigger WHERE tgrelid = 'annotation_window'::regclass "
            "AND NOT tgisinternal AND tgname LIKE 'annotation_window_timeline%%' ORDER BY tgname"
        )
        # tgtype bit 0 set means FOR EACH ROW: both timeline triggers are statement triggers, and
        # no row one is left. (The closed-study guard of migration 0026 is a row trigger of its own.)
        assert cursor.fetchall() == [("annotation_window_timeline_insert", 0), ("annotation_window_timeline_update", 0)]


@pytest.mark.postgres
@pytest.mark.parametrize(
    ("row", "message"),
    [((3, 9.0, 10.6), "past the clip end"), ((3, 8.5, 9.5), "overlaps or is out of order")],
)
def test_a_copy_of_impossible_windows_is_refused_whole(caption, row, message):
    # A possible window, then an impossible one: the whole COPY is refused.
    with pytest.raises(IntegrityError, match=message), transaction.atomic(), connection.cursor() as cursor:
        with connection.wrap_database_errors, cursor.copy(
            'COPY annotation_window (caption_id, "index", start, "end", scene, shot) FROM STDIN'
        ) as copy:
            copy.write_row((caption.pk, 2, 8.0, 9.0, "", ""))
            copy.write_row((caption.pk, *row, "", ""))
    assert caption.windows.count() == 2


@pytest.mark.postgres
def test_postgres_lets_one_statement_move_every_window_of_a_caption(caption):
    # A row trigger would have seen window 0 at [1, 5] beside window 1 still at [4, 8]; the
    # statement trigger sees only where they end up.
    Window.objects.filter(caption=caption).update(start=F("start") + 1, end=F("end") + 1)
    assert list(caption.windows.values_list("start", "end")) == [(1.0, 5.0), (5.0, 9.0)]
