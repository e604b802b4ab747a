"""Study bundles: export a whole study to one JSON document, and import it elsewhere.

The format is annotation.interchange.bundles (documented in docs/bundle-format.md). Export reads the
study in a stable order and names everything by natural keys, so that exporting, importing
into an empty database and exporting again gives the same bytes. Import is one transaction:
it checks the whole bundle first and stores all of it or nothing.

Import keeps every recorded timestamp (assignment, submission, audit events...): rows are
inserted as they are ("raw", as Django's loaddata does), which also leaves the workflow's
database triggers nothing to object to, since they guard updates and deletes, not inserts.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import DatabaseError, models, transaction
from django.db.models.functions import Cast

from annotation.errors import ImportRefused, ServiceError
from annotation.interchange import bundles
from annotation.models import (
    Annotation,
    AuditEvent,
    CandidateModel,
    Caption,
    Clip,
    ConsentRecord,
    ConsentVersion,
    CorrectionPass,
    FailureMode,
    GoldItem,
    GuidelineVersion,
    Membership,
    Reference,
    Study,
    StudyState,
    TaxonomyVersion,
    Window,
    WindowCorrection,
    Withdrawal,
)
from annotation.rules import study_settings
from annotation.rules.study_settings import GOLD_FIELDS
from annotation.services import lifecycle
from annotation.services.annotating import check_window_times, window_rows_write
from annotation.services.taxonomy import taxonomy_compute_hash
from annotation.services.workflow import annotations_risk_refresh
from scoring.metrics.final import final_kind

CLIP_FIELDS = (
    "original_filename",
    "size_bytes",
    "sha256",
    "duration",
    "fps",
    "width",
    "height",
    "codec",
    "pix_fmt",
    "container",
    "media_error",
    "manipulated",
    "shot_changes",
)
CLIP_PROPERTIES = (
    "content_type",
    "camera_platform",
    "scene_complexity",
    "shot_scale",
    "motion_intensity",
)
CLIP_FILES = ("original", "proxy", "poster")
CAPTION_FIELDS = (
    "overview",
    "input_tokens_per_second",
    "retried",
    "re_encoded",
    "invalid_kept",
    "validation_errors",
    "meta",
)
ANNOTATION_FIELDS = (
    "state",
    "version",
    "return_comment",
    "returned_units",
    "queue_position",
    "exposure",
    "active_seconds",
    "telemetry",
    "ui_state",
)
ANNOTATION_TIMES = (
    "assigned_at",
    "overview_locked_at",
    "claim_expires_at",
    "started_at",
    "submitted_at",
    "reviewed_at",
)

ts = bundles.timestamp


# --------------------------------------------------------------------------- export


def _as_text(field_name: str) -> Cast:
    """The JSON column as its text, for `_modes_reader` or `_read_json` to decode."""
    return Cast(field_name, output_field=models.TextField())


class _BundleTime(models.Func):
    """A timestamp column as the bundle writes it (`annotation.interchange.bundles.timestamp`: UTC,
    microseconds, a Z), formatted by the database: parsing tens of thousands of timestamps
    into datetimes only to format them again is a good part of an export's time."""

    output_field = models.TextField()

    def as_postgresql(self, compiler, connection, **extra):
        template = "to_char(%(expressions)s AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
        return self.as_sql(compiler, connection, template=template, **extra)

    def as_sqlite(self, compiler, connection, **extra):
        # Django stores SQLite timestamps in UTC as str(datetime): "YYYY-MM-DD HH:MM:SS", with
        # ".ffffff" after it unless the microseconds are zero.
        template = (
            "CASE WHEN length(%(expressions)s) = 19"
            " THEN replace(%(expressions)s, ' ', 'T') || '.000000Z'"
            " ELSE replace(%(expressions)s, ' ', 'T') || 'Z' END"
        )
        return self.as_sql(compiler, connection, template=template, **extra)


# JSON columns read as text and decoded here (`_read_json`): most of them hold {} or [].
JSON_TEXT_FIELDS = ("validation_errors", "meta", "telemetry", "ui_state")


def _read_json(text: str) -> Any:
    """The JSON column's value, without calling the decoder for the empty list or object that
    most rows hold (each row still gets its own list or dict)."""
    if text == "[]":
        return []
    if text == "{}":
        return {}
    return json.loads(text)


def _plain_and_json(fields: Sequence[str]) -> tuple[list[str], dict[str, Cast]]:
    """``fields`` split for ``values()``: plain columns, and JSON ones read as text."""
    plain = [f for f in fields if f not in JSON_TEXT_FIELDS]
    return plain, {f"{f}_json": _as_text(f) for f in fields if f in JSON_TEXT_FIELDS}


