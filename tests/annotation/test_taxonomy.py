import pytest

from annotation.errors import ServiceError, TaxonomyFrozen
from annotation.models import FailureMode, TaxonomyVersion
from annotation.rules.taxonomy import (
    DEFAULT_MODES,
    DEFAULT_PRECEDENCE_RULES,
    precedence_conflicts,
    taxonomy_hash,
)
from annotation.services.taxonomy import (
    taxonomy_create_version,
    taxonomy_default,
    taxonomy_freeze,
    taxonomy_mode_update,
    taxonomy_modes,
    taxonomy_rules_update,
)

pytestmark = pytest.mark.django_db


def test_default_taxonomy_has_the_six_protocol_modes_in_order():
    taxonomy = taxonomy_default()
    assert list(taxonomy.modes.values_list("key", flat=True)) == [
        "factual", "omission", "camera", "segmentation", "inference", "temporal",
    ]


def test_segmentation_is_the_only_caption_level_mode():
    levels = dict(taxonomy_default().modes.values_list("key", "level"))
    assert [key for key, level in levels.items() if level == "caption"] == ["segmentation"]


def test_default_taxonomy_carries_camera_over_factual_precedence():
    rules = taxonomy_default().precedence_rules
    assert [(r["prefer"], r["over"]) for r in rules] == [("camera", "factual")]


def test_migration_hash_equals_the_hash_of_the_code_definition():
    assert taxonomy_default().content_hash == taxonomy_hash(DEFAULT_MODES, DEFAULT_PRECEDENCE_RULES)


def test_hash_changes_when_a_definition_changes():
    changed = [dict(mode) for mode in DEFAULT_MODES]
    changed[0]["definition"] += " Also colours."
    assert taxonomy_hash(changed, DEFAULT_PRECEDENCE_RULES) != taxonomy_hash(
        DEFAULT_MODES, DEFAULT_PRECEDENCE_RULES
    )


def test_unused_taxonomy_mode_can_be_reworded_and_its_hash_follows():
    taxonomy = taxonomy_create_version(name="draft", modes=DEFAULT_MODES)
    before = taxonomy.content_hash
    mode = taxonomy.modes.get(key="factual")
    taxonomy_mode_update(mode=mode, definition="Something observable is wrong.")
    taxonomy.refresh_from_db()
    assert taxonomy.content_hash != before


def test_frozen_taxonomy_refuses_a_mode_change_and_keeps_the_text():
    taxonomy = taxonomy_freeze(taxonomy=taxonomy_create_version(name="draft", modes=DEFAULT_MODES))
    mode = taxonomy.modes.get(key="factual")
    with pytest.raises(TaxonomyFrozen, match="is in use since .* cannot change"):
        taxonomy_mode_update(mode=mode, definition="Something else.")
    assert FailureMode.objects.get(pk=mode.pk).definition == DEFAULT_MODES[0]["definition"]


def test_frozen_taxonomy_refuses_new_precedence_rules():
    taxonomy = taxonomy_freeze(taxonomy=taxonomy_create_version(name="draft", modes=DEFAULT_MODES))
    with pytest.raises(TaxonomyFrozen):
        taxonomy_rules_update(taxonomy=taxonomy, precedence_rules=[])


def test_freezing_twice_keeps_the_first_freeze_time():
    taxonomy = taxonomy_freeze(taxonomy=taxonomy_create_version(name="draft", modes=DEFAULT_MODES))
    again = taxonomy_freeze(taxonomy=taxonomy)
    assert again.frozen_at == taxonomy.frozen_at


def test_new_version_takes_the_next_number():
    first = taxonomy_create_version(name="lab", modes=DEFAULT_MODES[:2])
    second = taxonomy_create_version(name="lab", modes=DEFAULT_MODES)
    assert (first.version, second.version) == (1, 2)
    assert first.content_hash != second.content_hash


def test_rule_naming_an_unknown_mode_is_refused():
    with pytest.raises(ServiceError, match="unknown modes"):
        taxonomy_create_version(
            name="lab", modes=DEFAULT_MODES[:2], precedence_rules=[{"prefer": "camera", "over": "factual", "rule": "x"}]
        )


def test_camera_and_factual_on_one_unit_is_flagged():
    assert precedence_conflicts(["factual", "camera"], DEFAULT_PRECEDENCE_RULES)
    assert precedence_conflicts(["factual", "omission"], DEFAULT_PRECEDENCE_RULES) == []


def test_admin_refuses_to_change_a_frozen_taxonomy(client, django_user_model):
    boss = django_user_model.objects.create_superuser("boss", password="pw")
    client.force_login(boss)
    taxonomy = taxonomy_freeze(taxonomy=taxonomy_create_version(name="draft", modes=DEFAULT_MODES))
    mode = taxonomy.modes.get(key="factual")
    response = client.post(
        f"/admin/annotation/failuremode/{mode.pk}/change/",
        {"key": "factual", "name": "Changed", "definition": "x", "decision_test": "y", "level": "unit",
         "taxonomy": taxonomy.pk, "position": 0},
    )
    assert response.status_code == 403
    assert FailureMode.objects.get(pk=mode.pk).name == "Factual error"
    page = client.get(f"/admin/annotation/taxonomyversion/{taxonomy.pk}/change/")
    assert page.status_code == 200 and b"Save" not in page.content


def test_admin_saves_a_change_to_an_unused_taxonomy_through_the_service(client, django_user_model):
    boss = django_user_model.objects.create_superuser("boss", password="pw")
    client.force_login(boss)
    taxonomy = taxonomy_create_version(name="draft", modes=DEFAULT_MODES)
    mode = taxonomy.modes.get(key="factual")
    before = taxonomy.content_hash
    client.post(
        f"/admin/annotation/failuremode/{mode.pk}/change/",
        {"key": "factual", "name": "Fact error", "definition": mode.definition,
         "decision_test": mode.decision_test, "level": "unit", "taxonomy": taxonomy.pk, "position": 0},
    )
    assert FailureMode.objects.get(pk=mode.pk).name == "Fact error"
    assert TaxonomyVersion.objects.get(pk=taxonomy.pk).content_hash != before


def test_a_frozen_taxonomys_modes_are_read_once_per_process(django_assert_num_queries):
    taxonomy = taxonomy_freeze(taxonomy=taxonomy_create_version(name="cached", modes=DEFAULT_MODES))
    with django_assert_num_queries(1):
        first = taxonomy_modes(taxonomy)
    with django_assert_num_queries(0):
        assert taxonomy_modes(taxonomy) == first
    assert [mode["key"] for mode in first] == [mode["key"] for mode in DEFAULT_MODES]


def test_a_draft_taxonomys_modes_are_read_fresh_so_a_rewording_shows_at_once():
    taxonomy = taxonomy_create_version(name="draft", modes=DEFAULT_MODES)
    taxonomy_modes(taxonomy)
    taxonomy_mode_update(mode=taxonomy.modes.get(key="factual"), definition="Reworded.")
    taxonomy.refresh_from_db()
    assert taxonomy_modes(taxonomy)[0]["definition"] == "Reworded."
