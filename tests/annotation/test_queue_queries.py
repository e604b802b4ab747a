"""Every list and claim endpoint costs the same number of queries for a queue of 10 and of 1,000.

Two studies are built side by side, one with about 10 items in each person's queue and one
with about 1,000; each endpoint is called once on each, by the same kind of person in the
same state, and the SQL statements are counted. A query per item would show as a
difference of hundreds. Assignment writes in batches, so its INSERTs may grow with the
batches (not with the items); every other statement must be the same.
"""

from __future__ import annotations

import itertools
import json
import math
import re

import pytest
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext

from annotation.models import Annotation
from annotation.selectors.clips import CLIPS_PER_PAGE
from annotation.services.studies import membership_grant, study_create
from annotation.services.taxonomy import taxonomy_modes
from annotation.services.workflow import ASSIGN_BATCH
from tests.annotation.bulkbuild import build_study, people

pytestmark = pytest.mark.django_db

SMALL, LARGE = 10, 1000


@pytest.fixture
def studies(make_user):
    """Two studies, each with two annotators, one reviewer and an admin; in `small` each
    annotator holds about SMALL items, in `large` about LARGE; half of them submitted."""
    built = {}
    for name, size in (("small", SMALL), ("large", LARGE)):
        study = study_create(slug=name, name=name)
        built[name] = build_study(
            study,
            clips=size,
            models=2,
            windows=4,
            annotators=2,
            reviewers=2,
            double_share=0.1,
            submitted_share=0.5,
        )
        admin = make_user(f"{name}-admin")
        membership_grant(study=study, user=admin, role="admin")
        built[name].admin = admin
        # Each web process reads a frozen taxonomy's modes once; read them here, so that the
        # first study measured does not pay that one query for both.
        taxonomy_modes(study.taxonomy)
    return built


def queries(user, method: str, url: str, data=None) -> tuple[int, list[str], int]:
    client = Client()
    client.force_login(user)
    with CaptureQueriesContext(connection) as captured:
        response = getattr(client, method)(url, data=data, content_type="application/json")
    return len(captured), [q["sql"] for q in captured.captured_queries], response.status_code


def same_cost(studies, who, method: str, path: str, data=None, ok=(200,)):
    counts = {}
    for name, built in studies.items():
        user = who(built)
        counts[name], _, status = queries(user, method, path.format(slug=built.study.slug), data)
        assert status in ok, (name, path, status)
    assert counts["small"] == counts["large"], counts
    return counts["small"]


def annotator(built):
    return built.annotators[0]


def reviewer(built):
    return built.reviewers[0]


def test_the_studies_differ_in_size_by_a_hundred_times(studies):
    small = Annotation.objects.filter(annotator=studies["small"].annotators[0]).count()
    large = Annotation.objects.filter(annotator=studies["large"].annotators[0]).count()
    assert small >= SMALL and large >= 100 * small / 1.5


def test_my_queue_costs_the_same_for_10_and_1000_items(studies):
    same_cost(studies, annotator, "get", "/api/studies/{slug}/my-queue/")


def test_the_next_page_of_my_queue_costs_the_same(studies):
    cursors = {}
    for name, built in studies.items():
        client = Client()
        client.force_login(annotator(built))
        page = client.get(f"/api/studies/{built.study.slug}/my-queue/?limit=5").json()
        cursors[name] = page["next"]
    counts = {}
    for name, built in studies.items():
        url = f"/api/studies/{built.study.slug}/my-queue/?limit=5&after={cursors[name]}"
        counts[name], _, status = queries(annotator(built), "get", url)
        assert status == 200
    assert counts["small"] == counts["large"]


def test_the_queue_page_costs_the_same(studies):
    same_cost(studies, annotator, "get", "/studies/{slug}/queue/")


@pytest.mark.parametrize("who", [annotator, reviewer, lambda built: built.admin])
def test_the_study_page_costs_the_same(studies, who):
    """The page a crowd's participants open first: one query for all the clips, none per clip
    (it counted each clip's references, one query a clip, for a figure no page showed)."""
    same_cost(studies, who, "get", "/studies/{slug}/")