def _modes_reader() -> Callable[[str], list[str]]:
    """Decode lists of failure-mode keys given as JSON text, each distinct text once: a study has
    tens of thousands of them (one per judged window) and few distinct ones, mostly []."""
    seen: dict[str, list[str]] = {}

    def read(text: str) -> list[str]:
        modes = seen.get(text)
        if modes is None:
            modes = seen[text] = json.loads(text)
        return list(modes)

    return read


def _pass_record(row: Mapping[str, Any], windows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "author": row["author__username"],
        "overview": {
            "verdict": row["overview_verdict"],
            "text": row["overview_text"],
            "modes": row["overview_modes"],
        },
        "segmentation": {
            "verdict": row["segmentation_verdict"],
            "modes": row["segmentation_modes"],
            "windows": _read_json(row["corrected_windows_json"]),
        },
        "windows": windows,
        "updated_at": row["updated_at_text"],
        "guideline_version": row["guideline_version__number"],
    }


def _taxonomy_record(taxonomy: TaxonomyVersion) -> dict[str, Any]:
    return {
        "content_hash": taxonomy_compute_hash(taxonomy=taxonomy),
        "name": taxonomy.name,
        "version": taxonomy.version,
        "description": taxonomy.description,
        "precedence_rules": list(taxonomy.precedence_rules),
        "frozen_at": ts(taxonomy.frozen_at),
        "modes": [
            {
                "key": m.key,
                "name": m.name,
                "definition": m.definition,
                "decision_test": m.decision_test,
                "level": m.level,
            }
            for m in taxonomy.modes.order_by("position", "pk")
        ],
    }


