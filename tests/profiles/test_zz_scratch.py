import time, pytest
from io import StringIO
from django.core.management import call_command
pytestmark = pytest.mark.django_db
def test_t(tmp_path):
    from annotation.services.demo import demo_build
    from tests.profiles.demo_run import annotate_and_review_demo
    t = time.time(); r = demo_build(); print("demo", time.time() - t)
    t = time.time(); print(annotate_and_review_demo(r.study)); print("run", time.time() - t)
    t = time.time(); out = StringIO()
    call_command("export_profiles", study="demo", out=str(tmp_path / "x"), resamples=200, adjusted_resamples=50, stdout=out)
    print(out.getvalue()); print("export", time.time() - t)
    import shutil; shutil.rmtree("/tmp/demo-export", ignore_errors=True); shutil.copytree(tmp_path / "x", "/tmp/demo-export")