def study_page(user, slug: str, query: str = "") -> str:
    client = Client()
    client.force_login(user)
    response = client.get(f"/studies/{slug}/{query}")
    assert response.status_code == 200, response.status_code
    return response.content.decode()


@pytest.mark.parametrize("who", [annotator, reviewer])
def test_the_study_page_weighs_the_same_for_10_and_1000_clips(studies, who):
    """Annotators and reviewers see their own work, not the study's clips: the page's bytes do
    not grow with the clips (a few digits of counts apart)."""
    pages = {name: study_page(who(built), built.study.slug) for name, built in studies.items()}
    assert abs(len(pages["large"]) - len(pages["small"])) < 100, {k: len(v) for k, v in pages.items()}
    assert "clip-card" not in pages["large"]


def test_an_annotator_s_study_page_shows_their_progress_and_what_is_next(studies):
    built = studies["large"]
    page = study_page(annotator(built), built.study.slug)
    mine = Annotation.objects.filter(annotator=annotator(built), caption__clip__study=built.study)
    done = mine.filter(state__in=["submitted", "in_review", "approved"]).count()
    assert f"<strong>{done} of {mine.count()}</strong> submitted" in page
    assert 'id="your-next"' in page and 'id="queue-link"' in page


def test_the_admin_s_study_page_lists_one_page_of_clips_with_their_count(studies):
    large = studies["large"]
    pages = {name: study_page(built.admin, built.study.slug) for name, built in studies.items()}
    assert pages["small"].count('class="clip-card"') == SMALL
    assert pages["large"].count('class="clip-card"') == CLIPS_PER_PAGE
    assert f'id="clip-count">({LARGE})' in pages["large"]
    card = (len(pages["large"]) - len(pages["small"])) / (CLIPS_PER_PAGE - SMALL)
    assert card < 600, card  # what grows is the page's extra cards, not the study's other clips
    last = LARGE // CLIPS_PER_PAGE
    second = study_page(large.admin, large.study.slug, f"?page={last}")
    assert f"Clips {LARGE - CLIPS_PER_PAGE + 1} to {LARGE} of {LARGE}" in second
    assert 'id="clips-next"' not in second and 'id="clips-previous"' in second
    assert second.count('class="clip-card"') == CLIPS_PER_PAGE


@pytest.mark.parametrize("page", ["0", "x", str(LARGE)])
def test_a_clip_page_out_of_range_is_refused_naming_it(studies, page):
    built = studies["large"]
    client = Client()
    client.force_login(built.admin)
    response = client.get(f"/studies/{built.study.slug}/?page={page}")
    assert response.status_code == 400
    assert response.content.decode().startswith("page ")


def test_start_next_costs_the_same(studies):
    same_cost(studies, annotator, "post", "/api/studies/{slug}/my-queue/next/")


@pytest.mark.parametrize("path, who", [("/api/studies/{slug}/my-queue/next/", annotator),
                                       ("/api/studies/{slug}/review-queue/next/", reviewer)])
def test_start_next_and_review_next_read_the_gate_to_work_with_the_membership(studies, path, who):
    """The person's withdrawal, consent and time allowed come in the statement that reads their
    membership and the study (IsStudyMemberStartingWork): no statement of its own."""
    built = studies["small"]
    _, statements, status = queries(who(built), "post", path.format(slug=built.study.slug))
    assert status == 200
    gates = [sql for sql in statements if "annotation_consentversion" in sql]
    assert len(gates) == 1 and 'FROM "annotation_membership"' in gates[0], gates


@pytest.mark.parametrize("order", ["risk", "oldest"])
def test_review_queue_costs_the_same_in_either_order(studies, order):
    same_cost(studies, reviewer, "get", f"/api/studies/{{slug}}/review-queue/?order={order}")


def test_review_queue_with_filters_and_a_cursor_costs_the_same(studies):
    counts = {}
    for name, built in studies.items():
        client = Client()
        client.force_login(reviewer(built))
        base = f"/api/studies/{built.study.slug}/review-queue/?model=Model+01&limit=3"
        cursor = client.get(base).json()["next"]
        counts[name], _, status = queries(reviewer(built), "get", f"{base}&after={cursor}")
        assert status == 200
    assert counts["small"] == counts["large"]