def bundle_export(*, study: Study) -> dict[str, Any]:
    """The study as a bundle (a plain dict); `annotation.interchange.bundles.dumps` makes the file's bytes.

    Reads plain rows (one query per kind of row, joined to the names the bundle uses), never
    model instances: a study of thousands of annotations has tens of thousands of window
    judgements, and building an object for each is what made exports slow."""
    users: set[str] = set()

    members = []
    for row in Membership.objects.filter(study=study).values("user__username", "role", "created_at"):
        users.add(row["user__username"])
        members.append(
            {"user": row["user__username"], "role": row["role"], "created_at": ts(row["created_at"])}
        )
    members.sort(key=lambda m: (m["user"], m["role"]))

    clips = [
        {
            "name": row["name"],
            **{f: row[f] for f in CLIP_FIELDS},
            "properties": {p: row[p] for p in CLIP_PROPERTIES},
            "files": {f: row[f] or "" for f in CLIP_FILES},
            "created_at": ts(row["created_at"]),
        }
        for row in Clip.objects.filter(study=study)
        .order_by("name")
        .values("name", "created_at", *CLIP_FIELDS, *CLIP_PROPERTIES, *CLIP_FILES)
    ]
    models_ = [
        {
            "name": row["name"],
            "identifier": row["identifier"],
            "route": row["route"],
            "providers": list(row["providers"]),
            "alias": row["alias"],
            "created_at": ts(row["created_at"]),
        }
        for row in CandidateModel.objects.filter(study=study)
        .order_by("name")
        .values("name", "identifier", "route", "providers", "alias", "created_at")
    ]

    caption_windows: dict[int, list[dict[str, Any]]] = {}
    for row in (
        Window.objects.filter(caption__clip__study=study)
        .order_by("caption_id", "index")
        .values_list("caption_id", "index", "start", "end", "scene", "shot")
    ):
        caption_windows.setdefault(row[0], []).append(
            {"index": row[1], "start": row[2], "end": row[3], "scene": row[4], "shot": row[5]}
        )
    caption_plain, caption_json = _plain_and_json(CAPTION_FIELDS)
    captions = [
        {
            "clip": row["clip__name"],
            "model": row["model__name"],
            **{f: row[f] if f in row else _read_json(row[f"{f}_json"]) for f in CAPTION_FIELDS},
            "windows": caption_windows.get(row["id"], []),
            "created_at": ts(row["created_at"]),
        }
        for row in Caption.objects.filter(clip__study=study)
        .order_by("clip__name", "model__name")
        .values("id", "clip__name", "model__name", "created_at", *caption_plain, **caption_json)
    ]
    references = [
        {
            "clip": row["clip__name"],
            "source": row["source"],
            "language": row["language"],
            "text": row["text"],
            "text_sha256": row["text_sha256"],
            "created_at": ts(row["created_at"]),
        }
        for row in Reference.objects.filter(clip__study=study)
        .order_by("clip__name", "source", "language", "text_sha256")
        .values("clip__name", "source", "language", "text", "text_sha256", "created_at")
    ]

    # Window judgements by pass, then passes by annotation: two queries for the whole study.
    read_modes = _modes_reader()
    judged: dict[int, list[dict[str, Any]]] = {}
    for row in (
        WindowCorrection.objects.filter(correction_pass__annotation__caption__clip__study=study)
        .order_by("correction_pass_id", "window__index")
        .values_list(
            "correction_pass_id", "window__index", "verdict", "scene", "shot", "start", "end",
            _as_text("modes"),
        )
    ):
        judged.setdefault(row[0], []).append(
            {
                "index": row[1],
                "verdict": row[2],
                "scene": row[3],
                "shot": row[4],
                "start": row[5],
                "end": row[6],
                "modes": read_modes(row[7]),
            }
        )
    passes_of: dict[int, dict[str, dict[str, Any]]] = {}
    for row in CorrectionPass.objects.filter(annotation__caption__clip__study=study).values(
        "id",
        "annotation_id",
        "kind",
        "author__username",
        "guideline_version__number",
        "overview_verdict",
        "overview_text",
        "segmentation_verdict",
        updated_at_text=_BundleTime("updated_at"),
        corrected_windows_json=_as_text("corrected_windows"),
        overview_modes_text=_as_text("overview_modes"),
        segmentation_modes_text=_as_text("segmentation_modes"),
    ):
        users.add(row["author__username"])
        row["overview_modes"] = read_modes(row["overview_modes_text"])
        row["segmentation_modes"] = read_modes(row["segmentation_modes_text"])
        passes_of.setdefault(row["annotation_id"], {})[row["kind"]] = _pass_record(
            row, judged.get(row["id"], [])
        )

    annotations = []
    keys: dict[int, dict[str, str]] = {}
    taxonomy_ids = {study.taxonomy_id}
    annotation_plain, annotation_json = _plain_and_json(ANNOTATION_FIELDS)
    for row in (
        Annotation.objects.filter(caption__clip__study=study)
        .order_by("caption__clip__name", "caption__model__name", "annotator__username", "purpose", "attempt", "pk")
        .values(
            "id",
            "caption__clip__name",
            "caption__model__name",
            "annotator__username",
            "reviewer__username",
            "review_guideline_version__number",
            "taxonomy_id",
            "purpose",
            "attempt",
            *annotation_plain,
            **annotation_json,
            **{f"{f}_text": _BundleTime(f) for f in ANNOTATION_TIMES},
        )
    ):
        taxonomy_ids.add(row["taxonomy_id"])
        key = {
            "clip": row["caption__clip__name"],
            "model": row["caption__model__name"],
            "annotator": row["annotator__username"],
        }
        if row["attempt"] != 1:  # a practice attempt after the first (annotation_key)
            key["attempt"] = row["attempt"]
        keys[row["id"]] = key
        passes = passes_of.get(row["id"], {})
        users.add(row["annotator__username"])
        if row["reviewer__username"] is not None:
            users.add(row["reviewer__username"])
        final = final_kind(passes) if row["state"] == Annotation.State.APPROVED else None
        annotations.append(
            {
                **key,
                **{f: row[f] if f in row else _read_json(row[f"{f}_json"]) for f in ANNOTATION_FIELDS},
                **{f: row[f"{f}_text"] for f in ANNOTATION_TIMES},
                "taxonomy": "",  # filled in below, once the hashes are known
                "reviewer": row["reviewer__username"],
                "review_guideline_version": row["review_guideline_version__number"],
                "final": final,
                "passes": {kind: passes.get(kind) for kind in bundles.PASS_KINDS},
                "_taxonomy_id": row["taxonomy_id"],
                # Not work: a gold verdict, a practice attempt or a hidden gold check (absent: work).
                **({"purpose": row["purpose"]} if row["purpose"] != Annotation.Purpose.WORK else {}),
            }
        )

    audit = []
    for row in (
        AuditEvent.objects.filter(study=study)
        .order_by("at", "pk")
        .values(
            "annotation_id",
            "actor__username",
            "action",
            at_text=_BundleTime("at"),
            before_json=_as_text("before"),
            after_json=_as_text("after"),
        )
    ):
        if row["actor__username"] is not None:
            users.add(row["actor__username"])
        audit.append(
            {
                "annotation": keys.get(row["annotation_id"]) if row["annotation_id"] else None,
                "actor": row["actor__username"],
                "action": row["action"],
                "at": row["at_text"],
                "before": _read_json(row["before_json"]),
                "after": _read_json(row["after_json"]),
            }
        )

    guidelines = []
    for row in (
        GuidelineVersion.objects.filter(study=study)
        .order_by("number")
        .values("number", "text", "created_by__username", created_at_text=_BundleTime("created_at"),
                updated_at_text=_BundleTime("updated_at"), examples_json=_as_text("examples"))
    ):
        if row["created_by__username"] is not None:
            users.add(row["created_by__username"])
        guidelines.append({
            "number": row["number"],
            "text": row["text"],
            "examples": _read_json(row["examples_json"]),
            "created_by": row["created_by__username"],
            "created_at": row["created_at_text"],
            "updated_at": row["updated_at_text"],
        })

    withdrawals, consent_versions, consent_acceptances = _participation_records(study, users)

    hashes = {
        taxonomy.pk: _taxonomy_record(taxonomy)
        for taxonomy in TaxonomyVersion.objects.filter(pk__in=taxonomy_ids)
    }
    for record in annotations:
        record["taxonomy"] = hashes[record.pop("_taxonomy_id")]["content_hash"]
    unique_taxonomies = {t["content_hash"]: t for t in hashes.values()}
    return {
        "format": bundles.FORMAT,
        "format_version": bundles.FORMAT_VERSION,
        "study": {
            "slug": study.slug,
            "name": study.name,
            "description": study.description,
            "word_thresholds": list(study.word_thresholds),
            "near_total_cut": study.near_total_cut,
            "length_band": study.length_band,
            "assignment_design": study.assignment_design,
            "spread_gap": study.spread_gap,
            "assignment_seed": study.assignment_seed,
            "overlap_share": study.overlap_share,
            "undo_seconds": study.undo_seconds,
            "caption_language": study.caption_language,
            # The release secret stays out: an imported study gets a new one.
            "state": study.state,
            "created_at": ts(study.created_at),
            "taxonomy": hashes[study.taxonomy_id]["content_hash"],
            **_gold_record(study),
        },
        "taxonomies": sorted(
            unique_taxonomies.values(), key=lambda t: (t["name"], t["version"], t["content_hash"])
        ),
        "users": sorted(users),
        "members": members,
        "clips": clips,
        "models": models_,
        "captions": captions,
        "references": references,
        "annotations": annotations,
        "audit": audit,
        "guidelines": guidelines,
        "withdrawals": withdrawals,
        "consent_versions": consent_versions,
        "consent_acceptances": consent_acceptances,
    }


