"""The Configuration page's table (config/environment.py) lists exactly the environment variables
the code reads: a variable added to the settings without a row, or a row left behind when a
variable goes, fails here."""

import re
from pathlib import Path

from config.environment import VARIABLES, markdown_table

REPO = Path(__file__).resolve().parent.parent
# The product's code (not the tests, the bench or the soak, which read their own variables).
PRODUCT = ["config", "annotation", "scoring", "frontend"]
READS = re.compile(r"(?:environ\.get|environ\[|getenv|env_bool|env_list|env_int|env_float)"
                   r"""\(?\s*["']([A-Z][A-Z0-9_]+)["']""")
# Read by the libraries or the tools, never configuration a server sets.
NOT_CONFIGURATION = {
    "DJANGO_SETTINGS_MODULE",  # which settings module: config.settings, set by manage.py and wsgi.py
    "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE",  # set by Redline itself so nothing is fetched from a hub
}


def variables_read() -> dict[str, str]:
    found = {}
    for package in PRODUCT:
        for path in (REPO / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            for name in READS.findall(path.read_text(encoding="utf-8")):
                found.setdefault(name, str(path.relative_to(REPO)))
    return found


def test_the_reader_finds_every_form():
    source = 'os.environ.get("A_B")\nos.environ["CC"]\nenv_bool("D1", True)\nenv_list( "EE", [])\nos.getenv("FF")'
    assert READS.findall(source) == ["A_B", "CC", "D1", "EE", "FF"]


def test_every_variable_read_has_a_row_and_every_row_is_read():
    documented = {name for variable in VARIABLES for name in variable.names}
    read = variables_read()
    assert "DATABASE_URL" in read and "SCORING_JUDGES" in read, "the code was read"
    missing = {name: where for name, where in read.items() if name not in documented | NOT_CONFIGURATION}
    assert not missing, f"read but not in config/environment.py: {missing}"
    stale = documented - set(read)
    assert not stale, f"in config/environment.py but read nowhere: {sorted(stale)}"


def test_each_name_has_one_row_and_the_table_shows_every_name():
    names = [name for variable in VARIABLES for name in variable.names]
    assert len(names) == len(set(names))
    table = markdown_table()
    for name in names:
        assert f"`{name}`" in table
    assert all(variable.default and variable.meaning for variable in VARIABLES)