def test_review_next_and_claim_cost_the_same(studies):
    same_cost(studies, reviewer, "post", "/api/studies/{slug}/review-queue/next/")
    counts = {}
    for name, built in studies.items():
        item = Annotation.objects.filter(
            caption__clip__study=built.study, state="submitted"
        ).first()
        counts[name], _, status = queries(
            reviewer(built), "post", f"/api/annotations/{item.pk}/claim/"
        )
        assert status == 200
    assert counts["small"] == counts["large"]


def test_progress_page_costs_the_same(studies):
    same_cost(studies, lambda built: built.admin, "get", "/studies/{slug}/progress/")


def test_assignment_costs_the_same_but_for_its_batched_inserts(studies):
    """New captions waiting for assignment: the small study gets SMALL, the large LARGE."""
    from tests.annotation.bulkbuild import add_unassigned_captions

    statements = {}
    for name, built in studies.items():
        size = SMALL if name == "small" else LARGE
        add_unassigned_captions(built.study, models=1, clips=size)
        helpers = people(built.study, prefix=f"{name}-extra", count=2, role="annotator")
        body = {"annotators": [p.username for p in helpers]}
        _, sql, status = queries(
            built.admin, "post", f"/api/studies/{built.study.slug}/assignments/", body
        )
        assert status == 201, status
        statements[name] = sql
    others = {
        name: [s for s in sql if not s.startswith("INSERT")] for name, sql in statements.items()
    }
    assert len(others["small"]) == len(others["large"])
    inserts = sum(1 for s in statements["large"] if s.startswith("INSERT"))
    rows_per_insert = min(
        ASSIGN_BATCH,
        connection.ops.bulk_batch_size(
            [f for f in Annotation._meta.concrete_fields if not f.primary_key], [None] * LARGE
        ),
    )
    assert inserts <= math.ceil(LARGE / rows_per_insert) + 1  # + the audit event


def pages_read(sql: str) -> int:
    """The pages (buffers) PostgreSQL reads to run `sql` once, from EXPLAIN ANALYZE."""
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {sql}")
        plan = cursor.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    top = plan[0]["Plan"]
    return top.get("Shared Hit Blocks", 0) + top.get("Shared Read Blocks", 0)


def rows_given(sql: str) -> int:
    """The rows a statement gives when PostgreSQL runs it once, from EXPLAIN ANALYZE."""
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}")
        plan = cursor.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    return plan[0]["Plan"]["Actual Rows"]


@pytest.mark.postgres
@pytest.mark.parametrize("path, who", [("/api/studies/{slug}/my-queue/next/", annotator),
                                       ("/api/studies/{slug}/review-queue/next/", reviewer)])
def test_start_next_and_review_next_read_the_same_pages_for_10_and_1000_items(studies, path, who):
    """Not only as many statements: each of their reads stays as short (an index that holds
    what it looks for). A read that filters all of a person's items, or all submitted ones, reads
    a hundred times more pages in the large study. Statistics are fresh, as autovacuum keeps them."""
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    pages, reads = {}, []
    for name, built in studies.items():
        _, statements, status = queries(who(built), "post", path.format(slug=built.study.slug))
        assert status == 200, (name, status)
        reads = [sql for sql in statements if sql.startswith("SELECT")]
        pages[name] = [pages_read(sql) for sql in reads]
    assert len(pages["small"]) == len(pages["large"]), pages
    grown = [f"{small} -> {large} pages: {sql[:300]}"
             for small, large, sql in zip(pages["small"], pages["large"], reads, strict=True) if large > small + 3]
    assert not grown, "\n".join(grown)