def _participation_records(study: Study, users: set[str]) -> tuple[list[dict[str, Any]], ...]:
    """The study's withdrawals (an erased person's too: the person and counts, no content), its
    consent versions and who accepted which; the people they name are added to ``users``."""
    withdrawals = [
        {"user": row.pop("user__username"), "at": row.pop("at_text"), "erased_at": row.pop("erased_at_text"), **row}
        for row in Withdrawal.objects.filter(study=study).order_by("at", "user__username").values(
            "user__username", "pseudonym", "released", "erase_requested", "erased",
            at_text=_BundleTime("at"), erased_at_text=_BundleTime("erased_at"))
    ]
    versions = [
        {"created_by": row.pop("created_by__username"), "created_at": row.pop("created_at_text"),
         "updated_at": row.pop("updated_at_text"), **row}
        for row in ConsentVersion.objects.filter(study=study).order_by("number").values(
            "number", "text", "created_by__username", created_at_text=_BundleTime("created_at"),
            updated_at_text=_BundleTime("updated_at"))
    ]
    acceptances = [
        {"user": row.pop("user__username"), "accepted_at": row.pop("accepted_at_text"), **row}
        for row in ConsentRecord.objects.filter(study=study).order_by("user__username", "number").values(
            "user__username", "number", accepted_at_text=_BundleTime("accepted_at"))
    ]
    users.update(record["user"] for record in withdrawals + acceptances)
    users.update(version["created_by"] for version in versions if version["created_by"] is not None)
    return withdrawals, versions, acceptances


def _gold_record(study: Study) -> dict[str, Any]:
    """The study's gold items and gold settings, where it has gold items (bundles.PURPOSES)."""
    items = [
        {"clip": clip, "model": model, "in_practice_set": practice, "source": source}
        for clip, model, practice, source in GoldItem.objects.filter(study=study)
        .order_by("caption__clip__name", "caption__model__name")
        .values_list("caption__clip__name", "caption__model__name", "in_practice_set", "source")
    ]
    if not items:
        return {}
    return {"gold_items": items, "gold_settings": {field: getattr(study, field) for field in GOLD_FIELDS}}


def bundle_export_bytes(*, study: Study) -> bytes:
    return bundles.dumps(bundle_export(study=study))


# --------------------------------------------------------------------------- import


@dataclass
class BundleImportReport:
    study: Study
    counts: dict[str, int] = field(default_factory=dict)
    users_created: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    grants: list[str] = field(default_factory=list)


def _insert(instance: models.Model, where: str = "") -> models.Model:
    """Insert the row as given, timestamps included (auto_now and auto_now_add are not applied),
    after checking its fields as a form would (lengths, choices); a field that fails is refused
    naming where it is in the bundle."""
    relations = [f.name for f in instance._meta.fields if f.is_relation]
    try:
        instance.clean_fields(exclude=relations)
    except ValidationError as invalid:
        field_name, messages = next(iter(invalid.message_dict.items()))
        raise _Refused(
            f"{where or instance._meta.verbose_name}: {field_name!r}: {messages[0]}"
        ) from None
    instance.save_base(raw=True, force_insert=True)
    return instance


def _taxonomy_for(
    record: Mapping[str, Any], existing: dict[str, TaxonomyVersion], notes: list[str]
) -> TaxonomyVersion:
    """The local taxonomy with the record's content hash, created if there is none."""
    frozen_at = bundles.parse_timestamp(record["frozen_at"])
    taxonomy = existing.get(record["content_hash"])
    if taxonomy is not None:
        if taxonomy.frozen_at is None and frozen_at is not None:
            taxonomy.frozen_at = frozen_at
            taxonomy.save(update_fields=["frozen_at"])
        return taxonomy
    version = record["version"]
    if TaxonomyVersion.objects.filter(name=record["name"], version=version).exists():
        latest = TaxonomyVersion.objects.filter(name=record["name"]).order_by("-version").first()
        version = latest.version + 1
        notes.append(
            f"Taxonomy {record['name']} v{record['version']} here differs from the bundle's; "
            f"the bundle's was stored as {record['name']} v{version} "
            f"(hash {record['content_hash'][:12]})."
        )
    taxonomy = TaxonomyVersion.objects.create(
        name=record["name"],
        version=version,
        description=record["description"],
        precedence_rules=record["precedence_rules"],
        content_hash=record["content_hash"],
    )
    for position, mode in enumerate(record["modes"]):
        FailureMode.objects.create(
            taxonomy=taxonomy,
            position=position,
            key=mode["key"],
            name=mode["name"],
            definition=mode["definition"],
            decision_test=mode["decision_test"],
            level=mode["level"],
        )
    if frozen_at is not None:  # after its modes: the database refuses modes of a version in use
        TaxonomyVersion.objects.filter(pk=taxonomy.pk).update(frozen_at=frozen_at)
        taxonomy.frozen_at = frozen_at
    existing[record["content_hash"]] = taxonomy
    return taxonomy


def _refuse_existing(study: Study, slug: str, record: Mapping[str, Any]) -> None:
    here = taxonomy_compute_hash(taxonomy=study.taxonomy)
    wanted = record["content_hash"]
    if here != wanted:
        raise ServiceError(
            f"Study {slug!r} already exists here with taxonomy {study.taxonomy} "
            f"(hash {here[:12]}), but the bundle's study uses taxonomy {record['name']} "
            f"v{record['version']} (hash {wanted[:12]}). A study's taxonomy never changes, so "
            "nothing was imported. Import the bundle under another slug (--slug)."
        )
    raise ServiceError(
        f"Study {slug!r} already exists here (same taxonomy, hash {here[:12]}); nothing was "
        "imported. Import the bundle under another slug (--slug), or into a database without "
        "this study."
    )


class GrantsNotConfirmed(ServiceError):
    """The bundle gives roles to accounts that already exist here; nothing was imported."""

    def __init__(self, grants: Sequence[str], slug: str):
        self.grants = list(grants)
        super().__init__(
            f"The bundle gives roles in study {slug!r} to {len(grants)} account(s) that already "
            f"exist here: {', '.join(grants)}. Nothing was imported. If these are the same "
            "people, import again confirming it (--grant-existing)."
        )