@pytest.mark.postgres
def test_a_participant_s_join_reads_the_study_s_free_captions_once_and_otherwise_what_it_gives(studies):
    """Joins run one at a time per study (under its row lock), so what one reads holds back the
    next. A join picks the participant's captions from the study's free ones: it reads the clips
    that have one (ids only), and every other read of it (the free captions per model, those of
    the clips it walks, the assignment of the captions picked, what holds them already, the
    link, the consent) gives as many rows at 10 and at 1,000 free captions.
    The assignment used to read all of the study's captions and count all of its annotations to
    place three. (Rows, not pages: both studies' captions share the table's pages.)"""
    from annotation.services.recruitment import participant_join, recruitment_link_create
    from tests.annotation.bulkbuild import add_unassigned_captions

    for name, built in studies.items():
        add_unassigned_captions(built.study, models=1, clips=SMALL if name == "small" else LARGE)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    rows = {}
    for name, built in studies.items():
        link, _ = recruitment_link_create(study=built.study, actor=built.admin, cap=5, quota=3)
        with transaction.atomic(), CaptureQueriesContext(connection) as captured:
            joined = participant_join(link=link, params={"PROLIFIC_PID": "5f2a9c8e1b3d4a6f7e8c9d01"})
            assert joined.participant.assigned == 3 and not joined.resumed
            reads = [q["sql"] for q in captured.captured_queries if q["sql"].startswith("SELECT")]
            rows[name] = [(rows_given(sql), sql) for sql in reads]
    assert len(rows["small"]) == len(rows["large"]), rows
    grown = [sql for (small, _), (large, sql) in zip(rows["small"], rows["large"], strict=True) if large > small]
    assert len(grown) == 1, "\n".join(sql[:300] for sql in grown)
    assert grown[0].startswith('SELECT DISTINCT "annotation_caption"."clip_id"'), grown


@pytest.mark.postgres
def test_review_picks_keep_one_plan_per_study_as_good_as_planning_each_run(studies):
    """Review next's pick is a prepared statement. PostgreSQL keeps one plan for all of a
    prepared statement's runs (a generic plan) only when its estimate is as good as planning each
    run; otherwise it plans every run anew, which was most of the database's time for review
    next. The pick's states are in its SQL, so the kept plan can read the review queue's partial
    indexes, and so are the study and the reviewer (annotation.prepared): the plan kept for the
    small study starts from its clips, the large one's walks the queue's index, each reading no
    more pages than a plan made for that one run. One plan kept for both would walk the large
    study's queue to find the small one's item (6,446 pages, measured)."""
    from annotation.services.review import REVIEW_PICKS

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    for (order, pick), (name, built) in itertools.product(REVIEW_PICKS.items(), studies.items()):
        arguments = {"study_id": built.study.pk, "reviewer_id": reviewer(built).pk}
        with transaction.atomic():
            for _ in range(8):  # psycopg prepares it on the second run; PostgreSQL decides by the sixth
                pick(**arguments)
            [plan] = [plan for (read, _, *written), plan in connection.redline_prepared_reads.items()
                      if read is pick and written == [built.study.pk, reviewer(built).pk]]
            assert f'"study_id" = {built.study.pk} ' in plan.sql, plan.sql
            with connection.cursor() as cursor:
                cursor.execute("SELECT generic_plans FROM pg_prepared_statements WHERE statement = %s",
                               [_numbered(plan.sql)])
                [(generic,)] = cursor.fetchall()
            assert generic > 0, (order, name, "planned on every run")
            params = [arguments[slot] if slot else constant
                      for slot, constant in zip(plan.slots, plan.constants, strict=True)]
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL plan_cache_mode = force_generic_plan")
                cursor.execute(f"PREPARE pick AS {_numbered(plan.sql)}")
                places = f"({', '.join(['%s'] * len(params))})" if params else ""
                kept = pages_read(connection.ops.compose_sql(f"EXECUTE pick{places}", params))
                cursor.execute("DEALLOCATE pick")
                cursor.execute("SET LOCAL plan_cache_mode = force_custom_plan")
                one_run = pages_read(connection.ops.compose_sql(plan.sql, params))
            assert kept <= one_run + 3, (order, name, kept, one_run)


def _numbered(sql: str) -> str:
    """Django's %s placeholders as PostgreSQL's $1, $2, ... (as psycopg sends them)."""
    count = iter(range(1, sql.count("%s") + 1))
    return re.sub("%s", lambda _: f"${next(count)}", sql)