def existing_grants(bundle: Mapping[str, Any]) -> list[str]:
    """The bundle's role grants to accounts that already exist here, as "user (role)"."""
    here = set(
        get_user_model().objects.filter(
            username__in=[m["user"] for m in bundle["members"]]
        ).values_list("username", flat=True)
    )
    return [f"{m['user']} ({m['role']})" for m in bundle["members"] if m["user"] in here]


def _moved_media(bundle: dict[str, Any], slug: str) -> None:
    """Point the clips' files at the folder of the study they are imported as."""
    for clip in bundle["clips"]:
        for kind, path in clip["files"].items():
            if path:
                clip["files"][kind] = f"clips/{kind}/{slug}/{path.rsplit('/', 1)[1]}"


@transaction.atomic
def bundle_import(
    *,
    data: bytes | str,
    slug: str | None = None,
    grant_existing: bool = False,
    progress: Callable[[str], None] = lambda message: None,
) -> BundleImportReport:
    """Store the bundle's study (under `slug` if given) with everything in it, or nothing.

    Refused (ImportRefused listing every problem, where and why) when the bundle is not a valid
    bundle; (ServiceError) when a study with that slug already exists, saying whether its
    taxonomy differs; (GrantsNotConfirmed, listing them) when it gives roles to accounts that
    exist here, unless `grant_existing` confirms them. Users missing here are created without a
    usable password. Clips' files must lie in the study's own media folders; imported under
    another slug, they are expected in that slug's folders (the report says so).
    """
    try:
        bundle = bundles.loads(data)
    except bundles.BundleError as exc:
        raise ImportRefused(exc.errors) from None
    record = bundle["study"]
    if slug and bundles.slug_problem(slug):
        raise ImportRefused([f"--slug: {bundles.slug_problem(slug)}"])
    slug = slug or record["slug"]
    if slug in study_settings.reserved_slugs():
        where = "--slug" if slug != record["slug"] else "study.slug"
        raise ImportRefused([f"{where}: {slug!r} is the name of a page; import it with another --slug."])
    taxonomy_records = {t["content_hash"]: t for t in bundle["taxonomies"]}
    existing_study = Study.objects.select_related("taxonomy").filter(slug=slug).first()
    if existing_study is not None:
        _refuse_existing(existing_study, slug, taxonomy_records[record["taxonomy"]])
    grants = existing_grants(bundle)
    if grants and not grant_existing:
        raise GrantsNotConfirmed(grants, slug)
    notes = []
    if slug != record["slug"] and bundle["clips"]:
        _moved_media(bundle, slug)
        notes.append(
            f"The clips' files are expected in the folders of {slug!r}: copy "
            f"MEDIA_ROOT/clips/*/{record['slug']}/ to MEDIA_ROOT/clips/*/{slug}/."
        )
    try:
        report = _store(bundle, slug, taxonomy_records, progress)
    except _Refused as refused:
        raise ImportRefused([refused.problem]) from None
    except DatabaseError as exc:
        raise ServiceError(
            f"The database refused the bundle, so nothing was imported: {exc}"
        ) from None
    report.notes.extend(notes)
    report.grants = grants
    return report


class _Refused(Exception):
    def __init__(self, problem: str):
        self.problem = problem


def _store(
    bundle: Mapping[str, Any],
    slug: str,
    taxonomy_records: Mapping[str, Any],
    progress: Callable[[str], None],
) -> BundleImportReport:
    record = bundle["study"]
    parse = bundles.parse_timestamp
    notes: list[str] = []
    local = {
        taxonomy_compute_hash(taxonomy=t): t
        for t in TaxonomyVersion.objects.prefetch_related("modes")
    }
    taxonomies = {h: _taxonomy_for(t, local, notes) for h, t in taxonomy_records.items()}

    User = get_user_model()
    people = {u.username: u for u in User.objects.filter(username__in=bundle["users"])}
    created = []
    for username in bundle["users"]:
        if username not in people:
            people[username] = User.objects.create_user(username=username, password=None)
            created.append(username)

    study = _insert(
        Study(
            slug=slug,
            name=record["name"],
            description=record["description"],
            taxonomy=taxonomies[record["taxonomy"]],
            word_thresholds=record["word_thresholds"],
            near_total_cut=record["near_total_cut"],
            length_band=record["length_band"],
            assignment_design=record["assignment_design"],
            spread_gap=record["spread_gap"],
            assignment_seed=record["assignment_seed"],
            overlap_share=record["overlap_share"],
            undo_seconds=record["undo_seconds"],
            caption_language=record["caption_language"],
            # Inserted in setup, moved to its state once its rows are in: the database refuses
            # rows of a closed study (migration 0026); the moves are the lifecycle's, in order.
            state=StudyState.SETUP,
            created_at=parse(record["created_at"]),
        ),
        "study",
    )
    report = BundleImportReport(study=study, users_created=created, notes=notes)
    for n, member in enumerate(bundle["members"]):
        _insert(
            Membership(
                study=study,
                user=people[member["user"]],
                role=member["role"],
                created_at=parse(member["created_at"]),
            ),
            f"members[{n}]",
        )

    progress(f"{len(bundle['clips'])} clips, {len(bundle['models'])} models")
    clips = {}
    for n, clip in enumerate(bundle["clips"]):
        clips[clip["name"]] = _insert(
            Clip(
                study=study,
                name=clip["name"],
                created_at=parse(clip["created_at"]),
                **{f: clip[f] for f in CLIP_FIELDS},
                **{p: clip["properties"].get(p, "") for p in CLIP_PROPERTIES},
                **{f: clip["files"].get(f, "") for f in CLIP_FILES},
            ),
            f"clips[{n}]",
        )
    candidate_models = {
        m["name"]: _insert(
            CandidateModel(
                study=study,
                name=m["name"],
                identifier=m["identifier"],
                route=m["route"],
                providers=m["providers"],
                alias=m["alias"],
                created_at=parse(m["created_at"]),
            ),
            f"models[{n}]",
        )
        for n, m in enumerate(bundle["models"])
    }

    progress(f"{len(bundle['captions'])} captions")
    captions = {}
    windows: dict[tuple[str, str], dict[int, Window]] = {}
    for n, caption in enumerate(bundle["captions"]):
        key = (caption["clip"], caption["model"])
        stored = _insert(
            Caption(
                clip=clips[key[0]],
                model=candidate_models[key[1]],
                created_at=parse(caption["created_at"]),
                **{f: caption[f] for f in CAPTION_FIELDS},
            ),
            f"captions[{n}]",
        )
        captions[key] = stored
        rows = Window.objects.bulk_create(
            [
                Window(
                    caption=stored,
                    index=w["index"],
                    start=w["start"],
                    end=w["end"],
                    scene=w["scene"],
                    shot=w["shot"],
                )
                for w in sorted(caption["windows"], key=lambda w: w["index"])
            ]
        )
        windows[key] = {row.index: row for row in rows}
    for n, reference in enumerate(bundle["references"]):
        _insert(
            Reference(
                clip=clips[reference["clip"]],
                source=reference["source"],
                language=reference["language"],
                text=reference["text"],
                text_sha256=reference["text_sha256"],
                created_at=parse(reference["created_at"]),
            ),
            f"references[{n}]",
        )

    guideline_versions = {
        version["number"]: _insert(
            GuidelineVersion(
                study=study,
                number=version["number"],
                text=version["text"],
                examples=version["examples"],
                created_by=people[version["created_by"]] if version["created_by"] else None,
                created_at=parse(version["created_at"]),
                updated_at=parse(version["updated_at"]),
            ),
            f"guidelines[{n}]",
        )
        for n, version in enumerate(bundle["guidelines"])
    }

    def guideline_of(number: int | None) -> GuidelineVersion | None:
        return guideline_versions[number] if number is not None else None

    progress(f"{len(bundle['annotations'])} annotations")
    annotations = {}
    for n, item in enumerate(bundle["annotations"]):
        key = (item["clip"], item["model"])
        annotation = _insert(
            Annotation(
                caption=captions[key],
                annotator=people[item["annotator"]],
                taxonomy=taxonomies[item["taxonomy"]],
                reviewer=people[item["reviewer"]] if item.get("reviewer") else None,
                review_guideline_version=guideline_of(item["review_guideline_version"]),
                **{f: item[f] for f in ANNOTATION_FIELDS},
                **{f: parse(item[f]) for f in ANNOTATION_TIMES},
                purpose=item.get("purpose", Annotation.Purpose.WORK),
                attempt=item.get("attempt", 1),
            ),
            f"annotations[{n}]",
        )
        annotations[bundles.annotation_key(item)] = annotation
        for kind in bundles.PASS_KINDS:
            correction = item["passes"].get(kind)
            if correction is None:
                continue
            stored = _insert(
                CorrectionPass(
                    annotation=annotation,
                    kind=kind,
                    author=people[correction["author"]],
                    overview_verdict=correction["overview"]["verdict"],
                    overview_text=correction["overview"]["text"],
                    overview_modes=correction["overview"]["modes"],
                    segmentation_verdict=correction["segmentation"]["verdict"],
                    segmentation_modes=correction["segmentation"]["modes"],
                    corrected_windows=correction["segmentation"]["windows"],
                    updated_at=parse(correction["updated_at"]),
                    guideline_version=guideline_of(correction["guideline_version"]),
                ),
                f"annotations[{n}].passes.{kind}",
            )
            corrections = [
                WindowCorrection(
                    correction_pass=stored,
                    window=windows[key][row["index"]],
                    verdict=row["verdict"],
                    scene=row["scene"],
                    shot=row["shot"],
                    start=row["start"],
                    end=row["end"],
                    modes=row["modes"],
                )
                for row in correction["windows"]
            ]
            where = f"annotations[{n}].passes.{kind}.windows"
            try:
                check_window_times(windows[key].values(), corrections)
            except ServiceError as error:
                raise ImportRefused([f"{where}: {error}"]) from error
            # In an order the database's overlap check accepts row by row (SQLite).
            window_rows_write({w.pk: (w.start, w.end) for w in windows[key].values()}, corrections)

    # The gold items, on their gold annotations (checked: each names one), and the gold settings
    # (checked again as the gold page checks them; the pool is not, as the study had them).
    for n, entry in enumerate(record.get("gold_items", [])):
        key = (entry["clip"], entry["model"])
        verdict = next(a for (clip, model, *_), a in annotations.items()
                       if (clip, model) == key and a.purpose == Annotation.Purpose.GOLD)
        _insert(GoldItem(study=study, caption=captions[key], gold=verdict, made_by=verdict.annotator,
                         in_practice_set=entry["in_practice_set"], source=entry["source"],
                         created_at=verdict.assigned_at),
                f"study.gold_items[{n}]")
    if record.get("gold_settings"):
        cleaned, problems = study_settings.settings_check(
            {k: v for k, v in record["gold_settings"].items() if k in GOLD_FIELDS}, designs=(), languages=())
        if problems:
            raise ImportRefused([f"study.gold_settings.{field}: {why}" for field, why in problems.items()])
        Study.objects.filter(pk=study.pk).update(**cleaned)
        for name, value in cleaned.items():
            setattr(study, name, value)

    # Submitting stores an annotation's review risk; these were stored without being submitted.
    annotations_risk_refresh(study=study)

    progress(f"{len(bundle['audit'])} audit events")
    for n, event in enumerate(bundle["audit"]):
        target = event["annotation"]
        _insert(
            AuditEvent(
                study=study,
                annotation=annotations[bundles.annotation_key(target)] if target else None,
                actor=people[event["actor"]] if event["actor"] else None,
                action=event["action"],
                at=parse(event["at"]),
                before=event["before"],
                after=event["after"],
            ),
            f"audit[{n}]",
        )
    _store_participation(bundle, study, people)
    for source, target, _ in lifecycle.MOVES.values():
        if StudyState.values.index(record["state"]) > StudyState.values.index(source):
            Study.objects.filter(pk=study.pk, state=source).update(state=target)
    study.refresh_from_db(fields=["state"])
    report.counts = {
        name: len(bundle[name])
        for name in ("members", "clips", "models", "captions", "references", "annotations", "audit", "guidelines",
                     "withdrawals", "consent_versions", "consent_acceptances")
    }
    return report


def _store_participation(bundle: Mapping[str, Any], study: Study, people: Mapping[str, Any]) -> None:
    """Store the bundle's withdrawals (so that the withdrawn people's work stays out of every
    count, annotation.selectors.counted) and its consent versions and acceptances, as recorded.
    Run while the study is still in setup: the database refuses consent rows of a closed one."""
    parse = bundles.parse_timestamp
    for n, record in enumerate(bundle["withdrawals"]):
        _insert(Withdrawal(study=study, user=people[record["user"]], pseudonym=record["pseudonym"],
                           at=parse(record["at"]), released=record["released"],
                           erase_requested=record["erase_requested"], erased_at=parse(record["erased_at"]),
                           erased=record["erased"]), f"withdrawals[{n}]")
    for n, record in enumerate(bundle["consent_versions"]):
        _insert(ConsentVersion(study=study, number=record["number"], text=record["text"],
                               created_by=people[record["created_by"]] if record["created_by"] else None,
                               created_at=parse(record["created_at"]), updated_at=parse(record["updated_at"])),
                f"consent_versions[{n}]")
    for n, record in enumerate(bundle["consent_acceptances"]):
        _insert(ConsentRecord(study=study, user=people[record["user"]], number=record["number"],
                              accepted_at=parse(record["accepted_at"])), f"consent_acceptances[{n}]")
